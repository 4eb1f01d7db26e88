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
use super::{Explicit, Integrate, Iterations, Next, Now};
use crate::counters::{timed, StepCounts, StepTimings};
use crate::error::Result;
use crate::linsolve::GlobalSolver;
use crate::math::{Real, Vec3};
use crate::model::{Acceleration, Damping, Model};
use crate::springs::{gather_jd, local_step_energy, Springs};

/// The local step's outputs, reused across iterations: spring directions `d` (one per spring)
/// and their gather `J d` (one per vertex).
pub(crate) struct LocalBuffers<'a> {
    pub d: &'a mut [Vec3],
    pub jd: &'a mut [Vec3],
}

/// The paper's IMEX integrator with what it keeps across steps: the factorization of
/// `M + h²L`, the spring directions `d_s` (the fallback direction of springs whose ends
/// coincide; the adjoint reads them), the Anderson history and scratch.
pub(crate) struct Imex {
    /// Prefactored global matrix; `None` until first needed or after the pins changed.
    global: Option<GlobalSolver>,
    /// Masses, stiffness or `h` changed since the last numeric factorization.
    stale: bool,
    iterations: Iterations,
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
            global: None,
            stale: false,
            iterations: Iterations::AsParams,
            y: vec![Vec3::zeros(); x.len()],
            d,
            jd: vec![Vec3::zeros(); x.len()],
            anderson: Anderson::new(ANDERSON_WINDOW),
        }
    }

    /// Masses, stiffness or `h` changed: refactor numerically before the next step.
    pub fn refactor_later(&mut self) {
        self.stale = true;
    }

    /// Pins changed: analyse the pattern again before the next step.
    pub fn reanalyse_later(&mut self) {
        self.global = None;
    }

    /// Runs the iterations as the parameters say or plainly (a rollout).
    pub fn set_iterations(&mut self, iterations: Iterations) {
        self.iterations = iterations;
    }

    /// The spring directions `d_s` kept across steps.
    pub fn directions(&self) -> &[Vec3] {
        &self.d
    }

    /// Restores spring directions saved with [`Imex::directions`].
    pub fn set_directions(&mut self, d: Vec<Vec3>) {
        self.d = d;
    }

    /// The prefactored `M + h²L`, refreshed for `model` if an edit made it stale.
    ///
    /// # Errors
    /// [`crate::Error::Factorization`] or [`crate::Error::InvalidArgument`] (`stiffness`).
    pub fn global(&mut self, model: &Model) -> Result<&mut GlobalSolver> {
        let (mass, springs, h) = (&model.mass, &model.springs, model.params.time_step);
        match &mut self.global {
            None => self.global = Some(GlobalSolver::new(mass, springs, &model.pins.pinned, h)?),
            Some(g) if self.stale => g.refactor(mass, springs, h)?,
            Some(_) => {}
        }
        self.stale = false;
        Ok(self.global.as_mut().expect("factorization ensured above"))
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
        let global = self.global.as_mut().expect("prepared before advancing");
        let p = &model.params;
        let scheme = match self.iterations {
            Iterations::AsParams => p.acceleration,
            Iterations::Plain => Acceleration::Plain,
        };
        let (Now { x, v }, Next { x: x_new, v: v_new }) = (now, next);
        self.y.resize(x.len(), Vec3::zeros());
        self.jd.resize(x.len(), Vec3::zeros());
        start(model, Now { x, v }, &mut self.y, x_new);
        let local = LocalBuffers { d: &mut self.d, jd: &mut self.jd };
        let h = p.time_step;
        solve(model, global, h, &self.y, f_explicit, scheme, &mut self.anderson, local, x_new, t);
        finish(h, x, x_new, v_new);
        Ok(StepCounts { attempts: 1, substeps: 1, coulomb_forces: 1, ..StepCounts::default() })
    }
}

/// The `K =` [`crate::SimParams::iterations`] local/global iterations of one implicit equation
/// `M (x − y) = h² (f_s(x) + f)` from the first iterate in `x`, plain or Anderson-accelerated
/// ([`super::accel`]) as `scheme` says; the one place that choice is made. `h` (s) is the step
/// of the equation `global` factors: the time step for Eq. (12), half of it for the implicit
/// midpoint of [`super::low_dissipation`] (with `f = 0`: its kicks carry the forces).
#[allow(clippy::too_many_arguments)] // the equation's data, its scheme and its buffers
pub(crate) fn solve(
    model: &Model,
    global: &mut GlobalSolver,
    h: Real,
    y: &[Vec3],
    f: &[Vec3],
    scheme: Acceleration,
    anderson: &mut Anderson,
    local: LocalBuffers<'_>,
    x: &mut [Vec3],
    t: &mut StepTimings,
) {
    let LocalBuffers { d, jd } = local;
    let iterations = model.params.iterations as usize;
    match scheme {
        Acceleration::Anderson => {
            let energy = |x: &[Vec3]| objective(&model.mass, &model.springs, h, y, f, x);
            let plain = |x: &mut [Vec3]| {
                let inertial = inertial_objective(&model.mass, h, y, f, x);
                let local = LocalBuffers { d: &mut *d, jd: &mut *jd };
                inertial + h * h * iterate(model, global, h, y, f, local, x, t)
            };
            anderson.run(iterations, &model.pins.pinned, x, plain, energy);
        }
        Acceleration::Plain => {
            for _ in 0..iterations {
                iterate(model, global, h, y, f, LocalBuffers { d: &mut *d, jd: &mut *jd }, x, t);
            }
        }
    }
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
/// [`super::low_dissipation`]. Returns the spring energy at `xᵏ` (J), a by-product of the local
/// step.
#[allow(clippy::too_many_arguments)] // the iteration's inputs, each borrowed for the adjoint
pub(crate) fn iterate(
    model: &Model,
    global: &mut GlobalSolver,
    h: Real,
    y: &[Vec3],
    f_explicit: &[Vec3],
    local: LocalBuffers<'_>,
    x: &mut [Vec3],
    timings: &mut StepTimings,
) -> Real {
    let (mass, springs) = (&model.mass, &model.springs);
    let h2 = h * h;
    let LocalBuffers { d, jd } = local;
    let energy = timed(&mut timings.springs, || {
        let energy = local_step_energy(springs, x, d);
        gather_jd(springs, d, jd);
        energy
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
