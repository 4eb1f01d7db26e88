//! The narrow phase's unit tests: the lane tests against the pair tests they vectorise, the
//! set-aside tests against the exact ones, and the swept tests' crossings.

use super::*;

/// The test pairs of [`apart`] and [`vertex_apart`]: 200,000 random four points `(e0, e1)`
/// at the start and end of a step, in a 5 cm square, most of them near one plane
/// (neighbours in one layer of a cloth, the pairs they are for: `flat` is the layer's
/// thickness) and moving up to `motion`, each with its index `k`.
fn random_pairs(seed: u64) -> impl Iterator<Item = (usize, Real, Real, [Vec3; 4], [Vec3; 4])> {
    let mut seed = seed;
    let mut random = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as Real / (1u64 << 53) as Real
    };
    (0..200_000).map(move |k| {
        let mut point = |spread: Real, flat: Real| {
            Vec3::new(spread * (random() - 0.5), spread * (random() - 0.5), flat * (random() - 0.5))
        };
        let flat = [0.0, 1e-9, 1e-4, 0.01, 0.05][k % 5];
        let e0: [Vec3; 4] = std::array::from_fn(|_| point(0.05, flat));
        let motion = [0.0, 1e-5, 1e-3, 0.01, 0.05][k / 5 % 5];
        let e1: [Vec3; 4] = std::array::from_fn(|i| e0[i] + point(motion, motion));
        (k, flat, motion, e0, e1)
    })
}

/// The lanes of a pair test decide each pair as the test does: `lanes` (AVX2 where the CPU
/// has it) and `portable` against `each`, on [`LANES`] pairs at distances `d`, `d/2`, `2d`, `d`.
fn agree_in_lanes(
    pairs: &[([Vec3; 4], [Vec3; 4])],
    d: Real,
    [lanes, portable]: [LaneTest; 2],
    each: fn(&[Vec3; 4], &[Vec3; 4], Real) -> bool,
) {
    let (mut e0, mut e1): (Ends, Ends) = Default::default();
    let ds = [d, 0.5 * d, 2.0 * d, d];
    for (l, (a, b)) in pairs.iter().enumerate() {
        for (k, c) in (0..4).flat_map(|k| (0..3).map(move |c| (k, c))) {
            (e0[k][c][l], e1[k][c][l]) = (a[k][c], b[k][c]);
        }
    }
    let expected: [bool; LANES] = std::array::from_fn(|l| each(&pairs[l].0, &pairs[l].1, ds[l]));
    assert_eq!(lanes(&e0, &e1, &ds), expected, "{pairs:?}");
    assert_eq!(portable(&e0, &e1, &ds), expected, "{pairs:?}");
}

/// [`apart`] sets a pair aside only where [`edge_edge`] finds no contact, on the
/// [`random_pairs`], many ending exactly `d` apart along the lines' normal (as the contacts
/// leave them), some turning over or crossing in the step; and of the pairs 0.1 mm off one
/// plane that move 0.01 mm and have no contact, it sets aside 95 % or more.
/// [`apart_lanes`] decides them as `apart` does each.
#[test]
fn a_pair_set_aside_as_apart_has_no_contact() {
    let d = 0.004;
    let (mut set_aside, mut in_layer, mut in_layer_set_aside) = (0, 0, 0);
    let mut lanes = Vec::new();
    for (k, flat, motion, e0, mut e1) in random_pairs(0x2545_f491_4f6c_dd1d) {
        if k % 3 == 0 {
            // the second edge moved along the lines' normal to exactly `d` from the first, on
            // one side or the other
            let n = (e1[1] - e1[0]).cross(&(e1[3] - e1[2])).normalize();
            let target = if k % 2 == 0 { d } else { -d };
            let shift = n * (target - (e1[0] - e1[2]).dot(&n));
            e1[2] -= shift;
            e1[3] -= shift;
        }
        lanes.push((e0, e1));
        if lanes.len() == LANES {
            agree_in_lanes(&lanes, d, [apart_lanes, apart_lanes_portable], apart);
            lanes.clear();
        }
        let moves: [Vec3; 4] = std::array::from_fn(|i| e1[i] - e0[i]);
        let none = edge_edge(&e0, &e1, &moves, d, true).is_none();
        if apart(&e0, &e1, d) {
            set_aside += 1;
            assert!(none, "{e0:?} {e1:?}");
            assert_eq!(edge_edge(&e0, &e1, &moves, d, false), None, "{e0:?} {e1:?}");
        }
        if flat == 1e-4 && motion == 1e-5 && k % 3 != 0 && none {
            in_layer += 1;
            in_layer_set_aside += usize::from(apart(&e0, &e1, d));
        }
    }
    assert!(set_aside > 50_000, "{set_aside} set aside");
    // of the pairs in one layer that have no contact, apart decides nearly all
    assert!(in_layer_set_aside * 100 >= in_layer * 95, "{in_layer_set_aside} of {in_layer}");
}

