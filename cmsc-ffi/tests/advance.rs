//! `cmsc_advance`, `cmsc_set_iteration_tolerance` and `cmsc_last_iterations` (issue 29): a fixed
//! count equals as many `cmsc_step`s at `seconds / k`; the step count rises with the charges;
//! bad arguments (NULL, a duration that is not positive and finite, min_steps 0 or above
//! max_steps, max_steps above CMSC_MAX_ADVANCE_STEPS, a negative or NaN tolerance) are
//! CMSC_INVALID_ARGUMENT with a message and change nothing.

mod common;

use std::ptr;

use cmsc::CmscStatus::*;
use cmsc::*;
use common::{create, grid, last_error, params, positions};

const SIDE: usize = 8;
const N: usize = SIDE * SIDE;
const FRAME: f64 = 1.0 / 24.0;

/// A horizontal `SIDE × SIDE` cloth, 0.1 m apart, 10 g per vertex, 50 N/m springs, one edge
/// pinned, exact Coulomb, every vertex charged `q` (C), steps of `h` (s).
fn cloth(q: f64, h: f64) -> *mut CmscSim {
    let (x, springs) = grid(SIDE, 0.1, true);
    let mut p = params();
    p.time_step = h;
    p.coulomb = CmscCoulomb::CMSC_COULOMB_DIRECT as u32;
    let sim = create(&x, &vec![0.01; N], &springs, &vec![50.0; springs.len() / 2], &p);
    let pins: Vec<u32> = (0..SIDE as u32).collect();
    // SAFETY: a live handle; `pins` holds SIDE indices, the charges N.
    unsafe {
        assert_eq!(cmsc_set_pins(sim, pins.as_ptr(), pins.len()), CMSC_OK);
        assert_eq!(cmsc_set_charges(sim, vec![q; N].as_ptr(), N), CMSC_OK);
        // the charges in force from the start (advance ramps edits made since the last step)
        assert_eq!(cmsc_step(sim, 1), CMSC_OK);
    }
    sim
}

fn advance(sim: *mut CmscSim, seconds: f64, min: u32, max: u32) -> (CmscStatus, u32) {
    let mut k = u32::MAX;
    // SAFETY: a live handle, `k` writable.
    let status = unsafe { cmsc_advance(sim, seconds, min, max, &mut k) };
    (status, k)
}

fn iterations(sim: *const CmscSim) -> u64 {
    let mut total = u64::MAX;
    // SAFETY: a live handle, `total` writable.
    assert_eq!(unsafe { cmsc_last_iterations(sim, &mut total) }, CMSC_OK);
    total
}

#[test]
fn a_fixed_count_equals_as_many_steps() {
    let k = 4;
    let h = FRAME / k as f64;
    let (a, b) = (cloth(5e-8, h), cloth(5e-8, h));
    for _ in 0..3 {
        assert_eq!(advance(a, FRAME, k, k), (CMSC_OK, k), "{}", last_error());
        // SAFETY: a live handle.
        assert_eq!(unsafe { cmsc_step(b, k) }, CMSC_OK);
    }
    assert_eq!(positions(a, N), positions(b, N));
    assert_eq!(iterations(a), u64::from(k) * u64::from(params().iterations));
    assert_eq!(iterations(b), iterations(a));
    // a call with other steps in between: cmsc_step still steps CmscParams.time_step
    assert_eq!(advance(a, FRAME, 2 * k, 2 * k), (CMSC_OK, 2 * k));
    assert_eq!(advance(b, FRAME, 2 * k, 2 * k), (CMSC_OK, 2 * k));
    // SAFETY: live handles.
    unsafe {
        assert_eq!(cmsc_step(a, 1), CMSC_OK);
        assert_eq!(cmsc_step(b, 1), CMSC_OK);
    }
    assert_eq!(positions(a, N), positions(b, N));
    let c = cloth(5e-8, h);
    for _ in 0..3 {
        assert_eq!(advance(c, FRAME, 2 * k, 2 * k), (CMSC_OK, 2 * k));
    }
    assert_ne!(positions(c, N), positions(b, N), "another step length moves differently");
    // SAFETY: handles from cmsc_create, destroyed once.
    unsafe {
        cmsc_destroy(a);
        cmsc_destroy(b);
        cmsc_destroy(c);
    }
}

