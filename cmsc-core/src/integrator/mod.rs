//! Time integrators. Each advances `(x_t, v_t)` to an unconstrained `(x_{t+1}, v_{t+1})`
//! through one shape, [`Integrate::advance`], asking the stepper's [`Explicit`] owner for the
//! explicit forces (Coulomb, external charges and field, gravity) where it needs them; pins,
//! collisions and the divergence check are applied afterwards by the stepper (`step.rs`).
//!
//! - [`Imex`]: the paper's Eq. (12) on Liu 2013's local/global solver (owns `M + h²L`);
//! - [`Verlet`]: velocity Verlet, the explicit reference;
//! - [`LowDissipation`]: implicit midpoint with Strang kicks and an energy safeguard (owns the
//!   factorizations of its halving levels), which may redo a step in halves.
//!
//! The local/global iterations of both implicit integrators run through one function,
//! [`imex::solve`], where the Anderson/plain choice is made.

pub(crate) mod accel;
mod imex;
mod low_dissipation;
mod verlet;

pub(crate) use imex::{iterate as imex_iterate, start as imex_start, Imex, LocalBuffers};
pub(crate) use low_dissipation::{LowDissipation, Potential};
pub use low_dissipation::{CAP_BAND, EXCESS_TOLERANCE, MAX_HALVINGS};
pub(crate) use verlet::Verlet;

use crate::counters::{StepCounts, StepTimings};
use crate::error::Result;
use crate::math::Vec3;
use crate::model::Model;

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

/// The explicit forces `F(x) = q(x) + f_ext(x)` of [Paper](crate#references) Eq. (12) and the
/// potential energy, as the stepper provides them to an integrator. The owner (in `step.rs`)
/// decides whether the force at the step's start holds the far field (multiple time stepping)
/// and times every evaluation into `t`.
pub(crate) trait Explicit {
    /// `F(x_t)` at the step's start, whole or with the far field held as the owner decides;
    /// kept by the owner (the adjoint replays the step from it).
    ///
    /// # Errors
    /// Field backend errors.
    fn at_step_start(&mut self, model: &Model, x: &[Vec3], t: &mut StepTimings) -> Result<&[Vec3]>;

    /// `F(x)`, whole, into `out`.
    ///
    /// # Errors
    /// Field backend errors.
    fn forces(&mut self, model: &Model, x: &[Vec3], out: &mut [Vec3], t: &mut StepTimings) -> Result<()>;

    /// The potential energy terms at `x`.
    ///
    /// # Errors
    /// Field backend errors.
    fn potential(&mut self, model: &Model, x: &[Vec3], t: &mut StepTimings) -> Result<Potential>;
}

/// One time integrator: advances `now` to `next` under `model`, owning what it keeps across
/// steps (factorizations, iteration history, energy target).
pub(crate) trait Integrate {
    /// Refreshes what an edit made stale (factorizations) before a step; timed by the caller.
    ///
    /// # Errors
    /// [`crate::Error::Factorization`] or [`crate::Error::InvalidArgument`] (`stiffness`).
    fn prepare(&mut self, model: &Model) -> Result<()>;

    /// Advances one step `h` into `next` (pins of the integrator's own rule; the stepper pins
    /// and collides afterwards) and says what it evaluated.
    ///
    /// # Errors
    /// Factorization errors; errors of `forces`.
    fn advance(
        &mut self,
        model: &Model,
        forces: &mut dyn Explicit,
        now: Now<'_>,
        next: Next<'_>,
        t: &mut StepTimings,
    ) -> Result<StepCounts>;

    /// The step was accepted; `contacts` vertices were then moved by colliders.
    fn commit(&mut self, _contacts: usize) {}
}
