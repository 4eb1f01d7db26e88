//! [`System::advance`]: advance by a duration in as many equal steps as the explicit part needs.
//!
//! The springs are implicit ([Paper](crate#references) Eq. (12)) and stable at any step; what
//! limits `h` is what the step takes explicitly, at `x_t`: the Coulomb and external-charge
//! forces `q_t + f_ext`, and how far the configuration moves within one step. Each call
//! chooses `k ∈ {min, 2 min, 4 min, …}` (capped at `max`) steps of `h = T/k` for a duration
//! `T`, the first that satisfies the three bounds below, so the factorizations of `M + h²L` come
//! from a small set of step lengths and are cached (see `integrator::imex`).
//!
//! # The charge bound
//! An explicit force with stiffness `K_i = ‖∂F_i/∂x_i‖` on a mass `m_i` is resolved while
//! `h √(K_i/m_i)` stays small (a harmonic oscillator under symplectic Euler is stable for
//! `h ω < 2`; with attracting charges `K` is negative and the motion grows like `e^{ω t}`, which
//! a step resolves only for `h ω ≲ 1`). The paper names this as its integrator's limitation
//! (§5: low spring constants and high charge densities need high-frequency updating). For the
//! Coulomb force of Eq. (8), `F_i = k_c q_i Σ_j q_j r_ij/|r_ij|³`, the pair block of the
//! Jacobian is `k_c q_i q_j (I − 3 r̂ r̂ᵀ)/r³` with norm `2 k_c |q_i q_j| / r³`, so
//!
//! ```text
//! K_i ≤ 2 k_c |q_i| ( Σ_j |q_j| / r_ij³ + Σ_e |Q_e| / |x_i − X_e|³ )
//! ```
//!
//! (external charges `Q_e` at `X_e`; a uniform field has no stiffness). With
//! [`Integrator::Verlet`] the springs are explicit as well and add at most `2 Σ_s k_s` to `K_i`. The sum is dominated by
//! the nearest charges (on a sheet of spacing `a` it converges like `Σ 1/r³ ≈ 9/a³` on a square
//! lattice, `11/a³` on a triangular one), so it is estimated from the mesh neighbours only:
//! `Σ_j |q_j|/r_ij³ ≈` [`NEIGHBOUR_SUM_FACTOR`] `×` the sum over the vertices joined to `i` by
//! a spring (at the current distance, at least the softening length). Charges on other parts
//! that come close are not seen by this estimate; a step they make diverge is caught by the
//! retry below. Then `h_q = c_q min_i √(m_i / K_i)` over free vertices, with `|q_i|`, `|q_j|`,
//! `|Q_e|` the larger of their values at the start and at the end of the call.
//!
//! # The motion bound
//! The force at `x_t` holds for the whole step, and implicit Euler damps a mode of frequency
//! `ω` by `(1 + ω²h²)^{-1/2}` per step: accuracy asks that a step moves each vertex, relative to
//! the mean motion, by a small fraction of the object's size `L` (bounding-box diagonal):
//! `h_v = c_v L / max_i |u_i − ū|`, with `u_i = v_i` for free vertices, the pin's displacement
//! over the call divided by `T` for pinned ones, `ū` their mass-weighted mean.
//!
//! # The contact bound
//! Contacts are projected after the implicit spring step (`collision`): a vertex put back on a
//! curved obstacle stretches the springs to its neighbours, and each step's push does work
//! against their tension, which turns into energy from nothing once a step is long against the
//! time the cloth's waves take to cross the obstacle's curvature. Measured with
//! `examples/landing_energy.rs` (a cloth dropped onto spheres of 0.3, 0.6 and 1.2 m at 100 to
//! 3,000 N/m), the gain follows `c h / R`, with `R` the radius of curvature and `c` the cloth's
//! wave speed, estimated at vertex `i` from its springs' stiffness `k_s` and rest lengths `l_s`
//! as `c_i = √(Σ_s k_s l_s² / m_i)` (the same on a finer mesh of the same cloth: 76 m/s at
//! 100 N/m with 1,681 vertices and with 10,201): none up to 1.75, below 0.1 J at 2.26, then
//! fast (0.5 J at 2.9, 12 J at 3.5, 19 J at 9, and at 18 a cloth thrown apart;
//! [`CONTACT_STEP_FACTOR`]). So every free vertex with springs that meets an obstacle in the
//! call (keeping its velocity, it would come within [`MEET_FRACTION`] of its shortest spring of
//! the contact surface, or pass it; resting on it counts) asks for
//! `h_c = c_c R / c_i` ([`CONTACT_STEP_FACTOR`]), with `R` a sphere's radius, or a mesh
//! obstacle's radius of curvature at the closest triangle (from the angle between its corners'
//! normals over its edges' lengths, the normals not blended across creases sharper than 20°:
//! a cylinder's sides have its radius, a box none). The ground is flat and asks nothing. The
//! add-on's default cloth (100 N/m) on a 0.6 m sphere is within it at 3 steps per frame; on a
//! 0.3 m sphere it takes 6 (at 3 it gained 12 J), and a 3,000 N/m one takes 12 on the 0.6 m
//! sphere while it touches it. Springs that damp their strain rate ([`crate::springs`]) act in a
//! step of length `h` as springs of stiffness `k_s (1 + β_s/h)`, so their `c_i` grows as `h`
//! shrinks and the bound takes the `h` at which `h c_i(h) = c_c R`: the default cloth with a
//! damping time of 0.3 s on the 0.6 m sphere needs 38 steps per frame (at 3 its strain grew past
//! 1,000 % within a second; at 40 it stayed at 14 %), with 0.01 s still 3. Self-contacts are not
//! looked at. [`System::contact_steps`] says what the bound asks for without stepping, for a
//! caller of fixed steps.
//!
//! # Measurements
//! `examples/step_economy.rs`, the bake benchmark's hanging cloth (2 m, top row pinned, 10 µC,
//! 1 kg, swinging down from horizontal), 2 rayon threads on the 2-core VM shared with other
//! builds; error = RMS vertex distance to the converged bake (20 steps × 30 iterations per
//! frame) over the object's size, at frames 30 / 60; `advance` with `min = 1`, `max = 32`,
//! tolerance 1e-3, at most 10 iterations:
//!
//! | n | schedule | steps/frame mean (most) | iterations/step | ms/frame | error f30 | f60 |
//! |---|---|---|---|---|---|---|
//! | 10K | fixed 5 × 6 | 5 | 6 | 118 | 4.84 % | 3.53 % |
//! | 10K | fixed 10 × 6 | 10 | 6 | 248 | 1.96 % | 1.14 % |
//! | 10K | advance, `c_v` = 0.007 (default) | 9.37 (32) | 3.35 | 169 | 1.60 % | 1.09 % |
//! | 10K | advance, `c_v` = 0.02 | 3.37 (8) | 4.74 | 82 | 5.60 % | 4.21 % |
//! | 100K | fixed 5 × 6 | 5 | 6 | 2009 | 4.78 % | |
//! | 100K | fixed 10 × 6 | 10 | 6 | 3580 | 2.01 % | |
//! | 100K | advance, `c_v` = 0.007 (default) | 9.60 (32) | 2.98 | 2751 | 1.41 % | |
//! | 100K | advance, `c_v` = 0.02 | 4.53 (8) | 4.51 | 1722 | 4.54 % | |
//!
//! At equal accuracy `advance` takes 0.68× (10K) and 0.77× (100K) the time of a fixed
//! schedule: it spends its steps where the cloth swings fastest (up to 32 per frame) and few
//! where it is calm. The charge bound keeps the cloth at rest at 2 (10K) and 4 (100K) steps per
//! frame: finer meshes with the same total charge have stiffer neighbour pairs
//! (`K_i/m_i ∝ √n`).
//!
//! # Retries
//! If a step at the chosen `k` diverges ([`Error::Diverged`]: a non-finite state or the runaway
//! guard of `step.rs`), the whole call is redone from the saved start with `2k` steps (up to
//! `max`); only then does the error reach the caller, the state at the call's start.

