//! Energy bookkeeping, for validation (conservation, dissipation) and for users' plots.

use crate::math::Real;

/// The energies of a state (J). `external` is the potential in the external field, external
/// charges and gravity; `total` is the sum of the four terms.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Energies {
    /// `Σ m_i |v_i|² / 2`.
    pub kinetic: Real,
    /// `Σ_s k_s (|x_a − x_b| − l_s)² / 2`.
    pub spring: Real,
    /// `Σ_{i<j} k_c q_i q_j / sqrt(r_ij² + ε²)`.
    pub coulomb: Real,
    /// `Σ_i (−m_i g·x_i − q_i E·x_i + Σ_e k_c q_i Q_e / sqrt(r_ie² + ε²))`.
    pub external: Real,
    /// `kinetic + spring + coulomb + external`.
    pub total: Real,
}

impl Energies {
    /// Bundles the four terms and their sum.
    pub fn new(kinetic: Real, spring: Real, coulomb: Real, external: Real) -> Self {
        Energies { kinetic, spring, coulomb, external, total: kinetic + spring + coulomb + external }
    }
}
