//! Alg. 1, line 3: for every charge, its containing tet `τ_i` and barycentric coordinates
//! `ψ_i`, and the inverse lists `M_j = {i : u_j ∈ N_i}` (the near sets `N_i` depend on `τ_i`
//! only and are precomputed per tet by [`UnitGrid`]).
//!
//! Charges walk to their tets in Morton order ([`super::morton`]), each from the previous
//! charge's tet or its own tet of the last call; `M_j` is one counting sort of the pairs
//! `(j, i)`, `u_j ∈ N_i` ([`Csr::group`]).

use rayon::prelude::*;

use super::csr::Csr;
use super::delaunay::{locate, NONE};
use super::grid::UnitGrid;
use super::morton::morton;
use crate::math::{Real, Vec3};

/// Where each charge sits in the grid. Indices `i` are positions in the charged-vertex list.
#[derive(Debug, Default)]
pub(super) struct Location {
    /// Containing tet `τ_i`.
    pub tet: Vec<u32>,
    /// Barycentric coordinates `ψ_i` over `τ_i`'s vertices (sum to 1).
    pub bary: Vec<[Real; 4]>,
    /// `M_j` per grid point `j` (charge indices, ascending).
    pub inv: Csr,
}

/// Barycentric coordinates of `p` in the tet with vertices `v` (any orientation).
fn barycentric(v: [Vec3; 4], p: Vec3) -> [Real; 4] {
    let vol = |a: Vec3, b: Vec3, c: Vec3, d: Vec3| (b - a).cross(&(c - a)).dot(&(d - a));
    let total = vol(v[0], v[1], v[2], v[3]);
    let w1 = vol(v[0], p, v[2], v[3]) / total;
    let w2 = vol(v[0], v[1], p, v[3]) / total;
    let w3 = vol(v[0], v[1], v[2], p) / total;
    [1.0 - w1 - w2 - w3, w1, w2, w3]
}

/// Charges per rayon task in the location walk: each task walks its Morton-ordered run
/// sequentially, starting each search from the previous charge's tet.
const WALK_CHUNK: usize = 512;

/// Locates every charge (unit coordinates `u`, strictly inside the cube) and fills `loc`.
/// `warm[i]` is a tet to start from (last step's, or [`NONE`]); it is updated.
pub(super) fn locate_all(grid: &UnitGrid, u: &[Vec3], warm: &mut [u32], loc: &mut Location) {
    let (points, tri) = (&grid.points, &grid.tri);
    let n = u.len();
    let mut order: Vec<(u64, u32)> = u.par_iter().enumerate().map(|(i, p)| (morton(*p), i as u32)).collect();
    order.par_sort_unstable();
    let found: Vec<(u32, u32)> = order
        .par_chunks(WALK_CHUNK)
        .flat_map_iter(|run| {
            let mut prev = 0u32;
            run.iter()
                .map(|&(_, i)| {
                    let start = if warm[i as usize] != NONE { warm[i as usize] } else { prev };
                    // Points are strictly inside the padded unit cube, so location cannot fail;
                    // a miss would be a bug in the walk, caught by the fallback scan there.
                    let t = locate(points, tri, start, u[i as usize]).expect("charge outside the grid box");
                    prev = t;
                    (i, t)
                })
                .collect::<Vec<_>>()
        })
        .collect();
    loc.tet.resize(n, NONE);
    for (i, t) in found {
        loc.tet[i as usize] = t;
        warm[i as usize] = t;
    }
    loc.bary.resize(n, [0.0; 4]);
    let tets = &grid.tri.tets;
    loc.bary.par_iter_mut().zip(loc.tet.par_iter()).enumerate().for_each(|(i, (bary, &t))| {
        *bary = barycentric(tets[t as usize].map(|v| points[v as usize]), u[i]);
    });
    let tet = &loc.tet;
    loc.inv.group(points.len(), || {
        tet.iter().enumerate().flat_map(|(i, &t)| grid.near(t).iter().map(move |&j| (j, i as u32)))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barycentric_reproduces_the_point() {
        let v = [Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z()];
        let p = Vec3::new(0.1, 0.2, 0.3);
        let w = barycentric(v, p);
        let back: Vec3 = v.iter().zip(w).map(|(a, w)| a * w).sum();
        assert!((back - p).norm() < 1e-15);
        assert!((w.iter().sum::<Real>() - 1.0).abs() < 1e-15);
    }
}
