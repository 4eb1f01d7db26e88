//! The GPU Coulomb methods through the C ABI. Without a CUDA driver or device (as in CI),
//! `cmsc_create` returns CMSC_UNAVAILABLE, a NULL handle and the reason in `cmsc_last_error()`
//! — a status, not a panic (that would be CMSC_INTERNAL) — and AUTO still works. With a
//! device, both methods create a simulation that steps.

mod common;

use std::ptr;

use cmsc::CmscCoulomb::*;
use cmsc::CmscStatus::*;
use cmsc::*;
use cmsc_core::coulomb::gpu;
use common::{last_error, params};

/// `cmsc_create` on a small charged strip with `coulomb`; returns the status, the handle and
/// the last error.
fn create(coulomb: CmscCoulomb) -> (CmscStatus, *mut CmscSim, String) {
    let n = 40;
    let x: Vec<f64> = (0..n).flat_map(|i| [0.01 * i as f64, 0.002 * (i % 2) as f64, 0.0]).collect();
    let springs: Vec<u32> = (0..n as u32 - 1).flat_map(|i| [i, i + 1]).collect();
    let k = vec![50.0; n - 1];
    let m = vec![1e-3; n];
    let mut p = params();
    p.coulomb = coulomb as u32;
    let mut sim = ptr::NonNull::<CmscSim>::dangling().as_ptr();
    // SAFETY: the arrays hold n vertices and n - 1 springs.
    let st =
        unsafe { cmsc_create(x.as_ptr(), n, m.as_ptr(), springs.as_ptr(), n - 1, k.as_ptr(), &p, &mut sim) };
    (st, sim, last_error())
}

/// Charges the simulation, steps it and checks the Coulomb forces are finite and not all zero.
fn charge_and_step(sim: *mut CmscSim) {
    let n = 40;
    let q: Vec<f64> = (0..n).map(|i| if i % 3 == 0 { -1e-8 } else { 2e-8 }).collect();
    let mut f = vec![0.0; 3 * n];
    // SAFETY: a live handle of n vertices; buffers of n and 3n doubles.
    unsafe {
        assert_eq!(cmsc_set_charges(sim, q.as_ptr(), n), CMSC_OK, "{}", last_error());
        assert_eq!(cmsc_step(sim, 5), CMSC_OK, "{}", last_error());
        assert_eq!(cmsc_coulomb_forces(sim, f.as_mut_ptr(), n), CMSC_OK, "{}", last_error());
    }
    assert!(f.iter().all(|v| v.is_finite()) && f.iter().any(|v| *v != 0.0));
}

#[test]
fn gpu_methods_are_unavailable_with_the_reason_when_there_is_no_device() {
    let device = gpu::device();
    for method in [CMSC_COULOMB_DDEF_GPU, CMSC_COULOMB_DIRECT_GPU] {
        let (st, sim, msg) = create(method);
        match &device {
            Err(e @ cmsc_core::Error::GpuUnavailable { reason, detail }) => {
                // every reason (no driver, no device, no NVRTC, an unsupported device) is a
                // status, with the core error's whole message, detail included
                assert_eq!(st, CMSC_UNAVAILABLE, "{method:?} ({reason:?}): {msg}");
                assert!(sim.is_null(), "out must be NULL after a failed create");
                assert!(!detail.is_empty(), "{reason:?} with no detail");
                assert_eq!(msg, e.to_string(), "{method:?} ({reason:?})");
            }
            Ok(info) => {
                assert_eq!(st, CMSC_OK, "{method:?} on {}: {msg}", info.name);
                charge_and_step(sim);
                // SAFETY: a handle from cmsc_create, destroyed once.
                unsafe { cmsc_destroy(sim) };
            }
            Err(e) => panic!("the GPU probe failed unexpectedly: {e}"),
        }
    }
    // AUTO never fails for want of a GPU, and the error slot is cleared by a good call
    let (st, sim, msg) = create(CMSC_COULOMB_AUTO);
    assert_eq!(st, CMSC_OK, "{msg}");
    assert_eq!(msg, "");
    charge_and_step(sim);
    // SAFETY: a handle from cmsc_create, destroyed once.
    unsafe { cmsc_destroy(sim) };
}
