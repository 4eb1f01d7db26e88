//! The exact geometric predicates of the tetrahedralization, on tets given as 4 point indices:
//! Shewchuk's adaptive `orient3d` and `insphere` (the `robust` crate) make every decision of
//! the walk and the cavity search exact, whatever the input's degeneracies.

use crate::math::{Real, Vec3};
pub(super) use robust::insphere;
use robust::{orient3d, Coord3D};

/// `p` as the predicates' point type.
#[inline]
pub(super) fn c3(p: &Vec3) -> Coord3D<Real> {
    Coord3D { x: p.x, y: p.y, z: p.z }
}

/// The 4 vertices of tet `v` as the predicates' point type.
#[inline]
pub(super) fn corners4(points: &[Vec3], v: &[u32; 4]) -> [Coord3D<Real>; 4] {
    let c = |k: usize| c3(&points[v[k] as usize]);
    [c(0), c(1), c(2), c(3)]
}

/// `orient3d` of tet `v` with vertex `k` replaced by `p`: `< 0` iff `p` is strictly beyond the
/// face opposite `v[k]`, `0` iff `p` is on that face's plane.
#[inline]
pub(super) fn orient_replaced(points: &[Vec3], v: &[u32; 4], k: usize, p: &Vec3) -> Real {
    let mut c = corners4(points, v);
    c[k] = c3(p);
    orient3d(c[0], c[1], c[2], c[3])
}

/// `orient3d` of tet `v`: `> 0` for the positive orientation of the module docs.
pub(super) fn orient(points: &[Vec3], v: &[u32; 4]) -> Real {
    let c = corners4(points, v);
    orient3d(c[0], c[1], c[2], c[3])
}

/// Whether the closed tet `v` (positively oriented) contains `p`.
pub(super) fn contains(points: &[Vec3], v: &[u32; 4], p: &Vec3) -> bool {
    (0..4).all(|k| orient_replaced(points, v, k, p) >= 0.0)
}
