//! The entry points of the C ABI v1 (DESIGN.md, "The C ABI contract"). Each one: check the
//! arguments → call the core → map the result, inside the panic boundary.

use cmsc_core::{Acceleration, System, Vec3};

use crate::buffers::{expect_count, input, output, vec3_input, vec3_output};
use crate::handle::{sim_mut, sim_ref, CmscSim};
use crate::panic::boundary;
use crate::params::{CmscAskedSteps, CmscEnergies, CmscParams};
use crate::status::{CmscCoulomb, CmscStatus, FfiError};

/// Creates a simulation at rest from plain arrays. Rest lengths are the spring lengths in
/// `positions`. Charges start at 0 (cmsc_set_charges).
///
/// `positions`: 3 n_vertices doubles (m). `masses`: n_vertices (kg, > 0). `springs`:
/// 2 n_springs vertex indices. `stiffness`: n_springs (N/m, >= 0). `params`: non-NULL.
/// `out`: receives the handle, or NULL on error.
///
/// # Safety
/// Pointers must be NULL or valid for the stated lengths; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn cmsc_create(
    positions: *const f64,
    n_vertices: usize,
    masses: *const f64,
    springs: *const u32,
    n_springs: usize,
    stiffness: *const f64,
    params: *const CmscParams,
    out: *mut *mut CmscSim,
) -> CmscStatus {
    boundary(|| {
        // SAFETY (all blocks): pointers are valid for their lengths by the caller's contract;
        // the helpers check NULL, alignment and size.
        let out = unsafe { out.as_mut() }.ok_or_else(|| FfiError::invalid("`out` is NULL"))?;
        *out = std::ptr::null_mut();
        let params = unsafe { params.as_ref() }.ok_or_else(|| FfiError::invalid("`params` is NULL"))?;
        let x = unsafe { vec3_input(positions, n_vertices, "positions") }?;
        let m = unsafe { input(masses, n_vertices, "masses") }?;
        let n_idx = n_springs.checked_mul(2).ok_or_else(|| FfiError::invalid("`n_springs` is too large"))?;
        let pairs: Vec<[u32; 2]> =
            unsafe { input(springs, n_idx, "springs") }?.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
        let k = unsafe { input(stiffness, n_springs, "stiffness") }?;
        let sys = System::new(&x, m, &pairs, k, params.to_core()?)?;
        *out = Box::into_raw(CmscSim::new(sys));
        Ok(())
    })
}

/// Advances `steps` time steps. On CMSC_DIVERGED the simulation stays at the last good step.
///
/// # Safety
/// `sim` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn cmsc_step(sim: *mut CmscSim, steps: u32) -> CmscStatus {
    // SAFETY: forwarded from the caller.
    boundary(|| unsafe { sim_mut(sim) }?.call(|s| Ok(s.step_n(steps)?)))
}

