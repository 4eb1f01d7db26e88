//! The stepper: advances a [`State`] under a [`Model`] by one time step, as five stages:
//!
//! 1. **edits** — the integrator refreshes what edits made stale (the factorization of
//!    `M + h²L` after pins, masses, stiffness or `h` changed);
//! 2. **integrate** — the IMEX local/global iterations ([`crate::Integrator::Imex`]), velocity
//!    Verlet ([`crate::Integrator::Verlet`]), or the implicit-midpoint sub-steps with Strang
//!    kicks and the energy safeguard ([`crate::Integrator::ImexLowDissipation`]), into scratch
//!    buffers. Each asks [`ExplicitForces`] for the explicit forces — vertex–vertex Coulomb
//!    (the field backend), external charges and field, gravity: `q_t + f_ext` of
//!    [Paper](crate#references) Eq. (12) — where it needs them;
//! 3. **pins** — pinned vertices land exactly on their targets;
//! 4. **collisions** — self-collision of the mesh ([`crate::SelfCollision`]), then projection
//!    onto the ground and spheres and out of the triangle-mesh obstacles
//!    ([`crate::MeshColliders`]), with friction (collision module docs), then self-collision
//!    again where they pushed (and, where that put a vertex back into an obstacle, the
//!    obstacles and self-collision once more: [`collide`]);
//! 5. **guard and commit** — the step is rejected with [`Error::Diverged`], the state
//!    untouched, if any position or velocity is not finite, or if the integrator (measured
//!    before the pins) or the contact response threw a free vertex many times the whole
//!    system's size ([`unresolved_motion`]: a runaway, whose explicit forces no longer describe
//!    the step); otherwise the buffers become the state.
//!
//! The [`Stepper`] owns what stepping needs besides the model and the state (as rapier's
//! pipeline owns its scratch): the [`ExplicitForces`] (the field backend and the far-field
//! schedule), the three integrators (each with its factorizations and history), reusable
//! buffers and the stage timers. [`crate::System`] owns one and tells it what an edit made
//! stale. A rollout of the gradient runs in [`Mode::Rollout`], set through the stepper, never by
//! writing the model's parameters.

use rayon::prelude::*;

use crate::collision::{BroadPhase, ContactStep};
use crate::coulomb::{make_solver, FieldMethod, FieldSolver};
use crate::counters::{timed, StepCounts, StepTimings};
use crate::error::{Divergence, Error, Result};
use crate::fields::{add_gravity, gravity_energy};
use crate::integrator::{Explicit, Imex, Integrate, LowDissipation, Next, Now, Potential, Verlet};
use crate::linsolve::GlobalSolver;
use crate::math::{is_finite3, ordered_blocks, Real, Vec3, SUM_BLOCK};
use crate::model::{Integrator, Model, SimParams};
use crate::springs::spring_energy;
use crate::state::State;

/// How the stepper runs: as the parameters say, or a rollout that the adjoint of
/// [`crate::gradient`] differentiates (the whole field every step, whatever
/// [`SimParams::far_field_interval`] says: the adjoint differentiates `q(x_t)` at every step).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Mode {
    /// Steps as the parameters say.
    #[default]
    Run,
    /// The scheme the gradient differentiates: far-field interval 1.
    Rollout,
}

/// The owner of the explicit forces `q(x) + f_ext(x)`: the field backend, the far-field
/// interval (multiple time stepping, [`SimParams::far_field_interval`]) and its age. It alone
/// decides whether a step's force at `x_t` evaluates the whole field or holds the far part,
/// tells the backend the interval, and times every evaluation into the step's timers.
pub(crate) struct ExplicitForces {
    field: Box<dyn FieldSolver>,
    /// Steps per whole evaluation in force (1 in a rollout and for the integrators that
    /// evaluate every step).
    interval: u32,
    /// Steps committed since the field was last evaluated whole; `None` when the next step
    /// must evaluate it whole.
    age: Option<u32>,
    /// Whether the last step's force at `x_t` held the far part.
    held: bool,
    /// The last step's force at `x_t` (N).
    at_start: Vec<Vec3>,
    /// A second backend for queries ([`Stepper::coulomb_forces`]) while the interval holds a far
    /// part: evaluating `field` would replace the far part and the grid its held steps use, and
    /// a query would change the trajectory. Built on first use; dropped with new parameters.
    query: Option<Box<dyn FieldSolver>>,
}

