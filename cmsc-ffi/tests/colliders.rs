//! The mesh-collider and self-collision entry points (issue 18): bad input is
//! CMSC_INVALID_ARGUMENT with a message naming the argument and changes nothing; good input
//! holds vertices above a mesh.

mod common;

use std::ptr;

use cmsc::CmscStatus::*;
use cmsc::*;
use common::{last_error, params, positions, square};

/// A 2 m square at height `z` as two triangles: 4 vertices (12 doubles) and 6 indices.
fn floor(z: f64) -> (Vec<f64>, Vec<u32>) {
    let v = vec![-1.0, -1.0, z, 1.0, -1.0, z, 1.0, 1.0, z, -1.0, 1.0, z];
    (v, vec![0, 1, 2, 0, 2, 3])
}

/// Steps `sim` (the square of `common`, at z = 0, falling) and checks every vertex stays at least
/// `above` m over z = `z`.
fn assert_held(sim: *mut CmscSim, z: f64, above: f64) {
    for _ in 0..60 {
        // SAFETY: live handle.
        assert_eq!(unsafe { cmsc_step(sim, 1) }, CMSC_OK, "{}", last_error());
        let x = positions(sim, 4);
        for p in x.chunks(3) {
            assert!(p[2] >= z + above - 1e-9, "{p:?} below {z} + {above}");
        }
    }
}

#[test]
fn a_vertex_dropped_on_a_mesh_collider_stays_above_it() {
    let sim = square(&params());
    let (v, t) = floor(-0.05);
    // SAFETY: live handle; arrays valid for their lengths.
    unsafe {
        let st = cmsc_set_mesh_colliders(sim, v.as_ptr(), 4, t.as_ptr(), 2, [0, 2].as_ptr(), &0.01, &0.5, 1);
        assert_eq!(st, CMSC_OK, "{}", last_error());
    }
    assert_held(sim, -0.05, 0.01);
    // moved up by 2 cm: the square is carried with it
    let up: Vec<f64> = v.iter().enumerate().map(|(i, c)| if i % 3 == 2 { c + 0.02 } else { *c }).collect();
    // SAFETY: as above.
    assert_eq!(unsafe { cmsc_move_mesh_colliders(sim, up.as_ptr(), 4) }, CMSC_OK, "{}", last_error());
    assert_held(sim, -0.03, 0.01);
    // SAFETY: as above; NULL with n_meshes = 0 removes them all.
    unsafe {
        let st = cmsc_set_mesh_colliders(
            sim,
            ptr::null(),
            0,
            ptr::null(),
            0,
            ptr::null(),
            ptr::null(),
            ptr::null(),
            0,
        );
        assert_eq!(st, CMSC_OK, "{}", last_error());
        assert_eq!(cmsc_step(sim, 60), CMSC_OK);
        assert!(positions(sim, 4)[2] < -0.1, "falls once the collider is gone");
        cmsc_destroy(sim);
    }
}

