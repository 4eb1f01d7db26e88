//! Unit tests of self-collision: the broad phase against fresh queries, the detections, the
//! response and the impact zones.

use nalgebra::Rotation3;

use super::broad::{share_a_vertex, swept_box};
use super::narrow::{apart, edge_edge};
use super::response::anchors_motion;
use super::*;
use crate::collision::geometry::triangle_normal;
use crate::math::Mat3;

/// The fail-safe on its own: a triangle spinning about z with a vertex 1 cm above it, which
/// ended the step 1 cm through it. The vertex and the triangle are joined into one zone
/// that moves rigidly: the vertex is back above the triangle at its start height, every
/// distance within the zone is kept, and so are the step's linear momentum (exactly) and
/// its angular momentum (to first order in the turn: within 1 %; a zone that only
/// translated would lose the spin).
#[test]
fn an_impact_zone_moves_a_crossed_vertex_and_its_spinning_triangle_as_one_rigid_body() {
    let tri = [Vec3::new(0.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 0.0), Vec3::new(0.0, 1.0, 0.0)];
    let x_old = vec![Vec3::new(0.25, 0.25, 0.01), tri[0], tri[1], tri[2]];
    let mass = [2.0, 1.0, 1.0, 1.0];
    let w_inv = mass.map(|m| 1.0 / m);
    let centre = x_old.iter().zip(&mass).map(|(x, m)| x * *m).sum::<Vec3>() / 5.0;
    let spin = Rotation3::new(Vec3::new(0.0, 0.0, 0.05));
    let mut x: Vec<Vec3> = x_old.iter().map(|p| centre + spin * (p - centre)).collect();
    x[0].z -= 0.02;
    let sc = SelfCollision::new(&[[1, 2, 3]], &[0.004; 4], &x_old).unwrap();
    let x_in = x.clone();
    let mut step = ContactStep::new(&x_old, &x_in);
    let mut trees = BroadPhase::default().trees(&sc, &mut step, &x);
    let found = sc.detect(&mut step, &x, &mut trees, &w_inv);
    assert!(found.iter().any(|c| -c.gap(&x) > c.d), "the vertex did not end through the triangle");
    sc.impact_zones(&mut step, found, &mut x, &mut trees, [&w_inv, &w_inv], &mass);
    let moves = |x: &[Vec3]| -> Vec<Vec3> { x.iter().zip(&x_old).map(|(a, b)| a - b).collect() };
    let momentum = |x: &[Vec3]| moves(x).iter().zip(&mass).map(|(d, m)| d * *m).sum::<Vec3>();
    let angular = |x: &[Vec3]| {
        let r = x_old.iter().map(|p| p - centre);
        r.zip(moves(x)).zip(&mass).map(|((r, d), m)| r.cross(&d) * *m).sum::<Vec3>()
    };
    assert!((momentum(&x) - momentum(&x_in)).norm() < 1e-15);
    let (spun, kept) = (angular(&x_in), angular(&x));
    assert!((kept - spun).norm() < 0.01 * spun.norm(), "angular momentum {kept:?}, was {spun:?}");
    for (a, b) in [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)] {
        let (now, then) = ((x[a] - x[b]).norm(), (x_old[a] - x_old[b]).norm());
        assert!((now - then).abs() < 1e-12, "{a}–{b}: {now} m apart, {then} m at the start");
    }
    let n = triangle_normal(&x[1], &x[2], &x[3]).unwrap();
    assert!(((x[0] - x[1]).dot(&n) - 0.01).abs() < 1e-12, "the vertex is not back at its height");
}

#[test]
fn anchors_motion_is_the_rigid_motion_of_pins_that_move_rigidly() {
    let p = [
        Vec3::new(0.0, 0.0, 0.0),
        Vec3::new(1.0, 0.0, 0.0),
        Vec3::new(0.0, 2.0, 0.0),
        Vec3::new(0.3, 0.4, 0.0),
    ];
    let (turn, shift) = (Rotation3::new(Vec3::new(0.3, -0.2, 0.5)), Vec3::new(0.1, -2.0, 0.7));
    // coplanar pins, turned and shifted: the same motion, applied anywhere
    let (from, rotation, to) = anchors_motion(&p.map(|a| (a, turn * a + shift)));
    let probe = Vec3::new(-0.4, 0.9, 1.3);
    assert!((to + rotation * (probe - from) - (turn * probe + shift)).norm() < 1e-12);
    // static pins, and pins on a line: a translation only, exactly
    let (from, rotation, to) = anchors_motion(&p.map(|a| (a, a)));
    assert_eq!((rotation, to - from), (Mat3::identity(), Vec3::zeros()));
    let line = [Vec3::zeros(), Vec3::x(), Vec3::x() * 3.0];
    let (from, rotation, to) = anchors_motion(&line.map(|a| (a, turn * a)));
    assert_eq!(rotation, Mat3::identity());
    assert!((to - from - (turn * Vec3::x() * 4.0 / 3.0 - Vec3::x() * 4.0 / 3.0)).norm() < 1e-12);
}

