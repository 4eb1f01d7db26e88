//! External forces: point charges that are not part of the mesh, a uniform electric field, and
//! gravity. All are explicit terms of `f_ext` in [Paper](crate#references) Eq. (12).

use rayon::prelude::*;

use crate::coulomb::{inv_r, inv_r3};
use crate::error::{Error, Result};
use crate::math::{is_finite3, ordered_sum, Real, Vec3};

/// A fixed (per step) external point charge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointCharge {
    /// Position (m), world frame.
    pub position: Vec3,
    /// Charge `Q` (C).
    pub charge: Real,
}

/// The external electric environment: point charges and a uniform field `E` (V/m).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExternalField {
    /// External point charges.
    pub charges: Vec<PointCharge>,
    /// Uniform electric field `E` (V/m).
    pub uniform: Vec3,
}

impl ExternalField {
    /// Validates external charges given as packed positions `3k` (m) and charges `k` (C).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch or a non-finite value.
    pub fn charges_from_arrays(positions: &[Vec3], charges: &[Real]) -> Result<Vec<PointCharge>> {
        if positions.len() != charges.len() {
            return Err(Error::invalid(
                "charges",
                None,
                format!("{} charges for {} positions", charges.len(), positions.len()),
            ));
        }
        positions
            .iter()
            .zip(charges)
            .enumerate()
            .map(|(i, (p, &q))| {
                if !is_finite3(p) {
                    Err(Error::invalid("positions", Some(i), "not finite"))
                } else if !q.is_finite() {
                    Err(Error::invalid("charges", Some(i), "not finite"))
                } else {
                    Ok(PointCharge { position: *p, charge: q })
                }
            })
            .collect()
    }

    /// Adds `q_i (E + k_c Σ_e Q_e (x_i − p_e) / max(|x_i − p_e|, a)³)` to `out` (N): the vertex's
    /// charge spread over a ball of radius `a` (m) as for vertex–vertex pairs (Eq. (C1) of
    /// [`crate::coulomb`]; the point–ball force is symmetric, so it does not matter which of the
    /// two is spread).
    pub fn add_forces(&self, x: &[Vec3], q: &[Real], k_c: Real, a: Real, out: &mut [Vec3]) {
        let a2 = a * a;
        out.par_iter_mut().zip(x.par_iter().zip(q.par_iter())).for_each(|(o, (xi, &qi))| {
            if qi == 0.0 {
                return;
            }
            let mut e = self.uniform;
            for c in &self.charges {
                let r = xi - c.position;
                e += r * (k_c * c.charge * inv_r3(r.norm_squared(), a2));
            }
            *o += e * qi;
        });
    }

    /// Potential energy of the vertices in the external field (J):
    /// `Σ_i q_i (−E·x_i + Σ_e k_c Q_e φ_a(|x_i − p_e|))`, `φ_a` of Eq. (C2) of [`crate::coulomb`],
    /// summed in a fixed order (`math::ordered_sum`): the low-dissipation integrator's energy target
    /// reads it, and a rayon sum's grouping follows how its work was stolen.
    pub fn potential_energy(&self, x: &[Vec3], q: &[Real], k_c: Real, a: Real) -> Real {
        let a2 = a * a;
        ordered_sum(x.len(), |i| {
            let mut phi = -self.uniform.dot(&x[i]);
            for c in &self.charges {
                phi += k_c * c.charge * inv_r((x[i] - c.position).norm_squared(), a2);
            }
            q[i] * phi
        })
    }
}

/// Adds gravity `m_i g` to `out` (N).
pub fn add_gravity(mass: &[Real], g: Vec3, out: &mut [Vec3]) {
    out.par_iter_mut().zip(mass.par_iter()).for_each(|(o, &m)| *o += g * m);
}

/// Gravitational potential energy `−Σ_i m_i g·x_i` (J).
pub fn gravity_energy(mass: &[Real], g: Vec3, x: &[Vec3]) -> Real {
    -x.iter().zip(mass).map(|(xi, &m)| m * g.dot(xi)).sum::<Real>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::COULOMB_CONSTANT as KC;

    #[test]
    fn uniform_field_and_point_charge_forces() {
        let ext = ExternalField {
            charges: vec![PointCharge { position: Vec3::new(0.0, 0.0, 1.0), charge: -2e-6 }],
            uniform: Vec3::new(100.0, 0.0, 0.0),
        };
        let x = [Vec3::zeros()];
        let q = [1e-6];
        let mut f = [Vec3::zeros()];
        ext.add_forces(&x, &q, KC, 0.0, &mut f);
        // E pushes along +x with qE = 1e-4 N; the −2 µC charge 1 m above attracts with k·2e-12.
        assert!((f[0] - Vec3::new(1e-4, 0.0, KC * 2e-12)).norm() < 1e-15);
    }

    #[test]
    fn coincident_external_charge_is_finite() {
        let ext = ExternalField {
            charges: vec![PointCharge { position: Vec3::zeros(), charge: 1e-6 }],
            uniform: Vec3::zeros(),
        };
        let mut f = [Vec3::zeros()];
        ext.add_forces(&[Vec3::zeros()], &[1e-6], KC, 0.0, &mut f);
        assert!(is_finite3(&f[0]));
        assert!(ext.potential_energy(&[Vec3::zeros()], &[1e-6], KC, 0.0).is_finite());
    }

    #[test]
    fn bad_arrays_rejected() {
        assert!(ExternalField::charges_from_arrays(&[Vec3::zeros()], &[]).is_err());
        assert!(ExternalField::charges_from_arrays(&[Vec3::new(f64::NAN, 0.0, 0.0)], &[1.0]).is_err());
        assert!(ExternalField::charges_from_arrays(&[Vec3::zeros()], &[f64::INFINITY]).is_err());
    }
}
