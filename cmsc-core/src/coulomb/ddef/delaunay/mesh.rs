//! The tetrahedralization, finished and under construction: its first stage, the Kuhn split of
//! the box into 6 tets, and its last, the compaction that drops the slots dead tets left.

use super::predicates::orient;
use crate::math::Vec3;

/// Marks "no tet": a hull face in [`Tetrahedralization::neighbors`].
pub(crate) const NONE: u32 = u32::MAX;

/// A tetrahedralization: tets as 4 point indices with positive orientation, and for each tet
/// the neighbour across the face opposite each of its vertices (NONE on the hull).
pub(crate) struct Tetrahedralization {
    /// Tets as input point indices, each with `robust::orient3d(a, b, c, d) > 0`.
    pub tets: Vec<[u32; 4]>,
    /// `neighbors[t][k]` = tet sharing the face opposite `tets[t][k]`, or [`NONE`] on the hull.
    pub neighbors: Vec<[u32; 4]>,
    /// Input indices not inserted because they duplicate an earlier point exactly (ascending).
    pub skipped: Vec<u32>,
}

/// The tets while points are inserted: live tets and dead slots (vertices [`NONE`]), which new
/// tets reuse.
pub(super) struct Mesh {
    /// Tets as point indices (in insertion order), or `[NONE; 4]` for a dead slot.
    pub tets: Vec<[u32; 4]>,
    /// `nbs[t][k]`: the tet across the face opposite `tets[t][k]`, or [`NONE`] on the hull.
    pub nbs: Vec<[u32; 4]>,
    /// The tet created last: where the next point's walk starts.
    pub last: u32,
}

impl Mesh {
    /// The Kuhn split of the box with corners `corner` (the point index of the corner with
    /// bit `a` set when it is at the box's high end along axis `a`): one tet per axis
    /// permutation, walking lo → hi along the axes in that order, around the diagonal from
    /// corner 0 to corner 7. All 8 corners are cospherical, so this is Delaunay. Room is
    /// reserved for the ~6.5 tets per point of `n` points.
    pub fn kuhn(points: &[Vec3], corner: &[u32; 8], n: usize) -> Self {
        let mut tets = Vec::with_capacity(7 * n);
        for (a, b) in [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)] {
            let mut v = [corner[0], corner[1 << a], corner[1 << a | 1 << b], corner[7]];
            if orient(points, &v) < 0.0 {
                v.swap(0, 1);
            }
            tets.push(v);
        }
        let face = |v: &[u32; 4], k: usize| {
            let mut f = [v[(k + 1) & 3], v[(k + 2) & 3], v[(k + 3) & 3]];
            f.sort_unstable();
            f
        };
        let mut nbs = vec![[NONE; 4]; 6];
        for (t, nb) in nbs.iter_mut().enumerate() {
            for (k, slot) in nb.iter_mut().enumerate() {
                let f = face(&tets[t], k);
                if let Some(u) = (0..6).find(|&u| u != t && (0..4).any(|j| face(&tets[u], j) == f)) {
                    *slot = u as u32;
                }
            }
        }
        nbs.reserve(7 * n);
        Mesh { tets, nbs, last: 0 }
    }

    /// The live tets, renumbered densely, with their vertices mapped back to input indices by
    /// `orig` (internal id → input index); `skipped` (input indices) is sorted.
    pub fn compact(self, orig: &[u32], mut skipped: Vec<u32>) -> Tetrahedralization {
        let Mesh { tets, nbs, .. } = self;
        let mut remap = vec![NONE; tets.len()];
        let mut live = 0;
        for (t, v) in tets.iter().enumerate() {
            if v[0] != NONE {
                remap[t] = live;
                live += 1;
            }
        }
        let keep = |t: &usize| tets[*t][0] != NONE;
        let neighbors = (0..tets.len())
            .filter(keep)
            .map(|t| nbs[t].map(|u| if u == NONE { NONE } else { remap[u as usize] }))
            .collect();
        let tets = (0..tets.len()).filter(keep).map(|t| tets[t].map(|v| orig[v as usize])).collect();
        skipped.sort_unstable();
        Tetrahedralization { tets, neighbors, skipped }
    }
}