/// Two 12 × 12 sheets 2 cm apart, the upper one rippled, with self-collision at 4 mm: the
/// settings, the start positions and the number of vertices of a sheet.
fn two_sheets() -> (SelfCollision, Vec<Vec3>, usize) {
    sheets(12, 0.02, 0.004, |p| p + Vec3::new(0.005, 0.003, 0.02 + 0.004 * (40.0 * p.x).sin()))
}

/// Two square sheets of `count` × `count` vertices `spacing` apart, the second at `upper`
/// of the first's positions, with self-collision at `distance`: as [`two_sheets`].
fn sheets(
    count: u32,
    spacing: Real,
    distance: Real,
    upper: impl Fn(&Vec3) -> Vec3,
) -> (SelfCollision, Vec<Vec3>, usize) {
    let sheet = crate::shapes::grid(count, count, spacing);
    let n = sheet.positions.len();
    let x0: Vec<Vec3> = sheet.positions.iter().copied().chain(sheet.positions.iter().map(upper)).collect();
    let second = sheet.triangles.iter().map(|t| t.map(|v| v + n as u32));
    let triangles: Vec<[u32; 3]> = sheet.triangles.iter().copied().chain(second).collect();
    (SelfCollision::new(&triangles, &vec![distance; 2 * n], &x0).unwrap(), x0, n)
}

/// Step `step` (of length `h`) of [`two_sheets`] before contacts: the upper sheet (from
/// vertex `n` on) thrown down, both swirling about z, faster at every step.
fn throw(x: &mut [Vec3], v: &mut [Vec3], n: usize, step: usize, h: Real) {
    for (i, (x, v)) in x.iter_mut().zip(v).enumerate() {
        let swirl = Vec3::new(-x.y, x.x, 0.0) * (0.5 + 0.1 * step as Real);
        *v += if i >= n { Vec3::new(0.0, 0.0, -3.0) * h * 60.0 } else { Vec3::zeros() } + swirl * h;
        *x += *v * h;
    }
}

/// [`two_sheets`] thrown at each other and swirled for 24 steps of 1/120 s (the contacts'
/// output is the next step's input): what the steps find is the same, bit for bit, with the
/// broad phase's trees kept and refit from step to step (rebuilt every `REBUILD_STEPS`) as
/// with trees built afresh every step, and the sheets meet (the test exercises contacts).
#[test]
fn kept_and_refit_trees_find_what_fresh_trees_find() {
    let (sc, x0, n) = two_sheets();
    let (mass, pinned) = (vec![1e-3; 2 * n], vec![false; 2 * n]);
    let h = 1.0 / 120.0;
    let run = |keep: bool| {
        let mut broad = BroadPhase::default();
        let (mut x, mut v) = (x0.clone(), vec![Vec3::zeros(); 2 * n]);
        let mut moved = 0;
        for step in 0..24 {
            let x_old = x.clone();
            throw(&mut x, &mut v, n, step, h);
            if !keep {
                broad = BroadPhase::default();
            }
            moved += sc.project(
                &mut ContactStep::new(&x_old, &x),
                &mut x,
                &mut v,
                (&mass, &pinned),
                h,
                &mut broad,
            );
        }
        (x, v, moved)
    };
    let (kept, fresh) = (run(true), run(false));
    assert!(kept.2 > 100, "the sheets barely met: {} vertex moves", kept.2);
    assert_eq!(kept, fresh);
}

