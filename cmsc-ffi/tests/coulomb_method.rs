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

/// The Coulomb force (N, flat xyz) on each vertex of `sim`.
fn forces(sim: *mut CmscSim, n: usize) -> Vec<f64> {
    let mut f = vec![0.0; 3 * n];
    // SAFETY: a live handle and 3n writable doubles.
    assert_eq!(unsafe { cmsc_coulomb_forces(sim, f.as_mut_ptr(), n) }, CMSC_OK, "{}", last_error());
    f
}

/// `sqrt(Σ|f − f_ref|² / Σ|f_ref|²)`.
fn relative_rms(f: &[f64], reference: &[f64]) -> f64 {
    let d: f64 = f.iter().zip(reference).map(|(a, b)| (a - b) * (a - b)).sum();
    (d / reference.iter().map(|b| b * b).sum::<f64>()).sqrt()
}

#[test]
fn a_caller_asks_p3m_for_its_error_and_bad_tolerances_change_nothing() {
    // a wavy 80 × 80 cloth of same-sign charges: P3M's mesh, not a fallback
    let side = 80;
    let n = side * side;
    let x: Vec<f64> = (0..n)
        .flat_map(|i| {
            let (u, v) = ((i % side) as f64 / side as f64, (i / side) as f64 / side as f64);
            [2.0 * u, 2.0 * v, 0.1 * (6.0 * u).sin() * (4.0 * v).cos()]
        })
        .collect();
    let q: Vec<f64> = (0..n).map(|i| 1e-8 * (1.0 + 0.5 * ((i * 7) % 11) as f64 / 11.0)).collect();
    let made = |method: CmscCoulomb| {
        let mut p = params();
        p.coulomb = method as u32;
        let sim = common::create(&x, &vec![1e-3; n], &[], &[], &p);
        // SAFETY: a live handle and n charges.
        assert_eq!(unsafe { cmsc_set_charges(sim, q.as_ptr(), n) }, CMSC_OK);
        sim
    };
    let (exact, p3m) = (made(CMSC_COULOMB_DIRECT), made(CMSC_COULOMB_P3M));
    let reference = forces(exact, n);
    let coarse = relative_rms(&forces(p3m, n), &reference);
    // SAFETY: a live handle.
    assert_eq!(unsafe { cmsc_set_field_tolerance(p3m, 1e-3) }, CMSC_OK, "{}", last_error());
    let fine_forces = forces(p3m, n);
    let fine = relative_rms(&fine_forces, &reference);
    println!("P3M at n = {n}: relative RMS error {coarse:.2e} by default, {fine:.2e} asked for 1e-3");
    assert!(coarse <= 1e-2 && fine <= 1e-3, "{coarse:.2e}, {fine:.2e}");
    assert!(fine < coarse / 3.0, "asking for 1e-3 must make it more accurate: {coarse:.2e} → {fine:.2e}");
    for bad in [0.0, 5e-5, 0.5, f64::NAN, f64::INFINITY, -1e-3] {
        // SAFETY: a live handle.
        assert_eq!(unsafe { cmsc_set_field_tolerance(p3m, bad) }, CMSC_INVALID_ARGUMENT, "{bad}");
        assert!(last_error().contains("field_tolerance"), "{}", last_error());
        assert_eq!(forces(p3m, n), fine_forces, "a refused tolerance ({bad}) changed the field");
    }
    // SAFETY: NULL is rejected by contract.
    assert_eq!(unsafe { cmsc_set_field_tolerance(ptr::null_mut(), 1e-3) }, CMSC_INVALID_ARGUMENT);
    // SAFETY: handles from cmsc_create.
    unsafe {
        cmsc_destroy(exact);
        cmsc_destroy(p3m);
    }
}
