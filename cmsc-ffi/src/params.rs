//! `CmscParams`, `CmscEnergies` and `CmscAskedSteps`: the C mirrors of the core's parameter, energy and step-count types.

use cmsc_core::{AskedSteps, Energies, FieldMethod, Integrator, SimParams, Vec3};

use crate::status::{CmscCoulomb as C, CmscIntegrator, FfiError};

/// Simulation parameters (SI units). Fields are only ever appended, never reordered.
/// Start from cmsc_params_default().
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CmscParams {
    /// Time step h (s), > 0.
    pub time_step: f64,
    /// Local/global iterations per IMEX step, >= 1.
    pub iterations: u32,
    /// Ether drag in [0, 1]: 0 = none, 1 = all velocity removed each step.
    pub damping: f64,
    /// Gravitational acceleration (m/s^2).
    pub gravity: [f64; 3],
    /// Coulomb's constant k_c (N m^2 / C^2), >= 0.
    pub coulomb_constant: f64,
    /// A CmscCoulomb value.
    pub coulomb: u32,
    /// DDEF grid size m (number of Halton points, spread uniformly), at most 10,000,000;
    /// 0 = adaptive: the library sizes the grid to balance the far-field gather against the
    /// near field and puts most of its points where the charges are.
    pub grid_points: u32,
    /// A CmscIntegrator value.
    pub integrator: u32,
    /// z (m) of a ground plane; -inf or NaN = no ground.
    pub ground_height: f64,
    /// In [0, 1]: on contact, tangential velocity kept = 1 - friction (ground and spheres; read
    /// as a Coulomb coefficient after cmsc_set_collider_friction_law(sim, CMSC_FRICTION_COULOMB)).
    pub friction: f64,
}

/// Energies of the current state (J). `external` includes gravity, external charges and the
/// uniform field; `total` is the sum of the four terms.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CmscEnergies {
    /// Kinetic energy.
    pub kinetic: f64,
    /// Spring energy.
    pub spring: f64,
    /// Pairwise Coulomb energy (exact, with the charge radius of the short-range form).
    pub coulomb: f64,
    /// Potential in gravity, external charges and field.
    pub external: f64,
    /// Sum of the four.
    pub total: f64,
}

impl From<Energies> for CmscEnergies {
    fn from(e: Energies) -> Self {
        CmscEnergies {
            kinetic: e.kinetic,
            spring: e.spring,
            coulomb: e.coulomb,
            external: e.external,
            total: e.total,
        }
    }
}

/// The equal steps over a cmsc_advance call that each of its bounds asks for: ceil(seconds / h)
/// for the bound's largest step h, 1 where it does not bind (see cmsc_advance for the bounds).
/// cmsc_advance takes at least the largest, up to its max_steps; where max_steps is below it, the
/// call is less resolved than the bound asks: `charge` above the steps taken means the Coulomb
/// and external-charge forces are not resolved (close charges can overshoot, gain energy and push
/// layers through each other), `motion` that the steps are less accurate, `contact` that a mesh
/// pressed onto a curved obstacle can gain energy (cmsc_contact_steps).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CmscAskedSteps {
    /// What the charge bound asks for (the charges' stiffness; with CMSC_INTEGRATOR_VERLET, the
    /// springs' too).
    pub charge: u32,
    /// What the motion bound asks for.
    pub motion: u32,
    /// What the contact bound asks for.
    pub contact: u32,
}

impl From<AskedSteps> for CmscAskedSteps {
    fn from(a: AskedSteps) -> Self {
        CmscAskedSteps { charge: a.charge, motion: a.motion, contact: a.contact }
    }
}

/// Writes the default parameters: h = 1/120 s, 6 accelerated iterations (as accurate as 10 plain
/// ones; see cmsc_set_acceleration), no damping, gravity (0, 0, -9.81),
/// exact k_c, CMSC_COULOMB_AUTO, grid_points 0 (DDEF's adaptive grid), IMEX, no ground, no
/// friction.
/// NULL is a no-op.
///
/// # Safety
/// `out` must be NULL or point to writable memory for one `CmscParams`.
#[no_mangle]
pub unsafe extern "C" fn cmsc_params_default(out: *mut CmscParams) {
    let d = SimParams::default();
    let params = CmscParams {
        time_step: d.time_step,
        iterations: d.iterations,
        damping: d.damping,
        gravity: d.gravity.into(),
        coulomb_constant: d.coulomb_constant,
        coulomb: C::CMSC_COULOMB_AUTO as u32,
        grid_points: d.grid_points,
        integrator: CmscIntegrator::CMSC_INTEGRATOR_IMEX as u32,
        ground_height: f64::NEG_INFINITY,
        friction: d.friction,
    };
    // SAFETY: a non-NULL `out` points to a CmscParams by the caller's contract; writing a
    // plain-old-data struct cannot panic.
    if let Some(out) = unsafe { out.as_mut() } {
        *out = params;
    }
}

impl CmscParams {
    /// Converts to the core's parameters; the core validates the numbers.
    pub(crate) fn to_core(self) -> Result<SimParams, FfiError> {
        let coulomb = match self.coulomb {
            x if x == C::CMSC_COULOMB_OFF as u32 => FieldMethod::Off,
            x if x == C::CMSC_COULOMB_DIRECT as u32 => FieldMethod::Direct,
            x if x == C::CMSC_COULOMB_AUTO as u32 => FieldMethod::Auto,
            x if x == C::CMSC_COULOMB_DDEF as u32 => FieldMethod::Ddef,
            x if x == C::CMSC_COULOMB_DDEF_GPU as u32 => FieldMethod::DdefGpu,
            x if x == C::CMSC_COULOMB_DIRECT_GPU as u32 => FieldMethod::DirectGpu,
            x if x == C::CMSC_COULOMB_AUTO_CPU as u32 => FieldMethod::AutoCpu,
            x if x == C::CMSC_COULOMB_P3M as u32 => FieldMethod::P3m,
            other => {
                return Err(FfiError::invalid(format!("`params.coulomb`: unknown CmscCoulomb value {other}")))
            }
        };
        let integrator = match self.integrator {
            0 => Integrator::Imex,
            1 => Integrator::Verlet,
            2 => Integrator::ImexLowDissipation,
            other => {
                return Err(FfiError::invalid(format!(
                    "`params.integrator`: unknown CmscIntegrator value {other}"
                )))
            }
        };
        let ground_height = match self.ground_height {
            z if z.is_nan() || z == f64::NEG_INFINITY => None,
            z => Some(z), // +inf is rejected by the core's validation
        };
        let params = SimParams {
            time_step: self.time_step,
            iterations: self.iterations,
            damping: self.damping,
            gravity: Vec3::from(self.gravity),
            coulomb_constant: self.coulomb_constant,
            coulomb,
            grid_points: self.grid_points,
            integrator,
            ground_height,
            friction: self.friction,
            ..SimParams::default()
        };
        params.validate().map_err(|e| {
            let mut e = FfiError::from(e);
            e.message = e.message.replacen("invalid argument `", "invalid argument `params.", 1);
            e
        })?;
        Ok(params)
    }
}
