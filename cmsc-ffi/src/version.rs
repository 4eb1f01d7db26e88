//! Library and ABI versions.

use std::ffi::c_char;

/// Version of the C ABI in `include/cmsc.h`; bumped only for incompatible changes.
pub const CMSC_ABI_VERSION: u32 = 1;

/// The library version, e.g. "0.1.0" (static storage, never NULL, never freed).
#[no_mangle]
pub extern "C" fn cmsc_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