#[test]
fn more_charge_takes_more_steps() {
    let (weak, strong) = (cloth(1e-9, 1.0 / 120.0), cloth(1e-6, 1.0 / 120.0));
    let (status, k_weak) = advance(weak, FRAME, 1, 128);
    assert_eq!(status, CMSC_OK, "{}", last_error());
    let (status, k_strong) = advance(strong, FRAME, 1, 128);
    assert_eq!(status, CMSC_OK, "{}", last_error());
    assert!(k_strong >= 4 * k_weak, "{k_strong} steps at 1 µC per vertex, {k_weak} at 1 nC");
    assert!(iterations(strong) > iterations(weak));
    // SAFETY: handles from cmsc_create, destroyed once.
    unsafe {
        cmsc_destroy(weak);
        cmsc_destroy(strong);
    }
}

#[test]
fn bad_arguments_change_nothing() {
    let sim = cloth(1e-8, 1.0 / 120.0);
    let x = positions(sim, N);
    let cases = [
        (0.0, 1, 8, "seconds"),
        (-FRAME, 1, 8, "seconds"),
        (f64::NAN, 1, 8, "seconds"),
        (f64::INFINITY, 1, 8, "seconds"),
        (FRAME, 0, 8, "min_steps"),
        (FRAME, 9, 8, "min_steps"),
        (FRAME, 1, CMSC_MAX_ADVANCE_STEPS + 1, "max_steps"),
    ];
    for (seconds, min, max, name) in cases {
        let (status, k) = advance(sim, seconds, min, max);
        assert_eq!(status, CMSC_INVALID_ARGUMENT, "({seconds}, {min}, {max})");
        assert!(last_error().contains(name), "({seconds}, {min}, {max}): {}", last_error());
        assert_eq!(k, u32::MAX, "steps_taken is written only on success");
        assert_eq!(positions(sim, N), x);
    }
    let mut k = 0;
    // SAFETY: NULL handle / NULL out-pointer: rejected before any use.
    unsafe {
        assert_eq!(cmsc_advance(ptr::null_mut(), FRAME, 1, 8, &mut k), CMSC_INVALID_ARGUMENT);
        assert!(last_error().contains("sim"));
        assert_eq!(cmsc_advance(sim, FRAME, 1, 8, ptr::null_mut()), CMSC_INVALID_ARGUMENT);
        assert!(last_error().contains("steps_taken"), "{}", last_error());
        assert_eq!(cmsc_last_iterations(sim, ptr::null_mut()), CMSC_INVALID_ARGUMENT);
        for bad in [-1e-3, f64::NAN, f64::INFINITY] {
            assert_eq!(cmsc_set_iteration_tolerance(sim, bad), CMSC_INVALID_ARGUMENT, "{bad}");
            assert!(last_error().contains("iteration_tolerance"), "{}", last_error());
        }
        assert_eq!(cmsc_set_iteration_tolerance(ptr::null_mut(), 1e-3), CMSC_INVALID_ARGUMENT);
    }
    assert_eq!(positions(sim, N), x);
    // nothing changed: still a fixed count of iterations
    assert_eq!(advance(sim, FRAME, 2, 2), (CMSC_OK, 2));
    assert_eq!(iterations(sim), 2 * u64::from(params().iterations));
    // SAFETY: a handle from cmsc_create, destroyed once.
    unsafe { cmsc_destroy(sim) };
}

#[test]
fn a_tolerance_runs_fewer_iterations() {
    let sim = cloth(1e-8, 1.0 / 120.0);
    // SAFETY: a live handle.
    unsafe {
        assert_eq!(cmsc_step(sim, 30), CMSC_OK);
        assert_eq!(cmsc_set_iteration_tolerance(sim, 1e-2), CMSC_OK, "{}", last_error());
        assert_eq!(cmsc_step(sim, 4), CMSC_OK);
    }
    let taken = iterations(sim);
    assert!(taken < 4 * u64::from(params().iterations), "{taken} iterations in 4 steps");
    assert!(taken >= 4);
    // SAFETY: a handle from cmsc_create, destroyed once.
    unsafe { cmsc_destroy(sim) };
}

fn contact_steps(sim: *const CmscSim, seconds: f64) -> (CmscStatus, u32) {
    let mut k = u32::MAX;
    // SAFETY: a live handle, `k` writable.
    let status = unsafe { cmsc_contact_steps(sim, seconds, &mut k) };
    (status, k)
}

