//! [`System`], the validating façade over a [`Model`], its [`State`] and the stepper that
//! advances one under the other: every edit is checked here before it reaches the model or the
//! state, and the stepper is told what an edit made stale. Stepping itself lives in `step.rs`.

use crate::advance::{Before, CallCounts, StepBounds};
use crate::collision::{FrictionLaw, MeshColliders, SelfCollision, Sphere};
use crate::coulomb::FieldMethod;
use crate::counters::{StepCounts, StepTimings};
use crate::energy::Energies;
use crate::error::{Error, Result};
use crate::fields::ExternalField;
use crate::linsolve::check_conditioning;
use crate::math::{is_finite3, on_pool, Real, Vec3};
use crate::model::{Acceleration, Model, Parts, Pins, SimParams};
use crate::springs::Springs;
use crate::state::State;
use crate::step::Stepper;

/// A charged mass-spring system and everything needed to step it.
///
/// Build one with [`System::new`]; advance it with [`System::step`]. Every setter validates its
/// input and leaves the system unchanged on error. Instances are independent (no global state)
/// and `Send`, so different systems can run on different threads.
pub struct System {
    pub(crate) model: Model,
    pub(crate) state: State,
    pub(crate) stepper: Stepper,
    /// Inputs in force at the end of the last step, kept by the first edit since.
    pub(crate) before: Before,
    /// Factors of [`System::advance`]'s step bounds.
    pub(crate) step_bounds: StepBounds,
    /// Least steps of the next [`System::advance`] (after the energy safeguard halved steps).
    pub(crate) advance_floor: u32,
    /// What the last [`System::step_n`] or [`System::advance`] call did.
    pub(crate) last_call: CallCounts,
}

fn check_len(name: &'static str, got: usize, want: usize, what: &str) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(Error::invalid(name, None, format!("has {got} {what}, expected {want}")))
    }
}

fn check_finite3(name: &'static str, v: &[Vec3]) -> Result<()> {
    match v.iter().position(|p| !is_finite3(p)) {
        Some(i) => Err(Error::invalid(name, Some(i), "is NaN or infinite")),
        None => Ok(()),
    }
}

fn check_masses(masses: &[Real], n: usize) -> Result<()> {
    check_len("masses", masses.len(), n, "values")?;
    match masses.iter().position(|m| !(m.is_finite() && *m > 0.0)) {
        Some(i) => {
            Err(Error::invalid("masses", Some(i), format!("{} is not a finite mass > 0 kg", masses[i])))
        }
        None => Ok(()),
    }
}

impl System {
    /// Builds a system at rest from plain arrays. Rest lengths are the spring lengths in
    /// `positions`; charges start at zero ([`System::set_charges`]).
    ///
    /// # Arguments
    /// * `positions` — one per vertex (m), world frame.
    /// * `masses` — `m_i` per vertex (kg).
    /// * `springs` — vertex pairs; `stiffness` — `k_s` per spring (N/m).
    /// * `params` — see [`SimParams`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty mesh, length mismatches, non-finite positions,
    /// masses that are not finite and positive, springs that are out of range, self-loops or of
    /// zero length, negative stiffness, invalid parameters, or a stiffness-to-mass ratio
    /// `h² k / m` above [`crate::MAX_STIFFNESS_MASS_RATIO`]. [`Error::Factorization`] if
    /// `M + h²L` cannot be factored.
    pub fn new(
        positions: &[Vec3],
        masses: &[Real],
        springs: &[[u32; 2]],
        stiffness: &[Real],
        params: SimParams,
    ) -> Result<Self> {
        let n = positions.len();
        if n == 0 {
            return Err(Error::invalid("positions", None, "empty mesh: at least one vertex is needed"));
        }
        check_finite3("positions", positions)?;
        check_masses(masses, n)?;
        params.validate()?;
        let springs = Springs::new(positions, springs, stiffness)?;
        check_conditioning(masses, &springs, params.time_step)?;
        let model = Model::new(params, masses.to_vec(), springs, positions);
        let stepper = Stepper::new(&model, positions)?;
        Ok(System {
            model,
            state: State::at_rest(positions),
            stepper,
            before: Before::default(),
            step_bounds: StepBounds::default(),
            advance_floor: 1,
            last_call: CallCounts::default(),
        })
    }

