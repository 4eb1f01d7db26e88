//! The paper's IMEX step, [Paper](crate#references) Eq. (12), on Liu 2013's local/global solver:
//!
//! ```text
//! y       = x_t + α h v_t                          (inertia with ether drag, Liu 2013 §4.1)
//! x⁰      = y, pinned vertices at their targets
//! repeat K times:
//!   d     = local step at xᵏ                      (Liu 2013 Eq. (10))
//!   (M + h²L) xᵏ⁺¹ = M y + h² (J d + q_t + f_ext)  (Paper Eq. (12), Liu 2013 Eq. (14))
//! v_{t+1} = (x_{t+1} − x_t) / h
//! ```
//!
//! With a tolerance ([`crate::SimParams::iteration_tolerance`]) the iterations stop as soon as
//! their update is small against the step's displacement ([`Stop`]); `K` is then the most.
//!
//! With [`Acceleration::Anderson`] (the default) the K iterations are Anderson-accelerated with
//! an energy safeguard ([`super::accel`]): the same fixed point, reached in fewer iterations.
//!
//! `q_t + f_ext` (Coulomb, external fields, gravity) is evaluated once at `x_t` and passed in as
//! `f_explicit`; springs are implicit. As `K → ∞` the iterates converge to the exact implicit
//! Euler step for the springs (Liu 2013 §4), which `tests/implicit_euler.rs` checks against
//! Newton's method.
//!
//! The three stages are separate functions so that the adjoint in [`crate::gradient`] can
//! replay the iterations of a step and record every iterate `xᵏ`.

use rayon::prelude::*;

use super::accel::{inertial_objective, objective, Anderson, ANDERSON_WINDOW};
use super::{Explicit, Integrate, Next, Now};
use crate::counters::{timed, StepCounts, StepTimings};
use crate::error::Result;
use crate::linsolve::GlobalSolver;
use crate::math::{ordered_blocks, Real, Vec3};
use crate::model::{Acceleration, Damping, Model};
use crate::springs::{damping_energy, gather_jd, gather_jd_damped, local_step_energy, Springs, StrainRate};

/// The local step's outputs, reused across iterations: spring directions `d` (one per spring)
/// and their gather `J d` (one per vertex).
pub(crate) struct LocalBuffers<'a> {
    pub d: &'a mut [Vec3],
    pub jd: &'a mut [Vec3],
}

/// How many factorizations of `M + h²L` the IMEX integrator keeps, for as many step lengths
/// `h` ([`crate::System::advance`] takes `k ∈ {min, 2 min, 4 min, …}` steps per call and
/// usually alternates between two or three of them). Each costs the factor's values and its
/// symbolic structure, about 12 bytes per entry of `L`: 9.4M entries, 113 MB, for the 100K-vertex
/// grid cloth (`examples/step_economy.rs` prints it), so at most 3 × that at 100K. The least
/// recently used is dropped beyond this.
pub const CACHED_FACTORIZATIONS: usize = 3;

/// One cached factorization: `M + h²L` for `h` (s), refactored before use when `stale`.
struct Factor {
    h: Real,
    solver: GlobalSolver,
    stale: bool,
}

/// The paper's IMEX integrator with what it keeps across steps: the factorizations of
/// `M + h²L` for the last step lengths used, the spring directions `d_s` (the fallback
/// direction of springs whose ends coincide; the adjoint reads them), the Anderson history and
/// scratch.
pub(crate) struct Imex {
    /// Prefactored global matrices, most recently used first, one per step length `h`; empty
    /// until first needed or after the pins changed. At most [`CACHED_FACTORIZATIONS`].
    factors: Vec<Factor>,
    y: Vec<Vec3>,
    d: Vec<Vec3>,
    jd: Vec<Vec3>,
    anderson: Anderson,
}

impl Imex {
    /// The integrator for `springs` at positions `x` (the directions start along the springs).
    pub fn new(springs: &Springs, x: &[Vec3]) -> Self {
        let d = springs.ends().iter().map(|&[a, b]| x[a as usize] - x[b as usize]).collect();
        Imex {
            factors: Vec::new(),
            y: vec![Vec3::zeros(); x.len()],
            d,
            jd: vec![Vec3::zeros(); x.len()],
            anderson: Anderson::new(ANDERSON_WINDOW),
        }
    }