#[test]
fn contact_steps_are_the_contact_bound_over_a_sphere_a_vertex_rests_on() {
    // Vertex 27 (row 3, column 3: four 0.1 m springs and two 0.141 m diagonals of 50 N/m, 10 g)
    // rests 0.5 mm above a sphere: c = √(Σ k l² / m) = √(4 N m / 0.01 kg) = 20 m/s, and the
    // bound asks for ⌈(1/24 s) c / (2.3 R)⌉ steps per frame; no other vertex is near it.
    let sim = cloth(0.0, FRAME);
    assert_eq!(contact_steps(sim, FRAME), (CMSC_OK, 1), "no obstacle");
    for radius in [0.05, 0.025] {
        let center = [0.3, 0.3, -radius - 5e-4];
        // SAFETY: a live handle; one centre and one radius.
        assert_eq!(unsafe { cmsc_set_sphere_colliders(sim, center.as_ptr(), &radius, 1) }, CMSC_OK);
        let expected = (FRAME * 20.0 / (2.3 * radius)).ceil() as u32;
        assert_eq!(contact_steps(sim, FRAME), (CMSC_OK, expected), "R = {radius} m");
    }
    assert_eq!(contact_steps(sim, FRAME).1, 15);
    // per vertex: vertex 27 asks for the 15, every other vertex for 1
    let mut each = vec![u32::MAX; N];
    // SAFETY: a live handle, `each` writable for N values.
    assert_eq!(unsafe { cmsc_contact_steps_per_vertex(sim, FRAME, each.as_mut_ptr(), N) }, CMSC_OK);
    let expected: Vec<u32> = (0..N).map(|i| if i == 27 { 15 } else { 1 }).collect();
    assert_eq!(each, expected);
    let x = positions(sim, N);
    for bad in [0.0, -FRAME, f64::NAN, f64::INFINITY] {
        assert_eq!(contact_steps(sim, bad), (CMSC_INVALID_ARGUMENT, u32::MAX), "{bad}");
        assert!(last_error().contains("seconds"), "{}", last_error());
    }
    // SAFETY: NULL handle / NULL out-pointer: rejected before any use.
    unsafe {
        assert_eq!(cmsc_contact_steps(ptr::null(), FRAME, &mut 0), CMSC_INVALID_ARGUMENT);
        assert_eq!(cmsc_contact_steps(sim, FRAME, ptr::null_mut()), CMSC_INVALID_ARGUMENT);
        assert!(last_error().contains("steps"), "{}", last_error());
        let mut each = vec![u32::MAX; N + 1];
        for (seconds, n, needle) in
            [(FRAME, N + 1, "does not match"), (FRAME, N - 1, "does not match"), (0.0, N, "seconds")]
        {
            let status = cmsc_contact_steps_per_vertex(sim, seconds, each.as_mut_ptr(), n);
            assert_eq!(status, CMSC_INVALID_ARGUMENT, "({seconds}, {n})");
            assert!(last_error().contains(needle), "{}", last_error());
        }
        assert!(each.iter().all(|&k| k == u32::MAX), "written only on success");
        assert_eq!(cmsc_contact_steps_per_vertex(sim, FRAME, ptr::null_mut(), N), CMSC_INVALID_ARGUMENT);
        assert_eq!(
            cmsc_contact_steps_per_vertex(ptr::null(), FRAME, each.as_mut_ptr(), N),
            CMSC_INVALID_ARGUMENT
        );
    }
    assert_eq!(positions(sim, N), x, "asking changes nothing");
    let (status, taken) = advance(sim, FRAME, 1, 64);
    assert!(status == CMSC_OK && taken >= 15, "cmsc_advance takes at least as many: {taken}");
    // SAFETY: a handle from cmsc_create, destroyed once.
    unsafe { cmsc_destroy(sim) };
}

fn asked_steps(sim: *const CmscSim, seconds: f64) -> (CmscStatus, CmscAskedSteps) {
    let mut out = CmscAskedSteps { charge: u32::MAX, motion: u32::MAX, contact: u32::MAX };
    // SAFETY: a live handle, `out` writable.
    let status = unsafe { cmsc_asked_steps(sim, seconds, &mut out) };
    (status, out)
}

fn last_asked(sim: *const CmscSim) -> CmscAskedSteps {
    let mut out = CmscAskedSteps { charge: u32::MAX, motion: u32::MAX, contact: u32::MAX };
    // SAFETY: a live handle, `out` writable.
    assert_eq!(unsafe { cmsc_last_asked_steps(sim, &mut out) }, CMSC_OK);
    out
}

