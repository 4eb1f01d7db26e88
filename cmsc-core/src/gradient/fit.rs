//! Parameter estimation ([Paper](crate#references) §4.2.2–4.2.3): find the group charges (and
//! optionally a global stiffness scale) whose rollout ends closest to a target shape.
//!
//! The optimizer is a projected L-BFGS with box bounds (two-loop recursion on the free
//! variables, Armijo backtracking along the projected path, as in Bertsekas' projected Newton
//! methods). It is written here because the maintained Rust optimization crates (argmin's
//! L-BFGS) have no bound constraints, and the problems are tiny — one variable per charge group —
//! while each evaluation is a full forward and reverse rollout.

use std::collections::VecDeque;

use super::ChargeGroups;
use crate::error::{Error, Result};
use crate::math::{Real, Vec3};
use crate::system::System;

/// How [`fit`] runs.
#[derive(Debug, Clone, PartialEq)]
pub struct FitOptions {
    /// Optimizer iterations (each costs one rollout plus any line-search retries).
    pub max_iterations: u32,
    /// Per-group charge bounds `(lo, hi)` (C); `None` leaves the charges unbounded.
    pub charge_bounds: Option<Vec<(Real, Real)>>,
    /// Fit the group charges (otherwise they stay at the initial guess).
    pub fit_charges: bool,
    /// Also fit a global stiffness scale `σ` (every `k_s` times `σ`).
    pub fit_stiffness: bool,
    /// Bounds of `σ`.
    pub stiffness_bounds: (Real, Real),
    /// Stop when an iteration lowers the loss by less than this fraction of it.
    pub relative_tolerance: Real,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            max_iterations: 50,
            charge_bounds: None,
            fit_charges: true,
            fit_stiffness: false,
            stiffness_bounds: (1e-3, 1e3),
            relative_tolerance: 1e-10,
        }
    }
}

/// The outcome of [`fit`].
#[derive(Debug, Clone, PartialEq)]
pub struct FitReport {
    /// Fitted group charges (C).
    pub charges: Vec<Real>,
    /// Fitted stiffness scale (1 when not fitted).
    pub stiffness_scale: Real,
    /// Loss at the start and at the fitted parameters (m²).
    pub initial_loss: Real,
    /// Final loss (m²).
    pub loss: Real,
    /// Loss after each accepted iteration.
    pub history: Vec<Real>,
    /// Rollouts run (forward + reverse each).
    pub evaluations: u32,
}

