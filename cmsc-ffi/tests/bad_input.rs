//! Every bad input through the C ABI is CMSC_INVALID_ARGUMENT with a message
//! naming the argument, and changes nothing.

mod common;

use std::ptr;

use cmsc::CmscStatus::*;
use cmsc::*;
use common::{last_error, params, positions, square};

/// Calls `cmsc_create` with the square's arrays, letting `edit` break one of them.
fn create_with(
    edit: impl FnOnce(&mut Vec<f64>, &mut Vec<f64>, &mut Vec<u32>, &mut Vec<f64>, &mut CmscParams),
) -> (CmscStatus, String) {
    let mut x = vec![0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.1, 0.1, 0.0];
    let mut m = vec![0.01; 3];
    let mut s = vec![0u32, 1, 1, 2];
    let mut k = vec![50.0; 2];
    let mut p = params();
    edit(&mut x, &mut m, &mut s, &mut k, &mut p);
    let mut sim = ptr::NonNull::<CmscSim>::dangling().as_ptr();
    // SAFETY: arrays are valid for the lengths passed (n from the possibly edited arrays).
    let st = unsafe {
        cmsc_create(x.as_ptr(), x.len() / 3, m.as_ptr(), s.as_ptr(), s.len() / 2, k.as_ptr(), &p, &mut sim)
    };
    if st == CMSC_OK {
        // SAFETY: a handle from cmsc_create.
        unsafe { cmsc_destroy(sim) };
    } else {
        assert!(sim.is_null(), "out must be NULL after a failed create");
    }
    (st, last_error())
}

#[test]
fn create_rejects_each_bad_input_naming_it() {
    type Edit = Box<dyn FnOnce(&mut Vec<f64>, &mut Vec<f64>, &mut Vec<u32>, &mut Vec<f64>, &mut CmscParams)>;
    let cases: Vec<(Edit, CmscStatus, &str)> = vec![
        (Box::new(|x, _, _, _, _| x[4] = f64::NAN), CMSC_INVALID_ARGUMENT, "positions"),
        (Box::new(|x, _, _, _, _| x[0] = f64::INFINITY), CMSC_INVALID_ARGUMENT, "positions"),
        (Box::new(|_, m, _, _, _| m[1] = -1.0), CMSC_INVALID_ARGUMENT, "masses"),
        (Box::new(|_, m, _, _, _| m[2] = 0.0), CMSC_INVALID_ARGUMENT, "masses"),
        (Box::new(|_, _, s, _, _| s[3] = 3), CMSC_INVALID_ARGUMENT, "springs"),
        (Box::new(|_, _, s, _, _| s[1] = 0), CMSC_INVALID_ARGUMENT, "joins vertex 0 to itself"),
        (Box::new(|x, _, _, _, _| x[3] = 0.0), CMSC_INVALID_ARGUMENT, "zero rest length"),
        (Box::new(|_, _, _, k, _| k[0] = f64::NAN), CMSC_INVALID_ARGUMENT, "stiffness"),
        (
            Box::new(|x, m, s, k, _| (x.clear(), m.clear(), s.clear(), k.clear()).0),
            CMSC_INVALID_ARGUMENT,
            "empty mesh",
        ),
        (Box::new(|_, _, _, _, p| p.time_step = 0.0), CMSC_INVALID_ARGUMENT, "params.time_step"),
        (Box::new(|_, _, _, _, p| p.time_step = f64::NAN), CMSC_INVALID_ARGUMENT, "params.time_step"),
        (Box::new(|_, _, _, _, p| p.iterations = 0), CMSC_INVALID_ARGUMENT, "params.iterations"),
        (Box::new(|_, _, _, _, p| p.damping = 2.0), CMSC_INVALID_ARGUMENT, "params.damping"),
        (Box::new(|_, _, _, _, p| p.gravity[1] = f64::NAN), CMSC_INVALID_ARGUMENT, "params.gravity"),
        (Box::new(|_, _, _, _, p| p.coulomb = 99), CMSC_INVALID_ARGUMENT, "params.coulomb"),
        (Box::new(|_, _, _, _, p| p.integrator = 7), CMSC_INVALID_ARGUMENT, "params.integrator"),
        (Box::new(|_, _, _, _, p| p.integrator = 3), CMSC_INVALID_ARGUMENT, "params.integrator"),
        (Box::new(|_, _, _, _, p| p.integrator = u32::MAX), CMSC_INVALID_ARGUMENT, "params.integrator"),
        (
            Box::new(|_, _, _, _, p| p.ground_height = f64::INFINITY),
            CMSC_INVALID_ARGUMENT,
            "params.ground_height",
        ),
        (Box::new(|_, _, _, _, p| p.friction = -0.5), CMSC_INVALID_ARGUMENT, "params.friction"),
        (Box::new(|_, _, _, _, p| p.grid_points = 20_000_000), CMSC_INVALID_ARGUMENT, "params.grid_points"),
        // the GPU methods (3, 4) depend on the machine: tests/gpu.rs
    ];
    for (i, (edit, status, needle)) in cases.into_iter().enumerate() {
        let (st, msg) = create_with(edit);
        assert_eq!(st, status, "case {i}: {msg}");
        assert!(msg.contains(needle), "case {i}: `{msg}` does not mention `{needle}`");
    }
    // DDEF is available on the CPU
    let (st, msg) = create_with(|_, _, _, _, p| p.coulomb = 2);
    assert_eq!(st, CMSC_OK, "{msg}");
    // no ground via NaN or -inf is valid
    let (st, msg) = create_with(|_, _, _, _, p| p.ground_height = f64::NAN);
    assert_eq!(st, CMSC_OK, "{msg}");
    assert_eq!(last_error(), "");
}

