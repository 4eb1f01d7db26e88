//! Gradients of a loss on the final positions of a rollout with respect to charges and spring
//! stiffness, through the IMEX steps ([Paper](crate#references) §3.2, Eqs. (13)–(17)), and a
//! fitter that uses them ([`fit`]).
//!
//! # What is differentiated
//! The loss is `L = (1/2n) Σ_i |x_i(T) − target_i|²` after `T` steps of [`System::step`] from the
//! current state. The parameters are the charges `Q_g` of charge groups, a vertex carrying
//! `q_i = Σ_g w_gi Q_g` ([`ChargeGroups`]), and a global stiffness scale `σ` (every `k_s` times
//! `σ`, derivative taken at `σ = 1`).
//!
//! The gradient is that of the step **as computed** in the rollout: `K` plain local/global
//! iterations (see "Acceleration" below), each
//! `xᵏ⁺¹ = A⁻¹ (M y + h² (J d(xᵏ) + q_t + f_ext))` with the prefactored `A = M + h²L`. Its
//! reverse pass (an adjoint, [Paper](crate#references) Eq. (13)–(14) run backwards) multiplies
//! by `A⁻¹` and `h² J ∂d/∂x` alternately `K` times, which sums the first `K` terms of the
//! Neumann series of
//!
//! ```text
//! H⁻¹ = (A − h² J ∂d/∂x)⁻¹ = (M + h²(L − J ∂d/∂x))⁻¹        (Paper Eq. (17))
//! ```
//!
//! preconditioned by the same factorization the forward pass uses. So the gradient is exact
//! for the trajectory the forward pass produced, at any `K` (finite differences of
//! [`System::step`] agree to round-off, `tests/gradient.rs`), and it is the paper's
//! `∂φ/∂x_t = H⁻¹(M + h² ∂q/∂x_t)`, `∂φ/∂v_t = H⁻¹ h M` (Eqs. (15)–(16)) when the iterations
//! have converged. `H` is never factored: it changes every step and can be indefinite for
//! compressed springs, while `A` is fixed and positive definite.
//!
//! # Acceleration: differentiated with plain iterations
//! The forward rollout of a gradient always runs plain Liu 2013 iterations
//! ([`crate::Acceleration::Plain`], `K` = [`crate::SimParams::iterations`] of them), whatever
//! [`System::set_acceleration`] selects for [`System::step`], and the adjoint above replays
//! exactly those. The loss, the gradient and [`RolloutGradient::final_positions`] are therefore
//! those of the plain trajectory, which differs from an accelerated [`System::step`] run by the
//! iterations' residual (both tend to the same implicit-Euler trajectory as `K` grows). Anderson
//! acceleration's coefficients depend on the iterates through a least-squares solve and its
//! safeguard branches on the energy; following them in the adjoint would need the derivative of
//! that solve at every iteration.
//!
//! # The Coulomb term
//! `∂q/∂x` and `∂q/∂Q` use the exact softened pair sum ([`adjoint::coulomb_vjp`], `O(n²)` per
//! step) whatever [`crate::FieldMethod`] the forward pass uses. With DDEF forces the gradient is
//! therefore that of the exact model evaluated along the DDEF trajectory, an approximation of
//! the DDEF map's own derivative (which is not smooth: grid and tetrahedra move with the
//! bounding box) with the error of the DDEF forces (≈1 %, `tests/gradient.rs`).
//!
//! # Limits
//! IMEX only (velocity Verlet is the explicit reference, not a fitting target); no collider
//! contacts during the rollout (projection is not differentiable; a contact is reported as an
//! error); external charges, the uniform field, gravity, damping and pins are differentiated
//! through. The tape stores `x_t`, `v_t` and the explicit forces of every step, `72 n T` bytes,
//! and `K + 1` iterates of one step during the reverse pass.

pub mod adjoint;
mod fit;

pub use fit::{fit, FitOptions, FitReport};

use adjoint::Adjoints;

use crate::coulomb::FieldMethod;
use crate::counters::StepTimings;
use crate::error::{Error, Result};
use crate::integrator::{imex_iterate, imex_start, LocalBuffers, Now};
use crate::linsolve::GlobalSolver;
use crate::math::{is_finite3, Real, Vec3};
use crate::model::{Integrator, Model};
use crate::springs::local_step;
use crate::state::State;
use crate::step::Mode;
use crate::system::System;

/// Largest tape a rollout may allocate (bytes); beyond it the call is refused with the figure,
/// rather than exhausting memory.
pub const MAX_TAPE_BYTES: usize = 16 << 30;

/// Charge groups: vertex `i` carries `q_i = Σ_g w_gi Q_g`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChargeGroups {
    weights: Vec<Real>,
    n_groups: usize,
    n: usize,
}

