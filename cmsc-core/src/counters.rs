//! Per-stage wall-clock timers of the last step (one timer per stage, as rapier's counters).

use std::time::{Duration, Instant};

/// Time spent in each stage of the last [`crate::System::step`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepTimings {
    /// Refreshing the factorization of `M + h²L` (zero unless something changed).
    pub factorization: Duration,
    /// Vertex–vertex Coulomb forces (the field backend).
    pub coulomb: Duration,
    /// External charges, uniform field and gravity.
    pub external: Duration,
    /// Local steps and `J d` gathers (IMEX) or explicit spring forces (Verlet).
    pub springs: Duration,
    /// Right-hand-side assembly and the prefactored solves (IMEX only).
    pub solve: Duration,
    /// Pins, collisions, the divergence check and the commit.
    pub finish: Duration,
}

impl StepTimings {
    /// Sum of all stages.
    pub fn total(&self) -> Duration {
        self.factorization + self.coulomb + self.external + self.springs + self.solve + self.finish
    }
}

impl std::ops::AddAssign for StepTimings {
    /// Accumulates another step's stage times (for averages over many steps).
    fn add_assign(&mut self, other: StepTimings) {
        self.factorization += other.factorization;
        self.coulomb += other.coulomb;
        self.external += other.external;
        self.springs += other.springs;
        self.solve += other.solve;
        self.finish += other.finish;
    }
}

/// What the last [`crate::System::step`] evaluated, for cost tables: the work that does not
/// show in a timer's name. [`crate::Integrator::Imex`] and [`crate::Integrator::Verlet`] always
/// report one and two force evaluations, one sub-step, no potential.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepCounts {
    /// Evaluations of the vertex–vertex Coulomb force by the field backend.
    pub coulomb_forces: u32,
    /// Evaluations of the Coulomb potential energy (the energy safeguard of
    /// [`crate::Integrator::ImexLowDissipation`]).
    pub coulomb_potentials: u32,
    /// Sub-steps taken, rejected attempts included (1 when the step was not halved).
    pub attempts: u32,
    /// Sub-steps kept (1 when the step was not halved).
    pub substeps: u32,
    /// Local/global iterations run (one local step and one prefactored solve each), summed over
    /// the sub-steps; below `substeps × SimParams::iterations` when a tolerance
    /// ([`crate::SimParams::iteration_tolerance`]) stopped them early. 0 for Verlet.
    pub iterations: u32,
    /// Whether the safeguard scaled velocities down to cap an energy excess.
    pub capped: bool,
    /// Whether the Coulomb force held the far part of an earlier step and evaluated only the
    /// near part ([`crate::SimParams::far_field_interval`]).
    pub far_field_held: bool,
}

/// Runs `f` and adds its wall-clock time to `slot`.
#[inline]
pub(crate) fn timed<T>(slot: &mut Duration, f: impl FnOnce() -> T) -> T {
    let t0 = Instant::now();
    let out = f();
    *slot += t0.elapsed();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_assign_sums_every_stage() {
        let ms = Duration::from_millis;
        let a = StepTimings {
            factorization: ms(1),
            coulomb: ms(2),
            external: ms(3),
            springs: ms(4),
            solve: ms(5),
            finish: ms(6),
        };
        let mut sum = a;
        sum += a;
        assert_eq!(sum.total(), 2 * a.total());
        assert_eq!(sum.solve, ms(10));
    }
}