/// [`two_sheets`] with the upper one lowered into contact, the pair falling 5 cm per step
/// (36 times the candidates' slack) while the upper sheet sinks 0.2 mm per step onto the
/// lower, each vertex `i` lifted `lift(step, i)` more (m), for `steps` steps: the positions,
/// velocities and vertex moves at the end, and the takes and the retakes of candidates,
/// with the broad phase kept from step to step (`keep`), or afresh at every step with
/// fresh candidates at every detection.
fn fall_together(
    steps: usize,
    keep: bool,
    lift: impl Fn(usize, usize) -> Real,
) -> (Vec<Vec3>, Vec<Vec3>, usize, [usize; 2]) {
    let (sc, mut x0, n) = two_sheets();
    x0[n..].iter_mut().for_each(|p| p.z -= 0.017);
    let (mass, pinned) = (vec![1e-3; 2 * n], vec![false; 2 * n]);
    let h = 1.0 / 120.0;
    let mut broad = BroadPhase::default();
    let (mut x, mut v) = (x0.clone(), vec![Vec3::zeros(); 2 * n]);
    let (mut moved, mut takes) = (0, [0, 0]);
    for step in 0..steps {
        let x_old = x.clone();
        for (i, p) in x.iter_mut().enumerate() {
            let sink = if i >= n { -0.0502 } else { -0.05 };
            *p += Vec3::new(0.01, -0.02, sink + lift(step, i));
        }
        if !keep {
            broad = BroadPhase::default();
        }
        let mut contacts = ContactStep::new(&x_old, &x);
        contacts.reuse = keep;
        moved += sc.project(&mut contacts, &mut x, &mut v, (&mass, &pinned), h, &mut broad);
        takes = [takes[0] + contacts.takes, takes[1] + contacts.retakes];
    }
    (x, v, moved, takes)
}

/// [`fall_together`]: candidates kept from step to step hold under the common fall (their
/// test allows a translation of the whole mesh), so most steps take none from the trees,
/// and the steps find what they find with a fresh broad phase and fresh candidates at every
/// detection, bit for bit. (Taken relative to fixed boxes, the candidates were taken afresh
/// at every step.)
#[test]
fn candidates_kept_through_a_common_fall_find_what_fresh_ones_find() {
    let steps = 16;
    let (kept, fresh) = (fall_together(steps, true, |_, _| 0.0), fall_together(steps, false, |_, _| 0.0));
    assert!(kept.2 > 50, "the sheets barely met: {} vertex moves", kept.2);
    assert_eq!((&kept.0, &kept.1, kept.2), (&fresh.0, &fresh.1, fresh.2));
    assert!(fresh.3[0] >= steps);
    assert!(kept.3[0] * 3 <= steps, "candidates taken {} times in {steps} steps", kept.3[0]);
}

/// [`two_sheets`] thrown at each other for 12 steps (the contacts' output the next step's
/// input): at every step, the candidates taken by traversing the trees are exactly the pairs
/// a test of every pair against every other finds (a colliding vertex's box grown by twice
/// the slack meeting a triangle's swept box it is not a corner of; two edges sharing no
/// vertex whose swept boxes come within the largest distance and twice the slack), and they
/// hold every pair within exactly that distance.
#[test]
fn candidates_are_the_pairs_whose_boxes_meet() {
    let (sc, x0, n) = two_sheets();
    let (mass, pinned) = (vec![1e-3; 2 * n], vec![false; 2 * n]);
    let (h, w_inv) = (1.0 / 120.0, vec![1e3; 2 * n]);
    let slack = CANDIDATE_SLACK * sc.max_distance;
    let mut broad = BroadPhase::default();
    let (mut x, mut v) = (x0.clone(), vec![Vec3::zeros(); 2 * n]);
    let (mut points, mut pairs) = (0, 0);
    for step in 0..12 {
        let x_old = x.clone();
        throw(&mut x, &mut v, n, step, h);
        let trees = Trees::build(&sc, &x_old, &x);
        let taken = sc.candidates(&x_old, &x, &trees, &w_inv);
        let vertex_triangle: Vec<(u32, u32)> = (0..2 * n as u32)
            .flat_map(|i| (0..sc.triangles.len() as u32).map(move |t| (i, t)))
            .filter(|&(i, t)| {
                let triangle = &sc.triangles[t as usize];
                let query = sc.vertex_box(i as usize, &x_old, &x, 1.0).loosened(2.0 * slack * (1.0 + 1e-6));
                !triangle.contains(&i) && query.intersects(&swept_box(triangle, [&x_old, &x], 0.0))
            })
            .collect();
        assert_eq!(taken.points, vertex_triangle, "step {step}");
        assert_eq!(taken.pairs, meeting_edge_pairs(&sc, &x_old, &x), "step {step}");
        let within = |(e, f): &(u32, u32)| {
            let reach = sc.max_distance + 2.0 * slack;
            let (a, b) = (sc.edges[*e as usize], sc.edges[*f as usize]);
            swept_box(&a, [&x_old, &x], reach).intersects(&swept_box(&b, [&x_old, &x], 0.0))
        };
        let all: Vec<(u32, u32)> = (0..sc.edges.len() as u32)
            .flat_map(|e| (e + 1..sc.edges.len() as u32).map(move |f| (e, f)))
            .filter(|&(e, f)| !share_a_vertex(sc.edges[e as usize], sc.edges[f as usize]) && within(&(e, f)))
            .collect();
        assert!(all.iter().all(|p| taken.pairs.binary_search(p).is_ok()), "step {step}");
        (points, pairs) = (points + taken.points.len(), pairs + taken.pairs.len());
        sc.project(&mut ContactStep::new(&x_old, &x), &mut x, &mut v, (&mass, &pinned), h, &mut broad);
    }
    assert!(points > 1000 && pairs > 1000, "{points} vertex–triangle and {pairs} edge candidates");
}