/// Advances the simulation by `seconds` (> 0, finite) in k equal steps of h = seconds / k and
/// writes k to `steps_taken`. k is chosen per call from min_steps * {1, 2, 4, 8, ...}, capped at
/// max_steps (k = max_steps when the doubling passes it), as the first that keeps the explicit
/// part resolved: the Coulomb stiffness of the charges (h <= min_i sqrt(m_i / K_i), K_i
/// estimated from the charges of each vertex's spring neighbours and the external charges) and
/// the motion (no vertex moving more than 0.7 % of the mesh's size per step relative to the
/// mean motion, pins counted at their target's speed), and the contacts (a vertex that touches
/// or strikes a sphere or a mesh obstacle in the call takes h <= 2.3 R / c_i, with R the
/// obstacle's radius of curvature there and c_i = sqrt(sum of k l^2 over its springs / m_i) the
/// cloth's wave speed: a cloth projected onto a curved obstacle at longer steps gains energy
/// from nothing; cmsc_contact_steps says what it asks for). See the cmsc-core docs of
/// `advance` for the derivation. The factorization for each step length used is built once and
/// cached (up to 3 step lengths; about 113 MB each at 100K vertices).
///
/// Inputs set since the last step or advance are reached linearly over the k steps: step j
/// (0-based) of k uses the fraction (j + 1) / k between the value in force at the start of the
/// call and the value set: vertex charges (cmsc_set_charges), external charge positions and
/// values (cmsc_set_external_charges, interpolated only when their count did not change;
/// otherwise the new ones hold from the first step), the uniform field
/// (cmsc_set_uniform_field), pin targets (cmsc_set_pin_targets, from where the pins are), and
/// mesh-obstacle moves (cmsc_move_mesh_colliders). Values set before the simulation's first
/// step are in force from its start. With no such edits, advancing with
/// min_steps = max_steps = k equals cmsc_step(k) with CmscParams.time_step = seconds / k.
/// cmsc_step keeps its meaning and its CmscParams.time_step afterwards.
///
/// If a step diverges (CMSC_DIVERGED: non-finite state or a runaway), the whole call is redone
/// from its start with twice the steps, up to max_steps; if it still diverges, CMSC_DIVERGED is
/// returned with the state at the call's start and the inputs as set. CMSC_INVALID_ARGUMENT,
/// with nothing changed, for a NULL `sim` or `steps_taken`, `seconds` <= 0 or not finite,
/// min_steps = 0, min_steps > max_steps, or max_steps > CMSC_MAX_ADVANCE_STEPS.
/// `*steps_taken` is written only on CMSC_OK.
///
/// # Safety
/// `sim` must be NULL or a live handle; `steps_taken` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmsc_advance(
    sim: *mut CmscSim,
    seconds: f64,
    min_steps: u32,
    max_steps: u32,
    steps_taken: *mut u32,
) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, out) = unsafe { (sim_mut(sim)?, output(steps_taken, 1, "steps_taken")?) };
        out[0] = sim.call(|s| Ok(s.advance(seconds, min_steps, max_steps)?))?;
        Ok(())
    })
}

/// Writes to `total` the local/global iterations run by the steps of the last cmsc_step or
/// cmsc_advance call on this simulation (summed over its steps; below steps x
/// CmscParams.iterations when cmsc_set_iteration_tolerance stopped them early, and above it
/// with CMSC_INTEGRATOR_IMEX_LOW_DISSIPATION when its energy safeguard redid sub-steps as
/// halves, each running its own iterations; 0 for Verlet and before any call).
///
/// # Safety
/// `sim` must be NULL or a live handle; `total` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmsc_last_iterations(sim: *const CmscSim, total: *mut u64) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, out) = unsafe { (sim_ref(sim)?, output(total, 1, "total")?) };
        out[0] = sim.sys.last_call_counts().iterations;
        Ok(())
    })
}

/// Writes to `out` the steps each bound of the last cmsc_advance call on this simulation asked
/// for at the call's start (CmscAskedSteps), before its max_steps capped them: a caller can tell
/// that the cap bound, and which bound it held back. A call that failed with CMSC_DIVERGED
/// records them too (what it asked before its retries); one refused as CMSC_INVALID_ARGUMENT
/// leaves the values of the call before. All 0 after a cmsc_step call and before any call.
///
/// # Safety
/// `sim` must be NULL or a live handle; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmsc_last_asked_steps(sim: *const CmscSim, out: *mut CmscAskedSteps) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, out) = unsafe { (sim_ref(sim)?, output(out, 1, "out")?) };
        out[0] = sim.sys.last_call_counts().asked.into();
        Ok(())
    })
}

/// Writes to `out` the steps each bound of cmsc_advance asks for over the next `seconds` (> 0,
/// finite), from the state and the inputs as they are (those set since the last step ramped from
/// their values then, as cmsc_advance would): what a cmsc_advance call now would record
/// (cmsc_last_asked_steps). A caller of fixed steps (cmsc_step) can compare its own with it.
/// Changes nothing; `out` is written only on success.
///
/// # Safety
/// `sim` must be NULL or a live handle; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmsc_asked_steps(
    sim: *const CmscSim,
    seconds: f64,
    out: *mut CmscAskedSteps,
) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, out) = unsafe { (sim_ref(sim)?, output(out, 1, "out")?) };
        out[0] = sim.sys.asked_steps(seconds)?.into();
        Ok(())
    })
}