/// [`vertex_apart`] sets a vertex–triangle pair aside only where
/// [`SelfCollision::vertex_triangle`](super::super::SelfCollision::vertex_triangle) (with its
/// swept test) finds no contact, on the [`random_pairs`] (the vertex first), many ending
/// exactly `d` above or below the triangle's plane, some turning over or passing through in
/// the step, the positions the step arrived at (`x_in`) the end or elsewhere; of the vertices
/// 0.1 mm off a layer's plane that move 0.01 mm and have no contact it sets aside 90 % or
/// more (94 % when written). [`vertex_apart_lanes`] decides them as `vertex_apart` does each.
#[test]
fn a_vertex_set_aside_as_apart_from_a_triangle_has_no_contact() {
    use super::super::broad::swept_box;
    use super::super::SelfCollision;
    let d = 0.004;
    let (mut set_aside, mut in_layer, mut in_layer_set_aside) = (0, 0, 0);
    let mut lanes = Vec::new();
    for (k, flat, motion, x_old, mut x) in random_pairs(0x9e37_79b9_7f4a_7c15) {
        if k % 3 == 0 {
            // the vertex moved along the triangle's normal to exactly `d` from its plane, on
            // one side or the other
            let n = (x[2] - x[1]).cross(&(x[3] - x[1])).normalize();
            let target = if k % 2 == 0 { d } else { -d };
            x[0] += n * (target - (x[0] - x[1]).dot(&n));
        }
        lanes.push((x_old, x));
        if lanes.len() == LANES {
            agree_in_lanes(&lanes, d, [vertex_apart_lanes, vertex_apart_lanes_portable], vertex_apart);
            lanes.clear();
        }
        // the arrival elsewhere than the end: the end moved on by up to `motion`
        let x_in: [Vec3; 4] = std::array::from_fn(|i| {
            if k % 7 == 0 {
                x[i] + Vec3::repeat(motion * (0.3 - 0.2 * i as Real))
            } else {
                x[i]
            }
        });
        let sc = SelfCollision::new(&[[1, 2, 3]], &[d, 0.0, 0.0, 0.0], &x_old).unwrap();
        let swept = swept_box(&[1, 2, 3], [&x_old, &x], 0.0);
        let none = sc.vertex_triangle(0, 0, [&x_old, &x_in], &x, 1.0, Some(&swept)).is_none();
        if vertex_apart(&x_old, &x, d) {
            set_aside += 1;
            assert!(none, "{x_old:?} {x:?} {x_in:?}");
        }
        if flat == 1e-4 && motion == 1e-5 && k % 3 != 0 && none {
            in_layer += 1;
            in_layer_set_aside += usize::from(vertex_apart(&x_old, &x, d));
        }
    }
    assert!(set_aside > 50_000, "{set_aside} set aside");
    assert!(in_layer_set_aside * 100 >= in_layer * 90, "{in_layer_set_aside} of {in_layer}");
}

/// Two edges 3 cm apart that fall 4 cm together while one turns through parallel to the
/// other: their lines' normal, hence the sign of η, flips, but they never come near each
/// other. The test once compared the change of side with the ends' absolute travel and
/// pushed them (every pair of nearby edges of a falling, bending cloth counted as crossing,
/// and the pushes tore a falling charged cloth apart); their relative travel (4 mm) says no.
#[test]
fn edges_falling_together_through_parallel_do_not_cross() {
    let (d, fall) = (0.015, Vec3::new(0.0, 0.0, -0.04));
    let b = |eps: Real| [Vec3::new(0.0, -0.5 * eps, 0.03), Vec3::new(1.0, 0.5 * eps, 0.03)];
    let (b0, b1) = (b(0.004), b(-0.004));
    let e0 = [Vec3::zeros(), Vec3::x(), b0[0], b0[1]];
    let e1 = [e0[0] + fall, e0[1] + fall, b1[0] + fall, b1[1] + fall];
    let moves = |e1: &[Vec3; 4]| [0, 1, 2, 3].map(|k| e1[k] - e0[k]);
    assert_eq!(edge_edge(&e0, &e1, &moves(&e1), d, false), None);
    // the same edges closing 3 cm on each other while turning do cross and are separated
    let e1 = [e0[0] + fall, e0[1] + fall, b1[0] + fall * 1.75, b1[1] + fall * 1.75];
    assert!(edge_edge(&e0, &e1, &moves(&e1), d, false).is_some());
}