impl ChargeGroups {
    /// Validates `n_groups × n` row-major weights (one row per group).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the length is not `n_groups × n`, `n_groups` is 0, or a
    /// weight is not finite.
    pub fn new(weights: &[Real], n_groups: usize, n: usize) -> Result<Self> {
        if n_groups == 0 {
            return Err(Error::invalid("n_groups", None, "at least one charge group is needed"));
        }
        if n_groups.checked_mul(n) != Some(weights.len()) {
            return Err(Error::invalid(
                "group_weights",
                None,
                format!("has {} values, expected n_groups × n = {n_groups} × {n}", weights.len()),
            ));
        }
        if let Some(i) = weights.iter().position(|w| !w.is_finite()) {
            return Err(Error::invalid("group_weights", Some(i), "is NaN or infinite"));
        }
        Ok(ChargeGroups { weights: weights.to_vec(), n_groups, n })
    }

    /// Number of groups (at least one).
    pub fn n_groups(&self) -> usize {
        self.n_groups
    }

    /// Number of vertices the weights are for.
    pub fn n_vertices(&self) -> usize {
        self.n
    }

    /// Vertex charges `q_i = Σ_g w_gi Q_g` (C).
    ///
    /// # Panics
    /// If `charges.len() != self.n_groups()`.
    pub fn vertex_charges(&self, charges: &[Real]) -> Vec<Real> {
        assert_eq!(charges.len(), self.n_groups);
        let mut q = vec![0.0; self.n];
        for (row, &qg) in self.weights.chunks_exact(self.n).zip(charges) {
            for (qi, &w) in q.iter_mut().zip(row) {
                *qi += w * qg;
            }
        }
        q
    }

    /// `Q̄_g = Σ_i w_gi q̄_i`: a per-vertex charge gradient pulled back to the groups.
    fn pull_back(&self, q_bar: &[Real]) -> Vec<Real> {
        self.weights.chunks_exact(self.n).map(|row| row.iter().zip(q_bar).map(|(w, g)| w * g).sum()).collect()
    }
}

/// Loss and gradient of a rollout ([`System::rollout_gradient`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RolloutGradient {
    /// `L = (1/2n) Σ_i |x_i(T) − target_i|²` (m²).
    pub loss: Real,
    /// `∂L/∂Q_g` per charge group (m²/C).
    pub grad_charges: Vec<Real>,
    /// `∂L/∂σ` for a stiffness scale `σ` applied to every spring, at `σ = 1` (m²).
    pub grad_stiffness_scale: Real,
    /// `x(T)` (m).
    pub final_positions: Vec<Vec3>,
}

/// What a rollout changes, restored afterwards: the state, the charges and the spring
/// directions the stepper keeps across steps.
struct Saved {
    state: State,
    charge: Vec<Real>,
    d: Vec<Vec3>,
}

impl System {
    fn save(&self) -> Saved {
        Saved {
            state: self.state.clone(),
            charge: self.model.charge.clone(),
            d: self.stepper.directions().to_vec(),
        }
    }

    fn restore(&mut self, s: Saved) {
        (self.state, self.model.charge) = (s.state, s.charge);
        self.stepper.set_directions(s.d);
        self.stepper.set_mode(Mode::Run, &self.model.params);
        self.stepper.sources_edited();
    }

