//! Field checks shared by the backend tests (DDEF, P3M, GPU) against the exact sum.

use cmsc_core::coulomb::FieldSolver;
use cmsc_core::{Real, Vec3, COULOMB_CONSTANT as KC};

/// Relative L2 (RMS) error of forces `a` against `reference`: `‖a − r‖₂ / ‖r‖₂`.
pub fn relative_l2(a: &[Vec3], reference: &[Vec3]) -> Real {
    let num: Real = a.iter().zip(reference).map(|(a, b)| (a - b).norm_squared()).sum();
    let den: Real = reference.iter().map(|b| b.norm_squared()).sum();
    (num / den).sqrt()
}

/// The softened Coulomb forces (N) of `solver` on charges `q` (C) at `x` (m), softening `eps` (m).
///
/// # Panics
/// If the solver fails (the message is its error's).
pub fn forces(solver: &mut dyn FieldSolver, x: &[Vec3], q: &[Real], eps: Real) -> Vec<Vec3> {
    let mut out = vec![Vec3::zeros(); x.len()];
    solver.forces(x, q, KC, eps, &mut out).unwrap_or_else(|e| panic!("{e}"));
    out
}
