//! The stepper: advances a [`State`] under a [`Model`] by one time step, as a fixed sequence of
//! stages:
//!
//! 1. **edits** — refresh the factorization of `M + h²L` if pins, masses, stiffness or `h`
//!    changed since the last step;
//! 2. **explicit forces at `x_t`** — vertex–vertex Coulomb (the field backend), external
//!    charges and field, gravity: `q_t + f_ext` of [Paper](crate#references) Eq. (12);
//! 3. **integrate** — the IMEX local/global iterations ([`crate::Integrator::Imex`]), velocity
//!    Verlet ([`crate::Integrator::Verlet`]), or the implicit-midpoint sub-steps with Strang
//!    kicks and the energy safeguard ([`crate::Integrator::ImexLowDissipation`], which
//!    evaluates its forces itself and reuses those at `x_t` from the last step), into scratch
//!    buffers;
//! 4. **pins** — pinned vertices land exactly on their targets;
//! 5. **collisions** — self-collision of the mesh ([`crate::SelfCollision`]), then projection
//!    onto the ground and spheres and out of the triangle-mesh obstacles
//!    ([`crate::MeshColliders`]), with friction (collision module docs);
//! 6. **guard and commit** — the step is rejected with [`Error::Diverged`], the state
//!    untouched, if any position or velocity is not finite, or if the integrator threw a free
//!    vertex many times the whole system's size ([`unresolved_motion`]: a runaway, whose
//!    explicit forces no longer describe the step); otherwise the buffers become the state.
//!
//! The [`Stepper`] owns what stepping needs besides the model and the state (as rapier's
//! pipeline owns its scratch): the Coulomb backend, the prefactored global matrix, reusable
//! buffers and the stage timers. [`crate::System`] owns one and tells it when an edit makes the
//! factorization or the backend stale.

use rayon::prelude::*;

use crate::coulomb::{make_solver, FieldMethod, FieldSolver};
use crate::counters::{timed, StepCounts, StepTimings};
use crate::error::{Error, Result};
use crate::fields::{add_gravity, gravity_energy};
use crate::integrator::accel::{Anderson, ANDERSON_WINDOW};
use crate::integrator::{
    imex_advance, verlet_advance, verlet_finish, Explicit, ImexBuffers, LocalBuffers, LowDissipation, Next,
    Now, Potential,
};
use crate::linsolve::GlobalSolver;
use crate::math::{is_finite3, Real, Vec3};
use crate::model::{Integrator, Model, SimParams};
use crate::springs::{spring_energy, spring_forces, Springs};
use crate::State;

/// Buffers reused across steps (no allocation while stepping).
struct Scratch {
    x_new: Vec<Vec3>,
    v_new: Vec<Vec3>,
    force: Vec<Vec3>,
    y: Vec<Vec3>,
    jd: Vec<Vec3>,
    /// History of the accelerated iterations.
    anderson: Anderson,
    /// Spring directions `d_s`, kept across steps as the fallback direction of springs whose
    /// ends coincide.
    d: Vec<Vec3>,
}

impl Scratch {
    fn new(springs: &Springs, x: &[Vec3]) -> Self {
        let z = || vec![Vec3::zeros(); x.len()];
        let d = springs.ends().iter().map(|&[a, b]| x[a as usize] - x[b as usize]).collect();
        Scratch {
            x_new: z(),
            v_new: z(),
            force: z(),
            y: z(),
            jd: z(),
            anderson: Anderson::new(ANDERSON_WINDOW),
            d,
        }
    }
}

/// Advances states under a model; owns the field backend, the factorization and the scratch.
pub(crate) struct Stepper {
    field: Box<dyn FieldSolver>,
    /// Prefactored global matrix; `None` until first needed or after the pins changed.
    global: Option<GlobalSolver>,
    /// Masses, stiffness or `h` changed since the last numeric factorization.
    global_stale: bool,
    scratch: Scratch,
    timings: StepTimings,
    counts: StepCounts,
    /// The state of [`Integrator::ImexLowDissipation`] across steps.
    low: LowDissipation,
    /// Steps committed since the field was last evaluated whole; `None` when the next step
    /// must evaluate it whole (multiple time stepping, [`SimParams::far_field_interval`]).
    far_age: Option<u32>,
}

