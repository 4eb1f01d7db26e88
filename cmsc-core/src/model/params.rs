//! Simulation parameters, in SI units, with validation.

use crate::collision::FrictionLaw;
use crate::coulomb::{FieldMethod, Neighborhood, MAX_GRID_POINTS, P3M_DEFAULT_TOLERANCE};
use crate::error::{Error, Result};
use crate::math::{Real, Vec3};

/// Coulomb's constant `k_c = 1 / (4π ε₀)` in N·m²/C² (CODATA 2018).
pub const COULOMB_CONSTANT: Real = 8.987_551_792_3e9;

/// Largest accepted number of local/global iterations per step. More than this is almost
/// certainly a unit mistake, and would make a single step take minutes on large meshes.
pub const MAX_ITERATIONS: u32 = 100_000;

/// Largest accepted [`SimParams::far_field_interval`]: a far field held for more than a thousand
/// steps is a mistake, not a saving.
pub const MAX_FAR_FIELD_INTERVAL: u32 = 1000;

/// Smallest and largest accepted [`SimParams::field_tolerance`]: the range P3M's parameters are
/// calibrated for (`coulomb/p3m/params.rs`).
pub const MIN_FIELD_TOLERANCE: Real = 1e-4;
/// See [`MIN_FIELD_TOLERANCE`].
pub const MAX_FIELD_TOLERANCE: Real = 0.1;

/// Default local/global iterations per step ([`SimParams::default`]): with
/// [`Acceleration::Anderson`] at least as accurate as 10 plain iterations (Liu 2013's number
/// for visually converged cloth, the default before issue 19) in one step from each of four
/// swinging states of a 10K-vertex hanging cloth (after 10, 30, 60, 120 steps; 5 sufficed for
/// one of them), measured by `examples/accel_table.rs`.
pub const DEFAULT_ITERATIONS: u32 = 6;

/// Which time integrator advances the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Integrator {
    /// The paper's implicit-explicit step, [Paper](crate#references) Eq. (12): springs implicit
    /// (Liu 2013 local/global), Coulomb and external forces explicit.
    #[default]
    Imex,
    /// Velocity Verlet with the same forces, all explicit: symplectic and second order, but only
    /// stable for small `h`. Kept as the validation reference.
    Verlet,
    /// A less dissipative implicit-explicit step: springs by the implicit midpoint rule on the
    /// same local/global solver (factoring `M + (h/2)² L`), Coulomb and external forces as two
    /// half kicks around it (Strang splitting, one Coulomb evaluation per step), with an energy
    /// safeguard that redoes a step as two half steps when it raises the total energy beyond
    /// the work done on the system, and caps small excesses. Keeps motion lively at large
    /// steps where [`Integrator::Imex`] damps it; see `integrator/low_dissipation.rs` for the
    /// equations. No gradients ([`crate::System::rollout_gradient`] refuses it).
    ImexLowDissipation,
}

/// How the local/global iterations of an IMEX step are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Acceleration {
    /// Anderson acceleration with an energy-decrease safeguard ([Peng 2018](crate#references)):
    /// the same fixed point, reached in about half the iterations (`examples/accel_table.rs`).
    #[default]
    Anderson,
    /// Plain Liu 2013 local/global iterations.
    Plain,
}

/// The short-range form of the pair force: each vertex's charge is a surface charge, spread
/// uniformly over a ball of radius `a` (the *charge radius*), so the force is exactly Coulomb's
/// beyond `a`, falls linearly to zero inside it and never exceeds `k_c |q_i q_j| / a²`; the
/// potential is its exact integral (Eqs. (C1)–(C2) of [`crate::coulomb`], derived there).
/// Every field backend, the external charges and the energy use the same form.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Softening {
    /// `a = ¼ ×` the rest distance from a vertex to its nearest spring neighbour
    /// ([`crate::PATCH_FRACTION`]), its 10 % quantile over vertices ([`crate::FINE_QUANTILE`]):
    /// the pairs of the rest mesh interact by Coulomb's law exactly and only pairs in contact (or an edge crushed to
    /// half its length) feel the bounded form. Without springs (a charge cloud), `10⁻³ ×` the
    /// bounding-box diagonal divided by `∛n`, which only keeps coincident pairs finite.
    #[default]
    Auto,
    /// A fixed charge radius `a` in metres; `0` is the bare Coulomb law (coincident pairs are
    /// then skipped, i.e. contribute no force, instead of producing `0/0`).
    Length(Real),
}