/// Writes to `steps` the equal steps over the next `seconds` (> 0, finite) that the charge bound
/// of cmsc_advance asks for (CmscAskedSteps.charge of cmsc_asked_steps), without the contact
/// bound's look at every vertex: cheap enough for a caller of fixed steps to ask before each
/// step. Changes nothing; `steps` is written only on success.
///
/// # Safety
/// `sim` must be NULL or a live handle; `steps` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmsc_charge_steps(sim: *const CmscSim, seconds: f64, steps: *mut u32) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, out) = unsafe { (sim_ref(sim)?, output(steps, 1, "steps")?) };
        out[0] = sim.sys.charge_steps(seconds)?;
        Ok(())
    })
}

/// Writes to `steps` (n values, n = the vertex count) what cmsc_charge_steps gives, for each
/// vertex from its own charge: the equal steps over the next `seconds` (> 0, finite) that
/// vertex i asks for, 1 where it is pinned or nothing is stiff. The largest is
/// cmsc_charge_steps'; a caller simulating several objects together can tell which of them
/// asks. Changes nothing; `steps` is written only on success.
///
/// # Safety
/// `sim` must be NULL or a live handle; `steps` NULL or writable for n values.
#[no_mangle]
pub unsafe extern "C" fn cmsc_charge_steps_per_vertex(
    sim: *const CmscSim,
    seconds: f64,
    steps: *mut u32,
    n: usize,
) -> CmscStatus {
    // SAFETY: forwarded from the caller.
    unsafe { write_per_vertex(sim, steps, n, |sys| sys.charge_steps_per_vertex(seconds)) }
}

/// Writes what `per_vertex` gives for the simulation's vertices to `steps` (n values: the vertex
/// count, checked first), inside the panic boundary; nothing written on an error.
///
/// # Safety
/// `sim` must be NULL or a live handle; `steps` NULL or writable for n values.
unsafe fn write_per_vertex(
    sim: *const CmscSim,
    steps: *mut u32,
    n: usize,
    per_vertex: impl FnOnce(&System) -> cmsc_core::Result<Vec<u32>>,
) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let sim = unsafe { sim_ref(sim)? };
        expect_count("steps", n, sim.sys.n_vertices(), "vertices")?;
        // SAFETY: forwarded from the caller.
        let out = unsafe { output(steps, n, "steps")? };
        out.copy_from_slice(&per_vertex(&sim.sys)?);
        Ok(())
    })
}

/// Writes to `steps` the equal steps over the next `seconds` (> 0, finite) that the contact
/// bound of cmsc_advance asks for, from the state and obstacles as they are: ceil(seconds / h)
/// with h = 2.3 R / c_i least over the vertices that touch or are about to strike a sphere or a
/// mesh obstacle (R its radius of curvature there, c_i the wave speed of the vertex's
/// springs), 1 where none does. cmsc_advance takes at least as many (up to its max_steps); a
/// caller of fixed steps (cmsc_step) can compare its own with it: at fewer, a stiff mesh
/// pressed onto a curved obstacle gains energy from nothing. Changes nothing.
///
/// # Safety
/// `sim` must be NULL or a live handle; `steps` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmsc_contact_steps(
    sim: *const CmscSim,
    seconds: f64,
    steps: *mut u32,
) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, out) = unsafe { (sim_ref(sim)?, output(steps, 1, "steps")?) };
        out[0] = sim.sys.contact_steps(seconds)?;
        Ok(())
    })
}

