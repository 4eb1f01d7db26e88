//! Hookean springs: topology, Liu 2013's local step, explicit forces and energy.
//!
//! A spring `s = (a, b, k_s, l_s)` stores the energy `k_s (|x_a − x_b| − l_s)² / 2`
//! ([Liu 2013](crate#references) Eq. (9)). Symbols follow Liu 2013: `d_s` is the spring's
//! optimal direction vector of length `l_s` (the auxiliary variable of the local step),
//! `J d` assembles `+k_s d_s` on `a` and `−k_s d_s` on `b` (Liu 2013 Eq. (12)).
//!
//! ## Strain-rate damping
//! A spring may also damp the rate at which its length changes ([`Springs::set_damping`]),
//! with a damping time `β_s` (s): the force `f_a = −β_s k_s (d|p_s|/dt) u_s`, `f_b = −f_a`,
//! with `p_s = x_a − x_b` and `u_s = p_s/|p_s|`. It resists stretching and compressing only,
//! never a rigid motion or a rotation (Blender's Cloth calls it Tension Damping). Its damping
//! coefficient `c_s = β_s k_s` (N·s/m) is proportional to the stiffness, so that a mode of
//! angular frequency `ω` of the springs is damped at the ratio `ζ = β ω / 2`: the fast waves
//! that a stiff mesh rings with after an impact die within a few periods, the slow swing of a
//! hanging cloth keeps its energy.
//!
//! In an implicit step of length `h` from `x_t`, with the rate `(|p_s| − |p_s,t|)/h`, the force
//! is the gradient of `β_s k_s (|p_s| − |p_s,t|)² / (2h)`: the energy of a second spring on the
//! same ends, of stiffness `β_s k_s / h` and of rest length `|p_s,t|`, the length at the step's
//! start. So it enters Liu's solver as a spring does (Liu 2013 Eq. (9)–(10)): the local step
//! projects `p_s` onto the sphere of radius `|p_s,t|`, `u_s = |p_s,t| p_s/|p_s|`; the global
//! matrix gains `(β_s / h) k_s` on each spring, so `M + h² L` becomes `M + Σ_s (h² + h β_s) k_s
//! A_s A_sᵀ`, still constant over a step and prefactored ([`crate::GlobalSolver`]); and the
//! right-hand side gathers `k_s (d_s + (β_s/h) u_s)` ([`gather_jd_damped`]). The iterations stay
//! a block descent on one energy ([`damping_energy`] is the added term), so they and their
//! accelerated form converge as before, to the implicit step with the damping force
//! (`tests/spring_damping.rs` checks it against Newton's method).

mod local;
mod topology;

pub use local::{
    damping_energy, damping_forces, gather_jd, gather_jd_damped, local_step, local_step_energy,
    midpoint_damping_work, spring_energy, spring_forces, StrainRate,
};
pub use topology::{springs_from_triangles, MeshSprings};

use crate::error::{Error, Result};
use crate::math::{Real, Vec3};

/// The validated springs of a system with a vertex → incident-spring index, so that the
/// per-vertex gathers run in parallel without write conflicts.
#[derive(Debug, Clone)]
pub struct Springs {
    ends: Vec<[u32; 2]>,
    stiffness: Vec<Real>,
    rest: Vec<Real>,
    /// Damping time `β_s` per spring (s, see the module docs); empty: none damps.
    damping: Vec<Real>,
    /// CSR offsets into `incident`, one row per vertex.
    offsets: Vec<u32>,
    /// `(spring, sign)` with sign `+1` when the vertex is the spring's `a` end, `−1` for `b`.
    incident: Vec<(u32, Real)>,
}

