//! Edits that change `M + h²L` (masses, stiffness, time step, pins) take effect: after the edit,
//! a system steps exactly like one built from scratch with the new values.

use cmsc_core::{shapes, springs_from_triangles, SimParams, System, Vec3};

fn build(mass: f64, k_scale: f64, h: f64, pins: &[u32]) -> System {
    let mesh = shapes::grid(6, 6, 0.1);
    let n = mesh.positions.len();
    let (ends, k) = springs_from_triangles(n, &mesh.triangles).unwrap().with_stiffness(100.0, 10.0);
    let k: Vec<f64> = k.iter().map(|k| k * k_scale).collect();
    let params = SimParams { time_step: h, ..SimParams::default() };
    let mut sys = System::new(&mesh.positions, &vec![mass; n], &ends, &k, params).unwrap();
    sys.set_charges(&(0..n).map(|i| 1e-8 * (i % 4) as f64).collect::<Vec<_>>()).unwrap();
    sys.set_pins(pins).unwrap();
    sys
}

/// Steps `a` and `b` from the same state and requires identical results.
fn assert_same_motion(a: &mut System, b: &mut System) {
    let v: Vec<Vec3> = (0..a.n_vertices()).map(|i| Vec3::new(0.1 * (i % 3) as f64, 0.0, 0.2)).collect();
    for s in [&mut *a, &mut *b] {
        s.set_velocities(&v).unwrap();
    }
    a.step_n(5).unwrap();
    b.step_n(5).unwrap();
    for (p, q) in a.positions().iter().zip(b.positions()) {
        assert!((p - q).norm() < 1e-12, "{p:?} vs {q:?}");
    }
}

#[test]
fn changed_masses_stiffness_step_and_pins_are_refactored() {
    let mut edited = build(0.01, 1.0, 0.01, &[]);
    edited.step().unwrap(); // factor with the old values first
    let reset = build(0.01, 1.0, 0.01, &[]).positions().to_vec();

    edited.set_masses(&vec![0.05; 36]).unwrap();
    edited.set_positions(&reset).unwrap();
    assert_same_motion(&mut edited, &mut build(0.05, 1.0, 0.01, &[]));

    let k: Vec<f64> = edited.springs().stiffness().iter().map(|k| k * 3.0).collect();
    edited.set_stiffness(&k).unwrap();
    edited.set_positions(&reset).unwrap();
    assert_same_motion(&mut edited, &mut build(0.05, 3.0, 0.01, &[]));

    let mut p = edited.params().clone();
    p.time_step = 0.004;
    edited.set_params(p).unwrap();
    edited.set_positions(&reset).unwrap();
    assert_same_motion(&mut edited, &mut build(0.05, 3.0, 0.004, &[]));

    edited.set_positions(&reset).unwrap();
    edited.set_pins(&[0, 5]).unwrap();
    assert_same_motion(&mut edited, &mut build(0.05, 3.0, 0.004, &[0, 5]));
}