    /// The model: parameters, masses, charges, springs, pins, external field, colliders.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The state: positions, velocities, time, step count.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Number of vertices `n`.
    pub fn n_vertices(&self) -> usize {
        self.model.n_vertices()
    }

    /// The parameters in force.
    pub fn params(&self) -> &SimParams {
        &self.model.params
    }

    /// Positions `x_t` (m).
    pub fn positions(&self) -> &[Vec3] {
        &self.state.x
    }

    /// Velocities `v_t` (m/s).
    pub fn velocities(&self) -> &[Vec3] {
        &self.state.v
    }

    /// Charges `q_i` (C).
    pub fn charges(&self) -> &[Real] {
        &self.model.charge
    }

    /// Masses `m_i` (kg).
    pub fn masses(&self) -> &[Real] {
        &self.model.mass
    }

    /// The springs, with their rest lengths.
    pub fn springs(&self) -> &Springs {
        &self.model.springs
    }

    /// Simulated time since creation (s).
    pub fn time(&self) -> Real {
        self.state.time
    }

    /// Number of completed steps.
    pub fn step_count(&self) -> u64 {
        self.state.steps
    }

    /// The Coulomb method actually running (the resolution of [`FieldMethod::Auto`]).
    pub fn field_method(&self) -> FieldMethod {
        self.stepper.field_method()
    }

    /// The softening length `ε` in force (m), see [`crate::Softening`].
    pub fn softening(&self) -> Real {
        self.model.softening()
    }

    /// Wall-clock time of each stage of the last step.
    pub fn last_step_timings(&self) -> &StepTimings {
        self.stepper.timings()
    }

    /// What the last step evaluated: Coulomb forces and potentials, sub-steps (see
    /// [`StepCounts`]).
    pub fn last_step_counts(&self) -> StepCounts {
        self.stepper.counts()
    }

    /// The energy target `H*` (J) of [`crate::Integrator::ImexLowDissipation`] after the last
    /// step: the initial total energy plus the work done on the system since (edits, pins,
    /// colliders, damping); `None` before its first step or with another integrator.
    pub fn energy_target(&self) -> Option<Real> {
        (self.model.params.integrator == crate::Integrator::ImexLowDissipation)
            .then(|| self.stepper.energy_target())
            .flatten()
    }

    /// Indices of pinned vertices, in the order given to [`System::set_pins`].
    pub fn pins(&self) -> &[u32] {
        self.model.pins()
    }

    /// Replaces the parameters. Changing `h` triggers a numeric refactorization at the next
    /// step; changing the Coulomb method swaps the backend.
    ///
    /// # Errors
    /// As [`SimParams::validate_for`] the friction law in force ([`System::set_friction_law`]);
    /// the old parameters stay in force.
    pub fn set_params(&mut self, params: SimParams) -> Result<()> {
        params.validate_for(self.model.friction_law)?;
        check_conditioning(&self.model.mass, &self.model.springs, params.time_step)?;
        self.stepper.adopt_params(&self.model.params, &params, self.n_vertices())?;
        self.model.colliders.ground = params.ground_height;
        self.model.params = params;
        Ok(())
    }

    /// Sets [`SimParams::far_field_interval`]: DDEF's whole field every `steps` steps, its
    /// exact near part alone in between with the far part held. `1` evaluates everything every
    /// step. Starts a new interval (the next step evaluates the whole field).
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for 0 or more than
    /// [`crate::MAX_FAR_FIELD_INTERVAL`]; nothing changes.
    pub fn set_far_field_interval(&mut self, steps: u32) -> Result<()> {
        let params = SimParams { far_field_interval: steps, ..self.model.params.clone() };
        self.set_params(params)
    }

