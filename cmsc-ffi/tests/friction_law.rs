//! `cmsc_set_collider_friction_law` (issue 30): Coulomb friction holds a point on a slope
//! steeper than nothing but shallower than `atan μ` and slides it `½ g (sin θ − μ cos θ) t²`
//! otherwise; a NULL handle, an unknown law, a bad μ and a switch back to per-step friction with
//! `μ > 1` in force are CMSC_INVALID_ARGUMENT and change nothing (the motion after them is bit
//! for bit that of a simulation that never got the call).

mod common;

use std::ptr;

use cmsc::CmscStatus::*;
use cmsc::*;
use common::{create, last_error, params};

const THETA_DEG: f64 = 20.0;
const THICKNESS: f64 = 0.01;

/// Outward normal of the slope: tilted by θ about y, rising along x.
fn normal() -> [f64; 3] {
    let t = THETA_DEG.to_radians();
    [-t.sin(), 0.0, t.cos()]
}

/// Two free points (no springs), 2 m apart along y, resting on the slope, at h = 1/120 s with no
/// Coulomb force.
fn on_slope() -> *mut CmscSim {
    let mut p = params();
    p.time_step = 1.0 / 120.0;
    p.coulomb = CmscCoulomb::CMSC_COULOMB_OFF as u32;
    let n = normal().map(|c| c * THICKNESS);
    let x = [n[0], n[1] - 1.0, n[2], n[0], n[1] + 1.0, n[2]];
    create(&x, &[0.01; 2], &[], &[], &p)
}

/// Installs the slope (a 20 m square) with friction `mu`; returns the status.
fn set_slope(sim: *mut CmscSim, mu: f64) -> CmscStatus {
    let t = THETA_DEG.to_radians();
    let corner = |x: f64, y: f64| [x * t.cos(), y, x * t.sin()];
    let v: Vec<f64> =
        [corner(-10.0, -10.0), corner(10.0, -10.0), corner(10.0, 10.0), corner(-10.0, 10.0)].concat();
    let tri = [0u32, 1, 2, 0, 2, 3];
    // SAFETY: live handle; arrays valid for their lengths.
    unsafe {
        cmsc_set_mesh_colliders(sim, v.as_ptr(), 4, tri.as_ptr(), 2, [0u32, 2].as_ptr(), &THICKNESS, &mu, 1)
    }
}

/// Positions and velocities after 1 s, bits; destroys `sim`.
fn run(sim: *mut CmscSim) -> Vec<u64> {
    let (mut x, mut v) = (vec![0.0; 6], vec![0.0; 6]);
    // SAFETY: live handle, buffers of 3 n doubles; destroyed once.
    unsafe {
        assert_eq!(cmsc_step(sim, 120), CMSC_OK, "{}", last_error());
        assert_eq!(cmsc_get_positions(sim, x.as_mut_ptr(), 2), CMSC_OK);
        assert_eq!(cmsc_get_velocities(sim, v.as_mut_ptr(), 2), CMSC_OK);
        cmsc_destroy(sim);
    }
    x.iter().chain(&v).map(|c| c.to_bits()).collect()
}

/// How far the first point slid in `state` (from `run`).
fn slid(state: &[u64]) -> f64 {
    let n = normal().map(|c| c * THICKNESS);
    let x: Vec<f64> = state[..3].iter().map(|b| f64::from_bits(*b)).collect();
    ((x[0] - n[0]).powi(2) + (x[1] - n[1] + 1.0).powi(2) + (x[2] - n[2]).powi(2)).sqrt()
}

fn with_law(law: u32, mu: f64) -> Vec<u64> {
    let sim = on_slope();
    // SAFETY: live handle.
    assert_eq!(unsafe { cmsc_set_collider_friction_law(sim, law) }, CMSC_OK, "{}", last_error());
    assert_eq!(set_slope(sim, mu), CMSC_OK, "{}", last_error());
    run(sim)
}

const PER_STEP: u32 = CmscFrictionLaw::CMSC_FRICTION_PER_STEP as u32;
const COULOMB: u32 = CmscFrictionLaw::CMSC_FRICTION_COULOMB as u32;

#[test]
fn coulomb_friction_holds_within_the_cone_and_slides_the_analytic_distance_outside_it() {
    let t = THETA_DEG.to_radians();
    assert!(slid(&with_law(COULOMB, 0.8)) < 1e-3);
    let expected = 0.5 * 9.81 * (t.sin() - 0.2 * t.cos());
    let d = slid(&with_law(COULOMB, 0.2));
    assert!((d / expected - 1.0).abs() < 0.03, "slid {d} m, expected {expected} m");
    // the default is the per-step law: the same as setting it
    let sim = on_slope();
    assert_eq!(set_slope(sim, 0.2), CMSC_OK);
    assert_eq!(run(sim), with_law(PER_STEP, 0.2));
}

#[test]
fn null_and_unknown_laws_are_rejected_and_change_nothing() {
    // SAFETY: NULL is checked.
    assert_eq!(unsafe { cmsc_set_collider_friction_law(ptr::null_mut(), COULOMB) }, CMSC_INVALID_ARGUMENT);
    assert!(last_error().contains("sim"), "{}", last_error());
    let sim = on_slope();
    assert_eq!(set_slope(sim, 0.2), CMSC_OK);
    for bad in [2, 7, u32::MAX] {
        // SAFETY: live handle.
        assert_eq!(unsafe { cmsc_set_collider_friction_law(sim, bad) }, CMSC_INVALID_ARGUMENT);
        assert!(last_error().contains("law"), "{}", last_error());
    }
    assert_eq!(run(sim), with_law(PER_STEP, 0.2));
}

#[test]
fn coulomb_coefficients_are_checked_and_rejections_change_nothing() {
    let sim = on_slope();
    assert_eq!(set_slope(sim, 1.5), CMSC_INVALID_ARGUMENT, "per step: 0..1");
    // SAFETY: live handle.
    assert_eq!(unsafe { cmsc_set_collider_friction_law(sim, COULOMB) }, CMSC_OK);
    assert_eq!(set_slope(sim, 0.2), CMSC_OK);
    for bad in [-0.1, f64::NAN, f64::INFINITY] {
        assert_eq!(set_slope(sim, bad), CMSC_INVALID_ARGUMENT, "{bad}");
        assert!(last_error().contains("friction"), "{}", last_error());
    }
    assert_eq!(run(sim), with_law(COULOMB, 0.2));
    // μ > 1 once Coulomb; then switching back to per step is refused and keeps Coulomb
    let sim = on_slope();
    // SAFETY: live handle.
    unsafe {
        assert_eq!(cmsc_set_collider_friction_law(sim, COULOMB), CMSC_OK);
        assert_eq!(set_slope(sim, 1.5), CMSC_OK, "{}", last_error());
        assert_eq!(cmsc_set_collider_friction_law(sim, PER_STEP), CMSC_INVALID_ARGUMENT);
        assert!(last_error().contains("friction"), "{}", last_error());
    }
    assert_eq!(run(sim), with_law(COULOMB, 1.5));
}
