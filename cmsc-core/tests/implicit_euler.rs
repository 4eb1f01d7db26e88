//! Liu 2013 §4: the local/global iterations converge to the exact implicit-Euler step, plain
//! and accelerated (issue 19: acceleration must not move the fixed point). The reference here is
//! independent of the solver under test: Newton's method on
//! `g(x) = M(x − y) − h² (f_s(x) + f_e) = 0` with the analytic spring Hessian and a dense LU.

mod common;

use cmsc_core::{Acceleration, FieldMethod, SimParams, System, Vec3};
use common::newton::{newton, problem, rest_positions, Problem};

/// Newton's solution of the implicit Euler step `M (x − y) = h² (f_s(x) + M g)`, `y = x + h v`.
fn newton_step(p: &Problem) -> Vec<Vec3> {
    let y: Vec<Vec3> = p.x0.iter().zip(&p.v0).map(|(x, v)| x + v * p.h).collect();
    newton(p, &y, p.h, p.g)
}

/// One step with the default acceleration (`None`) or the given one.
fn imex_step(p: &Problem, iterations: u32, acceleration: Option<Acceleration>) -> Vec<Vec3> {
    let params = SimParams {
        time_step: p.h,
        iterations,
        gravity: p.g,
        coulomb: FieldMethod::Off,
        ..SimParams::default()
    };
    // rest lengths come from the rest mesh; the state then starts deformed
    let rest_mesh = rest_positions();
    let mut sys = System::new(&rest_mesh, &p.mass, &p.ends, &p.k, params).unwrap();
    sys.set_positions(&p.x0).unwrap();
    sys.set_velocities(&p.v0).unwrap();
    sys.set_pins(&p.pinned).unwrap();
    if let Some(acceleration) = acceleration {
        sys.set_acceleration(acceleration);
    }
    sys.step().unwrap();
    sys.positions().to_vec()
}

/// Max error of `x` against `exact`, relative to the largest displacement of the step.
fn relative_error(p: &Problem, exact: &[Vec3], x: &[Vec3]) -> f64 {
    let scale = exact.iter().zip(&p.x0).map(|(a, b)| (a - b).norm()).fold(0.0, f64::max);
    x.iter().zip(exact).map(|(a, b)| (a - b).norm()).fold(0.0, f64::max) / scale
}

/// Convergence to Newton's step as the iterations grow, for one acceleration setting.
fn check_convergence(acceleration: Option<Acceleration>) {
    let p = problem(0.02);
    let exact = newton_step(&p);
    let mut previous = f64::INFINITY;
    for iterations in [1, 3, 10, 30, 100, 300, 1000, 3000] {
        let x = imex_step(&p, iterations, acceleration);
        let err = relative_error(&p, &exact, &x);
        eprintln!("{acceleration:?}: {iterations:>5} iterations: max error / step size = {err:.3e}");
        assert!(err <= previous * 1.0001, "error grew from {previous} to {err} at {iterations} iterations");
        previous = err;
    }
    assert!(previous < 1e-9, "did not converge: {previous}");
    // pinned vertices are exactly where they were held
    let x = imex_step(&p, 10, acceleration);
    for &i in &p.pinned {
        assert_eq!(x[i as usize], p.x0[i as usize]);
    }
}

/// With the default settings (accelerated since issue 19).
#[test]
fn local_global_converges_to_newtons_implicit_euler_step() {
    assert_eq!(SimParams::default().acceleration, Acceleration::Anderson);
    check_convergence(None);
}

/// Acceleration on and off explicitly: both reach the same fixed point, Newton's step.
#[test]
fn plain_and_accelerated_iterations_converge_to_the_same_step() {
    check_convergence(Some(Acceleration::Plain));
    check_convergence(Some(Acceleration::Anderson));
}

/// Issue 19: at the same number of iterations the accelerated step is closer to the implicit
/// step than the plain one (so fewer iterations reach a given accuracy), and the default is the
/// accelerated one.
#[test]
fn accelerated_iterations_are_closer_to_the_implicit_step_than_plain_ones() {
    let p = problem(0.02);
    let exact = newton_step(&p);
    for iterations in [3, 5, 10, 20] {
        let plain = relative_error(&p, &exact, &imex_step(&p, iterations, Some(Acceleration::Plain)));
        let accelerated =
            relative_error(&p, &exact, &imex_step(&p, iterations, Some(Acceleration::Anderson)));
        let default = relative_error(&p, &exact, &imex_step(&p, iterations, None));
        eprintln!("K = {iterations}: plain {plain:.3e}, accelerated {accelerated:.3e}");
        let factor = if iterations >= 10 { 0.5 } else { 1.0 };
        assert!(
            accelerated < factor * plain,
            "K = {iterations}: accelerated {accelerated:e} vs plain {plain:e}"
        );
        assert_eq!(default, accelerated, "the default must be the accelerated step");
    }
}
