//! Pins, ground, sphere colliders, friction and damping.

mod common;

use cmsc_core::{shapes, springs_from_triangles, Integrator, SimParams, System, Vec3};

fn cloth(n: u32, params: SimParams) -> System {
    let mesh = shapes::grid(n, n, 0.05);
    let count = mesh.positions.len();
    let (ends, k) = springs_from_triangles(count, &mesh.triangles).unwrap().with_stiffness(500.0, 50.0);
    System::new(&mesh.positions, &vec![0.001; count], &ends, &k, params).unwrap()
}

#[test]
fn pins_hold_exactly_and_follow_moving_targets() {
    for integrator in [Integrator::Imex, Integrator::Verlet] {
        let h = if integrator == Integrator::Imex { 1.0 / 120.0 } else { 1e-4 };
        let mut sys = cloth(10, SimParams { time_step: h, integrator, ..SimParams::default() });
        sys.set_charges(&vec![1e-8; 100]).unwrap();
        let pins = [0u32, 9];
        sys.set_pins(&pins).unwrap();
        let held: Vec<Vec3> = pins.iter().map(|&i| sys.positions()[i as usize]).collect();
        for _ in 0..(0.5 / h) as usize {
            sys.step().unwrap();
            for (&i, p) in pins.iter().zip(&held) {
                assert_eq!(sys.positions()[i as usize], *p, "{integrator:?}: pin {i} moved");
            }
        }
        // the free cloth has sagged under gravity
        assert!(sys.positions()[55].z < -1e-3);
        // moving targets are reached exactly at the end of the next step
        let moved = [held[0] + Vec3::new(0.0, 0.0, 0.01), held[1] + Vec3::new(0.01, 0.0, 0.0)];
        sys.set_pin_targets(&moved).unwrap();
        sys.step().unwrap();
        assert_eq!(sys.positions()[0], moved[0]);
        assert_eq!(sys.positions()[9], moved[1]);
        assert!((sys.velocities()[0] - Vec3::new(0.0, 0.0, 0.01 / h)).norm() < 1e-9);
    }
}

#[test]
fn ground_keeps_every_vertex_above_it() {
    let mesh = shapes::uv_sphere(8, 12, 0.2);
    let n = mesh.positions.len();
    let (ends, k) = springs_from_triangles(n, &mesh.triangles).unwrap().with_stiffness(200.0, 20.0);
    let x: Vec<Vec3> = mesh.positions.iter().map(|p| p + Vec3::new(0.0, 0.0, 0.5)).collect();
    let params = SimParams { ground_height: Some(0.1), time_step: 0.01, ..SimParams::default() };
    let mut sys = System::new(&x, &vec![0.01; n], &ends, &k, params).unwrap();
    sys.set_velocities(&vec![Vec3::new(0.5, 0.0, -2.0); n]).unwrap();
    let mut touched = false;
    for _ in 0..300 {
        sys.step().unwrap();
        let lowest = sys.positions().iter().map(|p| p.z).fold(f64::INFINITY, f64::min);
        assert!(lowest >= 0.1, "vertex below the ground: {lowest}");
        touched |= lowest == 0.1;
    }
    assert!(touched, "the ball never reached the ground");
    // it came to rest on the ground: no vertex is still falling fast
    assert!(sys.velocities().iter().all(|v| v.z.abs() < 0.5));
}

#[test]
fn sphere_collider_holds_the_cloth_outside() {
    let mut sys = cloth(12, SimParams { time_step: 0.005, ..SimParams::default() });
    let centre = Vec3::new(0.275, 0.275, -0.3);
    sys.set_sphere_colliders(&[centre], &[0.2]).unwrap();
    for _ in 0..400 {
        sys.step().unwrap();
        for p in sys.positions() {
            assert!((p - centre).norm() >= 0.2 - 1e-12);
        }
    }
    // draped: the middle rests on top of the sphere
    let middle = sys.positions()[6 * 12 + 6];
    assert!(((middle - centre).norm() - 0.2).abs() < 0.01, "{middle:?}");
}

#[test]
fn friction_stops_sliding_on_the_ground() {
    let slide = |friction: f64| {
        let params =
            SimParams { ground_height: Some(0.0), friction, time_step: 0.01, ..SimParams::default() };
        let mut sys = cloth(4, params);
        sys.set_velocities(&vec![Vec3::new(1.0, 0.0, 0.0); 16]).unwrap();
        sys.step_n(50).unwrap();
        sys.positions().iter().map(|p| p.x).sum::<f64>() / 16.0
    };
    let (free, stuck) = (slide(0.0), slide(1.0));
    assert!((free - (0.075 + 0.5)).abs() < 0.01, "frictionless slide: {free}");
    assert!((stuck - 0.075).abs() < 0.02, "full friction still slid: {stuck}");
}

#[test]
fn damping_removes_energy() {
    let run = |damping: f64| {
        let mut sys = common::paper_torus(1.0, 0.03, Integrator::Imex);
        let mut p = sys.params().clone();
        p.damping = damping;
        sys.set_params(p).unwrap();
        let e0 = sys.energies().total;
        sys.step_n(200).unwrap();
        (e0, sys.energies())
    };
    let (e0, undamped) = run(0.0);
    let (_, damped) = run(0.05);
    assert!(damped.total < undamped.total);
    assert!(damped.kinetic < 1e-3 * undamped.kinetic.max(1.0), "still moving: {}", damped.kinetic);
    assert!(damped.total < e0);
}
