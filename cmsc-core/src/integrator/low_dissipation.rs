//! The low-dissipation IMEX step, [`crate::Integrator::ImexLowDissipation`]: the implicit
//! midpoint rule for the springs on [Liu 2013](crate#references)'s local/global solver, the
//! explicit forces (Coulomb, external charges and field, gravity) as two half kicks around it
//! (Strang splitting), and an energy safeguard.
//!
//! ## One sub-step of length `h`
//! With `F(x)` the explicit forces (N) of [Paper](crate#references) Eq. (12)'s `q_t + f_ext`:
//!
//! ```text
//! v⁺      = vₙ + (h/2) M⁻¹ F(xₙ)                       half kick (F(xₙ) kept from the last step)
//! y       = xₙ + (h/2) v⁺
//! repeat K times (local/global, Eq. (12) with h → h/2 and no explicit force):
//!   d     = local step at zᵏ
//!   (M + (h/2)² L) zᵏ⁺¹ = M y + (h/2)² J d
//! xₙ₊₁    = 2 z − xₙ                                   z: the midpoint
//! v⁻      = 4 (z − xₙ)/h − v⁺
//! vₙ₊₁    = v⁻ + (h/2) M⁻¹ F(xₙ₊₁)                     half kick; F(xₙ₊₁) is the next step's
//! ```
//!
//! As `K → ∞`, `z` solves `M (z − y) = (h/2)² f_s(z)`: the implicit midpoint rule
//! `xₙ₊₁ = xₙ + h (v⁺ + v⁻)/2`, `v⁻ = v⁺ + h M⁻¹ f_s((xₙ + xₙ₊₁)/2)` for the springs
//! (`tests/implicit_midpoint.rs` checks it against Newton's method). It has no numerical damping
//! (it conserves quadratic energies exactly), unlike Eq. (12)'s implicit Euler, and stays stable
//! at any `h` for the springs; the kicks cost one Coulomb evaluation per step, as Eq. (12).
//! Pinned vertices move linearly to their targets over the step (`z` at the middle); damping
//! (ether drag, relative damping) acts on `vₙ` once per step, as in Eq. (12)'s `D(v)`. The
//! springs' strain-rate damping ([`crate::springs`]) is part of the implicit equation: its force
//! at the midpoint, from the rate `(|p_z| − |pₙ|)/(h/2)` at which each spring's length changes.
//!
//! ## The energy safeguard
//! An explicit kick at a close encounter of two charges can add energy that implicit Euler's
//! damping used to hide (the validation report's Fig. 5 sphere, standing in for the paper's
//! Fig. 5 bunny, q = 8 µC, leaves any box with undamped kicks). The step therefore tracks the
//! total energy `H = T + U_s + U_c + U_ext` against a target `H*`: the energy the system would
//! have if the step created none. `H*` starts at the
//! first step's `H` and changes only by what is done to the system: the work of edits between
//! steps (charges, fields, positions, velocities; pins and colliders, which act after the
//! integrator), the kinetic energy damping removes, and the work of the springs' strain-rate
//! damping ([`crate::springs::midpoint_damping_work`], its force at the midpoint times the
//! sub-step's displacement). It does not follow numerical losses.
//! After a (sub-)step:
//!
//! - `H − H* > τ` with `τ =` [`EXCESS_TOLERANCE`] `· (T + U_s + |U_c|)` at the step's start:
//!   the (sub-)step is redone as two of half the length, down to `h / 2^`[`MAX_HALVINGS`]; the
//!   factorizations of `M + (h/2^{l+1})² L` are built when first needed and kept;
//! - `H − H* > β` at the end of the step, with `β =` [`CAP_BAND`] `· (T + U_s + |U_c|)`
//!   (what halving left, or any excess at the deepest level): the velocities relative to the
//!   rigid motion of the free vertices are scaled down until `H = H* + β` ([`cap`]): linear and
//!   angular momentum are kept, deformation speed pays. The band leaves the midpoint rule's own
//!   small energy oscillation alone; capping it every time damps the motion.
//!
//! Pins and colliders act after this step (in `step.rs`); whatever they change in `H` counts as
//! work at the next step, like an edit.
//!
//! The Coulomb potential `U_c` comes from the field backend ([`crate::FieldSolver::potential`]):
//! exact for the direct sum; for DDEF (CPU or GPU gather) the potential of its own near/far split
//! on the CPU, reusing the grid of the force evaluation at the same positions (relative error
//! ~10⁻⁴, about the cost of one DDEF force evaluation, see [`crate::coulomb::Ddef`]); for the
//! exact GPU sum, for now, the exact pairwise sum on the CPU (`O(c²)` for `c` charged vertices).

