//! The simulated system: state, model (masses, charges, springs, pins, environment) and the
//! validated ways to build and edit it. Stepping lives in [`crate::step`].

mod params;
mod pins;

pub use params::{Integrator, SimParams, Softening, COULOMB_CONSTANT, MAX_ITERATIONS};
pub(crate) use pins::Pins;

use crate::collision::{Colliders, Sphere};
use crate::coulomb::{coulomb_energy, make_solver, FieldMethod, FieldSolver};
use crate::counters::StepTimings;
use crate::energy::Energies;
use crate::error::{Error, Result};
use crate::fields::{gravity_energy, ExternalField};
use crate::linsolve::{check_conditioning, GlobalSolver};
use crate::math::{is_finite3, Real, Vec3};
use crate::springs::{spring_energy, Springs};

/// A charged mass-spring system and everything needed to step it.
///
/// Build one with [`System::new`]; advance it with [`System::step`]. Every setter validates its
/// input and leaves the system unchanged on error. Instances are independent (no global state)
/// and `Send`, so different systems can run on different threads.
pub struct System {
    pub(crate) params: SimParams,
    pub(crate) mass: Vec<Real>,
    pub(crate) charge: Vec<Real>,
    pub(crate) springs: Springs,
    pub(crate) pins: Pins,
    pub(crate) external: ExternalField,
    pub(crate) colliders: Colliders,
    /// Positions `x_t` (m), world frame.
    pub(crate) x: Vec<Vec3>,
    /// Velocities `v_t` (m/s).
    pub(crate) v: Vec<Vec3>,
    pub(crate) time: Real,
    pub(crate) steps: u64,
    /// Softening length used when [`Softening::Auto`] is selected (m).
    auto_softening: Real,
    pub(crate) field: Box<dyn FieldSolver>,
    /// Prefactored global matrix; `None` until first needed or after the pins changed.
    pub(crate) global: Option<GlobalSolver>,
    /// Masses, stiffness or `h` changed since the last numeric factorization.
    pub(crate) global_stale: bool,
    pub(crate) scratch: crate::step::Scratch,
    pub(crate) timings: StepTimings,
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
        check_len("masses", masses.len(), n, "values")?;
        if let Some(i) = masses.iter().position(|m| !(m.is_finite() && *m > 0.0)) {
            return Err(Error::invalid(
                "masses",
                Some(i),
                format!("{} is not a finite mass > 0 kg", masses[i]),
            ));
        }
        params.validate()?;
        let springs = Springs::new(positions, springs, stiffness)?;
        check_conditioning(masses, &springs, params.time_step)?;
        let field = make_solver(params.coulomb, n, params.grid_points, params.ddef_near)?;
        let auto_softening = auto_softening(positions, &springs);
        let mut sys = System {
            mass: masses.to_vec(),
            charge: vec![0.0; n],
            pins: Pins::new(n),
            external: ExternalField::default(),
            colliders: Colliders { ground: params.ground_height, spheres: vec![] },
            x: positions.to_vec(),
            v: vec![Vec3::zeros(); n],
            time: 0.0,
            steps: 0,
            auto_softening,
            field,
            global: None,
            global_stale: false,
            scratch: crate::step::Scratch::new(n, springs.len()),
            timings: StepTimings::default(),
            springs,
            params,
        };
        sys.scratch.init_directions(&sys.springs, &sys.x);
        sys.ensure_factorization()?;
        Ok(sys)
    }

    /// Number of vertices `n`.
    pub fn n_vertices(&self) -> usize {
        self.x.len()
    }

    /// The parameters in force.
    pub fn params(&self) -> &SimParams {
        &self.params
    }

    /// Positions `x_t` (m).
    pub fn positions(&self) -> &[Vec3] {
        &self.x
    }

    /// Velocities `v_t` (m/s).
    pub fn velocities(&self) -> &[Vec3] {
        &self.v
    }

    /// Charges `q_i` (C).
    pub fn charges(&self) -> &[Real] {
        &self.charge
    }

    /// Masses `m_i` (kg).
    pub fn masses(&self) -> &[Real] {
        &self.mass
    }

    /// The springs, with their rest lengths.
    pub fn springs(&self) -> &Springs {
        &self.springs
    }

    /// Simulated time since creation (s).
    pub fn time(&self) -> Real {
        self.time
    }

    /// Number of completed steps.
    pub fn step_count(&self) -> u64 {
        self.steps
    }

    /// The Coulomb method actually running (the resolution of [`FieldMethod::Auto`]).
    pub fn field_method(&self) -> FieldMethod {
        self.field.method()
    }

    /// The softening length `ε` in force (m), see [`Softening`].
    pub fn softening(&self) -> Real {
        match self.params.softening {
            Softening::Auto => self.auto_softening,
            Softening::Length(eps) => eps,
        }
    }

    /// Wall-clock time of each stage of the last step.
    pub fn last_step_timings(&self) -> &StepTimings {
        &self.timings
    }

    /// Indices of pinned vertices, in the order given to [`System::set_pins`].
    pub fn pins(&self) -> &[u32] {
        &self.pins.indices
    }

    /// Replaces the parameters. Changing `h` triggers a numeric refactorization at the next
    /// step; changing the Coulomb method swaps the backend.
    ///
    /// # Errors
    /// As [`SimParams::validate`]; the old parameters stay in force.
    pub fn set_params(&mut self, params: SimParams) -> Result<()> {
        params.validate()?;
        check_conditioning(&self.mass, &self.springs, params.time_step)?;
        let method = params.coulomb.resolve(self.n_vertices());
        let grid_changed =
            params.grid_points != self.params.grid_points || params.ddef_near != self.params.ddef_near;
        if method != self.field.method() || grid_changed {
            self.field =
                make_solver(params.coulomb, self.n_vertices(), params.grid_points, params.ddef_near)?;
        }
        if params.time_step != self.params.time_step {
            self.global_stale = true;
        }
        self.colliders.ground = params.ground_height;
        self.params = params;
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
        self.charge.copy_from_slice(charges);
        Ok(())
    }

    /// Teleports the vertices (m); velocities are kept.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch or a non-finite coordinate.
    pub fn set_positions(&mut self, positions: &[Vec3]) -> Result<()> {
        check_len("positions", positions.len(), self.n_vertices(), "vertices")?;
        check_finite3("positions", positions)?;
        self.x.copy_from_slice(positions);
        Ok(())
    }

    /// Sets the velocities (m/s).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch or a non-finite component.
    pub fn set_velocities(&mut self, velocities: &[Vec3]) -> Result<()> {
        check_len("velocities", velocities.len(), self.n_vertices(), "vertices")?;
        check_finite3("velocities", velocities)?;
        self.v.copy_from_slice(velocities);
        Ok(())
    }

    /// Sets the masses (kg); the global matrix is refactored at the next step.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch or a mass that is not finite and positive.
    pub fn set_masses(&mut self, masses: &[Real]) -> Result<()> {
        check_len("masses", masses.len(), self.n_vertices(), "values")?;
        if let Some(i) = masses.iter().position(|m| !(m.is_finite() && *m > 0.0)) {
            return Err(Error::invalid("masses", Some(i), "is not a finite mass > 0 kg"));
        }
        check_conditioning(masses, &self.springs, self.params.time_step)?;
        self.mass.copy_from_slice(masses);
        self.global_stale = true;
        Ok(())
    }

    /// Sets the spring stiffnesses (N/m); the global matrix is refactored at the next step.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch or a negative or non-finite value.
    pub fn set_stiffness(&mut self, stiffness: &[Real]) -> Result<()> {
        let mut springs = self.springs.clone();
        springs.set_stiffness(stiffness)?;
        check_conditioning(&self.mass, &springs, self.params.time_step)?;
        self.springs = springs;
        self.global_stale = true;
        Ok(())
    }

    /// Pins the listed vertices where they are now (replacing earlier pins; empty unpins all).
    /// Pinned vertices are eliminated from the global solve, so the pattern is re-analysed.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an out-of-range or repeated index.
    pub fn set_pins(&mut self, indices: &[u32]) -> Result<()> {
        let pins = Pins::from_indices(indices, &self.x)?;
        self.pins = pins;
        self.global = None;
        Ok(())
    }

    /// Moves the pinned vertices' targets (m), one per pin in [`System::pins`] order; pinned
    /// vertices reach their targets exactly at the end of the next step.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch or a non-finite coordinate.
    pub fn set_pin_targets(&mut self, targets: &[Vec3]) -> Result<()> {
        check_len("targets", targets.len(), self.pins.indices.len(), "positions (one per pin)")?;
        check_finite3("targets", targets)?;
        self.pins.targets.copy_from_slice(targets);
        Ok(())
    }

    /// Replaces the external point charges (positions in m, charges in C).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch or a non-finite value.
    pub fn set_external_charges(&mut self, positions: &[Vec3], charges: &[Real]) -> Result<()> {
        self.external.charges = ExternalField::charges_from_arrays(positions, charges)?;
        Ok(())
    }

    /// Sets the uniform external electric field `E` (V/m).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a component is not finite.
    pub fn set_uniform_field(&mut self, field: Vec3) -> Result<()> {
        check_finite3("field", &[field])?;
        self.external.uniform = field;
        Ok(())
    }

    /// Replaces the sphere colliders (centres in m, radii in m).
    ///
    /// # Errors
    /// As [`Sphere::from_arrays`].
    pub fn set_sphere_colliders(&mut self, centers: &[Vec3], radii: &[Real]) -> Result<()> {
        self.colliders.spheres = Sphere::from_arrays(centers, radii)?;
        Ok(())
    }

    /// The vertex–vertex Coulomb force (N) of the current method at the current positions,
    /// [Paper](crate#references) Eq. (8).
    ///
    /// # Errors
    /// Backend errors (none for the direct sum).
    pub fn coulomb_forces(&mut self, out: &mut [Vec3]) -> Result<()> {
        check_len("out", out.len(), self.n_vertices(), "entries")?;
        let (k_c, eps) = (self.params.coulomb_constant, self.softening());
        self.field.forces(&self.x, &self.charge, k_c, eps, out)
    }

    /// Kinetic, spring, Coulomb and external energy at the current state (J). Coulomb energy is
    /// always the exact pairwise sum of the softened potential, whatever the force method.
    pub fn energies(&self) -> Energies {
        let (k_c, eps) = (self.params.coulomb_constant, self.softening());
        let kinetic = 0.5 * self.v.iter().zip(&self.mass).map(|(v, m)| m * v.norm_squared()).sum::<Real>();
        let spring = spring_energy(&self.springs, &self.x);
        let coulomb = if self.field.method() == FieldMethod::Off {
            0.0
        } else {
            coulomb_energy(&self.x, &self.charge, k_c, eps)
        };
        let external = self.external.potential_energy(&self.x, &self.charge, k_c, eps)
            + gravity_energy(&self.mass, self.params.gravity, &self.x);
        Energies::new(kinetic, spring, coulomb, external)
    }

    /// Builds or refreshes the factorization of `M + h²L` if pins, masses, stiffness or `h`
    /// changed.
    pub(crate) fn ensure_factorization(&mut self) -> Result<()> {
        let h = self.params.time_step;
        match &mut self.global {
            None => {
                self.global = Some(GlobalSolver::new(&self.mass, &self.springs, &self.pins.pinned, h)?);
            }
            Some(g) if self.global_stale => g.refactor(&self.mass, &self.springs, h)?,
            Some(_) => {}
        }
        self.global_stale = false;
        Ok(())
    }
}

/// [`Softening::Auto`]'s length: `10⁻³ ×` the mean rest length, or without springs `10⁻³ ×`
/// the bounding-box diagonal over `∛n`; `1 µm` if the points all coincide.
fn auto_softening(x: &[Vec3], springs: &Springs) -> Real {
    const FRACTION: Real = 1e-3;
    let scale = if springs.is_empty() {
        let (mut lo, mut hi) = (x[0], x[0]);
        for p in x {
            lo = lo.inf(p);
            hi = hi.sup(p);
        }
        (hi - lo).norm() / (x.len() as Real).cbrt()
    } else {
        springs.rest_lengths().iter().sum::<Real>() / springs.len() as Real
    };
    if scale > 0.0 {
        FRACTION * scale
    } else {
        1e-6
    }
}
