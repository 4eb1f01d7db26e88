//! Gradients of a loss on the final positions of a rollout with respect to charges and spring
//! stiffness, through the IMEX steps ([Paper](crate#references) §3.2, Eqs. (13)–(17)), and a
//! fitter that uses them ([`fit()`]).
//!
//! # What is differentiated
//! The loss is `L = (1/2n) Σ_i |x_i(T) − target_i|²` after `T` steps of [`System::step`] from the
//! current state. The parameters are the charges `Q_g` of charge groups, a vertex carrying
//! `q_i = Σ_g w_gi Q_g` ([`ChargeGroups`]), and a global stiffness scale `σ` (every `k_s` times
//! `σ`, derivative taken at `σ = 1`).
//!
//! The rollout runs the steps [`System::step`] runs (the iterations as
//! [`crate::SimParams::acceleration`] and [`crate::SimParams::iteration_tolerance`] say; only
//! the far field is evaluated whole every step), so a fit models the motion a bake makes. The
//! reverse pass (an adjoint, [Paper](crate#references) Eqs. (13)–(17) run backwards)
//! differentiates each step's implicit solve in one of two ways:
//!
//! - **Plain iterations are replayed.** Each of the `K` iterations the step took (fewer than
//!   [`crate::SimParams::iterations`] when a tolerance stopped it) is
//!   `xᵏ⁺¹ = A⁻¹ (M y + h² (J d(xᵏ) + q_t + f_ext))` with the prefactored `A = M + h²L`; the
//!   adjoint multiplies by `A⁻¹` and `h² J ∂d/∂x` alternately `K` times, the first `K` terms of
//!   the Neumann series of
//!
//!   ```text
//!   H⁻¹ = (A − h² J ∂d/∂x)⁻¹ = (M + h²(L − J ∂d/∂x))⁻¹        (Paper Eq. (17))
//!   ```
//!
//!   exact for the trajectory the forward pass produced at any `K` (finite differences of
//!   [`System::step`] agree to round-off, `tests/gradient.rs`).
//! - **Accelerated iterations are differentiated as converged.** Anderson acceleration's
//!   coefficients come from a least-squares solve and its safeguard branches on the energy;
//!   rather than follow them, the adjoint takes the step as the solution `x` of its implicit
//!   equation and applies the implicit function theorem: `Λ = H⁻¹ x̄` with `H` assembled at `x`
//!   and factored (sparse Cholesky, `3n × 3n`), which is the paper's
//!   `∂φ/∂x_t = H⁻¹(M + h² ∂q/∂x_t)`, `∂φ/∂v_t = H⁻¹ h M` (Eqs. (15)–(16); the paper prints
//!   `∂q/∂x_{t+1}`, but the explicit force is taken at `x_t`, and for a spring parameter `θ`
//!   `H⁻¹(h² ∂L/∂θ x − M ∂J/∂θ d)`, where differentiating `(M + h²L) x = M y + h² (J d + q)`
//!   gives `H⁻¹ h² (∂J/∂θ d − ∂L/∂θ x)`, what the code uses: finite differences agree). It is the exact
//!   derivative of the step where the iterations converged (finite differences agree to 10⁻⁸ at
//!   a tolerance of 10⁻¹², `tests/gradient.rs`) and an approximation of it where they stopped
//!   short; the fit's answer does not depend on that approximation, only its path does: the loss
//!   it minimizes is that of the steps actually run (a target made by steps at the defaults is
//!   recovered to 10⁻⁶ at h = 0.18 s and 0.01 s, `cmsc-ffi/tests/gradient.rs`; plain iterations
//!   in the rollout missed it by 6 % and 30 %). Where the iterations stopped short `H` can be
//!   indefinite (compressed springs); each spring's Hessian is then projected to positive
//!   semi-definite.
//!
//! # The Coulomb term
//! `∂q/∂x` and `∂q/∂Q` use the exact softened pair sum ([`adjoint::coulomb_vjp`], `O(n²)` per
//! step) whatever [`crate::FieldMethod`] the forward pass uses. With DDEF forces the gradient is
//! therefore that of the exact model evaluated along the DDEF trajectory, an approximation of
//! the DDEF map's own derivative (which is not smooth: grid and tetrahedra move with the
//! bounding box) with the error of the DDEF forces (≈1 %, `tests/gradient.rs`).
//!
//! # Limits
//! IMEX only (velocity Verlet is the explicit reference, not a fitting target); no strain-rate
//! damping of the springs ([`crate::Springs::set_damping`], an error); no collider
//! contacts during the rollout (projection is not differentiable; a contact is reported as an
//! error); external charges, the uniform field, gravity, damping and pins are differentiated
//! through. The tape stores `x_t`, `v_t` and the explicit forces of every step, `72 n T` bytes,
//! and `K + 1` iterates of one step during the reverse pass.

