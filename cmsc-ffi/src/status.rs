//! Status codes, the enums of the contract, and the thread-local last-error message.

use std::cell::RefCell;
use std::ffi::{c_char, CString};

use cmsc_core::Error;

/// Result of every fallible call. Values are fixed; new ones are only ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)] // the C names of the contract, emitted verbatim by cbindgen
pub enum CmscStatus {
    /// Success.
    CMSC_OK = 0,
    /// An argument was rejected (NULL, wrong length, NaN/inf, out-of-range index, ...);
    /// nothing changed.
    CMSC_INVALID_ARGUMENT = 1,
    /// A step produced non-finite state, or a vertex ran away (moved more than 10 times the
    /// whole system's size in one step); cmsc_last_error() names the vertex. The simulation
    /// keeps its last good step.
    CMSC_DIVERGED = 2,
    /// The requested method is not available here: no CUDA driver, no CUDA device, no usable
    /// NVRTC to compile the GPU kernels, or a device NVRTC cannot target; cmsc_last_error()
    /// ("GPU Coulomb method unavailable: ...") names which. Nothing falls back to the CPU.
    CMSC_UNAVAILABLE = 3,
    /// The call failed for a reason other than its arguments. cmsc_last_error() starts with:
    ///   - "internal error (a bug in cmsc, please report it): " — a bug; "...: panic: ..." if a
    ///     panic was caught, which also marks the handle unusable (see the conventions above).
    ///   - "factorization of M + h^2 L failed: " — the implicit step's matrix could not be
    ///     assembled or analysed (out of memory). A matrix that rounding made singular is
    ///     CMSC_INVALID_ARGUMENT ("stiffness", naming the vertex).
    ///
    /// Before CMSC_DEVICE_FAILURE was appended, GPU failures at run time came here too.
    CMSC_INTERNAL = 4,
    /// A CUDA call failed at run time in a GPU method (out of device memory, a kernel launch
    /// failure, a lost or reset device; at cmsc_create, also NVRTC failing to compile
    /// kernels/... with its log); cmsc_last_error() starts with "GPU error: ". A device
    /// failure, not a bug: the simulation keeps its last good step (cmsc_step stops before the
    /// step that failed) and the handle stays usable, but the device may fail again; to go on,
    /// recreate the simulation with a CPU method.
    CMSC_DEVICE_FAILURE = 5,
}

/// Coulomb methods for `CmscParams.coulomb`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)] // the C names of the contract
pub enum CmscCoulomb {
    /// No vertex–vertex Coulomb force.
    CMSC_COULOMB_OFF = 0,
    /// Exact all-pairs sum (paper Eq. 8), CPU.
    CMSC_COULOMB_DIRECT = 1,
    /// DDEF approximation (paper §3.1) with `grid_points` grid points (0 = adaptive), CPU.
    CMSC_COULOMB_DDEF = 2,
    /// DDEF with the far-field gather on a CUDA GPU (f32 terms, f64 sums; within 1e-4 of
    /// CMSC_COULOMB_DDEF); grid and near field on the CPU. Needs the NVIDIA driver and NVRTC
    /// (libnvrtc.so.12) at run time, else cmsc_create returns CMSC_UNAVAILABLE with the reason.
    CMSC_COULOMB_DDEF_GPU = 3,
    /// Exact sum on a CUDA GPU (f32 terms, f64 sums; within 1e-5 of CMSC_COULOMB_DIRECT). Needs
    /// the NVIDIA driver and NVRTC at run time, else CMSC_UNAVAILABLE with the reason.
    CMSC_COULOMB_DIRECT_GPU = 4,
    /// The library chooses from the vertex count: DIRECT below 5,000 vertices, P3M above;
    /// with a usable CUDA GPU, DIRECT_GPU from 5,000 vertices up to 250,000 and P3M from there
    /// on (thresholds measured on an NVIDIA H200; CMSC_AUTO_* constants). Never fails for lack
    /// of a GPU.
    CMSC_COULOMB_AUTO = 5,
    /// CMSC_COULOMB_AUTO without the GPU: DIRECT below 5,000 vertices, P3M above, whatever
    /// the hardware (for callers whose user has turned the GPU off).
    CMSC_COULOMB_AUTO_CPU = 6,
    /// Particle-particle particle-mesh (P3M), CPU: Ewald's split, the smooth part by FFT on a
    /// mesh, the rest summed exactly over pairs within a cut-off; relative RMS force error below
    /// 1e-2. A scene whose mesh would exceed 2^25 FFT points (objects metres apart) runs DDEF
    /// instead, and cmsc_get_coulomb_method then reports CMSC_COULOMB_DDEF.
    CMSC_COULOMB_P3M = 7,
}

impl CmscCoulomb {
    /// The C value of a core method.
    pub(crate) fn from_core(method: cmsc_core::FieldMethod) -> Self {
        use cmsc_core::FieldMethod as M;
        match method {
            M::Off => CmscCoulomb::CMSC_COULOMB_OFF,
            M::Direct => CmscCoulomb::CMSC_COULOMB_DIRECT,
            M::Ddef => CmscCoulomb::CMSC_COULOMB_DDEF,
            M::DdefGpu => CmscCoulomb::CMSC_COULOMB_DDEF_GPU,
            M::DirectGpu => CmscCoulomb::CMSC_COULOMB_DIRECT_GPU,
            M::Auto => CmscCoulomb::CMSC_COULOMB_AUTO,
            M::AutoCpu => CmscCoulomb::CMSC_COULOMB_AUTO_CPU,
            M::P3m => CmscCoulomb::CMSC_COULOMB_P3M,
        }
    }
}