use rayon::prelude::*;

use super::accel::Anderson;
use super::imex::{solve, LocalBuffers, Stop};
use super::{Explicit, Integrate, Next, Now};
use crate::counters::{timed, StepCounts, StepTimings};
use crate::error::Result;
use crate::linsolve::GlobalSolver;
use crate::math::{Real, Vec3};
use crate::model::{Damping, Model};
use crate::springs::midpoint_damping_work;

/// Deepest halving of a step: at most `2^8 = 256` sub-steps, reached only around close
/// encounters. Measured on the paper's torus at 0.01 kg per vertex and `h = 0.15 s`
/// (`examples/lowdiss_table.rs`, reference Verlet at 0.0001 s): depth 5 (`h/32`) cannot resolve
/// the closest encounters, the excess lands in spring energy that the velocity cap cannot
/// remove (the total energy peaked at 4.3× its initial value; mean error 0.11), while depth 8
/// keeps the mean energy error at 0.010 for 76 Coulomb evaluations per step instead of 48 (when
/// chosen; 70 measured again on 2026-11-29).
pub const MAX_HALVINGS: u32 = 8;

/// Energy excess, relative to the step's energy scale `T + U_s + |U_c|`, above which a
/// (sub-)step is redone as two half steps: 2 %, the prototype's choice. Smaller values halve
/// often in smooth motion (the midpoint rule's own energy error on the 0.01 kg torus at
/// `h = 0.15 s` is a few percent); larger ones leave more to the cap, which damps deformation.
pub const EXCESS_TOLERANCE: Real = 0.02;

/// Energy excess, relative to the step's energy scale, left alone at the end of a step: the
/// cap removes only what lies beyond it. 0.5 %, measured on the paper's torus (1 kg, h = 0.015,
/// 0.03, 0.15 s; `examples/lowdiss_table.rs`): capping every excess down to `H*` (no band) damps
/// deformation each time the midpoint rule's energy swings up, and doubled the position error at
/// h = 0.15 s (0.30 against 0.16 of the torus's size at 6 s); 1–2 % left the energy error
/// 1.2–3× larger.
pub const CAP_BAND: Real = 0.005;

/// Potential energy terms of a configuration (J).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Potential {
    /// Springs, `U_s`.
    pub spring: Real,
    /// Vertex–vertex Coulomb, `U_c` (from the backend).
    pub coulomb: Real,
    /// External charges and uniform field.
    pub external: Real,
    /// Gravity.
    pub gravity: Real,
}

impl Potential {
    fn total(&self) -> Real {
        self.spring + self.coulomb + self.external + self.gravity
    }

    /// The terms whose size does not depend on where the origin is.
    fn scale(&self) -> Real {
        self.spring + self.coulomb.abs()
    }

    fn magnitude(&self) -> Real {
        self.spring + self.coulomb.abs() + self.external.abs() + self.gravity.abs()
    }
}

/// The explicit forces and potential at the state's positions, from the last step.
#[derive(Debug, Default)]
struct AtState {
    force: Vec<Vec3>,
    potential: Potential,
    valid: bool,
}

/// What a step would commit: the target and the energy it ended with.
#[derive(Debug, Clone, Copy, Default)]
struct Pending {
    target: Real,
    end: Real,
    potential: Potential,
}

