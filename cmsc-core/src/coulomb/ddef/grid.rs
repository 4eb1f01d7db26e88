//! The DDEF grid (Alg. 1, lines 1–2): Halton points in the charges' padded bounding box plus the
//! box corners, tetrahedralized; or, with [`Placement::Following`], most of the points in the
//! cells of a lattice that hold charges ([`Occupancy`]).
//!
//! The grid is built once in a reference box `[0, a]` with the aspect ratio `a = size / max(size)`
//! of the charges' box (so its tets are well shaped in world space), and mapped to each step's
//! box by the affine map `x = lo + (p ⊘ a) ∘ size`. A positive axis scaling maps a
//! tetrahedralization to a tetrahedralization (volumes keep their sign) and barycentric
//! coordinates are affine invariants, so location and interpolation run in reference
//! coordinates and the `O(m log m)` tetrahedralization is paid again only when the box's aspect
//! ratio drifts by more than [`ASPECT_TOLERANCE`] (a mapped mesh then has tets stretched by at
//! most that factor); building from a unit cube for a flat box raised the torus error at m = 1K
//! from 0.03 to 0.05.

use halton::Sequence;
use rayon::prelude::*;

use super::blocks::Blocks;
use super::csr::{union_with_membership, Csr};
use super::delaunay::{tetrahedralize, Tetrahedralization, NONE};
use crate::error::{Error, Result};
use crate::math::{Real, Vec3};

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

/// Largest factor by which an axis of the box may stretch relative to the grid's reference box
/// before the grid is rebuilt.
pub(super) const ASPECT_TOLERANCE: Real = 1.3;

/// The reference grid: the 8 corners of `[0, a]`, then `m` Halton points (bases 2, 3, 5) scaled
/// to it, tetrahedralized, with the near set of every tet.
pub(super) struct UnitGrid {
    /// Grid points in reference coordinates; corners first.
    pub points: Vec<Vec3>,
    /// The reference box's extent `a` (max component 1).
    pub aspect: Vec3,
    /// Their tetrahedralization, with adjacency.
    pub tri: Tetrahedralization,
    /// The near set of each tet, each sorted ascending (for binary-search membership tests).
    near: Csr,
    /// The band of a [`Placement::Following`] grid.
    band: Option<Occupancy>,
    /// The points in compact blocks, for the far-field gather.
    pub blocks: Blocks,
}

impl UnitGrid {
    /// Builds the grid for `m` Halton points.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`grid_points`) if the tetrahedralization fails, which only a
    /// bug can cause for these points.
    pub fn new(m: u32, neighborhood: Neighborhood, aspect: Vec3) -> Result<Self> {
        let grid = Self::build(corners_and_halton(aspect, m as usize), neighborhood, aspect, None)?;
        // Halton points are distinct and never on a corner, so nothing is skipped as a duplicate.
        debug_assert!(grid.tri.skipped.is_empty(), "duplicate grid points: {:?}", grid.tri.skipped);
        Ok(grid)
    }

    /// Tetrahedralizes `points` (the box corners first) and precomputes the near sets.
    fn build(
        points: Vec<Vec3>,
        neighborhood: Neighborhood,
        aspect: Vec3,
        band: Option<Occupancy>,
    ) -> Result<Self> {
        let tri = tetrahedralize(&points)
            .map_err(|e| Error::invalid("grid_points", None, format!("tetrahedralization failed: {e}")))?;
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

    /// Number of Halton points `m` (excluding the corners).
    pub fn m(&self) -> usize {
        self.points.len() - 8
    }

    /// Builds a [`Placement::Following`] grid of `m` points for charges at reference positions
    /// `u` (strictly inside `[0, aspect]`).
    ///
    /// # Errors
    /// As [`UnitGrid::new`].
    pub fn following(m: u32, neighborhood: Neighborhood, aspect: Vec3, u: &[Vec3]) -> Result<Self> {
        let band = Occupancy::for_grid(u, aspect, m as usize);
        let uniform = m as usize / 4;
        let banded = m as usize - uniform;
        let mut points = corners_and_halton(aspect, uniform);
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
        Self::build(points, neighborhood, aspect, Some(band))
    }

    /// For a [`Placement::Following`] grid: whether the charges, now at reference positions `u`,
    /// are others than it was built for or one of them moved by more than [`FOLLOW_DRIFT`] of a
    /// band cell along an axis since (`None` for a uniform grid).
    pub fn drifted(&self, u: &[Vec3]) -> Option<bool> {
        self.band.as_ref().map(|band| {
            let limit = band.size * FOLLOW_DRIFT;
            u.len() != band.built_for.len()
                || u.par_iter()
                    .zip(&band.built_for)
                    .any(|(p, q)| (p - q).abs().iter().zip(&limit).any(|(d, l)| d > l))
        })
    }
}

/// The 8 corners of `[0, aspect]`, then the first `count` Halton points (bases 2, 3, 5) scaled to
/// it. Halton indices start at 1, so no point is 0 and none coincides with a corner.
fn corners_and_halton(aspect: Vec3, count: usize) -> Vec<Vec3> {
    let mut points = Vec::with_capacity(count + 8);
    for c in 0..8u32 {
        let corner = Vec3::new((c & 1) as Real, ((c >> 1) & 1) as Real, ((c >> 2) & 1) as Real);
        points.push(corner.component_mul(&aspect));
    }
    let halton = Sequence::new(2).zip(Sequence::new(3)).zip(Sequence::new(5));
    points.extend(halton.take(count).map(|((x, y), z)| Vec3::new(x, y, z).component_mul(&aspect)));
    points
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

/// Tets (or grid points) per rayon task while building the near sets and one-rings.
const CHUNK: usize = 1024;

/// The near set of every tet, as CSR.
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

/// The axis-aligned box the unit grid is mapped to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct GridBox {
    /// Minimum corner (m).
    pub lo: Vec3,
    /// Edge lengths (m), all `> 0`.
    pub size: Vec3,
}

/// Padding of each box face as a fraction of the box diagonal.
const PAD_FRACTION: Real = 0.01;

impl GridBox {
    /// The bounding box of `x`, padded so that every point is strictly inside and flat or
    /// degenerate boxes get volume: each face moves out by `max(1 % of the diagonal, s/2 − e/2)`
    /// where `e` is the axis extent and `s = diagonal / ∛m` the mean Halton spacing of a cube of
    /// that diagonal, so a zero-thickness cloth gets a slab about one grid spacing thick.
    /// Coincident points get a box of size `min_size` (m).
    pub fn around(x: impl Iterator<Item = Vec3>, m: usize, min_size: Real) -> Self {
        let (mut lo, mut hi) = (Vec3::repeat(Real::INFINITY), Vec3::repeat(Real::NEG_INFINITY));
        for p in x {
            lo = lo.inf(&p);
            hi = hi.sup(&p);
        }
        let extent = hi - lo;
        let diagonal = extent.norm().max(min_size);
        let spacing = diagonal / (m.max(1) as Real).cbrt();
        let pad = extent.map(|e| (PAD_FRACTION * diagonal).max(0.5 * (spacing - e)));
        GridBox { lo: lo - pad, size: extent + 2.0 * pad }
    }

