//! Self-collision (issue 18, part 2): a cloth folded into a V whose halves carry opposite
//! charges, so that Coulomb pulls them together. With self-collision on, no edge passes through a triangle
//! at any step; with it off, the same scene does interpenetrate (so the check means something).

mod common;

use cmsc_core::{shapes, springs_from_triangles, FieldMethod, SimParams, Softening, System, Vec3};
use common::crossing::first_crossing;

const DISTANCE: f64 = 0.004;

struct Scene {
    sys: System,
    triangles: Vec<[u32; 3]>,
    edges: Vec<[u32; 2]>,
}

/// One cloth of 21 × 10 vertices, 2 cm apart, folded along its middle column (pinned, along
/// `y`) into a V whose halves rise at 30° on either side of the vertical: the left half carries
/// `+q` per vertex (C), the right half `−q`, so Coulomb pulls the halves together like a closing
/// book; step `h` (s).
fn v_fold(h: f64, q: f64) -> Scene {
    let (theta, spacing, fold) = (30f64.to_radians(), 0.02, 10u32);
    let sheet = shapes::grid(2 * fold + 1, 10, spacing);
    let (mut x, mut pins, mut charges) = (vec![], vec![], vec![]);
    for (k, p) in sheet.positions.iter().enumerate() {
        let i = k as u32 % (2 * fold + 1);
        let u = p.x - fold as f64 * spacing; // signed distance from the fold
        x.push(Vec3::new(u.signum() * u.abs() * theta.sin(), p.y, u.abs() * theta.cos()));
        if i == fold {
            pins.push(k as u32);
        }
        charges.push(-q * u.signum());
    }
    let triangles = sheet.triangles;
    let springs = springs_from_triangles(x.len(), &triangles).unwrap();
    let (ends, k) = springs.with_stiffness(20.0, 0.2);
    let params = SimParams {
        time_step: h,
        gravity: Vec3::zeros(),
        coulomb: FieldMethod::Direct,
        softening: Softening::Length(0.003),
        relative_damping: 1.0,
        ..SimParams::default()
    };
    let mut sys = System::new(&x, &vec![1e-3; x.len()], &ends, &k, params).unwrap();
    sys.set_charges(&charges).unwrap();
    sys.set_pins(&pins).unwrap();
    Scene { sys, triangles, edges: springs.structural }
}

/// Steps the scene for 2 s; returns the first step at which an edge crossed a triangle.
fn run(self_collision: bool, h: f64, q: f64) -> Option<usize> {
    let Scene { mut sys, triangles, edges } = v_fold(h, q);
    if self_collision {
        let d = vec![DISTANCE; sys.n_vertices()];
        sys.set_self_collision(&triangles, &d).unwrap();
    }
    assert_eq!(first_crossing(sys.positions(), &edges, &triangles), None);
    // the free edge of the left half: how far it is from the middle plane
    let gap =
        |sys: &System| sys.positions().iter().step_by(21).map(|p| p.x.abs()).fold(f64::INFINITY, f64::min);
    let mut closest = f64::INFINITY;
    for step in 0..(2.0 / h).round() as usize {
        let before = sys.positions().to_vec();
        sys.step().unwrap();
        closest = closest.min(gap(&sys));
        if let Some((e, t)) = first_crossing(sys.positions(), &edges, &triangles) {
            eprintln!("step {step}: edge {e:?} passes through triangle {t:?}");
            for (name, x) in [("before", &before[..]), ("after", sys.positions())] {
                let [a, b, c] = t.map(|i| x[i as usize]);
                let n = (b - a).cross(&(c - a)).normalize();
                for v in e {
                    let p = x[v as usize];
                    let h = (p - a).dot(&n);
                    let q = p - n * h;
                    let w = |u: Vec3, v: Vec3, o: Vec3| (v - u).cross(&(o - u)).dot(&n);
                    let bc = [w(b, c, q), w(c, a, q), w(a, b, q)];
                    eprintln!(
                        "  {name} v{v}: height {h:.5} bary-signs {:?} edge-len {:.4}",
                        bc.map(|z| z.signum()),
                        (x[e[0] as usize] - x[e[1] as usize]).norm()
                    );
                }
            }
            return Some(step);
        }
    }
    // the sheets did meet: some vertex reached the middle plane
    assert!(closest < 3.0 * DISTANCE, "the halves never met (closest {closest} m from the middle)");
    None
}

#[test]
fn with_self_collision_no_edge_passes_through_a_triangle_at_any_step() {
    assert_eq!(run(true, 1.0 / 240.0, 5e-9), None);
}

/// A harsher version of the scene: twice the step and twice the charge. With the linearised
/// crossing tests alone an edge passed through a triangle near the pinned fold at step 12; the
/// swept tests (collision::SelfCollision) hold it.
#[test]
fn the_fold_closing_twice_as_hard_at_twice_the_step_does_not_pass_through_either() {
    assert_eq!(run(true, 1.0 / 120.0, 10e-9), None);
}

#[test]
fn without_self_collision_the_same_halves_interpenetrate() {
    assert!(run(false, 1.0 / 240.0, 5e-9).is_some());
}

#[test]
fn self_collision_input_is_validated_and_rejections_change_nothing() {
    let Scene { mut sys, triangles, .. } = v_fold(1.0 / 240.0, 5e-9);
    let n = sys.n_vertices();
    sys.set_self_collision(&triangles, &vec![DISTANCE; n]).unwrap();
    type Case<'a> = (Vec<[u32; 3]>, Vec<f64>, &'a str);
    let cases: Vec<Case> = vec![
        (vec![[0, 1, n as u32]], vec![0.0; n], "out of range"),
        (vec![[0, 1, 1]], vec![0.0; n], "degenerate"),
        (vec![[0, 1, 2]], vec![0.0; n], "degenerate"), // three vertices of one row: collinear
        (triangles.clone(), vec![0.0; n - 1], "distance"),
        (triangles.clone(), [vec![-1.0], vec![0.0; n - 1]].concat(), "distance"),
        (triangles.clone(), [vec![f64::NAN], vec![0.0; n - 1]].concat(), "distance"),
    ];
    for (i, (t, d, needle)) in cases.into_iter().enumerate() {
        let err = sys.set_self_collision(&t, &d).unwrap_err().to_string();
        assert!(err.contains(needle), "case {i}: {err}");
        let sc = sys.model().self_collision().expect("still on");
        assert_eq!((sc.triangles().len(), sc.distance()[0]), (triangles.len(), DISTANCE), "case {i}");
    }
    sys.set_self_collision(&[], &[]).unwrap();
    assert!(sys.model().self_collision().is_none());
}
