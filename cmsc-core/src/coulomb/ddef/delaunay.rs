//! 3D Delaunay tetrahedralization of points in an axis-aligned box (DDEF,
//! [Paper](crate#references) §3.1, Algorithm 1, step 2).
//!
//! **Input.** The first 8 points are the corners of an axis-aligned box (any order); every other
//! point lies inside or on that box. Exact duplicates, points on faces/edges of the box, and
//! coplanar/cospherical sets (lattices) are all allowed.
//!
//! **Algorithm.** Incremental Bowyer–Watson. The box is first split into the 6 Kuhn tetrahedra
//! around the diagonal from corner `(lo, lo, lo)` to `(hi, hi, hi)` (all 8 corners are
//! cospherical, so this is Delaunay). Each further point is located by a visibility walk from
//! the last created tet; the cavity is the face-connected set of tets whose circumsphere
//! *strictly* contains the point (cospherical = not in conflict), found by BFS from the
//! containing tet (which always conflicts: a point of a closed tet other than its vertices is
//! strictly inside its circumsphere); every cavity boundary face is connected to the point. Hull
//! faces of the cavity that are coplanar with the point (the point lies on that box face) are
//! dropped instead, which re-triangulates the box face 2D-Delaunay-wise. New tets reuse freed
//! slots; the dead slots left over are compacted away at the end.
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

use crate::math::{Real, Vec3};
use robust::{insphere, orient3d, Coord3D};

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

/// Result of a visibility walk.
enum Walk {
    Inside(u32),
    Outside,
    Lost,
}

#[inline]
fn c3(p: &Vec3) -> Coord3D<Real> {
    Coord3D { x: p.x, y: p.y, z: p.z }
}

#[inline]
fn corners4(points: &[Vec3], v: &[u32; 4]) -> [Coord3D<Real>; 4] {
    let c = |k: usize| c3(&points[v[k] as usize]);
    [c(0), c(1), c(2), c(3)]
}

/// `orient3d` of tet `v` with vertex `k` replaced by `p`: `< 0` iff `p` is strictly beyond the
/// face opposite `v[k]`, `0` iff `p` is on that face's plane.
#[inline]
fn orient_replaced(points: &[Vec3], v: &[u32; 4], k: usize, p: &Vec3) -> Real {
    let mut c = corners4(points, v);
    c[k] = c3(p);
    orient3d(c[0], c[1], c[2], c[3])
}

fn orient(points: &[Vec3], v: &[u32; 4]) -> Real {
    let c = corners4(points, v);
    orient3d(c[0], c[1], c[2], c[3])
}

fn contains(points: &[Vec3], v: &[u32; 4], p: &Vec3) -> bool {
    (0..4).all(|k| orient_replaced(points, v, k, p) >= 0.0)
}

