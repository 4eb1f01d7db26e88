//! The tetrahedralization's tests: every structural and Delaunay property of the result
//! ([`check`]) on random, Halton, lattice, degenerate and duplicate-laden point sets, the
//! predicates' sign conventions, invalid inputs, and point location. (Its timing is the
//! criterion bench `cargo bench -p cmsc-core --bench delaunay`.)

use std::collections::{HashMap, HashSet};

use robust::Coord3D;

use super::predicates::{c3, contains, insphere, orient, orient_replaced};
use super::walk::locate_capped;
use super::*;

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
    with_interior(Vec3::new(-1.0, -2.0, 0.5), Vec3::new(3.0, 1.0, 2.0), n, |_| [r.next(), r.next(), r.next()])
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
    let error = |p: &[Vec3]| tetrahedralize(p).err();
    assert_eq!(error(&good[..7]), Some(TetError::Count(7)));
    let mut p = good.clone();
    p[9].y = f64::NAN;
    assert_eq!(error(&p), Some(TetError::NotFinite(9)));
    let mut p = good.clone();
    p[3] = p[5]; // duplicated corner
    assert_eq!(error(&p), Some(TetError::NotACorner(5)));
    let mut p = good.clone();
    p[2].x += 0.1; // not a corner (the box grows: which corner is named first depends on it)
    assert!(matches!(error(&p), Some(TetError::NotACorner(_))));
    let mut p = good.clone();
    p[9].z = 2.5; // outside the box
    assert_eq!(error(&p), Some(TetError::Outside(9)));
    let flat: Vec<Vec3> = corners(Vec3::zeros(), Vec3::new(1.0, 1.0, 0.0));
    assert_eq!(error(&flat), Some(TetError::FlatBox));
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
