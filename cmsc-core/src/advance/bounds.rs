//! The three step bounds of [`System::advance`] (the [module docs](super)): the charges', the
//! motion's and the contacts'.

use rayon::prelude::*;

use super::ramp::{Ramp, Sources};
use super::{AskedSteps, MEET_FRACTION, NEIGHBOUR_SUM_FACTOR};
use crate::math::{Real, Vec3};
use crate::model::Integrator;
use crate::system::System;

/// The largest step (s) each bound allows over a call.
pub(super) struct Limits {
    charge: Real,
    motion: Real,
    contact: Real,
}

impl Limits {
    pub(super) fn of(sys: &System, ramp: &Ramp, seconds: Real) -> Self {
        let bounds = sys.step_bounds;
        Limits {
            charge: ramp.sources.charge_bound(sys, bounds.charge),
            motion: ramp.motion_bound(sys, seconds, bounds.motion),
            contact: contact_bound(sys, seconds, bounds.contact),
        }
    }

    pub(super) fn least(&self) -> Real {
        self.charge.min(self.motion).min(self.contact)
    }

    pub(super) fn asked(&self, seconds: Real) -> AskedSteps {
        AskedSteps {
            charge: steps_for(seconds, self.charge),
            motion: steps_for(seconds, self.motion),
            contact: steps_for(seconds, self.contact),
        }
    }
}

impl Sources {
    /// The largest step the charges allow (s), module docs: the least of
    /// [`Sources::charge_bounds`].
    pub(super) fn charge_bound(&self, sys: &System, factor: Real) -> Real {
        self.charge_bounds(sys, factor).into_iter().fold(Real::INFINITY, Real::min)
    }

    /// The largest step each vertex's charge allows (s), module docs; `∞` for pinned vertices
    /// and where nothing is stiff.
    pub(super) fn charge_bounds(&self, sys: &System, factor: Real) -> Vec<Real> {
        let model = &sys.model;
        let x = &sys.state.x;
        let q = |i: usize| match &self.charge {
            Some((a, b)) => a[i].abs().max(b[i].abs()),
            None => model.charge[i].abs(),
        };
        let eps = model.softening();
        let mut near = vec![0.0; x.len()]; // Σ_j |q_j| / r_ij³ over spring neighbours
        let mut k_sum = vec![0.0; x.len()]; // Σ_s k_s at each vertex (explicit springs: Verlet)
        for (&[a, b], &k) in model.springs.ends().iter().zip(model.springs.stiffness()) {
            let (a, b) = (a as usize, b as usize);
            let r3 = (x[a] - x[b]).norm().max(eps).powi(3);
            near[a] += q(b) / r3;
            near[b] += q(a) / r3;
            k_sum[a] += k;
            k_sum[b] += k;
        }
        // Verlet takes the springs explicitly too: their stiffness at i is at most 2 Σ_s k_s
        // (Gershgorin), stable for h ω < 2
        let verlet = if model.params.integrator == Integrator::Verlet { 2.0 } else { 0.0 };
        let externals: Vec<_> = match &self.external {
            Some((a, b)) => a.charges.iter().chain(&b.charges).copied().collect(),
            None => model.external.charges.clone(),
        };
        let k_c = model.params.coulomb_constant;
        let bound = |(i, &s): (usize, &Real)| {
            if model.pins.pinned[i] {
                return Real::INFINITY;
            }
            let far: Real =
                externals.iter().map(|e| e.charge.abs() / (x[i] - e.position).norm().max(eps).powi(3)).sum();
            let stiffness = 2.0 * k_c * q(i) * (NEIGHBOUR_SUM_FACTOR * s + far) + verlet * k_sum[i];
            if stiffness > 0.0 {
                factor * (model.mass[i] / stiffness).sqrt()
            } else {
                Real::INFINITY
            }
        };
        near.iter().enumerate().map(bound).collect()
    }
}

impl Ramp {
    /// The largest step the motion allows (s) over a call of `seconds`, module docs.
    fn motion_bound(&self, sys: &System, seconds: Real, factor: Real) -> Real {
        let (model, x) = (&sys.model, &sys.state.x);
        let mut u = sys.state.v.clone();
        for ((&i, a), b) in model.pins.indices.iter().zip(&self.pins.0).zip(&self.pins.1) {
            u[i as usize] = (b - a) / seconds;
        }
        let total: Real = model.mass.iter().sum();
        let mean = u.iter().zip(&model.mass).map(|(u, m)| u * *m).fold(Vec3::zeros(), |s, t| s + t) / total;
        let fastest = u.iter().map(|u| (u - mean).norm()).fold(0.0, Real::max);
        let (lo, hi) = x.iter().fold((x[0], x[0]), |(lo, hi), p| (lo.inf(p), hi.sup(p)));
        let size = (hi - lo).norm();
        if fastest > 0.0 && size > 0.0 {
            factor * size / fastest
        } else {
            Real::INFINITY
        }
    }
}

