//! Helpers shared by the C ABI tests: calls go through the `extern "C"` functions exactly as a
//! C caller's would.
#![allow(dead_code)] // each test binary uses a subset

use std::ffi::CStr;
use std::ptr;

use cmsc::*;

pub fn params() -> CmscParams {
    let mut p = std::mem::MaybeUninit::<CmscParams>::uninit();
    // SAFETY: `p` is writable; cmsc_params_default writes every field.
    unsafe {
        cmsc_params_default(p.as_mut_ptr());
        p.assume_init()
    }
}

pub fn last_error() -> String {
    // SAFETY: cmsc_last_error never returns NULL and the string lives until the next call.
    unsafe { CStr::from_ptr(cmsc_last_error()) }.to_string_lossy().into_owned()
}

/// A charged square of 4 vertices with 5 springs; returns the handle.
pub fn square(p: &CmscParams) -> *mut CmscSim {
    let x = [0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.1, 0.1, 0.0, 0.0, 0.1, 0.0];
    let m = [0.01; 4];
    let s = [0u32, 1, 1, 2, 2, 3, 3, 0, 0, 2];
    let k = [50.0; 5];
    let mut sim = ptr::null_mut();
    // SAFETY: arrays are valid for their lengths.
    let st = unsafe { cmsc_create(x.as_ptr(), 4, m.as_ptr(), s.as_ptr(), 5, k.as_ptr(), p, &mut sim) };
    assert_eq!(st, CmscStatus::CMSC_OK, "{}", last_error());
    let q = [1e-7, 1e-7, -1e-7, 2e-7];
    // SAFETY: live handle, 4 charges.
    assert_eq!(unsafe { cmsc_set_charges(sim, q.as_ptr(), 4) }, CmscStatus::CMSC_OK);
    sim
}

pub fn positions(sim: *const CmscSim, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; 3 * n];
    // SAFETY: live handle, buffer of 3n doubles.
    assert_eq!(unsafe { cmsc_get_positions(sim, out.as_mut_ptr(), n) }, CmscStatus::CMSC_OK);
    out
}

/// A `side × side` grid in the z = 0 plane, `spacing` (m) apart: its positions (`xyz`
/// interleaved) and its springs (pairs) along the rows and columns, and also along one diagonal
/// of each cell when `diagonals`.
pub fn grid(side: usize, spacing: f64, diagonals: bool) -> (Vec<f64>, Vec<u32>) {
    let x = (0..side * side).flat_map(|i| [(i % side) as f64 * spacing, (i / side) as f64 * spacing, 0.0]);
    let mut springs = Vec::new();
    for r in 0..side {
        for c in 0..side {
            let i = (r * side + c) as u32;
            if c + 1 < side {
                springs.extend([i, i + 1]);
            }
            if r + 1 < side {
                springs.extend([i, i + side as u32]);
            }
            if diagonals && c + 1 < side && r + 1 < side {
                springs.extend([i, i + side as u32 + 1]);
            }
        }
    }
    (x.collect(), springs)
}

/// `cmsc_create` on positions `x` (`xyz` interleaved), masses `m`, springs (pairs) of
/// stiffness `k`, asserting success; returns the handle.
pub fn create(x: &[f64], m: &[f64], springs: &[u32], k: &[f64], p: &CmscParams) -> *mut CmscSim {
    let (n, n_springs) = (x.len() / 3, springs.len() / 2);
    assert_eq!((m.len(), k.len()), (n, n_springs));
    let mut sim = ptr::null_mut();
    // SAFETY: arrays are valid for their lengths.
    let st = unsafe {
        cmsc_create(x.as_ptr(), n, m.as_ptr(), springs.as_ptr(), n_springs, k.as_ptr(), p, &mut sim)
    };
    assert_eq!(st, CmscStatus::CMSC_OK, "{}", last_error());
    sim
}

/// Steps `sim` (of `n` vertices) `steps` times, asserting success, and destroys it; returns
/// its final positions.
pub fn step_read_destroy(sim: *mut CmscSim, steps: u32, n: usize) -> Vec<f64> {
    // SAFETY: a live handle.
    assert_eq!(unsafe { cmsc_step(sim, steps) }, CmscStatus::CMSC_OK, "{}", last_error());
    let x = positions(sim, n);
    // SAFETY: a handle from cmsc_create, destroyed once.
    unsafe { cmsc_destroy(sim) };
    x
}

/// The largest coordinate difference between two position arrays (m).
pub fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max)
}
