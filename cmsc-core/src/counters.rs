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

/// Runs `f` and adds its wall-clock time to `slot`.
#[inline]
pub(crate) fn timed<T>(slot: &mut Duration, f: impl FnOnce() -> T) -> T {
    let t0 = Instant::now();
    let out = f();
    *slot += t0.elapsed();
    out
}