/// The springs at each vertex, summed for the contact bound: `Σ_s k_s l_s²` (N m, the wave
/// speed's square times the mass), `Σ_s β_s k_s l_s²` (N m s, the same for the springs'
/// strain-rate damping) and the shortest rest length (m, ∞ without springs, the scale of the
/// bound's tolerance).
pub(super) struct SpringWaves {
    pub(super) wave: Vec<Real>,
    damped: Vec<Real>,
    shortest: Vec<Real>,
}

pub(super) fn spring_waves(model: &crate::model::Model, n: usize) -> SpringWaves {
    let mut w = SpringWaves { wave: vec![0.0; n], damped: vec![0.0; n], shortest: vec![Real::INFINITY; n] };
    let springs = &model.springs;
    let beta = |s: usize| springs.damping().get(s).copied().unwrap_or(0.0);
    for (s, ((&[a, b], &k), &l)) in
        springs.ends().iter().zip(springs.stiffness()).zip(springs.rest_lengths()).enumerate()
    {
        for i in [a as usize, b as usize] {
            w.wave[i] += k * l * l;
            w.damped[i] += beta(s) * k * l * l;
            w.shortest[i] = w.shortest[i].min(l);
        }
    }
    w
}

/// The largest step `h` (s) with `h c ≤ reach` for a vertex whose springs sum to `wave` and
/// `damped` ([`SpringWaves`]) at mass `m`: in a step of length `h` its springs act with
/// stiffness `k_s (1 + β_s/h)` (the damping is a second spring of stiffness `β_s k_s / h`, see
/// [`crate::springs`]), so `(h c)² = (h² wave + h damped)/m`, and `h` is the positive root of
/// `wave h² + damped h − m reach² = 0` (`reach √(m / wave)` without damping).
fn damped_contact_step(wave: Real, damped: Real, m: Real, reach: Real) -> Real {
    let c = m * reach * reach;
    // the root (−b + √(b² + 4ac)) / 2a written as 2c / (b + √(b² + 4ac)): no cancellation
    2.0 * c / (damped + (damped * damped + 4.0 * wave * c).sqrt())
}

/// The largest step the contacts allow (s) over a call of `seconds`, module docs: the least of
/// [`contact_bounds`], `∞` where nothing touches.
pub(super) fn contact_bound(sys: &System, seconds: Real, factor: Real) -> Real {
    contact_bounds(sys, seconds, factor)
        .map_or(Real::INFINITY, |h| h.into_iter().fold(Real::INFINITY, Real::min))
}

/// The largest step each vertex's contacts allow (s) over a call of `seconds`, module docs: every
/// free vertex with springs that meets an obstacle in the call ([`MEET_FRACTION`]) where it is
/// curved asks for `h ≤ factor R / c_i`, with `c_i² = Σ_s k_s (1 + β_s/h) l_s² / m_i` over its
/// springs (`β_s`: their strain-rate damping) and `R` the obstacle's radius of curvature there;
/// `∞` for the others. `None` when no vertex can ask (no obstacle, or the bound is off).
pub(super) fn contact_bounds(sys: &System, seconds: Real, factor: Real) -> Option<Vec<Real>> {
    let (model, x, v) = (&sys.model, &sys.state.x, &sys.state.v);
    let (colliders, meshes) = (&model.colliders, &model.mesh_colliders);
    if factor.is_infinite() || (colliders.spheres.is_empty() && meshes.meshes().is_empty()) {
        return None;
    }
    let w = spring_waves(model, x.len());
    let step = sys.state.steps;
    let bound = |i: usize| {
        if model.pins.pinned[i] || w.wave[i] <= 0.0 {
            return Real::INFINITY;
        }
        let tolerance = MEET_FRACTION * w.shortest[i];
        let radius = colliders
            .meet(&x[i], &v[i], seconds, tolerance)
            .min(meshes.meet(&x[i], &v[i], seconds, step, tolerance));
        if radius.is_infinite() {
            return Real::INFINITY;
        }
        damped_contact_step(w.wave[i], w.damped[i], model.mass[i], factor * radius)
    };
    Some((0..x.len()).into_par_iter().map(bound).collect())
}

/// `⌈seconds / h⌉` equal steps for a largest step `h` (s): at least 1, saturating at
/// `u32::MAX` (a cast of a float to u32 saturates; `h = ∞` gives 1).
pub(super) fn steps_for(seconds: Real, h: Real) -> u32 {
    ((seconds / h).ceil() as u32).max(1)
}
