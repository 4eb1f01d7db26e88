//! CUDA backends of the Coulomb field: the exact sum ([`DirectGpu`], `kernels/direct.cu`) and
//! DDEF's far-field gather ([`super::FieldMethod::DdefGpu`], `kernels/ddef_far.cu`).
//!
//! The kernels are CUDA C sources embedded in the library and compiled at run time with NVRTC
//! for the device's architecture; the CUDA driver and NVRTC are loaded dynamically
//! (`cudarc`'s `dynamic-loading`), so the library builds and runs without CUDA and a GPU
//! method then fails with [`crate::Error::GpuUnavailable`], whose [`GpuUnavailable`] reason
//! says what is missing (driver, device, NVRTC, a supported architecture). The
//! dynamic loader finds `libcuda.so` / `libnvrtc.so.12` the usual way (`LD_LIBRARY_PATH`,
//! the ld.so cache): NVRTC can come from a CUDA toolkit or from the `nvidia-cuda-nvrtc-cu12`
//! wheel (`site-packages/nvidia/cuda_nvrtc/lib`). Device 0 is opened, and the kernels compiled
//! and loaded, once per process on first use ([`device()`]); every backend then owns its stream
//! and device buffers, kept across calls, so a call uploads positions and charges and
//! downloads fields only.
//!
//! ## Precision of the f32 kernels
//!
//! Both kernels evaluate the term `q_j (x_i − x_j) / max(|x_i − x_j|², a²)^{3/2}` of
//! [Paper](crate#references) Eq. (8)/(9) (Eq. (C1) of [`crate::coulomb`]) in f32 and sum in f64. Inputs are mapped to a frame
//! where every coordinate is in `[−1, 1]` (centre and half-size of the points' box, `L`) and
//! charges to `[−1, 1]` (divided by `max |q|`), so no term over- or underflows. Each
//! coordinate is stored as two floats `hi + lo` (`lo` = the f32 rounding of the remainder, so
//! `hi + lo` is within `u²` of the coordinate; u = 2⁻²⁴ ≈ 6·10⁻⁸), and the kernels form
//! `d = (hi_i − hi_j) + (lo_i − lo_j)`: the first difference is exact or correctly rounded, the
//! second is `≈ u` of it, so `d` has relative error `≤ 2u` plus an absolute `≤ 4u²L`, instead of
//! the `u L / r` of plain f32 positions (10⁻⁴ for neighbours 1/1000 of the mesh apart, as on a
//! 1M-vertex mesh; 10⁻² in the unit test of a dense cluster). Per term: `s² = max(r², a²)`
//! carries `≤ 7u` (two `2u` from `d`, a product and two fused multiply-adds; `max` is exact),
//! `rsqrtf` `≤ 2` ulp `= 4u`, so `s^{−3}` `≤ 10.5u + 12u + 2u`, and the term `q_j d w` `≤ 30u` with the charge's and
//! the products' roundings. Terms are summed in f32 over chunks of 32 (`≤ 31u` of the chunk's
//! absolute sum), chunks in f64 (negligible). For target `i`, with `S_i = Σ_j |term_ij|`:
//!
//! `|e_i(gpu) − e_i(exact)| ≤ 61 u S_i ≈ 3.7·10⁻⁶ S_i` (worst case; rounding errors of random
//! sign give far less: a relative L2 error of the field of 1.2·10⁻⁷ in the unit test, which
//! replays the kernels' arithmetic on the CPU).
//!
//! The relative error of a force is this times the cancellation ratio `S_i / |e_i|`, which is
//! O(1)–O(10) for meshes charged mostly with one sign and grows where fields cancel (inside a
//! uniformly charged shell), where the absolute bound above still holds. That is below 10⁻⁵
//! (the agreement the tests ask of the direct sum) for cancellation ratios up to ~3 in the worst
//! case and ~100 typically, and three to four orders of magnitude below DDEF's own
//! approximation error (10⁻³–10⁻²). Pairs with `max(r, a)` below `10⁻¹²L` (only
//! coincident points with `a < 10⁻¹²L`) are skipped rather than overflowing f32; the CPU sum
//! keeps them.

mod ddef;
mod device;
mod direct;
mod launch;

pub use crate::error::GpuUnavailable;
pub use ddef::ddef_solver;
pub use device::{
    compile, device, nvrtc_present, nvrtc_supported_archs, nvrtc_version, usable, DeviceInfo, KernelSource,
    HEADERS, KERNELS,
};
pub use direct::DirectGpu;

#[cfg(test)]
mod model;