impl ExplicitForces {
    /// The forces for `params` on `n` vertices, the interval as `mode` says.
    ///
    /// # Errors
    /// As [`make_solver`].
    fn new(params: &SimParams, n: usize, mode: Mode) -> Result<Self> {
        let mut forces = ExplicitForces {
            field: field_for(params, n)?,
            interval: 1,
            age: None,
            held: false,
            at_start: vec![Vec3::zeros(); n],
            query: None,
        };
        forces.set_interval(params, mode);
        Ok(forces)
    }

    /// Adopts new parameters (swapping the backend if the method or the DDEF grid changed)
    /// and starts a new interval.
    ///
    /// # Errors
    /// As [`make_solver`]; unchanged on error.
    fn adopt(&mut self, old: &SimParams, new: &SimParams, n: usize, mode: Mode) -> Result<()> {
        let grid_changed = new.grid_points != old.grid_points || new.ddef_near != old.ddef_near;
        if new.coulomb.resolve(n) != self.field.method() || grid_changed {
            self.field = field_for(new, n)?;
        }
        self.field.set_tolerance(new.field_tolerance);
        self.set_interval(new, mode);
        self.query = None;
        Ok(())
    }

    /// The backend a query evaluates: the stepping one, unless the interval holds a far part
    /// (`query`).
    ///
    /// # Errors
    /// As [`make_solver`], building the query backend.
    fn for_query(&mut self, params: &SimParams, n: usize) -> Result<&mut dyn FieldSolver> {
        if self.interval == 1 {
            return Ok(self.field.as_mut());
        }
        if self.query.is_none() {
            self.query = Some(field_for(params, n)?);
        }
        Ok(self.query.as_deref_mut().expect("built above"))
    }

    /// The interval for `params` in `mode` ([`SimParams::far_field_interval`] for the IMEX
    /// step, 1 for the integrators that evaluate every step and in a rollout), told to the
    /// backend; the next step evaluates the whole field.
    fn set_interval(&mut self, params: &SimParams, mode: Mode) {
        self.interval = match (mode, params.integrator) {
            (Mode::Run, Integrator::Imex) => params.far_field_interval,
            _ => 1,
        };
        self.field.set_far_field_interval(self.interval);
        self.age = None;
    }

    /// Positions or charges were edited: the held far part no longer holds; the next step
    /// evaluates the whole field.
    fn reset_age(&mut self) {
        self.age = None;
    }

    /// The step was committed: one step older, or a new interval after a whole evaluation.
    fn commit(&mut self) {
        self.age = Some(if self.held { self.age.map_or(0, |age| age + 1) } else { 1 });
    }
}

impl Explicit for ExplicitForces {
    /// Between whole evaluations (every `interval` steps) the far part is held.
    fn at_step_start(&mut self, model: &Model, x: &[Vec3], t: &mut StepTimings) -> Result<&[Vec3]> {
        let interval = self.interval;
        let hold = self.age.is_some_and(|age| age % interval != 0);
        self.at_start.resize(x.len(), Vec3::zeros());
        self.held = false;
        if hold {
            let (q, k_c, eps) = (&model.charge, model.params.coulomb_constant, model.softening());
            let (field, out) = (self.field.as_mut(), &mut self.at_start);
            self.held = timed(&mut t.coulomb, || field.forces_holding_far_field(x, q, k_c, eps, out))?;
            add_external_forces(model, x, &mut self.at_start, t);
        } else {
            explicit_forces(model, self.field.as_mut(), x, &mut self.at_start, t)?;
        }
        Ok(&self.at_start)
    }

    fn forces(&mut self, model: &Model, x: &[Vec3], out: &mut [Vec3], t: &mut StepTimings) -> Result<()> {
        explicit_forces(model, self.field.as_mut(), x, out, t)
    }

    fn potential(&mut self, model: &Model, x: &[Vec3], t: &mut StepTimings) -> Result<Potential> {
        let (q, k_c, eps) = (&model.charge, model.params.coulomb_constant, model.softening());
        let field = self.field.as_mut();
        let coulomb = timed(&mut t.coulomb, || field.potential(x, q, k_c, eps))?;
        let (spring, external, gravity) = timed(&mut t.external, || {
            let external = model.external.potential_energy(x, q, k_c, eps);
            let gravity = gravity_energy(&model.mass, model.params.gravity, x);
            (spring_energy(&model.springs, x), external, gravity)
        });
        Ok(Potential { spring, coulomb, external, gravity })
    }
}