/// `f(t) = Π (t − r_k)` on `[0, 1]`, as coefficients `c[0] + c[1] t + …`.
fn cubic_from_roots(r: [Real; 3]) -> [Real; 4] {
    [-r[0] * r[1] * r[2], r[0] * r[1] + r[0] * r[2] + r[1] * r[2], -(r[0] + r[1] + r[2]), 1.0]
}

fn roots(c: [Real; 4]) -> Vec<Real> {
    let (r, n) = cubic_roots_in_unit(c, 1e-14);
    r[..n].to_vec()
}

#[test]
fn cubic_roots_known_double_none_and_degenerate() {
    // three simple roots, all in [0, 1]; one outside is left out
    let found = roots(cubic_from_roots([0.9, 0.2, 0.5]));
    assert_eq!(found.len(), 3, "{found:?}");
    for (t, r) in found.iter().zip([0.2, 0.5, 0.9]) {
        assert!((t - r).abs() < 1e-12, "{found:?}");
    }
    // the same, upside down (the critical points come out of the quadratic in the other
    // order)
    let found = roots(cubic_from_roots([0.9, 0.2, 0.5]).map(|c| -c));
    assert_eq!(found.len(), 3, "{found:?}");
    for (t, r) in found.iter().zip([0.2, 0.5, 0.9]) {
        assert!((t - r).abs() < 1e-12, "{found:?}");
    }
    let found = roots(cubic_from_roots([0.35, 1.7, -2.0]));
    assert!(found.len() == 1 && (found[0] - 0.35).abs() < 1e-12, "{found:?}");
    // a double root (f touches 0 at 0.3) and a simple one outside: one root
    let found = roots(cubic_from_roots([0.3, 0.3, -1.0]));
    assert!(found.len() == 1 && (found[0] - 0.3).abs() < 1e-7, "{found:?}");
    // a double root and a simple one inside
    let found = roots(cubic_from_roots([0.6, 0.1, 0.6]));
    assert!(found.len() == 2 && (found[0] - 0.1).abs() < 1e-12 && (found[1] - 0.6).abs() < 1e-7, "{found:?}");
    // no root in [0, 1]: roots outside, or no real root at all (t³ + 1, t² + 1)
    assert!(roots(cubic_from_roots([-0.5, 1.5, 2.0])).is_empty());
    assert!(roots([1.0, 0.0, 0.0, 1.0]).is_empty());
    assert!(roots([1.0, 0.0, 1.0, 0.0]).is_empty());
    // roots at the ends count
    let found = roots(cubic_from_roots([0.0, 1.0, 3.0]));
    assert!(found.len() == 2 && found[0].abs() < 1e-15 && (found[1] - 1.0).abs() < 1e-12, "{found:?}");
    // a vanishing leading coefficient: the quadratic (t − 0.25)(t − 0.75), exactly or nearly
    for lead in [0.0, 1e-20, -1e-13] {
        let found = roots([0.1875, -1.0, 1.0, lead]);
        assert!(found.len() == 2, "lead {lead}: {found:?}");
        assert!((found[0] - 0.25).abs() < 1e-12 && (found[1] - 0.75).abs() < 1e-12, "{found:?}");
    }
    // linear, constant, and zero throughout (no crossing to find)
    let found = roots([-0.4, 1.0, 0.0, 0.0]);
    assert!(found.len() == 1 && (found[0] - 0.4).abs() < 1e-15, "{found:?}");
    assert!(roots([2.0, 0.0, 0.0, 0.0]).is_empty());
    assert!(roots([0.0; 4]).is_empty());
}

/// The unit triangle in the plane `z = h` (corners `(0,0)`, `(1,0)`, `(0,1)`).
fn triangle_at(h: Real) -> [Vec3; 3] {
    [Vec3::new(0.0, 0.0, h), Vec3::new(1.0, 0.0, h), Vec3::new(0.0, 1.0, h)]
}

#[test]
fn a_vertex_through_the_middle_of_a_moving_triangle_is_found_when_it_meets_it() {
    // the triangle rises 1 m while the vertex falls from 0.8 to 0.2 m over its middle:
    // they meet at t = 0.5 (0.8 − 0.6 t = t), the vertex coming from above
    let p = [Vec3::new(0.25, 0.25, 0.8), Vec3::new(0.25, 0.25, 0.2)];
    let (t, n) = vertex_triangle_crossing(&p, &[triangle_at(0.0), triangle_at(1.0)]).expect("crosses");
    assert!((t - 0.5).abs() < 1e-12 && (n - Vec3::z()).norm() < 1e-12, "t {t}, n {n:?}");
    // rising faster from below (−0.2 + 1.6 t = t at t = 1/3): the normal points down
    let p = [Vec3::new(0.25, 0.25, -0.2), Vec3::new(0.25, 0.25, 1.4)];
    let (t, n) = vertex_triangle_crossing(&p, &[triangle_at(0.0), triangle_at(1.0)]).expect("crosses");
    assert!((t - 1.0 / 3.0).abs() < 1e-12 && (n + Vec3::z()).norm() < 1e-12, "t {t}, n {n:?}");
    // rising together, 0.1 m apart: no crossing
    let p = [Vec3::new(0.25, 0.25, 0.1), Vec3::new(0.25, 0.25, 1.1)];
    assert_eq!(vertex_triangle_crossing(&p, &[triangle_at(0.0), triangle_at(1.0)]), None);
}

