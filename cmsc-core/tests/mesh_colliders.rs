//! Triangle-mesh obstacles (issue 18, part 2): resting contact on a closed mesh with no vertex
//! inside at any step, no tunnelling through a thin plane at a large step, friction, moving
//! obstacles, and the documented momentum effect (`collision` module docs).

use cmsc_core::{
    shapes, springs_from_triangles, FieldMethod, FrictionLaw, MeshColliders, SimParams, System, Vec3,
};

fn params(h: f64) -> SimParams {
    SimParams { time_step: h, coulomb: FieldMethod::Off, ..SimParams::default() }
}

/// An axis-aligned cube of half-size `a` centred at the origin: 8 vertices, 12 triangles.
fn cube(a: f64) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let v = (0..8)
        .map(|i| {
            Vec3::new(
                if i & 1 == 0 { -a } else { a },
                if i & 2 == 0 { -a } else { a },
                if i & 4 == 0 { -a } else { a },
            )
        })
        .collect();
    let quads = [[0, 2, 3, 1], [4, 5, 7, 6], [0, 1, 5, 4], [2, 6, 7, 3], [0, 4, 6, 2], [1, 3, 7, 5]];
    let t = quads.iter().flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]).collect();
    (v, t)
}

/// A square of side `2 a` through the origin with normal `(−sin θ, 0, cos θ)` (tilted by `θ`
/// about `y`), as two triangles.
fn plane(a: f64, theta: f64) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let (c, s) = (theta.cos(), theta.sin());
    let corner = |x: f64, y: f64| Vec3::new(x * c, y, x * s);
    (vec![corner(-a, -a), corner(a, -a), corner(a, a), corner(-a, a)], vec![[0, 1, 2], [0, 2, 3]])
}

/// A cloth of `n × n` vertices `spacing` m apart centred above the origin at height `z`.
fn cloth(n: u32, spacing: f64, z: f64, h: f64) -> (System, Vec<[u32; 3]>) {
    let mut mesh = shapes::grid(n, n, spacing);
    let half = (n - 1) as f64 * spacing / 2.0;
    mesh.positions.iter_mut().for_each(|p| *p += Vec3::new(-half, -half, z));
    let springs = springs_from_triangles(mesh.positions.len(), &mesh.triangles).unwrap();
    let (ends, k) = springs.with_stiffness(200.0, 2.0);
    let m = vec![0.2 / mesh.positions.len() as f64; mesh.positions.len()];
    (System::new(&mesh.positions, &m, &ends, &k, params(h)).unwrap(), mesh.triangles)
}

/// Distance from `p` to the surface of the cube of half-size `a`, negative inside.
fn cube_distance(p: &Vec3, a: f64) -> f64 {
    let q = p.abs() - Vec3::repeat(a);
    let outside = q.sup(&Vec3::zeros()).norm();
    outside + q.max().min(0.0)
}

#[test]
fn a_cloth_dropped_on_a_cube_rests_on_it_with_no_vertex_inside_at_any_step() {
    let (a, thickness) = (0.2, 0.005);
    let (mut sys, _) = cloth(15, 0.04, 0.35, 1.0 / 120.0);
    let (v, t) = cube(a);
    sys.set_mesh_colliders(&v, &t, &[0, 12], &[thickness], &[0.5]).unwrap();
    for step in 0..240 {
        sys.step().unwrap();
        for (i, p) in sys.positions().iter().enumerate() {
            let d = cube_distance(p, a);
            assert!(d >= thickness - 1e-9, "step {step}: vertex {i} at {p:?} is {d} m from the cube");
        }
    }
    // the middle of the cloth rests on the top face, at the contact distance, at rest
    let centre = sys.positions()[7 * 15 + 7];
    assert!((centre.z - (a + thickness)).abs() < 1e-3, "{centre:?}");
    assert!(sys.velocities()[7 * 15 + 7].norm() < 0.05, "{:?}", sys.velocities()[7 * 15 + 7]);
    // the border hangs below the top face, outside the sides
    assert!(sys.positions()[0].z < a, "{:?}", sys.positions()[0]);
}