/// Visibility walk (stochastic face order, exact `orient3d`) for at most `cap` steps.
fn walk(points: &[Vec3], tets: &[[u32; 4]], nbs: &[[u32; 4]], start: u32, p: &Vec3, cap: usize) -> Walk {
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
fn scan(points: &[Vec3], tets: &[[u32; 4]], p: &Vec3) -> Option<u32> {
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

fn locate_capped(points: &[Vec3], tri: &Tetrahedralization, start: u32, p: Vec3, cap: usize) -> Option<u32> {
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

/// splitmix64 finalizer (hash mixing).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Bit-interleaves the low 21 bits of `x` (Morton code helper).
fn spread21(x: u64) -> u64 {
    let mut x = x & 0x1f_ffff;
    x = (x | x << 32) & 0x001f_0000_0000_ffff;
    x = (x | x << 16) & 0x001f_0000_ff00_00ff;
    x = (x | x << 8) & 0x100f_00f0_0f00_f00f;
    x = (x | x << 4) & 0x10c3_0c30_c30c_30c3;
    (x | x << 2) & 0x1249_2492_4924_9249
}

/// The two indices in `0..4` other than `k` and `m`.
fn other_two(k: usize, m: usize) -> [usize; 2] {
    let mut o = (0..4).filter(|&j| j != k && j != m);
    [o.next().unwrap_or(0), o.next().unwrap_or(0)]
}

/// A cavity boundary face: the new tet's vertices, the slot of the new point in it, the tet
/// outside the face (or NONE) and the index in that tet that points back at the cavity.
struct BoundaryFace {
    verts: [u32; 4],
    k: usize,
    out: u32,
    back: usize,
}

/// Delaunay tetrahedralization of `points` (see the module docs for the input contract).
///
/// `Err` for fewer than 8 points (or ≥ 2²⁸), non-finite coordinates, first 8 points that are not
/// the 8 distinct corners of an axis-aligned box of positive volume, or a point outside the box.
pub(crate) fn tetrahedralize(points: &[Vec3]) -> Result<Tetrahedralization, String> {
    let n = points.len();
    if !(8..1 << 28).contains(&n) {
        return Err(format!("tetrahedralize: need 8 box corners and < 2^28 points, got {n} points"));
    }
    if let Some(i) = points.iter().position(|p| !p.iter().all(|x| x.is_finite())) {
        return Err(format!("tetrahedralize: point {i} is not finite"));
    }
    let lo = points[..8].iter().fold(points[0], |a, p| a.inf(p));
    let hi = points[..8].iter().fold(points[0], |a, p| a.sup(p));
    if (0..3).any(|a| lo[a] >= hi[a]) {
        return Err("tetrahedralize: degenerate (zero-volume) box".into());
    }
    let mut corner = [NONE; 8];
    for (i, p) in points[..8].iter().enumerate() {
        let bit = |a: usize| if p[a] == hi[a] { Some(1 << a) } else { (p[a] == lo[a]).then_some(0) };
        match (bit(0), bit(1), bit(2)) {
            (Some(x), Some(y), Some(z)) if corner[x | y | z] == NONE => corner[x | y | z] = i as u32,
            _ => return Err(format!("tetrahedralize: point {i} is not a distinct corner of the box")),
        }
    }
    if let Some(i) = points.iter().position(|p| (0..3).any(|a| p[a] < lo[a] || p[a] > hi[a])) {
        return Err(format!("tetrahedralize: point {i} lies outside the box"));
    }
    // Kuhn split: one tet per axis permutation, walking lo -> hi along the axes in that order.
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
    // BRIO: a hash of the coordinates (so exact duplicates agree) puts a point in the last round
    // with probability 1/2, the one before with 1/4, …, the first (≤ ~256 points) with the rest.
    // Sort key: round (4 bits) | Morton code (3 × 20 bits); ties by input index.
    let rounds = (1..16).find(|&r| (n - 8) >> r <= 256).unwrap_or(15) as u32 + 1;
    let ext = hi - lo;
    let mut order: Vec<(u64, u32)> = (8..n as u32)
        .map(|i| {
            let p = &points[i as usize];
            let h = p.iter().fold(0, |h, x| mix(h ^ (x + 0.0).to_bits()));
            let round = (rounds - 1).saturating_sub(h.trailing_zeros()) as u64;
            let q = |a: usize| spread21(((p[a] - lo[a]) / ext[a] * 1_048_575.0) as u64);
            (round << 60 | q(0) | q(1) << 1 | q(2) << 2, i)
        })
        .collect();
    order.sort_unstable();
    // Work on a copy in insertion order (cache locality); `orig` maps internal ids back.
    let orig: Vec<u32> = (0..8).chain(order.iter().map(|o| o.1)).collect();
    let sp: Vec<Vec3> = orig.iter().map(|&i| points[i as usize]).collect();

    // mark[t] = 2 * iter + (in conflict): tets visited while inserting point number `iter`
    let mut mark = Vec::with_capacity(7 * n);
    mark.resize(6, 0u32);
    nbs.reserve(7 * n);
    let (mut cavity, mut boundary) = (Vec::new(), Vec::<BoundaryFace>::new());
    let mut table: Vec<(u32, u32, u32, u64)> = vec![(0, 0, 0, 0); 1024];
    let (mut free, mut skipped, mut last) = (Vec::new(), Vec::new(), 0u32);
    for (iter, i) in (1u32..).zip(8..n as u32) {
        let p = sp[i as usize];
        let t0 = match walk(&sp, &tets, &nbs, last, &p, 4 * tets.len() + 16) {
            Walk::Inside(t) => t,
            Walk::Outside | Walk::Lost => {
                scan(&sp, &tets, &p).ok_or("tetrahedralize: internal error (locate)")?
            }
        };
        if tets[t0 as usize].iter().any(|&v| sp[v as usize] == p) {
            skipped.push(orig[i as usize]);
            continue;
        }
        // Cavity: BFS over tets whose circumsphere strictly contains p.
        cavity.clear();
        boundary.clear();
        mark[t0 as usize] = 2 * iter + 1;
        cavity.push(t0);
        let mut head = 0;
        while let Some(&t) = cavity.get(head) {
            head += 1;
            let v = tets[t as usize];
            for k in 0..4 {
                let nb = nbs[t as usize][k];
                if nb == NONE {
                    if orient_replaced(&sp, &v, k, &p) == 0.0 {
                        continue; // hull face in p's plane: p re-triangulates that box face
                    }
                } else if mark[nb as usize] >> 1 != iter {
                    let w = corners4(&sp, &tets[nb as usize]);
                    let inside = insphere(w[0], w[1], w[2], w[3], c3(&p)) > 0.0;
                    mark[nb as usize] = 2 * iter + inside as u32;
                    if inside {
                        cavity.push(nb);
                        continue;
                    }
                } else if mark[nb as usize] & 1 == 1 {
                    continue;
                }
                let back =
                    if nb == NONE { 0 } else { nbs[nb as usize].iter().position(|&x| x == t).unwrap_or(0) };
                let mut verts = v;
                verts[k] = i;
                boundary.push(BoundaryFace { verts, k, out: nb, back });
            }
        }
        // Re-triangulate: cone from p over the boundary faces (same orientation as the old tet).
        if 6 * boundary.len() > table.len() {
            table = vec![(0, 0, 0, 0); (12 * boundary.len()).next_power_of_two()];
        }
        let mask = table.len() - 1;
        for &t in &cavity {
            tets[t as usize] = [NONE; 4];
            free.push(t);
        }
        for b in &boundary {
            let s = free.pop().unwrap_or_else(|| {
                tets.push([NONE; 4]);
                nbs.push([NONE; 4]);
                mark.push(0);
                (tets.len() - 1) as u32
            });
            tets[s as usize] = b.verts;
            nbs[s as usize] = [NONE; 4];
            nbs[s as usize][b.k] = b.out;
            if b.out != NONE {
                nbs[b.out as usize][b.back] = s;
            }
            // New tets share the faces (p, edge): pair them through a hash table on the edge
            // (entries live while their stamp is `iter`); an unmatched edge is a new hull face.
            for m in (0..4).filter(|&m| m != b.k) {
                let [j1, j2] = other_two(b.k, m);
                let (x, y) = (b.verts[j1] as u64, b.verts[j2] as u64);
                let key = x.min(y) << 32 | x.max(y);
                let mut h = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & mask;
                loop {
                    let e = &mut table[h];
                    if e.0 != iter {
                        *e = (iter, s, m as u32, key);
                        break;
                    }
                    if e.3 == key {
                        if e.1 == NONE {
                            return Err("tetrahedralize: internal error (non-manifold cavity)".into());
                        }
                        nbs[s as usize][m] = e.1;
                        nbs[e.1 as usize][e.2 as usize] = s;
                        e.1 = NONE;
                        break;
                    }
                    h = (h + 1) & mask;
                }
            }
            last = s;
        }
    }
    // Compact away dead slots.
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
    Ok(Tetrahedralization { tets, neighbors, skipped })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};
    use std::time::Instant;

    /// splitmix64 → uniform in [0, 1).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() * n as f64) as usize
        }
    }

    fn radical_inverse(mut i: u64, b: u64) -> f64 {
        let (mut f, mut r) = (1.0, 0.0);
        while i > 0 {
            f /= b as f64;
            r += f * (i % b) as f64;
            i /= b;
        }
        r
    }

    /// The 8 corners of `[lo, hi]`, in a scrambled order.
    fn corners(lo: Vec3, hi: Vec3) -> Vec<Vec3> {
        [5, 2, 7, 0, 3, 6, 1, 4]
            .iter()
            .map(|&b| Vec3::new([lo.x, hi.x][b & 1], [lo.y, hi.y][b >> 1 & 1], [lo.z, hi.z][b >> 2]))
            .collect()
    }

    fn with_interior(lo: Vec3, hi: Vec3, n: usize, mut f: impl FnMut(usize) -> [f64; 3]) -> Vec<Vec3> {
        let mut pts = corners(lo, hi);
        pts.extend((0..n).map(|i| {
            let u = f(i);
            Vec3::new(lo.x + u[0] * (hi.x - lo.x), lo.y + u[1] * (hi.y - lo.y), lo.z + u[2] * (hi.z - lo.z))
        }));
        pts
    }

    fn random(n: usize, seed: u64) -> Vec<Vec3> {
        let mut r = Rng(seed);
        with_interior(Vec3::new(-1.0, -2.0, 0.5), Vec3::new(3.0, 1.0, 2.0), n, |_| {
            [r.next(), r.next(), r.next()]
        })
    }

    fn halton(n: usize) -> Vec<Vec3> {
        with_interior(Vec3::new(0.0, 0.0, 0.0), Vec3::new(1.0, 2.0, 0.5), n, |i| {
            let i = i as u64 + 1;
            [radical_inverse(i, 2), radical_inverse(i, 3), radical_inverse(i, 5)]
        })
    }

    fn lattice(m: usize) -> Vec<Vec3> {
        let s = (m - 1) as f64;
        with_interior(Vec3::zeros(), Vec3::new(1.0, 1.0, 1.0), m * m * m, |i| {
            [(i % m) as f64 / s, (i / m % m) as f64 / s, (i / (m * m)) as f64 / s]
        })
    }

    fn c(p: &Vec3) -> Coord3D<f64> {
        c3(p)
    }

    /// Kahan–Babuška (Neumaier) compensated sum: a naive sum of ~10⁵ tet volumes drifts by ~1e-12.
    fn sum(xs: impl Iterator<Item = f64>) -> f64 {
        let (mut s, mut c) = (0.0f64, 0.0);
        for x in xs {
            let t = s + x;
            c += if s.abs() >= x.abs() { (s - t) + x } else { (x - t) + s };
            s = t;
        }
        s + c
    }

    fn signed_volume6(points: &[Vec3], v: &[u32; 4]) -> f64 {
        let [a, b, cc, d] = v.map(|i| points[i as usize]);
        (b - a).dot(&(cc - a).cross(&(d - a)))
    }

    fn sorted_face(v: &[u32; 4], k: usize) -> [u32; 3] {
        let mut f = [v[(k + 1) % 4], v[(k + 2) % 4], v[(k + 3) % 4]];
        f.sort_unstable();
        f
    }

    /// Checks every structural and Delaunay property; `full`: empty circumsphere against all
    /// points (else only the local Delaunay criterion across every internal face).
    fn check(points: &[Vec3], tri: &Tetrahedralization, full: bool) {
        let lo = points[..8].iter().fold(points[0], |a, p| a.inf(p));
        let hi = points[..8].iter().fold(points[0], |a, p| a.sup(p));
        let e = hi - lo;
        let (box_vol, box_area) = (e.x * e.y * e.z, 2.0 * (e.x * e.y + e.y * e.z + e.z * e.x));
        assert_eq!(tri.tets.len(), tri.neighbors.len());
        // (e) skipped = exactly the later exact duplicates; vertices = exactly the rest
        let mut seen = HashMap::new();
        let mut expected_skipped = vec![];
        for (i, p) in points.iter().enumerate() {
            let key = p.map(|x| (x + 0.0).to_bits());
            if seen.insert((key.x, key.y, key.z), i).is_some() {
                expected_skipped.push(i as u32);
            }
        }
        assert_eq!(tri.skipped, expected_skipped);
        let used: HashSet<u32> = tri.tets.iter().flatten().copied().collect();
        for i in 0..points.len() as u32 {
            assert_eq!(used.contains(&i), !expected_skipped.contains(&i), "vertex use of point {i}");
        }
        // (a) strictly positive orientation, (b) volumes sum to the box volume
        for v in &tri.tets {
            assert!(orient(points, v) > 0.0, "flat or inverted tet {v:?}");
            assert!(signed_volume6(points, v) < 0.0, "right-handed signed volume must be negative");
        }
        let vol = sum(tri.tets.iter().map(|v| -signed_volume6(points, v) / 6.0));
        assert!((vol - box_vol).abs() <= 1e-12 * box_vol, "volume {vol} vs box {box_vol}");
        // (c) symmetric adjacency on identical faces; hull faces tile the box surface
        // (d) local Delaunay across every internal face
        let mut hull_areas = vec![];
        for (t, v) in tri.tets.iter().enumerate() {
            for k in 0..4 {
                let f = sorted_face(v, k);
                let n = tri.neighbors[t][k];
                if n == NONE {
                    let [a, b, cc] = f.map(|i| points[i as usize]);
                    hull_areas.push(0.5 * (b - a).cross(&(cc - a)).norm());
                    let on_box = (0..3).any(|ax| {
                        [lo[ax], hi[ax]].iter().any(|&w| f.iter().all(|&i| points[i as usize][ax] == w))
                    });
                    assert!(on_box, "hull face {f:?} not on the box boundary");
                    continue;
                }
                let w = tri.tets[n as usize];
                let j = tri.neighbors[n as usize].iter().position(|&x| x == t as u32).expect("asymmetric");
                assert_eq!(sorted_face(&w, j), f, "neighbours disagree on the shared face");
                let cs = v.map(|i| c(&points[i as usize]));
                let opp = c(&points[w[j] as usize]);
                assert!(insphere(cs[0], cs[1], cs[2], cs[3], opp) <= 0.0, "local Delaunay violated");
            }
        }
        let (hull_faces, hull_area) = (hull_areas.len(), sum(hull_areas.into_iter()));
        assert!((hull_area - box_area).abs() <= 1e-12 * box_area, "hull area {hull_area} vs {box_area}");
        // (f) Euler characteristic of a 3-ball: V - E + F - T = 1
        let mut edges = HashSet::new();
        for v in &tri.tets {
            for a in 0..4 {
                for b in a + 1..4 {
                    edges.insert((v[a].min(v[b]), v[a].max(v[b])));
                }
            }
        }
        let faces = (4 * tri.tets.len() + hull_faces) / 2;
        let euler = used.len() as i64 - edges.len() as i64 + faces as i64 - tri.tets.len() as i64;
        assert_eq!(euler, 1, "Euler characteristic");
        // (d) global empty-circumsphere property
        if full {
            for v in &tri.tets {
                let cs = v.map(|i| c(&points[i as usize]));
                for p in points {
                    assert!(insphere(cs[0], cs[1], cs[2], cs[3], c(p)) <= 0.0, "point inside circumsphere");
                }
            }
        }
    }

    fn build_and_check(points: &[Vec3], full: bool) -> Tetrahedralization {
        let tri = tetrahedralize(points).expect("tetrahedralize");
        check(points, &tri, full);
        tri
    }

    #[test]
    fn predicate_conventions() {
        // unit right-handed tet: signed volume +1/6, so orient3d must be negative
        let p = [Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z()];
        let v = [0, 1, 2, 3];
        assert!(orient(&p, &v) < 0.0 && signed_volume6(&p, &v) > 0.0);
        let v = [1, 0, 2, 3];
        assert!(orient(&p, &v) > 0.0);
        let cs = v.map(|i| c(&p[i as usize]));
        assert!(insphere(cs[0], cs[1], cs[2], cs[3], c(&Vec3::repeat(0.25))) > 0.0);
        assert!(insphere(cs[0], cs[1], cs[2], cs[3], c(&Vec3::repeat(2.0))) < 0.0);
        assert!(orient_replaced(&p, &v, 2, &Vec3::new(0.5, -0.1, 0.5)) < 0.0); // beyond face y = 0
        assert!(orient_replaced(&p, &v, 2, &Vec3::new(0.5, 0.0, 0.5)) == 0.0);
        assert!(orient_replaced(&p, &v, 1, &Vec3::repeat(0.5)) < 0.0); // beyond x + y + z = 1
        assert!(orient_replaced(&p, &v, 1, &Vec3::repeat(0.3)) > 0.0);
    }

    #[test]
    fn random_points() {
        build_and_check(&random(300, 1), true);
        build_and_check(&random(5000, 2), false);
    }

    #[test]
    fn halton_points() {
        build_and_check(&halton(300), true);
        let tri = build_and_check(&halton(10_000), false);
        assert!(tri.skipped.is_empty());
    }

    #[test]
    fn lattices() {
        // every lattice cube has 8 cospherical corners; the lattice repeats the 8 box corners
        let tri = build_and_check(&lattice(5), true);
        assert_eq!(tri.skipped.len(), 8);
        build_and_check(&lattice(9), true);
        build_and_check(&lattice(17), false);
    }

    #[test]
    fn points_on_faces_and_edges() {
        let mut r = Rng(7);
        let pts = with_interior(Vec3::new(-1.0, 0.0, 0.0), Vec3::new(1.0, 0.5, 3.0), 300, |_| {
            let mut u = [r.next(), r.next(), r.next()];
            for x in u.iter_mut() {
                if r.below(2) == 0 {
                    *x = r.below(2) as f64; // snap to a face; two/three snaps: an edge/corner
                }
            }
            u
        });
        build_and_check(&pts, true);
        // cocircular grids on every box face, plus interior points
        let mut pts = corners(Vec3::zeros(), Vec3::new(1.0, 1.0, 1.0));
        for i in 0..6 {
            for a in 0..=4 {
                for b in 0..=4 {
                    let mut q = [a as f64 / 4.0, b as f64 / 4.0, a as f64 / 4.0];
                    q[i % 3] = (i / 3) as f64;
                    q[(i + 2) % 3] = b as f64 / 4.0;
                    pts.push(Vec3::from(q));
                }
            }
        }
        pts.extend(halton(40)[8..].iter().map(|p| p.component_mul(&Vec3::new(1.0, 0.5, 2.0))));
        build_and_check(&pts, true);
    }

    #[test]
    fn duplicates() {
        let mut pts = random(150, 3);
        let dups: Vec<Vec3> = (0..60).map(|i| pts[(i * 37) % pts.len()]).collect();
        pts.extend(dups);
        pts.push(Vec3::new(0.0, -0.0, 1.0));
        pts.push(Vec3::new(-0.0, 0.0, 1.0)); // equal to the previous point
        let tri = build_and_check(&pts, true);
        assert!(tri.skipped.contains(&(pts.len() as u32 - 1)));
        assert!(tri.skipped.len() >= 61);
        // quantized random points: many duplicates and coplanar/cospherical sets, in and on the box
        let mut r = Rng(5);
        let pts = with_interior(Vec3::zeros(), Vec3::new(1.0, 1.0, 1.0), 5000, |_| {
            [(); 3].map(|_| r.below(17) as f64 / 16.0)
        });
        let tri = build_and_check(&pts, false);
        assert!(tri.skipped.len() > 500);
    }

    #[test]
    fn coplanar_collinear_cospherical() {
        // a plane of grid points and a line of points through the interior
        let mut pts = corners(Vec3::new(-6.0, -6.0, -6.0), Vec3::new(6.0, 6.0, 6.0));
        for a in -5..=5 {
            pts.push(Vec3::new(a as f64, 0.5 * a as f64, 1.0));
            for b in -5..=5 {
                pts.push(Vec3::new(a as f64, b as f64, 0.0));
            }
        }
        build_and_check(&pts, true);
        // all integer points on the sphere of radius 5 (exactly cospherical) and its centre
        let mut pts = corners(Vec3::new(-6.0, -6.0, -6.0), Vec3::new(6.0, 6.0, 6.0));
        for x in -5i32..=5 {
            for y in -5i32..=5 {
                for z in -5i32..=5 {
                    if x * x + y * y + z * z == 25 {
                        pts.push(Vec3::new(x as f64, y as f64, z as f64));
                    }
                }
            }
        }
        assert_eq!(pts.len(), 8 + 30);
        pts.push(Vec3::zeros());
        build_and_check(&pts, true);
    }

    #[test]
    fn invalid_inputs() {
        let good = random(10, 4);
        assert!(tetrahedralize(&good[..7]).is_err());
        let mut p = good.clone();
        p[9].y = f64::NAN;
        assert!(tetrahedralize(&p).is_err());
        let mut p = good.clone();
        p[3] = p[5]; // duplicated corner
        assert!(tetrahedralize(&p).is_err());
        let mut p = good.clone();
        p[2].x += 0.1; // not a corner
        assert!(tetrahedralize(&p).is_err());
        let mut p = good.clone();
        p[9].z = 2.5; // outside the box
        assert!(tetrahedralize(&p).is_err());
        let flat: Vec<Vec3> = corners(Vec3::zeros(), Vec3::new(1.0, 1.0, 0.0));
        assert!(tetrahedralize(&flat).is_err());
        assert!(tetrahedralize(&good).is_ok());
    }

    fn assert_contains(points: &[Vec3], tri: &Tetrahedralization, t: Option<u32>, q: &Vec3) -> u32 {
        let t = t.unwrap_or_else(|| panic!("{q:?} not located"));
        assert!(contains(points, &tri.tets[t as usize], q), "tet {t} does not contain {q:?}");
        t
    }

    #[test]
    fn locate_points() {
        let pts = lattice(5);
        let tri = build_and_check(&pts, false);
        let mut r = Rng(11);
        let mut start = 0;
        for _ in 0..2000 {
            let q = Vec3::new(r.next(), r.next(), r.next());
            start = assert_contains(&pts, &tri, locate(&pts, &tri, start, q), &q);
        }
        // vertices, edge midpoints (exact for the dyadic lattice), points on box faces
        for (t, v) in tri.tets.iter().enumerate() {
            for a in 0..4 {
                for b in a..4 {
                    let q = (pts[v[a] as usize] + pts[v[b] as usize]) / 2.0;
                    let from = (t * 7 + a) as u32 % tri.tets.len() as u32;
                    assert_contains(&pts, &tri, locate(&pts, &tri, from, q), &q);
                }
            }
        }
        for i in 0..500 {
            let mut q = Vec3::new(r.next(), r.next(), r.next());
            q[i % 3] = (i / 3 % 2) as f64;
            assert_contains(&pts, &tri, locate(&pts, &tri, start, q), &q);
            // a capped walk falls back to the linear scan
            assert_contains(&pts, &tri, locate_capped(&pts, &tri, start, q, 0), &q);
        }
        assert_contains(&pts, &tri, locate(&pts, &tri, NONE, Vec3::repeat(0.3)), &Vec3::repeat(0.3));
        for q in [Vec3::new(1.0 + 1e-12, 0.5, 0.5), Vec3::new(-3.0, 9.0, 0.1), Vec3::new(0.5, 0.5, -1e-300)] {
            assert_eq!(locate(&pts, &tri, 3, q), None);
            assert_eq!(locate_capped(&pts, &tri, 3, q, 0), None);
        }
        assert_eq!(locate(&pts, &tri, 0, Vec3::new(f64::NAN, 0.5, 0.5)), None);
        // random tets of a Halton set: locate their centroids from anywhere
        let pts = halton(3000);
        let tri = build_and_check(&pts, false);
        for k in 0..500 {
            let v = tri.tets[r.below(tri.tets.len())];
            let q = v.iter().map(|&i| pts[i as usize]).sum::<Vec3>() / 4.0;
            assert_contains(&pts, &tri, locate(&pts, &tri, k, q), &q);
        }
    }

    #[test]
    fn timing() {
        for n in [1_000, 10_000] {
            let pts = halton(n);
            let t = Instant::now();
            let tri = tetrahedralize(&pts).expect("tetrahedralize");
            let dt = t.elapsed();
            eprintln!("delaunay: {n} Halton points + 8 corners: {} tets in {dt:?}", tri.tets.len());
        }
    }
}
