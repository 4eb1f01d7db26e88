//! Scalar and vector aliases used throughout the solver.
//!
//! All state is `f64` ([`Real`]) in SI units; 3-vectors are `nalgebra` fixed-size vectors, which
//! are plain `[f64; 3]` in memory, so a `&[Vec3]` is also a packed `xyz xyz …` array.

/// The scalar type of every physical quantity in the solver.
pub type Real = f64;

/// A 3-vector of [`Real`] (position in m, velocity in m/s, force in N, field in V/m).
pub type Vec3 = nalgebra::Vector3<Real>;

/// A 3 × 3 matrix of [`Real`] (a spring's stiffness block in N/m).
pub type Mat3 = nalgebra::Matrix3<Real>;

/// True when all three components are finite (neither NaN nor ±∞).
#[inline]
pub fn is_finite3(v: &Vec3) -> bool {
    v.x.is_finite() && v.y.is_finite() && v.z.is_finite()
}