#[test]
fn null_pointers_are_rejected_unless_the_length_is_zero() {
    let p = params();
    let mut sim = ptr::null_mut();
    let x = [0.0; 3];
    // SAFETY: every non-NULL pointer is valid for its length.
    unsafe {
        assert_eq!(
            cmsc_create(ptr::null(), 1, [1.0].as_ptr(), ptr::null(), 0, ptr::null(), &p, &mut sim),
            CMSC_INVALID_ARGUMENT
        );
        assert!(last_error().contains("`positions` is NULL"), "{}", last_error());
        assert_eq!(
            cmsc_create(x.as_ptr(), 1, [1.0].as_ptr(), ptr::null(), 0, ptr::null(), ptr::null(), &mut sim),
            CMSC_INVALID_ARGUMENT
        );
        assert!(last_error().contains("params"));
        assert_eq!(
            cmsc_create(x.as_ptr(), 1, [1.0].as_ptr(), ptr::null(), 0, ptr::null(), &p, ptr::null_mut()),
            CMSC_INVALID_ARGUMENT
        );
        // a single vertex with no springs (NULL, 0) is valid
        assert_eq!(
            cmsc_create(x.as_ptr(), 1, [1.0].as_ptr(), ptr::null(), 0, ptr::null(), &p, &mut sim),
            CMSC_OK
        );
        assert_eq!(cmsc_step(sim, 3), CMSC_OK);
        // NULL handles
        assert_eq!(cmsc_step(ptr::null_mut(), 1), CMSC_INVALID_ARGUMENT);
        assert!(last_error().contains("`sim` is NULL"));
        assert_eq!(cmsc_get_positions(ptr::null(), ptr::null_mut(), 0), CMSC_INVALID_ARGUMENT);
        assert_eq!(cmsc_energies(sim, ptr::null_mut()), CMSC_INVALID_ARGUMENT);
        assert_eq!(cmsc_set_uniform_field(sim, ptr::null()), CMSC_INVALID_ARGUMENT);
        // NULL with zero length: unpin all, clear external charges and colliders
        assert_eq!(cmsc_set_pins(sim, ptr::null(), 0), CMSC_OK);
        assert_eq!(cmsc_set_external_charges(sim, ptr::null(), ptr::null(), 0), CMSC_OK);
        assert_eq!(cmsc_set_sphere_colliders(sim, ptr::null(), ptr::null(), 0), CMSC_OK);
        // NULL with a length
        assert_eq!(cmsc_set_charges(sim, ptr::null(), 1), CMSC_INVALID_ARGUMENT);
        cmsc_destroy(sim);
        cmsc_destroy(ptr::null_mut());
        cmsc_params_default(ptr::null_mut());
    }
}