/// Fits the group charges (and, with [`FitOptions::fit_stiffness`], a stiffness scale) so that
/// `steps` IMEX steps from the current state end at `target`, minimizing
/// `L = (1/2n) Σ_i |x_i(T) − target_i|²` with [`System::rollout_gradient`]. The system is left
/// as it was (state, charges, stiffness).
///
/// Charges are optimized in units of `max(|Q₀|∞, 1 nC)`. All-zero initial charges without an
/// external field or external charges are a stationary point of `L` (every Coulomb force is
/// bilinear in the charges), so start from a non-zero guess.
///
/// # Errors
/// As [`System::rollout_gradient`] at the initial guess (later failures, e.g. a divergent trial
/// step, only shorten the line search); [`Error::InvalidArgument`] for bounds that are not
/// `lo ≤ hi` with one pair per group or that exclude the initial guess.
pub fn fit(
    sys: &mut System,
    steps: u32,
    groups: &ChargeGroups,
    initial_charges: &[Real],
    target: &[Vec3],
    options: &FitOptions,
) -> Result<FitReport> {
    let n_groups = groups.n_groups();
    if initial_charges.len() != n_groups {
        return Err(Error::invalid(
            "group_charges",
            None,
            format!("has {} values for {n_groups} groups", initial_charges.len()),
        ));
    }
    let q_ref = initial_charges.iter().fold(1e-9, |m: Real, q| m.max(q.abs()));
    let mut lo = vec![Real::NEG_INFINITY; n_groups];
    let mut hi = vec![Real::INFINITY; n_groups];
    if let Some(bounds) = &options.charge_bounds {
        if bounds.len() != n_groups {
            return Err(Error::invalid(
                "charge_bounds",
                None,
                format!("{} pairs for {n_groups} groups", bounds.len()),
            ));
        }
        for (g, &(l, h)) in bounds.iter().enumerate() {
            if l.is_nan() || h.is_nan() || l > h {
                return Err(Error::invalid("charge_bounds", Some(g), format!("({l}, {h}) is not lo <= hi")));
            }
            (lo[g], hi[g]) = (l / q_ref, h / q_ref);
        }
    }
    let mut z: Vec<Real> = initial_charges.iter().map(|q| q / q_ref).collect();
    if !options.fit_charges {
        (lo, hi) = (z.clone(), z.clone());
    }
    if options.fit_stiffness {
        let (l, h) = options.stiffness_bounds;
        if !(l > 0.0 && l <= 1.0 && h >= 1.0 && h.is_finite()) {
            return Err(Error::invalid(
                "stiffness_bounds",
                None,
                format!("({l}, {h}) must satisfy 0 < lo <= 1 <= hi < inf (the scale starts at 1)"),
            ));
        }
        z.push(1.0);
        lo.push(l);
        hi.push(h);
    }
    if let Some(g) = (0..n_groups).find(|&g| z[g] < lo[g] || z[g] > hi[g]) {
        return Err(Error::invalid("group_charges", Some(g), "initial guess outside its bounds"));
    }
    let k0 = sys.springs().stiffness().to_vec();
    let mut objective = Objective { sys, steps, groups, target, q_ref, n_groups, k0: &k0, evaluations: 0 };
    let result = minimize(&mut objective, z, &lo, &hi, options);
    let evaluations = objective.evaluations;
    if options.fit_stiffness {
        objective.sys.set_stiffness(&k0)?;
    }
    let (z, initial_loss, loss, history) = result?;
    Ok(FitReport {
        charges: z[..n_groups].iter().map(|v| v * q_ref).collect(),
        stiffness_scale: if options.fit_stiffness { z[n_groups] } else { 1.0 },
        initial_loss,
        loss,
        history,
        evaluations,
    })
}

/// The loss and gradient in the optimizer's scaled variables `z = (Q / q_ref, σ)`.
struct Objective<'a> {
    sys: &'a mut System,
    steps: u32,
    groups: &'a ChargeGroups,
    target: &'a [Vec3],
    q_ref: Real,
    n_groups: usize,
    k0: &'a [Real],
    evaluations: u32,
}

impl Objective<'_> {
    fn eval(&mut self, z: &[Real]) -> Result<(Real, Vec<Real>)> {
        self.evaluations += 1;
        let sigma = z.get(self.n_groups).copied();
        if let Some(sigma) = sigma {
            let k: Vec<Real> = self.k0.iter().map(|k| k * sigma).collect();
            self.sys.set_stiffness(&k)?;
        }
        let charges: Vec<Real> = z[..self.n_groups].iter().map(|v| v * self.q_ref).collect();
        let r = self.sys.rollout_gradient(self.steps, self.groups, &charges, self.target)?;
        let mut grad: Vec<Real> = r.grad_charges.iter().map(|g| g * self.q_ref).collect();
        if let Some(sigma) = sigma {
            grad.push(r.grad_stiffness_scale / sigma); // ∂L/∂σ at k = σ k₀
        }
        Ok((r.loss, grad))
    }
}

type Minimum = (Vec<Real>, Real, Real, Vec<Real>);