mod bounds;
mod ramp;

use crate::error::{Error, Result};
use crate::math::{on_pool, Real};
use crate::model::Integrator;
use crate::system::System;
use bounds::{contact_bound, contact_bounds, spring_waves, steps_for, Limits};
pub(crate) use ramp::Before;
use ramp::{Ramp, Sources};

/// Largest `max_steps` [`System::advance`] accepts: 1024 steps per call (per frame, 1/24 s:
/// steps of 41 µs), far beyond what a frame needs; more would let a runaway input cost hours.
pub const MAX_ADVANCE_STEPS: u32 = 1024;

/// `c_q` of the charge bound `h ≤ c_q min_i √(m_i/K_i)` (module docs), dimensionless: `hω ≤ 1`,
/// half the stability limit of symplectic Euler for a repulsive pair (`hω < 2`) and the step
/// that resolves the growth `e^{ωt}` of an attracting one. Measured with
/// `examples/step_economy.rs` on the 10K hanging cloth (10 µC): 0.5 made the cloth at rest take
/// 4 steps per frame for 2.5 % error at frame 30 where 1 gives 2 steps and 2.7 % (`c_v` = 0.01);
/// from 2 the bound no longer acted at all at 10 µC (1 step at rest, 2.8 %). At 1000 µC
/// (against 128 steps × 30 iterations per frame, frame 30) the bound asks for more than 32 steps
/// per frame at 1 and at 4 (32 steps: 25.6 % error, fixed 5 × 6: 38.4 %), 22.7 at 16 (25.2 %):
/// the flapping cloth is chaotic and 1 is on the safe side of what these runs can tell apart.
pub const CHARGE_STEP_FACTOR: Real = 1.0;