#[test]
fn a_vertex_put_inside_a_closed_mesh_leaves_it_through_the_nearest_face() {
    // (a second point far away: the runaway guard needs a system of non-zero size)
    let x = [Vec3::new(0.05, 0.02, 0.1), Vec3::new(3.0, 0.0, 0.0)];
    let p = SimParams { gravity: Vec3::zeros(), ..params(0.01) };
    let mut sys = System::new(&x, &[0.01; 2], &[], &[], p).unwrap();
    let (v, mut t) = cube(0.2);
    // wound inward: the inside test must not depend on the caller's orientation
    t.iter_mut().for_each(|tri| tri.swap(1, 2));
    sys.set_mesh_colliders(&v, &t, &[0, 12], &[0.01], &[0.0]).unwrap();
    sys.step().unwrap();
    let p = sys.positions()[0];
    assert!((p - Vec3::new(0.05, 0.02, 0.21)).norm() < 1e-6, "{p:?}");
    assert_eq!(sys.positions()[1], x[1]);
}

#[test]
fn two_moves_before_a_step_give_the_velocity_of_their_sum() {
    let (h, thickness) = (0.01, 0.01);
    let x = [Vec3::new(0.0, 0.0, thickness), Vec3::new(0.3, 0.0, thickness)];
    let p = SimParams { gravity: Vec3::zeros(), ..params(h) };
    let mut sys = System::new(&x, &[0.01; 2], &[], &[], p).unwrap();
    let (v0, t) = plane(1.0, 0.0);
    sys.set_mesh_colliders(&v0, &t, &[0, 2], &[thickness], &[0.0]).unwrap();
    for dz in [0.002, 0.005] {
        let v: Vec<Vec3> = v0.iter().map(|p| p + Vec3::new(0.0, 0.0, dz)).collect();
        sys.move_mesh_colliders(&v).unwrap();
    }
    sys.step().unwrap();
    // carried to the plate's end position, at its speed over the step: 0.005 m / 0.01 s
    for (p, v) in sys.positions().iter().zip(sys.velocities()) {
        assert!((p.z - (0.005 + thickness)).abs() < 1e-8, "{p:?}");
        assert!((v.z - 0.5).abs() < 1e-9, "{v:?}");
    }
}

#[test]
fn without_the_collider_the_same_cloth_falls_through_the_cube() {
    let (mut sys, _) = cloth(15, 0.04, 0.35, 1.0 / 120.0);
    let mut inside = false;
    for _ in 0..240 {
        sys.step().unwrap();
        inside |= sys.positions().iter().any(|p| cube_distance(p, 0.2) < 0.0);
    }
    assert!(inside);
}

#[test]
fn a_thin_plane_is_not_tunnelled_through_at_a_large_step() {
    // three free points at 50 m/s: 1.7 m per 1/30 s step, from 0.5 m above a plane of no thickness
    let x = [Vec3::new(0.0, 0.0, 0.5), Vec3::new(0.3, 0.1, 0.5), Vec3::new(-0.2, 0.4, 0.5)];
    let mut sys = System::new(&x, &[0.01; 3], &[], &[], params(1.0 / 30.0)).unwrap();
    sys.set_velocities(&[Vec3::new(0.0, 0.0, -50.0); 3]).unwrap();
    let (v, t) = plane(1.0, 0.0);
    sys.set_mesh_colliders(&v, &t, &[0, 2], &[0.0], &[0.0]).unwrap();
    for step in 0..30 {
        sys.step().unwrap();
        for p in sys.positions() {
            assert!(p.z >= 0.0, "step {step}: {p:?} went through the plane");
        }
    }
    // it stopped on the plane: the normal velocity is gone
    assert!(sys.velocities().iter().all(|v| v.z.abs() < 1e-6), "{:?}", sys.velocities());
}