/// The pairs of edges of `sc` sharing no vertex whose swept boxes from `x_old` to `x`, each
/// grown by the edges' margin, meet, in order: what the edge candidates must be.
fn meeting_edge_pairs(sc: &SelfCollision, x_old: &[Vec3], x: &[Vec3]) -> Vec<(u32, u32)> {
    let grown = sc.margins()[1];
    (0..sc.edges.len() as u32)
        .flat_map(|e| (e + 1..sc.edges.len() as u32).map(move |f| (e, f)))
        .filter(|&(e, f)| {
            let (a, b) = (sc.edges[e as usize], sc.edges[f as usize]);
            !share_a_vertex(a, b)
                && swept_box(&a, [x_old, x], grown).intersects(&swept_box(&b, [x_old, x], grown))
        })
        .collect()
}

/// One to four separate triangles stacked closer than their distance or far apart: the
/// edges' trees have one to six leaves, where parry's `leaf_pairs` yields pairs of leaves
/// it did not check, and the edge candidates are still the pairs whose boxes meet, no more.
#[test]
fn the_edge_candidates_of_a_few_triangles_are_the_pairs_whose_boxes_meet() {
    let corners = [Vec3::zeros(), Vec3::new(0.1, 0.0, 0.0), Vec3::new(0.0, 0.1, 0.0)];
    let mut meeting = 0;
    for count in 1..=4u32 {
        for gap in [0.002, 0.05, 1.0] {
            let x: Vec<Vec3> =
                (0..count).flat_map(|k| corners.map(|c| c + Vec3::new(0.0, 0.0, gap * k as Real))).collect();
            let triangles: Vec<[u32; 3]> = (0..count).map(|k| [3 * k, 3 * k + 1, 3 * k + 2]).collect();
            let sc = SelfCollision::new(&triangles, &vec![0.004; x.len()], &x).unwrap();
            let x_old: Vec<Vec3> = x.iter().map(|p| p - Vec3::new(0.0, 0.0, 0.001)).collect();
            let trees = Trees::build(&sc, &x_old, &x);
            let taken = sc.candidates(&x_old, &x, &trees, &vec![1.0; x.len()]);
            let expected = meeting_edge_pairs(&sc, &x_old, &x);
            assert_eq!(taken.pairs, expected, "{count} triangles {gap} m apart");
            meeting += expected.len();
        }
    }
    assert!(meeting > 0, "no pair of edges meets");
}

