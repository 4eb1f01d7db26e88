//! The limits `cmsc_create` and the setters check, and the vertex counts at which
//! `CMSC_COULOMB_AUTO` changes method, as header constants: wrappers mirror them from here
//! (the add-on's copies are tested against the header, `tests/python/test_header_parity.py`).
//! Each equals its `cmsc-core` constant, checked at compile time below (cbindgen writes
//! literals only).

use cmsc_core::coulomb::{
    AUTO_GPU_DDEF_MIN_VERTICES, AUTO_GPU_MIN_VERTICES, AUTO_GPU_P3M_MIN_VERTICES, AUTO_P3M_MIN_VERTICES,
};

/// Largest `CmscParams.iterations` accepted (local/global iterations per step).
pub const CMSC_MAX_ITERATIONS: u32 = 100_000;

/// Largest steps between whole evaluations of DDEF's far field (`cmsc_set_far_field_interval`).
pub const CMSC_MAX_FAR_FIELD_INTERVAL: u32 = 1000;

/// Largest `CmscParams.grid_points` accepted (DDEF's m; 0 = adaptive).
pub const CMSC_MAX_GRID_POINTS: u32 = 10_000_000;

/// Smallest relative RMS force error `cmsc_set_field_tolerance` accepts.
pub const CMSC_MIN_FIELD_TOLERANCE: f64 = 1e-4;

/// Largest relative RMS force error `cmsc_set_field_tolerance` accepts.
pub const CMSC_MAX_FIELD_TOLERANCE: f64 = 0.1;

/// Vertex count from which `CMSC_COULOMB_AUTO` (without a usable GPU) and `AUTO_CPU` run P3M
/// instead of the exact sum on the CPU.
pub const CMSC_AUTO_P3M_MIN_VERTICES: u32 = 5_000;

/// Vertex count from which `CMSC_COULOMB_AUTO` uses a usable CUDA GPU (the exact sum there),
/// up to `CMSC_AUTO_GPU_P3M_MIN_VERTICES`. Measured on an NVIDIA H200 (README "GPU").
pub const CMSC_AUTO_GPU_MIN_VERTICES: u32 = 5_000;

/// Vertex count from which `CMSC_COULOMB_AUTO` on a GPU would run DDEF_GPU instead of
/// DIRECT_GPU: never (UINT32_MAX). Measured on an NVIDIA H200, DDEF_GPU was slower than both
/// DIRECT_GPU and P3M at every size from 1K to 1M (its grid and near field run on the CPU);
/// it was 200,000, an estimate, before. CMSC_COULOMB_DDEF_GPU still runs it by name.
pub const CMSC_AUTO_GPU_DDEF_MIN_VERTICES: u32 = u32::MAX;

/// Vertex count from which `CMSC_COULOMB_AUTO` with a usable GPU runs P3M on the CPU instead
/// of DIRECT_GPU: the crossover measured on an NVIDIA H200 with 16 CPU threads (69 ms against
/// 69 ms a call at 250K; at 1M P3M takes 0.35 s, the GPU sum 0.98 s).
pub const CMSC_AUTO_GPU_P3M_MIN_VERTICES: u32 = 250_000;

/// Largest `max_steps` accepted by `cmsc_advance` (steps per call).
pub const CMSC_MAX_ADVANCE_STEPS: u32 = 1024;

/// The iteration tolerance recommended for cmsc_set_iteration_tolerance with cmsc_advance (a new
/// simulation runs a fixed count, tolerance 0): measured within 2 % of a converged bake on a
/// 10K-vertex swinging cloth at 3-4 iterations per step (cmsc-core's `advance` docs).
pub const CMSC_RECOMMENDED_ITERATION_TOLERANCE: f64 = 1e-3;

const _: () = {
    assert!(CMSC_MAX_ADVANCE_STEPS == cmsc_core::MAX_ADVANCE_STEPS);
    assert!(CMSC_RECOMMENDED_ITERATION_TOLERANCE == cmsc_core::RECOMMENDED_ITERATION_TOLERANCE);
    assert!(CMSC_MAX_ITERATIONS == cmsc_core::MAX_ITERATIONS);
    assert!(CMSC_MAX_FAR_FIELD_INTERVAL == cmsc_core::MAX_FAR_FIELD_INTERVAL);
    assert!(CMSC_MAX_GRID_POINTS == cmsc_core::MAX_GRID_POINTS);
    assert!(CMSC_MIN_FIELD_TOLERANCE == cmsc_core::MIN_FIELD_TOLERANCE);
    assert!(CMSC_MAX_FIELD_TOLERANCE == cmsc_core::MAX_FIELD_TOLERANCE);
    assert!(CMSC_AUTO_P3M_MIN_VERTICES as usize == AUTO_P3M_MIN_VERTICES);
    assert!(CMSC_AUTO_GPU_MIN_VERTICES as usize == AUTO_GPU_MIN_VERTICES);
    assert!(CMSC_AUTO_GPU_DDEF_MIN_VERTICES as usize == AUTO_GPU_DDEF_MIN_VERTICES);
    assert!(CMSC_AUTO_GPU_P3M_MIN_VERTICES as usize == AUTO_GPU_P3M_MIN_VERTICES);
};