/// `c_v` of the motion bound `h ≤ c_v L / max |u_i − ū|` (module docs): the largest fraction of
/// the object's size a vertex may move, relative to the mean motion, in one step. Measured with
/// `examples/step_economy.rs` on the 10K swinging charged cloth against the converged bake
/// (20 steps × 30 iterations per frame), error at frames 30/60 and mean steps per frame:
/// 0.02: 5.6 %/4.2 %, 3.4; 0.01: 2.7 %/1.4 %, 6.4; 0.007: 1.6 %/1.1 %, 9.4; 0.005 (with `c_q` =
/// 2): 0.8 %/1.1 %, 13.1 (the fixed 5 steps of 6 iterations: 4.8 %/3.5 %). 0.007 is the largest within 2 %.
pub const MOTION_STEP_FACTOR: Real = 0.007;

/// The iteration tolerance `τ` ([`crate::SimParams::iteration_tolerance`]) recommended with
/// [`System::advance`] (a new system runs a fixed count, `τ = 0`). Measured with
/// `examples/step_economy.rs` on the 10K swinging cloth (at most 10 iterations, `c_v` = 0.01):
/// `τ` = 1e-3 ran 3.7 iterations per step for 2.7 %/1.4 % error at frames 30/60, 1e-2 ran 2.0
/// for 3.4 %/2.8 %.
pub const RECOMMENDED_ITERATION_TOLERANCE: Real = 1e-3;

/// `Σ_j |q_j|/r_ij³` over all charges relative to its sum over the spring neighbours, for the
/// charge bound: 9.0/4 on a square lattice (4 neighbours), 11.0/6 on a triangular one; 2.5 is
/// above both and leaves some room for the rest of the mesh.
pub const NEIGHBOUR_SUM_FACTOR: Real = 2.5;

/// `c_c` of the contact bound `h ≤ c_c R / c_i` (module docs), dimensionless. Measured with
/// `examples/landing_energy.rs` (a 2 m cloth of 1,681 vertices dropped 5 cm onto a mesh sphere
/// of radius `R` = 0.3, 0.6 or 1.2 m at 100, 300, 1,000 and 3,000 N/m: `c` = 76, 126, 226 and
/// 390 m/s, at 3, 6 and 12 steps per frame), the peak energy above the start against `c h / R`:
/// none in the 16 runs up to 1.75 (the add-on's default 100 N/m cloth on the 0.6 m sphere at its
/// 3 steps per frame is one); 0.01–0.06 J at 2.26; 0.06–0.23 J at 2.62; 0.5–0.56 J at 2.91;
/// 11.9 J at 3.5 (the default cloth on the 0.3 m sphere); 0.6–3.8 J at 4.5; 13.8–18.8 J at 9;
/// 3,329 J at 18 (3,000 N/m on the 0.3 m sphere at 3 steps: the cloth thrown apart). 2.3 keeps
/// the gain below 0.1 J, where 2 would double the steps of the 3,000 N/m cloth for 0.01 J.
pub const CONTACT_STEP_FACTOR: Real = 2.3;