    /// Sets [`SimParams::field_tolerance`], the relative RMS force error P3M aims for (10⁻² by
    /// default; 10⁻³ for a reference-grade field). Takes effect at the next step.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] outside
    /// [`crate::MIN_FIELD_TOLERANCE`]`..=`[`crate::MAX_FIELD_TOLERANCE`] or not finite; nothing
    /// changes.
    pub fn set_field_tolerance(&mut self, tolerance: Real) -> Result<()> {
        self.set_params(SimParams { field_tolerance: tolerance, ..self.model.params.clone() })
    }

    /// Chooses how the local/global iterations of each IMEX step run:
    /// [`Acceleration::Anderson`] (the default for a new system) or plain Liu 2013 iterations
    /// ([`Acceleration::Plain`]). Both converge to the same implicit-Euler step as
    /// [`SimParams::iterations`] grows; at a given count the accelerated one is closer to it.
    /// Gradient rollouts ([`System::rollout_gradient`]) run the iterations set here, as
    /// [`System::step`] does ([`crate::gradient`]'s module docs).
    pub fn set_acceleration(&mut self, acceleration: Acceleration) {
        self.model.params.acceleration = acceleration;
    }

    /// Sets [`SimParams::iteration_tolerance`] `τ`: each IMEX step (and each implicit-midpoint
    /// sub-step of [`crate::Integrator::ImexLowDissipation`]) stops its local/global iterations
    /// once their update is below `τ` times the step's displacement, running at most
    /// [`SimParams::iterations`]. `0` (the default for a new system) runs exactly `iterations`.
    /// Gradient rollouts ([`System::rollout_gradient`]) stop their iterations by it too, as
    /// [`System::step`] does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`iteration_tolerance`) if `tolerance` is negative or not
    /// finite; nothing changes.
    pub fn set_iteration_tolerance(&mut self, tolerance: Real) -> Result<()> {
        self.set_params(SimParams { iteration_tolerance: tolerance, ..self.model.params.clone() })
    }

    /// The grid size `m` the field backend's next whole evaluation will use, for a backend with
    /// a grid (DDEF, fixed or adaptive); `None` for the others.
    pub fn field_grid_size(&self) -> Option<u32> {
        self.stepper.field_grid_size()
    }

    /// Sets the relative damping rate `c` (1/s, [`SimParams::relative_damping`]): velocities
    /// relative to the pins' (or, without pins, the centre of mass's) mean motion decay as
    /// `e^{−c t}`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`relative_damping`) if `rate` is negative or not finite.
    pub fn set_relative_damping(&mut self, rate: Real) -> Result<()> {
        self.set_params(SimParams { relative_damping: rate, ..self.model.params.clone() })?;
        self.model.parts.set_all_rates(rate);
        Ok(())
    }

    /// Splits the vertices into parts (a scene's objects): `part[i]` for every vertex, and each
    /// part's relative damping rate (1/s). Each part is damped relative to its own pins' (or its
    /// own centre of mass's) mean motion, so one object's pins do not hold back another
    /// falling object. An empty `part` makes all vertices one part again, at
    /// [`SimParams::relative_damping`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`part`, `relative_damping`) on a length mismatch, a part out of
    /// range, or a rate that is negative or not finite.
    pub fn set_parts(&mut self, part: &[u32], relative_damping: &[Real]) -> Result<()> {
        self.model.parts = Parts::new(part, relative_damping, self.n_vertices())?;
        Ok(())
    }

    /// Sets every vertex charge `q_i` (C).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch or a non-finite charge.
    pub fn set_charges(&mut self, charges: &[Real]) -> Result<()> {
        check_len("charges", charges.len(), self.n_vertices(), "values")?;
        if let Some(i) = charges.iter().position(|q| !q.is_finite()) {
            return Err(Error::invalid("charges", Some(i), "is NaN or infinite"));
        }
        self.before.charge.get_or_insert_with(|| self.model.charge.clone());
        if self.model.charge != charges {
            self.stepper.sources_edited(); // a new far field
        } else {
            self.stepper.state_edited(); // the same charges set again, as a host does every step
        }
        self.model.charge.copy_from_slice(charges);
        Ok(())
    }

