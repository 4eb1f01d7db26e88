//! The opaque `CmscSim` handle and the only place raw handle pointers are dereferenced.

use cmsc_core::System;

use crate::status::FfiError;

/// An opaque simulation handle, created by `cmsc_create` and freed by `cmsc_destroy`.
pub struct CmscSim {
    pub(crate) sys: System,
    /// Set while a changing call runs; still set afterwards only if that call panicked.
    in_call: bool,
}

impl CmscSim {
    pub(crate) fn new(sys: System) -> Box<Self> {
        Box::new(CmscSim { sys, in_call: false })
    }

    /// Runs a call that may change the simulation. If an earlier such call was interrupted by a
    /// panic, refuses: the handle's internals may be inconsistent.
    pub(crate) fn call<T>(
        &mut self,
        f: impl FnOnce(&mut System) -> Result<T, FfiError>,
    ) -> Result<T, FfiError> {
        self.usable()?;
        self.in_call = true;
        let out = f(&mut self.sys);
        self.in_call = false;
        out
    }

    /// Fails when an earlier call panicked midway.
    pub(crate) fn usable(&self) -> Result<(), FfiError> {
        if self.in_call {
            return Err(FfiError::internal(
                "this handle is unusable: an internal error interrupted an earlier call; its \
                 positions and velocities are still the last good step; destroy it",
            ));
        }
        Ok(())
    }
}

/// Borrows a handle for a changing call.
///
/// # Safety
/// `sim` must be NULL or a live pointer from `cmsc_create` not used by another thread.
pub(crate) unsafe fn sim_mut<'a>(sim: *mut CmscSim) -> Result<&'a mut CmscSim, FfiError> {
    // SAFETY: non-NULL pointers are live handles by the caller's contract.
    unsafe { sim.as_mut() }.ok_or_else(|| FfiError::invalid("`sim` is NULL"))
}

/// Borrows a handle for a reading call.
///
/// # Safety
/// As [`sim_mut`].
pub(crate) unsafe fn sim_ref<'a>(sim: *const CmscSim) -> Result<&'a CmscSim, FfiError> {
    // SAFETY: non-NULL pointers are live handles by the caller's contract.
    unsafe { sim.as_ref() }.ok_or_else(|| FfiError::invalid("`sim` is NULL"))
}