#[test]
fn a_thin_closed_box_is_not_tunnelled_through_when_one_step_crosses_all_of_it() {
    // a slab 2 cm thick, and points at 50 m/s: one 1/30 s step takes them from 0.5 m above it
    // to 1.2 m below, through both faces. The point past the far face is closest to that face,
    // and leaving through it is the wrong side: it must come back out above the slab.
    let (v, t) = cube(1.0);
    let slab: Vec<Vec3> = v.iter().map(|p| Vec3::new(p.x, p.y, 0.01 * p.z)).collect();
    let x = [Vec3::new(0.0, 0.0, 0.5), Vec3::new(0.3, 0.1, 0.5), Vec3::new(-0.2, 0.4, 0.5)];
    for thickness in [0.0, 0.005, 0.05] {
        let mut sys = System::new(&x, &[0.01; 3], &[], &[], params(1.0 / 30.0)).unwrap();
        sys.set_velocities(&[Vec3::new(0.0, 0.0, -50.0); 3]).unwrap();
        sys.set_mesh_colliders(&slab, &t, &[0, 12], &[thickness], &[0.0]).unwrap();
        for step in 0..10 {
            sys.step().unwrap();
            for p in sys.positions() {
                assert!(
                    p.z >= 0.01 + thickness - 1e-9,
                    "thickness {thickness}, step {step}: {p:?} is not above the slab"
                );
            }
        }
    }
}

/// Slides a point from rest on a plane tilted by 30° for 1 s; returns how far it moved.
fn slide(friction: f64) -> f64 {
    let theta = 30f64.to_radians();
    let normal = Vec3::new(-theta.sin(), 0.0, theta.cos());
    let start = normal * 0.01; // touching
                               // two points 2 m apart (a single point has size 0, which the runaway guard of step.rs
                               // cannot measure motion against)
    let x = [start - Vec3::y(), start + Vec3::y()];
    let mut sys = System::new(&x, &[0.01; 2], &[], &[], params(1.0 / 120.0)).unwrap();
    let (v, t) = plane(10.0, theta);
    sys.set_mesh_colliders(&v, &t, &[0, 2], &[0.01], &[friction]).unwrap();
    for step in 0..120 {
        sys.step().unwrap();
        let height = sys.positions()[0].dot(&normal);
        assert!(height >= 0.01 - 1e-9, "step {step}: {height} m above the plane");
    }
    let start = x[0];
    (sys.positions()[0] - start).norm()
}

#[test]
fn friction_one_stops_sliding_on_a_tilted_plane_and_friction_zero_slides() {
    let held = slide(1.0);
    assert!(held < 1e-6, "slid {held} m with friction 1");
    // frictionless: s = g sin 30° t² / 2 = 2.45 m after 1 s (less the first step's contact)
    let slid = slide(0.0);
    assert!((2.3..2.5).contains(&slid), "slid {slid} m with friction 0");
    let half = slide(0.5);
    assert!(half > held && half < slid, "{half}");
}

#[test]
fn a_rising_plate_lifts_a_resting_body_with_its_own_velocity() {
    let (h, thickness, speed) = (1.0 / 120.0, 0.01, 0.6);
    let (mut sys, _) = cloth(5, 0.05, thickness + 1e-6, h);
    let (v0, t) = plane(1.0, 0.0);
    sys.set_mesh_colliders(&v0, &t, &[0, 2], &[thickness], &[0.5]).unwrap();
    sys.step_n(60).unwrap(); // settle on the still plate
    let mut lift = 0.0;
    for step in 0..60 {
        lift += speed * h;
        let v: Vec<Vec3> = v0.iter().map(|p| p + Vec3::new(0.0, 0.0, lift)).collect();
        sys.move_mesh_colliders(&v).unwrap();
        sys.step().unwrap();
        for p in sys.positions() {
            assert!(p.z >= lift + thickness - 1e-9, "step {step}: {p:?} below the plate at {lift}");
        }
    }
    // carried at the plate's speed
    for v in sys.velocities() {
        assert!((v.z - speed).abs() < 0.02, "{v:?}");
    }
    // the plate stops: the body leaves it at the plate's last speed and falls back to it
    sys.step_n(120).unwrap();
    for p in sys.positions() {
        assert!((p.z - (lift + thickness)).abs() < 2e-3, "{p:?}");
    }
}