/// What the stepper keeps across steps besides factorizations and caches: the IMEX spring
/// directions and the low-dissipation energy record.
pub(crate) struct Kept {
    directions: Vec<Vec3>,
    energy: (Option<Real>, Real),
}

/// The end-of-step buffers (no allocation while stepping).
struct Scratch {
    x_new: Vec<Vec3>,
    v_new: Vec<Vec3>,
}

/// Advances states under a model; owns the explicit forces, the integrators and the scratch.
pub(crate) struct Stepper {
    forces: ExplicitForces,
    imex: Imex,
    verlet: Verlet,
    low: LowDissipation,
    mode: Mode,
    scratch: Scratch,
    /// Self-collision's broad phase, kept between steps.
    broad: BroadPhase,
    timings: StepTimings,
    counts: StepCounts,
}

impl Stepper {
    /// A stepper for `model` starting from positions `x`, with `M + h²L` factored.
    ///
    /// # Errors
    /// As [`make_solver`]; [`Error::Factorization`] or [`Error::InvalidArgument`] (`stiffness`)
    /// if `M + h²L` cannot be factored.
    pub fn new(model: &Model, x: &[Vec3]) -> Result<Self> {
        let n = model.n_vertices();
        let mut stepper = Stepper {
            forces: ExplicitForces::new(&model.params, n, Mode::Run)?,
            imex: Imex::new(&model.springs, x),
            verlet: Verlet::default(),
            low: LowDissipation::default(),
            mode: Mode::Run,
            scratch: Scratch { x_new: vec![Vec3::zeros(); n], v_new: vec![Vec3::zeros(); n] },
            broad: BroadPhase::default(),
            timings: StepTimings::default(),
            counts: StepCounts::default(),
        };
        stepper.imex.global(model)?;
        Ok(stepper)
    }

    /// Adopts new parameters: swaps the field backend if the method or the DDEF grid changed
    /// (the factorizations follow `h` by themselves: cached per step length). `old` are the parameters in force.
    /// The forces and energy kept at the state are dropped (gravity, `k_c` or the method may
    /// have changed them).
    ///
    /// # Errors
    /// As [`make_solver`]; the stepper is unchanged on error.
    pub fn adopt_params(&mut self, old: &SimParams, new: &SimParams, n: usize) -> Result<()> {
        self.forces.adopt(old, new, n, self.mode)?;
        if new.integrator != old.integrator {
            self.low.reset_target();
        }
        self.low.state_edited();
        Ok(())
    }

    /// Enters or leaves a rollout ([`Mode`]); `params` are those in force. Either way the next
    /// step evaluates the whole field.
    pub fn set_mode(&mut self, mode: Mode, params: &SimParams) {
        self.mode = mode;
        self.forces.set_interval(params, mode);
    }

    /// What the stepper keeps across steps that a retried [`crate::System::advance`] restores.
    pub fn kept(&self) -> Kept {
        Kept { directions: self.imex.directions().to_vec(), energy: self.low.energy_record() }
    }

    /// Restores what [`Stepper::kept`] saved, the state having been restored by the caller; the
    /// next step evaluates the whole field.
    pub fn restore(&mut self, kept: &Kept) {
        self.imex.set_directions(kept.directions.clone());
        self.low.restore_energy_record(kept.energy);
        self.sources_edited();
    }

    /// The factorizations of `M + h²L` cached by the IMEX integrator: entries of each factor.
    pub fn factor_entries(&self) -> Vec<usize> {
        self.imex.factor_entries()
    }

    /// Masses or stiffnesses changed: refactor `M + h²L` numerically before the next step.
    pub fn refactor_later(&mut self) {
        self.imex.refactor_later();
        self.low.refactor_later();
        self.state_edited();
    }

    /// Pins changed: the free set, hence the matrix pattern, changed; analyse it again before
    /// the next step.
    pub fn reanalyse_later(&mut self) {
        self.imex.reanalyse_later();
        self.low.refactor_later();
    }

    /// Velocities or the external field were edited: forces and energies kept from the last
    /// step no longer hold (the energy the edit added or removed counts as work done on the
    /// system, see [`Integrator::ImexLowDissipation`]).
    pub fn state_edited(&mut self) {
        self.low.state_edited();
    }