    /// Teleports the vertices (m); velocities are kept.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch or a non-finite coordinate.
    pub fn set_positions(&mut self, positions: &[Vec3]) -> Result<()> {
        check_len("positions", positions.len(), self.n_vertices(), "vertices")?;
        check_finite3("positions", positions)?;
        self.state.x.copy_from_slice(positions);
        self.stepper.sources_edited();
        Ok(())
    }

    /// Sets the velocities (m/s).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch or a non-finite component.
    pub fn set_velocities(&mut self, velocities: &[Vec3]) -> Result<()> {
        check_len("velocities", velocities.len(), self.n_vertices(), "vertices")?;
        check_finite3("velocities", velocities)?;
        self.state.v.copy_from_slice(velocities);
        self.stepper.state_edited();
        Ok(())
    }

    /// Sets the masses (kg); the global matrix is refactored at the next step.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch or a mass that is not finite and positive.
    pub fn set_masses(&mut self, masses: &[Real]) -> Result<()> {
        check_masses(masses, self.n_vertices())?;
        check_conditioning(masses, &self.model.springs, self.model.params.time_step)?;
        self.model.mass.copy_from_slice(masses);
        self.stepper.refactor_later();
        Ok(())
    }

    /// Sets the spring stiffnesses (N/m); the global matrix is refactored at the next step.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch or a negative or non-finite value.
    pub fn set_stiffness(&mut self, stiffness: &[Real]) -> Result<()> {
        self.edit_springs(|springs| springs.set_stiffness(stiffness))
    }

    /// Sets each spring's strain-rate damping time `β_s` (s): the spring resists the rate at
    /// which it stretches with the force `β_s k_s ((v_a − v_b)·n) n`, never a rigid motion or a
    /// rotation ([`crate::springs`]' module docs, where it is derived). All zeros (or an empty
    /// slice) turns it off, the paper's springs. Every integrator takes it; the gradient refuses
    /// it. The global matrix is refactored at the next step.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`spring_damping`) on a length other than the number of
    /// springs (or 0), a negative or non-finite value, or (`stiffness`) a damping that makes
    /// the global matrix too ill-conditioned to factor.
    pub fn set_spring_damping(&mut self, seconds: &[Real]) -> Result<()> {
        self.edit_springs(|springs| springs.set_damping(seconds))
    }

    /// Applies `edit` to a copy of the springs and keeps it if the global matrix stays well
    /// enough conditioned to factor ([`check_conditioning`]); refactored at the next step. On
    /// error the springs in force are unchanged.
    fn edit_springs(&mut self, edit: impl FnOnce(&mut Springs) -> Result<()>) -> Result<()> {
        let mut springs = self.model.springs.clone();
        edit(&mut springs)?;
        check_conditioning(&self.model.mass, &springs, self.model.params.time_step)?;
        self.model.springs = springs;
        self.stepper.refactor_later();
        Ok(())
    }

    /// Pins the listed vertices where they are now (replacing earlier pins; empty unpins all).
    /// Pinned vertices are eliminated from the global solve, so the pattern is re-analysed.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an out-of-range or repeated index.
    pub fn set_pins(&mut self, indices: &[u32]) -> Result<()> {
        self.model.pins = Pins::from_indices(indices, &self.state.x)?;
        self.stepper.reanalyse_later();
        Ok(())
    }

    /// Moves the pinned vertices' targets (m), one per pin in [`System::pins`] order; pinned
    /// vertices reach their targets exactly at the end of the next step.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch or a non-finite coordinate.
    pub fn set_pin_targets(&mut self, targets: &[Vec3]) -> Result<()> {
        let pins = &mut self.model.pins;
        check_len("targets", targets.len(), pins.indices.len(), "positions (one per pin)")?;
        check_finite3("targets", targets)?;
        pins.targets.copy_from_slice(targets);
        Ok(())
    }

    /// Replaces the external point charges (positions in m, charges in C).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch or a non-finite value.
    pub fn set_external_charges(&mut self, positions: &[Vec3], charges: &[Real]) -> Result<()> {
        let charges = ExternalField::charges_from_arrays(positions, charges)?;
        self.before.external.get_or_insert_with(|| self.model.external.clone());
        self.model.external.charges = charges;
        self.stepper.state_edited();
        Ok(())
    }