#[test]
fn an_impact_removes_the_normal_momentum_and_friction_scales_the_tangential_one() {
    // collision docs: the obstacle has infinite mass; on impact m v_n is removed and m v_t is
    // scaled by 1 − friction; nothing else changes the momentum of a free point without gravity
    let (h, m) = (0.01, 0.5);
    let p = SimParams { gravity: Vec3::zeros(), ..params(h) };
    let mut sys = System::new(&[Vec3::new(0.0, 0.0, 0.015)], &[m], &[], &[], p).unwrap();
    sys.set_velocities(&[Vec3::new(1.0, 0.5, -2.0)]).unwrap();
    let (v, t) = plane(5.0, 0.0);
    sys.set_mesh_colliders(&v, &t, &[0, 2], &[0.0], &[0.25]).unwrap();
    sys.step().unwrap();
    let momentum = sys.velocities()[0] * m;
    assert!((momentum - Vec3::new(0.75, 0.375, 0.0) * m).norm() < 1e-12, "{momentum:?}");
    // in flight before the impact, momentum is unchanged
    let mut free = System::new(
        &[Vec3::new(0.0, 0.0, 1.0)],
        &[m],
        &[],
        &[],
        SimParams { gravity: Vec3::zeros(), ..params(h) },
    )
    .unwrap();
    free.set_velocities(&[Vec3::new(1.0, 0.5, -2.0)]).unwrap();
    free.set_mesh_colliders(&v, &t, &[0, 2], &[0.0], &[0.25]).unwrap();
    free.step().unwrap();
    assert!((free.velocities()[0] - Vec3::new(1.0, 0.5, -2.0)).norm() < 1e-12);
}

#[test]
fn mesh_collider_input_is_validated_and_rejections_change_nothing() {
    let (mut sys, _) = cloth(3, 0.1, 1.0, 0.01);
    let (v, t) = cube(0.2);
    sys.set_mesh_colliders(&v, &t, &[0, 12], &[0.01], &[0.5]).unwrap();
    let mut nan = v.clone();
    nan[3].y = f64::NAN;
    let mut degenerate = t.clone();
    degenerate[4] = [0, 1, 1];
    let mut flat = v.clone();
    flat[1] = flat[0];
    type Case<'a> = (Vec<Vec3>, Vec<[u32; 3]>, Vec<u32>, f64, f64, &'a str);
    let cases: Vec<Case> = vec![
        (nan, t.clone(), vec![0, 12], 0.0, 0.0, "vertices"),
        (v.clone(), vec![[0, 1, 8]], vec![0, 1], 0.0, 0.0, "out of range"),
        (v.clone(), degenerate, vec![0, 12], 0.0, 0.0, "degenerate"),
        (flat, t.clone(), vec![0, 12], 0.0, 0.0, "degenerate"),
        (v.clone(), t.clone(), vec![0, 12], -0.1, 0.0, "thickness"),
        (v.clone(), t.clone(), vec![0, 12], 0.0, 2.0, "friction"),
        (v.clone(), t.clone(), vec![0, 11], 0.0, 0.0, "first_triangle"),
        (v.clone(), t.clone(), vec![1, 12], 0.0, 0.0, "first_triangle"),
    ];
    for (i, (v, t, first, th, fr, needle)) in cases.into_iter().enumerate() {
        let err = sys.set_mesh_colliders(&v, &t, &first, &[th], &[fr]).unwrap_err().to_string();
        assert!(err.contains(needle), "case {i}: {err}");
        assert_eq!(sys.model().mesh_colliders().meshes().len(), 1, "case {i}");
        assert_eq!(sys.model().mesh_colliders().meshes()[0].thickness, 0.01, "case {i}");
    }
    let err = sys.move_mesh_colliders(&v[..7]).unwrap_err().to_string();
    assert!(err.contains("vertices"), "{err}");
    assert!(sys.model().mesh_colliders().meshes()[0].is_closed());
    sys.set_mesh_colliders(&[], &[], &[], &[], &[]).unwrap();
    assert!(sys.model().mesh_colliders().meshes().is_empty());
}

/// How deep any of the `edges` (vertex pairs of `sys`) reaches into the cube of half-size `a`
/// (m; 0 when none enters), sampled at 65 points along each.
fn deepest_edge(sys: &System, edges: &[[u32; 2]], a: f64) -> f64 {
    let x = sys.positions();
    let depth = |&[i, j]: &[u32; 2]| {
        let (p, q) = (x[i as usize], x[j as usize]);
        (0..=64).map(|k| -cube_distance(&p.lerp(&q, k as f64 / 64.0), a)).fold(0.0, f64::max)
    };
    edges.iter().map(depth).fold(0.0, f64::max)
}

