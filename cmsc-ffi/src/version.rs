//! Library and ABI versions.

use std::ffi::c_char;

/// Version of the C ABI in `include/cmsc.h`; bumped only for incompatible changes.
pub const CMSC_ABI_VERSION: u32 = 1;

/// The library version, e.g. "0.1.0" (static storage, never NULL, never freed).
#[no_mangle]
pub extern "C" fn cmsc_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The C ABI version this library implements (`CMSC_ABI_VERSION` of the header it was built
/// with): wrappers that load the library at run time compare it with the version they expect.
#[no_mangle]
pub extern "C" fn cmsc_abi_version() -> u32 {
    CMSC_ABI_VERSION
}