/// The low-dissipation step's state across steps: the factorizations per halving level, the
/// forces and potential at the current positions (reused by the next step's first kick), the
/// energy target `H*`, and scratch.
#[derive(Default)]
pub(crate) struct LowDissipation {
    /// `levels[l]` factors `M + (h/2^{l+1})² L`; cleared when masses, stiffness, pins or `h`
    /// change.
    levels: Vec<GlobalSolver>,
    /// The step `h` (s) the levels were factored for.
    levels_h: Real,
    at_state: AtState,
    /// `H*` (J), `None` before the first step.
    target: Option<Real>,
    /// `H` at the end of the last step (J), before pins and colliders acted.
    last: Real,
    pending: Pending,
    /// The current sub-step's start: positions, velocities, forces.
    xc: Vec<Vec3>,
    vc: Vec<Vec3>,
    fc: Vec<Vec3>,
    /// An attempt's end: positions, velocities, forces.
    xn: Vec<Vec3>,
    vn: Vec<Vec3>,
    fn_: Vec<Vec3>,
    y: Vec<Vec3>,
    v_plus: Vec<Vec3>,
    zero: Vec<Vec3>,
    pin_end: Vec<Vec3>,
    /// The drift's accelerated iterations (`SimParams::acceleration`).
    anderson: Anderson,
    /// Spring directions `d_s` (kept across steps as the fallback direction of springs whose
    /// ends coincide) and their gather `J d`.
    d: Vec<Vec3>,
    jd: Vec<Vec3>,
}

impl LowDissipation {
    /// Masses, stiffness, pins or `h` changed: drop every factorization.
    pub fn refactor_later(&mut self) {
        self.levels.clear();
    }

    /// The state or the model's energy changed outside a step (positions, velocities, charges,
    /// fields, parameters): the forces and potential at the state are stale. The energy change
    /// is counted as work done on the system at the next step.
    pub fn state_edited(&mut self) {
        self.at_state.valid = false;
    }

    /// Forgets the energy target: the next step starts a new one from its own energy.
    pub fn reset_target(&mut self) {
        self.target = None;
        self.at_state.valid = false;
    }

    /// The energy target `H*` and the energy at the end of the last step (J), to restore with
    /// [`LowDissipation::restore_energy_record`].
    pub fn energy_record(&self) -> (Option<Real>, Real) {
        (self.target, self.last)
    }

    /// Restores what [`LowDissipation::energy_record`] returned; the forces at the state are
    /// computed again.
    pub fn restore_energy_record(&mut self, (target, last): (Option<Real>, Real)) {
        (self.target, self.last) = (target, last);
        self.at_state.valid = false;
    }

    /// The energy target `H*` (J) after the last committed step, `None` before the first.
    pub fn target(&self) -> Option<Real> {
        self.target
    }

    fn resize(&mut self, model: &Model, x: &[Vec3]) {
        let n = x.len();
        if self.d.len() != model.springs.len() {
            self.d = model.springs.ends().iter().map(|&[a, b]| x[a as usize] - x[b as usize]).collect();
        }
        self.jd.resize(n, Vec3::zeros());
        for b in [
            &mut self.xc,
            &mut self.vc,
            &mut self.fc,
            &mut self.xn,
            &mut self.vn,
            &mut self.fn_,
            &mut self.y,
            &mut self.v_plus,
            &mut self.zero,
            &mut self.at_state.force,
        ] {
            b.resize(n, Vec3::zeros());
        }
    }
}

impl Integrate for LowDissipation {
    fn prepare(&mut self, _model: &Model) -> Result<()> {
        Ok(()) // the levels are factored when first needed, timed there
    }

