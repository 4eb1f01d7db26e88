//! The one panic boundary every `extern "C"` body runs in.
//!
//! `boundary` clears the last error, runs the body under `catch_unwind`, and turns its result
//! into a status: `Ok` → `CMSC_OK`, `Err` → its status with the message stored, a panic →
//! `CMSC_INTERNAL` with the panic payload stored. Handles are poisoned separately by
//! [`crate::CmscSim`]'s call guard, because only the handle knows a call was interrupted.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::status::{set_last_error, CmscStatus, FfiError};

/// Runs `body` so that no panic crosses into C.
pub(crate) fn boundary(body: impl FnOnce() -> Result<(), FfiError>) -> CmscStatus {
    set_last_error("");
    // AssertUnwindSafe: a panic can only leave a CmscSim half-updated, and the handle's call
    // guard marks such a handle unusable; no other state is shared across the boundary.
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => CmscStatus::CMSC_OK,
        Ok(Err(e)) => {
            set_last_error(&e.message);
            e.status
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic payload".into());
            set_last_error(&format!("internal error (a bug in cmsc, please report it): panic: {what}"));
            CmscStatus::CMSC_INTERNAL
        }
    }
}

/// Test hook: runs a panicking body through the same boundary and handle guard as every entry
/// point, so the tests can show what C sees after an internal error. Not part of the C ABI.
///
/// # Safety
/// `sim` must be NULL or a live handle from `cmsc_create`.
#[doc(hidden)]
pub unsafe fn __panic_inside_call(sim: *mut crate::CmscSim) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let sim = unsafe { crate::handle::sim_mut(sim) }?;
        sim.call(|_| -> Result<(), FfiError> { panic!("forced panic for testing") })
    })
}
