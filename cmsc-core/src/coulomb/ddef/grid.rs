//! The DDEF grid (Alg. 1, lines 1–2): grid points in a reference box, their Delaunay
//! tetrahedralization, and what every later step needs per grid: the near set of every tet
//! ([`super::neighborhood`]) and the points' blocks for the far-field gather
//! ([`super::blocks`]). Where the points go is [`super::placement`]'s.
//!
//! The grid is built once in a reference box `[0, a]` with the aspect ratio `a = size / max(size)`
//! of the charges' box (so its tets are well shaped in world space), and mapped to each step's
//! box by the affine map `x = lo + (p ⊘ a) ∘ size` ([`super::grid_box`]). A positive axis
//! scaling maps a tetrahedralization to a tetrahedralization (volumes keep their sign) and
//! barycentric coordinates are affine invariants, so location and interpolation run in
//! reference coordinates and the `O(m log m)` tetrahedralization is paid again only when the
//! box's aspect ratio drifts by more than [`ASPECT_TOLERANCE`] (a mapped mesh then has tets
//! stretched by at most that factor); building from a unit cube for a flat box raised the torus
//! error at m = 1K from 0.03 to 0.05.

use super::blocks::Blocks;
use super::csr::Csr;
use super::delaunay::{tetrahedralize, Tetrahedralization};
use super::neighborhood::{near_sets, Neighborhood};
use super::placement::{following_points, uniform_points, Occupancy};
use crate::error::{Error, Result};
use crate::math::{Real, Vec3};

/// Largest factor by which an axis of the box may stretch relative to the grid's reference box
/// before the grid is rebuilt.
pub(super) const ASPECT_TOLERANCE: Real = 1.3;

/// The reference grid: the 8 corners of `[0, a]`, then `m` points placed in it, tetrahedralized,
/// with the near set of every tet.
pub(super) struct UnitGrid {
    /// Grid points in reference coordinates; corners first.
    pub points: Vec<Vec3>,
    /// The reference box's extent `a` (max component 1).
    pub aspect: Vec3,
    /// Their tetrahedralization, with adjacency.
    pub tri: Tetrahedralization,
    /// The near set of each tet, each sorted ascending (for binary-search membership tests).
    near: Csr,
    /// The band of a [`super::Placement::Following`] grid.
    band: Option<Occupancy>,
    /// The points in compact blocks, for the far-field gather.
    pub blocks: Blocks,
}

impl UnitGrid {
    /// Builds the grid for `m` Halton points ([`super::Placement::Uniform`]).
    ///
    /// # Errors
    /// [`Error::Internal`] if the tetrahedralization fails, which only a bug can cause for these
    /// points.
    pub fn new(m: u32, neighborhood: Neighborhood, aspect: Vec3) -> Result<Self> {
        let grid = Self::build(uniform_points(aspect, m as usize), neighborhood, aspect, None)?;
        // Halton points are distinct and never on a corner, so nothing is skipped as a duplicate.
        debug_assert!(grid.tri.skipped.is_empty(), "duplicate grid points: {:?}", grid.tri.skipped);
        Ok(grid)
    }

    /// Builds a [`super::Placement::Following`] grid of `m` points for charges at reference
    /// positions `u` (strictly inside `[0, aspect]`).
    ///
    /// # Errors
    /// As [`UnitGrid::new`].
    pub fn following(m: u32, neighborhood: Neighborhood, aspect: Vec3, u: &[Vec3]) -> Result<Self> {
        let (points, band) = following_points(aspect, m as usize, u);
        Self::build(points, neighborhood, aspect, Some(band))
    }

    /// Tetrahedralizes `points` (the box corners first) and precomputes the near sets.
    fn build(
        points: Vec<Vec3>,
        neighborhood: Neighborhood,
        aspect: Vec3,
        band: Option<Occupancy>,
    ) -> Result<Self> {
        let tri = tetrahedralize(&points)
            .map_err(|e| Error::Internal(format!("tetrahedralization of the DDEF grid failed: {e}")))?;
        let near = near_sets(&tri, points.len(), neighborhood);
        let blocks = Blocks::new(&points);
        Ok(UnitGrid { points, aspect, tri, near, band, blocks })
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
        self.near.row(t as usize)
    }

    /// Number of placed points `m` (excluding the corners).
    pub fn m(&self) -> usize {
        self.points.len() - 8
    }

    /// For a [`super::Placement::Following`] grid: whether the charges, now at reference
    /// positions `u`, are others than it was built for or one of them moved by more than
    /// [`super::placement::FOLLOW_DRIFT`] of a band cell along an axis since (`None` for a
    /// uniform grid).
    pub fn drifted(&self, u: &[Vec3]) -> Option<bool> {
        self.band.as_ref().map(|band| band.drifted(u))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
