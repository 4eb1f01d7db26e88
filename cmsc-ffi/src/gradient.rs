//! Gradients and charge fitting (appended to the v1 ABI): paper §3.2, Eqs. (13)–(17), through
//! `cmsc_core::gradient`. Both calls start from the simulation's current state and restore it.

use cmsc_core::{fit, ChargeGroups, FitOptions};

use crate::buffers::{input, output, vec3_input};
use crate::handle::{sim_mut, CmscSim};
use crate::panic::boundary;
use crate::status::{CmscStatus, FfiError};

/// The validated inputs shared by both calls.
///
/// # Safety
/// Pointers valid for their lengths (NULL only with length 0).
unsafe fn groups_and_target(
    n: usize,
    group_weights: *const f64,
    n_groups: usize,
    target: *const f64,
) -> Result<(ChargeGroups, Vec<cmsc_core::Vec3>), FfiError> {
    let len = n_groups.checked_mul(n).ok_or_else(|| FfiError::invalid("`n_groups` is too large"))?;
    // SAFETY: forwarded from the caller.
    let w = unsafe { input(group_weights, len, "group_weights") }?;
    let groups = ChargeGroups::new(w, n_groups, n)?;
    // SAFETY: forwarded from the caller.
    let target = unsafe { vec3_input(target, n, "target") }?;
    Ok((groups, target))
}

/// Runs `steps` IMEX steps from the current state with vertex charges
/// `q_i = Σ_g group_weights[g·n + i] · group_charges[g]` and returns the loss
/// `L = (1/2n) Σ_i |x_i(T) − target_i|²` (m²) with its gradient with respect to the group
/// charges (m²/C) and, if `out_grad_stiffness_scale` is not NULL, with respect to a scale applied
/// to every spring stiffness, at scale 1 (m²). The rollout runs the steps cmsc_step runs (the
/// iterations as cmsc_set_acceleration and cmsc_set_iteration_tolerance say), so the loss is
/// that of the motion cmsc_step makes. The gradient is an adjoint: exact through plain
/// iterations; through accelerated ones, the derivative of the converged implicit step (exact
/// where the iterations converged). With DDEF forces it uses the exact Coulomb derivative. The
/// state, charges and time are restored afterwards.
///
/// `group_weights`: n_groups × n doubles, row-major. `group_charges`: n_groups (C).
/// `target`: 3 n doubles (m). CMSC_INVALID_ARGUMENT also for the Verlet and the
/// low-dissipation IMEX integrators (only CMSC_INTEGRATOR_IMEX, the paper's Eq. 12, has an
/// adjoint) and for a collider contact during the rollout; CMSC_DIVERGED if a step diverges.
///
/// # Safety
/// `sim` must be NULL or a live handle; every pointer valid for its stated length; `out_loss`
/// writable; `out_grad_charges` writable for n_groups doubles.
#[no_mangle]
pub unsafe extern "C" fn cmsc_rollout_gradient(
    sim: *mut CmscSim,
    steps: u32,
    group_weights: *const f64,
    n_groups: usize,
    group_charges: *const f64,
    target: *const f64,
    out_loss: *mut f64,
    out_grad_charges: *mut f64,
    out_grad_stiffness_scale: *mut f64,
) -> CmscStatus {
    boundary(|| {
        // SAFETY (all blocks): pointers are valid for their lengths by the caller's contract;
        // the helpers check NULL, alignment and size.
        let sim = unsafe { sim_mut(sim) }?;
        let n = sim.sys.n_vertices();
        let (groups, target) = unsafe { groups_and_target(n, group_weights, n_groups, target) }?;
        let charges = unsafe { input(group_charges, n_groups, "group_charges") }?;
        let loss = unsafe { out_loss.as_mut() }.ok_or_else(|| FfiError::invalid("`out_loss` is NULL"))?;
        let grad = unsafe { output(out_grad_charges, n_groups, "out_grad_charges") }?;
        let grad_scale = unsafe { out_grad_stiffness_scale.as_mut() };
        let r = sim.call(|s| Ok(s.rollout_gradient(steps, &groups, charges, &target)?))?;
        *loss = r.loss;
        grad.copy_from_slice(&r.grad_charges);
        if let Some(g) = grad_scale {
            *g = r.grad_stiffness_scale;
        }
        Ok(())
    })
}

/// Fits the group charges so that `steps` IMEX steps from the current state end as close as
/// possible to `target` (the loss of cmsc_rollout_gradient), with L-BFGS for at most
/// `max_iterations` iterations. `group_charges` holds the initial guess (C; not all zero unless
/// an external field or external charges act — the Coulomb forces are bilinear in the charges)
/// and receives the fitted charges; `out_loss` the final loss (m²). The simulation is left as
/// it was. On error `group_charges` is unchanged.
///
/// # Safety
/// As cmsc_rollout_gradient; `group_charges` readable and writable for n_groups doubles.
#[no_mangle]
pub unsafe extern "C" fn cmsc_fit_charges(
    sim: *mut CmscSim,
    steps: u32,
    group_weights: *const f64,
    n_groups: usize,
    group_charges: *mut f64,
    target: *const f64,
    max_iterations: u32,
    out_loss: *mut f64,
) -> CmscStatus {
    boundary(|| {
        // SAFETY (all blocks): as in cmsc_rollout_gradient.
        let sim = unsafe { sim_mut(sim) }?;
        let n = sim.sys.n_vertices();
        let (groups, target) = unsafe { groups_and_target(n, group_weights, n_groups, target) }?;
        let charges = unsafe { output(group_charges, n_groups, "group_charges") }?;
        let loss = unsafe { out_loss.as_mut() }.ok_or_else(|| FfiError::invalid("`out_loss` is NULL"))?;
        let options = FitOptions { max_iterations, ..FitOptions::default() };
        let report = sim.call(|s| Ok(fit(s, steps, &groups, charges, &target, &options)?))?;
        charges.copy_from_slice(&report.charges);
        *loss = report.loss;
        Ok(())
    })
}