impl Stepper {
    /// A stepper for `model` starting from positions `x`, with `M + h²L` factored.
    ///
    /// # Errors
    /// As [`make_solver`]; [`Error::Factorization`] or [`Error::InvalidArgument`] (`stiffness`)
    /// if `M + h²L` cannot be factored.
    pub fn new(model: &Model, x: &[Vec3]) -> Result<Self> {
        let mut field = field_for(&model.params, model.n_vertices())?;
        field.set_far_field_interval(far_field_interval(&model.params));
        let mut stepper = Stepper {
            field,
            global: None,
            global_stale: false,
            scratch: Scratch::new(&model.springs, x),
            timings: StepTimings::default(),
            counts: StepCounts::default(),
            low: LowDissipation::default(),
            far_age: None,
        };
        stepper.ensure_factorization(model)?;
        Ok(stepper)
    }

    /// Adopts new parameters: swaps the field backend if the method or the DDEF grid changed
    /// and marks the factorization stale if `h` changed. `old` are the parameters in force.
    /// The forces and energy kept at the state are dropped (gravity, `k_c` or the method may
    /// have changed them).
    ///
    /// # Errors
    /// As [`make_solver`]; the stepper is unchanged on error.
    pub fn adopt_params(&mut self, old: &SimParams, new: &SimParams, n: usize) -> Result<()> {
        let grid_changed = new.grid_points != old.grid_points || new.ddef_near != old.ddef_near;
        if new.coulomb.resolve(n) != self.field.method() || grid_changed {
            self.field = field_for(new, n)?;
        }
        self.field.set_far_field_interval(far_field_interval(new));
        if new.time_step != old.time_step {
            self.global_stale = true;
            self.low.refactor_later();
        }
        if new.integrator != old.integrator {
            self.low.reset_target();
        }
        self.low.state_edited();
        self.far_age = None;
        Ok(())
    }

    /// Masses or stiffnesses changed: refactor `M + h²L` numerically before the next step.
    pub fn refactor_later(&mut self) {
        self.global_stale = true;
        self.low.refactor_later();
        self.state_edited();
    }

    /// Pins changed: the free set, hence the matrix pattern, changed; analyse it again before
    /// the next step.
    pub fn reanalyse_later(&mut self) {
        self.global = None;
        self.low.refactor_later();
    }

    /// Positions, velocities, charges or the external field were edited: forces and energies
    /// kept from the last step no longer hold (the energy the edit added or removed counts as
    /// work done on the system, see [`Integrator::ImexLowDissipation`]).
    pub fn state_edited(&mut self) {
        self.low.state_edited();
    }

    /// Positions were edited (a jump): as [`Stepper::state_edited`], and the far field held for
    /// multiple time stepping no longer holds either, so the next step evaluates it whole.
    /// (Changed charges need no call: the backend sees them and evaluates whole itself.)
    pub fn positions_edited(&mut self) {
        self.state_edited();
        self.far_age = None;
    }

    /// What the last step evaluated.
    pub fn counts(&self) -> StepCounts {
        self.counts
    }

    /// The energy target `H*` (J) of [`Integrator::ImexLowDissipation`] after the last step.
    pub fn energy_target(&self) -> Option<Real> {
        self.low.target()
    }

    /// The Coulomb method the backend implements.
    pub fn field_method(&self) -> FieldMethod {
        self.field.method()
    }

    /// Wall-clock time of each stage of the last step.
    pub fn timings(&self) -> &StepTimings {
        &self.timings
    }

