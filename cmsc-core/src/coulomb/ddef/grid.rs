//! The DDEF grid (Alg. 1, lines 1–2): Halton points in the charges' padded bounding box plus the
//! box corners, tetrahedralized.
//!
//! The grid is built once in a reference box `[0, a]` with the aspect ratio `a = size / max(size)`
//! of the charges' box (so its tets are well shaped in world space), and mapped to each step's
//! box by the affine map `x = lo + (p ⊘ a) ∘ size`. A positive axis scaling maps a
//! tetrahedralization to a tetrahedralization (volumes keep their sign) and barycentric
//! coordinates are affine invariants, so location and interpolation run in reference
//! coordinates and the `O(m log m)` tetrahedralization is paid again only when the box's aspect
//! ratio drifts by more than [`ASPECT_TOLERANCE`] (a mapped mesh then has tets stretched by at
//! most that factor); building from a unit cube for a flat box raised the torus error at m = 1K
//! from 0.03 to 0.05.

use halton::Sequence;

use super::delaunay::{tetrahedralize, Tetrahedralization, NONE};
use crate::error::{Error, Result};
use crate::math::{Real, Vec3};

/// Which grid points count as "near" a charge in tet `τ` (Alg. 1, line 3: "vertices of `τ_i` ∪
/// vertices of neighbours of `τ_i`"; §3.1.2: "the far-field node is at least one ring away").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Neighborhood {
    /// The vertices of `τ` and of the (at most 4) tets sharing a face with it: at most 8 points.
    Face,
    /// The vertices of every tet sharing at least a vertex with `τ` (the one-ring of `τ`'s
    /// vertices): about 40–60 points. The default: relative error 0.004–0.018 for m ≥ 100 on the
    /// test meshes, against 0.013–0.105 for [`Neighborhood::Face`], which is 2.5× faster at
    /// n = 64K, m = 1K (`tests/ddef.rs`, `examples/ddef_bench.rs --face`).
    #[default]
    Ring,
}

/// Largest factor by which an axis of the box may stretch relative to the grid's reference box
/// before the grid is rebuilt.
pub(super) const ASPECT_TOLERANCE: Real = 1.3;

/// The reference grid: the 8 corners of `[0, a]`, then `m` Halton points (bases 2, 3, 5) scaled
/// to it, tetrahedralized, with the near set of every tet.
pub(super) struct UnitGrid {
    /// Grid points in reference coordinates; corners first.
    pub points: Vec<Vec3>,
    /// The reference box's extent `a` (max component 1).
    pub aspect: Vec3,
    /// Their tetrahedralization, with adjacency.
    pub tri: Tetrahedralization,
    /// CSR offsets of the near set of each tet.
    near_offsets: Vec<u32>,
    /// Concatenated near sets, each sorted ascending (for binary-search membership tests).
    near: Vec<u32>,
}

impl UnitGrid {
    /// Builds the grid for `m` Halton points.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`grid_points`) if the tetrahedralization fails, which only a
    /// bug can cause for these points.
    pub fn new(m: u32, neighborhood: Neighborhood, aspect: Vec3) -> Result<Self> {
        let mut points = Vec::with_capacity(m as usize + 8);
        for c in 0..8u32 {
            let corner = Vec3::new((c & 1) as Real, ((c >> 1) & 1) as Real, ((c >> 2) & 1) as Real);
            points.push(corner.component_mul(&aspect));
        }
        // Halton indices start at 1, so no point is 0 and none coincides with a corner.
        let halton = Sequence::new(2).zip(Sequence::new(3)).zip(Sequence::new(5));
        points.extend(halton.take(m as usize).map(|((x, y), z)| Vec3::new(x, y, z).component_mul(&aspect)));
        let tri = tetrahedralize(&points)
            .map_err(|e| Error::invalid("grid_points", None, format!("tetrahedralization failed: {e}")))?;
        // Halton points are distinct and never on a corner, so nothing is skipped as a duplicate.
        debug_assert!(tri.skipped.is_empty(), "duplicate grid points: {:?}", tri.skipped);
        let (near_offsets, near) = near_sets(&tri, points.len(), neighborhood);
        Ok(UnitGrid { points, aspect, tri, near_offsets, near })
    }

