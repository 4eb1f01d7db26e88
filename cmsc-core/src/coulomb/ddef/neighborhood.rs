//! The near sets of Alg. 1, line 3: which grid points are "near" a charge, a set `N_τ` that
//! depends only on the charge's tet `τ` and is therefore precomputed once per grid, for every
//! tet, as [`Csr`] rows (ascending, so that later steps merge them).
//!
//! The paper defines `N_i` as "vertices of `τ_i` ∪ vertices of neighbours of `τ_i`" (Alg. 1) and
//! asks that "the far-field node is at least one ring away" (§3.1.2); [`Neighborhood`] offers
//! both readings, face neighbours and the vertex one-ring, and measured which to default to.

use rayon::prelude::*;

use super::csr::{union_with_membership, Csr};
use super::delaunay::{Tetrahedralization, NONE};

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

/// Tets (or grid points) per rayon task while building the near sets and one-rings.
const CHUNK: usize = 1024;

/// The near set of every tet of `tri` (over `n_points` grid points), as CSR.
///
/// [`Neighborhood::Ring`]: the vertices of every tet that shares a vertex with `τ` are the
/// union of the closed one-rings of `τ`'s 4 vertices (a vertex of a tet incident to `v` is `v`
/// or joined to it by an edge of that tet), so each tet merges 4 short sorted lists instead of
/// sorting the ~400 vertex slots of the ~25 tets around each of its vertices.
pub(super) fn near_sets(tri: &Tetrahedralization, n_points: usize, neighborhood: Neighborhood) -> Csr {
    let rings = (neighborhood == Neighborhood::Ring).then(|| closed_rings(tri, n_points));
    // per chunk of tets: the sets' lengths and their concatenation, joined in order
    let chunks: Vec<(Vec<u32>, Vec<u32>)> = (0..tri.tets.len())
        .into_par_iter()
        .chunks(CHUNK)
        .map(|chunk| {
            let (mut lens, mut near, mut set) = (Vec::with_capacity(chunk.len()), Vec::new(), Vec::new());
            for t in chunk {
                let tet = &tri.tets[t];
                let start = near.len();
                match &rings {
                    None => {
                        set.clear();
                        set.extend_from_slice(tet);
                        for &nb in tri.neighbors[t].iter().filter(|&&nb| nb != NONE) {
                            set.extend_from_slice(&tri.tets[nb as usize]);
                        }
                        set.sort_unstable();
                        set.dedup();
                        near.extend_from_slice(&set);
                    }
                    Some(ring) => {
                        union_with_membership(tet.map(|v| ring.row(v as usize)), |j, _| near.push(j));
                    }
                }
                lens.push((near.len() - start) as u32);
            }
            (lens, near)
        })
        .collect();
    Csr::join(chunks)
}

/// Each grid point's closed one-ring, itself and the points it shares a Delaunay edge with,
/// ascending, as CSR.
fn closed_rings(tri: &Tetrahedralization, n_points: usize) -> Csr {
    // vertex → incident tets
    let mut incident = Csr::default();
    incident.group(n_points, || {
        tri.tets.iter().enumerate().flat_map(|(t, tet)| tet.iter().map(move |&v| (v, t as u32)))
    });
    let chunks: Vec<(Vec<u32>, Vec<u32>)> = (0..n_points)
        .into_par_iter()
        .chunks(CHUNK)
        .map(|chunk| {
            let (mut lens, mut rings, mut set) = (Vec::with_capacity(chunk.len()), Vec::new(), Vec::new());
            for v in chunk {
                set.clear();
                for &t in incident.row(v) {
                    set.extend_from_slice(&tri.tets[t as usize]);
                }
                set.sort_unstable();
                set.dedup();
                rings.extend_from_slice(&set);
                lens.push(set.len() as u32);
            }
            (lens, rings)
        })
        .collect();
    Csr::join(chunks)
}

#[cfg(test)]
mod tests {
    use super::super::delaunay::tetrahedralize;
    use super::super::placement::{following_points, uniform_points};
    use super::*;
    use crate::math::{Real, Vec3};

    /// Each tet's near set is what its [`Neighborhood`] says, written out by brute force over
    /// every pair of tets: `Ring`, the vertices of every tet sharing a vertex with it; `Face`,
    /// its own and its face neighbours' vertices. On a uniform and a following grid of 300
    /// points.
    #[test]
    fn near_sets_match_their_definitions() {
        let u: Vec<Vec3> =
            (0..400).map(|i| Vec3::new((i % 20) as Real / 20.0, 0.3, (i / 20) as Real / 20.0)).collect();
        let uniform = uniform_points(Vec3::new(1.0, 0.7, 0.9), 300);
        let (following, _) = following_points(Vec3::repeat(1.0), 300, &u);
        for points in [uniform, following] {
            let tri = tetrahedralize(&points).unwrap();
            let tets = &tri.tets;
            let ring_sets = near_sets(&tri, points.len(), Neighborhood::Ring);
            for (t, tet) in tets.iter().enumerate() {
                let mut ring: Vec<u32> = tets
                    .iter()
                    .filter(|s| s.iter().any(|v| tet.contains(v)))
                    .flat_map(|s| s.iter().copied())
                    .collect();
                ring.sort_unstable();
                ring.dedup();
                assert_eq!(ring_sets.row(t), ring, "tet {t}");
            }
            let face_sets = near_sets(&tri, points.len(), Neighborhood::Face);
            for (t, tet) in tets.iter().enumerate() {
                let mut face: Vec<u32> = tets
                    .iter()
                    .filter(|s| s.iter().filter(|v| tet.contains(v)).count() >= 3)
                    .flat_map(|s| s.iter().copied())
                    .collect();
                face.sort_unstable();
                face.dedup();
                assert_eq!(face_sets.row(t), face, "tet {t}");
            }
        }
    }
}
