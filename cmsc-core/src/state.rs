//! The state a step advances: positions `x_t`, velocities `v_t`, time and step count. Nothing
//! else changes when [`crate::System::step`] runs (the stepper's scratch aside).

use crate::math::{Real, Vec3};

/// `(x_t, v_t)` at time `t` after `steps` steps.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    /// Positions `x_t` (m), world frame, all finite.
    pub(crate) x: Vec<Vec3>,
    /// Velocities `v_t` (m/s), all finite.
    pub(crate) v: Vec<Vec3>,
    /// Simulated time `t` since creation (s).
    pub(crate) time: Real,
    /// Number of completed steps.
    pub(crate) steps: u64,
}

impl State {
    /// At rest at `x`, time 0.
    pub(crate) fn at_rest(x: &[Vec3]) -> Self {
        State { x: x.to_vec(), v: vec![Vec3::zeros(); x.len()], time: 0.0, steps: 0 }
    }

    /// Positions `x_t` (m).
    pub fn positions(&self) -> &[Vec3] {
        &self.x
    }

    /// Velocities `v_t` (m/s).
    pub fn velocities(&self) -> &[Vec3] {
        &self.v
    }

    /// Simulated time since creation (s).
    pub fn time(&self) -> Real {
        self.time
    }

    /// Number of completed steps.
    pub fn step_count(&self) -> u64 {
        self.steps
    }
}
