//! The error type of every fallible operation in `cmsc-core`.

use thiserror::Error;

/// Everything that can go wrong in `cmsc-core`.
///
/// Variants are small and specific so that the C ABI can map each to one status code.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Error {
    /// An input was rejected before it could touch the simulation state.
    #[error("invalid argument `{name}`{}: {reason}", index.map(|i| format!(" at index {i}")).unwrap_or_default())]
    InvalidArgument {
        /// The argument's name, as in the API.
        name: &'static str,
        /// The offending element, when the argument is an array.
        index: Option<usize>,
        /// What is wrong with it.
        reason: String,
    },
    /// A step produced non-finite positions or velocities; the state is still the last good one.
    #[error("simulation diverged in step {step} (t = {time} s): {reason}; state kept at the last good step — try a smaller time step or more substeps")]
    Diverged {
        /// Index of the step that failed (0-based count of completed steps).
        step: u64,
        /// Simulated time of the last good state, in seconds.
        time: f64,
        /// What became non-finite.
        reason: String,
    },
    /// The global matrix `M + h²L` could not be factored.
    #[error("factorization of M + h^2 L failed: {0}")]
    Factorization(String),
    /// A GPU method was requested but cannot run here, for the typed `reason`; `detail` says
    /// what exactly was missing or refused. Nothing falls back to the CPU silently.
    #[error("GPU Coulomb method unavailable: {detail}")]
    GpuUnavailable {
        /// Why: no driver, no device, no usable NVRTC, or an unsupported device.
        reason: GpuUnavailable,
        /// The full explanation (library names, versions, the driver's own error), as shown.
        detail: String,
    },
    /// A CUDA call failed at run time while a GPU backend was starting or running (kernel
    /// compilation, allocation, launch or copy: out of device memory, a launch failure, a lost
    /// device): a device failure, neither invalid input nor a bug ([`Error::Internal`]). A step
    /// that meets it returns before changing the state.
    #[error("GPU error: {0}")]
    Gpu(String),
    /// A path that valid input cannot reach failed: a bug in cmsc, not in the caller's data
    /// (for example a tetrahedralization of DDEF grid points that does not cover them).
    #[error("internal error (a bug in cmsc, please report it): {0}")]
    Internal(String),
}

/// Why a GPU method cannot run here: the `reason` of [`Error::GpuUnavailable`], so that callers
/// can tell the cases apart without reading the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GpuUnavailable {
    /// No CUDA driver: `libcuda.so` cannot be loaded (no NVIDIA GPU or no driver installed).
    Driver,
    /// The driver is present but there is no CUDA device, or device 0 cannot be opened.
    Device,
    /// No NVRTC to compile the kernels with: `libnvrtc.so.12` cannot be loaded or does not
    /// answer, or it is newer than the driver, which then cannot load the PTX it produced.
    Nvrtc,
    /// The device's compute capability is older than every architecture NVRTC can target, so
    /// the kernels cannot be built for it.
    Architecture,
}

impl Error {
    /// Shorthand for [`Error::GpuUnavailable`].
    pub(crate) fn gpu_unavailable(reason: GpuUnavailable, detail: impl Into<String>) -> Self {
        Error::GpuUnavailable { reason, detail: detail.into() }
    }

    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(name: &'static str, index: Option<usize>, reason: impl Into<String>) -> Self {
        Error::InvalidArgument { name, index, reason: reason.into() }
    }
}

/// `Result` with [`enum@Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
