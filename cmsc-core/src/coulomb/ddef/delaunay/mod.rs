//! 3D Delaunay tetrahedralization of points in an axis-aligned box (DDEF,
//! [Paper](crate#references) §3.1, Algorithm 1, step 2).
//!
//! **Input.** The first 8 points are the corners of an axis-aligned box (any order); every other
//! point lies inside or on that box. Exact duplicates, points on faces/edges of the box, and
//! coplanar/cospherical sets (lattices) are all allowed.
//!
//! **Algorithm.** Incremental Bowyer–Watson, in the stages of [`tetrahedralize`]:
//!
//! 1. *Kuhn split* ([`mesh`]): the box is split into the 6 Kuhn tetrahedra around the diagonal
//!    from corner `(lo, lo, lo)` to `(hi, hi, hi)` (all 8 corners are cospherical, so this is
//!    Delaunay);
//! 2. *BRIO order* ([`brio`]): the order in which the other points are inserted;
//! 3. *locate* ([`walk`](mod@walk)): each point is located by a visibility walk from the last
//!    created tet;
//! 4. *cavity* ([`cavity`]): the face-connected set of tets whose circumsphere *strictly*
//!    contains the point (cospherical = not in conflict), found by BFS from the containing tet
//!    (which always conflicts: a point of a closed tet other than its vertices is strictly
//!    inside its circumsphere);
//! 5. *fill* ([`fill`]): every cavity boundary face is connected to the point. Hull faces of the
//!    cavity that are coplanar with the point (the point lies on that box face) are dropped
//!    instead, which re-triangulates the box face 2D-Delaunay-wise. New tets reuse freed slots;
//! 6. *compact* ([`mesh`]): the dead slots left over are compacted away at the end.
//!
//! **Predicates.** All geometric decisions are exact (`robust::orient3d`, `robust::insphere`,
//! Shewchuk's adaptive predicates), so the result is a valid Delaunay tetrahedralization for
//! every input (no flat tets; among cospherical configurations an arbitrary valid one is chosen).
//!
//! **Orientation convention.** Every tet `[a, b, c, d]` satisfies `robust::orient3d(a, b, c, d) > 0`
//! (Shewchuk's positive orientation: `d` lies *below* the plane through `a, b, c`, seen from
//! where `a, b, c` are counterclockwise). Equivalently the right-handed signed volume
//! `(b − a) · ((c − a) × (d − a))` is **negative**. Barycentric coordinates computed as ratios of
//! signed volumes (vertex `k` replaced by the query point, over the whole tet) are unaffected.
//!
//! **Insertion order.** BRIO (biased randomized insertion order, Amenta–Choi–Rote): a hash of
//! each point's coordinates assigns it to the last round with probability 1/2, the round before
//! with 1/4, …, down to a first round of about 256 points; each round is sorted along a Morton
//! (Z-order) curve for walk locality. The order is deterministic and independent of the input
//! order (structured inputs such as raster-order lattices do not degrade it).
//!
//! **Duplicates.** Exactly equal points (`0.0 == -0.0`) hash alike and tie on the Morton code, so
//! the one with the smallest input index is inserted first and every later one is reported in
//! `Tetrahedralization::skipped` (ascending). Skipped points are vertices of no tet.
//!
//! **Complexity.** Expected `O(n log n)` for uniformly spread points (near-linear in practice);
//! `O(n)` memory (about 6.5 tets per point).

mod brio;
mod cavity;
mod fill;
mod mesh;
mod predicates;
#[cfg(test)]
mod tests;
mod walk;

pub(crate) use mesh::{Tetrahedralization, NONE};
pub(crate) use walk::locate;

/// Why [`tetrahedralize`] refused or failed: its input contract (see the module docs) or, for
/// input that meets it, a broken invariant (a bug).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TetError {
    /// Fewer than 8 points or at least `2^28` (the count given).
    Count(usize),
    /// Point `i` has a non-finite coordinate.
    NotFinite(usize),
    /// The box of the first 8 points has zero volume.
    FlatBox,
    /// Point `i` (one of the first 8) is not a distinct corner of the box.
    NotACorner(usize),
    /// Point `i` lies outside the box.
    Outside(usize),
    /// A point could not be located in the mesh (a bug).
    Lost,
    /// A cavity's boundary was not a closed manifold (a bug).
    NonManifoldCavity,
}

