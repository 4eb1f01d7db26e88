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
//! `q_t + f_ext` (Coulomb, external fields, gravity) is evaluated once at `x_t` and passed in as
//! `f_explicit`; springs are implicit. As `K → ∞` the iterates converge to the exact implicit
//! Euler step for the springs (Liu 2013 §4), which `tests/implicit_euler.rs` checks against
//! Newton's method.

use rayon::prelude::*;

use super::{Next, Now};
use crate::counters::{timed, StepTimings};
use crate::linsolve::GlobalSolver;
use crate::math::{Real, Vec3};
use crate::springs::{gather_jd, local_step, Springs};
use crate::system::{Pins, SimParams};

/// Per-step buffers of the IMEX step.
pub(crate) struct ImexBuffers<'a> {
    pub y: &'a mut [Vec3],
    pub d: &'a mut [Vec3],
    pub jd: &'a mut [Vec3],
}

/// Computes `x_new` and `v_new` from `(x, v)` and the explicit forces.
#[allow(clippy::too_many_arguments)] // one borrowed input per model part; bundling hides the data flow
pub(crate) fn advance(
    params: &SimParams,
    mass: &[Real],
    springs: &Springs,
    pins: &Pins,
    global: &mut GlobalSolver,
    now: Now<'_>,
    f_explicit: &[Vec3],
    buf: ImexBuffers<'_>,
    next: Next<'_>,
    timings: &mut StepTimings,
) {
    let (Now { x, v }, Next { x: x_new, v: v_new }) = (now, next);
    let h = params.time_step;
    let (h2, ah) = (h * h, params.alpha() * h);
    let ImexBuffers { y, d, jd } = buf;
    y.par_iter_mut().zip(x.par_iter().zip(v.par_iter())).for_each(|(y, (x, v))| *y = x + v * ah);
    x_new.copy_from_slice(y);
    for (&i, &target) in pins.indices.iter().zip(&pins.targets) {
        x_new[i as usize] = target;
    }
    for _ in 0..params.iterations {
        timed(&mut timings.springs, || {
            local_step(springs, x_new, d);
            gather_jd(springs, d, jd);
        });
        timed(&mut timings.solve, || {
            let (free, mut rhs) = global.rhs_mut();
            for (row, &vtx) in free.iter().enumerate() {
                let i = vtx as usize;
                let b = y[i] * mass[i] + (jd[i] + f_explicit[i]) * h2;
                for c in 0..3 {
                    rhs[(row, c)] = b[c];
                }
            }
            global.solve(x_new);
        });
    }
    let inv_h = 1.0 / h;
    v_new
        .par_iter_mut()
        .zip(x_new.par_iter().zip(x.par_iter()))
        .for_each(|(v, (xn, x))| *v = (xn - x) * inv_h);
}