/// A vertex meets an obstacle in a call (the contact bound) when, keeping its velocity, it
/// would come within this share of its shortest spring (1 %) of the obstacle's contact surface,
/// or pass it: a vertex striking the obstacle, and one resting on it.
pub const MEET_FRACTION: Real = 0.01;

/// The factors of the three step bounds of [`System::advance`] (module docs); the defaults are
/// [`CHARGE_STEP_FACTOR`], [`MOTION_STEP_FACTOR`] and [`CONTACT_STEP_FACTOR`]. `Real::INFINITY`
/// turns a bound off.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepBounds {
    /// `c_q` (dimensionless).
    pub charge: Real,
    /// `c_v` (dimensionless).
    pub motion: Real,
    /// `c_c` (dimensionless).
    pub contact: Real,
}

impl Default for StepBounds {
    fn default() -> Self {
        StepBounds { charge: CHARGE_STEP_FACTOR, motion: MOTION_STEP_FACTOR, contact: CONTACT_STEP_FACTOR }
    }
}

/// What the last [`System::step_n`] or [`System::advance`] call did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallCounts {
    /// Steps committed.
    pub steps: u32,
    /// Local/global iterations run in the committed steps ([`crate::StepCounts::iterations`]).
    pub iterations: u64,
    /// Whole-call retries after a diverged step ([`System::advance`] only).
    pub retries: u32,
    /// The steps each bound asked for at the call's start ([`System::advance`] only; all 0
    /// after [`System::step_n`]). Above the steps taken where `max_steps` capped them.
    pub asked: AskedSteps,
}

/// The equal steps over a call that each bound of [`System::advance`] asks for (module docs):
/// `⌈T / h⌉` for the bound's largest step `h` over the call's duration `T`, 1 where the bound
/// does not bind, saturating at `u32::MAX`. `advance` takes at least the largest of them, up to
/// its `max_steps`; where that cap binds, the charge bound's excess says the explicit Coulomb
/// forces are not resolved (close charges can overshoot, gain energy and push layers through each
/// other), the motion bound's that the step is less accurate than its factor asks, and the
/// contact bound's that a mesh pressed onto a curved obstacle can gain energy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AskedSteps {
    /// What the charge bound asks for: the Coulomb and external-charge stiffness (with
    /// [`Integrator::Verlet`], the explicit springs' too).
    pub charge: u32,
    /// What the motion bound asks for.
    pub motion: u32,
    /// What the contact bound asks for ([`System::contact_steps`]).
    pub contact: u32,
}

impl AskedSteps {
    /// The steps the three bounds ask for together: the largest.
    pub fn most(&self) -> u32 {
        self.charge.max(self.motion).max(self.contact)
    }
}

/// What a retry restores: the state, the obstacles, and what the stepper keeps across steps.
struct Checkpoint {
    state: crate::state::State,
    mesh: crate::collision::MeshColliders,
    kept: crate::step::Kept,
}