    /// The spring directions `d_s` kept across steps (the adjoint saves and restores them).
    pub fn directions(&self) -> &[Vec3] {
        &self.scratch.d
    }

    /// Restores spring directions saved with [`Stepper::directions`].
    pub fn set_directions(&mut self, d: Vec<Vec3>) {
        self.scratch.d = d;
    }

    /// The vertex–vertex Coulomb force (N) of the backend at positions `x`.
    ///
    /// # Errors
    /// Backend errors (none for the direct sum).
    pub fn coulomb_forces(&mut self, model: &Model, x: &[Vec3], out: &mut [Vec3]) -> Result<()> {
        self.field.forces(x, &model.charge, model.params.coulomb_constant, model.softening(), out)
    }

    /// The prefactored global solver, refreshed for `model` if an edit made it stale.
    ///
    /// # Errors
    /// As [`Stepper::new`].
    pub fn global(&mut self, model: &Model) -> Result<&mut GlobalSolver> {
        self.ensure_factorization(model)?;
        Ok(self.global.as_mut().expect("factorization ensured above"))
    }

    /// Builds or refreshes the factorization of `M + h²L` if pins, masses, stiffness or `h`
    /// changed.
    fn ensure_factorization(&mut self, model: &Model) -> Result<()> {
        let (mass, springs, h) = (&model.mass, &model.springs, model.params.time_step);
        match &mut self.global {
            None => self.global = Some(GlobalSolver::new(mass, springs, &model.pins.pinned, h)?),
            Some(g) if self.global_stale => g.refactor(mass, springs, h)?,
            Some(_) => {}
        }
        self.global_stale = false;
        Ok(())
    }

    /// Advances `state` by one time step `h` under `model` (stages in the [module
    /// docs](crate::step)).
    ///
    /// # Errors
    /// [`Error::Diverged`] when the step produced a non-finite position or velocity (`state`
    /// stays at the last good step); factorization errors as [`Stepper::new`]; field backend
    /// errors.
    pub fn step(&mut self, model: &Model, state: &mut State) -> Result<()> {
        self.step_recording(model, state, None).map(|_contacts| ())
    }