/// Writes to `steps` (n values, n = the vertex count) what cmsc_contact_steps gives, for each
/// vertex from its own contacts: the equal steps over the next `seconds` (> 0, finite) that
/// vertex i asks for, 1 where it neither touches nor is about to strike a curved obstacle (and
/// for pinned vertices). The largest is cmsc_contact_steps'; a caller simulating several
/// objects together can tell which of them asks. Changes nothing; `steps` is written only on
/// success.
///
/// # Safety
/// `sim` must be NULL or a live handle; `steps` NULL or writable for n values.
#[no_mangle]
pub unsafe extern "C" fn cmsc_contact_steps_per_vertex(
    sim: *const CmscSim,
    seconds: f64,
    steps: *mut u32,
    n: usize,
) -> CmscStatus {
    // SAFETY: forwarded from the caller.
    unsafe { write_per_vertex(sim, steps, n, |sys| sys.contact_steps_per_vertex(seconds)) }
}

/// Sets every vertex charge (C); `n` must equal the vertex count.
///
/// # Safety
/// `sim` must be NULL or a live handle; `charges` valid for `n` doubles.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_charges(sim: *mut CmscSim, charges: *const f64, n: usize) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, q) = unsafe { (sim_mut(sim)?, input(charges, n, "charges")?) };
        sim.call(|s| Ok(s.set_charges(q)?))
    })
}

/// Copies the positions (m) into `out` (3 n doubles); `n` must equal the vertex count.
///
/// # Safety
/// `sim` must be NULL or a live handle; `out` valid for 3 n doubles.
#[no_mangle]
pub unsafe extern "C" fn cmsc_get_positions(sim: *const CmscSim, out: *mut f64, n: usize) -> CmscStatus {
    // SAFETY: forwarded from the caller.
    boundary(|| unsafe { vec3_output(out, n, sim_ref(sim)?.sys.positions(), "out") })
}

/// Teleports the vertices (3 n doubles, m); velocities are kept.
///
/// # Safety
/// `sim` must be NULL or a live handle; `positions` valid for 3 n doubles.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_positions(
    sim: *mut CmscSim,
    positions: *const f64,
    n: usize,
) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, x) = unsafe { (sim_mut(sim)?, vec3_input(positions, n, "positions")?) };
        sim.call(|s| Ok(s.set_positions(&x)?))
    })
}

/// Copies the velocities (m/s) into `out` (3 n doubles).
///
/// # Safety
/// `sim` must be NULL or a live handle; `out` valid for 3 n doubles.
#[no_mangle]
pub unsafe extern "C" fn cmsc_get_velocities(sim: *const CmscSim, out: *mut f64, n: usize) -> CmscStatus {
    // SAFETY: forwarded from the caller.
    boundary(|| unsafe { vec3_output(out, n, sim_ref(sim)?.sys.velocities(), "out") })
}

/// Sets the velocities (3 n doubles, m/s).
///
/// # Safety
/// `sim` must be NULL or a live handle; `velocities` valid for 3 n doubles.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_velocities(
    sim: *mut CmscSim,
    velocities: *const f64,
    n: usize,
) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, v) = unsafe { (sim_mut(sim)?, vec3_input(velocities, n, "velocities")?) };
        sim.call(|s| Ok(s.set_velocities(&v)?))
    })
}

/// Pins the `k` listed vertices where they are now, replacing earlier pins (k = 0 unpins all).
/// Pinned vertices are held exactly. Indices must be distinct and in range.
///
/// # Safety
/// `sim` must be NULL or a live handle; `indices` valid for `k` values.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_pins(sim: *mut CmscSim, indices: *const u32, k: usize) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, idx) = unsafe { (sim_mut(sim)?, input(indices, k, "indices")?) };
        sim.call(|s| Ok(s.set_pins(idx)?))
    })
}

/// Moves the pins' targets (3 k doubles, m, in cmsc_set_pins order); pinned vertices reach
/// them exactly at the end of the next step.
///
/// # Safety
/// `sim` must be NULL or a live handle; `positions` valid for 3 k doubles.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_pin_targets(
    sim: *mut CmscSim,
    positions: *const f64,
    k: usize,
) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, t) = unsafe { (sim_mut(sim)?, vec3_input(positions, k, "positions")?) };
        sim.call(|s| Ok(s.set_pin_targets(&t)?))
    })
}