    /// Runs `steps` IMEX steps from the current state with vertex charges
    /// `groups.vertex_charges(charges)` and plain local/global iterations (whatever
    /// [`System::set_acceleration`] says; see the [module docs](crate::gradient)), and returns the loss against `target` with its gradient
    /// with respect to the group charges and a global stiffness scale (see the [module
    /// docs](crate::gradient)). The state, the charges and the time are restored afterwards,
    /// also on error.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for mismatched lengths, non-finite charges or targets, the
    /// Verlet integrator, a collider contact during the rollout, or a tape larger than
    /// [`MAX_TAPE_BYTES`]; [`Error::Diverged`] if a step diverges; field backend errors.
    pub fn rollout_gradient(
        &mut self,
        steps: u32,
        groups: &ChargeGroups,
        charges: &[Real],
        target: &[Vec3],
    ) -> Result<RolloutGradient> {
        let n = self.n_vertices();
        if self.model.params.integrator != Integrator::Imex {
            return Err(Error::invalid(
                "params.integrator",
                None,
                "gradients are computed through the paper's IMEX integrator (Eq. 12) only, not through \
                 Verlet or the low-dissipation IMEX (its adjoint, halvings included, is not implemented); \
                 select IMEX",
            ));
        }
        if groups.n_vertices() != n {
            return Err(Error::invalid(
                "group_weights",
                None,
                format!("rows have {} weights for {n} vertices", groups.n_vertices()),
            ));
        }
        if charges.len() != groups.n_groups() {
            return Err(Error::invalid(
                "group_charges",
                None,
                format!("has {} values for {} groups", charges.len(), groups.n_groups()),
            ));
        }
        if let Some(g) = charges.iter().position(|q| !q.is_finite()) {
            return Err(Error::invalid("group_charges", Some(g), "is NaN or infinite"));
        }
        if target.len() != n {
            return Err(Error::invalid(
                "target",
                None,
                format!("has {} points for {n} vertices", target.len()),
            ));
        }
        if let Some(i) = target.iter().position(|p| !is_finite3(p)) {
            return Err(Error::invalid("target", Some(i), "is NaN or infinite"));
        }
        let tape_bytes = (steps as usize + 1).saturating_mul(n).saturating_mul(3 * 24);
        if tape_bytes > MAX_TAPE_BYTES {
            return Err(Error::invalid(
                "steps",
                None,
                format!(
                    "the rollout would store {:.1} GiB of states (72 bytes × n × steps), more than {} GiB",
                    tape_bytes as f64 / (1u64 << 30) as f64,
                    MAX_TAPE_BYTES >> 30
                ),
            ));
        }
        let saved = self.save();
        // The rollout and its adjoint run plain iterations (module docs, "Acceleration") and
        // evaluate the whole field every step: the adjoint differentiates `q(x_t)`.
        self.stepper.set_mode(Mode::Rollout, &self.model.params);
        let result = self
            .set_charges(&groups.vertex_charges(charges))
            .and_then(|()| self.rollout(steps, groups, target));
        self.restore(saved);
        result
    }

    fn rollout(&mut self, steps: u32, groups: &ChargeGroups, target: &[Vec3]) -> Result<RolloutGradient> {
        let n = self.n_vertices();
        // Forward: record x_t, v_t and the explicit forces q_t + f_ext of every step.
        let mut xs = vec![self.state.x.clone()];
        let mut vs = vec![self.state.v.clone()];
        let mut fs: Vec<Vec<Vec3>> = Vec::with_capacity(steps as usize);
        for t in 0..steps {
            let mut f = Vec::new();
            let contacts = self.stepper.step_recording(&self.model, &mut self.state, Some(&mut f))?;
            if contacts > 0 {
                return Err(Error::invalid(
                    "colliders",
                    None,
                    format!(
                        "{contacts} vertices touched a collider in step {t} of the rollout; gradients through \
                         contacts are not supported — move the colliders away or shorten the rollout"
                    ),
                ));
            }
            xs.push(self.state.x.clone());
            vs.push(self.state.v.clone());
            fs.push(f);
        }
        let x_final = &xs[steps as usize];
        let loss =
            x_final.iter().zip(target).map(|(x, t)| (x - t).norm_squared()).sum::<Real>() / (2.0 * n as Real);
        // Reverse: adjoints x̄_t, v̄_t of the state, q̄ of the vertex charges, σ̄ of the stiffness scale.
        let mut adj = StateAdjoint {
            x: x_final.iter().zip(target).map(|(x, t)| (x - t) / n as Real).collect(),
            v: vec![Vec3::zeros(); n],
            q: vec![0.0; n],
            sigma: 0.0,
        };
        let model = &self.model;
        let mut reverse = Reverse::new(model, self.stepper.directions());
        let global = self.stepper.global(model)?;
        for t in (0..steps as usize).rev() {
            reverse.step(model, global, Now { x: &xs[t], v: &vs[t] }, &fs[t], &mut adj);
        }
        Ok(RolloutGradient {
            loss,
            grad_charges: groups.pull_back(&adj.q),
            grad_stiffness_scale: adj.sigma,
            final_positions: x_final.clone(),
        })
    }
}

/// The adjoints the reverse pass carries from step to step.
struct StateAdjoint {
    /// `x̄_t`, `v̄_t`: of the state at the step being reversed (on entry, of `t + 1`).
    x: Vec<Vec3>,
    v: Vec<Vec3>,
    /// `q̄`: of the vertex charges, summed over steps.
    q: Vec<Real>,
    /// `σ̄`: of the stiffness scale, summed over steps.
    sigma: Real,
}

/// Buffers of the reverse pass.
struct Reverse {
    /// Iterates `x⁰ … x^K` of the step being reversed.
    iterates: Vec<Vec<Vec3>>,
    y: Vec<Vec3>,
    d: Vec<Vec3>,
    jd: Vec<Vec3>,
    lambda: Vec<Vec3>,
    g: Vec<Vec3>,
    y_bar: Vec<Vec3>,
    f_bar: Vec<Vec3>,
    d_bar: Vec<Vec3>,
    per_spring: Vec<Vec3>,
}

