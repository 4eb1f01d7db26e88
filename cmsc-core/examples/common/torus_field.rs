//! The point sets and the error measure of the GPU examples (`gpu_bench.rs`, `gpu_auto.rs`),
//! shared by `#[path]`: torus surfaces with every vertex charged, one in five negative, and the
//! exact sum on 2,000 sampled targets as the reference.

use std::time::Instant;

use cmsc_core::coulomb::DirectSum;
use cmsc_core::COULOMB_CONSTANT as KC;
use cmsc_core::{shapes, Real, Vec3};

/// A torus surface (R = 1 m, r = 0.3 m) of about `n` vertices: `5v × v` with `v` tube segments.
pub fn torus(n: usize) -> shapes::TriMesh {
    let v = ((n as f64 / 5.0).sqrt()).round() as u32;
    shapes::torus(5 * v, v, 1.0, 0.3)
}

/// −1 µC on every fifth vertex, +1 µC elsewhere.
pub fn charges(n: usize) -> Vec<Real> {
    (0..n).map(|i| if i % 5 == 0 { -1e-6 } else { 1e-6 }).collect()
}

/// Relative L2 (RMS) error of forces `a` against `reference`: `‖a − r‖₂ / ‖r‖₂`.
pub fn relative_l2(a: &[Vec3], reference: &[Vec3]) -> Real {
    let num: Real = a.iter().zip(reference).map(|(a, b)| (a - b).norm_squared()).sum();
    let den: Real = reference.iter().map(|b| b.norm_squared()).sum();
    (num / den).sqrt()
}

/// The exact forces on up to 2,000 evenly spaced targets, and the direct sum's time for all `n`
/// extrapolated from theirs (`n / targets` × the sampled time).
pub struct Sampled {
    targets: Vec<usize>,
    exact: Vec<Vec3>,
    pub all_seconds: f64,
}

impl Sampled {
    /// For charges `q` at `x`, softening `eps`.
    pub fn new(x: &[Vec3], q: &[Real], eps: Real) -> Self {
        let n = x.len();
        let targets: Vec<usize> = (0..2000.min(n)).map(|k| k * (n / 2000.min(n))).collect();
        let mut exact = vec![Vec3::zeros(); targets.len()];
        let t = Instant::now();
        DirectSum::default().forces_on(x, q, KC, eps, &targets, &mut exact);
        let all_seconds = t.elapsed().as_secs_f64() * n as f64 / targets.len() as f64;
        Sampled { targets, exact, all_seconds }
    }

    /// The relative L2 error of the forces `out` (one per vertex) on the targets.
    pub fn error(&self, out: &[Vec3]) -> Real {
        let got: Vec<Vec3> = self.targets.iter().map(|&i| out[i]).collect();
        relative_l2(&got, &self.exact)
    }
}