    /// [`Stepper::step`], also copying the explicit forces `q_t + f_ext` into `f_explicit` when
    /// given (the adjoint in [`crate::gradient`] replays the step from them). Returns the number
    /// of vertices the colliders moved.
    pub fn step_recording(
        &mut self,
        model: &Model,
        state: &mut State,
        f_explicit: Option<&mut Vec<Vec3>>,
    ) -> Result<usize> {
        let mut t = StepTimings::default();
        let (params, pins) = (&model.params, &model.pins);
        let low_dissipation = params.integrator == Integrator::ImexLowDissipation;
        if !low_dissipation {
            timed(&mut t.factorization, || self.ensure_factorization(model))?;
        }
        let h = params.time_step;
        let s = &mut self.scratch;
        let mut counts = StepCounts { attempts: 1, substeps: 1, ..StepCounts::default() };
        // multiple time stepping: between whole evaluations the far part is held (`far_age`)
        let interval = far_field_interval(params);
        let mut hold_far = self.far_age.is_some_and(|age| age % interval != 0);
        if !low_dissipation {
            let field = self.field.as_mut();
            if hold_far {
                let (q, k_c, eps) = (&model.charge, params.coulomb_constant, model.softening());
                hold_far = timed(&mut t.coulomb, || {
                    field.forces_holding_far_field(&state.x, q, k_c, eps, &mut s.force)
                })?;
                add_external_forces(model, &state.x, &mut s.force, &mut t);
            } else {
                explicit_forces(model, field, &state.x, &mut s.force, &mut t)?;
            }
            counts.coulomb_forces = 1;
            counts.far_field_held = hold_far;
            if let Some(record) = f_explicit {
                record.clear();
                record.extend_from_slice(&s.force);
            }
        }
        let now = Now { x: &state.x, v: &state.v };
        let next = Next { x: &mut s.x_new, v: &mut s.v_new };
        match params.integrator {
            Integrator::Imex => {
                let global = self.global.as_mut().expect("factorization ensured above");
                let buf = ImexBuffers { y: &mut s.y, d: &mut s.d, jd: &mut s.jd, anderson: &mut s.anderson };
                imex_advance(model, global, now, &s.force, buf, next, &mut t);
            }
            Integrator::Verlet => {
                timed(&mut t.springs, || spring_forces(&model.springs, &state.x, &mut s.force));
                verlet_advance(model, now, &s.force, next);
                for (&i, &target) in pins.indices.iter().zip(&pins.targets) {
                    s.x_new[i as usize] = target;
                }
                explicit_forces(model, self.field.as_mut(), &s.x_new, &mut s.force, &mut t)?;
                timed(&mut t.springs, || spring_forces(&model.springs, &s.x_new, &mut s.force));
                verlet_finish(h, &model.mass, &s.force, &mut s.v_new);
                counts.coulomb_forces = 2;
            }
            Integrator::ImexLowDissipation => {
                let mut explicit =
                    StepExplicit { model, field: self.field.as_mut(), t: StepTimings::default() };
                let local = LocalBuffers { d: &mut s.d, jd: &mut s.jd };
                let result = self.low.advance(model, &mut explicit, now, local, next, &mut t);
                t += explicit.t;
                counts = result?;
            }
        }
        let finish = std::time::Instant::now();
        let runaway = unresolved_motion(&state.x, &s.x_new, &model.mass, &pins.pinned);
        for (&i, &target) in pins.indices.iter().zip(&pins.targets) {
            let i = i as usize;
            s.x_new[i] = target;
            s.v_new[i] = (target - state.x[i]) / h;
        }
        let (x_old, pinned) = (&state.x, &pins.pinned);
        let mut contacts = 0;
        if let Some(sc) = &model.self_collision {
            contacts += sc.project(x_old, &mut s.x_new, &mut s.v_new, pinned, h);
        }
        contacts += model.colliders.project(x_old, &mut s.x_new, &mut s.v_new, pinned, params.friction);
        contacts += model.mesh_colliders.project(x_old, &mut s.x_new, &mut s.v_new, pinned, h, state.steps);
        let reason = match (first_non_finite(&s.x_new, &s.v_new), runaway) {
            (Some(i), _) => Some(format!("vertex {i} reached a non-finite position or velocity")),
            (None, Some(r)) => Some(format!(
                "vertex {} moved {:.3e} m relative to the others in one step, more than \
                 {RUNAWAY_FACTOR} times the whole system's size ({:.3e} m): runaway forces that \
                 the step cannot resolve",
                r.vertex, r.distance, r.size
            )),
            (None, None) => None,
        };
        if let Some(reason) = reason {
            self.timings = t;
            return Err(Error::Diverged { step: state.steps, time: state.time, reason });
        }
        std::mem::swap(&mut state.x, &mut s.x_new);
        std::mem::swap(&mut state.v, &mut s.v_new);
        state.time += h;
        state.steps += 1;
        self.far_age = Some(if hold_far { self.far_age.map_or(0, |age| age + 1) } else { 1 });
        if low_dissipation {
            self.low.commit();
            if contacts > 0 {
                self.low.state_edited(); // colliders moved vertices: F and U at x_t are stale
            }
        }
        t.finish += finish.elapsed();
        self.timings = t;
        self.counts = counts;
        Ok(contacts)
    }
}

/// Steps per whole evaluation of the Coulomb field: [`SimParams::far_field_interval`] for the
/// IMEX step, 1 for the integrators that evaluate every step.
fn far_field_interval(params: &SimParams) -> u32 {
    if params.integrator == Integrator::Imex {
        params.far_field_interval
    } else {
        1
    }
}

/// The Coulomb backend `params` ask for on `n` vertices.
fn field_for(params: &SimParams, n: usize) -> Result<Box<dyn FieldSolver>> {
    make_solver(params.coulomb, n, params.grid_points, params.ddef_near)
}