pub mod adjoint;
mod fit;

pub use fit::{fit, FitOptions, FitReport};

use adjoint::Adjoints;
use faer::linalg::solvers::SolveCore;
use faer::sparse::linalg::solvers::{Llt, SymbolicLlt};
use faer::sparse::linalg::LltError;
use faer::sparse::{SparseColMat, Triplet};
use faer::{Conj, Mat, Side};

use crate::coulomb::FieldMethod;
use crate::counters::StepTimings;
use crate::error::{Error, Result};
use crate::integrator::{imex_iterate, imex_start, LocalBuffers, Now};
use crate::linsolve::GlobalSolver;
use crate::math::{is_finite3, Mat3, Real, Vec3};
use crate::model::{Acceleration, Integrator, Model};
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
    /// `groups.vertex_charges(charges)`, as [`System::step`] runs them, and returns the loss
    /// against `target` with its gradient with respect to the group charges and a global
    /// stiffness scale (see the [module docs](crate::gradient)). The state, the charges and the time are restored afterwards,
    /// also on error.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for mismatched lengths, non-finite charges or targets, the
    /// Verlet integrator, springs that damp their strain rate, a collider contact during the
    /// rollout, or a tape larger than [`MAX_TAPE_BYTES`]; [`Error::Diverged`] if a step diverges; field backend errors.
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
        if self.model.springs.damped() {
            return Err(Error::invalid(
                "spring_damping",
                None,
                "gradients through the springs' strain-rate damping are not implemented; set every \
                 spring's damping to 0 for the rollout",
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
        // The rollout evaluates the whole field every step: the adjoint differentiates `q(x_t)`.
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
        let mut taken = Vec::with_capacity(steps as usize);
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
            taken.push(self.stepper.counts().iterations as usize);
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
            let solve = match model.params.acceleration {
                Acceleration::Plain => Solve::Replay(taken[t]),
                Acceleration::Anderson => Solve::Converged { x: &xs[t + 1] },
            };
            reverse.step(model, global, Now { x: &xs[t], v: &vs[t] }, &fs[t], solve, &mut adj)?;
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
    /// Free-vertex numbering of [`Solve::Converged`]'s matrix: `free[f]` is the vertex of block
    /// row `f`, `free_of[i]` the block row of vertex `i` (`u32::MAX` when pinned).
    free: Vec<u32>,
    free_of: Vec<u32>,
    /// Its symbolic Cholesky analysis, built on first use (the pattern is the springs').
    symbolic: Option<SymbolicLlt<u32>>,
}

/// How the reverse pass differentiates a step's implicit solve: as the forward pass solved it.
#[derive(Clone, Copy)]
enum Solve<'a> {
    /// Replays the plain iterations taken (their count) and reverses them one by one.
    Replay(usize),
    /// Differentiates the converged implicit step ending at `x`: Anderson's iterates are not
    /// replayed.
    Converged { x: &'a [Vec3] },
}

impl Reverse {
    /// Buffers for reversing steps of `model`; `d` are the stepper's spring directions (the
    /// fallback of springs whose ends coincide).
    fn new(model: &Model, d: &[Vec3]) -> Self {
        let z = |len: usize| vec![Vec3::zeros(); len];
        let (n, m, k) = (model.n_vertices(), model.springs.len(), model.params.iterations as usize);
        let free: Vec<u32> = (0..n as u32).filter(|&i| !model.pins.pinned[i as usize]).collect();
        let mut free_of = vec![u32::MAX; n];
        for (f, &i) in free.iter().enumerate() {
            free_of[i as usize] = f as u32;
        }
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
            free,
            free_of,
            symbolic: None,
        }
    }

    /// Reverses one step `(x_t, v_t) → (x_{t+1}, v_{t+1})`: on entry `adj.x`, `adj.v` are the
    /// adjoints of `x_{t+1}`, `v_{t+1}`; on return those of `x_t`, `v_t`, with this step's
    /// contributions added to `adj.q` and `adj.sigma`.
    ///
    /// # Errors
    /// As [`Reverse::converged`].
    #[allow(clippy::too_many_arguments)]
    fn step(
        &mut self,
        model: &Model,
        global: &mut GlobalSolver,
        now: Now<'_>,
        f_explicit: &[Vec3],
        solve: Solve<'_>,
        adj: &mut StateAdjoint,
    ) -> Result<()> {
        let p = &model.params;
        let h = p.time_step;
        let pinned = &model.pins.pinned;
        let damping = imex_start(model, Now { x: now.x, v: now.v }, &mut self.y, &mut self.iterates[0]);
        // v_{t+1} = (x_{t+1} − x_t)/h; pinned x_{t+1} are constants.
        let (x_bar, v_bar) = (&mut adj.x, &mut adj.v);
        for i in 0..x_bar.len() {
            self.g[i] = if pinned[i] { Vec3::zeros() } else { x_bar[i] + v_bar[i] / h };
            x_bar[i] = -v_bar[i] / h;
        }
        self.y_bar.fill(Vec3::zeros());
        self.f_bar.fill(Vec3::zeros());
        match solve {
            Solve::Replay(k) => self.replay(model, global, now.x, f_explicit, k, &mut adj.sigma),
            Solve::Converged { x } => self.converged(model, x, &mut adj.sigma)?,
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
        Ok(())
    }

    /// The `k` plain iterations of the step, replayed from `x⁰` (in `iterates[0]`) and reversed:
    /// with `ḡ` (in `g`) the adjoint of `xᵏ`, adds to `ȳ`, `f̄` and `σ̄` and leaves the adjoint of
    /// `x⁰` in `g`.
    fn replay(
        &mut self,
        model: &Model,
        global: &mut GlobalSolver,
        x_t: &[Vec3],
        f_explicit: &[Vec3],
        k: usize,
        sigma: &mut Real,
    ) {
        let h = model.params.time_step;
        let h2 = h * h;
        let (mass, springs, pinned) = (&model.mass, &model.springs, &model.pins.pinned);
        let mut timings = StepTimings::default();
        for i in 0..k {
            let (done, next) = self.iterates.split_at_mut(i + 1);
            next[0].copy_from_slice(&done[i]);
            let local = LocalBuffers { d: &mut self.d, jd: &mut self.jd };
            imex_iterate(model, global, h, &self.y, f_explicit, x_t, local, &mut next[0], &mut timings);
        }
        for i in (0..k).rev() {
            // xⁱ⁺¹_F = A⁻¹ (M y + h² (J dⁱ + f))_F: λ = A⁻¹ ḡ (A is symmetric).
            self.lambda.fill(Vec3::zeros()); // pinned entries stay 0, so no coupling is added
            let g = &self.g;
            global.solve_with(|i| g[i], &mut self.lambda);
            for (((yb, fb), l), m) in self.y_bar.iter_mut().zip(&mut self.f_bar).zip(&self.lambda).zip(mass) {
                *yb += l * *m;
                *fb += l * h2;
            }
            local_step(springs, &self.iterates[i], &mut self.d);
            *sigma +=
                h2 * adjoint::stiffness_scale_dot(springs, &self.lambda, &self.d, &self.iterates[i + 1]);
            adjoint::jt(springs, &self.lambda, &mut self.d_bar);
            self.d_bar.iter_mut().for_each(|e| *e *= h2);
            adjoint::local_step_vjp(
                springs,
                &self.iterates[i],
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
    }

    /// The converged implicit step `A x = M y + h² (J d(x) + f)` at its solution `x`
    /// ([Paper](crate#references) Eqs. (15)–(17)): by the implicit function theorem
    /// `H dx = M dy + h² df + h² (J d − L x) dσ` with `H = A − h² J ∂d/∂x = M + h² ∇²E_s(x)`
    /// (symmetric), so with `Λ = H⁻¹ ḡ` (`ḡ`, in `g`, the adjoint of `x`) it adds `ȳ = M Λ`,
    /// `f̄ = h² Λ` and `σ̄ = h² Λ·(J d − L x)`, and leaves `g = 0` (the solution does not depend on
    /// where the iterations started).
    ///
    /// `H` is assembled over the free vertices (`3 × 3` blocks: unlike `A` it is not a scalar
    /// matrix times `I₃`) and factored by sparse Cholesky, the symbolic analysis kept across
    /// steps. At a solution `H` is positive semi-definite (the step minimizes
    /// `½ |x − y|²_M + h² (E_s(x) − f·x)`), but iterations that stopped short of it can leave
    /// compressed springs whose negative stiffness makes `H` indefinite there; then each spring's
    /// Hessian is projected to positive semi-definite ([`adjoint::spring_hessian_block`]), an
    /// approximation of the derivative of a step that is itself an approximation of the solution.
    /// (Preconditioned by `A`, conjugate gradients needed 250–450 iterations per step to reach
    /// 10⁻⁶ on Suzanne at h = 0.18 s: cloth-like shells have floppy bending modes that `A` does
    /// not see.)
    ///
    /// # Errors
    /// [`Error::Factorization`] if the assembly or the factorization fails (out of memory).
    fn converged(&mut self, model: &Model, x: &[Vec3], sigma: &mut Real) -> Result<()> {
        let h2 = model.params.time_step * model.params.time_step;
        let (mass, springs) = (&model.mass, &model.springs);
        let mut llt = None;
        for projected in [false, true] {
            let h_ff = self.hessian(model, x, projected)?;
            let symbolic = match &self.symbolic {
                Some(s) => s.clone(),
                None => SymbolicLlt::try_new(h_ff.symbolic(), Side::Lower)
                    .map_err(|e| Error::Factorization(format!("adjoint symbolic analysis: {e:?}")))?,
            };
            self.symbolic = Some(symbolic.clone());
            match Llt::try_new_with_symbolic(symbolic, h_ff.as_ref(), Side::Lower) {
                Ok(f) => {
                    llt = Some(f);
                    break;
                }
                Err(LltError::Numeric(_)) => continue, // indefinite: project
                Err(e) => return Err(Error::Factorization(format!("adjoint factorization: {e:?}"))),
            }
        }
        let llt = llt.ok_or_else(|| {
            Error::Factorization(
                "the projected adjoint matrix M + h²∇²E lost definiteness in rounding".into(),
            )
        })?;
        let mut rhs = Mat::<Real>::zeros(3 * self.free.len(), 1);
        for (f, &i) in self.free.iter().enumerate() {
            for c in 0..3 {
                rhs[(3 * f + c, 0)] = self.g[i as usize][c];
            }
        }
        llt.solve_in_place_with_conj(Conj::No, rhs.as_mut());
        self.lambda.fill(Vec3::zeros());
        for (f, &i) in self.free.iter().enumerate() {
            self.lambda[i as usize] = Vec3::new(rhs[(3 * f, 0)], rhs[(3 * f + 1, 0)], rhs[(3 * f + 2, 0)]);
        }
        let lambda = &self.lambda;
        for ((yb, fb), (l, m)) in self.y_bar.iter_mut().zip(&mut self.f_bar).zip(lambda.iter().zip(mass)) {
            *yb += l * *m;
            *fb += l * h2;
        }
        local_step(springs, x, &mut self.d);
        *sigma += h2 * adjoint::stiffness_scale_dot(springs, lambda, &self.d, x);
        self.g.fill(Vec3::zeros());
        Ok(())
    }

    /// The lower triangle of `H_FF = M + h² ∇²E_s(x)` over the free vertices (block row `f` for
    /// vertex `free[f]`), each spring's Hessian exact or `projected`. Every spring contributes
    /// its entries (zeros included), so the pattern is the same at every `x`.
    fn hessian(&self, model: &Model, x: &[Vec3], projected: bool) -> Result<SparseColMat<u32, Real>> {
        let h2 = model.params.time_step * model.params.time_step;
        let springs = &model.springs;
        let mut entries = Vec::with_capacity(6 * self.free.len() + 21 * springs.len());
        let mut block = |r: u32, c: u32, b: &Mat3, lower_only: bool| {
            for i in 0..3 {
                for j in 0..3 {
                    if !lower_only || j <= i {
                        entries.push(Triplet::new(3 * r + i as u32, 3 * c + j as u32, b[(i, j)]));
                    }
                }
            }
        };
        for (f, &i) in self.free.iter().enumerate() {
            block(f as u32, f as u32, &(Mat3::identity() * model.mass[i as usize]), true);
        }
        let rest = springs.rest_lengths();
        for (s, (&[a, b], &k)) in springs.ends().iter().zip(springs.stiffness()).enumerate() {
            let kb = adjoint::spring_hessian_block(x[a as usize] - x[b as usize], rest[s], k, projected) * h2;
            let (fa, fb) = (self.free_of[a as usize], self.free_of[b as usize]);
            for f in [fa, fb].into_iter().filter(|&f| f != u32::MAX) {
                block(f, f, &kb, true);
            }
            if fa != u32::MAX && fb != u32::MAX {
                block(fa.max(fb), fa.min(fb), &(-kb), false);
            }
        }
        let n = 3 * self.free.len();
        SparseColMat::try_new_from_triplets(n, n, &entries)
            .map_err(|e| Error::Factorization(format!("adjoint assembly: {e:?}")))
    }
}