/// Two sheets, the upper about 3 mm above the lower, at 6 mm, carried 3 mm sideways and 1
/// mm down in each of two steps, every vertex also moved up to 1.9 mm on each axis in the
/// second and a patch of 10 upper vertices lifted 9 mm (the slack is 2.1 mm): the
/// candidates taken in the first step hold but for the patch, whose vertices are the
/// strays, and taken again for them alone they are exactly the pairs whose boxes meet with
/// every vertex at its candidates' box (the strays' now, less the common move), as a take
/// finds them (`candidates_are_the_pairs_whose_boxes_meet`); they hold for the second step
/// and have every pair whose boxes meet in it. With a third of the upper sheet lifted the
/// candidates are taken afresh.
#[test]
fn candidates_taken_again_for_the_strays_are_the_pairs_whose_boxes_meet() {
    // two 16 × 16 sheets of 1 cm, the upper rippled about 3 mm above the lower, at 6 mm
    let (sc, x0, n) =
        sheets(16, 0.01, 0.006, |p| p + Vec3::new(0.002, 0.003, 0.003 + 0.002 * (60.0 * p.x).sin()));
    let w_inv = vec![1e3; 2 * n];
    // each step moves every vertex by `motion`, so each box moves by it
    let motion = Vec3::new(0.003, -0.003, -0.001);
    let x1: Vec<Vec3> = x0.iter().map(|p| p + motion).collect();
    let taken = sc.candidates(&x0, &x1, &Trees::build(&sc, &x0, &x1), &w_inv);
    // and in the second, each vertex up to 1.9 mm more on each axis
    let jitter = |i: usize| Vec3::from_fn(|a, _| 0.0019 * ((7 * i + 3 * a) as Real).sin());
    let carry = |lifted: &[usize]| -> Vec<Vec3> {
        let mut x2: Vec<Vec3> = x1.iter().enumerate().map(|(i, p)| p + motion + jitter(i)).collect();
        lifted.iter().for_each(|&i| x2[i].z += 0.009);
        x2
    };
    let patch: Vec<usize> = (0..10).map(|k| n + 100 + k).collect();
    let x2 = carry(&patch);
    assert!(!taken.hold(&x1, &x2));
    let (shift, strays) = taken.strays(&x1, &x2).expect("10 of 512 vertices stray");
    let stray_list: Vec<usize> = (0..2 * n).filter(|&i| strays[i]).collect();
    assert_eq!(stray_list, patch);
    assert!((shift - motion).amax() < 0.0019, "{shift}");
    let trees = Trees::build(&sc, &x1, &x2);
    let retaken = sc.retake(taken, (shift, strays), &x1, &x2, &trees, &w_inv);
    assert!(retaken.hold(&x1, &x2));
    // the pairs whose candidates' boxes meet, grown as a take grows them
    let boxes = &retaken.boxes;
    let at = |item: &[u32], grow: Real| {
        let lo =
            item.iter().map(|&v| boxes[v as usize].0).fold(Vec3::repeat(Real::INFINITY), |a, b| a.inf(&b));
        let hi =
            item.iter().map(|&v| boxes[v as usize].1).fold(Vec3::repeat(-Real::INFINITY), |a, b| a.sup(&b));
        Aabb::new(lo.into(), hi.into()).loosened(grow)
    };
    let grow = 2.0 * CANDIDATE_SLACK * sc.max_distance * (1.0 + 1e-6);
    let points: Vec<(u32, u32)> = (0..2 * n as u32)
        .flat_map(|i| (0..sc.triangles.len() as u32).map(move |t| (i, t)))
        .filter(|&(i, t)| {
            let triangle = &sc.triangles[t as usize];
            !triangle.contains(&i) && at(&[i], sc.distance[i as usize] + grow).intersects(&at(triangle, 0.0))
        })
        .collect();
    let margin = sc.margins()[1];
    let pairs: Vec<(u32, u32)> = (0..sc.edges.len() as u32)
        .flat_map(|e| (e + 1..sc.edges.len() as u32).map(move |f| (e, f)))
        .filter(|&(e, f)| {
            let (a, b) = (sc.edges[e as usize], sc.edges[f as usize]);
            !share_a_vertex(a, b) && at(&a, margin).intersects(&at(&b, margin))
        })
        .collect();
    let differ = |a: &[(u32, u32)], b: &[(u32, u32)]| -> Vec<(u32, u32)> {
        let missing = b.iter().filter(|p| a.binary_search(p).is_err());
        missing.chain(a.iter().filter(|p| b.binary_search(p).is_err())).take(8).copied().collect()
    };
    assert!(retaken.points == points, "vertex–triangle pairs differ: {:?}", differ(&retaken.points, &points));
    assert!(retaken.pairs == pairs, "edge pairs differ: {:?}", differ(&retaken.pairs, &pairs));
    assert!(points.iter().any(|&(i, _)| stray_list.contains(&(i as usize))), "no stray pairs");
    // every pair a detection in the second step tests
    let now = Boxes::new(&sc, [&x1, &x2], None);
    let meet = (0..2 * n as u32).flat_map(|i| (0..sc.triangles.len() as u32).map(move |t| (i, t))).filter(
        |&(i, t)| {
            !sc.triangles[t as usize].contains(&i)
                && now.vertices[i as usize].intersects(&now.triangles[t as usize])
        },
    );
    assert!(meet.into_iter().all(|p| retaken.points.binary_search(&p).is_ok()));
    let near = meeting_edge_pairs(&sc, &x1, &x2)
        .into_iter()
        .filter(|&(e, f)| now.edges[e as usize].intersects(&now.edges[f as usize].loosened(sc.max_distance)));
    assert!(near.into_iter().all(|p| retaken.pairs.binary_search(&p).is_ok()));
    // a third of the upper sheet lifted: taken afresh
    let taken = sc.candidates(&x0, &x1, &Trees::build(&sc, &x0, &x1), &w_inv);
    let third: Vec<usize> = (n..n + n / 3).collect();
    assert!(taken.strays(&x1, &carry(&third)).is_none());
}