impl std::fmt::Display for TetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TetError::Count(n) => write!(f, "need 8 box corners and < 2^28 points, got {n} points"),
            TetError::NotFinite(i) => write!(f, "point {i} is not finite"),
            TetError::FlatBox => write!(f, "degenerate (zero-volume) box"),
            TetError::NotACorner(i) => write!(f, "point {i} is not a distinct corner of the box"),
            TetError::Outside(i) => write!(f, "point {i} lies outside the box"),
            TetError::Lost => write!(f, "internal error (locate)"),
            TetError::NonManifoldCavity => write!(f, "internal error (non-manifold cavity)"),
        }
    }
}

use crate::math::Vec3;
use brio::insertion_order;
use cavity::Cavity;
use fill::Fill;
use mesh::Mesh;
use walk::{scan, walk, Walk};

/// Delaunay tetrahedralization of `points` (see the module docs for the input contract).
///
/// # Errors
/// [`TetError`]: fewer than 8 points (or ≥ 2²⁸), non-finite coordinates, first 8 points that are
/// not the 8 distinct corners of an axis-aligned box of positive volume, or a point outside the
/// box; the internal cases only for a bug.
pub(crate) fn tetrahedralize(points: &[Vec3]) -> Result<Tetrahedralization, TetError> {
    let n = points.len();
    let (lo, hi, corner) = box_corners(points)?;
    let mut mesh = Mesh::kuhn(points, &corner, n);
    let orig = insertion_order(points, lo, hi);
    // Work on a copy in insertion order (cache locality); `orig` maps internal ids back.
    let sp: Vec<Vec3> = orig.iter().map(|&i| points[i as usize]).collect();
    let (mut cavity, mut fill, mut skipped) = (Cavity::with_capacity(7 * n), Fill::default(), Vec::new());
    for (iter, i) in (1u32..).zip(8..n as u32) {
        let p = sp[i as usize];
        let t0 = match walk(&sp, &mesh.tets, &mesh.nbs, mesh.last, &p, 4 * mesh.tets.len() + 16) {
            Walk::Inside(t) => t,
            Walk::Outside | Walk::Lost => scan(&sp, &mesh.tets, &p).ok_or(TetError::Lost)?,
        };
        if mesh.tets[t0 as usize].iter().any(|&v| sp[v as usize] == p) {
            skipped.push(orig[i as usize]);
            continue;
        }
        cavity.dig(&sp, &mesh, t0, i, iter);
        fill.cone(&mut mesh, &cavity, iter)?;
    }
    Ok(mesh.compact(&orig, skipped))
}

/// Checks the input contract of [`tetrahedralize`]; returns the box `[lo, hi]` and its corners
/// (`corner[c]`: the point index of the corner at the high end along each axis `a` whose bit
/// `1 << a` is set in `c`).
fn box_corners(points: &[Vec3]) -> Result<(Vec3, Vec3, [u32; 8]), TetError> {
    let n = points.len();
    if !(8..1 << 28).contains(&n) {
        return Err(TetError::Count(n));
    }
    if let Some(i) = points.iter().position(|p| !p.iter().all(|x| x.is_finite())) {
        return Err(TetError::NotFinite(i));
    }
    let lo = points[..8].iter().fold(points[0], |a, p| a.inf(p));
    let hi = points[..8].iter().fold(points[0], |a, p| a.sup(p));
    if (0..3).any(|a| lo[a] >= hi[a]) {
        return Err(TetError::FlatBox);
    }
    let mut corner = [NONE; 8];
    for (i, p) in points[..8].iter().enumerate() {
        let bit = |a: usize| if p[a] == hi[a] { Some(1 << a) } else { (p[a] == lo[a]).then_some(0) };
        match (bit(0), bit(1), bit(2)) {
            (Some(x), Some(y), Some(z)) if corner[x | y | z] == NONE => corner[x | y | z] = i as u32,
            _ => return Err(TetError::NotACorner(i)),
        }
    }
    if let Some(i) = points.iter().position(|p| (0..3).any(|a| p[a] < lo[a] || p[a] > hi[a])) {
        return Err(TetError::Outside(i));
    }
    Ok((lo, hi, corner))
}
