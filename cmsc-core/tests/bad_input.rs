//! Every bad input is a typed error that names the argument; nothing panics; a rejected call or
//! a diverging step leaves the system exactly as it was.

use cmsc_core::{
    shapes, springs_from_triangles, Error, FieldMethod, Integrator, SimParams, Softening, System, Vec3,
};

fn two() -> [Vec3; 2] {
    [Vec3::zeros(), Vec3::new(1.0, 0.0, 0.0)]
}

fn create(x: &[Vec3], m: &[f64], s: &[[u32; 2]], k: &[f64], p: SimParams) -> Result<System, Error> {
    System::new(x, m, s, k, p)
}

fn arg_name(e: Error) -> &'static str {
    match e {
        Error::InvalidArgument { name, .. } => name,
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

#[test]
fn bad_meshes_are_rejected_with_the_argument_named() {
    let p = SimParams::default;
    let nan = Vec3::new(f64::NAN, 0.0, 0.0);
    let inf = Vec3::new(0.0, f64::INFINITY, 0.0);
    let cases: Vec<(Result<System, Error>, &str)> = vec![
        (create(&[], &[], &[], &[], p()), "positions"),
        (create(&[Vec3::zeros(), nan], &[1.0; 2], &[], &[], p()), "positions"),
        (create(&[Vec3::zeros(), inf], &[1.0; 2], &[], &[], p()), "positions"),
        (create(&two(), &[1.0], &[], &[], p()), "masses"),
        (create(&two(), &[1.0, 0.0], &[], &[], p()), "masses"),
        (create(&two(), &[1.0, -1.0], &[], &[], p()), "masses"),
        (create(&two(), &[1.0, f64::NAN], &[], &[], p()), "masses"),
        (create(&two(), &[1.0; 2], &[[0, 2]], &[1.0], p()), "springs"),
        (create(&two(), &[1.0; 2], &[[1, 1]], &[1.0], p()), "springs"),
        (create(&two(), &[1.0; 2], &[[0, 1]], &[], p()), "stiffness"),
        (create(&two(), &[1.0; 2], &[[0, 1]], &[-1.0], p()), "stiffness"),
        (create(&two(), &[1.0; 2], &[[0, 1]], &[f64::NAN], p()), "stiffness"),
        (create(&[Vec3::zeros(); 2], &[1.0; 2], &[[0, 1]], &[1.0], p()), "springs"),
        // finite but absurd: h² k / m ≈ 7e19 makes M + h²L singular in f64 (found by fuzzing)
        (create(&two(), &[1.0; 2], &[[0, 1]], &[1e24], p()), "stiffness"),
        (create(&two(), &[1.0; 2], &[[0, 1]], &[100.0], SimParams { time_step: 1e8, ..p() }), "stiffness"),
    ];
    for (i, (result, name)) in cases.into_iter().enumerate() {
        assert_eq!(arg_name(result.err().unwrap_or_else(|| panic!("case {i} accepted"))), name, "case {i}");
    }
}

#[test]
fn a_spring_too_long_for_f64_is_not_said_to_have_coinciding_ends() {
    // |x_a − x_b| overflows to infinity: "vertices 0 and 1 coincide" named the opposite
    let far = [Vec3::new(-1e200, 0.0, 0.0), Vec3::new(1e200, 0.0, 0.0)];
    let text = create(&far, &[1.0; 2], &[[0, 1]], &[1.0], SimParams::default()).err().unwrap().to_string();
    assert!(text.contains("rest length inf between vertices 0 and 1 is not a finite number"), "{text}");
    let same = [Vec3::zeros(); 2];
    let text = create(&same, &[1.0; 2], &[[0, 1]], &[1.0], SimParams::default()).err().unwrap().to_string();
    assert!(text.contains("zero rest length: vertices 0 and 1 coincide"), "{text}");
}

#[test]
fn absurd_parameters_are_rejected() {
    let d = SimParams::default;
    let cases = [
        (SimParams { time_step: 0.0, ..d() }, "time_step"),
        (SimParams { time_step: -0.1, ..d() }, "time_step"),
        (SimParams { time_step: f64::NAN, ..d() }, "time_step"),
        (SimParams { time_step: f64::INFINITY, ..d() }, "time_step"),
        (SimParams { iterations: 0, ..d() }, "iterations"),
        (SimParams { iterations: 1_000_000_000, ..d() }, "iterations"),
        (SimParams { grid_points: cmsc_core::MAX_GRID_POINTS + 1, ..d() }, "grid_points"),
        (SimParams { damping: 1.5, ..d() }, "damping"),
        (SimParams { damping: f64::NAN, ..d() }, "damping"),
        (SimParams { friction: -0.1, ..d() }, "friction"),
        (SimParams { gravity: Vec3::new(0.0, 0.0, f64::NAN), ..d() }, "gravity"),
        (SimParams { coulomb_constant: f64::INFINITY, ..d() }, "coulomb_constant"),
        (SimParams { coulomb_constant: -1.0, ..d() }, "coulomb_constant"),
        (SimParams { ground_height: Some(f64::NEG_INFINITY), ..d() }, "ground_height"),
        (SimParams { softening: Softening::Length(-1.0), ..d() }, "softening"),
    ];
    let mut sys = create(&two(), &[1.0; 2], &[[0, 1]], &[1.0], d()).unwrap();
    for (params, name) in cases {
        assert_eq!(arg_name(create(&two(), &[1.0; 2], &[], &[], params.clone()).err().unwrap()), name);
        // set_params refuses it too and keeps the old parameters
        assert_eq!(arg_name(sys.set_params(params).unwrap_err()), name);
        assert_eq!(*sys.params(), d());
    }
}

#[test]
fn bad_edits_are_rejected_and_change_nothing() {
    let mut sys = create(&two(), &[1.0; 2], &[[0, 1]], &[1.0], SimParams::default()).unwrap();
    sys.set_charges(&[1e-6, 2e-6]).unwrap();
    sys.step().unwrap();
    let (x, v, q) = (sys.positions().to_vec(), sys.velocities().to_vec(), sys.charges().to_vec());
    let nan = Vec3::new(f64::NAN, 0.0, 0.0);
    let errors = [
        sys.set_charges(&[1.0]).unwrap_err(),
        sys.set_charges(&[1.0, f64::NAN]).unwrap_err(),
        sys.set_positions(&[Vec3::zeros(), nan]).unwrap_err(),
        sys.set_positions(&[Vec3::zeros()]).unwrap_err(),
        sys.set_velocities(&[nan, Vec3::zeros()]).unwrap_err(),
        sys.set_masses(&[1.0, 0.0]).unwrap_err(),
        sys.set_stiffness(&[f64::NAN]).unwrap_err(),
        sys.set_stiffness(&[1e30]).unwrap_err(),
        sys.set_masses(&[1e-30, 1.0]).unwrap_err(),
        sys.set_params(SimParams { time_step: 1e9, ..SimParams::default() }).unwrap_err(),
        sys.set_pins(&[2]).unwrap_err(),
        sys.set_pins(&[1, 1]).unwrap_err(),
        sys.set_pin_targets(&[Vec3::zeros()]).unwrap_err(),
        sys.set_external_charges(&[Vec3::zeros()], &[]).unwrap_err(),
        sys.set_external_charges(&[nan], &[1.0]).unwrap_err(),
        sys.set_uniform_field(nan).unwrap_err(),
        sys.set_sphere_colliders(&[Vec3::zeros()], &[0.0]).unwrap_err(),
        sys.set_sphere_colliders(&[Vec3::zeros()], &[1.0, 2.0]).unwrap_err(),
    ];
    for e in errors {
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
        assert!(!e.to_string().is_empty());
    }
    assert_eq!((sys.positions(), sys.velocities(), sys.charges()), (&x[..], &v[..], &q[..]));
    assert!(sys.pins().is_empty());
    // an out-of-range index is named in the message
    let msg = sys.set_pins(&[0, 7]).unwrap_err().to_string();
    assert!(msg.contains("indices") && msg.contains("index 1") && msg.contains('7'), "{msg}");
}

#[test]
fn degenerate_but_valid_meshes_simulate() {
    // a single vertex falls under gravity exactly as implicit Euler says:
    // v_k = k g h, x_k = g h² k(k+1)/2
    let h = 0.01;
    let mut one =
        create(&[Vec3::zeros()], &[1.0], &[], &[], SimParams { time_step: h, ..SimParams::default() })
            .unwrap();
    one.set_charges(&[1e-6]).unwrap();
    one.step_n(10).unwrap();
    assert!((one.positions()[0].z - (-9.81 * h * h * 55.0)).abs() < 1e-12);
    // a flat cloth, and two coincident charged vertices not joined by a spring
    let x = [Vec3::zeros(), Vec3::new(0.1, 0.0, 0.0), Vec3::new(0.0, 0.1, 0.0), Vec3::new(0.0, 0.1, 0.0)];
    let mut sys =
        create(&x, &[0.01; 4], &[[0, 1], [0, 2], [1, 2], [1, 3]], &[10.0; 4], SimParams::default()).unwrap();
    sys.set_charges(&[1e-7; 4]).unwrap();
    for integrator in [Integrator::Imex, Integrator::Verlet] {
        sys.set_params(SimParams { integrator, time_step: 1e-4, ..SimParams::default() }).unwrap();
        sys.step_n(20).unwrap();
        assert!(sys.positions().iter().all(cmsc_core::is_finite3));
    }
}

#[test]
fn divergence_stops_with_an_error_and_keeps_the_last_good_state() {
    // explicit Verlet far beyond its stability limit (h ω ≈ 3000) blows up within a few steps
    let x = [Vec3::zeros(), Vec3::new(1.0, 0.0, 0.0), Vec3::new(0.0, 1.0, 0.0)];
    let params = SimParams {
        integrator: Integrator::Verlet,
        time_step: 1.0,
        gravity: Vec3::zeros(),
        ..SimParams::default()
    };
    let mut sys = create(&x, &[1e-3; 3], &[[0, 1], [1, 2], [2, 0]], &[1e4; 3], params).unwrap();
    sys.set_velocities(&[Vec3::new(0.0, 0.0, 1.0), Vec3::zeros(), Vec3::zeros()]).unwrap();
    let mut last_good = (sys.positions().to_vec(), sys.velocities().to_vec(), sys.step_count());
    for _ in 0..1000 {
        match sys.step() {
            Ok(()) => last_good = (sys.positions().to_vec(), sys.velocities().to_vec(), sys.step_count()),
            Err(e) => {
                assert!(matches!(e, Error::Diverged { .. }), "{e:?}");
                assert!(e.to_string().contains("smaller time step"), "{e}");
                assert_eq!(sys.positions(), &last_good.0[..]);
                assert_eq!(sys.velocities(), &last_good.1[..]);
                assert_eq!(sys.step_count(), last_good.2);
                // the system is still usable: with sane parameters it steps again
                sys.set_positions(&x).unwrap();
                sys.set_velocities(&[Vec3::zeros(); 3]).unwrap();
                sys.set_params(SimParams { gravity: Vec3::zeros(), ..SimParams::default() }).unwrap();
                sys.step().unwrap();
                return;
            }
        }
    }
    panic!("never diverged");
}

/// A 0.5 m sphere of 1 kg with the add-on's springs (100 / 10 N/m), stepped at 1/120 s (24 fps,
/// 5 substeps), `q` coulombs on every vertex.
fn sphere(q: f64, gravity: Vec3) -> System {
    let mesh = shapes::uv_sphere(8, 12, 0.5);
    let n = mesh.positions.len();
    let (ends, k) = springs_from_triangles(n, &mesh.triangles).unwrap().with_stiffness(100.0, 10.0);
    let params =
        SimParams { time_step: 1.0 / 120.0, gravity, coulomb: FieldMethod::Direct, ..SimParams::default() };
    let mut sys = System::new(&mesh.positions, &vec![1.0 / n as f64; n], &ends, &k, params).unwrap();
    sys.set_charges(&vec![q; n]).unwrap();
    sys
}

#[test]
fn a_runaway_stops_as_diverged_with_the_last_good_state_sane() {
    // 1 C per vertex (the add-on's 1e6 µC): finite numbers, but the sphere is flung 10^10 m
    // in a frame; before the guard the step succeeded
    let mut sys = sphere(1.0, Vec3::zeros());
    let start = sys.positions().to_vec();
    let e = sys.step_n(5).unwrap_err();
    assert!(matches!(e, Error::Diverged { .. }), "{e:?}");
    assert!(e.to_string().contains("runaway"), "{e}");
    let moved = sys.positions().iter().zip(&start).map(|(a, b)| (a - b).norm()).fold(0.0, f64::max);
    assert!(moved < 1.0, "the kept state is the last good one, near the start: {moved} m");
}

#[test]
fn honest_fast_motion_is_not_a_runaway() {
    // free fall for 10 s (98 m/s at the end, 490 m down): any speed, all vertices alike
    let mut sys = sphere(0.0, Vec3::new(0.0, 0.0, -9.81));
    sys.step_n(1200).unwrap();
    let z = sys.positions().iter().map(|p| p.z).sum::<f64>() / sys.positions().len() as f64;
    assert!((z + 0.5 * 9.81 * 100.0).abs() < 10.0, "fell {z} m");
    // a strongly charged sphere (5 µC per vertex, ~0.5 mC in all) bursting apart at ~10 m/s
    let mut sys = sphere(5e-6, Vec3::zeros());
    let mut fastest = 0.0f64;
    for _ in 0..240 {
        sys.step().unwrap();
        fastest = sys.velocities().iter().map(|v| v.norm()).fold(fastest, f64::max);
    }
    assert!(fastest > 5.0, "the burst is fast: {fastest} m/s");
}
