//! Sources as structure of arrays, zero-padded to [`LANES`]: the layout every `f64` pair kernel
//! of [`super`] reads, so that its inner loop is branch-free over fixed-width chunks (a padding
//! source has zero charge and contributes nothing).

use crate::math::{Real, Vec3};

/// SIMD-friendly chunk width: two AVX2 registers of f64, one AVX-512 register.
pub(crate) const LANES: usize = 8;

/// Sources as structure of arrays, zero-padded to a multiple of [`LANES`].
#[derive(Debug, Default)]
pub(crate) struct Soa {
    pub x: Vec<Real>,
    pub y: Vec<Real>,
    pub z: Vec<Real>,
    pub q: Vec<Real>,
}

impl Soa {
    /// Loads the sources at `pos` (m) with charges `q` (C), padded.
    pub fn load(&mut self, pos: &[Vec3], q: &[Real]) {
        let padded = pos.len().div_ceil(LANES) * LANES;
        for (buf, f) in [(&mut self.x, 0), (&mut self.y, 1), (&mut self.z, 2)] {
            buf.clear();
            buf.extend(pos.iter().map(|p| p[f]));
            buf.resize(padded, 0.0);
        }
        self.q.clear();
        self.q.extend_from_slice(q);
        self.q.resize(padded, 0.0);
    }

    /// Empties the sources.
    pub fn clear(&mut self) {
        for buf in [&mut self.x, &mut self.y, &mut self.z, &mut self.q] {
            buf.clear();
        }
    }

    /// Appends a source at `p` with charge `q` (call [`Soa::pad`] before summing).
    #[inline]
    pub fn push(&mut self, p: Vec3, q: Real) {
        self.x.push(p.x);
        self.y.push(p.y);
        self.z.push(p.z);
        self.q.push(q);
    }

    /// Zero-pads to a multiple of [`LANES`] (zero charges).
    pub fn pad(&mut self) {
        let padded = self.q.len().div_ceil(LANES) * LANES;
        for buf in [&mut self.x, &mut self.y, &mut self.z, &mut self.q] {
            buf.resize(padded, 0.0);
        }
    }
}
