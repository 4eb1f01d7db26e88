//! Point location in a tetrahedralization: a visibility walk from a start tet toward the point,
//! with exact `orient3d`, a step cap and a linear scan as the fallback. It finds the tet each
//! new point falls in while the mesh is built, and each charge's tet `τ_i` in DDEF (Alg. 1,
//! line 3).

use super::mesh::{Tetrahedralization, NONE};
use super::predicates::{contains, orient_replaced};
use crate::math::Vec3;

/// Result of a visibility walk.
pub(super) enum Walk {
    /// The point is in this tet (on its boundary included).
    Inside(u32),
    /// The point is beyond a hull face: outside the box.
    Outside,
    /// The step cap was hit.
    Lost,
}

/// Visibility walk (stochastic face order, exact `orient3d`) for at most `cap` steps.
pub(super) fn walk(
    points: &[Vec3],
    tets: &[[u32; 4]],
    nbs: &[[u32; 4]],
    start: u32,
    p: &Vec3,
    cap: usize,
) -> Walk {
    let (mut t, mut prev, mut rng) = (start, NONE, start.wrapping_mul(0x9E37_79B9) | 1);
    'step: for _ in 0..cap {
        let v = &tets[t as usize];
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        for i in 0..4 {
            let k = (i + rng as usize) & 3;
            let n = nbs[t as usize][k];
            // p is strictly on our side of the face we just crossed
            if (n != prev || n == NONE) && orient_replaced(points, v, k, p) < 0.0 {
                if n == NONE {
                    return Walk::Outside; // beyond a face of the convex hull
                }
                (prev, t) = (t, n);
                continue 'step;
            }
        }
        return Walk::Inside(t);
    }
    Walk::Lost
}

/// Linear scan over live tets (dead slots are marked by `NONE` vertices).
pub(super) fn scan(points: &[Vec3], tets: &[[u32; 4]], p: &Vec3) -> Option<u32> {
    tets.iter().position(|v| v[0] != NONE && contains(points, v, p)).map(|t| t as u32)
}

/// Walks from tet `start` toward `p` (visibility walk with exact orient3d, with a step cap of
/// `4 * tets.len()` and a fallback to a linear scan if the cap is hit), returning the tet
/// containing p (p on a face/edge/vertex: any tet containing it). `None` if p is outside the
/// hull (the box) or not finite; points on the box surface are found (hull faces are closed).
/// An out-of-range `start` is replaced by tet 0.
pub(crate) fn locate(points: &[Vec3], tri: &Tetrahedralization, start: u32, p: Vec3) -> Option<u32> {
    locate_capped(points, tri, start, p, 4 * tri.tets.len() + 16)
}

/// [`locate`] with a step cap of `cap`.
pub(super) fn locate_capped(
    points: &[Vec3],
    tri: &Tetrahedralization,
    start: u32,
    p: Vec3,
    cap: usize,
) -> Option<u32> {
    if tri.tets.is_empty() || !p.iter().all(|x| x.is_finite()) {
        return None;
    }
    let start = if (start as usize) < tri.tets.len() { start } else { 0 };
    match walk(points, &tri.tets, &tri.neighbors, start, &p, cap) {
        Walk::Inside(t) => Some(t),
        Walk::Outside => None,
        Walk::Lost => scan(points, &tri.tets, &p),
    }
}
