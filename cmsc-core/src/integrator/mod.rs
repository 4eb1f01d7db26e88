//! Time integrators. Each advances `(x_t, v_t)` to an unconstrained `(x_{t+1}, v_{t+1})` given
//! the explicit forces at `x_t`; pins, collisions and the divergence check are applied
//! afterwards by the stepper (`step.rs`). [`low_dissipation`] evaluates the explicit forces
//! itself, through [`Explicit`], because its safeguard may redo a step in halves.

pub(crate) mod accel;
mod imex;
mod low_dissipation;
mod verlet;

pub(crate) use imex::{
    advance as imex_advance, iterate as imex_iterate, start as imex_start, ImexBuffers, LocalBuffers,
};
pub(crate) use low_dissipation::{Explicit, LowDissipation, Potential};
pub use low_dissipation::{CAP_BAND, EXCESS_TOLERANCE, MAX_HALVINGS};
pub(crate) use verlet::{advance as verlet_advance, finish as verlet_finish};

use crate::math::Vec3;

/// The state at the start of a step, borrowed.
pub(crate) struct Now<'a> {
    /// Positions `x_t` (m).
    pub x: &'a [Vec3],
    /// Velocities `v_t` (m/s).
    pub v: &'a [Vec3],
}

/// The buffers the end-of-step state is written to.
pub(crate) struct Next<'a> {
    /// Positions `x_{t+1}` (m).
    pub x: &'a mut [Vec3],
    /// Velocities `v_{t+1}` (m/s).
    pub v: &'a mut [Vec3],
}
