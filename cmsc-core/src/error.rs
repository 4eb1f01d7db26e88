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
    /// A GPU method was requested but cannot run here: no CUDA driver (`libcuda.so`), no CUDA
    /// device, or no NVRTC to compile the kernels. The message names which; nothing falls back
    /// to the CPU silently.
    #[error("GPU Coulomb method unavailable: {0}")]
    GpuUnavailable(String),
    /// A CUDA call failed while a GPU backend was running (kernel compilation, allocation,
    /// launch or copy).
    #[error("GPU error: {0}")]
    Gpu(String),
    /// A path that valid input cannot reach failed: a bug in cmsc, not in the caller's data
    /// (for example a tetrahedralization of DDEF grid points that does not cover them).
    #[error("internal error (a bug in cmsc, please report it): {0}")]
    Internal(String),
}

impl Error {
    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(name: &'static str, index: Option<usize>, reason: impl Into<String>) -> Self {
        Error::InvalidArgument { name, index, reason: reason.into() }
    }
}

/// `Result` with [`enum@Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
