//! `cmsc_set_far_field_interval` (issue 19): multiple time stepping of DDEF's far field. 1, the
//! default, evaluates the whole field every step; K > 1 holds the far part for K steps (the
//! run then differs slightly); with the exact sum there is nothing to hold; 0, values above
//! 1000 and a NULL handle are rejected and change nothing.

mod common;

use std::ptr;

use cmsc::CmscStatus::*;
use cmsc::*;
use common::{create, distance, grid, last_error, params, positions, step_read_destroy};

const SIDE: usize = 24;

/// A `SIDE × SIDE` sheet, 2 cm apart, 1 g per vertex, 10 N/m springs, without gravity, every
/// vertex charged 10 nC, so that it spreads by its own repulsion; Coulomb by `coulomb`.
fn sheet(coulomb: CmscCoulomb) -> *mut CmscSim {
    let n = SIDE * SIDE;
    let (x, springs) = grid(SIDE, 0.02, false);
    let mut p = params();
    p.gravity = [0.0; 3];
    p.coulomb = coulomb as u32;
    p.grid_points = 200;
    let sim = create(&x, &vec![1e-3; n], &springs, &vec![10.0; springs.len() / 2], &p);
    let q = vec![1e-8; n];
    // SAFETY: a live handle; `q` holds n charges.
    assert_eq!(unsafe { cmsc_set_charges(sim, q.as_ptr(), n) }, CMSC_OK);
    sim
}

/// Positions after 30 steps with the far field held for `interval` steps (or the default).
fn run(coulomb: CmscCoulomb, interval: Option<u32>) -> Vec<f64> {
    let sim = sheet(coulomb);
    if let Some(k) = interval {
        // SAFETY: a live handle.
        assert_eq!(unsafe { cmsc_set_far_field_interval(sim, k) }, CMSC_OK, "{}", last_error());
    }
    step_read_destroy(sim, 30, SIDE * SIDE)
}

#[test]
fn the_interval_holds_ddef_s_far_field_and_nothing_else() {
    use CmscCoulomb::*;
    let start = run(CMSC_COULOMB_OFF, None);
    let every = run(CMSC_COULOMB_DDEF, None);
    assert_eq!(every, run(CMSC_COULOMB_DDEF, Some(1)), "1 must be the default");
    let spread = distance(&every, &start);
    assert!(spread > 1e-3, "the sheet did not spread ({spread} m): the test shows nothing");
    let held = run(CMSC_COULOMB_DDEF, Some(4));
    let gap = distance(&held, &every);
    eprintln!("spread {spread:.3e} m; held for 4 steps: {gap:.3e} m from every step");
    assert!(gap > 0.0, "holding the far field changed nothing");
    assert!(gap < 0.05 * spread, "held {gap:e} m vs a spread of {spread:e} m");
    // the exact sum has no far part: the interval changes nothing
    assert_eq!(run(CMSC_COULOMB_DIRECT, Some(4)), run(CMSC_COULOMB_DIRECT, None));
}

#[test]
fn invalid_intervals_and_null_are_rejected_without_change() {
    let sim = sheet(CmscCoulomb::CMSC_COULOMB_DDEF);
    for bad in [0, 1001, u32::MAX] {
        // SAFETY: a live handle.
        assert_eq!(unsafe { cmsc_set_far_field_interval(sim, bad) }, CMSC_INVALID_ARGUMENT);
        assert!(last_error().contains("far_field_interval"), "{}", last_error());
    }
    // still the default (every step) and usable
    // SAFETY: a live handle.
    assert_eq!(unsafe { cmsc_step(sim, 30) }, CMSC_OK);
    assert_eq!(positions(sim, SIDE * SIDE), run(CmscCoulomb::CMSC_COULOMB_DDEF, None));
    // SAFETY: a handle from cmsc_create.
    unsafe { cmsc_destroy(sim) };
    // SAFETY: NULL handles are rejected by contract.
    assert_eq!(unsafe { cmsc_set_far_field_interval(ptr::null_mut(), 2) }, CMSC_INVALID_ARGUMENT);
    assert!(last_error().contains("sim"), "{}", last_error());
}