/// Replaces the external point charges: positions (3 k doubles, m) and charges (k, C).
///
/// # Safety
/// `sim` must be NULL or a live handle; arrays valid for their lengths.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_external_charges(
    sim: *mut CmscSim,
    positions: *const f64,
    charges: *const f64,
    k: usize,
) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, p, q) =
            unsafe { (sim_mut(sim)?, vec3_input(positions, k, "positions")?, input(charges, k, "charges")?) };
        sim.call(|s| Ok(s.set_external_charges(&p, q)?))
    })
}

/// Sets the uniform external electric field (V/m).
///
/// # Safety
/// `sim` must be NULL or a live handle; `field` valid for 3 doubles.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_uniform_field(sim: *mut CmscSim, field: *const f64) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, e) = unsafe { (sim_mut(sim)?, vec3_input(field, 1, "field")?) };
        sim.call(|s| Ok(s.set_uniform_field(e[0])?))
    })
}

/// Sets the relative damping rate `c` (1/s, finite, >= 0; 0 for a new simulation): each step
/// the inertial prediction uses `D(v)_i = a (g v_i + (1 - g) v_ref)` with `a = 1 - damping`,
/// `g = exp(-c h)` and `v_ref` the mass-weighted mean velocity of the pinned vertices, or of
/// all vertices when none is pinned. Velocities relative to that motion decay as `exp(-c t)` at
/// any time step: a hanging cloth comes to rest while an unpinned object keeps its momentum
/// (it falls and drifts at full speed). `cmsc_rollout_gradient` differentiates it exactly.
///
/// # Safety
/// `sim` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_relative_damping(sim: *mut CmscSim, rate: f64) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let sim = unsafe { sim_mut(sim)? };
        sim.call(|s| Ok(s.set_relative_damping(rate)?))
    })
}

/// Splits the n simulated vertices into parts (a scene's objects): `part[i] < n_parts` for each
/// vertex, and `relative_damping[k]` (1/s, finite, >= 0) the rate of part k. Each part is damped
/// relative to its own pinned vertices' (or, with none, its own centre of mass's) mean motion,
/// so one object's pins do not hold back another. `n = 0` makes all vertices one part again;
/// `cmsc_set_relative_damping` then sets every part's rate.
///
/// # Safety
/// `sim` must be NULL or a live handle; `part` valid for `n` values, `relative_damping` for
/// `n_parts`.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_parts(
    sim: *mut CmscSim,
    part: *const u32,
    n: usize,
    relative_damping: *const f64,
    n_parts: usize,
) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, part, rates) = unsafe {
            (sim_mut(sim)?, input(part, n, "part")?, input(relative_damping, n_parts, "relative_damping")?)
        };
        sim.call(|s| Ok(s.set_parts(part, rates)?))
    })
}

/// Sets each spring's strain-rate damping time `seconds[s]` (s, finite, >= 0; n = the number of
/// springs given to cmsc_create, or n = 0 for none; a new simulation has none): spring s = (a, b)
/// of stiffness k_s resists the rate at which its length changes with the force
/// `-seconds[s] k_s (d|x_a - x_b|/dt) u` on a (u the unit vector from b to a) and its opposite on
/// b. It damps stretching and compressing, never a rigid motion or a rotation (Blender's Cloth
/// calls it Tension Damping); a mode of angular frequency w is damped at the ratio
/// `seconds * w / 2`, so the fast ringing of a stiff mesh dies and a slow swing keeps its energy.
/// Every integrator takes it (the implicit ones in their implicit equation, prefactored).
/// `cmsc_rollout_gradient` refuses springs that damp (CMSC_INVALID_ARGUMENT naming
/// `spring_damping`). The array is copied; on error the damping in force is unchanged.
///
/// # Safety
/// `sim` must be NULL or a live handle; `seconds` valid for n doubles.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_spring_damping(
    sim: *mut CmscSim,
    seconds: *const f64,
    n: usize,
) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, seconds) = unsafe { (sim_mut(sim)?, input(seconds, n, "seconds")?) };
        sim.call(|s| Ok(s.set_spring_damping(seconds)?))
    })
}