#[test]
fn asked_steps_say_what_the_bounds_asked_where_max_steps_capped_them() {
    // 1 µC per vertex: the charge bound asks for more steps over a frame than a cap of 2
    let sim = cloth(1e-6, 1.0 / 120.0);
    assert_eq!(last_asked(sim), CmscAskedSteps::default(), "after cmsc_step: nothing asked");
    let (status, before) = asked_steps(sim, FRAME);
    assert_eq!(status, CMSC_OK, "{}", last_error());
    assert!(before.charge > 4 && before.contact == 1, "{before:?}");
    let mut charge = u32::MAX;
    // SAFETY: a live handle, `charge` writable.
    assert_eq!(unsafe { cmsc_charge_steps(sim, FRAME, &mut charge) }, CMSC_OK);
    assert_eq!(charge, before.charge, "cmsc_charge_steps is cmsc_asked_steps' charge");
    // per vertex: the largest is cmsc_charge_steps', the pinned edge asks for nothing
    let mut each = vec![u32::MAX; N];
    // SAFETY: a live handle, `each` writable for N values.
    assert_eq!(unsafe { cmsc_charge_steps_per_vertex(sim, FRAME, each.as_mut_ptr(), N) }, CMSC_OK);
    assert_eq!(each.iter().copied().max(), Some(charge));
    assert!(each[..SIDE].iter().all(|&k| k == 1) && each[SIDE..].iter().all(|&k| k > 1), "{each:?}");
    // SAFETY: a live handle; a wrong count is refused before anything is written.
    unsafe {
        let mut short = vec![u32::MAX; N - 1];
        let status = cmsc_charge_steps_per_vertex(sim, FRAME, short.as_mut_ptr(), N - 1);
        assert_eq!(status, CMSC_INVALID_ARGUMENT);
        assert!(last_error().contains("steps"), "{}", last_error());
        assert!(short.iter().all(|&k| k == u32::MAX));
    }
    assert_eq!(advance(sim, FRAME, 1, 2), (CMSC_OK, 2));
    assert_eq!(last_asked(sim), before, "the capped call records what its bounds asked");
    let (_, now) = asked_steps(sim, FRAME);
    let (status, taken) = advance(sim, FRAME, 1, CMSC_MAX_ADVANCE_STEPS);
    assert_eq!(status, CMSC_OK);
    assert_eq!(last_asked(sim), now);
    assert!(taken >= now.charge.max(now.motion), "{taken} steps for {now:?}");
    // SAFETY: a live handle.
    assert_eq!(unsafe { cmsc_step(sim, 1) }, CMSC_OK);
    assert_eq!(last_asked(sim), CmscAskedSteps::default());
    let x = positions(sim, N);
    for bad in [0.0, -FRAME, f64::NAN, f64::INFINITY] {
        let (status, out) = asked_steps(sim, bad);
        assert_eq!(status, CMSC_INVALID_ARGUMENT, "{bad}");
        assert!(last_error().contains("seconds"), "{}", last_error());
        assert_eq!(out.charge, u32::MAX, "written only on success");
    }
    // SAFETY: NULL handle / NULL out-pointer: rejected before any use.
    unsafe {
        let mut out = CmscAskedSteps::default();
        assert_eq!(cmsc_asked_steps(ptr::null(), FRAME, &mut out), CMSC_INVALID_ARGUMENT);
        assert_eq!(cmsc_asked_steps(sim, FRAME, ptr::null_mut()), CMSC_INVALID_ARGUMENT);
        assert!(last_error().contains("out"), "{}", last_error());
        assert_eq!(cmsc_last_asked_steps(ptr::null(), &mut out), CMSC_INVALID_ARGUMENT);
        assert_eq!(cmsc_last_asked_steps(sim, ptr::null_mut()), CMSC_INVALID_ARGUMENT);
        let mut charge = u32::MAX;
        assert_eq!(cmsc_charge_steps(ptr::null(), FRAME, &mut charge), CMSC_INVALID_ARGUMENT);
        assert_eq!(cmsc_charge_steps(sim, FRAME, ptr::null_mut()), CMSC_INVALID_ARGUMENT);
        assert_eq!(cmsc_charge_steps(sim, f64::NAN, &mut charge), CMSC_INVALID_ARGUMENT);
        assert_eq!(charge, u32::MAX, "written only on success");
    }
    assert_eq!(positions(sim, N), x);
    // SAFETY: a handle from cmsc_create, destroyed once.
    unsafe { cmsc_destroy(sim) };
}
