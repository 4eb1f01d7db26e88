//! The world box the DDEF grid is mapped to (Alg. 1, line 1: "within the bounding box of
//! `{x_t^i}`"): the charges' bounding box, padded so that every charge is strictly inside and a
//! flat cloth still gets a box with volume, and the affine maps between it and the grid's
//! reference box `[0, a]` (see [`super::grid`]).

use crate::math::{Real, Vec3};

/// The axis-aligned box the unit grid is mapped to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct GridBox {
    /// Minimum corner (m).
    pub lo: Vec3,
    /// Edge lengths (m), all `> 0`.
    pub size: Vec3,
}

/// Padding of each box face as a fraction of the box diagonal.
const PAD_FRACTION: Real = 0.01;

impl GridBox {
    /// The bounding box of `x`, padded so that every point is strictly inside and flat or
    /// degenerate boxes get volume: each face moves out by `max(1 % of the diagonal, s/2 − e/2)`
    /// where `e` is the axis extent and `s = diagonal / ∛m` the mean Halton spacing of a cube of
    /// that diagonal, so a zero-thickness cloth gets a slab about one grid spacing thick.
    /// Coincident points get a box of size `min_size` (m).
    pub fn around(x: impl Iterator<Item = Vec3>, m: usize, min_size: Real) -> Self {
        let (mut lo, mut hi) = (Vec3::repeat(Real::INFINITY), Vec3::repeat(Real::NEG_INFINITY));
        for p in x {
            lo = lo.inf(&p);
            hi = hi.sup(&p);
        }
        let extent = hi - lo;
        let diagonal = extent.norm().max(min_size);
        let spacing = diagonal / (m.max(1) as Real).cbrt();
        let pad = extent.map(|e| (PAD_FRACTION * diagonal).max(0.5 * (spacing - e)));
        GridBox { lo: lo - pad, size: extent + 2.0 * pad }
    }

    /// The box's aspect ratio `size / max(size)`.
    pub fn aspect(self) -> Vec3 {
        self.size / self.size.max()
    }

    /// World → unit coordinates (`[0, 1]³` over the box).
    #[inline]
    pub fn to_unit(self, p: Vec3) -> Vec3 {
        (p - self.lo).component_div(&self.size)
    }

    /// Unit → world coordinates.
    #[inline]
    pub fn to_world(self, u: Vec3) -> Vec3 {
        self.lo + u.component_mul(&self.size)
    }

    /// World → reference coordinates of a grid with extent `aspect`.
    #[inline]
    pub fn to_reference(self, p: Vec3, aspect: Vec3) -> Vec3 {
        self.to_unit(p).component_mul(&aspect)
    }

    /// The box grown by `fraction` of its size on each side.
    pub fn grown(self, fraction: Real) -> Self {
        GridBox { lo: self.lo - self.size * fraction, size: self.size * (1.0 + 2.0 * fraction) }
    }

    /// Reference coordinates of a grid with extent `aspect` → world.
    #[inline]
    pub fn reference_to_world(self, r: Vec3, aspect: Vec3) -> Vec3 {
        self.to_world(r.component_div(&aspect))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_and_degenerate_boxes_get_volume_and_contain_their_points() {
        let flat: Vec<Vec3> = (0..100).map(|i| Vec3::new((i % 10) as Real, (i / 10) as Real, 0.0)).collect();
        let b = GridBox::around(flat.iter().copied(), 1000, 1e-6);
        assert!(b.size.z > 0.5, "slab thickness {}", b.size.z);
        for p in &flat {
            let u = b.to_unit(*p);
            assert!(u.iter().all(|c| *c > 0.0 && *c < 1.0));
            assert!((b.to_world(u) - p).norm() < 1e-12);
        }
        let point = GridBox::around([Vec3::new(1.0, 2.0, 3.0)].into_iter(), 100, 1e-3);
        assert!(point.size.iter().all(|s| *s > 0.0));
        assert!((point.to_unit(Vec3::new(1.0, 2.0, 3.0)) - Vec3::repeat(0.5)).norm() < 1e-12);
    }
}