/// Replaces the sphere colliders: centers (3 k doubles, m) and radii (k, m, > 0).
///
/// # Safety
/// `sim` must be NULL or a live handle; arrays valid for their lengths.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_sphere_colliders(
    sim: *mut CmscSim,
    centers: *const f64,
    radii: *const f64,
    k: usize,
) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, c, r) =
            unsafe { (sim_mut(sim)?, vec3_input(centers, k, "centers")?, input(radii, k, "radii")?) };
        sim.call(|s| Ok(s.set_sphere_colliders(&c, r)?))
    })
}

/// Writes the vertex–vertex Coulomb force (N, 3 n doubles) of the selected method at the current
/// positions (paper Eq. 8), the whole field: what accuracy checks of approximate methods
/// compare. A query: the steps after it are the same as without it (with a far-field interval
/// above 1, a second instance of the method evaluates it, built at the first such call).
///
/// # Safety
/// `sim` must be NULL or a live handle; `out` valid for 3 n doubles.
#[no_mangle]
pub unsafe extern "C" fn cmsc_coulomb_forces(sim: *mut CmscSim, out: *mut f64, n: usize) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let sim = unsafe { sim_mut(sim) }?;
        expect_count("out", n, sim.sys.n_vertices(), "vertices")?;
        let mut f = vec![Vec3::zeros(); n];
        sim.call(|s| Ok(s.coulomb_forces(&mut f)?))?;
        // SAFETY: forwarded from the caller.
        unsafe { vec3_output(out, n, &f, "out") }
    })
}

/// Writes the energies of the current state (J).
///
/// # Safety
/// `sim` must be NULL or a live handle; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn cmsc_energies(sim: *const CmscSim, out: *mut CmscEnergies) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, out) = unsafe { (sim_ref(sim)?, output(out, 1, "out")?) };
        out[0] = sim.sys.energies().into();
        Ok(())
    })
}

/// Writes the Coulomb method that runs (a CmscCoulomb value) to `out`: what
/// CMSC_COULOMB_AUTO and CMSC_COULOMB_AUTO_CPU resolved to for this vertex count and machine,
/// or the method asked for. Never AUTO or AUTO_CPU. A GPU method that is unavailable fails
/// cmsc_create with CMSC_UNAVAILABLE, so what this reports is what runs.
///
/// # Safety
/// `sim` must be NULL or a live handle; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn cmsc_get_coulomb_method(sim: *const CmscSim, out: *mut u32) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, out) = unsafe { (sim_ref(sim)?, output(out, 1, "out")?) };
        out[0] = CmscCoulomb::from_core(sim.sys.field_method()) as u32;
        Ok(())
    })
}

/// Chooses how the local/global iterations of each IMEX step run: `enabled` = 1 (the default
/// for a new simulation) accelerates them (Anderson acceleration with an energy-decrease
/// safeguard, Peng et al. 2018); 0 runs plain Liu 2013 iterations. Both converge to the same
/// implicit-Euler step as `CmscParams.iterations` grows; at a given count the accelerated step
/// is closer to it (the default `iterations` is chosen so that it is at least as accurate as 10
/// plain ones). Any other value is CMSC_INVALID_ARGUMENT and changes nothing.
/// `cmsc_rollout_gradient` and `cmsc_fit_charges` run their rollouts as set here (plain
/// iterations are differentiated exactly, accelerated ones as converged implicit steps). Takes
/// effect at the next step.
///
/// # Safety
/// `sim` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_acceleration(sim: *mut CmscSim, enabled: u32) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let sim = unsafe { sim_mut(sim)? };
        let acceleration = match enabled {
            1 => Acceleration::Anderson,
            0 => Acceleration::Plain,
            other => {
                return Err(FfiError::invalid(format!(
                    "`enabled`: {other} is neither 1 (accelerated) nor 0 (plain iterations)"
                )))
            }
        };
        sim.call(|s| {
            s.set_acceleration(acceleration);
            Ok(())
        })
    })
}

