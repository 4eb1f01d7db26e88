//! Bowyer–Watson, the first half of inserting a point: its cavity, the face-connected set of
//! tets whose circumsphere *strictly* contains it (cospherical = not in conflict), found by a
//! breadth-first search from the tet that contains it (which always conflicts: a point of a
//! closed tet other than its vertices is strictly inside its circumsphere), and the cavity's
//! boundary faces, which [`super::fill`] connects to the point.

use super::mesh::{Mesh, NONE};
use super::predicates::{c3, corners4, insphere, orient_replaced};
use crate::math::Vec3;

/// A cavity boundary face: the new tet's vertices, the slot of the new point in it, the tet
/// outside the face (or NONE) and the index in that tet that points back at the cavity.
pub(super) struct BoundaryFace {
    pub verts: [u32; 4],
    pub k: usize,
    pub out: u32,
    pub back: usize,
}

/// The cavity of the point being inserted, and the marks of the tets its search visited.
pub(super) struct Cavity {
    /// The tets in conflict, in the order the search found them.
    pub tets: Vec<u32>,
    /// Its boundary faces.
    pub boundary: Vec<BoundaryFace>,
    /// `mark[t] = 2 * iter + (in conflict)`: tets visited while inserting point number `iter`.
    mark: Vec<u32>,
}

impl Cavity {
    /// An empty cavity, with room for the marks of `tets` tets.
    pub fn with_capacity(tets: usize) -> Self {
        Cavity { tets: Vec::new(), boundary: Vec::new(), mark: Vec::with_capacity(tets) }
    }

    /// Finds the cavity of point `i` (at `points[i]`, the `iter`-th inserted; `iter ≥ 1`) in
    /// `mesh`, starting from the tet `t0` that contains it. Hull faces of the cavity that are
    /// coplanar with the point (the point lies on that box face) are not boundary faces: the
    /// point re-triangulates that box face, 2D-Delaunay-wise.
    pub fn dig(&mut self, points: &[Vec3], mesh: &Mesh, t0: u32, i: u32, iter: u32) {
        let (tets, nbs, mark) = (&mesh.tets, &mesh.nbs, &mut self.mark);
        let p = points[i as usize];
        mark.resize(tets.len(), 0); // new tets are unvisited
        self.tets.clear();
        self.boundary.clear();
        mark[t0 as usize] = 2 * iter + 1;
        self.tets.push(t0);
        let mut head = 0;
        while let Some(&t) = self.tets.get(head) {
            head += 1;
            let v = tets[t as usize];
            for k in 0..4 {
                let nb = nbs[t as usize][k];
                if nb == NONE {
                    if orient_replaced(points, &v, k, &p) == 0.0 {
                        continue; // hull face in p's plane: p re-triangulates that box face
                    }
                } else if mark[nb as usize] >> 1 != iter {
                    let w = corners4(points, &tets[nb as usize]);
                    let inside = insphere(w[0], w[1], w[2], w[3], c3(&p)) > 0.0;
                    mark[nb as usize] = 2 * iter + inside as u32;
                    if inside {
                        self.tets.push(nb);
                        continue;
                    }
                } else if mark[nb as usize] & 1 == 1 {
                    continue;
                }
                let back =
                    if nb == NONE { 0 } else { nbs[nb as usize].iter().position(|&x| x == t).unwrap_or(0) };
                let mut verts = v;
                verts[k] = i;
                self.boundary.push(BoundaryFace { verts, k, out: nb, back });
            }
        }
    }
}