/// [`fall_together`], with a patch of 8 upper vertices also thrown up 5 mm (3.6 times the
/// slack) in two steps and down in the next two, in turn: the candidates are taken again
/// for the patch alone every other step (a box that shrinks within its candidates' box
/// needs none), and the steps find what they find with a fresh broad phase and fresh
/// candidates at every detection, bit for bit.
#[test]
fn candidates_taken_again_for_the_strays_find_what_fresh_ones_find() {
    let (steps, n) = (16, two_sheets().2);
    let patch = n + 60..n + 68;
    let lift = |step: usize, i: usize| match (patch.contains(&i), step % 4 < 2) {
        (false, _) => 0.0,
        (true, up) => {
            if up {
                0.005
            } else {
                -0.005
            }
        }
    };
    let (kept, fresh) = (fall_together(steps, true, lift), fall_together(steps, false, lift));
    assert!(kept.2 > 50, "the sheets barely met: {} vertex moves", kept.2);
    assert_eq!((&kept.0, &kept.1, kept.2), (&fresh.0, &fresh.1, fresh.2));
    assert_eq!(fresh.3[1], 0);
    assert!(kept.3[1] * 3 >= steps, "candidates taken again {} times in {steps} steps", kept.3[1]);
}

/// The same two sheets, with a floor under the lower one that pushes its vertices back up
/// after the contacts, and the step projected again where it pushed (as `step.rs` does
/// after the obstacles): detections that start from the step's candidates and its last
/// detection, testing again only the pairs with a vertex that moved since, find what
/// detections from scratch find, bit for bit (a sixth of them take that shortcut here; the
/// others follow moves beyond the candidates' slack: the floor's pushes, impact zones).
#[test]
fn detections_that_retest_only_what_moved_find_what_detections_from_scratch_find() {
    let (sc, x0, n) = two_sheets();
    let (mass, pinned) = (vec![1e-3; 2 * n], vec![false; 2 * n]);
    let (h, floor) = (1.0 / 120.0, -0.01);
    let run = |reuse: bool| {
        let mut broad = BroadPhase::default();
        let (mut x, mut v) = (x0.clone(), vec![Vec3::zeros(); 2 * n]);
        let (mut moved, mut retests, mut detections) = (0, 0, 0);
        for step in 0..24 {
            let x_old = x.clone();
            throw(&mut x, &mut v, n, step, h);
            let mut contacts = ContactStep::new(&x_old, &x);
            contacts.reuse = reuse;
            moved += sc.project(&mut contacts, &mut x, &mut v, (&mass, &pinned), h, &mut broad);
            let mut pushed = false;
            for (x, v) in x.iter_mut().zip(&mut v) {
                if x.z < floor {
                    (x.z, v.z, pushed) = (floor, 0.0, true);
                }
            }
            if pushed {
                moved += sc.project(&mut contacts, &mut x, &mut v, (&mass, &pinned), h, &mut broad);
            }
            (retests, detections) = (retests + contacts.retests, detections + contacts.detections);
        }
        (x, v, moved, retests, detections)
    };
    let (reused, fresh) = (run(true), run(false));
    assert!(reused.2 > 100, "the sheets barely met: {} vertex moves", reused.2);
    assert_eq!((&reused.0, &reused.1, reused.2), (&fresh.0, &fresh.1, fresh.2));
    assert_eq!((fresh.3, fresh.4), (0, reused.4), "as many detections, none from the last");
    assert!(reused.3 * 10 > reused.4, "{} of {} detections retested what moved", reused.3, reused.4);
}

/// The same with friction between layers (20/s): the friction's faces found from the
/// step's candidates (taken with its reach) and its last detection's boxes, where they
/// hold, are those the triangles' tree finds, bit for bit.
#[test]
fn friction_from_the_candidates_finds_what_the_tree_finds() {
    let (frictionless, x0, n) = two_sheets();
    let sc = frictionless.clone().with_friction(&vec![20.0; 2 * n]).unwrap();
    let (mass, pinned) = (vec![1e-3; 2 * n], vec![false; 2 * n]);
    let h = 1.0 / 120.0;
    let run = |sc: &SelfCollision, reuse: bool| {
        let mut broad = BroadPhase::default();
        let (mut x, mut v) = (x0.clone(), vec![Vec3::zeros(); 2 * n]);
        let mut known = 0;
        for step in 0..24 {
            let x_old = x.clone();
            throw(&mut x, &mut v, n, step, h);
            let mut contacts = ContactStep::new(&x_old, &x);
            contacts.reuse = reuse;
            sc.project(&mut contacts, &mut x, &mut v, (&mass, &pinned), h, &mut broad);
            known += contacts.rubbed_known as usize;
        }
        (x, v, known)
    };
    let (reused, fresh, free) = (run(&sc, true), run(&sc, false), run(&frictionless, true));
    assert_eq!((&reused.0, &reused.1), (&fresh.0, &fresh.1));
    assert!(fresh.2 == 0 && reused.2 >= 6, "faces from the candidates in {} of 24 steps", reused.2);
    let slowed = reused.1.iter().zip(&free.1).filter(|(a, b)| a != b).count();
    assert!(slowed > n / 4, "the friction changed {slowed} of {} velocities", 2 * n);
}