#[test]
fn a_cube_edge_does_not_cut_into_a_cloth_draped_over_it() {
    // Issue 30: every vertex stays outside, but an edge of the cloth from the top face to a side
    // cut the cube's edge between them (up to 33 mm through a draped cloth in Blender)
    let (a, thickness) = (0.2, 0.005);
    let deepest = |told: bool| {
        let (mut sys, triangles) = cloth(21, 0.04, 0.3, 1.0 / 120.0);
        let (v, t) = cube(a);
        sys.set_mesh_colliders(&v, &t, &[0, 12], &[thickness], &[0.5]).unwrap();
        sys.set_surface(&triangles).unwrap();
        let edges = sys.surface_edges().to_vec();
        assert_eq!(edges.len(), 2 * 20 * 21 + 20 * 20, "rows, columns and a diagonal per cell");
        if !told {
            sys.set_surface(&[]).unwrap();
        }
        let worst = (0..240).fold(0.0f64, |worst, _| {
            sys.step().unwrap();
            worst.max(deepest_edge(&sys, &edges, a))
        });
        // draped: the corners hang below the top face, the middle rests on it
        assert!(sys.positions()[0].z < a - 0.05, "{:?}", sys.positions()[0]);
        let centre = sys.positions()[10 * 21 + 10];
        assert!((centre.z - (a + thickness)).abs() < 1e-3, "{centre:?}");
        worst
    };
    let (without, with) = (deepest(false), deepest(true));
    eprintln!(
        "deepest an edge of the cloth reached into the cube over 2 s: {:.2} mm without its surface, {:.3} mm with it",
        without * 1e3,
        with * 1e3
    );
    assert!(without > 5e-3, "the cut this guards against: {:.2} mm", without * 1e3);
    assert!(with <= 1e-4, "an edge cut {:.2} mm into the cube", with * 1e3);
}

/// Issue 30: friction at a collider's sharp edge is taken relative to the edge, as on its faces.
/// A spring lies across the top front edge of a cube (its middle 1 mm above the edge, inside
/// the 5 mm thickness; its ends touch no face), and the cube and the spring both move 1 cm
/// along that edge in the step. With full per-step friction the edge pushes the spring out
/// and carries it along: its ends keep the cube's move and velocity along the edge. A still
/// cube holds the same spring back (it loses its motion along the edge).
#[test]
fn friction_at_a_moving_colliders_edge_carries_what_rests_across_it() {
    let (a, thickness, h) = (0.2, 0.005, 1.0 / 120.0);
    let (v, t) = cube(a);
    let still = MeshColliders::new(&v, &t, &[0, 12], &[thickness], &[1.0], FrictionLaw::PerStep).unwrap();
    let shift = Vec3::new(0.0, 0.01, 0.0);
    let moved: Vec<Vec3> = v.iter().map(|p| p + shift).collect();
    let moving = still.moved(&moved, 0).unwrap();
    let x_old = [Vec3::new(a - 0.05, 0.0, a + 0.006), Vec3::new(a + 0.05, 0.0, a - 0.004)];
    for (colliders, carried) in [(&moving, true), (&still, false)] {
        let mut x = x_old.map(|p| p + shift);
        let mut vel = [shift / h; 2];
        let applied = colliders.project_edges(
            &[[0, 1]],
            &x_old,
            &mut x,
            &mut vel,
            &[false; 2],
            h,
            FrictionLaw::PerStep,
            0,
            &mut [false; 2],
        );
        assert_eq!(applied, 1, "the edge did not push the spring");
        let middle = (x[0] + x[1]) / 2.0 - Vec3::new(a, x[0].y, a);
        assert!(
            middle.norm() >= thickness,
            "the spring's middle is {:.2} mm from the edge",
            middle.norm() * 1e3
        );
        for k in 0..2 {
            let (y, vy) = if carried { (shift.y, shift.y / h) } else { (0.0, 0.0) };
            assert!(
                (x[k].y - y).abs() < 1e-12 && (vel[k].y - vy).abs() < 1e-9,
                "end {k}: {:?}, {:?}",
                x[k],
                vel[k]
            );
        }
    }
}

