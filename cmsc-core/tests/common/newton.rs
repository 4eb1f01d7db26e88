//! The implicit spring step by Newton's method, independent of the solver under test: the
//! analytic spring Hessian and a dense LU, on a small, stretched, twisted, moving cloth.

use cmsc_core::{shapes, springs_from_triangles, Vec3};
use nalgebra::{DMatrix, DVector, Matrix3};

/// A 5 × 4 cloth, 10 cm apart, stretched and twisted out of its rest shape and moving, with two
/// pinned corners and gravity; `h` (s) is the step.
pub struct Problem {
    pub x0: Vec<Vec3>,
    pub v0: Vec<Vec3>,
    pub mass: Vec<f64>,
    pub ends: Vec<[u32; 2]>,
    pub k: Vec<f64>,
    pub rest: Vec<f64>,
    pub pinned: Vec<u32>,
    pub h: f64,
    pub g: Vec3,
}

/// The rest positions of [`problem`]'s cloth.
pub fn rest_positions() -> Vec<Vec3> {
    shapes::grid(5, 4, 0.1).positions
}

/// The cloth at step `h` (s).
pub fn problem(h: f64) -> Problem {
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
    Problem { x0, v0, mass, ends, k, rest, pinned: vec![0, 4], h, g: Vec3::new(0.0, 0.0, -9.81) }
}

/// Solves `M (z − y) = he² (f_s(z) + M a)` for the free vertices to machine precision, pinned
/// vertices at `x0`: the implicit Euler step with `he = h`, `a = g`, `y = x0 + h v0`; the implicit
/// midpoint's `z` with `he = h/2`, `a = 0`, `y = x0 + (h/2) v⁺`.
pub fn newton(p: &Problem, y: &[Vec3], he: f64, a: Vec3) -> Vec<Vec3> {
    newton_damped(p, y, he, a, 0.0)
}

/// [`newton`] with every spring also damping its strain rate at the damping time `beta` (s): the
/// force `−β k ((|z_a − z_b| − |x0_a − x0_b|) / he) u` on `a` (its opposite on `b`), `u` the
/// spring's direction at `z`, as `cmsc_core::springs` defines it.
pub fn newton_damped(p: &Problem, y: &[Vec3], he: f64, a: Vec3, beta: f64) -> Vec<Vec3> {
    let n = p.x0.len();
    let free: Vec<usize> = (0..n).filter(|i| !p.pinned.contains(&(*i as u32))).collect();
    let mut z = y.to_vec();
    for &i in &p.pinned {
        z[i as usize] = p.x0[i as usize];
    }
    let col = |i: usize| free.iter().position(|&f| f == i);
    for _ in 0..50 {
        let mut grad = DVector::<f64>::zeros(3 * free.len());
        let mut hess = DMatrix::<f64>::zeros(3 * free.len(), 3 * free.len());
        for (r, &i) in free.iter().enumerate() {
            let gi = (z[i] - y[i]) * p.mass[i] - a * (p.mass[i] * he * he);
            grad.fixed_rows_mut::<3>(3 * r).copy_from(&gi);
            hess.fixed_view_mut::<3, 3>(3 * r, 3 * r).copy_from(&(Matrix3::identity() * p.mass[i]));
        }
        for ((&[a, b], &k), &l) in p.ends.iter().zip(&p.k).zip(&p.rest) {
            let (a, b) = (a as usize, b as usize);
            let d = z[a] - z[b];
            let len = d.norm();
            let u = d / len;
            let force_grad = u * (k * (len - l)); // ∂E/∂z_a
            let uu = u * u.transpose();
            let mut block = (uu + (Matrix3::identity() - uu) * (1.0 - l / len)) * (k * he * he);
            // damping: a spring of stiffness β k / he and rest length |x0_a − x0_b|, times he²
            let l0 = (p.x0[a] - p.x0[b]).norm();
            let damping_grad = u * (beta * k * he * (len - l0));
            block += (uu + (Matrix3::identity() - uu) * (1.0 - l0 / len)) * (beta * k * he);
            for (i, sign) in [(a, 1.0), (b, -1.0)] {
                if let Some(r) = col(i) {
                    let mut gr = grad.fixed_rows_mut::<3>(3 * r);
                    gr += (force_grad * (he * he) + damping_grad) * sign;
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
    z
}