#[test]
fn a_fast_vertex_through_a_still_triangle_near_its_edge_and_a_near_miss_outside() {
    let still = [triangle_at(0.0), triangle_at(0.0)];
    // through (0.9, 0.05) at t = 0.5, 5 cm inside the long edge, ending beyond it: the end
    // state alone (closest point on the edge, 0.1 m below) shows no crossing
    let p = [Vec3::new(0.7, 0.05, 0.1), Vec3::new(1.1, 0.05, -0.1)];
    let (t, n) = vertex_triangle_crossing(&p, &still).expect("crosses near the edge");
    assert!((t - 0.5).abs() < 1e-12 && (n - Vec3::z()).norm() < 1e-12, "t {t}, n {n:?}");
    // through (0.5, −0.001): 1 mm outside the edge `y = 0`, a near miss; 1 mm inside, a hit
    for (y, hit) in [(-1e-3, false), (1e-3, true)] {
        let p = [Vec3::new(0.5, y, 0.1), Vec3::new(0.5, y, -0.1)];
        assert_eq!(vertex_triangle_crossing(&p, &still).is_some(), hit, "y = {y}");
    }
    // a vertex on the plane at the start, leaving it: no crossing within the step
    let p = [Vec3::new(0.2, 0.2, 0.0), Vec3::new(0.2, 0.2, -0.1)];
    assert_eq!(vertex_triangle_crossing(&p, &still), None);
}

#[test]
fn edges_passing_through_each_other_cross_and_near_parallel_edges_sliding_over_do_not() {
    // an edge along x falls from 0.1 to −0.1 through a still edge along y at z = 0
    let a = |z: Real| [Vec3::new(-0.5, 0.2, z), Vec3::new(0.5, 0.2, z)];
    let b = [Vec3::new(0.1, -0.5, 0.0), Vec3::new(0.1, 0.5, 0.0)];
    let e = |z: Real| [a(z)[0], a(z)[1], b[0], b[1]];
    let (t, n) = edge_edge_crossing(&e(0.1), &e(-0.1)).expect("crosses");
    assert!((t - 0.5).abs() < 1e-12 && (n.z.abs() - 1.0).abs() < 1e-12, "t {t}, n {n:?}");
    // n points from the still edge to the side the falling one came from: up
    assert!(n.z > 0.0, "{n:?}");
    // the contact puts it back on top: the lines `d` apart along +z
    let moves = [0, 1, 2, 3].map(|k| e(-0.1)[k] - e(0.1)[k]);
    let (n, ..) = edge_edge(&e(0.1), &e(-0.1), &moves, 0.01, true).expect("a contact");
    assert!((n - Vec3::z()).norm() < 1e-12, "{n:?}");
    // passing beside the still edge (beyond its end): no crossing
    let beside = |z: Real| [Vec3::new(-0.5, 0.7, z), Vec3::new(0.5, 0.7, z), b[0], b[1]];
    assert_eq!(edge_edge_crossing(&beside(0.1), &beside(-0.1)), None);
    // an edge 1 cm above another, turned 2 mrad from it and tilted 2 mrad, sliding 6 cm
    // across it to end 1 cm beside it: the lines' normal is (1, 0, 1)/√2 and their side
    // flips as it passes over (at x = −1 cm, where the segments are far apart along their
    // lines), without any crossing; at the end the closest points are interior, 1.4 cm apart
    let slide = |x: Real| {
        let (lo, hi) = (Vec3::new(x - 1e-3, -0.5, 0.011), Vec3::new(x + 1e-3, 0.5, 0.009));
        [lo, hi, Vec3::new(0.0, -0.5, 0.0), Vec3::new(0.0, 0.5, 0.0)]
    };
    let (e0, e1) = (slide(-0.05), slide(0.01));
    assert_eq!(edge_edge_crossing(&e0, &e1), None);
    let moves = [0, 1, 2, 3].map(|k| e1[k] - e0[k]);
    assert_eq!(edge_edge(&e0, &e1, &moves, 0.02, true), None);
    // the linearised test alone (no swept test) took the change of side for a crossing and
    // pushed the upper edge down, through the other
    let (n, ..) = edge_edge(&e0, &e1, &moves, 0.02, false).expect("the linearised test's contact");
    assert!(n.z < 0.0, "{n:?}");
}