    /// Sets the uniform external electric field `E` (V/m).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a component is not finite.
    pub fn set_uniform_field(&mut self, field: Vec3) -> Result<()> {
        check_finite3("field", &[field])?;
        self.before.external.get_or_insert_with(|| self.model.external.clone());
        self.model.external.uniform = field;
        self.stepper.state_edited();
        Ok(())
    }

    /// Replaces the sphere colliders (centres in m, radii in m).
    ///
    /// # Errors
    /// As [`Sphere::from_arrays`].
    pub fn set_sphere_colliders(&mut self, centers: &[Vec3], radii: &[Real]) -> Result<()> {
        self.model.colliders.spheres = Sphere::from_arrays(centers, radii)?;
        Ok(())
    }

    /// Replaces every triangle-mesh obstacle (see [`MeshColliders`]): one shared vertex array
    /// (m, world frame), one triangle array, and per mesh `k` the triangles
    /// `first_triangle[k] .. first_triangle[k + 1]`, a contact distance `thickness[k]` (m) and a
    /// `friction[k]` under the friction law in force (`[0, 1]` per step, a Coulomb `μ >= 0`; see
    /// [`System::set_friction_law`]). No meshes (empty `thickness`) removes them all.
    ///
    /// # Errors
    /// As [`MeshColliders::new`]; the obstacles in force stay unchanged.
    pub fn set_mesh_colliders(
        &mut self,
        vertices: &[Vec3],
        triangles: &[[u32; 3]],
        first_triangle: &[u32],
        thickness: &[Real],
        friction: &[Real],
    ) -> Result<()> {
        self.model.mesh_colliders = MeshColliders::new(
            vertices,
            triangles,
            first_triangle,
            thickness,
            friction,
            self.model.friction_law,
        )?;
        Ok(())
    }

    /// Sets how the ground, spheres and mesh obstacles apply friction (collision module docs):
    /// [`FrictionLaw::PerStep`] (the default; `friction` in `[0, 1]` removed per step) or
    /// [`FrictionLaw::Coulomb`] (`friction` is a coefficient `μ >= 0`, the same motion at any
    /// step). The values in force keep their numbers and are read under the new law: the
    /// ground's [`SimParams::friction`] and every mesh collider's. Switching to Coulomb always
    /// succeeds (a value in `[0, 1]` is a valid `μ`); once Coulomb is in force, values above 1
    /// are accepted.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a value in force is not valid under `law` (switching back
    /// to per-step friction with a `μ > 1` installed); nothing changes.
    pub fn set_friction_law(&mut self, law: FrictionLaw) -> Result<()> {
        law.check("friction", None, self.model.params.friction)?;
        for (k, m) in self.model.mesh_colliders.meshes().iter().enumerate() {
            law.check("friction", Some(k), m.friction)?;
        }
        self.model.friction_law = law;
        Ok(())
    }

    /// Moves the mesh obstacles' vertices (m, same count and order as set) to where they are at
    /// the end of the next step; the displacement from their previous positions over `h` is
    /// their velocity during that step (zero in later steps unless moved again).
    ///
    /// # Errors
    /// As [`MeshColliders::moved`]; the obstacles stay unchanged.
    pub fn move_mesh_colliders(&mut self, vertices: &[Vec3]) -> Result<()> {
        self.model.mesh_colliders = self.model.mesh_colliders.moved(vertices, self.state.steps)?;
        Ok(())
    }

    /// Turns self-collision on: vertex `i` keeps `distance[i]` (m, 0: does not collide) from the
    /// `triangles` it is not a corner of (see [`SelfCollision`]). No triangles turns it off
    /// (`distance` may then be empty).
    ///
    /// # Errors
    /// As [`SelfCollision::new`] (triangles checked at the current positions); the settings in
    /// force stay unchanged.
    pub fn set_self_collision(&mut self, triangles: &[[u32; 3]], distance: &[Real]) -> Result<()> {
        if triangles.is_empty() {
            if !(distance.is_empty() || distance.len() == self.n_vertices()) {
                check_len("distance", distance.len(), self.n_vertices(), "values")?;
            }
            self.model.self_collision = None;
            return Ok(());
        }
        self.model.self_collision = Some(SelfCollision::new(triangles, distance, &self.state.x)?);
        Ok(())
    }