    /// Advances `now` by one step `h` (with as many halvings as the safeguard asks) into `next`;
    /// pinned vertices end on their targets. [`Integrate::commit`] adopts it.
    fn advance(
        &mut self,
        model: &Model,
        explicit: &mut dyn Explicit,
        now: Now<'_>,
        next: Next<'_>,
        t: &mut StepTimings,
    ) -> Result<StepCounts> {
        let Now { x, v } = now;
        let (mass, h) = (&model.mass, model.params.time_step);
        let mut counts = StepCounts::default();
        if self.levels_h != h {
            self.levels.clear(); // a new step length (System::advance)
            self.levels_h = h;
        }
        self.resize(model, x);
        let (d, jd) = (&mut self.d, &mut self.jd);
        // F(xₙ) and U(xₙ): from the last step unless something was edited since
        if !self.at_state.valid {
            explicit.forces(model, x, &mut self.at_state.force, t)?;
            self.at_state.potential = explicit.potential(model, x, t)?;
            counts.coulomb_forces += 1;
            counts.coulomb_potentials += 1;
        }
        let u0 = self.at_state.potential;
        self.xc.copy_from_slice(x);
        self.fc.copy_from_slice(&self.at_state.force);
        // damping acts once on vₙ; what it removes leaves the target too
        let damping = Damping::new(model, v);
        self.vc.par_iter_mut().enumerate().for_each(|(i, vc)| *vc = damping.velocity(i, &v[i]));
        let (k_in, k_damped) = (kinetic(mass, v), kinetic(mass, &self.vc));
        let start = u0.total() + k_in;
        // edits since the last step (and pins, colliders after it) did work on the system
        let mut target = self.target.map_or(start, |h_star| h_star + (start - self.last));
        target += k_damped - k_in;
        let scale = k_damped + u0.scale();
        let tolerance = EXCESS_TOLERANCE * scale + 1e-12 * (k_damped + u0.magnitude());
        let band = CAP_BAND * scale;

        let full = 1u32 << MAX_HALVINGS;
        let (mut at, mut level, mut u) = (0u32, 0u32, u0);
        while at < full {
            let len = full >> level;
            let hl = h / (1u32 << level) as Real;
            let end = (at + len) as Real / full as Real;
            self.pin_end.clear();
            let pins = &model.pins;
            self.pin_end.extend(
                pins.indices
                    .iter()
                    .zip(&pins.targets)
                    .map(|(&i, target)| x[i as usize] + (target - x[i as usize]) * end),
            );
            let global = level_solver(&mut self.levels, model, level as usize, t)?;
            let bufs = Drift {
                y: &mut self.y,
                v_plus: &mut self.v_plus,
                zero: &self.zero,
                pin_end: &self.pin_end,
                anderson: &mut self.anderson,
            };
            let now = Now { x: &self.xc, v: &self.vc };
            counts.iterations += drift(
                model,
                global,
                hl,
                now,
                &self.fc,
                bufs,
                LocalBuffers { d: &mut *d, jd: &mut *jd },
                Next { x: &mut self.xn, v: &mut self.vn },
                t,
            );
            explicit.forces(model, &self.xn, &mut self.fn_, t)?;
            let un = explicit.potential(model, &self.xn, t)?;
            kick(hl, mass, &model.pins.pinned, &self.fn_, &mut self.vn);
            counts.coulomb_forces += 1;
            counts.coulomb_potentials += 1;
            counts.attempts += 1;
            // the work the springs' strain-rate damping did over the sub-step leaves the target
            let damped = midpoint_damping_work(&model.springs, &self.xc, &self.xn, hl);
            let excess = un.total() + kinetic(mass, &self.vn) - (target - damped);
            if excess > tolerance && level < MAX_HALVINGS {
                level += 1; // redo this sub-step as two halves; F(xc) still holds
                continue;
            }
            target -= damped;
            std::mem::swap(&mut self.xc, &mut self.xn);
            std::mem::swap(&mut self.vc, &mut self.vn);
            std::mem::swap(&mut self.fc, &mut self.fn_);
            u = un;
            at += len;
            counts.substeps += 1;
            // back up while this sub-step finished its parent's second half
            while level > 0 && at % (full >> (level - 1)) == 0 {
                level -= 1;
            }
        }
        let mut k_end = kinetic(mass, &self.vc);
        let excess = u.total() + k_end - target - band;
        if excess > 0.0 {
            cap(mass, &model.pins.pinned, &self.xc, &mut self.vc, excess);
            k_end = kinetic(mass, &self.vc);
            counts.capped = true;
        }
        next.x.copy_from_slice(&self.xc);
        next.v.copy_from_slice(&self.vc);
        self.pending = Pending { target, end: u.total() + k_end, potential: u };
        Ok(counts)
    }

