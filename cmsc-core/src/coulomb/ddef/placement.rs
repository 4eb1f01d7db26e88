//! Where the `m` grid points go (Alg. 1, line 1), in the reference box `[0, a]` of
//! [`super::grid`]: the paper's Halton points spread uniformly over the box
//! ([`Placement::Uniform`]), or most of them in the band of lattice cells around the charges
//! ([`Placement::Following`], [`Occupancy`]). Either way the 8 box corners come first, so the
//! tetrahedralization covers the whole box.

use halton::Sequence;
use rayon::prelude::*;

use crate::math::{Real, Vec3};

/// Where the grid points go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// The paper's grid (Alg. 1, line 1): Halton points spread uniformly over the charges' box,
    /// mapped affinely as the box moves. The default of a fixed grid size.
    #[default]
    Uniform,
    /// Three quarters of the points stratified over the cells of a lattice that hold a charge
    /// or neighbour one (the band), a quarter uniform (Halton) over the box. Where the charges
    /// fill little of their box (a cloth falling away from the strip it hangs from, two bodies
    /// far apart) the paper's uniform points leave big tets around them, each with many charges
    /// and long near lists; following the charges, the same `m` makes those tets small and the
    /// near field several-fold cheaper. Where a surface fills its box both spread alike. The grid
    /// is fixed in world space (in a box padded by 5 % on each side) and rebuilt when a charge
    /// has moved by half a band cell or left the box, or the near field grew by 10 %. The rule
    /// that counts every charge once holds for any grid, so this changes cost and error, not
    /// the method. The default of the adaptive grid size.
    Following,
}

/// Extra padding of a following grid's box on each side, as a fraction of its size: room for
/// the charges to move before the grid is rebuilt.
pub(super) const FOLLOW_PAD: Real = 0.05;

/// How far (in band cells, along any axis) a charge may move before a following grid is
/// rebuilt. Charges start at least a cell inside the band; moving out of it puts them in the
/// big tets that join the band to the sparse points around it, whose near lists are long.
pub(super) const FOLLOW_DRIFT: Real = 0.5;

/// Factor by which the near field's pair terms may grow on a kept following grid before it is
/// rebuilt (charges that left the band sit in big tets with long near lists).
pub(super) const FOLLOW_GROWTH: Real = 1.1;

/// [`Placement::Uniform`]'s points: the 8 corners of `[0, aspect]`, then the first `count`
/// Halton points (bases 2, 3, 5) scaled to it. Halton indices start at 1, so no point is 0 and
/// none coincides with a corner.
pub(super) fn uniform_points(aspect: Vec3, count: usize) -> Vec<Vec3> {
    let mut points = Vec::with_capacity(count + 8);
    for c in 0..8u32 {
        let corner = Vec3::new((c & 1) as Real, ((c >> 1) & 1) as Real, ((c >> 2) & 1) as Real);
        points.push(corner.component_mul(&aspect));
    }
    let halton = Sequence::new(2).zip(Sequence::new(3)).zip(Sequence::new(5));
    points.extend(halton.take(count).map(|((x, y), z)| Vec3::new(x, y, z).component_mul(&aspect)));
    points
}

/// [`Placement::Following`]'s `m` points for charges at reference positions `u` (strictly
/// inside `[0, aspect]`), after the 8 corners, and the band they follow: a quarter of them
/// uniform, then three quarters spread evenly over the band's cells.
pub(super) fn following_points(aspect: Vec3, m: usize, u: &[Vec3]) -> (Vec<Vec3>, Occupancy) {
    let band = Occupancy::for_grid(u, aspect, m);
    let uniform = m / 4;
    let banded = m - uniform;
    let mut points = uniform_points(aspect, uniform);
    points.reserve(banded);
    // point i goes to band cell ⌊(i + ½)|D| / banded⌋ (evenly over the cells in index order);
    // the j-th point of a cell at Halton point j + 1, shifted by a hash of the cell (mod 1)
    let cells = band.cells();
    let (mut last, mut j) = (usize::MAX, 0usize);
    for i in 0..banded {
        let k = ((2 * i + 1) * cells.len()) / (2 * banded);
        let cell = cells[k] as usize;
        j = if cell == last { j + 1 } else { 0 };
        last = cell;
        let shift = hash3(cell as u64);
        let offset = Vec3::new(
            (halton::number(2, j + 1) + shift.x).fract(),
            (halton::number(3, j + 1) + shift.y).fract(),
            (halton::number(5, j + 1) + shift.z).fract(),
        );
        points.push(band.corner(cell) + offset.component_mul(&band.size));
    }
    (points, band)
}

/// Three numbers in `[0, 1)` from a hash of `k` (splitmix64): a cell's shift of its points.
fn hash3(k: u64) -> Vec3 {
    let mut z = k.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut next = || {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut x = z;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (x ^ (x >> 31)) as Real / 2f64.powi(64)
    };
    Vec3::new(next(), next(), next())
}

/// Most lattice cells an [`Occupancy`] may have (4 Mi: 4 MB of flags).
const MAX_CELLS: usize = 1 << 22;