/// Parameters of one simulation. Units are SI; the defaults are [`SimParams::default`].
#[derive(Debug, Clone, PartialEq)]
pub struct SimParams {
    /// Time step `h` (s).
    pub time_step: Real,
    /// Local/global iterations per IMEX step (Liu 2013 §4), and per sub-step of
    /// [`Integrator::ImexLowDissipation`]. Ignored by [`Integrator::Verlet`].
    pub iterations: u32,
    /// How the iterations are run: accelerated (the default) or plain.
    pub acceleration: Acceleration,
    /// Relative-update tolerance `τ` (dimensionless, `≥ 0`) of the local/global iterations: a
    /// step stops iterating once `‖xᵏ⁺¹ − xᵏ‖ ≤ τ (‖xᵏ⁺¹ − x_t‖ + ε √n)` (the iteration's own
    /// update small against the step's displacement, see `integrator::imex`), and
    /// [`SimParams::iterations`] is then the most it runs. `0` (the default) runs exactly
    /// `iterations`, the behaviour before tolerances existed.
    pub iteration_tolerance: Real,
    /// Ether drag in `[0, 1]`: `0` keeps all velocity, `1` removes it every step. The inertial
    /// prediction is `y = x_t + α h v_t` with `α = 1 − damping` (Liu 2013 §4.1).
    pub damping: Real,
    /// Relative damping rate `c` (1/s, `≥ 0`): velocities relative to the pins' mean motion (or,
    /// without pins, the centre of mass's) decay as `e^{−c t}`, whatever the step size, so that
    /// motion settles while falling and drifting objects keep their speed: the inertial
    /// prediction uses `D(v)_i = α (γ v_i + (1 − γ) v̄)` with `γ = e^{−c h}` and `v̄` the
    /// mass-weighted mean velocity of the pinned vertices, or of all vertices when none is.
    /// `0` (the default) is the paper's step.
    pub relative_damping: Real,
    /// Gravitational acceleration `g` (m/s²).
    pub gravity: Vec3,
    /// Coulomb's constant `k_c` (N·m²/C²).
    pub coulomb_constant: Real,
    /// How vertex–vertex Coulomb forces are evaluated.
    pub coulomb: FieldMethod,
    /// DDEF grid size `m` (number of Halton points, spread uniformly as in the paper), or `0`
    /// for an adaptive grid: `m` balances the far-field gather against the near field and most
    /// points follow the charges ([`crate::coulomb::Ddef::adaptive`]); used by the DDEF methods.
    pub grid_points: u32,
    /// Multiple time stepping of DDEF's far field: the whole field is evaluated every
    /// `far_field_interval` steps, and in the steps between only its exact near part, the far
    /// part held from the last whole evaluation
    /// ([`FieldSolver::forces_holding_far_field`](crate::FieldSolver::forces_holding_far_field)).
    /// `1` (the default) evaluates everything every step. Only
    /// [`Integrator::Imex`] with a DDEF method uses it: the exact methods have no far part, and
    /// Verlet, [`Integrator::ImexLowDissipation`] and the gradient evaluate every step. Any
    /// edit of the positions or the parameters starts a new interval (changed charges make
    /// the next step whole by themselves).
    pub far_field_interval: u32,
    /// The relative RMS force error the P3M field aims for ([`crate::coulomb::P3m`], also when
    /// [`FieldMethod::Auto`] picks it): [`P3M_DEFAULT_TOLERANCE`] = 10⁻² by default, `10⁻³` for a
    /// reference-grade field at about twice the cost; within
    /// [`MIN_FIELD_TOLERANCE`]`..=`[`MAX_FIELD_TOLERANCE`], the range its parameters are
    /// calibrated for. The exact methods have no error to choose, and DDEF's is set by its grid
    /// ([`SimParams::grid_points`]): they ignore it.
    pub field_tolerance: Real,
    /// DDEF near sets: [`Neighborhood::Ring`] (default; error ≈ 0.01) or the faster
    /// [`Neighborhood::Face`] (error ≈ 0.03; 2.5× faster at n = 64K).
    pub ddef_near: Neighborhood,
    /// The time integrator.
    pub integrator: Integrator,
    /// Height `z` (m) of a ground plane that vertices cannot go below; `None` for no ground.
    pub ground_height: Option<Real>,
    /// Friction of ground and sphere contacts, under the system's
    /// [`FrictionLaw`]: with [`FrictionLaw::PerStep`]
    /// (the default) a factor in `[0, 1]`, the tangential motion of a vertex in contact being
    /// scaled by `1 − friction` in that step; with
    /// [`FrictionLaw::Coulomb`] a Coulomb coefficient `μ >= 0`
    /// (collision module docs).
    pub friction: Real,
    /// Treatment of (nearly) coincident charges.
    pub softening: Softening,
}