    /// Adopts the step's energy and its forces at the new positions (the next step's first
    /// kick); when colliders moved vertices those forces are computed again.
    fn commit(&mut self, contacts: usize) {
        self.target = Some(self.pending.target);
        self.last = self.pending.end;
        std::mem::swap(&mut self.at_state.force, &mut self.fc);
        self.at_state.potential = self.pending.potential;
        self.at_state.valid = contacts == 0;
    }
}

/// The factorization of `M + (h/2^{l+1})² L` for halving level `l`, built (with those of the
/// levels above it) when first needed.
fn level_solver<'a>(
    levels: &'a mut Vec<GlobalSolver>,
    model: &Model,
    l: usize,
    t: &mut StepTimings,
) -> Result<&'a mut GlobalSolver> {
    while levels.len() <= l {
        let h = model.params.time_step / (1u64 << (levels.len() + 1)) as Real;
        let g = timed(&mut t.factorization, || {
            GlobalSolver::new(&model.mass, &model.springs, &model.pins.pinned, h)
        })?;
        levels.push(g);
    }
    Ok(&mut levels[l])
}

/// Buffers of one drift.
struct Drift<'a> {
    y: &'a mut [Vec3],
    v_plus: &'a mut [Vec3],
    /// Zeros: the local/global iteration's explicit force (the kicks carry it).
    zero: &'a [Vec3],
    /// Where each pin is at the sub-step's end (m), in pin order.
    pin_end: &'a [Vec3],
    anderson: &'a mut Anderson,
}

/// First half kick and the implicit-midpoint spring drift of the module docs: from `now` with
/// forces `f` (N) at `now.x` to `next.x = xₙ₊₁` and `next.v = v⁻`; `global` factors
/// `M + (h/2)² L`. Pinned vertices go to `pin_end` at constant velocity. Returns the
/// local/global iterations run.
#[allow(clippy::too_many_arguments)] // the sub-step's inputs and its three sets of buffers
fn drift(
    model: &Model,
    global: &mut GlobalSolver,
    h: Real,
    now: Now<'_>,
    f: &[Vec3],
    buf: Drift<'_>,
    local: LocalBuffers<'_>,
    next: Next<'_>,
    t: &mut StepTimings,
) -> u32 {
    let (Now { x, v }, Next { x: z, v: v_new }) = (now, next);
    let Drift { y, v_plus, zero, pin_end, anderson } = buf;
    let mass = &model.mass;
    v_plus.par_iter_mut().zip(y.par_iter_mut()).enumerate().for_each(|(i, (vp, y))| {
        *vp = v[i] + f[i] * (0.5 * h / mass[i]);
        *y = x[i] + *vp * (0.5 * h);
    });
    z.copy_from_slice(y);
    let pins = &model.pins;
    for (&i, &end) in pins.indices.iter().zip(pin_end) {
        z[i as usize] = (x[i as usize] + end) * 0.5;
    }
    // the same iterations as Eq. (12)'s, on the implicit equation of step h/2 (no explicit
    // force: the kicks carry it)
    let scheme = model.params.acceleration;
    let stop = Stop { tolerance: model.params.iteration_tolerance, origin: x };
    let iterations = solve(model, global, 0.5 * h, y, zero, scheme, stop, anderson, local, z, t);
    // xₙ₊₁ = 2z − xₙ, v⁻ = 4 (z − xₙ)/h − v⁺, written over z and v_new
    let four_over_h = 4.0 / h;
    z.par_iter_mut().zip(v_new.par_iter_mut()).enumerate().for_each(|(i, (z, vn))| {
        *vn = (*z - x[i]) * four_over_h - v_plus[i];
        *z = *z * 2.0 - x[i];
    });
    for (&i, &end) in pins.indices.iter().zip(pin_end) {
        let i = i as usize;
        z[i] = end;
        v_new[i] = (end - x[i]) / h;
    }
    iterations
}

/// Second half kick `v += (h/2) M⁻¹ f` on the free vertices.
fn kick(h: Real, mass: &[Real], pinned: &[bool], f: &[Vec3], v: &mut [Vec3]) {
    v.par_iter_mut()
        .enumerate()
        .filter(|(i, _)| !pinned[*i])
        .for_each(|(i, v)| *v += f[i] * (0.5 * h / mass[i]));
}