    /// Masses or stiffness changed: refactor numerically before the next step (every cached
    /// step length).
    pub fn refactor_later(&mut self) {
        self.factors.iter_mut().for_each(|f| f.stale = true);
    }

    /// Pins changed: analyse the pattern again before the next step.
    pub fn reanalyse_later(&mut self) {
        self.factors.clear();
    }

    /// Entries of the Cholesky factor of each cached factorization (most recently used first),
    /// for memory tables.
    pub fn factor_entries(&self) -> Vec<usize> {
        self.factors.iter().map(|f| f.solver.factor_len()).collect()
    }

    /// The spring directions `d_s` kept across steps.
    pub fn directions(&self) -> &[Vec3] {
        &self.d
    }

    /// Restores spring directions saved with [`Imex::directions`].
    pub fn set_directions(&mut self, d: Vec<Vec3>) {
        self.d = d;
    }

    /// The prefactored `M + h²L` for `h = model.params.time_step`, from the cache, refreshed
    /// if an edit made it stale, or built (dropping the least recently used beyond
    /// [`CACHED_FACTORIZATIONS`]).
    ///
    /// # Errors
    /// [`crate::Error::Factorization`] or [`crate::Error::InvalidArgument`] (`stiffness`).
    pub fn global(&mut self, model: &Model) -> Result<&mut GlobalSolver> {
        let (mass, springs, h) = (&model.mass, &model.springs, model.params.time_step);
        match self.factors.iter().position(|f| f.h == h) {
            Some(i) => {
                let f = self.factors.remove(i);
                self.factors.insert(0, f);
            }
            None => {
                let solver = GlobalSolver::new(mass, springs, &model.pins.pinned, h)?;
                self.factors.insert(0, Factor { h, solver, stale: false });
                self.factors.truncate(CACHED_FACTORIZATIONS);
            }
        }
        let f = &mut self.factors[0];
        if f.stale {
            f.solver.refactor(mass, springs, h)?;
            f.stale = false;
        }
        Ok(&mut f.solver)
    }
}

impl Integrate for Imex {
    fn prepare(&mut self, model: &Model) -> Result<()> {
        self.global(model).map(|_| ())
    }

    /// `x_{t+1}`, `v_{t+1}` from `(x_t, v_t)` and `F(x_t)` (the far field held as the owner of
    /// the forces decides).
    fn advance(
        &mut self,
        model: &Model,
        forces: &mut dyn Explicit,
        now: Now<'_>,
        next: Next<'_>,
        t: &mut StepTimings,
    ) -> Result<StepCounts> {
        let f_explicit = forces.at_step_start(model, now.x, t)?;
        let global = &mut self.factors.first_mut().expect("prepared before advancing").solver;
        let p = &model.params;
        let (scheme, tolerance) = (p.acceleration, p.iteration_tolerance);
        let (Now { x, v }, Next { x: x_new, v: v_new }) = (now, next);
        self.y.resize(x.len(), Vec3::zeros());
        self.jd.resize(x.len(), Vec3::zeros());
        start(model, Now { x, v }, &mut self.y, x_new);
        let local = LocalBuffers { d: &mut self.d, jd: &mut self.jd };
        let h = p.time_step;
        let stop = Stop { tolerance, origin: x };
        let (y, anderson) = (&self.y, &mut self.anderson);
        let iterations = solve(model, global, h, y, f_explicit, scheme, stop, anderson, local, x_new, t);
        finish(h, x, x_new, v_new);
        Ok(StepCounts { attempts: 1, substeps: 1, coulomb_forces: 1, iterations, ..StepCounts::default() })
    }
}

/// `ε` of the stopping rule (m): a step whose iterate moves the vertices by less than a
/// picometre RMS from `x_t` counts as still, so that a system at rest stops iterating instead
/// of comparing rounding with rounding. Far below any visible motion (a 1 m cloth of 10K
/// vertices moves ~10⁻⁴ m per step when it barely sways).
pub const STILL_DISPLACEMENT: Real = 1e-12;