/// With friction between layers, the candidates hold every face the friction looks for
/// (within [`FRICTION_REACH`] of a vertex's distance) wherever they hold: two flat sheets
/// 10.5 mm apart at a 6 mm distance (slack 2.1 mm), the upper sheet then lowered and the
/// lower raised by nearly the slack. The upper vertices' friction queries now meet the
/// lower triangles, and each such pair is a candidate; taken for the distance alone (no
/// friction) the candidates miss them, though they hold as well.
#[test]
fn candidates_with_friction_hold_the_faces_the_friction_looks_for() {
    let (frictionless, x0, n) = sheets(8, 0.01, 0.006, |p| p + Vec3::new(0.0, 0.0, 0.0105));
    let rubbing = frictionless.clone().with_friction(&vec![5.0; 2 * n]).unwrap();
    let w_inv = vec![1e3; 2 * n];
    let step = 0.99 * CANDIDATE_SLACK * 0.006;
    let x1: Vec<Vec3> =
        x0.iter().enumerate().map(|(i, p)| p + Vec3::z() * if i < n { step } else { -step }).collect();
    let faces = |sc: &SelfCollision| -> Vec<(u32, u32)> {
        let query = |i: u32| sc.vertex_box(i as usize, &x0, &x1, FRICTION_REACH);
        let face = |t: u32| swept_box(&sc.triangles[t as usize], [&x0, &x1], sc.margins()[0]);
        (n as u32..2 * n as u32)
            .flat_map(|i| (0..sc.triangles.len() as u32 / 2).map(move |t| (i, t)))
            .filter(|&(i, t)| query(i).intersects(&face(t)))
            .collect()
    };
    let missing = |sc: &SelfCollision| {
        let taken = sc.candidates(&x0, &x0, &Trees::build(sc, &x0, &x0), &w_inv);
        assert!(taken.hold(&x0, &x1));
        let faces = faces(sc);
        assert!(faces.len() > 50, "{} faces within reach", faces.len());
        faces.iter().filter(|p| taken.points.binary_search(p).is_err()).count()
    };
    assert_eq!(missing(&rubbing), 0);
    assert!(missing(&frictionless) > 50);
}

/// Start and end positions of a step, from `[start xyz, end xyz]` rows.
fn start_and_end<const K: usize>(rows: [[Real; 6]; K]) -> ([Vec3; K], [Vec3; K]) {
    (rows.map(|r| Vec3::new(r[0], r[1], r[2])), rows.map(|r| Vec3::new(r[3], r[4], r[5])))
}

