//! The spring sub-step of [`Integrator::ImexLowDissipation`] converges, as the local/global
//! iterations grow, to the implicit midpoint rule: with `v⁺ = v + (h/2) g` (gravity is in the
//! kicks), `y = x + (h/2) v⁺`, the midpoint `z` solves `M (z − y) = (h/2)² f_s(z)` and
//! `x_{t+1} = 2z − x_t`. The reference is independent of the solver under test: Newton's method
//! on that equation with the analytic spring Hessian and a dense LU (as `implicit_euler.rs`).

mod common;

use cmsc_core::{FieldMethod, Integrator, SimParams, System, Vec3};
use common::newton::{newton, problem, rest_positions, Problem};

/// The step of `implicit_euler.rs`'s stretched, twisted, moving cloth here: small enough that
/// the midpoint rule's own energy error stays below the safeguard's tolerance (no halving).
const H: f64 = 0.004;

/// Newton's solution of the midpoint `z` from `y = x + (h/2) v⁺`; returns `x_{t+1} = 2z − x_t`.
fn newton_step(p: &Problem) -> Vec<Vec3> {
    let he = 0.5 * p.h; // the implicit equation's step
    let y: Vec<Vec3> = p.x0.iter().zip(&p.v0).map(|(x, v)| x + (v + p.g * he) * he).collect();
    let z = newton(p, &y, he, Vec3::zeros());
    z.iter().zip(&p.x0).map(|(z, x)| z * 2.0 - x).collect()
}

fn low_dissipation_step(p: &Problem, iterations: u32) -> Vec<Vec3> {
    let params = SimParams {
        time_step: p.h,
        iterations,
        gravity: p.g,
        coulomb: FieldMethod::Off,
        integrator: Integrator::ImexLowDissipation,
        ..SimParams::default()
    };
    let rest_mesh = rest_positions();
    let mut sys = System::new(&rest_mesh, &p.mass, &p.ends, &p.k, params).unwrap();
    sys.set_positions(&p.x0).unwrap();
    sys.set_velocities(&p.v0).unwrap();
    sys.set_pins(&p.pinned).unwrap();
    sys.step().unwrap();
    assert_eq!(sys.last_step_counts().substeps, 1, "{iterations} iterations: the step was halved");
    sys.positions().to_vec()
}

#[test]
fn local_global_converges_to_newtons_implicit_midpoint_step() {
    let p = problem(H);
    let exact = newton_step(&p);
    let scale = exact.iter().zip(&p.x0).map(|(a, b)| (a - b).norm()).fold(0.0, f64::max);
    let mut previous = f64::INFINITY;
    for iterations in [1, 2, 3, 5, 10, 20, 30, 100, 300] {
        let x = low_dissipation_step(&p, iterations);
        let err = x.iter().zip(&exact).map(|(a, b)| (a - b).norm()).fold(0.0, f64::max) / scale;
        eprintln!("{iterations:>5} iterations: max error / step size = {err:.3e}");
        // monotone down to round-off (the step is ~0.1 m; f64 leaves ~1e-16 of it per operation)
        assert!(
            err <= previous * 1.0001 || err < 1e-12,
            "error grew from {previous} to {err} at {iterations} iterations"
        );
        previous = err;
    }
    assert!(previous < 1e-9, "did not converge: {previous}");
    // pinned vertices are exactly where they were held
    let x = low_dissipation_step(&p, 10);
    for &i in &p.pinned {
        assert_eq!(x[i as usize], p.x0[i as usize]);
    }
}