/// When the local/global iterations of one implicit equation stop: after
/// [`crate::SimParams::iterations`], or earlier once the iteration's update is small against
/// the step's displacement, `‖xᵏ⁺¹ − xᵏ‖ ≤ τ (‖xᵏ⁺¹ − x_t‖ + ε √n)` (Euclidean norms over all
/// `3n` coordinates, `ε` = [`STILL_DISPLACEMENT`]).
///
/// Why this measure: the iterations converge linearly (Liu 2013 §4; Anderson makes the rate
/// better, not the kind), so the update bounds the distance to the fixed point up to the factor
/// `1/(1 − ρ)`; relative to the displacement the step makes it is scale-free (metres cancel, and
/// the same `τ` holds for a millimetre-sized and a metre-sized mesh, a slow and a fast step). The
/// displacement `xᵏ⁺¹ − x_t`, not `xᵏ⁺¹ − y`: the iterations correct the inertial prediction `y`,
/// and a calm cloth's correction is tiny, which would demand ever more iterations for motion
/// nobody sees.
///
/// The first iterate stays the inertial prediction `y = x_t + α h v_t`, itself the previous
/// step's solution extrapolated by its velocity. Starting from the constant-acceleration
/// extrapolation `y + h² (v_t − v_{t−1})/h_{t−1}` instead was measured worse
/// (`examples/step_economy.rs`, 10K swinging cloth, `τ` = 1e-3): 6.5 instead of 3.4 iterations
/// per step, the motion bound then asking for 11.5 instead of 9.4 steps per frame.
#[derive(Clone, Copy)]
pub(crate) struct Stop<'a> {
    /// `τ` (dimensionless); 0 runs every iteration.
    pub tolerance: Real,
    /// `x_t`, the positions at the start of the step (m).
    pub origin: &'a [Vec3],
}

impl Stop<'_> {
    /// Whether the update from `before` to `after` meets the tolerance.
    fn converged(&self, before: &[Vec3], after: &[Vec3]) -> bool {
        if self.tolerance <= 0.0 {
            return false;
        }
        // in fixed blocks, so that when the iterations stop does not depend on the threads
        let parts = ordered_blocks(after.len(), 4096, |block| {
            block.fold((0.0, 0.0), |(u, d), i| {
                (u + (after[i] - before[i]).norm_squared(), d + (after[i] - self.origin[i]).norm_squared())
            })
        });
        let (update, displacement) = parts.iter().fold((0.0, 0.0), |(u, d), p| (u + p.0, d + p.1));
        let floor = STILL_DISPLACEMENT * (after.len() as Real).sqrt();
        update.sqrt() <= self.tolerance * (displacement.sqrt() + floor)
    }
}

/// At most `K =` [`crate::SimParams::iterations`] local/global iterations of one implicit
/// equation `M (x − y) = h² (f_s(x) + f)` from the first iterate in `x`, plain or
/// Anderson-accelerated ([`super::accel`]) as `scheme` says, stopping early as `stop` says; the
/// one place those choices are made. `h` (s) is the step of the equation `global` factors: the
/// time step for Eq. (12), half of it for the implicit midpoint of [`super::low_dissipation`]
/// (with `f = 0`: its kicks carry the forces). Returns the iterations run (one local step and
/// one prefactored solve each).
#[allow(clippy::too_many_arguments)] // the equation's data, its scheme and its buffers
pub(crate) fn solve(
    model: &Model,
    global: &mut GlobalSolver,
    h: Real,
    y: &[Vec3],
    f: &[Vec3],
    scheme: Acceleration,
    stop: Stop<'_>,
    anderson: &mut Anderson,
    local: LocalBuffers<'_>,
    x: &mut [Vec3],
    t: &mut StepTimings,
) -> u32 {
    let LocalBuffers { d, jd } = local;
    let iterations = model.params.iterations as usize;
    let taken = match scheme {
        Acceleration::Anderson => {
            let energy = |x: &[Vec3]| objective(&model.mass, &model.springs, h, y, f, stop.origin, x);
            let plain = |x: &mut [Vec3]| {
                let inertial = inertial_objective(&model.mass, h, y, f, x);
                let local = LocalBuffers { d: &mut *d, jd: &mut *jd };
                inertial + h * h * iterate(model, global, h, y, f, stop.origin, local, x, t)
            };
            let converged = |x: &[Vec3], g: &[Vec3]| stop.converged(x, g);
            anderson.run(iterations, &model.pins.pinned, x, plain, energy, converged)
        }
        Acceleration::Plain => {
            let mut before = if stop.tolerance > 0.0 { x.to_vec() } else { Vec::new() };
            let mut taken = iterations;
            for k in 0..iterations {
                if stop.tolerance > 0.0 {
                    before.copy_from_slice(x);
                }
                iterate(model, global, h, y, f, stop.origin, LocalBuffers { d: &mut *d, jd: &mut *jd }, x, t);
                if stop.converged(&before, x) {
                    taken = k + 1;
                    break;
                }
            }
            taken
        }
    };
    taken as u32
}

