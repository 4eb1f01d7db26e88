//! `cmsc_set_acceleration` (issue 19): 1, the default, accelerates the local/global iterations,
//! 0 runs plain ones; at the same iteration count the two step differently (the accelerated one
//! closer to the converged step), with many iterations they agree; other values and a NULL
//! handle are rejected and change nothing.

mod common;

use std::ptr;

use cmsc::CmscStatus::*;
use cmsc::*;
use common::{create, distance, grid, last_error, params, positions, step_read_destroy};

const SIDE: usize = 8;

/// A horizontal `SIDE × SIDE` cloth, 0.1 m apart, 1 g per vertex, 50 N/m springs along the grid
/// and its diagonals, one edge pinned: it swings down under gravity.
fn cloth(iterations: u32) -> *mut CmscSim {
    let n = SIDE * SIDE;
    let (x, springs) = grid(SIDE, 0.1, true);
    let mut p = params();
    p.iterations = iterations;
    p.coulomb = CmscCoulomb::CMSC_COULOMB_OFF as u32;
    let sim = create(&x, &vec![1e-3; n], &springs, &vec![50.0; springs.len() / 2], &p);
    let pins: Vec<u32> = (0..SIDE as u32).collect();
    // SAFETY: a live handle; `pins` holds SIDE indices.
    assert_eq!(unsafe { cmsc_set_pins(sim, pins.as_ptr(), pins.len()) }, CMSC_OK);
    sim
}

/// Positions after 20 steps with `iterations`, and `enabled` set (or left at the default).
fn run(iterations: u32, enabled: Option<u32>) -> Vec<f64> {
    let sim = cloth(iterations);
    if let Some(e) = enabled {
        // SAFETY: a live handle.
        assert_eq!(unsafe { cmsc_set_acceleration(sim, e) }, CMSC_OK, "{}", last_error());
    }
    step_read_destroy(sim, 20, SIDE * SIDE)
}

#[test]
fn acceleration_is_on_by_default_toggles_and_keeps_the_fixed_point() {
    let converged = run(5000, Some(0));
    let (default, on, off) = (run(5, None), run(5, Some(1)), run(5, Some(0)));
    assert_eq!(default, on, "a new simulation must be accelerated");
    let (e_on, e_off) = (distance(&on, &converged), distance(&off, &converged));
    eprintln!("5 iterations, 20 steps: accelerated {e_on:.3e} m, plain {e_off:.3e} m from the converged run");
    assert!(e_on < 0.5 * e_off, "accelerated {e_on:e} vs plain {e_off:e}");
    // the same fixed point: many accelerated iterations reach the converged plain run
    assert!(distance(&run(300, Some(1)), &converged) < 1e-8);
}

#[test]
fn invalid_values_and_null_are_rejected_without_change() {
    let sim = cloth(5);
    for bad in [2, 7, u32::MAX] {
        // SAFETY: a live handle.
        assert_eq!(unsafe { cmsc_set_acceleration(sim, bad) }, CMSC_INVALID_ARGUMENT);
        assert!(last_error().contains("enabled"), "{}", last_error());
    }
    // still the default (accelerated) and usable
    // SAFETY: a live handle.
    assert_eq!(unsafe { cmsc_step(sim, 20) }, CMSC_OK);
    assert_eq!(positions(sim, SIDE * SIDE), run(5, None));
    // SAFETY: a handle from cmsc_create.
    unsafe { cmsc_destroy(sim) };
    // SAFETY: NULL handles are rejected by contract.
    assert_eq!(unsafe { cmsc_set_acceleration(ptr::null_mut(), 1) }, CMSC_INVALID_ARGUMENT);
    assert!(last_error().contains("sim"), "{}", last_error());
}