/// `q(x) + f_ext(x)`: Coulomb, external charges and field, gravity (N), written to `out`.
fn explicit_forces(
    model: &Model,
    field: &mut dyn FieldSolver,
    x: &[Vec3],
    out: &mut [Vec3],
    t: &mut StepTimings,
) -> Result<()> {
    let (q, k_c, eps) = (&model.charge, model.params.coulomb_constant, model.softening());
    timed(&mut t.coulomb, || field.forces(x, q, k_c, eps, out))?;
    add_external_forces(model, x, out, t);
    Ok(())
}

/// Adds `f_ext(x)` to `out`: external charges and field, gravity (N).
fn add_external_forces(model: &Model, x: &[Vec3], out: &mut [Vec3], t: &mut StepTimings) {
    let (q, k_c, eps) = (&model.charge, model.params.coulomb_constant, model.softening());
    timed(&mut t.external, || {
        model.external.add_forces(x, q, k_c, eps, out);
        add_gravity(&model.mass, model.params.gravity, out);
    });
}

/// The explicit forces and the potential energy for [`Integrator::ImexLowDissipation`], timed
/// into `t`.
struct StepExplicit<'a> {
    model: &'a Model,
    field: &'a mut dyn FieldSolver,
    t: StepTimings,
}

impl Explicit for StepExplicit<'_> {
    fn forces(&mut self, x: &[Vec3], out: &mut [Vec3]) -> Result<()> {
        explicit_forces(self.model, self.field, x, out, &mut self.t)
    }

    fn potential(&mut self, x: &[Vec3]) -> Result<Potential> {
        let m = self.model;
        let (q, k_c, eps) = (&m.charge, m.params.coulomb_constant, m.softening());
        let coulomb = timed(&mut self.t.coulomb, || self.field.potential(x, q, k_c, eps))?;
        let (spring, external, gravity) = timed(&mut self.t.external, || {
            let external = m.external.potential_energy(x, q, k_c, eps);
            (spring_energy(&m.springs, x), external, gravity_energy(&m.mass, m.params.gravity, x))
        });
        Ok(Potential { spring, coulomb, external, gravity })
    }
}

/// A free vertex whose step the integrator could not resolve (see [`unresolved_motion`]).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Runaway {
    vertex: usize,
    /// Its displacement relative to the mass-weighted mean displacement (m).
    distance: Real,
    /// The diagonal of the bounding box of all vertices at the step's start (m).
    size: Real,
}

/// How many times its own size the system may move, relative to its mean motion, in one step
/// before the step fails as [`Error::Diverged`] (a runaway). The paper's stiffest experiment
/// comes closest: its torus at 0.01 kg per vertex and h = 0.15 s (§4, Fig. 4) throws a vertex
/// 3.6 times the torus's size in its first step, and the implicit springs bring it back (the
/// run stays bounded, as the paper reports and `tests/ddef.rs` checks). 10 leaves room above
/// that; a runaway passes it by orders of magnitude (1 C per vertex: 10^12 times).
pub const RUNAWAY_FACTOR: Real = 10.0;

