//! The grid points in compact blocks of neighbours, the unit of work of the far-field gather
//! (Alg. 1, line 4; [`super::gather`]): the points of a block share one local `f32` frame and
//! read each chunk of sources once. Built once per grid, with the grid.

use rayon::prelude::*;

use super::morton::{morton, BITS};
use crate::math::Vec3;

/// Most grid points per block: they share one origin and read each chunk of sources once.
pub(super) const BLOCK: usize = 32;

/// The grid points in compact blocks: the leaves of an octree split until a cell holds at most
/// [`BLOCK`] points, small sibling leaves packed together. A block is thus never wider than an
/// octree cell whose parent held more than [`BLOCK`] points, a few local grid spacings, even
/// where the points' density changes by orders of magnitude (runs of the plain Morton order
/// can jump across the whole box).
#[derive(Debug, Default)]
pub(super) struct Blocks {
    /// Point indices, block after block (Morton order).
    order: Vec<u32>,
    /// Start of each block in `order`, then `order.len()`.
    starts: Vec<u32>,
}

impl Blocks {
    /// Blocks of `points` (unit cube coordinates; outside points are clamped to it).
    pub fn new(points: &[Vec3]) -> Self {
        let mut keyed: Vec<(u64, u32)> =
            points.iter().enumerate().map(|(j, &p)| (morton(p), j as u32)).collect();
        keyed.sort_unstable();
        let codes: Vec<u64> = keyed.iter().map(|k| k.0).collect();
        let mut starts = vec![];
        split(&codes, 0, codes.len(), 0, &mut starts);
        starts.push(codes.len() as u32);
        Blocks { order: keyed.into_iter().map(|k| k.1).collect(), starts }
    }

    /// Number of points in all blocks.
    pub fn point_count(&self) -> usize {
        self.order.len()
    }

    /// The blocks, as slices of point indices.
    pub fn iter(&self) -> impl IndexedParallelIterator<Item = &[u32]> {
        self.starts.par_windows(2).map(|w| &self.order[w[0] as usize..w[1] as usize])
    }
}

/// Appends to `starts` the blocks of the Morton-sorted `codes[lo..hi]`, an octree cell at
/// `level` (0 = the whole cube; 21 levels of 3 bits).
fn split(codes: &[u64], lo: usize, hi: usize, level: u32, starts: &mut Vec<u32>) {
    if hi - lo <= BLOCK || level == BITS {
        starts.push(lo as u32);
        return;
    }
    let shift = 3 * (BITS - 1 - level);
    let mut pack: Option<usize> = None; // start of small children being packed into one block
    let mut child = lo;
    while child < hi {
        let key = codes[child] >> shift;
        let end = child + codes[child..hi].partition_point(|&c| c >> shift == key);
        if end - child > BLOCK {
            if let Some(p) = pack.take() {
                starts.push(p as u32);
            }
            split(codes, child, end, level + 1, starts);
        } else if pack.is_none_or(|p| end - p > BLOCK) {
            if let Some(p) = pack {
                starts.push(p as u32);
            }
            pack = Some(child);
        }
        child = end;
    }
    if let Some(p) = pack {
        starts.push(p as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::Real;

    /// Every point is in exactly one block of at most [`BLOCK`] points, and where the density
    /// jumps by 10¹² (a 10⁻⁴ cluster in a unit cloud) no block joins the cluster to points
    /// outside its octree cell. (A cluster cut by a coarse cell face, such as `z = 1/2`, may
    /// leave a few points in the coarse sibling cell, packed with that cell's far points.)
    #[test]
    fn blocks_partition_the_points_and_stay_compact() {
        let mut s = 3u64;
        let mut rnd = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as Real / (1u64 << 53) as Real
        };
        let mut points: Vec<Vec3> = (0..2000).map(|_| Vec3::new(rnd(), rnd(), rnd())).collect();
        // inside one octree cell of level 12 (edge 2⁻¹² = 2.4·10⁻⁴), off its faces
        let lo = Vec3::new(1229.25, 2458.25, 2048.25) / 4096.0;
        points.extend((0..2000).map(|_| lo + Vec3::new(rnd(), rnd(), rnd()) * 1e-4));
        let blocks = Blocks::new(&points);
        assert_eq!(blocks.point_count(), points.len());
        let mut seen = vec![false; points.len()];
        for block in blocks.iter().collect::<Vec<_>>() {
            assert!(!block.is_empty() && block.len() <= BLOCK);
            for &j in block {
                assert!(!std::mem::replace(&mut seen[j as usize], true), "point {j} in two blocks");
            }
            let lo = block.iter().fold(Vec3::repeat(Real::INFINITY), |a, &j| a.inf(&points[j as usize]));
            let hi = block.iter().fold(Vec3::repeat(Real::NEG_INFINITY), |a, &j| a.sup(&points[j as usize]));
            if block.iter().any(|&j| j >= 2000) {
                assert!((hi - lo).max() < 1e-3, "a block with cluster points is {} wide", (hi - lo).max());
            }
        }
        assert!(seen.iter().all(|&s| s));
    }
}
