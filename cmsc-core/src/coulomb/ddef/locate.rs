//! Alg. 1, lines 3–5: for every charge, its containing tet `τ_i` and barycentric coordinates
//! `ψ_i`, and the inverse lists `M_j = {i : u_j ∈ N_i}` (the near sets `N_i` depend on `τ_i`
//! only and are precomputed per tet by [`UnitGrid`]).

use rayon::prelude::*;

use super::delaunay::{locate, NONE};
use super::grid::UnitGrid;
use crate::math::{Real, Vec3};

/// Where each charge sits in the grid. Indices `i` are positions in the charged-vertex list.
#[derive(Debug, Default)]
pub(super) struct Location {
    /// Containing tet `τ_i`.
    pub tet: Vec<u32>,
    /// Barycentric coordinates `ψ_i` over `τ_i`'s vertices (sum to 1).
    pub bary: Vec<[Real; 4]>,
    /// CSR offsets of `M_j` per grid point.
    pub inv_offsets: Vec<u32>,
    /// Concatenated `M_j` (charge indices).
    pub inv: Vec<u32>,
}

impl Location {
    /// `M_j` as a slice.
    #[inline]
    pub fn inverse(&self, j: usize) -> &[u32] {
        &self.inv[self.inv_offsets[j] as usize..self.inv_offsets[j + 1] as usize]
    }
}

/// 3 × 21-bit Morton code of a point in the unit cube.
pub(super) fn morton(u: Vec3) -> u64 {
    fn spread(v: Real) -> u64 {
        let mut x = (v.clamp(0.0, 1.0) * ((1 << 21) - 1) as Real) as u64;
        x = (x | (x << 32)) & 0x1f_0000_0000_ffff;
        x = (x | (x << 16)) & 0x1f_0000_ff00_00ff;
        x = (x | (x << 8)) & 0x100f_00f0_0f00_f00f;
        x = (x | (x << 4)) & 0x10c3_0c30_c30c_30c3;
        (x | (x << 2)) & 0x1249_2492_4924_9249
    }
    spread(u.x) | (spread(u.y) << 1) | (spread(u.z) << 2)
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
    // M_j = {i : u_j ∈ N_i} by counting sort over (j, i)
    let m = points.len();
    loc.inv_offsets.clear();
    loc.inv_offsets.resize(m + 1, 0);
    for &t in &loc.tet {
        for &j in grid.near(t) {
            loc.inv_offsets[j as usize + 1] += 1;
        }
    }
    for j in 0..m {
        loc.inv_offsets[j + 1] += loc.inv_offsets[j];
    }
    loc.inv.resize(loc.inv_offsets[m] as usize, 0);
    let mut fill = loc.inv_offsets.clone();
    for (i, &t) in loc.tet.iter().enumerate() {
        for &j in grid.near(t) {
            loc.inv[fill[j as usize] as usize] = i as u32;
            fill[j as usize] += 1;
        }
    }
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

    #[test]
    fn morton_orders_by_interleaved_bits() {
        assert!(morton(Vec3::new(0.1, 0.1, 0.1)) < morton(Vec3::new(0.9, 0.9, 0.9)));
        assert_eq!(morton(Vec3::zeros()), 0);
    }
}