    /// The triangles of the simulated surface (vertex indices): their edges are kept outside the
    /// mesh obstacles' convex sharp edges (stage 5 of the [`MeshColliders`] docs). Without them
    /// only the vertices are kept out, and an edge of the surface can cut across an obstacle's
    /// edge. Springs are not used for this: bending springs span two triangles and are no part of
    /// the surface (pushed off a box's edge, they tented a draped cloth above its top face). No
    /// triangles clears them.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`triangles`) for an index out of range or a triangle with
    /// repeated corners or zero area at the current positions; the surface in force is unchanged.
    pub fn set_surface(&mut self, triangles: &[[u32; 3]]) -> Result<()> {
        crate::collision::check_triangles("triangles", triangles, &self.state.x)?;
        self.model.surface_edges = crate::collision::edges_of(triangles);
        Ok(())
    }

    /// The edges of the surface set with [`System::set_surface`] (`[low, high]`, sorted).
    pub fn surface_edges(&self) -> &[[u32; 2]] {
        &self.model.surface_edges
    }

    /// Sets the friction between layers of the self-collision in force: a contact of vertex `i`
    /// keeps the fraction `exp(−rate[i] h)` of its tangential slip per step (`rate` in 1/s, one
    /// per vertex, 0: frictionless, the default), so the slip lost per second does not depend
    /// on the step (see [`SelfCollision::with_friction`]). [`System::set_self_collision`] resets
    /// it to 0.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: self-collision is off, or `rate` is not one finite value
    /// `>= 0` per vertex; the settings in force stay unchanged.
    pub fn set_self_collision_friction(&mut self, rate: &[Real]) -> Result<()> {
        let Some(sc) = &self.model.self_collision else {
            return Err(Error::invalid("rate", None, "self-collision is off: set it first"));
        };
        self.model.self_collision = Some(sc.clone().with_friction(rate)?);
        Ok(())
    }

    /// The vertex–vertex Coulomb force (N) of the current method at the current positions,
    /// [Paper](crate#references) Eq. (8).
    ///
    /// # Errors
    /// Backend errors (none for the direct sum).
    pub fn coulomb_forces(&mut self, out: &mut [Vec3]) -> Result<()> {
        check_len("out", out.len(), self.n_vertices(), "entries")?;
        self.stepper.coulomb_forces(&self.model, &self.state.x, out)
    }

    /// Kinetic, spring, Coulomb and external energy at the current state (J). Coulomb energy is
    /// always the exact pairwise sum of the softened potential, whatever the force method.
    pub fn energies(&self) -> Energies {
        self.model.energies(&self.state)
    }

    /// Advances the system by one time step `h`: edits → explicit forces at `x_t` → integrate →
    /// pins → collisions → divergence guard and commit (the stages are documented in `step.rs`).
    ///
    /// # Errors
    /// [`Error::Diverged`] when the step produced a non-finite position or velocity (the state
    /// stays at the last good step); [`Error::Factorization`] if a refactorization fails; field
    /// backend errors.
    pub fn step(&mut self) -> Result<()> {
        on_pool(|| self.stepper.step(&self.model, &mut self.state))?;
        self.before = Before::default();
        Ok(())
    }

    /// Runs [`System::step`] `steps` times, stopping at the first error (the state is then the
    /// last good step).
    ///
    /// # Errors
    /// As [`System::step`].
    pub fn step_n(&mut self, steps: u32) -> Result<()> {
        self.last_call = CallCounts::default();
        on_pool(|| {
            for _ in 0..steps {
                self.step()?;
                self.last_call.steps += 1;
                self.last_call.iterations += u64::from(self.stepper.counts().iterations);
            }
            Ok(())
        })
    }

    /// Entries of the Cholesky factor of each cached factorization of `M + h²L` (one per step
    /// length in use, most recent first); 12 bytes each (value and row index).
    pub fn factor_entries(&self) -> Vec<usize> {
        self.stepper.factor_entries()
    }
}