/// Under the per-step law a mesh collider takes its fraction once a step from a vertex that
/// rests on one of its faces and whose spring rests across one of its edges. A triangle lies
/// across the top front edge of a cube, sliding along it at 1 m/s: its corner on the top face
/// and the two on the front face are each inside the contact thickness of their face, and the
/// springs from the first to the others pass within it of the edge. The faces push all three
/// out and the edge pushes the springs. Before, the edge's push took the fraction again from
/// what the faces had just taken it from: 0.81 m/s.
#[test]
fn a_per_step_friction_is_taken_once_from_a_vertex_on_a_face_whose_spring_lies_across_an_edge() {
    let (a, thickness, friction) = (0.2, 0.005, 0.1);
    let x = [
        Vec3::new(a - 0.01, 0.0, a + 0.004),
        Vec3::new(a + 0.004, -0.01, a - 0.01),
        Vec3::new(a + 0.004, 0.01, a - 0.01),
    ];
    let triangle = [[0, 1, 2]];
    let springs = springs_from_triangles(3, &triangle).unwrap();
    let (ends, k) = springs.with_stiffness(200.0, 2.0);
    let params = SimParams { gravity: Vec3::zeros(), ..params(1.0 / 120.0) };
    let mut sys = System::new(&x, &[1e-3; 3], &ends, &k, params).unwrap();
    let (v, t) = cube(a);
    sys.set_mesh_colliders(&v, &t, &[0, 12], &[thickness], &[friction]).unwrap();
    sys.set_friction_law(FrictionLaw::PerStep).unwrap();
    sys.set_surface(&triangle).unwrap();
    sys.set_velocities(&[Vec3::y(); 3]).unwrap();
    sys.step().unwrap();
    for (i, (p, v)) in sys.positions().iter().zip(sys.velocities()).enumerate() {
        assert!(cube_distance(p, a) >= thickness * (1.0 - 1e-9), "vertex {i} ended inside: {p:?}");
        assert!((v.y - (1.0 - friction)).abs() < 1e-9, "vertex {i} slides at {} m/s", v.y);
    }
    // both springs across the edge: their middles at least the thickness from it
    let x = sys.positions();
    for j in [1, 2] {
        let middle = (x[0] + x[j]) / 2.0;
        let from_edge = Vec3::new(middle.x - a, 0.0, middle.z - a).norm();
        assert!(from_edge >= thickness * (1.0 - 1e-6), "the edge cuts spring 0–{j}: {from_edge} m");
    }
}

/// A paddle (a square of two triangles) sweeping up at 24 m/s through a cloth at rest, its
/// steps ending exactly in the cloth's plane (4 steps to reach it) or not (3): every vertex over
/// its face is carried on top at its thickness. When a step ended in the plane, the vertices on
/// the paddle's diagonal edge (between two coplanar faces) were pushed along the plane by the
/// rounding of their projection, left on it, and the next steps took some through (3 of 37
/// vertices in Blender).
#[test]
fn a_paddle_whose_step_ends_in_the_cloths_plane_carries_every_vertex_on_it() {
    let (h, thickness) = (1.0 / 96.0, 0.02);
    for steps_to_plane in [4u32, 3] {
        let (mut sys, _) = cloth(25, 1.0 / 24.0, 0.0, h);
        sys.set_params(SimParams { gravity: Vec3::zeros(), ..sys.params().clone() }).unwrap();
        let over: Vec<usize> = (0..sys.n_vertices())
            .filter(|&i| sys.positions()[i].x.abs() < 0.25 && sys.positions()[i].y.abs() < 0.25)
            .collect();
        let (v0, t) = plane(0.3, 0.0);
        let at = |z: f64| v0.iter().map(|p| p + Vec3::new(0.0, 0.0, z)).collect::<Vec<_>>();
        sys.set_mesh_colliders(&at(-1.0), &t, &[0, 2], &[thickness], &[0.0]).unwrap();
        let dz = 1.0 / steps_to_plane as f64;
        for step in 1..=2 * steps_to_plane {
            let z = -1.0 + dz * step as f64;
            sys.move_mesh_colliders(&at(z)).unwrap();
            sys.step().unwrap();
            if z >= -1e-12 {
                for &i in &over {
                    let p = sys.positions()[i];
                    assert!(
                        p.z >= z + thickness - 1e-9,
                        "{steps_to_plane} steps to the plane, step {step}: vertex {i} at {p:?}, the paddle at {z}"
                    );
                }
            }
        }
    }
}