    /// The box's aspect ratio `size / max(size)`.
    pub fn aspect(self) -> Vec3 {
        self.size / self.size.max()
    }

    /// World → unit coordinates (`[0, 1]³` over the box).
    #[inline]
    pub fn to_unit(self, p: Vec3) -> Vec3 {
        (p - self.lo).component_div(&self.size)
    }

    /// Unit → world coordinates.
    #[inline]
    pub fn to_world(self, u: Vec3) -> Vec3 {
        self.lo + u.component_mul(&self.size)
    }

    /// World → reference coordinates of a grid with extent `aspect`.
    #[inline]
    pub fn to_reference(self, p: Vec3, aspect: Vec3) -> Vec3 {
        self.to_unit(p).component_mul(&aspect)
    }

    /// The box grown by `fraction` of its size on each side.
    pub fn grown(self, fraction: Real) -> Self {
        GridBox { lo: self.lo - self.size * fraction, size: self.size * (1.0 + 2.0 * fraction) }
    }

    /// Reference coordinates of a grid with extent `aspect` → world.
    #[inline]
    pub fn reference_to_world(self, r: Vec3, aspect: Vec3) -> Vec3 {
        self.to_world(r.component_div(&aspect))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_and_degenerate_boxes_get_volume_and_contain_their_points() {
        let flat: Vec<Vec3> = (0..100).map(|i| Vec3::new((i % 10) as Real, (i / 10) as Real, 0.0)).collect();
        let b = GridBox::around(flat.iter().copied(), 1000, 1e-6);
        assert!(b.size.z > 0.5, "slab thickness {}", b.size.z);
        for p in &flat {
            let u = b.to_unit(*p);
            assert!(u.iter().all(|c| *c > 0.0 && *c < 1.0));
            assert!((b.to_world(u) - p).norm() < 1e-12);
        }
        let point = GridBox::around([Vec3::new(1.0, 2.0, 3.0)].into_iter(), 100, 1e-3);
        assert!(point.size.iter().all(|s| *s > 0.0));
        assert!((point.to_unit(Vec3::new(1.0, 2.0, 3.0)) - Vec3::repeat(0.5)).norm() < 1e-12);
    }

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

    /// Each tet's near set is what its [`Neighborhood`] says, written out by brute force over
    /// every pair of tets: `Ring`, the vertices of every tet sharing a vertex with it; `Face`,
    /// its own and its face neighbours' vertices.
    #[test]
    fn near_sets_match_their_definitions() {
        let u: Vec<Vec3> =
            (0..400).map(|i| Vec3::new((i % 20) as Real / 20.0, 0.3, (i / 20) as Real / 20.0)).collect();
        let uniform = UnitGrid::new(300, Neighborhood::Ring, Vec3::new(1.0, 0.7, 0.9)).unwrap();
        let following = UnitGrid::following(300, Neighborhood::Ring, Vec3::repeat(1.0), &u).unwrap();
        for g in [&uniform, &following] {
            let tets = &g.tri.tets;
            for (t, tet) in tets.iter().enumerate() {
                let mut ring: Vec<u32> = tets
                    .iter()
                    .filter(|s| s.iter().any(|v| tet.contains(v)))
                    .flat_map(|s| s.iter().copied())
                    .collect();
                ring.sort_unstable();
                ring.dedup();
                assert_eq!(g.near(t as u32), ring, "tet {t}");
            }
            let face_sets = near_sets(&g.tri, g.points.len(), Neighborhood::Face);
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
