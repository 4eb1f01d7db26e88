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

use super::accel::{inertial_objective, objective, Anderson};
use super::{Next, Now};
use crate::counters::{timed, StepTimings};
use crate::linsolve::GlobalSolver;
use crate::math::{Real, Vec3};
use crate::model::{Acceleration, Damping, Model};
use crate::springs::{gather_jd, local_step_energy};

/// The local step's outputs, reused across iterations: spring directions `d` (one per spring)
/// and their gather `J d` (one per vertex).
pub(crate) struct LocalBuffers<'a> {
    pub d: &'a mut [Vec3],
    pub jd: &'a mut [Vec3],
}

/// Per-step buffers of the IMEX step: the inertial prediction `y`, the local step's, and the
/// acceleration's history.
pub(crate) struct ImexBuffers<'a> {
    pub y: &'a mut [Vec3],
    pub d: &'a mut [Vec3],
    pub jd: &'a mut [Vec3],
    pub anderson: &'a mut Anderson,
}

/// Computes `x_new` and `v_new` from `(x, v)` and the explicit forces `f_explicit` (N) under
/// `model`, with `M + h²L` prefactored in `global`.
pub(crate) fn advance(
    model: &Model,
    global: &mut GlobalSolver,
    now: Now<'_>,
    f_explicit: &[Vec3],
    buf: ImexBuffers<'_>,
    next: Next<'_>,
    timings: &mut StepTimings,
) {
    let (Now { x, v }, Next { x: x_new, v: v_new }) = (now, next);
    let ImexBuffers { y, d, jd, anderson } = buf;
    let p = &model.params;
    start(model, Now { x, v }, y, x_new);
    let pinned = &model.pins.pinned;
    match p.acceleration {
        Acceleration::Anderson => {
            let (h, y) = (p.time_step, &*y);
            let energy = |x: &[Vec3]| objective(&model.mass, &model.springs, h, y, f_explicit, x);
            let plain = |x: &mut [Vec3]| {
                let inertial = inertial_objective(&model.mass, h, y, f_explicit, x);
                let local = LocalBuffers { d: &mut *d, jd: &mut *jd };
                inertial + h * h * iterate(model, global, h, y, f_explicit, local, x, timings)
            };
            anderson.run(p.iterations as usize, pinned, x_new, plain, energy);
        }
        Acceleration::Plain => {
            for _ in 0..p.iterations {
                iterate(
                    model,
                    global,
                    p.time_step,
                    y,
                    f_explicit,
                    LocalBuffers { d: &mut *d, jd: &mut *jd },
                    x_new,
                    timings,
                );
            }
        }
    }
    finish(p.time_step, x, x_new, v_new);
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