/// Two pairs from a pinned curtain folding fast (±150 µC at the add-on's most steps,
/// `tests/contacts.rs`), each on the side of the other it started on at the end of the
/// step, having changed sides twice in it: once beside the other, once through it. Before,
/// each was taken for a contact on the side it had passed to (`C` = −0.30 and −0.008 mm),
/// which the passes then kept, and the curtain tangled. Now each is a contact on the far
/// side of where it came from (`C < −d`).
#[test]
fn a_pair_that_changed_sides_twice_in_a_step_passing_through_once_is_crossed() {
    let d = 0.015;
    // edges (193, 234) and (194, 235) at step 53: their lines cross beside the segments at
    // 0.03 of the step, and the segments meet at 0.63
    let (e0, e1) = start_and_end([
        [
            0.08194354345206263,
            0.009060713312295023,
            1.0130268954787789,
            0.11702004203162414,
            0.004906852624723304,
            1.0267931518647377,
        ],
        [
            0.08418113924448974,
            0.007867503875426273,
            1.086315749263694,
            0.08586975751159753,
            -0.0028511102386516037,
            1.1178600912246808,
        ],
        [
            0.1025214834159211,
            0.0003595606776277793,
            1.0056326018799515,
            0.08221831751573855,
            -0.01001262755089903,
            1.00940462652767,
        ],
        [
            0.11055103745935382,
            -0.005677797224881421,
            1.0654450374159334,
            0.11182501593886365,
            0.03020369612445469,
            1.0721295216700901,
        ],
    ]);
    assert!(!apart(&e0, &e1, d));
    let moves: [Vec3; 4] = std::array::from_fn(|k| e1[k] - e0[k]);
    let (n, s, t) = edge_edge(&e0, &e1, &moves, d, true).expect("a contact");
    let gap = n.dot(&(e1[0] * (1.0 - s) + e1[1] * s - e1[2] * (1.0 - t) - e1[3] * t)) - d;
    assert!(gap < -d, "C = {gap}");
    // vertex 117 and triangle (75, 76, 116) at step 72: it is level with the triangle's
    // plane beside it at 0.02 of the step, and passes through it at 0.52
    let (x_old, x) = start_and_end([
        [
            0.0505786298113548,
            0.047136993605583974,
            1.0427960074441547,
            0.011571694274460318,
            0.06162928941283256,
            1.045552381236166,
        ],
        [
            0.009875237921152644,
            0.04286630439282681,
            1.0304459219280282,
            0.011207804893337555,
            0.02935143913124034,
            1.0249006328815862,
        ],
        [
            0.017956060874388207,
            0.05237313704597983,
            0.9953171974072693,
            0.020333048287720142,
            0.08567936872917511,
            1.0102499410735242,
        ],
        [
            0.05092433387096628,
            0.036055726767252695,
            1.085891859138105,
            0.05162070366518612,
            0.05471876470403702,
            1.1076022529299754,
        ],
    ]);
    let sc = SelfCollision::new(&[[1, 2, 3]], &[d, 0.0, 0.0, 0.0], &x_old).unwrap();
    let swept = swept_box(&[1, 2, 3], [&x_old, &x], 0.0);
    let contact = sc.vertex_triangle(0, 0, [&x_old, &x], &x, 1.0, Some(&swept)).expect("a contact");
    assert!(contact.gap(&x) < -d, "C = {}", contact.gap(&x));
}

#[test]
fn a_vertex_passing_through_a_triangle_is_put_back_on_its_side() {
    let x_old = [Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::new(0.2, 0.2, 0.1)];
    let mut x = x_old;
    x[3].z = -0.3;
    let mut v = [Vec3::zeros(), Vec3::zeros(), Vec3::zeros(), Vec3::new(0.0, 0.0, -4.0)];
    let sc = SelfCollision::new(&[[0, 1, 2]], &[0.0, 0.0, 0.0, 0.05], &x_old).unwrap();
    let pinned = [true, true, true, false];
    assert_eq!(
        sc.project(
            &mut ContactStep::new(&x_old, &x),
            &mut x,
            &mut v,
            (&[1.0; 4], &pinned),
            0.1,
            &mut BroadPhase::default()
        ),
        1
    );
    assert!((x[3] - Vec3::new(0.2, 0.2, 0.05)).norm() < 1e-12, "{:?}", x[3]);
    // v = −4 + Δx/h = −4 + 3.5 = −0.5: what (x − x_old)/h says
    assert!((v[3] - Vec3::new(0.0, 0.0, -0.5)).norm() < 1e-12, "{:?}", v[3]);
    // the triangle's corners are pinned and did not move
    assert_eq!(&x[..3], &x_old[..3]);
}

#[test]
fn a_free_triangle_shares_the_push_by_mass_and_momentum_is_kept() {
    let x_old = [Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::new(0.2, 0.2, 0.1)];
    let mut x = x_old;
    x[3].z = -0.3;
    let mut v = [Vec3::zeros(), Vec3::zeros(), Vec3::zeros(), Vec3::new(0.0, 0.0, -4.0)];
    let mass = [0.5, 1.0, 2.0, 0.3];
    let momentum = |v: &[Vec3]| v.iter().zip(&mass).map(|(v, m)| v * *m).sum::<Vec3>();
    let before = momentum(&v);
    let sc = SelfCollision::new(&[[0, 1, 2]], &[0.0, 0.0, 0.0, 0.05], &x_old).unwrap();
    sc.project(
        &mut ContactStep::new(&x_old, &x),
        &mut x,
        &mut v,
        (&mass, &[false; 4]),
        0.1,
        &mut BroadPhase::default(),
    );
    assert!((momentum(&v) - before).norm() < 1e-12, "{:?} vs {before:?}", momentum(&v));
    // the vertex ends d above the plane of the (moved) triangle, on its starting side
    let n = triangle_normal(&x[0], &x[1], &x[2]).unwrap();
    assert!(((x[3] - x[0]).dot(&n) - 0.05).abs() < 0.05 * TOLERANCE, "{}", (x[3] - x[0]).dot(&n));
    assert!(x[0].z < 0.0 && x[1].z < 0.0 && x[2].z < 0.0, "the triangle was pushed down: {x:?}");
}