/// Integrators for `CmscParams.integrator`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)] // the C names of the contract
pub enum CmscIntegrator {
    /// The paper's implicit-explicit step (Eq. 12).
    CMSC_INTEGRATOR_IMEX = 0,
    /// Velocity Verlet with the same forces (explicit; the validation reference).
    CMSC_INTEGRATOR_VERLET = 1,
    /// A less dissipative IMEX step: springs by the implicit midpoint rule on the same
    /// local/global solver, explicit forces F (Coulomb, external charges and field, gravity) as
    /// two half kicks around it (Strang splitting):
    ///   v+ = v_n + (h/2) M^-1 F(x_n);  y = x_n + (h/2) v+;
    ///   K local/global iterations on (M + (h/2)^2 L) z = M y + (h/2)^2 J d;
    ///   x_{n+1} = 2 z - x_n;  v_{n+1} = 4 (z - x_n)/h - v+ + (h/2) M^-1 F(x_{n+1}).
    /// F(x_{n+1}) is reused by the next step (one Coulomb evaluation per step). An energy
    /// safeguard tracks the total energy H (kinetic, spring, Coulomb, external, gravity)
    /// against a target H* that changes only by the work done on the system (edits, pins,
    /// colliders, damping): a step that raises H above H* by more than 2 % of the energy scale
    /// (kinetic + spring + |Coulomb|) is redone as two half steps, down to h/256, and an excess
    /// above 0.5 % left at the end is removed by scaling the velocities relative to the rigid
    /// motion (momentum and angular momentum kept). Motion stays lively at large h where
    /// CMSC_INTEGRATOR_IMEX damps it. cmsc_rollout_gradient does not support it.
    CMSC_INTEGRATOR_IMEX_LOW_DISSIPATION = 2,
}

/// Friction laws of the obstacles (the ground, spheres and mesh colliders), for
/// `cmsc_set_collider_friction_law`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)] // the C names of the contract
pub enum CmscFrictionLaw {
    /// The default: a friction value in 0..1 is the fraction of the tangential motion (relative
    /// to the obstacle) removed in every step in contact, so the same value slides less with more
    /// steps per second.
    CMSC_FRICTION_PER_STEP = 0,
    /// Coulomb friction, Blender Cloth's law for obstacles: a friction value mu >= 0 caps the
    /// tangential velocity change of a contact at mu times its normal one (mu = Blender's
    /// Collision Friction / 100); a vertex on a slope of angle theta slides when mu < tan(theta)
    /// and holds otherwise, the same at any step.
    CMSC_FRICTION_COULOMB = 1,
}

/// An error on its way to C: the status and the message for `cmsc_last_error`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FfiError {
    pub status: CmscStatus,
    pub message: String,
}

impl FfiError {
    pub fn invalid(message: impl Into<String>) -> Self {
        FfiError { status: CmscStatus::CMSC_INVALID_ARGUMENT, message: message.into() }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        FfiError { status: CmscStatus::CMSC_INTERNAL, message: message.into() }
    }
}

impl From<Error> for FfiError {
    fn from(e: Error) -> Self {
        let status = match e {
            Error::InvalidArgument { .. } => CmscStatus::CMSC_INVALID_ARGUMENT,
            Error::Singular { .. } => CmscStatus::CMSC_INVALID_ARGUMENT,
            Error::Diverged { .. } => CmscStatus::CMSC_DIVERGED,
            Error::Factorization(_) => CmscStatus::CMSC_INTERNAL,
            // every reason (driver, device, NVRTC, architecture): the message names it
            Error::GpuUnavailable { .. } => CmscStatus::CMSC_UNAVAILABLE,
            Error::Gpu(_) => CmscStatus::CMSC_DEVICE_FAILURE,
            Error::Internal(_) => CmscStatus::CMSC_INTERNAL,
        };
        // cmsc-core's errors carry no source: the message is the whole story
        FfiError { status, message: e.to_string() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each core error lands on its own status: a device failure is neither a bug nor bad input.
    #[test]
    fn core_errors_map_to_their_statuses() {
        let status = |e: Error| FfiError::from(e).status;
        assert_eq!(status(Error::Gpu("launch failed".into())), CmscStatus::CMSC_DEVICE_FAILURE);
        assert_eq!(status(Error::Internal("bug".into())), CmscStatus::CMSC_INTERNAL);
        assert_eq!(status(Error::Singular { vertex: 3 }), CmscStatus::CMSC_INVALID_ARGUMENT);
        let diverged =
            Error::Diverged { step: 2, time: 0.1, cause: cmsc_core::Divergence::NonFinite { vertex: 7 } };
        let e = FfiError::from(diverged);
        assert_eq!(e.status, CmscStatus::CMSC_DIVERGED);
        assert!(e.message.contains("vertex 7 reached a non-finite"), "{}", e.message);
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Stores `message` as this thread's last error (interior NULs are replaced).
pub(crate) fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', "\\0")).expect("NULs were replaced");
    LAST_ERROR.with(|slot| *slot.borrow_mut() = c);
}

/// The message of the last failed cmsc call on this thread, or "" if the last call succeeded.
/// Never NULL. The pointer stays valid until the next cmsc call on this thread.
#[no_mangle]
pub extern "C" fn cmsc_last_error() -> *const c_char {
    LAST_ERROR.with(|slot| slot.borrow().as_ptr())
}