impl Reverse {
    /// Buffers for reversing steps of `model`; `d` are the stepper's spring directions (the
    /// fallback of springs whose ends coincide).
    fn new(model: &Model, d: &[Vec3]) -> Self {
        let z = |len: usize| vec![Vec3::zeros(); len];
        let (n, m, k) = (model.n_vertices(), model.springs.len(), model.params.iterations as usize);
        Reverse {
            iterates: vec![z(n); k + 1],
            y: z(n),
            d: d.to_vec(),
            jd: z(n),
            lambda: z(n),
            g: z(n),
            y_bar: z(n),
            f_bar: z(n),
            d_bar: z(m),
            per_spring: z(m),
        }
    }

    /// Reverses one step `(x_t, v_t) → (x_{t+1}, v_{t+1})`: on entry `adj.x`, `adj.v` are the
    /// adjoints of `x_{t+1}`, `v_{t+1}`; on return those of `x_t`, `v_t`, with this step's
    /// contributions added to `adj.q` and `adj.sigma`.
    fn step(
        &mut self,
        model: &Model,
        global: &mut GlobalSolver,
        now: Now<'_>,
        f_explicit: &[Vec3],
        adj: &mut StateAdjoint,
    ) {
        let p = &model.params;
        let (h, k_iter) = (p.time_step, p.iterations as usize);
        let h2 = h * h;
        let (mass, springs, pinned) = (&model.mass, &model.springs, &model.pins.pinned);
        let mut timings = StepTimings::default();
        // Replay the forward iterations, recording every iterate.
        let damping = imex_start(model, Now { x: now.x, v: now.v }, &mut self.y, &mut self.iterates[0]);
        for k in 0..k_iter {
            let (done, next) = self.iterates.split_at_mut(k + 1);
            next[0].copy_from_slice(&done[k]);
            let local = LocalBuffers { d: &mut self.d, jd: &mut self.jd };
            imex_iterate(model, global, h, &self.y, f_explicit, local, &mut next[0], &mut timings);
        }
        // v_{t+1} = (x_{t+1} − x_t)/h; pinned x_{t+1} are constants.
        let (x_bar, v_bar) = (&mut adj.x, &mut adj.v);
        for i in 0..x_bar.len() {
            self.g[i] = if pinned[i] { Vec3::zeros() } else { x_bar[i] + v_bar[i] / h };
            x_bar[i] = -v_bar[i] / h;
        }
        self.y_bar.fill(Vec3::zeros());
        self.f_bar.fill(Vec3::zeros());
        for k in (0..k_iter).rev() {
            // xᵏ⁺¹_F = A⁻¹ (M y + h² (J dᵏ + f))_F: λ = A⁻¹ ḡ (A is symmetric).
            self.lambda.fill(Vec3::zeros()); // pinned entries stay 0, so no coupling is added
            let g = &self.g;
            global.solve_with(|i| g[i], &mut self.lambda);
            for (((yb, fb), l), m) in self.y_bar.iter_mut().zip(&mut self.f_bar).zip(&self.lambda).zip(mass) {
                *yb += l * *m;
                *fb += l * h2;
            }
            local_step(springs, &self.iterates[k], &mut self.d);
            adj.sigma +=
                h2 * adjoint::stiffness_scale_dot(springs, &self.lambda, &self.d, &self.iterates[k + 1]);
            adjoint::jt(springs, &self.lambda, &mut self.d_bar);
            self.d_bar.iter_mut().for_each(|e| *e *= h2);
            adjoint::local_step_vjp(
                springs,
                &self.iterates[k],
                &self.d_bar,
                &mut self.per_spring,
                &mut self.g,
            );
            for (g, &p) in self.g.iter_mut().zip(pinned) {
                if p {
                    *g = Vec3::zeros();
                }
            }
        }
        // x⁰_F = y_F, y = x_t + h D(v_t): x̄ += ȳ, v̄ = h Dᵀ ȳ.
        for ((yb, g), xb) in self.y_bar.iter_mut().zip(&self.g).zip(x_bar.iter_mut()) {
            *yb += g;
            *xb += *yb;
            *yb *= h;
        }
        damping.transpose(&self.y_bar, v_bar);
        // f = q(x_t) + f_ext(x_t): gravity is constant.
        let (q, k_c, eps) = (&model.charge, p.coulomb_constant, model.softening());
        if p.coulomb != FieldMethod::Off {
            let out = Adjoints { x_bar, q_bar: &mut adj.q };
            adjoint::coulomb_vjp(now.x, q, k_c, eps, &self.f_bar, out);
        }
        let out = Adjoints { x_bar, q_bar: &mut adj.q };
        adjoint::external_vjp(&model.external, now.x, q, k_c, eps, &self.f_bar, out);
    }
}
