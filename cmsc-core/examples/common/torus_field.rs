//! The point sets and the error measure of the GPU examples (`gpu_bench.rs`, `gpu_auto.rs`),
//! shared by `#[path]`: torus surfaces with every vertex charged, one in five negative.

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
