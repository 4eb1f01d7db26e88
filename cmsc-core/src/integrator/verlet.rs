//! Velocity Verlet with the same forces as the IMEX step, all explicit: the symplectic,
//! second-order reference integrator used to validate the IMEX step (the paper's baseline in
//! §4, Figs. 4–5). Damping acts on `v_t` before the kick, as in the IMEX step (`D(v) = α v`
//! with ether drag alone; see [`Damping`]). The springs' strain-rate damping is a force like the
//! others, taken at `v_t` in the first kick and at `v_½` in the second.
//!
//! ```text
//! v_½     = D(v_t) + (h/2) M⁻¹ f(x_t)
//! x_{t+1} = x_t + h v_½
//! v_{t+1} = v_½ + (h/2) M⁻¹ f(x_{t+1})
//! ```

use rayon::prelude::*;

use super::{Explicit, Integrate, Next, Now};
use crate::counters::{timed, StepCounts, StepTimings};
use crate::error::Result;
use crate::math::{Real, Vec3};
use crate::model::{Damping, Model};
use crate::springs::{damping_forces, spring_forces};

/// Velocity Verlet; keeps only its force buffer.
#[derive(Debug, Default)]
pub(crate) struct Verlet {
    force: Vec<Vec3>,
}

impl Integrate for Verlet {
    fn prepare(&mut self, _model: &Model) -> Result<()> {
        Ok(()) // nothing factored
    }

    /// Both kicks with all forces, springs included; pinned vertices are on their targets
    /// before the forces at `x_{t+1}` are taken.
    fn advance(
        &mut self,
        model: &Model,
        forces: &mut dyn Explicit,
        now: Now<'_>,
        next: Next<'_>,
        t: &mut StepTimings,
    ) -> Result<StepCounts> {
        let (Now { x, v }, Next { x: x_new, v: v_new }) = (now, next);
        self.force.clear();
        self.force.extend_from_slice(forces.at_step_start(model, x, t)?);
        timed(&mut t.springs, || {
            spring_forces(&model.springs, x, &mut self.force);
            damping_forces(&model.springs, x, v, &mut self.force);
        });
        advance(model, Now { x, v }, &self.force, Next { x: &mut *x_new, v: &mut *v_new });
        let pins = &model.pins;
        for (&i, &target) in pins.indices.iter().zip(&pins.targets) {
            x_new[i as usize] = target;
        }
        forces.forces(model, x_new, &mut self.force, t)?;
        timed(&mut t.springs, || {
            spring_forces(&model.springs, x_new, &mut self.force);
            damping_forces(&model.springs, x_new, v_new, &mut self.force); // at v_½
        });
        finish(model.params.time_step, &model.mass, &self.force, v_new);
        Ok(StepCounts { attempts: 1, substeps: 1, coulomb_forces: 2, ..StepCounts::default() })
    }
}

/// First half: half kick and drift. `f` holds all forces at `x_t` (N); writes `v_half` into
/// `v_new` and `x_{t+1}` into `x_new`.
fn advance(model: &Model, now: Now<'_>, f: &[Vec3], next: Next<'_>) {
    let Now { x, v } = now;
    let (h, mass, damping) = (model.params.time_step, &model.mass, Damping::new(model, v));
    next.v.par_iter_mut().zip(next.x.par_iter_mut()).enumerate().for_each(|(i, (vn, xn))| {
        *vn = damping.velocity(i, &v[i]) + f[i] * (0.5 * h / mass[i]);
        *xn = x[i] + *vn * h;
    });
}

/// Second half kick with the forces `f_new` at `x_{t+1}` (N).
fn finish(h: Real, mass: &[Real], f_new: &[Vec3], v_new: &mut [Vec3]) {
    v_new
        .par_iter_mut()
        .zip(f_new.par_iter().zip(mass.par_iter()))
        .for_each(|(vn, (f, &m))| *vn += f * (0.5 * h / m));
}
