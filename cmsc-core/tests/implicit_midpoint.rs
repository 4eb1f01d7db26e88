//! The spring sub-step of [`Integrator::ImexLowDissipation`] converges, as the local/global
//! iterations grow, to the implicit midpoint rule: with `v⁺ = v + (h/2) g` (gravity is in the
//! kicks), `y = x + (h/2) v⁺`, the midpoint `z` solves `M (z − y) = (h/2)² f_s(z)` and
//! `x_{t+1} = 2z − x_t`. The reference is independent of the solver under test: Newton's method
//! on that equation with the analytic spring Hessian and a dense LU (as `implicit_euler.rs`).

use cmsc_core::{shapes, springs_from_triangles, FieldMethod, Integrator, SimParams, System, Vec3};
use nalgebra::{DMatrix, DVector, Matrix3};

struct Problem {
    x0: Vec<Vec3>,
    v0: Vec<Vec3>,
    mass: Vec<f64>,
    ends: Vec<[u32; 2]>,
    k: Vec<f64>,
    rest: Vec<f64>,
    pinned: Vec<u32>,
    h: f64,
    g: Vec3,
}

/// `implicit_euler.rs`'s stretched, twisted, moving cloth, at a step small enough that the
/// midpoint rule's own energy error stays below the safeguard's tolerance (no halving).
fn problem() -> Problem {
    let mesh = shapes::grid(5, 4, 0.1);
    let n = mesh.positions.len();
    let (ends, k) = springs_from_triangles(n, &mesh.triangles).unwrap().with_stiffness(200.0, 20.0);
    let rest =
        ends.iter().map(|&[a, b]| (mesh.positions[a as usize] - mesh.positions[b as usize]).norm()).collect();
    let x0 = mesh
        .positions
        .iter()
        .map(|p| Vec3::new(1.3 * p.x, p.y + 0.2 * p.x * p.x, 0.15 * (7.0 * p.x).sin()))
        .collect();
    let v0 = (0..n).map(|i| Vec3::new(((i * 7) % 5) as f64 - 2.0, ((i * 3) % 4) as f64 - 1.5, 0.5)).collect();
    let mass = (0..n).map(|i| 0.01 * (1.0 + (i % 3) as f64)).collect();
    Problem { x0, v0, mass, ends, k, rest, pinned: vec![0, 4], h: 0.004, g: Vec3::new(0.0, 0.0, -9.81) }
}

/// Newton's method for the midpoint `z` on the free unknowns, from `y`, to machine precision;
/// returns `x_{t+1} = 2z − x_t`.
fn newton_step(p: &Problem) -> Vec<Vec3> {
    let n = p.x0.len();
    let free: Vec<usize> = (0..n).filter(|i| !p.pinned.contains(&(*i as u32))).collect();
    let he = 0.5 * p.h; // the implicit equation's step
    let y: Vec<Vec3> = p.x0.iter().zip(&p.v0).map(|(x, v)| x + (v + p.g * he) * he).collect();
    let mut z = y.clone();
    for &i in &p.pinned {
        z[i as usize] = p.x0[i as usize];
    }
    let col = |i: usize| free.iter().position(|&f| f == i);
    for _ in 0..50 {
        let mut grad = DVector::<f64>::zeros(3 * free.len());
        let mut hess = DMatrix::<f64>::zeros(3 * free.len(), 3 * free.len());
        for (r, &i) in free.iter().enumerate() {
            grad.fixed_rows_mut::<3>(3 * r).copy_from(&((z[i] - y[i]) * p.mass[i]));
            hess.fixed_view_mut::<3, 3>(3 * r, 3 * r).copy_from(&(Matrix3::identity() * p.mass[i]));
        }
        for ((&[a, b], &k), &l) in p.ends.iter().zip(&p.k).zip(&p.rest) {
            let (a, b) = (a as usize, b as usize);
            let d = z[a] - z[b];
            let len = d.norm();
            let u = d / len;
            let force_grad = u * (k * (len - l)); // ∂E/∂z_a
            let uu = u * u.transpose();
            let block = (uu + (Matrix3::identity() - uu) * (1.0 - l / len)) * (k * he * he);
            for (i, sign) in [(a, 1.0), (b, -1.0)] {
                if let Some(r) = col(i) {
                    let mut gr = grad.fixed_rows_mut::<3>(3 * r);
                    gr += force_grad * (sign * he * he);
                }
            }
            for (i, j, sign) in [(a, a, 1.0), (b, b, 1.0), (a, b, -1.0), (b, a, -1.0)] {
                if let (Some(r), Some(c)) = (col(i), col(j)) {
                    let mut hb = hess.fixed_view_mut::<3, 3>(3 * r, 3 * c);
                    hb += block * sign;
                }
            }
        }
        let dz = hess.lu().solve(&grad).expect("Newton Hessian is singular");
        for (r, &i) in free.iter().enumerate() {
            z[i] -= Vec3::new(dz[3 * r], dz[3 * r + 1], dz[3 * r + 2]);
        }
        if dz.norm() < 1e-15 {
            break;
        }
    }
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
    let rest_mesh = shapes::grid(5, 4, 0.1).positions;
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
    let p = problem();
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