/// The free vertex that moved farthest in one step relative to the system, if that is more
/// than [`RUNAWAY_FACTOR`] times the system's size: `|Δx_i − Δx̄| > RUNAWAY_FACTOR · L` with
/// `Δx_i = x_{t+1,i} − x_{t,i}` after the integrator (before pins and collisions), `Δx̄` the
/// mass-weighted mean over free vertices and `L` the diagonal of the bounding box of `x_t`.
///
/// Why this rule: the IMEX step (and Verlet) takes the Coulomb and external forces at `x_t`
/// ([Paper](crate#references) Eq. (12)); they describe the step only while the configuration
/// changes little within it. A vertex thrown many times the whole mesh's size in one step has
/// left every distance those forces were computed for: the motion is unresolved and, with
/// charges, feeds on itself (1 C per vertex flings a sphere to 10^10 m in one frame). Measuring
/// relative to the mean displacement keeps free fall and drift (any speed, all vertices alike)
/// out of it, and comparing with the system's size keeps it independent of units and scale: an
/// honest scene moves a small fraction of its size per step (a mesh pushed apart at a few m/s
/// moves millimetres per 1/120 s step).
fn unresolved_motion(x: &[Vec3], x_new: &[Vec3], mass: &[Real], pinned: &[bool]) -> Option<Runaway> {
    let free = || (0..x.len()).into_par_iter().filter(|&i| !pinned[i]);
    let (lo, hi) = x
        .par_iter()
        .fold_with((Vec3::repeat(Real::INFINITY), Vec3::repeat(Real::NEG_INFINITY)), |(lo, hi), p| {
            (lo.inf(p), hi.sup(p))
        })
        .reduce(
            || (Vec3::repeat(Real::INFINITY), Vec3::repeat(Real::NEG_INFINITY)),
            |a, b| (a.0.inf(&b.0), a.1.sup(&b.1)),
        );
    let size = (hi - lo).norm();
    let (moment, total) = free()
        .map(|i| (mass[i] * (x_new[i] - x[i]), mass[i]))
        .reduce(|| (Vec3::zeros(), 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    if total <= 0.0 || !(size.is_finite() && size > 0.0) {
        return None; // one vertex, or all in one point: no size to compare with
    }
    let mean = moment / total;
    let (vertex, distance) =
        free().map(|i| (i, (x_new[i] - x[i] - mean).norm())).max_by(|a, b| a.1.total_cmp(&b.1))?;
    (distance > RUNAWAY_FACTOR * size).then_some(Runaway { vertex, distance, size })
}

fn first_non_finite(x: &[Vec3], v: &[Vec3]) -> Option<usize> {
    x.par_iter().zip(v.par_iter()).position_any(|(x, v)| !(is_finite3(x) && is_finite3(v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square() -> Vec<Vec3> {
        [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]]
            .iter()
            .map(|p| Vec3::from_column_slice(p))
            .collect()
    }

    #[test]
    fn a_vertex_leaving_the_system_in_one_step_is_unresolved() {
        let (x, m) = (square(), [1.0; 4]);
        let size = 2f64.sqrt();
        // everything moves alike, by any amount: free fall, drift
        let fall: Vec<Vec3> = x.iter().map(|p| p + Vec3::new(0.0, 0.0, -1e6)).collect();
        assert_eq!(unresolved_motion(&x, &fall, &m, &[false; 4]), None);
        // one vertex 20 m away in a 1.41 m system
        let mut out = x.clone();
        out[3] += Vec3::new(20.0, 0.0, 0.0);
        let r = unresolved_motion(&x, &out, &m, &[false; 4]).unwrap();
        assert_eq!(r.vertex, 3);
        // relative to the mean displacement (5, 0, 0)
        assert!((r.distance - 15.0).abs() < 1e-12, "{r:?}");
        assert!((r.size - size).abs() < 1e-12);
        // within RUNAWAY_FACTOR times the system's size (10 m relative): resolved
        out[3] = x[3] + Vec3::new(13.0, 0.0, 0.0);
        assert_eq!(unresolved_motion(&x, &out, &m, &[false; 4]), None);
        // a pinned vertex is moved by its target, not by the integrator
        out[3] = x[3] + Vec3::new(50.0, 0.0, 0.0);
        assert_eq!(unresolved_motion(&x, &out, &m, &[false, false, false, true]), None);
        // one vertex (no size): never, whatever rounding leaves relative to the mean
        let one = [Vec3::new(0.1, 0.2, 0.3)];
        assert_eq!(unresolved_motion(&one, &[Vec3::new(0.7, -3.1, 1e9)], &[1.0], &[false]), None);
    }
}