    /// Positions or charges were edited: as [`Stepper::state_edited`], and the far field held
    /// for multiple time stepping no longer holds either, so the next step evaluates it whole.
    pub fn sources_edited(&mut self) {
        self.state_edited();
        self.forces.reset_age();
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
        self.forces.field.method()
    }

    /// The grid size the backend's next whole evaluation will use, if it has a grid
    /// ([`FieldSolver::grid_size`]).
    pub fn field_grid_size(&self) -> Option<u32> {
        self.forces.field.grid_size()
    }

    /// Wall-clock time of each stage of the last step.
    pub fn timings(&self) -> &StepTimings {
        &self.timings
    }

    /// The IMEX spring directions `d_s` kept across steps (the adjoint saves and restores them).
    pub fn directions(&self) -> &[Vec3] {
        self.imex.directions()
    }

    /// Restores spring directions saved with [`Stepper::directions`].
    pub fn set_directions(&mut self, d: Vec<Vec3>) {
        self.imex.set_directions(d);
    }

    /// The vertex–vertex Coulomb force (N) of the backend at positions `x`, the whole field. A
    /// query: the steps after it are the same as without it (with a far-field interval above 1,
    /// another instance of the backend evaluates it, so that the far part the steps hold stays).
    ///
    /// # Errors
    /// Backend errors (none for the direct sum); building the query's backend, as
    /// [`Stepper::new`].
    pub fn coulomb_forces(&mut self, model: &Model, x: &[Vec3], out: &mut [Vec3]) -> Result<()> {
        let field = self.forces.for_query(&model.params, x.len())?;
        field.forces(x, &model.charge, model.params.coulomb_constant, model.softening(), out)
    }

    /// The prefactored IMEX global solver, refreshed for `model` if an edit made it stale.
    ///
    /// # Errors
    /// As [`Stepper::new`].
    pub fn global(&mut self, model: &Model) -> Result<&mut GlobalSolver> {
        self.imex.global(model)
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

    /// [`Stepper::step`], also copying the explicit forces `q_t + f_ext` at `x_t` into
    /// `f_explicit` when given (the adjoint in [`crate::gradient`] replays the step from them).
    /// Returns the number of vertices the colliders moved.
    pub fn step_recording(
        &mut self,
        model: &Model,
        state: &mut State,
        f_explicit: Option<&mut Vec<Vec3>>,
    ) -> Result<usize> {
        let mut t = StepTimings::default();
        let integrator: &mut dyn Integrate = match model.params.integrator {
            Integrator::Imex => &mut self.imex,
            Integrator::Verlet => &mut self.verlet,
            Integrator::ImexLowDissipation => &mut self.low,
        };
        self.forces.held = false;
        timed(&mut t.factorization, || integrator.prepare(model))?; // 1. edits
        let (now, next) = (Now { x: &state.x, v: &state.v }, self.scratch.next());
        let counts = integrator.advance(model, &mut self.forces, now, next, &mut t); // 2. integrate
        let counts = StepCounts { far_field_held: self.forces.held, ..counts? };
        if let Some(record) = f_explicit {
            record.clear();
            record.extend_from_slice(&self.forces.at_start);
        }
        let finish = std::time::Instant::now();
        let (x_new, v_new) = (&mut self.scratch.x_new, &mut self.scratch.v_new);
        let runaway = unresolved_motion(&state.x, x_new, &model.mass, &model.pins.pinned);
        pin(model, &state.x, x_new, v_new); // 3. pins
        let contacts = collide(model, state, x_new, v_new, &mut self.broad); // 4. collisions

        // a contact response that threw a vertex is a runaway too (it feeds the next step's forces)
        let runaway = runaway.or_else(|| {
            (contacts > 0)
                .then(|| unresolved_motion(&state.x, x_new, &model.mass, &model.pins.pinned))
                .flatten()
        });
        let verdict = guard(state, x_new, v_new, runaway); // 5. guard and commit
        if verdict.is_ok() {
            self.commit(model, state, contacts);
            self.counts = counts;
        }
        t.finish += finish.elapsed();
        self.timings = t;
        verdict.map(|()| contacts)
    }

    /// Stage 5's commit: the buffers become the state; the forces and the integrator learn
    /// that the step was accepted.
    fn commit(&mut self, model: &Model, state: &mut State, contacts: usize) {
        std::mem::swap(&mut state.x, &mut self.scratch.x_new);
        std::mem::swap(&mut state.v, &mut self.scratch.v_new);
        state.time += model.params.time_step;
        state.steps += 1;
        self.forces.commit();
        match model.params.integrator {
            Integrator::Imex => self.imex.commit(contacts),
            Integrator::Verlet => self.verlet.commit(contacts),
            Integrator::ImexLowDissipation => self.low.commit(contacts),
        }
    }
}

impl Scratch {
    fn next(&mut self) -> Next<'_> {
        Next { x: &mut self.x_new, v: &mut self.v_new }
    }
}