/// Lets the local/global iterations of each step stop when done: with `tolerance` > 0 a step
/// (and each implicit-midpoint sub-step of the low-dissipation integrator) stops iterating once
/// an iteration moves the vertices by at most `tolerance` times the step's displacement,
/// |x^{k+1} - x^k| <= tolerance (|x^{k+1} - x_t| + 1e-12 m sqrt(n)) (Euclidean norms over all
/// coordinates), and `CmscParams.iterations` is the most it runs. 0 (the default for a new
/// simulation) runs exactly `CmscParams.iterations`; CMSC_RECOMMENDED_ITERATION_TOLERANCE is the
/// value measured with cmsc_advance. The iterations a step actually ran are
/// counted by cmsc_last_iterations. A negative, NaN or infinite `tolerance` is
/// CMSC_INVALID_ARGUMENT and changes nothing. cmsc_rollout_gradient and cmsc_fit_charges stop
/// their steps' iterations by it too, as cmsc_step does. Takes effect at the next step.
///
/// # Safety
/// `sim` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_iteration_tolerance(sim: *mut CmscSim, tolerance: f64) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let sim = unsafe { sim_mut(sim)? };
        sim.call(|s| Ok(s.set_iteration_tolerance(tolerance)?))
    })
}

/// Multiple time stepping of DDEF's far field: with a DDEF method (CMSC_COULOMB_DDEF,
/// CMSC_COULOMB_DDEF_GPU, or AUTO when it picks one) and the IMEX integrator, the whole Coulomb
/// field is evaluated every `steps` steps; in the steps between, only its exact near part is
/// summed at the current positions and the far part (the grid-interpolated field of the
/// charges beyond each charge's near set) is held from the last whole evaluation. 1 (the
/// default for a new simulation) evaluates everything every step; the exact methods, the other
/// integrators, cmsc_rollout_gradient and cmsc_fit_charges always do. cmsc_set_positions
/// starts a new interval, and a step after cmsc_set_charges changed a charge evaluates the
/// whole field. 0 or more than 1000 is
/// CMSC_INVALID_ARGUMENT and changes nothing. Takes effect at the next step.
///
/// # Safety
/// `sim` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_far_field_interval(sim: *mut CmscSim, steps: u32) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let sim = unsafe { sim_mut(sim)? };
        sim.call(|s| Ok(s.set_far_field_interval(steps)?))
    })
}

/// The relative RMS error of the Coulomb force that CMSC_COULOMB_P3M aims for (also when AUTO
/// picks it): 1e-2 for a new simulation (graphics accuracy), 1e-3 for a reference-grade field at
/// about twice the cost. Outside CMSC_MIN_FIELD_TOLERANCE ..= CMSC_MAX_FIELD_TOLERANCE (the range
/// P3M is calibrated for) or not finite: CMSC_INVALID_ARGUMENT, nothing changed. The exact
/// methods have no error to choose and DDEF's is set by its grid (CmscParams.grid_points):
/// they ignore it. Takes effect at the next step or cmsc_coulomb_forces.
///
/// # Safety
/// `sim` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_field_tolerance(sim: *mut CmscSim, tolerance: f64) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let sim = unsafe { sim_mut(sim)? };
        sim.call(|s| Ok(s.set_field_tolerance(tolerance)?))
    })
}

/// Frees a simulation. NULL is a no-op. The handle must not be used afterwards.
///
/// # Safety
/// `sim` must be NULL or a live handle from cmsc_create, destroyed at most once.
#[no_mangle]
pub unsafe extern "C" fn cmsc_destroy(sim: *mut CmscSim) {
    if sim.is_null() {
        return;
    }
    // SAFETY: a live handle from Box::into_raw in cmsc_create, by the caller's contract.
    let owned = unsafe { Box::from_raw(sim) };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(owned)));
}