#[test]
fn edits_with_wrong_lengths_or_values_change_nothing() {
    let sim = square(&params());
    // SAFETY: live handle; every array is valid for the length passed.
    unsafe {
        assert_eq!(cmsc_step(sim, 5), CMSC_OK);
        let before = positions(sim, 4);
        let nan3 = [f64::NAN, 0.0, 0.0];
        let mut buf = vec![0.0; 30];
        let out = buf.as_mut_ptr();
        type Call<'a> = Box<dyn Fn() -> CmscStatus + 'a>;
        let checks: Vec<(Call, &str)> = vec![
            (
                Box::new(|| cmsc_get_positions(sim, out, 3)),
                "`out`: length 3 does not match the simulation's 4",
            ),
            (Box::new(|| cmsc_get_velocities(sim, out, 5)), "length 5"),
            (Box::new(|| cmsc_set_positions(sim, out, 2)), "`positions`"),
            (Box::new(|| cmsc_set_velocities(sim, [f64::NAN; 12].as_ptr(), 4)), "`velocities` at index 0"),
            (Box::new(|| cmsc_set_charges(sim, [1.0; 3].as_ptr(), 3)), "`charges`"),
            (Box::new(|| cmsc_set_charges(sim, [1.0, f64::INFINITY, 0.0, 0.0].as_ptr(), 4)), "index 1"),
            (Box::new(|| cmsc_set_pins(sim, [0u32, 4].as_ptr(), 2)), "vertex 4 out of range"),
            (Box::new(|| cmsc_set_pins(sim, [2u32, 2].as_ptr(), 2)), "listed twice"),
            (Box::new(|| cmsc_set_pin_targets(sim, [0.0; 3].as_ptr(), 1)), "`targets`"),
            (Box::new(|| cmsc_set_external_charges(sim, nan3.as_ptr(), [1.0].as_ptr(), 1)), "`positions`"),
            (
                Box::new(|| cmsc_set_external_charges(sim, [0.0; 3].as_ptr(), [f64::NAN].as_ptr(), 1)),
                "`charges`",
            ),
            (Box::new(|| cmsc_set_uniform_field(sim, nan3.as_ptr())), "`field`"),
            (Box::new(|| cmsc_set_relative_damping(sim, -1.0)), "`relative_damping`"),
            (Box::new(|| cmsc_set_relative_damping(sim, f64::NAN)), "`relative_damping`"),
            (
                Box::new(|| cmsc_set_parts(sim, [0u32, 0, 1, 2].as_ptr(), 4, [1.0, 1.0].as_ptr(), 2)),
                "part 2 out of range",
            ),
            (Box::new(|| cmsc_set_parts(sim, [0u32, 0, 1].as_ptr(), 3, [1.0, 1.0].as_ptr(), 2)), "`part`"),
            (
                Box::new(|| cmsc_set_parts(sim, [0u32; 4].as_ptr(), 4, [-1.0].as_ptr(), 1)),
                "`relative_damping`",
            ),
            (Box::new(|| cmsc_set_parts(sim, [0u32; 4].as_ptr(), 4, ptr::null(), 1)), "`relative_damping`"),
            // with no parts (n = 0) the rates are still checked, as every number is
            (
                Box::new(|| cmsc_set_parts(sim, ptr::null(), 0, [f64::NAN, -1.0].as_ptr(), 2)),
                "`relative_damping` at index 0",
            ),
            // a NULL array of vectors is named with its length in vectors, the count passed
            (Box::new(|| cmsc_set_positions(sim, ptr::null(), 4)), "`positions` is NULL but its length is 4"),
            (Box::new(|| cmsc_get_positions(sim, ptr::null_mut(), 4)), "`out` is NULL but its length is 4"),
            (Box::new(|| cmsc_set_sphere_colliders(sim, [0.0; 3].as_ptr(), [-1.0].as_ptr(), 1)), "`radii`"),
            (Box::new(|| cmsc_coulomb_forces(sim, out, 1)), "length 1"),
        ];
        for (i, (call, needle)) in checks.into_iter().enumerate() {
            assert_eq!(call(), CMSC_INVALID_ARGUMENT, "check {i}");
            let msg = last_error();
            assert!(msg.contains(needle), "check {i}: `{msg}` does not mention `{needle}`");
        }
        assert_eq!(positions(sim, 4), before);
        cmsc_destroy(sim);
    }
}

#[test]
fn divergence_reports_and_keeps_the_last_good_step() {
    let mut p = params();
    p.integrator = CmscIntegrator::CMSC_INTEGRATOR_VERLET as u32;
    p.time_step = 1.0;
    let sim = square(&p);
    // SAFETY: live handle.
    unsafe {
        let mut last = positions(sim, 4);
        for _ in 0..1000 {
            match cmsc_step(sim, 1) {
                CMSC_OK => last = positions(sim, 4),
                st => {
                    assert_eq!(st, CMSC_DIVERGED);
                    assert!(last_error().contains("diverged"), "{}", last_error());
                    assert_eq!(positions(sim, 4), last);
                    assert!(last.iter().all(|c| c.is_finite()));
                    cmsc_destroy(sim);
                    return;
                }
            }
        }
    }
    panic!("never diverged");
}
