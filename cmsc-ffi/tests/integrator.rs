//! CMSC_INTEGRATOR_IMEX_LOW_DISSIPATION through the C ABI: its value is the contract's, a
//! simulation created with it steps, keeps its energy and conserves momentum; the gradient
//! refuses it with a message that says why.

mod common;

use std::ptr;

use cmsc::CmscStatus::*;
use cmsc::*;
use common::{last_error, params, positions, square};

#[test]
fn low_dissipation_integrator_has_its_abi_value_and_steps() {
    assert_eq!(CmscIntegrator::CMSC_INTEGRATOR_IMEX as u32, 0);
    assert_eq!(CmscIntegrator::CMSC_INTEGRATOR_VERLET as u32, 1);
    assert_eq!(CmscIntegrator::CMSC_INTEGRATOR_IMEX_LOW_DISSIPATION as u32, 2);
    let mut p = params();
    p.gravity = [0.0; 3];
    p.time_step = 0.02;
    p.integrator = CmscIntegrator::CMSC_INTEGRATOR_IMEX_LOW_DISSIPATION as u32;
    let sim = square(&p);
    let mut e0 = CmscEnergies { kinetic: 0.0, spring: 0.0, coulomb: 0.0, external: 0.0, total: 0.0 };
    let mut e1 = e0;
    // SAFETY: live handle; outputs writable.
    unsafe {
        assert_eq!(cmsc_energies(sim, &mut e0), CMSC_OK);
        assert_eq!(cmsc_step(sim, 200), CMSC_OK, "{}", last_error());
        assert_eq!(cmsc_energies(sim, &mut e1), CMSC_OK);
        let mut v = [0.0; 12];
        assert_eq!(cmsc_get_velocities(sim, v.as_mut_ptr(), 4), CMSC_OK);
        // equal masses: the momentum is the sum of the velocities, zero from rest (to round-off)
        let scale: f64 = v.iter().map(|c| c.abs()).sum();
        for c in 0..3 {
            let p: f64 = (0..4).map(|i| v[3 * i + c]).sum();
            assert!(p.abs() < 1e-10 * scale, "momentum component {c}: {p} (velocities {scale})");
        }
    }
    assert!(positions(sim, 4).iter().all(|c| c.is_finite()));
    // no energy created beyond the safeguard's band (0.5 % of the energy scale)
    assert!(e1.total <= e0.total + 0.01 * e0.total.abs(), "{} -> {}", e0.total, e1.total);
    assert!(e1.kinetic > 0.0, "the charges should set the square in motion");

    // the gradient refuses it, naming the integrator
    let (w, q, t) = ([1.0; 4], [1e-7], [0.0; 12]);
    let (mut loss, mut grad) = (0.0, [0.0]);
    // SAFETY: live handle; arrays sized 1 × 4, 1, 12; outputs writable.
    let st = unsafe {
        cmsc_rollout_gradient(
            sim,
            5,
            w.as_ptr(),
            1,
            q.as_ptr(),
            t.as_ptr(),
            &mut loss,
            grad.as_mut_ptr(),
            ptr::null_mut(),
        )
    };
    assert_eq!(st, CMSC_INVALID_ARGUMENT);
    let msg = last_error();
    assert!(msg.contains("params.integrator") && msg.contains("low-dissipation"), "{msg}");
    // SAFETY: live handle.
    unsafe { cmsc_destroy(sim) };
}