#[test]
fn bad_mesh_colliders_are_rejected_naming_the_argument_and_change_nothing() {
    let sim = square(&params());
    let (v, t) = floor(-0.05);
    let first = [0u32, 2];
    // SAFETY: live handle; every array is valid for the length passed.
    unsafe {
        assert_eq!(
            cmsc_set_mesh_colliders(sim, v.as_ptr(), 4, t.as_ptr(), 2, first.as_ptr(), &0.01, &0.5, 1),
            CMSC_OK
        );
        let before = positions(sim, 4);
        let mut nan = v.clone();
        nan[4] = f64::NAN;
        let out_of_range = [0u32, 1, 4, 0, 2, 3];
        let degenerate = [0u32, 1, 1, 0, 2, 3];
        let mut collinear = v.clone();
        collinear[3..6].copy_from_slice(&[0.0, 0.0, -0.05]); // vertex 1 on the diagonal 0–2
        let set =
            |v: &[f64], nv: usize, t: &[u32], nt: usize, first: *const u32, th: f64, fr: f64, k: usize| {
                cmsc_set_mesh_colliders(sim, v.as_ptr(), nv, t.as_ptr(), nt, first, &th, &fr, k)
            };
        let (vp, tp, fp, null) = (v.as_ptr(), t.as_ptr(), first.as_ptr(), ptr::null::<f64>());
        let raw = |v: *const f64, t: *const u32, f: *const u32, th: *const f64, fr: *const f64| {
            cmsc_set_mesh_colliders(sim, v, 4, t, 2, f, th, fr, 1)
        };
        type Call<'a> = Box<dyn Fn() -> CmscStatus + 'a>;
        let cases: Vec<(Call, &str)> = vec![
            (Box::new(|| raw(null, tp, fp, &0.01, &0.5)), "`vertices` is NULL"),
            (Box::new(|| raw(vp, ptr::null(), fp, &0.01, &0.5)), "`triangles` is NULL"),
            (Box::new(|| raw(vp, tp, ptr::null(), &0.01, &0.5)), "`first_triangle` is NULL"),
            (Box::new(|| raw(vp, tp, fp, null, &0.5)), "`thickness` is NULL"),
            (Box::new(|| raw(vp, tp, fp, &0.01, null)), "`friction` is NULL"),
            (Box::new(|| set(&nan, 4, &t, 2, fp, 0.01, 0.5, 1)), "vertices"),
            (Box::new(|| set(&v, 4, &out_of_range, 2, fp, 0.01, 0.5, 1)), "out of range"),
            (Box::new(|| set(&v, 4, &degenerate, 2, fp, 0.01, 0.5, 1)), "degenerate"),
            (Box::new(|| set(&collinear, 4, &t, 2, fp, 0.01, 0.5, 1)), "degenerate"),
            (Box::new(|| set(&v, 4, &t, 2, fp, -0.01, 0.5, 1)), "thickness"),
            (Box::new(|| set(&v, 4, &t, 2, fp, f64::NAN, 0.5, 1)), "thickness"),
            (Box::new(|| set(&v, 4, &t, 2, fp, 0.01, 2.0, 1)), "friction"),
            (Box::new(|| set(&v, 4, &t, 2, fp, 0.01, -0.1, 1)), "friction"),
            (Box::new(|| set(&v, 4, &t, 2, [0u32, 1].as_ptr(), 0.01, 0.5, 1)), "first_triangle"),
            (Box::new(|| set(&v, 4, &t, 2, [1u32, 2].as_ptr(), 0.01, 0.5, 1)), "first_triangle"),
            (Box::new(|| set(&v, 4, &t, 2, ptr::null(), 0.01, 0.5, 0)), "first_triangle"),
            (
                Box::new(|| cmsc_set_mesh_colliders(ptr::null_mut(), vp, 4, tp, 2, fp, &0.01, &0.5, 1)),
                "`sim` is NULL",
            ),
            (Box::new(|| cmsc_move_mesh_colliders(sim, vp, 3)), "vertices"),
            (Box::new(|| cmsc_move_mesh_colliders(sim, ptr::null(), 4)), "`vertices` is NULL"),
            (Box::new(|| cmsc_move_mesh_colliders(sim, nan.as_ptr(), 4)), "vertices"),
            (Box::new(|| cmsc_move_mesh_colliders(sim, collinear.as_ptr(), 4)), "degenerate"),
        ];
        for (i, (call, needle)) in cases.into_iter().enumerate() {
            assert_eq!(call(), CMSC_INVALID_ARGUMENT, "case {i}");
            let msg = last_error();
            assert!(msg.contains(needle), "case {i}: `{msg}` does not mention `{needle}`");
            assert_eq!(positions(sim, 4), before, "case {i}");
        }
    }
    // the collider set first is still in force, unmoved
    assert_held(sim, -0.05, 0.01);
    // SAFETY: live handle.
    unsafe { cmsc_destroy(sim) };
}