/// Projected L-BFGS on the box `[lo, hi]`; returns `(z, initial loss, loss, history)`.
fn minimize(
    obj: &mut Objective<'_>,
    z0: Vec<Real>,
    lo: &[Real],
    hi: &[Real],
    opt: &FitOptions,
) -> Result<Minimum> {
    const MEMORY: usize = 8;
    const ARMIJO: Real = 1e-4;
    let project = |z: &mut [Real]| z.iter_mut().enumerate().for_each(|(i, v)| *v = v.clamp(lo[i], hi[i]));
    let mut z = z0;
    project(&mut z);
    let (mut f, mut g) = obj.eval(&z)?;
    let initial = f;
    let mut history = Vec::new();
    let mut memory: VecDeque<(Vec<Real>, Vec<Real>)> = VecDeque::new();
    for _ in 0..opt.max_iterations {
        // Variables at a bound with the gradient pushing outwards are held.
        let free: Vec<bool> =
            (0..z.len()).map(|i| !((z[i] <= lo[i] && g[i] > 0.0) || (z[i] >= hi[i] && g[i] < 0.0))).collect();
        let gf: Vec<Real> = g.iter().zip(&free).map(|(&gi, &fr)| if fr { gi } else { 0.0 }).collect();
        if gf.iter().all(|&v| v == 0.0) || f == 0.0 {
            break;
        }
        let mut d = two_loop(&gf, &memory);
        d.iter_mut().zip(&free).for_each(|(di, &fr)| *di = if fr { -*di } else { 0.0 });
        if dot(&d, &gf) >= 0.0 || memory.is_empty() {
            // Steepest descent, scaled so the largest change is 10 % of the charge unit.
            let gmax = gf.iter().fold(0.0, |m: Real, v| m.max(v.abs()));
            d = gf.iter().map(|v| -0.1 * v / gmax).collect();
            memory.clear();
        }
        let mut step = 1.0;
        let mut accepted = None;
        for _ in 0..40 {
            let mut trial: Vec<Real> = z.iter().zip(&d).map(|(zi, di)| zi + step * di).collect();
            project(&mut trial);
            let descent: Real = g.iter().zip(trial.iter().zip(&z)).map(|(gi, (t, zi))| gi * (t - zi)).sum();
            match obj.eval(&trial) {
                Ok((ft, gt)) if ft.is_finite() && ft <= f + ARMIJO * descent => {
                    accepted = Some((trial, ft, gt));
                    break;
                }
                // A larger loss, or a trial step that diverged (the system is restored): shorten.
                Ok(_) | Err(Error::Diverged { .. }) => step *= 0.5,
                Err(e) => return Err(e),
            }
        }
        let Some((z_new, f_new, g_new)) = accepted else { break };
        let s: Vec<Real> = z_new.iter().zip(&z).map(|(a, b)| a - b).collect();
        let y: Vec<Real> = g_new.iter().zip(&g).map(|(a, b)| a - b).collect();
        if dot(&s, &y) > 1e-12 * norm(&s) * norm(&y) {
            if memory.len() == MEMORY {
                memory.pop_front();
            }
            memory.push_back((s, y));
        }
        let decrease = f - f_new;
        (z, f, g) = (z_new, f_new, g_new);
        history.push(f);
        if decrease <= opt.relative_tolerance * f.abs() {
            break;
        }
    }
    Ok((z, initial, f, history))
}

/// L-BFGS two-loop recursion: `H g` for the inverse-Hessian approximation of `memory`.
fn two_loop(g: &[Real], memory: &VecDeque<(Vec<Real>, Vec<Real>)>) -> Vec<Real> {
    let mut q = g.to_vec();
    let mut alphas = Vec::with_capacity(memory.len());
    for (s, y) in memory.iter().rev() {
        let a = dot(s, &q) / dot(y, s);
        q.iter_mut().zip(y).for_each(|(qi, yi)| *qi -= a * yi);
        alphas.push(a);
    }
    if let Some((s, y)) = memory.back() {
        let gamma = dot(s, y) / dot(y, y);
        q.iter_mut().for_each(|v| *v *= gamma);
    }
    for ((s, y), a) in memory.iter().zip(alphas.iter().rev()) {
        let b = dot(y, &q) / dot(y, s);
        q.iter_mut().zip(s).for_each(|(qi, si)| *qi += (a - b) * si);
    }
    q
}

fn dot(a: &[Real], b: &[Real]) -> Real {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[Real]) -> Real {
    dot(a, a).sqrt()
}
