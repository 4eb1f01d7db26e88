//! Hookean springs: topology, Liu 2013's local step, explicit forces and energy.
//!
//! A spring `s = (a, b, k_s, l_s)` stores the energy `k_s (|x_a − x_b| − l_s)² / 2`
//! ([Liu 2013](crate#references) Eq. (9)). Symbols follow Liu 2013: `d_s` is the spring's
//! optimal direction vector of length `l_s` (the auxiliary variable of the local step),
//! `J d` assembles `+k_s d_s` on `a` and `−k_s d_s` on `b` (Liu 2013 Eq. (12)).

mod local;
mod topology;

pub use local::{gather_jd, local_step, local_step_energy, spring_energy, spring_forces};
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
                return Err(Error::invalid(
                    "springs",
                    Some(s),
                    format!("zero rest length: vertices {a} and {b} coincide"),
                ));
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
        Ok(Springs { ends: ends.to_vec(), stiffness: stiffness.to_vec(), rest, offsets, incident })
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

    /// The `(spring, sign)` pairs incident to vertex `i`.
    #[inline]
    pub(crate) fn incident(&self, i: usize) -> &[(u32, Real)] {
        &self.incident[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}