/// `Σ m_i |v_i|² / 2` (J), the same bits on any number of threads ([`crate::math::ordered_sum`]).
fn kinetic(mass: &[Real], v: &[Vec3]) -> Real {
    0.5 * crate::math::ordered_sum(v.len(), |i| mass[i] * v[i].norm_squared())
}

/// Removes `excess` (J, `> 0`) of kinetic energy from the free vertices without changing their
/// linear or angular momentum: with `v_cm` their centre-of-mass velocity and `ω = I⁻¹ L` their
/// best rigid rotation about the centre of mass `x_cm` (inertia tensor `I`, angular momentum
/// `L`), the rest `u_i = v_i − v_cm − ω × (x_i − x_cm)` is orthogonal to both in the mass
/// inner product (`Σ m u = 0`, `Σ m r × u = 0`), so `T = T_cm + T_rot + Σ m |u|²/2` and scaling
/// `u` by `s = sqrt(1 − excess / T_u)` removes exactly `excess` (all of `T_u` if it is less).
/// Without a definite `I` (one vertex, collinear vertices) the rotation is left in `u`.
pub(crate) fn cap(mass: &[Real], pinned: &[bool], x: &[Vec3], v: &mut [Vec3], excess: Real) {
    let free = || (0..x.len()).filter(|&i| !pinned[i]);
    let m_total: Real = free().map(|i| mass[i]).sum();
    if m_total <= 0.0 {
        return;
    }
    let v_cm = free().map(|i| v[i] * mass[i]).sum::<Vec3>() / m_total;
    let x_cm = free().map(|i| x[i] * mass[i]).sum::<Vec3>() / m_total;
    let (mut l, mut inertia) = (Vec3::zeros(), nalgebra::Matrix3::<Real>::zeros());
    for i in free() {
        let r = x[i] - x_cm;
        l += r.cross(&(v[i] - v_cm)) * mass[i];
        inertia += (nalgebra::Matrix3::identity() * r.norm_squared() - r * r.transpose()) * mass[i];
    }
    let omega = inertia.try_inverse().map_or(Vec3::zeros(), |inv| inv * l);
    let rigid = |i: usize| v_cm + omega.cross(&(x[i] - x_cm));
    let t_u: Real = 0.5 * free().map(|i| mass[i] * (v[i] - rigid(i)).norm_squared()).sum::<Real>();
    if t_u <= 0.0 {
        return;
    }
    let s = (1.0 - excess / t_u).max(0.0).sqrt();
    for i in free() {
        let r = rigid(i);
        v[i] = r + (v[i] - r) * s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_removes_the_excess_and_keeps_both_momenta() {
        let x: Vec<Vec3> =
            (0..7).map(|i| Vec3::new((i as Real).sin(), (1.3 * i as Real).cos(), 0.2 * i as Real)).collect();
        let mut v: Vec<Vec3> = (0..7)
            .map(|i| {
                Vec3::new(1.0 + 0.1 * i as Real, -0.3 * (i % 3) as Real, 0.5) + Vec3::z().cross(&x[i]) * 2.0
            })
            .collect();
        let mass: Vec<Real> = (0..7).map(|i| 0.5 + 0.1 * i as Real).collect();
        let pinned = vec![false; 7];
        let p = |v: &[Vec3]| v.iter().zip(&mass).map(|(v, m)| v * *m).sum::<Vec3>();
        let l = |v: &[Vec3]| x.iter().zip(v).zip(&mass).map(|((x, v), m)| x.cross(v) * *m).sum::<Vec3>();
        let (p0, l0, t0) = (p(&v), l(&v), kinetic(&mass, &v));
        cap(&mass, &pinned, &x, &mut v, 0.05);
        assert!((kinetic(&mass, &v) - (t0 - 0.05)).abs() < 1e-12, "{} vs {}", kinetic(&mass, &v), t0 - 0.05);
        assert!((p(&v) - p0).norm() < 1e-12);
        assert!((l(&v) - l0).norm() < 1e-12);
    }
}