impl System {
    /// Advances the system by `seconds` in `k` equal steps `h = seconds / k`, `k` chosen per
    /// call from `min_steps · {1, 2, 4, …}` capped at `max_steps` by the charge, motion and
    /// contact bounds of the [module docs](crate::advance) ([`System::set_step_bounds`]);
    /// returns `k`.
    ///
    /// Inputs set since the last step (charges, external charges and uniform field, pin
    /// targets, mesh-obstacle moves) are reached linearly over the call: step `j` of `k` uses
    /// the fraction `(j + 1)/k` between the value in force at the call's start and the value
    /// set (external charges are interpolated only when their count did not change; otherwise
    /// the new ones hold from the first step). Values set before the system's first step are
    /// in force from its start. [`SimParams::time_step`](crate::SimParams) stays
    /// the step of [`System::step`]. With [`Integrator::ImexLowDissipation`], a call whose
    /// energy safeguard halved a step makes the next call take at least twice its steps.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `seconds` is not finite and positive, `min_steps` is 0
    /// or above `max_steps`, or `max_steps` is above [`MAX_ADVANCE_STEPS`] (nothing changes).
    /// [`Error::Diverged`] when a step diverged even at `max_steps` steps (after retries with
    /// `2k`, `4k`, … steps from the saved start); the state is then the call's start, the
    /// inputs as set. Factorization and field backend errors, the state at the call's start.
    pub fn advance(&mut self, seconds: Real, min_steps: u32, max_steps: u32) -> Result<u32> {
        check_advance(seconds, min_steps, max_steps)?;
        let ramp = Ramp::new(self);
        let floor = self.advance_floor.clamp(min_steps, max_steps);
        let limits = Limits::of(self, &ramp, seconds);
        let h_max = limits.least();
        let mut k = floor;
        while k < max_steps && seconds / k as Real > h_max {
            k = k.saturating_mul(2).min(max_steps);
        }
        let start = Checkpoint {
            state: self.state.clone(),
            mesh: self.model.mesh_colliders.clone(),
            kept: self.stepper.kept(),
        };
        let h_step = self.model.params.time_step;
        self.last_call = CallCounts { asked: limits.asked(seconds), ..CallCounts::default() };
        let result = loop {
            match self.run_steps(&ramp, seconds, k) {
                Err(Error::Diverged { .. }) if k < max_steps => {
                    self.restore_checkpoint(&start);
                    self.last_call.retries += 1;
                    k = k.saturating_mul(2).min(max_steps);
                }
                Err(e) => {
                    self.restore_checkpoint(&start);
                    break Err(e);
                }
                Ok(halved) => break Ok(halved),
            }
        };
        self.model.params.time_step = h_step;
        match result {
            Ok(halved) => {
                // the last step ran with the inputs as set, exactly
                self.before = Before::default();
                let low = self.model.params.integrator == Integrator::ImexLowDissipation;
                self.advance_floor = if low && halved { k.saturating_mul(2) } else { self.advance_floor / 2 };
                Ok(k)
            }
            Err(e) => {
                ramp.set_final(self); // the state at the call's start, the inputs as set
                Err(e)
            }
        }
    }

    /// `k` steps of `seconds / k` with the inputs ramped; whether the low-dissipation
    /// safeguard halved any of them.
    fn run_steps(&mut self, ramp: &Ramp, seconds: Real, k: u32) -> Result<bool> {
        self.model.params.time_step = seconds / k as Real;
        let mut halved = false;
        self.last_call.steps = 0;
        self.last_call.iterations = 0;
        on_pool(|| {
            for j in 0..k {
                ramp.apply(self, (j + 1) as Real / k as Real)?;
                self.stepper.step(&self.model, &mut self.state)?;
                let counts = self.stepper.counts();
                halved |= counts.attempts > counts.substeps;
                self.last_call.steps += 1;
                self.last_call.iterations += u64::from(counts.iterations);
            }
            Ok(halved)
        })
    }

    fn restore_checkpoint(&mut self, start: &Checkpoint) {
        self.state.clone_from(&start.state);
        self.model.mesh_colliders = start.mesh.clone();
        self.stepper.restore(&start.kept);
    }

    /// Sets the factors of the step bounds of [`System::advance`] (module docs of
    /// [`crate::advance`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`bounds`) when a factor is not positive (∞ is allowed: no
    /// bound).
    pub fn set_step_bounds(&mut self, bounds: StepBounds) -> Result<()> {
        if !(bounds.charge > 0.0 && bounds.motion > 0.0 && bounds.contact > 0.0) {
            return Err(Error::invalid("bounds", None, "factors must be > 0 (infinity: no bound)"));
        }
        self.step_bounds = bounds;
        Ok(())
    }

    /// What the last [`System::step_n`] or [`System::advance`] call did: steps, iterations,
    /// retries.
    pub fn last_call_counts(&self) -> CallCounts {
        self.last_call
    }

    /// Each vertex's wave speed on its springs (m/s): `c_i = √(Σ_s k_s l_s² / m_i)` over the
    /// springs at it, 0 without springs; the speed of the contact bound
    /// ([module docs](crate::advance)).
    pub fn wave_speeds(&self) -> Vec<Real> {
        let w = spring_waves(&self.model, self.state.x.len());
        w.wave.iter().zip(&self.model.mass).map(|(w, m)| (w / m).sqrt()).collect()
    }