/// The band of a [`Placement::Following`] grid: a lattice of near-cubic cells spanning the
/// reference box `[0, aspect]`, and per cell whether it or one of its 26 neighbours holds a
/// charge. The cell size is chosen so that about `m / 3` cells hold charges, which puts about
/// one point in each band cell (a band around a surface is about three cells thick).
pub(super) struct Occupancy {
    /// Cells per axis.
    res: [usize; 3],
    /// Cell edges (reference units).
    size: Vec3,
    /// Per cell, x fastest: in the band.
    band: Vec<bool>,
    /// The charges' reference positions it was built for.
    built_for: Vec<Vec3>,
}

impl Occupancy {
    /// The band for `m` grid points and charges at `u`: cells halve from a quarter of the box
    /// until `m / 3` are occupied, then the edge is interpolated between the last two sizes with
    /// the dimension the counts show (2 for a surface, 3 for a volume).
    fn for_grid(u: &[Vec3], aspect: Vec3, m: usize) -> Self {
        let target = (m / 3).max(1);
        let mut edge = 0.25;
        let mut occupied = Self::count(u, aspect, edge);
        loop {
            let finer = edge / 2.0;
            if occupied >= target || Self::resolution(aspect, finer).iter().product::<usize>() > MAX_CELLS {
                break;
            }
            let more = Self::count(u, aspect, finer);
            if more >= target {
                let dimension = (more as Real / occupied.max(1) as Real).log2().clamp(1.0, 3.0);
                edge = (finer * (more as Real / target as Real).powf(1.0 / dimension)).min(edge);
                break;
            }
            (edge, occupied) = (finer, more);
        }
        let mut band = Self::lattice(aspect, edge);
        band.built_for = u.to_vec();
        let occupied: Vec<usize> = {
            let mut cells: Vec<usize> = u.iter().map(|p| band.index(*p)).collect();
            cells.sort_unstable();
            cells.dedup();
            cells
        };
        let [nx, ny, nz] = band.res;
        for c in occupied {
            let (x, y, z) = (c % nx, (c / nx) % ny, c / (nx * ny));
            for zz in z.saturating_sub(1)..(z + 2).min(nz) {
                for yy in y.saturating_sub(1)..(y + 2).min(ny) {
                    for xx in x.saturating_sub(1)..(x + 2).min(nx) {
                        band.band[xx + nx * (yy + ny * zz)] = true;
                    }
                }
            }
        }
        band
    }

    /// Whether the charges, now at reference positions `u`, are others than the band was built
    /// for or one of them moved by more than [`FOLLOW_DRIFT`] of a band cell along an axis since.
    pub fn drifted(&self, u: &[Vec3]) -> bool {
        let limit = self.size * FOLLOW_DRIFT;
        u.len() != self.built_for.len()
            || u.par_iter()
                .zip(&self.built_for)
                .any(|(p, q)| (p - q).abs().iter().zip(&limit).any(|(d, l)| d > l))
    }

    /// An empty lattice of cells with edge about `edge` over `[0, aspect]`.
    fn lattice(aspect: Vec3, edge: Real) -> Self {
        let res = Self::resolution(aspect, edge);
        let size = Vec3::new(aspect.x / res[0] as Real, aspect.y / res[1] as Real, aspect.z / res[2] as Real);
        Occupancy { res, size, band: vec![false; res.iter().product()], built_for: vec![] }
    }

    /// Cells per axis for an edge of about `edge` over `[0, aspect]`.
    fn resolution(aspect: Vec3, edge: Real) -> [usize; 3] {
        [0, 1, 2].map(|k| ((aspect[k] / edge).round() as usize).max(1))
    }

    /// Number of cells of edge about `edge` that hold a point of `u`.
    fn count(u: &[Vec3], aspect: Vec3, edge: Real) -> usize {
        let lattice = Self::lattice(aspect, edge);
        let mut seen = vec![0u64; lattice.band.len().div_ceil(64)];
        let mut count = 0;
        for p in u {
            let c = lattice.index(*p);
            let (word, bit) = (c / 64, 1u64 << (c % 64));
            if seen[word] & bit == 0 {
                seen[word] |= bit;
                count += 1;
            }
        }
        count
    }

    /// The cell holding `p` (clamped to the lattice).
    #[inline]
    fn index(&self, p: Vec3) -> usize {
        let c = [0, 1, 2].map(|k| ((p[k] / self.size[k]).max(0.0) as usize).min(self.res[k] - 1));
        c[0] + self.res[0] * (c[1] + self.res[1] * c[2])
    }

    /// The band cells, ascending.
    fn cells(&self) -> Vec<u32> {
        (0..self.band.len() as u32).filter(|&c| self.band[c as usize]).collect()
    }

    /// Lowest corner of cell `c`.
    fn corner(&self, c: usize) -> Vec3 {
        let [nx, ny, _] = self.res;
        Vec3::new((c % nx) as Real, ((c / nx) % ny) as Real, (c / (nx * ny)) as Real)
            .component_mul(&self.size)
    }
}