/// Stage 3: pinned vertices on their targets, with the velocity that took them there.
fn pin(model: &Model, x: &[Vec3], x_new: &mut [Vec3], v_new: &mut [Vec3]) {
    let (pins, h) = (&model.pins, model.params.time_step);
    for (&i, &target) in pins.indices.iter().zip(&pins.targets) {
        let i = i as usize;
        x_new[i] = target;
        v_new[i] = (target - x[i]) / h;
    }
}

/// Stage 4: self-collision, then the ground, spheres and mesh obstacles, then, where they
/// moved vertices, self-collision again (an obstacle's push can take a vertex through the layer
/// above it: on the ±36 µC crumple of `tests/contacts.rs` it did at frame 28). Where that
/// second projection, sharing its corrections by mass, put a vertex back into an obstacle, the
/// obstacles push once more and self-collision projects a third time with the vertices they
/// pushed held ([`ContactStep::back`]: the layers above give way to them). The obstacles act
/// then on the vertices the second projection moved only, so the others' friction is taken
/// once. Before the third projection, the ±40 µC crumple with the add-on's frictions ended a
/// step with a vertex 35 mm inside the sphere (frame 41). Returns how many vertices the first
/// projections moved.
fn collide(
    model: &Model,
    state: &State,
    x_new: &mut [Vec3],
    v_new: &mut [Vec3],
    broad: &mut BroadPhase,
) -> usize {
    let (x_old, pinned, h) = (&state.x, &model.pins.pinned, model.params.time_step);
    let mut contacts = 0;
    // one self-collision step, projected again (near what moved) after obstacles pushed vertices
    let mut self_contacts = model.self_collision.as_ref().map(|sc| (sc, ContactStep::new(x_old, x_new)));
    // `backed`: the vertices the obstacles just pushed again, which they hold
    let mut self_collide = |x_new: &mut [Vec3], v_new: &mut [Vec3], backed: Option<Vec<bool>>| {
        self_contacts.as_mut().map_or(0, |(sc, step)| {
            if let Some(backed) = backed {
                step.back(backed);
            }
            sc.project(step, x_new, v_new, (&model.mass, pinned), h, broad)
        })
    };
    contacts += self_collide(x_new, v_new, None);
    let law = model.friction_law;
    let mut taken = Taken { colliders: vec![false; x_new.len()], meshes: vec![false; x_new.len()] };
    let mut obstacles = |x_new: &mut [Vec3], v_new: &mut [Vec3], pinned: &[bool]| {
        let friction = model.params.friction;
        let mut pushed =
            model.colliders.project(x_old, x_new, v_new, pinned, friction, law, h, &mut taken.colliders);
        let (meshes, edges, step) = (&model.mesh_colliders, &model.surface_edges, state.steps);
        pushed += meshes.project(x_old, x_new, v_new, pinned, h, step, law, &mut taken.meshes);
        pushed + meshes.project_edges(edges, x_old, x_new, v_new, pinned, h, law, step, &mut taken.meshes)
    };
    let pushed = obstacles(x_new, v_new, pinned);
    if pushed > 0 && model.self_collision.is_some() {
        let before = x_new.to_vec();
        contacts += self_collide(x_new, v_new, None);
        // the obstacles again, for the vertices that projection moved only (the others keep
        // their contact response, friction included, from the first push; a per-step friction
        // is not taken again by the kind of obstacle that took it in the first)
        let unmoved: Vec<bool> = (0..x_new.len()).map(|i| pinned[i] || before[i] == x_new[i]).collect();
        let before = x_new.to_vec();
        obstacles(x_new, v_new, &unmoved);
        let backed: Vec<bool> = before.iter().zip(x_new.iter()).map(|(a, b)| a != b).collect();
        if backed.contains(&true) {
            contacts += self_collide(x_new, v_new, Some(backed));
        }
    }
    contacts + pushed
}