impl Springs {
    /// Validates springs against `positions` and takes their rest lengths from it.
    ///
    /// # Arguments
    /// * `positions` — rest positions (m); rest length `l_s = |x_a − x_b|`.
    /// * `ends` — vertex pairs `(a, b)`.
    /// * `stiffness` — `k_s` per spring (N/m).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the lengths differ, an index is out of range, a spring
    /// joins a vertex to itself, a stiffness is negative or not finite, or a rest length is zero.
    pub fn new(positions: &[Vec3], ends: &[[u32; 2]], stiffness: &[Real]) -> Result<Self> {
        let n = positions.len();
        if ends.len() != stiffness.len() {
            return Err(Error::invalid(
                "stiffness",
                None,
                format!("has {} values for {} springs", stiffness.len(), ends.len()),
            ));
        }
        if n > u32::MAX as usize || ends.len() > u32::MAX as usize {
            return Err(Error::invalid("springs", None, "more than 2^32 - 1 elements"));
        }
        let mut rest = Vec::with_capacity(ends.len());
        for (s, (&[a, b], &k)) in ends.iter().zip(stiffness).enumerate() {
            if a as usize >= n || b as usize >= n {
                return Err(Error::invalid(
                    "springs",
                    Some(s),
                    format!("vertex index ({a}, {b}) out of range for {n} vertices"),
                ));
            }
            if a == b {
                return Err(Error::invalid("springs", Some(s), format!("joins vertex {a} to itself")));
            }
            if !(k.is_finite() && k >= 0.0) {
                return Err(Error::invalid(
                    "stiffness",
                    Some(s),
                    format!("{k} is not a finite value >= 0 N/m"),
                ));
            }
            let l = (positions[a as usize] - positions[b as usize]).norm();
            if !(l > 0.0 && l.is_finite()) {
                let why = if l == 0.0 {
                    format!("zero rest length: vertices {a} and {b} coincide")
                } else {
                    format!("rest length {l} between vertices {a} and {b} is not a finite number of metres")
                };
                return Err(Error::invalid("springs", Some(s), why));
            }
            rest.push(l);
        }
        let mut counts = vec![0u32; n + 1];
        for &[a, b] in ends {
            counts[a as usize + 1] += 1;
            counts[b as usize + 1] += 1;
        }
        for i in 0..n {
            counts[i + 1] += counts[i];
        }
        let offsets = counts;
        let mut fill = offsets.clone();
        let mut incident = vec![(0u32, 0.0); 2 * ends.len()];
        for (s, &[a, b]) in ends.iter().enumerate() {
            for (v, sign) in [(a, 1.0), (b, -1.0)] {
                let slot = &mut fill[v as usize];
                incident[*slot as usize] = (s as u32, sign);
                *slot += 1;
            }
        }
        Ok(Springs {
            ends: ends.to_vec(),
            stiffness: stiffness.to_vec(),
            rest,
            damping: Vec::new(),
            offsets,
            incident,
        })
    }

    /// Number of springs.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when there are no springs.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Vertex pairs `(a, b)`.
    pub fn ends(&self) -> &[[u32; 2]] {
        &self.ends
    }

    /// Stiffness `k_s` per spring (N/m).
    pub fn stiffness(&self) -> &[Real] {
        &self.stiffness
    }

    /// Rest length `l_s` per spring (m).
    pub fn rest_lengths(&self) -> &[Real] {
        &self.rest
    }

    /// Replaces the stiffnesses.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch or a negative or non-finite value.
    pub fn set_stiffness(&mut self, stiffness: &[Real]) -> Result<()> {
        if stiffness.len() != self.ends.len() {
            return Err(Error::invalid(
                "stiffness",
                None,
                format!("has {} values for {} springs", stiffness.len(), self.ends.len()),
            ));
        }
        if let Some(s) = stiffness.iter().position(|k| !(k.is_finite() && *k >= 0.0)) {
            return Err(Error::invalid("stiffness", Some(s), "not a finite value >= 0 N/m"));
        }
        self.stiffness.copy_from_slice(stiffness);
        Ok(())
    }

    /// Strain-rate damping time `β_s` per spring (s, see the module docs); empty when no spring
    /// damps.
    pub fn damping(&self) -> &[Real] {
        &self.damping
    }

    /// True when some spring damps its strain rate.
    pub fn damped(&self) -> bool {
        !self.damping.is_empty()
    }

    /// Sets each spring's strain-rate damping time `β_s` (s, see the module docs); all zeros
    /// (or none) turns damping off.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`spring_damping`) on a length mismatch or a negative or
    /// non-finite value.
    pub fn set_damping(&mut self, seconds: &[Real]) -> Result<()> {
        if !seconds.is_empty() && seconds.len() != self.ends.len() {
            return Err(Error::invalid(
                "spring_damping",
                None,
                format!("has {} values for {} springs", seconds.len(), self.ends.len()),
            ));
        }
        if let Some(s) = seconds.iter().position(|b| !(b.is_finite() && *b >= 0.0)) {
            return Err(Error::invalid("spring_damping", Some(s), "not a finite value >= 0 s"));
        }
        self.damping.clear();
        if seconds.iter().any(|&b| b > 0.0) {
            self.damping.extend_from_slice(seconds);
        }
        Ok(())
    }

    /// `(h² + h β_s) k_s`: spring `s`'s weight in the global matrix of an implicit step of
    /// length `h` (s), damping included (module docs).
    #[inline]
    pub(crate) fn implicit_weight(&self, s: usize, h: Real) -> Real {
        let beta = self.damping.get(s).copied().unwrap_or(0.0);
        (h * h + h * beta) * self.stiffness[s]
    }

    /// The `(spring, sign)` pairs incident to vertex `i`.
    #[inline]
    pub(crate) fn incident(&self, i: usize) -> &[(u32, Real)] {
        &self.incident[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}