    /// True when a box of aspect `aspect` maps onto this grid with tets stretched by at most
    /// [`ASPECT_TOLERANCE`] along any axis.
    pub fn fits(&self, aspect: Vec3) -> bool {
        let stretch = aspect.component_div(&self.aspect);
        let (lo, hi) = (stretch.min(), stretch.max());
        hi / lo <= ASPECT_TOLERANCE
    }

    /// The near grid points of a charge in tet `t`, sorted.
    #[inline]
    pub fn near(&self, t: u32) -> &[u32] {
        &self.near[self.near_offsets[t as usize] as usize..self.near_offsets[t as usize + 1] as usize]
    }

    /// Number of Halton points `m` (excluding the corners).
    pub fn m(&self) -> usize {
        self.points.len() - 8
    }
}

/// The near set of every tet, as CSR.
fn near_sets(tri: &Tetrahedralization, n_points: usize, neighborhood: Neighborhood) -> (Vec<u32>, Vec<u32>) {
    // vertex → incident tets, for the ring
    let mut inc_off = vec![0u32; n_points + 1];
    for t in &tri.tets {
        for &v in t {
            inc_off[v as usize + 1] += 1;
        }
    }
    for v in 0..n_points {
        inc_off[v + 1] += inc_off[v];
    }
    let mut inc = vec![0u32; inc_off[n_points] as usize];
    let mut fill = inc_off.clone();
    for (t, tet) in tri.tets.iter().enumerate() {
        for &v in tet {
            inc[fill[v as usize] as usize] = t as u32;
            fill[v as usize] += 1;
        }
    }
    let mut offsets = Vec::with_capacity(tri.tets.len() + 1);
    offsets.push(0u32);
    let mut near = Vec::new();
    let mut set = Vec::new();
    for (t, tet) in tri.tets.iter().enumerate() {
        set.clear();
        match neighborhood {
            Neighborhood::Face => {
                set.extend_from_slice(tet);
                for &nb in tri.neighbors[t].iter().filter(|&&nb| nb != NONE) {
                    set.extend_from_slice(&tri.tets[nb as usize]);
                }
            }
            Neighborhood::Ring => {
                for &v in tet {
                    for &s in &inc[inc_off[v as usize] as usize..inc_off[v as usize + 1] as usize] {
                        set.extend_from_slice(&tri.tets[s as usize]);
                    }
                }
            }
        }
        set.sort_unstable();
        set.dedup();
        near.extend_from_slice(&set);
        offsets.push(near.len() as u32);
    }
    (offsets, near)
}

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

    #[test]
    fn unit_grid_has_corners_and_halton_points() {
        let g = UnitGrid::new(100, Neighborhood::Ring, Vec3::repeat(1.0)).unwrap();
        assert!(g.fits(Vec3::new(1.0, 0.9, 0.8)) && !g.fits(Vec3::new(1.0, 1.0, 0.5)));
        assert!(g.near(0).len() > 8);
        assert!(g.near(0).windows(2).all(|w| w[0] < w[1]));
        assert_eq!(g.m(), 100);
        assert_eq!(g.points[8], Vec3::new(0.5, 1.0 / 3.0, 0.2));
        // the tets fill the unit cube
        let volume: Real = g
            .tri
            .tets
            .iter()
            .map(|t| {
                let [a, b, c, d] = t.map(|i| g.points[i as usize]);
                (b - a).cross(&(c - a)).dot(&(d - a)).abs() / 6.0
            })
            .sum();
        assert!((volume - 1.0).abs() < 1e-12);
    }
}