/// The vertices each kind of obstacle took its friction from in a step ([`collide`]): the ground
/// and spheres (one friction), and the mesh colliders (their faces and edges). Under
/// [`FrictionLaw::PerStep`](crate::FrictionLaw::PerStep) a kind takes its fraction from a
/// vertex once a step: not again in the step's second push, and not again at a mesh's edge from
/// a vertex its faces pushed.
struct Taken {
    colliders: Vec<bool>,
    meshes: Vec<bool>,
}

/// Stage 5's guard: [`Error::Diverged`] for a non-finite position or velocity or a runaway.
fn guard(state: &State, x_new: &[Vec3], v_new: &[Vec3], runaway: Option<Runaway>) -> Result<()> {
    let cause = match (first_non_finite(x_new, v_new), runaway) {
        (Some(vertex), _) => Divergence::NonFinite { vertex },
        (None, Some(Runaway { vertex, distance, size })) => Divergence::Runaway { vertex, distance, size },
        (None, None) => return Ok(()),
    };
    Err(Error::Diverged { step: state.steps, time: state.time, cause })
}

/// The Coulomb backend `params` ask for on `n` vertices.
fn field_for(params: &SimParams, n: usize) -> Result<Box<dyn FieldSolver>> {
    let mut field = make_solver(params.coulomb, n, params.grid_points, params.ddef_near)?;
    field.set_tolerance(params.field_tolerance);
    Ok(field)
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
    farthest_move(x, x_new, mass, pinned).filter(|r| r.distance > RUNAWAY_FACTOR * r.size)
}

/// [`unresolved_motion`]'s measure, whatever its size: the free vertex that moved farthest
/// relative to the mass-weighted mean move, with the system's size; `None` where there is no
/// free vertex or no size.
fn farthest_move(x: &[Vec3], x_new: &[Vec3], mass: &[Real], pinned: &[bool]) -> Option<Runaway> {
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
    // the mean displacement in a fixed order: the verdict does not depend on the threads
    let add = |(m, t): (Vec3, Real), (dm, dt): (Vec3, Real)| (m + dm, t + dt);
    let blocks = ordered_blocks(x.len(), SUM_BLOCK, |block| {
        block
            .filter(|&i| !pinned[i])
            .map(|i| (mass[i] * (x_new[i] - x[i]), mass[i]))
            .fold((Vec3::zeros(), 0.0), add)
    });
    let (moment, total) = blocks.into_iter().fold((Vec3::zeros(), 0.0), add);
    if total <= 0.0 || !(size.is_finite() && size > 0.0) {
        return None; // one vertex, or all in one point: no size to compare with
    }
    let mean = moment / total;
    let (vertex, distance) = (0..x.len())
        .into_par_iter()
        .filter(|&i| !pinned[i])
        .map(|i| (i, (x_new[i] - x[i] - mean).norm()))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(Runaway { vertex, distance, size })
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

    /// The guard's verdict is a threshold on a measure that subtracts a sum over all free
    /// vertices (the mean displacement): it must not depend on how many threads add it up, or
    /// one state could fail on one machine and step on another. Here everything falls 2 m in
    /// the step and moves nanometres of its own, so the mean's rounding shows in the measure;
    /// as a rayon `reduce`, the farthest vertex's measure differed in its 8th digit on 2
    /// threads.
    #[test]
    fn the_runaway_measure_has_the_same_bits_on_any_number_of_threads() {
        let n = 100_003;
        let wave = |i: usize, k: Real| ((i as Real) * k).sin();
        let x: Vec<Vec3> = (0..n).map(|i| Vec3::new(wave(i, 0.37), wave(i, 0.71), wave(i, 1.13))).collect();
        let x_new: Vec<Vec3> = x
            .iter()
            .enumerate()
            .map(|(i, p)| p + Vec3::new(1e-9 * wave(i, 0.29), 0.0, 2.0 + 3e-9 * wave(i, 0.53)))
            .collect();
        let mass: Vec<Real> = (0..n).map(|i| 1e-3 * (1.5 + wave(i, 0.91))).collect();
        let pinned: Vec<bool> = (0..n).map(|i| i % 97 == 0).collect();
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| farthest_move(&x, &x_new, &mass, &pinned)).unwrap()
        };
        let one = on(1);
        for threads in [2, 3, 4, 7] {
            let r = on(threads);
            assert_eq!(
                (r.vertex, r.distance.to_bits()),
                (one.vertex, one.distance.to_bits()),
                "{threads} threads"
            );
        }
    }
}
