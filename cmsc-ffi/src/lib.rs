//! # cmsc-ffi — the C ABI (v1) of cmsc
//!
//! A thin, validated layer over [`cmsc_core`]: every `extern "C"` function checks its
//! arguments, calls the core, and maps the result to a [`CmscStatus`], with the message in a
//! thread-local slot read by [`cmsc_last_error`]. Every body runs inside one panic boundary
//! ([`mod@panic`]); nothing unwinds into C. The contract (names, argument order, enum values, struct
//! field order) is fixed by `DESIGN.md`; `include/cmsc.h` is generated from this crate by
//! cbindgen and checked in.

#![deny(missing_docs)]

mod buffers;
mod collision;
mod gradient;
mod handle;
mod limits;
pub mod panic;
mod params;
mod sim;
mod status;
mod version;

pub use collision::{
    cmsc_move_mesh_colliders, cmsc_set_collider_friction_law, cmsc_set_mesh_colliders,
    cmsc_set_self_collision, cmsc_set_self_collision_friction, cmsc_set_surface,
};
pub use gradient::{cmsc_fit_charges, cmsc_rollout_gradient};
pub use handle::CmscSim;
pub use limits::*;
pub use params::{cmsc_params_default, CmscAskedSteps, CmscEnergies, CmscParams};
pub use sim::*;
pub use status::{cmsc_last_error, CmscCoulomb, CmscFrictionLaw, CmscIntegrator, CmscStatus};
pub use version::{cmsc_abi_version, cmsc_version, CMSC_ABI_VERSION};
