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
    /// A step produced non-finite positions or velocities, or a runaway; the state is still the
    /// last good one.
    #[error("simulation diverged in step {step} (t = {time} s): {cause}; state kept at the last good step — try a smaller time step or more substeps")]
    Diverged {
        /// Index of the step that failed (0-based count of completed steps).
        step: u64,
        /// Simulated time of the last good state, in seconds.
        time: f64,
        /// What went wrong, and at which vertex.
        cause: Divergence,
    },
    /// `M + h²L` lost its positive definiteness in rounding at free vertex `vertex` (the
    /// Cholesky pivot faer found non-positive, mapped back through the fill-reducing ordering):
    /// the stiffness is too large for that vertex's mass at this time step.
    #[error("invalid argument `stiffness`: M + h²L is numerically singular at vertex {vertex}: lower the stiffness or the time step, or raise the masses")]
    Singular {
        /// The vertex whose pivot was non-positive.
        vertex: usize,
    },
    /// The global matrix `M + h²L` could not be assembled or analysed (faer's own failure:
    /// out of memory, an index overflow).
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

/// What made a step diverge ([`Error::Diverged`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Divergence {
    /// The vertex (the first found) reached a non-finite position or velocity.
    NonFinite {
        /// The vertex's index.
        vertex: usize,
    },
    /// The integrator threw a free vertex more than [`crate::RUNAWAY_FACTOR`] times the whole
    /// system's size relative to the others in one step (runaway forces the step cannot
    /// resolve; `step.rs`'s `unresolved_motion`).
    Runaway {
        /// The vertex that moved farthest.
        vertex: usize,
        /// Its displacement relative to the mass-weighted mean displacement (m).
        distance: f64,
        /// The diagonal of the bounding box of all vertices at the step's start (m).
        size: f64,
    },
}

impl Divergence {
    /// The vertex the cause names.
    pub fn vertex(&self) -> usize {
        match *self {
            Divergence::NonFinite { vertex } | Divergence::Runaway { vertex, .. } => vertex,
        }
    }
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Divergence::NonFinite { vertex } => {
                write!(f, "vertex {vertex} reached a non-finite position or velocity")
            }
            Divergence::Runaway { vertex, distance, size } => write!(
                f,
                "vertex {vertex} moved {distance:.3e} m relative to the others in one step, more than {} \
                 times the whole system's size ({size:.3e} m): runaway forces that the step cannot resolve",
                crate::RUNAWAY_FACTOR
            ),
        }
    }
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
