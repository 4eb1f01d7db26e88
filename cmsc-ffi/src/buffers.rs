//! Checked views of caller buffers: `(pointer, length)` pairs become slices only after the
//! NULL, alignment and size checks, with the argument named in every error.

use cmsc_core::Vec3;

use crate::status::FfiError;

/// `len` elements of `T` at `ptr`; NULL is accepted only with `len == 0`.
///
/// # Safety
/// A non-NULL `ptr` must point to `len` readable elements for the returned lifetime.
pub(crate) unsafe fn input<'a, T>(ptr: *const T, len: usize, name: &str) -> Result<&'a [T], FfiError> {
    if len == 0 {
        return Ok(&[]);
    }
    check(ptr, len, name)?;
    // SAFETY: non-NULL, aligned, size fits isize (checked); validity is the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// `len` writable elements of `T` at `ptr`; NULL is accepted only with `len == 0`.
///
/// # Safety
/// A non-NULL `ptr` must point to `len` writable elements for the returned lifetime.
pub(crate) unsafe fn output<'a, T>(ptr: *mut T, len: usize, name: &str) -> Result<&'a mut [T], FfiError> {
    if len == 0 {
        return Ok(&mut []);
    }
    check(ptr, len, name)?;
    // SAFETY: as in `input`.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}

fn check<T>(ptr: *const T, len: usize, name: &str) -> Result<(), FfiError> {
    if ptr.is_null() {
        return Err(FfiError::invalid(format!("`{name}` is NULL but its length is {len}")));
    }
    if !ptr.is_aligned() {
        return Err(FfiError::invalid(format!("`{name}` is not aligned for its element type")));
    }
    if len.checked_mul(size_of::<T>()).is_none_or(|bytes| bytes > isize::MAX as usize) {
        return Err(FfiError::invalid(format!("`{name}`: length {len} is too large")));
    }
    Ok(())
}

/// `3 n` doubles as `n` vectors (copied).
///
/// # Safety
/// As [`input`] with `3 n` elements.
pub(crate) unsafe fn vec3_input(ptr: *const f64, n: usize, name: &str) -> Result<Vec<Vec3>, FfiError> {
    null_vectors(ptr, n, name)?;
    let len =
        n.checked_mul(3).ok_or_else(|| FfiError::invalid(format!("`{name}`: count {n} is too large")))?;
    // SAFETY: forwarded.
    let flat = unsafe { input(ptr, len, name) }?;
    Ok(flat.chunks_exact(3).map(|c| Vec3::new(c[0], c[1], c[2])).collect())
}

/// Writes `values` to `3 n` doubles at `ptr`, after checking `n` against `values.len()`.
///
/// # Safety
/// As [`output`] with `3 n` elements.
pub(crate) unsafe fn vec3_output(
    ptr: *mut f64,
    n: usize,
    values: &[Vec3],
    name: &str,
) -> Result<(), FfiError> {
    expect_count(name, n, values.len(), "vertices")?;
    null_vectors(ptr, n, name)?;
    // SAFETY: forwarded; 3n cannot overflow since it equals 3 × an existing Vec's length.
    let out = unsafe { output(ptr, 3 * n, name) }?;
    for (o, v) in out.chunks_exact_mut(3).zip(values) {
        o.copy_from_slice(v.as_slice());
    }
    Ok(())
}

/// A NULL pointer to `n > 0` vectors, named with its length in vectors (the count the caller
/// passed), not in doubles.
fn null_vectors(ptr: *const f64, n: usize, name: &str) -> Result<(), FfiError> {
    if ptr.is_null() && n > 0 {
        return Err(FfiError::invalid(format!("`{name}` is NULL but its length is {n}")));
    }
    Ok(())
}

/// Fails unless the caller's count matches the system's.
pub(crate) fn expect_count(name: &str, got: usize, want: usize, what: &str) -> Result<(), FfiError> {
    if got != want {
        return Err(FfiError::invalid(format!(
            "`{name}`: length {got} does not match the simulation's {want} {what}"
        )));
    }
    Ok(())
}
