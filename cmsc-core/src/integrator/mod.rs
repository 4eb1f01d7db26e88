//! Time integrators. Both advance `(x_t, v_t)` to an unconstrained `(x_{t+1}, v_{t+1})` given
//! the explicit forces at `x_t`; pins, collisions and the divergence check are applied
//! afterwards by [`crate::System::step`].

mod imex;
mod verlet;

pub(crate) use imex::{advance as imex_advance, ImexBuffers};
pub(crate) use verlet::{advance as verlet_advance, finish as verlet_finish};