    /// The equal steps over the next `seconds` that each bound of [`System::advance`] asks
    /// for, from the state and the inputs as they are (those set since the last step ramped from
    /// their values then, as `advance` would): what a call of `advance` now would record in
    /// [`CallCounts::asked`]. A caller of fixed steps ([`System::step_n`]) can compare its own
    /// with it. Changes nothing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `seconds` is not finite and positive.
    pub fn asked_steps(&self, seconds: Real) -> Result<AskedSteps> {
        check_seconds(seconds)?;
        Ok(Limits::of(self, &Ramp::new(self), seconds).asked(seconds))
    }

    /// The equal steps over the next `seconds` that the charge bound of [`System::advance`]
    /// asks for ([`AskedSteps::charge`] of [`System::asked_steps`]), without the contacts' look
    /// at every vertex: cheap enough for a caller of fixed steps to ask before each step.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `seconds` is not finite and positive.
    pub fn charge_steps(&self, seconds: Real) -> Result<u32> {
        check_seconds(seconds)?;
        Ok(steps_for(seconds, Sources::new(self).charge_bound(self, self.step_bounds.charge)))
    }

    /// [`System::charge_steps`] for each vertex: the equal steps over the next `seconds` that
    /// its own charge asks for (1 where it is pinned or nothing is stiff), so that a caller can
    /// tell which part of a scene asks; the largest is [`System::charge_steps`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `seconds` is not finite and positive.
    pub fn charge_steps_per_vertex(&self, seconds: Real) -> Result<Vec<u32>> {
        check_seconds(seconds)?;
        let h = Sources::new(self).charge_bounds(self, self.step_bounds.charge);
        Ok(h.into_iter().map(|h| steps_for(seconds, h)).collect())
    }

    /// The equal steps over the next `seconds` that the contact bound asks for
    /// ([module docs](crate::advance), the factor of [`System::set_step_bounds`]), from the
    /// state and obstacles as they are: `⌈seconds / h_c⌉`, 1 where no vertex touches or is
    /// about to strike a curved obstacle. [`System::advance`] takes at least as many (up to its
    /// `max_steps`); a caller of fixed steps ([`System::step_n`]) can compare its own with it:
    /// at fewer, a stiff mesh pressed onto a curved obstacle gains energy from nothing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `seconds` is not finite and positive.
    pub fn contact_steps(&self, seconds: Real) -> Result<u32> {
        check_seconds(seconds)?;
        Ok(steps_for(seconds, contact_bound(self, seconds, self.step_bounds.contact)))
    }

    /// [`System::contact_steps`] for each vertex: the equal steps over the next `seconds` that
    /// its own contacts ask for (1 where it neither touches nor is about to strike a curved
    /// obstacle, and for pinned vertices), so that a caller can tell which part of a scene asks;
    /// the largest is [`System::contact_steps`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `seconds` is not finite and positive.
    pub fn contact_steps_per_vertex(&self, seconds: Real) -> Result<Vec<u32>> {
        check_seconds(seconds)?;
        let n = self.state.x.len();
        Ok(match contact_bounds(self, seconds, self.step_bounds.contact) {
            Some(h) => h.into_iter().map(|h| steps_for(seconds, h)).collect(),
            None => vec![1; n],
        })
    }
}

/// A call's duration: finite and positive.
fn check_seconds(seconds: Real) -> Result<()> {
    if seconds.is_finite() && seconds > 0.0 {
        Ok(())
    } else {
        Err(Error::invalid("seconds", None, format!("{seconds} is not a finite duration > 0 s")))
    }
}

/// [`System::advance`]'s argument checks.
fn check_advance(seconds: Real, min_steps: u32, max_steps: u32) -> Result<()> {
    check_seconds(seconds)?;
    if min_steps == 0 {
        return Err(Error::invalid("min_steps", None, "must be at least 1"));
    }
    if min_steps > max_steps {
        return Err(Error::invalid(
            "min_steps",
            None,
            format!("{min_steps} is above max_steps = {max_steps}"),
        ));
    }
    if max_steps > MAX_ADVANCE_STEPS {
        return Err(Error::invalid(
            "max_steps",
            None,
            format!("{max_steps} is above the limit of {MAX_ADVANCE_STEPS} steps per call"),
        ));
    }
    Ok(())
}