#[test]
fn bad_self_collision_is_rejected_naming_the_argument() {
    let sim = square(&params());
    let t = [0u32, 1, 2, 0, 2, 3];
    let d = [0.01; 4];
    // SAFETY: live handle; every array is valid for the length passed.
    unsafe {
        assert_eq!(cmsc_set_self_collision(sim, t.as_ptr(), 2, d.as_ptr(), 4), CMSC_OK, "{}", last_error());
        let before = positions(sim, 4);
        type Call<'a> = Box<dyn Fn() -> CmscStatus + 'a>;
        let cases: Vec<(Call, &str)> = vec![
            (Box::new(|| cmsc_set_self_collision(sim, ptr::null(), 2, d.as_ptr(), 4)), "`triangles` is NULL"),
            (Box::new(|| cmsc_set_self_collision(sim, t.as_ptr(), 2, ptr::null(), 4)), "`distance` is NULL"),
            (
                Box::new(|| cmsc_set_self_collision(sim, [0u32, 1, 4].as_ptr(), 1, d.as_ptr(), 4)),
                "out of range",
            ),
            (
                Box::new(|| cmsc_set_self_collision(sim, [0u32, 1, 1].as_ptr(), 1, d.as_ptr(), 4)),
                "degenerate",
            ),
            (Box::new(|| cmsc_set_self_collision(sim, t.as_ptr(), 2, d.as_ptr(), 3)), "distance"),
            (
                Box::new(|| cmsc_set_self_collision(sim, t.as_ptr(), 2, [0.01, -0.01, 0.0, 0.0].as_ptr(), 4)),
                "distance",
            ),
            (
                Box::new(|| {
                    cmsc_set_self_collision(sim, t.as_ptr(), 2, [f64::NAN, 0.0, 0.0, 0.0].as_ptr(), 4)
                }),
                "distance",
            ),
            (
                Box::new(|| cmsc_set_self_collision(ptr::null_mut(), t.as_ptr(), 2, d.as_ptr(), 4)),
                "`sim` is NULL",
            ),
        ];
        for (i, (call, needle)) in cases.into_iter().enumerate() {
            assert_eq!(call(), CMSC_INVALID_ARGUMENT, "case {i}");
            let msg = last_error();
            assert!(msg.contains(needle), "case {i}: `{msg}` does not mention `{needle}`");
            assert_eq!(positions(sim, 4), before, "case {i}");
        }
        // friction between layers: one finite rate >= 0 per vertex, while self-collision is on
        let r = [5.0; 4];
        assert_eq!(cmsc_set_self_collision_friction(sim, r.as_ptr(), 4), CMSC_OK, "{}", last_error());
        let cases: Vec<(Call, &str)> = vec![
            (Box::new(|| cmsc_set_self_collision_friction(sim, ptr::null(), 4)), "`rate` is NULL"),
            // named as the C argument is (`rate`), as every message names its argument
            (Box::new(|| cmsc_set_self_collision_friction(sim, r.as_ptr(), 3)), "`rate`: has 3 values"),
            (
                Box::new(|| cmsc_set_self_collision_friction(sim, [1.0, -1.0, 0.0, 0.0].as_ptr(), 4)),
                "`rate` at index 1",
            ),
            (
                Box::new(|| {
                    cmsc_set_self_collision_friction(sim, [f64::INFINITY, 0.0, 0.0, 0.0].as_ptr(), 4)
                }),
                "`rate` at index 0",
            ),
            (Box::new(|| cmsc_set_self_collision_friction(ptr::null_mut(), r.as_ptr(), 4)), "`sim` is NULL"),
        ];
        for (i, (call, needle)) in cases.into_iter().enumerate() {
            assert_eq!(call(), CMSC_INVALID_ARGUMENT, "friction case {i}");
            let msg = last_error();
            assert!(msg.contains(needle), "friction case {i}: `{msg}` does not mention `{needle}`");
        }
        // off: NULL with zero lengths; friction then has no self-collision to act on
        assert_eq!(cmsc_set_self_collision(sim, ptr::null(), 0, ptr::null(), 0), CMSC_OK, "{}", last_error());
        assert_eq!(cmsc_set_self_collision_friction(sim, r.as_ptr(), 4), CMSC_INVALID_ARGUMENT);
        assert!(last_error().contains("`rate`: self-collision is off"), "{}", last_error());
        assert_eq!(cmsc_step(sim, 10), CMSC_OK);
        cmsc_destroy(sim);
    }
}

#[test]
fn a_bad_surface_is_rejected_naming_the_argument_and_changes_nothing() {
    let sim = square(&params());
    let t = [0u32, 1, 2, 0, 2, 3];
    // SAFETY: live handle; every array is valid for the length passed.
    unsafe {
        assert_eq!(cmsc_set_surface(sim, t.as_ptr(), 2), CMSC_OK, "{}", last_error());
        assert_eq!(cmsc_set_surface(sim, ptr::null(), 0), CMSC_OK, "none clears it");
        assert_eq!(cmsc_set_surface(sim, t.as_ptr(), 2), CMSC_OK, "{}", last_error());
        let before = positions(sim, 4);
        type Call<'a> = Box<dyn Fn() -> CmscStatus + 'a>;
        let cases: Vec<(Call, &str)> = vec![
            (Box::new(|| cmsc_set_surface(sim, ptr::null(), 2)), "`triangles` is NULL"),
            (Box::new(|| cmsc_set_surface(sim, [0u32, 1, 4].as_ptr(), 1)), "out of range"),
            (Box::new(|| cmsc_set_surface(sim, [0u32, 1, 1].as_ptr(), 1)), "degenerate"),
            (Box::new(|| cmsc_set_surface(ptr::null_mut(), t.as_ptr(), 2)), "`sim` is NULL"),
        ];
        for (i, (call, needle)) in cases.into_iter().enumerate() {
            assert_eq!(call(), CMSC_INVALID_ARGUMENT, "case {i}");
            let msg = last_error();
            assert!(msg.contains(needle), "case {i}: `{msg}` does not mention `{needle}`");
            assert_eq!(positions(sim, 4), before, "case {i}");
        }
        cmsc_destroy(sim);
    }
}
