//! `cmsc_get_coulomb_method` reports what runs: AUTO and AUTO_CPU resolved by vertex count, an
//! explicit method as itself, never AUTO; a NULL handle or output is rejected.

mod common;

use std::ptr;

use cmsc::CmscCoulomb::*;
use cmsc::CmscStatus::*;
use cmsc::*;
use common::{last_error, params};

/// The method a simulation of `n` points on a line (no springs) runs when created with `asked`.
fn resolved(n: usize, asked: CmscCoulomb) -> u32 {
    let x: Vec<f64> = (0..n).flat_map(|i| [i as f64 * 0.01, (i % 7) as f64 * 0.003, 0.0]).collect();
    let m = vec![1e-3; n];
    let mut p = params();
    p.coulomb = asked as u32;
    let mut sim = ptr::null_mut();
    // SAFETY: arrays are valid for their lengths; no springs.
    let st = unsafe { cmsc_create(x.as_ptr(), n, m.as_ptr(), ptr::null(), 0, ptr::null(), &p, &mut sim) };
    assert_eq!(st, CMSC_OK, "{}", last_error());
    let mut out = u32::MAX;
    // SAFETY: a live handle and a writable u32.
    assert_eq!(unsafe { cmsc_get_coulomb_method(sim, &mut out) }, CMSC_OK);
    // SAFETY: a handle from cmsc_create.
    unsafe { cmsc_destroy(sim) };
    out
}

#[test]
fn auto_resolves_by_vertex_count_and_explicit_methods_stand_for_themselves() {
    // No GPU is asked for by AUTO_CPU; AUTO may pick one only from 5,000 vertices.
    assert_eq!(resolved(100, CMSC_COULOMB_AUTO), CMSC_COULOMB_DIRECT as u32);
    assert_eq!(resolved(100, CMSC_COULOMB_AUTO_CPU), CMSC_COULOMB_DIRECT as u32);
    assert_eq!(resolved(10_000, CMSC_COULOMB_AUTO_CPU), CMSC_COULOMB_P3M as u32);
    let auto_10k = resolved(10_000, CMSC_COULOMB_AUTO);
    assert!(
        [CMSC_COULOMB_P3M as u32, CMSC_COULOMB_DIRECT_GPU as u32].contains(&auto_10k),
        "AUTO at 10K ran {auto_10k}"
    );
    assert_eq!(resolved(100, CMSC_COULOMB_DDEF), CMSC_COULOMB_DDEF as u32);
    assert_eq!(resolved(100, CMSC_COULOMB_P3M), CMSC_COULOMB_P3M as u32);
    assert_eq!(resolved(100, CMSC_COULOMB_OFF), CMSC_COULOMB_OFF as u32);
    assert_eq!(resolved(20_000, CMSC_COULOMB_DIRECT), CMSC_COULOMB_DIRECT as u32);
}

#[test]
fn null_handle_or_output_is_invalid() {
    let mut out = 0u32;
    // SAFETY: NULL handles are accepted and rejected by contract.
    assert_eq!(unsafe { cmsc_get_coulomb_method(ptr::null(), &mut out) }, CMSC_INVALID_ARGUMENT);
    assert!(last_error().contains("sim"), "{}", last_error());
    let sim = common::square(&params());
    // SAFETY: a live handle; NULL output is rejected.
    assert_eq!(unsafe { cmsc_get_coulomb_method(sim, ptr::null_mut()) }, CMSC_INVALID_ARGUMENT);
    assert!(last_error().contains("out"), "{}", last_error());
    // SAFETY: a handle from cmsc_create.
    unsafe { cmsc_destroy(sim) };
}
