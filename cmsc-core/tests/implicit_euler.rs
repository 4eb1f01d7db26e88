//! Liu 2013 §4: the local/global iterations converge to the exact implicit-Euler step, plain
//! and accelerated (issue 19: acceleration must not move the fixed point). The reference here is
//! independent of the solver under test: Newton's method on
//! `g(x) = M(x − y) − h² (f_s(x) + f_e) = 0` with the analytic spring Hessian and a dense LU.

use cmsc_core::{shapes, springs_from_triangles, Acceleration, FieldMethod, SimParams, System, Vec3};
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

fn problem() -> Problem {
    let mesh = shapes::grid(5, 4, 0.1);
    let n = mesh.positions.len();
    let (ends, k) = springs_from_triangles(n, &mesh.triangles).unwrap().with_stiffness(200.0, 20.0);
    let rest =
        ends.iter().map(|&[a, b]| (mesh.positions[a as usize] - mesh.positions[b as usize]).norm()).collect();
    // a deterministic, non-trivial start: stretched and twisted, moving
    let x0 = mesh
        .positions
        .iter()
        .map(|p| Vec3::new(1.3 * p.x, p.y + 0.2 * p.x * p.x, 0.15 * (7.0 * p.x).sin()))
        .collect();
    let v0 = (0..n).map(|i| Vec3::new(((i * 7) % 5) as f64 - 2.0, ((i * 3) % 4) as f64 - 1.5, 0.5)).collect();
    let mass = (0..n).map(|i| 0.01 * (1.0 + (i % 3) as f64)).collect();
    Problem { x0, v0, mass, ends, k, rest, pinned: vec![0, 4], h: 0.02, g: Vec3::new(0.0, 0.0, -9.81) }
}

/// Newton's method on the free unknowns, from `y`, to machine precision.
fn newton_step(p: &Problem) -> Vec<Vec3> {
    let n = p.x0.len();
    let free: Vec<usize> = (0..n).filter(|i| !p.pinned.contains(&(*i as u32))).collect();
    let y: Vec<Vec3> = p.x0.iter().zip(&p.v0).map(|(x, v)| x + v * p.h).collect();
    let mut x = y.clone();
    for &i in &p.pinned {
        x[i as usize] = p.x0[i as usize];
    }
    let col = |i: usize| free.iter().position(|&f| f == i);
    for _ in 0..50 {
        let mut grad = DVector::<f64>::zeros(3 * free.len());
        let mut hess = DMatrix::<f64>::zeros(3 * free.len(), 3 * free.len());
        for (r, &i) in free.iter().enumerate() {
            let gi = (x[i] - y[i]) * p.mass[i] - p.g * (p.mass[i] * p.h * p.h);
            grad.fixed_rows_mut::<3>(3 * r).copy_from(&gi);
            hess.fixed_view_mut::<3, 3>(3 * r, 3 * r).copy_from(&(Matrix3::identity() * p.mass[i]));
        }
        for ((&[a, b], &k), &l) in p.ends.iter().zip(&p.k).zip(&p.rest) {
            let (a, b) = (a as usize, b as usize);
            let d = x[a] - x[b];
            let len = d.norm();
            let u = d / len;
            let force_grad = u * (k * (len - l)); // ∂E/∂x_a
            let uu = u * u.transpose();
            let block = (uu + (Matrix3::identity() - uu) * (1.0 - l / len)) * (k * p.h * p.h);
            for (i, sign) in [(a, 1.0), (b, -1.0)] {
                if let Some(r) = col(i) {
                    let mut gr = grad.fixed_rows_mut::<3>(3 * r);
                    gr += force_grad * (sign * p.h * p.h);
                }
            }
            for (i, j, sign) in [(a, a, 1.0), (b, b, 1.0), (a, b, -1.0), (b, a, -1.0)] {
                if let (Some(r), Some(c)) = (col(i), col(j)) {
                    let mut hb = hess.fixed_view_mut::<3, 3>(3 * r, 3 * c);
                    hb += block * sign;
                }
            }
        }
        let dx = hess.lu().solve(&grad).expect("Newton Hessian is singular");
        for (r, &i) in free.iter().enumerate() {
            x[i] -= Vec3::new(dx[3 * r], dx[3 * r + 1], dx[3 * r + 2]);
        }
        if dx.norm() < 1e-14 {
            break;
        }
    }
    x
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
    let rest_mesh = shapes::grid(5, 4, 0.1).positions;
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
    let p = problem();
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
    let p = problem();
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
