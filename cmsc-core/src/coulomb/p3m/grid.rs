//! The regular mesh of the particle-mesh part: spacing `h` equal along the three axes, as many
//! points per axis as the charges' box needs (a flat cloth gets few along its normal), and the
//! FFT sizes of its free-space convolution: each axis doubled (Hockney & Eastwood's zero
//! padding, [Hockney & Eastwood 1988](super::P3m#references) §6-5-4) and rounded up to `2^a 3^b`.
//! The mesh keeps its sizes while the box still fits, re-centred on the charges at each call,
//! so the cached kernel transform ([`super::fft`]) stays valid as the charges move.

use crate::math::{Real, Vec3};

/// Extra points per side beyond the spline's reach, so that a box that grows a little still
/// fits the mesh and its kernel transform is kept.
const SLACK: usize = 2;

/// The mesh covers this multiple of the charges' extent, so that a deforming mesh (a swinging
/// cloth) keeps it, and its kernel transform, for many steps.
const GROWTH: Real = 1.1;

/// A regular mesh with its FFT sizes.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Grid {
    /// World position of point `(0, 0, 0)` (m).
    pub origin: Vec3,
    /// Spacing `h` (m).
    pub h: Real,
    /// Points per axis the charges occupy, padded (the mesh the charges are spread onto).
    pub n: [usize; 3],
    /// FFT sizes per axis, `m ≥ 2n + 4`: `n − 1` offsets each way and no wrap-around.
    pub m: [usize; 3],
    /// Spline order `p`.
    pub order: usize,
}

/// The smallest `2^a 3^b` at or above `n`.
pub(super) fn smooth_size(n: usize) -> usize {
    let mut best = usize::MAX;
    let mut three = 1usize;
    while three < 2 * n.max(1) {
        let mut v = three;
        while v < n {
            v *= 2;
        }
        best = best.min(v);
        three *= 3;
    }
    best
}

impl Grid {
    /// A mesh of spacing `h` and spline order `order` for charges in the box `lo..hi`: each axis
    /// covers the extent plus the spline's reach and [`SLACK`], and its FFT size is the
    /// smallest `2^a 3^b ≥ 2n + 4`; `n` then takes the points that size leaves free.
    pub fn fit(lo: Vec3, hi: Vec3, h: Real, order: usize) -> Grid {
        let mut n = [0; 3];
        let mut m = [0; 3];
        for d in 0..3 {
            let needed = ((hi[d] - lo[d]) * GROWTH / h).ceil() as usize + order + 2 * SLACK + 1;
            m[d] = smooth_size(2 * needed + 4);
            n[d] = (m[d] - 4) / 2;
        }
        let mut grid = Grid { origin: lo, h, n, m, order };
        grid.center(lo, hi);
        grid
    }

    /// Points the mesh would have for the box `lo..hi` at spacing `h` (its FFT size).
    pub fn fft_points(lo: Vec3, hi: Vec3, h: Real, order: usize) -> f64 {
        (0..3)
            .map(|d| {
                let needed = ((hi[d] - lo[d]) * GROWTH / h).ceil() + (order + 2 * SLACK + 1) as Real;
                smooth_size(2 * needed as usize + 4) as f64
            })
            .product()
    }

    /// Whether the box `lo..hi` fits this mesh with the spline's reach on every side.
    pub fn holds(&self, lo: Vec3, hi: Vec3) -> bool {
        (0..3).all(|d| hi[d] - lo[d] <= (self.n[d] - self.order - 2) as Real * self.h)
    }

    /// Centres the mesh on the box `lo..hi` (which it [`holds`](Grid::holds)).
    pub fn center(&mut self, lo: Vec3, hi: Vec3) {
        let middle = (lo + hi) * 0.5;
        let half = Vec3::new(self.n[0] as Real - 1.0, self.n[1] as Real - 1.0, self.n[2] as Real - 1.0) * 0.5;
        self.origin = middle - half * self.h;
    }

    /// Grid coordinates (cells) of the world point `x`.
    #[inline]
    pub fn to_grid(&self, x: Vec3) -> Vec3 {
        (x - self.origin) / self.h
    }

    /// Points of the mesh the charges are spread onto.
    pub fn len(&self) -> usize {
        self.n.iter().product()
    }

    /// The axis with the most points (the spreading's slab axis).
    pub fn longest_axis(&self) -> usize {
        (0..3).max_by_key(|&d| self.n[d]).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smooth_sizes_are_the_next_product_of_twos_and_threes() {
        assert_eq!(smooth_size(1), 1);
        assert_eq!(smooth_size(5), 6);
        assert_eq!(smooth_size(7), 8);
        assert_eq!(smooth_size(100), 108);
        assert_eq!(smooth_size(129), 144);
        for n in 1..2000 {
            let s = smooth_size(n);
            let mut r = s;
            while r.is_multiple_of(2) {
                r /= 2;
            }
            while r.is_multiple_of(3) {
                r /= 3;
            }
            assert!(s >= n && r == 1 && s < 2 * n.max(1) + 1, "{n} -> {s}");
        }
    }

    #[test]
    fn a_fitted_mesh_holds_its_box_with_the_spline_reach() {
        let (lo, hi) = (Vec3::new(-1.0, 0.0, 2.0), Vec3::new(1.5, 0.3, 2.0));
        let g = Grid::fit(lo, hi, 0.05, 5);
        assert!(g.holds(lo, hi));
        for d in 0..3 {
            assert!(g.m[d] >= 2 * g.n[d] + 4, "axis {d}: {g:?}");
            for x in [lo[d], hi[d]] {
                let u = (x - g.origin[d]) / g.h;
                assert!(u - 2.5 > -1.0 && u + 2.5 < g.n[d] as Real, "axis {d}: u {u}, {g:?}");
            }
        }
    }
}