impl Default for SimParams {
    /// `h = 1/120 s` (five substeps of a 24 fps frame), [`DEFAULT_ITERATIONS`] = 6 accelerated
    /// iterations ([`Acceleration::Anderson`]; as accurate as the 10 plain ones Liu 2013 uses for
    /// visually converged cloth), no damping of either kind, Earth gravity along `−z` (Blender's up axis is `z`),
    /// the exact `k_c`, the automatic Coulomb method ([`FieldMethod::Auto`]), an adaptive DDEF
    /// grid (`grid_points = 0`: about 1,000 points at 10K vertices, 5,000 at 100K; the paper's
    /// error is below 0.06 from m = 1K), the IMEX integrator, no ground, no friction, automatic
    /// softening.
    fn default() -> Self {
        SimParams {
            time_step: 1.0 / 120.0,
            iterations: DEFAULT_ITERATIONS,
            acceleration: Acceleration::Anderson,
            iteration_tolerance: 0.0,
            damping: 0.0,
            relative_damping: 0.0,
            gravity: Vec3::new(0.0, 0.0, -9.81),
            coulomb_constant: COULOMB_CONSTANT,
            coulomb: FieldMethod::Auto,
            grid_points: 0,
            far_field_interval: 1,
            field_tolerance: P3M_DEFAULT_TOLERANCE,
            ddef_near: Neighborhood::Ring,
            integrator: Integrator::Imex,
            ground_height: None,
            friction: 0.0,
            softening: Softening::Auto,
        }
    }
}

impl SimParams {
    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the field when: `time_step` is not finite and positive;
    /// `iterations` is 0 or above [`MAX_ITERATIONS`]; `iteration_tolerance` is negative or not
    /// finite; `far_field_interval` is 0 or above
    /// [`MAX_FAR_FIELD_INTERVAL`]; `grid_points` is above
    /// [`MAX_GRID_POINTS`] (0 is valid: the adaptive grid); `field_tolerance` is outside
    /// [`MIN_FIELD_TOLERANCE`]`..=`[`MAX_FIELD_TOLERANCE`]; `damping` or `friction` is outside
    /// `[0, 1]`; `relative_damping` is negative or not finite;
    /// `gravity`, `coulomb_constant` or `ground_height` is not finite; `coulomb_constant` is
    /// negative; a fixed softening length is negative or not finite.
    pub fn validate(&self) -> Result<()> {
        self.validate_for(FrictionLaw::PerStep)
    }

    /// Checks every field as [`SimParams::validate`], `friction` under `law`
    /// ([`FrictionLaw::check`]: any finite value `>= 0` for [`FrictionLaw::Coulomb`]).
    ///
    /// # Errors
    /// As [`SimParams::validate`].
    pub fn validate_for(&self, law: FrictionLaw) -> Result<()> {
        let bad = |name, reason: &str| Err(Error::invalid(name, None, reason));
        if !(self.time_step.is_finite() && self.time_step > 0.0) {
            return bad("time_step", "must be finite and > 0 s");
        }
        if self.iterations == 0 || self.iterations > MAX_ITERATIONS {
            return bad("iterations", "must be in 1..=100000");
        }
        if !(self.iteration_tolerance.is_finite() && self.iteration_tolerance >= 0.0) {
            return bad("iteration_tolerance", "must be finite and >= 0 (0 = a fixed iteration count)");
        }
        if !(0.0..=1.0).contains(&self.damping) {
            return bad("damping", "must be in [0, 1]");
        }
        if !(self.relative_damping.is_finite() && self.relative_damping >= 0.0) {
            return bad("relative_damping", "must be finite and >= 0 (1/s)");
        }
        if !crate::math::is_finite3(&self.gravity) {
            return bad("gravity", "must be finite");
        }
        if !(self.coulomb_constant.is_finite() && self.coulomb_constant >= 0.0) {
            return bad("coulomb_constant", "must be finite and >= 0");
        }
        if let Some(z) = self.ground_height {
            if !z.is_finite() {
                return bad("ground_height", "must be finite (use None for no ground)");
            }
        }
        if self.far_field_interval == 0 || self.far_field_interval > MAX_FAR_FIELD_INTERVAL {
            return bad("far_field_interval", "must be in 1..=1000 steps");
        }
        if !(MIN_FIELD_TOLERANCE..=MAX_FIELD_TOLERANCE).contains(&self.field_tolerance) {
            return bad("field_tolerance", "must be in 1e-4..=0.1 (relative RMS force error)");
        }
        if self.grid_points > MAX_GRID_POINTS {
            return bad("grid_points", "must be 0 (adaptive) or in 1..=10000000");
        }
        if law.check("friction", None, self.friction).is_err() {
            return bad(
                "friction",
                match law {
                    FrictionLaw::PerStep => "must be in [0, 1]",
                    FrictionLaw::Coulomb => "must be a finite Coulomb coefficient >= 0",
                },
            );
        }
        if let Softening::Length(eps) = self.softening {
            if !(eps.is_finite() && eps >= 0.0) {
                return bad("softening", "charge radius must be finite and >= 0 m");
            }
        }
        Ok(())
    }

    /// Ether-drag factor `α = 1 − damping` of Liu 2013 §4.1.
    pub fn alpha(&self) -> Real {
        1.0 - self.damping
    }
}
