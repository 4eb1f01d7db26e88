//! A panic inside a call becomes CMSC_INTERNAL with the payload in cmsc_last_error; the handle
//! is then refused for changing calls but still reads its last good state.

mod common;

use cmsc::CmscStatus::*;
use cmsc::*;
use common::{last_error, params, positions, square};

#[test]
fn forced_panic_is_internal_and_poisons_the_handle() {
    let sim = square(&params());
    // SAFETY: a live handle throughout, destroyed once at the end.
    unsafe {
        assert_eq!(cmsc_step(sim, 10), CMSC_OK);
        let good = positions(sim, 4);
        assert_eq!(cmsc::panic::__panic_inside_call(sim), CMSC_INTERNAL);
        let msg = last_error();
        assert!(msg.contains("panic") && msg.contains("forced panic for testing"), "{msg}");
        // changing calls are refused, saying why
        assert_eq!(cmsc_step(sim, 1), CMSC_INTERNAL);
        assert!(last_error().contains("unusable"), "{}", last_error());
        assert_eq!(cmsc_set_charges(sim, [0.0; 4].as_ptr(), 4), CMSC_INTERNAL);
        // reading still works and returns the last good step
        assert_eq!(positions(sim, 4), good);
        let mut e = CmscEnergies::default();
        assert_eq!(cmsc_energies(sim, &mut e), CMSC_OK);
        cmsc_destroy(sim);
    }
    // other handles are unaffected
    let other = square(&params());
    // SAFETY: live handle.
    unsafe {
        assert_eq!(cmsc_step(other, 1), CMSC_OK);
        cmsc_destroy(other);
    }
}

#[test]
fn version_strings() {
    // SAFETY: static NUL-terminated string.
    let v = unsafe { std::ffi::CStr::from_ptr(cmsc_version()) }.to_str().unwrap();
    assert_eq!(v, env!("CARGO_PKG_VERSION"));
    assert_eq!(cmsc_abi_version(), CMSC_ABI_VERSION);
}
