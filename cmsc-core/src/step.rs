//! One time step, as a fixed sequence of stages:
//!
//! 1. **edits** — refresh the factorization of `M + h²L` if pins, masses, stiffness or `h`
//!    changed since the last step;
//! 2. **explicit forces at `x_t`** — vertex–vertex Coulomb (the field backend), external
//!    charges and field, gravity: `q_t + f_ext` of [Paper](crate#references) Eq. (12);
//! 3. **integrate** — the IMEX local/global iterations ([`crate::Integrator::Imex`]) or
//!    velocity Verlet ([`crate::Integrator::Verlet`]), into scratch buffers;
//! 4. **pins** — pinned vertices land exactly on their targets;
//! 5. **collisions** — projection onto the ground and spheres, with friction;
//! 6. **guard and commit** — if any position or velocity is not finite the step is rejected
//!    with [`Error::Diverged`] and the state is untouched; otherwise the buffers become the
//!    state.

use rayon::prelude::*;

use crate::coulomb::FieldSolver;
use crate::counters::{timed, StepTimings};
use crate::error::{Error, Result};
use crate::fields::{add_gravity, ExternalField};
use crate::integrator::{imex_advance, verlet_advance, verlet_finish, Next, Now};
use crate::math::{is_finite3, Real, Vec3};
use crate::springs::{spring_forces, Springs};
use crate::system::{Integrator, SimParams, System};

/// Buffers reused across steps (no allocation while stepping).
pub(crate) struct Scratch {
    x_new: Vec<Vec3>,
    v_new: Vec<Vec3>,
    force: Vec<Vec3>,
    y: Vec<Vec3>,
    jd: Vec<Vec3>,
    /// Spring directions `d_s`, kept across steps as the fallback direction of springs whose
    /// ends coincide.
    pub(crate) d: Vec<Vec3>,
}

impl Scratch {
    pub fn new(n: usize, n_springs: usize) -> Self {
        let z = || vec![Vec3::zeros(); n];
        Scratch { x_new: z(), v_new: z(), force: z(), y: z(), jd: z(), d: vec![Vec3::zeros(); n_springs] }
    }

    pub fn init_directions(&mut self, springs: &Springs, x: &[Vec3]) {
        for (d, &[a, b]) in self.d.iter_mut().zip(springs.ends()) {
            *d = x[a as usize] - x[b as usize];
        }
    }
}

/// The environment of the explicit forces, borrowed from the system.
struct Explicit<'a> {
    params: &'a SimParams,
    external: &'a ExternalField,
    mass: &'a [Real],
    charge: &'a [Real],
    eps: Real,
}

impl Explicit<'_> {
    /// `q(x) + f_ext(x)`: Coulomb, external charges and field, gravity (N), written to `out`.
    fn forces(
        &self,
        field: &mut dyn FieldSolver,
        x: &[Vec3],
        out: &mut [Vec3],
        t: &mut StepTimings,
    ) -> Result<()> {
        let k_c = self.params.coulomb_constant;
        timed(&mut t.coulomb, || field.forces(x, self.charge, k_c, self.eps, out))?;
        timed(&mut t.external, || {
            self.external.add_forces(x, self.charge, k_c, self.eps, out);
            add_gravity(self.mass, self.params.gravity, out);
        });
        Ok(())
    }
}

impl System {
    /// Advances the system by one time step `h` (stages in the [module docs](crate::step)).
    ///
    /// # Errors
    /// [`Error::Diverged`] when the step produced a non-finite position or velocity (the state
    /// stays at the last good step); [`Error::Factorization`] if a refactorization fails; field
    /// backend errors.
    pub fn step(&mut self) -> Result<()> {
        self.step_recording(None).map(|_contacts| ())
    }

    /// [`System::step`], also copying the explicit forces `q_t + f_ext` into `f_explicit` when
    /// given (the adjoint in [`crate::gradient`] replays the step from them). Returns the number
    /// of vertices the colliders moved.
    pub(crate) fn step_recording(&mut self, f_explicit: Option<&mut Vec<Vec3>>) -> Result<usize> {
        let mut t = StepTimings::default();
        timed(&mut t.factorization, || self.ensure_factorization())?;
        let eps = self.softening();
        let explicit = Explicit {
            params: &self.params,
            external: &self.external,
            mass: &self.mass,
            charge: &self.charge,
            eps,
        };
        let s = &mut self.scratch;
        let h = self.params.time_step;
        explicit.forces(self.field.as_mut(), &self.x, &mut s.force, &mut t)?;
        if let Some(record) = f_explicit {
            record.clear();
            record.extend_from_slice(&s.force);
        }
        match self.params.integrator {
            Integrator::Imex => {
                let global = self.global.as_mut().expect("factorization ensured above");
                let buf = crate::integrator::ImexBuffers { y: &mut s.y, d: &mut s.d, jd: &mut s.jd };
                let now = Now { x: &self.x, v: &self.v };
                let next = Next { x: &mut s.x_new, v: &mut s.v_new };
                imex_advance(
                    &self.params,
                    &self.mass,
                    &self.springs,
                    &self.pins,
                    global,
                    now,
                    &s.force,
                    buf,
                    next,
                    &mut t,
                );
            }
            Integrator::Verlet => {
                timed(&mut t.springs, || spring_forces(&self.springs, &self.x, &mut s.force));
                let now = Now { x: &self.x, v: &self.v };
                let next = Next { x: &mut s.x_new, v: &mut s.v_new };
                verlet_advance(self.params.alpha(), h, &self.mass, now, &s.force, next);
                for (&i, &target) in self.pins.indices.iter().zip(&self.pins.targets) {
                    s.x_new[i as usize] = target;
                }
                explicit.forces(self.field.as_mut(), &s.x_new, &mut s.force, &mut t)?;
                timed(&mut t.springs, || spring_forces(&self.springs, &s.x_new, &mut s.force));
                verlet_finish(h, &self.mass, &s.force, &mut s.v_new);
            }
        }
        let finish = std::time::Instant::now();
        for (&i, &target) in self.pins.indices.iter().zip(&self.pins.targets) {
            let i = i as usize;
            s.x_new[i] = target;
            s.v_new[i] = (target - self.x[i]) / h;
        }
        let contacts = self.colliders.project(
            &self.x,
            &mut s.x_new,
            &mut s.v_new,
            &self.pins.pinned,
            self.params.friction,
        );
        if let Some(i) = first_non_finite(&s.x_new, &s.v_new) {
            self.timings = t;
            return Err(Error::Diverged {
                step: self.steps,
                time: self.time,
                reason: format!("vertex {i} reached a non-finite position or velocity"),
            });
        }
        std::mem::swap(&mut self.x, &mut s.x_new);
        std::mem::swap(&mut self.v, &mut s.v_new);
        self.time += h;
        self.steps += 1;
        t.finish += finish.elapsed();
        self.timings = t;
        Ok(contacts)
    }

    /// Runs [`System::step`] `steps` times, stopping at the first error (the state is then the
    /// last good step).
    ///
    /// # Errors
    /// As [`System::step`].
    pub fn step_n(&mut self, steps: u32) -> Result<()> {
        for _ in 0..steps {
            self.step()?;
        }
        Ok(())
    }
}

fn first_non_finite(x: &[Vec3], v: &[Vec3]) -> Option<usize> {
    x.par_iter().zip(v.par_iter()).position_any(|(x, v)| !(is_finite3(x) && is_finite3(v)))
}