/// The inertial prediction `y = x + h D(v)` (`D`: ether drag and relative damping, see
/// [`Damping`]; `y = x + α h v` without relative damping) and the first iterate `x⁰ = y` with
/// pinned vertices at their targets. Returns the `D` it used (the adjoint needs it).
pub(crate) fn start<'m>(model: &'m Model, now: Now<'_>, y: &mut [Vec3], x0: &mut [Vec3]) -> Damping<'m> {
    let Now { x, v } = now;
    let damping = Damping::new(model, v);
    y.par_iter_mut()
        .zip(x.par_iter().zip(v.par_iter()))
        .enumerate()
        .for_each(|(i, (y, (x, v)))| *y = x + damping.displacement(i, v));
    x0.copy_from_slice(y);
    let pins = &model.pins;
    for (&i, &target) in pins.indices.iter().zip(&pins.targets) {
        x0[i as usize] = target;
    }
    damping
}

/// One local/global iteration: `d = local step at xᵏ`, then `xᵏ⁺¹ = A⁻¹ (M y + h² (J d + f))`
/// written over `x` (free vertices only; pinned entries are read as the targets). `h` (s) is
/// the step length of the implicit equation, the one `global` factored `A = M + h²L` with:
/// `model.params.time_step` for Eq. (12), half of it for the implicit midpoint of
/// [`super::low_dissipation`]. Springs that damp their strain rate measure it from `origin`, the
/// equation's `x_t`, and gather their damping target with `d` ([`crate::springs`]' module docs).
/// Returns the spring energy at `xᵏ` (J), a by-product of the local step, with the damping's
/// term of the step's energy.
#[allow(clippy::too_many_arguments)] // the iteration's inputs, each borrowed for the adjoint
pub(crate) fn iterate(
    model: &Model,
    global: &mut GlobalSolver,
    h: Real,
    y: &[Vec3],
    f_explicit: &[Vec3],
    origin: &[Vec3],
    local: LocalBuffers<'_>,
    x: &mut [Vec3],
    timings: &mut StepTimings,
) -> Real {
    let (mass, springs) = (&model.mass, &model.springs);
    let h2 = h * h;
    let LocalBuffers { d, jd } = local;
    let energy = timed(&mut timings.springs, || {
        let energy = local_step_energy(springs, x, d);
        if springs.damped() {
            let rate = StrainRate { origin, h };
            gather_jd_damped(springs, d, x, rate, jd);
            energy + damping_energy(springs, rate, x)
        } else {
            gather_jd(springs, d, jd);
            energy
        }
    });
    let jd = &*jd;
    timed(&mut timings.solve, || global.solve_with(|i| y[i] * mass[i] + (jd[i] + f_explicit[i]) * h2, x));
    energy
}

/// `v_{t+1} = (x_{t+1} − x_t) / h`.
pub(crate) fn finish(h: Real, x: &[Vec3], x_new: &[Vec3], v_new: &mut [Vec3]) {
    let inv_h = 1.0 / h;
    v_new
        .par_iter_mut()
        .zip(x_new.par_iter().zip(x.par_iter()))
        .for_each(|(v, (xn, x))| *v = (xn - x) * inv_h);
}
