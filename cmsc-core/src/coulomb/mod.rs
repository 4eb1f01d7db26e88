//! Vertex–vertex Coulomb forces behind one interface, so that approximate and GPU backends
//! (DDEF, CUDA) plug in beside the exact sum.
//!
//! Every backend computes the same quantity, [Paper](crate#references) Eq. (8) with Plummer
//! softening `ε` (see [`crate::Softening`]):
//! `f_i = k_c q_i Σ_{j≠i} q_j (x_i − x_j) / (|x_i − x_j|² + ε²)^{3/2}`.

mod ddef;
mod direct;
mod simd;

pub use ddef::{Ddef, DdefTimings, Neighborhood};

pub use direct::{coulomb_energy, DirectSum};

use crate::error::Result;
use crate::math::{Real, Vec3};

/// Which algorithm evaluates vertex–vertex Coulomb forces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldMethod {
    /// No vertex–vertex Coulomb force (external charges and fields still act).
    Off,
    /// The exact `O(n²)` sum, [`DirectSum`].
    Direct,
    /// The `O(m n)` DDEF approximation of [Paper](crate#references) §3.1, [`Ddef`], with
    /// `SimParams::grid_points` grid points.
    Ddef,
    /// Let the library choose from the vertex count: the exact sum below
    /// [`AUTO_DDEF_MIN_VERTICES`], DDEF from there on. [`crate::System::field_method`] reports
    /// the resolved choice.
    #[default]
    Auto,
}

/// Vertex count from which [`FieldMethod::Auto`] picks DDEF. Measured with m = 1000 on torus
/// point sets (2 threads, `cargo run --release -p cmsc-core --example ddef_bench -- --n
/// 5000,10000,20000,40000 --m 1000`): DDEF was 1.4×, 2.4×, 3.0× and 5.2× faster than the direct
/// sum at n = 5K, 10K, 20K, 40K, with relative error 0.009; below 20K the exact sum costs at most
/// a few hundred ms per evaluation and is kept for its exactness.
pub const AUTO_DDEF_MIN_VERTICES: usize = 20_000;

impl FieldMethod {
    /// The concrete method `self` stands for on a system of `n` vertices.
    pub fn resolve(self, n: usize) -> FieldMethod {
        match self {
            FieldMethod::Auto if n >= AUTO_DDEF_MIN_VERTICES => FieldMethod::Ddef,
            FieldMethod::Auto => FieldMethod::Direct,
            m => m,
        }
    }
}

/// A backend that evaluates the Coulomb force on every vertex.
pub trait FieldSolver: Send {
    /// The concrete method this backend implements (never [`FieldMethod::Auto`]).
    fn method(&self) -> FieldMethod;

    /// Writes the softened Coulomb force (N) on each vertex into `out`.
    ///
    /// # Arguments
    /// * `x` — positions (m), world frame; `q` — charges (C); `k_c` — Coulomb's constant
    ///   (N·m²/C²); `eps` — softening length (m), `>= 0`.
    ///
    /// # Errors
    /// Backend-specific (e.g. a device failure); the direct sum never fails.
    ///
    /// # Panics
    /// If `x`, `q` and `out` differ in length.
    fn forces(&mut self, x: &[Vec3], q: &[Real], k_c: Real, eps: Real, out: &mut [Vec3]) -> Result<()>;
}

/// The backend that returns zero forces, for [`FieldMethod::Off`].
#[derive(Debug, Default)]
pub struct NoField;

impl FieldSolver for NoField {
    fn method(&self) -> FieldMethod {
        FieldMethod::Off
    }

    fn forces(&mut self, x: &[Vec3], q: &[Real], _: Real, _: Real, out: &mut [Vec3]) -> Result<()> {
        assert!(x.len() == q.len() && q.len() == out.len());
        out.fill(Vec3::zeros());
        Ok(())
    }
}

/// Creates the backend for `method` on `n` vertices (`grid_points` is DDEF's `m`, `near` its
/// near-set definition).
///
/// # Errors
/// None today; kept fallible because device backends can fail to start.
pub fn make_solver(
    method: FieldMethod,
    n: usize,
    grid_points: u32,
    near: Neighborhood,
) -> Result<Box<dyn FieldSolver>> {
    Ok(match method.resolve(n) {
        FieldMethod::Off => Box::new(NoField),
        FieldMethod::Ddef => Box::new(Ddef::new(grid_points).with_neighborhood(near)),
        FieldMethod::Direct | FieldMethod::Auto => Box::new(DirectSum::default()),
    })
}

/// Softened inverse cube distance `1 / (r² + ε²)^{3/2}` given `r² + ε²`, or `0` where that is
/// too small to invert finitely (only possible with `ε = 0` for coincident points).
#[inline(always)]
pub(crate) fn inv_r3(r2_soft: Real) -> Real {
    let r3 = r2_soft * r2_soft.sqrt();
    if r3 > Real::MIN_POSITIVE {
        1.0 / r3
    } else {
        0.0
    }
}
