//! Damping in the inertial prediction `y = x_t + h D(v_t)` of the IMEX step ([Paper](crate#references)
//! Eq. (12)) and the velocity of Verlet's half kick: Liu 2013 §4.1's ether drag `α` and a
//! relative damping that lets motion settle without slowing the whole object.
//!
//! `D(v)_i = α (γ v_i + (1 − γ) v̄)`, with `α = 1 − damping` (ether drag, per step),
//! `γ = e^{−c h}` for the relative damping rate `c` (1/s, so the same rate at any step size)
//! and the reference velocity `v̄ = Σ_{j∈R} m_j v_j / Σ_{j∈R} m_j` over the pinned vertices `R`
//! when there are pins, else over all vertices (the centre of mass). Relative to that motion,
//! velocities decay as `e^{−c t}`: a cloth hanging from its pins comes to rest, while an
//! unpinned object falls, drifts and is pushed at full speed (`D` keeps its momentum
//! `Σ m_i D(v)_i = α Σ m_i v_i`) and only its deformation and spin are damped.

use crate::error::{Error, Result};
use crate::math::{Real, Vec3};
use crate::model::Model;

/// The simulated vertices split into parts (a scene's objects), each with its own relative
/// damping rate and its own reference motion. Empty: one part, at
/// [`SimParams::relative_damping`](crate::SimParams::relative_damping).
#[derive(Debug, Clone, Default)]
pub(crate) struct Parts {
    /// Part of each vertex (empty: all in part 0).
    of_vertex: Vec<u32>,
    /// Relative damping rate `c` of each part (1/s).
    rates: Vec<Real>,
}

impl Parts {
    /// Parts `of_vertex` (one per vertex of `n`) with `rates` (1/s, one per part).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch, a part index out of range, or a rate
    /// that is negative or not finite.
    pub fn new(of_vertex: &[u32], rates: &[Real], n: usize) -> Result<Self> {
        if let Some(k) = rates.iter().position(|c| !(c.is_finite() && *c >= 0.0)) {
            return Err(Error::invalid("relative_damping", Some(k), "must be finite and >= 0 (1/s)"));
        }
        if of_vertex.is_empty() {
            return Ok(Parts::default());
        }
        if of_vertex.len() != n {
            let reason = format!("length {} does not match the simulation's {n} vertices", of_vertex.len());
            return Err(Error::invalid("part", None, reason));
        }
        if let Some(i) = of_vertex.iter().position(|&p| p as usize >= rates.len()) {
            let reason = format!("part {} out of range for {} parts", of_vertex[i], rates.len());
            return Err(Error::invalid("part", Some(i), reason));
        }
        Ok(Parts { of_vertex: of_vertex.to_vec(), rates: rates.to_vec() })
    }

    /// Every part's rate set to `rate` (1/s).
    pub fn set_all_rates(&mut self, rate: Real) {
        self.rates.iter_mut().for_each(|c| *c = rate);
    }

    #[inline]
    fn of(&self, i: usize) -> usize {
        self.of_vertex.get(i).map_or(0, |&p| p as usize)
    }
}

/// `D` of the module docs for one step: the factors and each part's reference velocity at `v_t`.
#[derive(Debug, Clone)]
pub(crate) struct Damping<'m> {
    alpha: Real,
    h: Real,
    /// `γ = e^{−c h}` per part.
    gamma: Vec<Real>,
    /// `v̄` per part (m/s).
    reference: Vec<Vec3>,
    model: &'m Model,
}

impl<'m> Damping<'m> {
    /// `D` for `model` at velocities `v` (m/s).
    pub fn new(model: &'m Model, v: &[Vec3]) -> Self {
        let p = &model.params;
        let rates =
            if model.parts.rates.is_empty() { vec![p.relative_damping] } else { model.parts.rates.clone() };
        let gamma: Vec<Real> = rates.iter().map(|c| (-c * p.time_step).exp()).collect();
        let mut reference = vec![Vec3::zeros(); gamma.len()];
        if gamma.iter().any(|&g| g < 1.0) {
            let mut mass = vec![0.0; gamma.len()];
            for i in reference_set(model) {
                let k = model.parts.of(i);
                reference[k] += v[i] * model.mass[i];
                mass[k] += model.mass[i];
            }
            for (r, m) in reference.iter_mut().zip(&mass) {
                *r /= *m;
            }
        }
        Damping { alpha: p.alpha(), h: p.time_step, gamma, reference, model }
    }

    /// `D(v)_i` for vertex `i` of velocity `v` (m/s).
    #[inline]
    pub fn velocity(&self, i: usize, v: &Vec3) -> Vec3 {
        let k = self.model.parts.of(i);
        let g = self.gamma[k];
        if g < 1.0 {
            self.alpha * (g * v + (1.0 - g) * self.reference[k])
        } else {
            self.alpha * v
        }
    }

    /// `h D(v)_i` (m), the inertial displacement; without relative damping exactly `v (α h)`, as
    /// Liu 2013's ether drag always computed it.
    #[inline]
    pub fn displacement(&self, i: usize, v: &Vec3) -> Vec3 {
        if self.gamma[self.model.parts.of(i)] < 1.0 {
            self.h * self.velocity(i, v)
        } else {
            v * (self.alpha * self.h)
        }
    }

    /// The adjoint `v̄ = Dᵀ ȳ`, written to `v_bar`: `α γ_k ȳ_i` for `i` in part `k`, plus
    /// `α (1 − γ_k) m_i / Σ_{R_k} m · Σ_{j ∈ k} ȳ_j` for `i` in part `k`'s reference set `R_k`.
    pub fn transpose(&self, y_bar: &[Vec3], v_bar: &mut [Vec3]) {
        let (model, parts) = (self.model, &self.model.parts);
        let mut total = vec![Vec3::zeros(); self.gamma.len()];
        for (i, (vb, yb)) in v_bar.iter_mut().zip(y_bar).enumerate() {
            let k = parts.of(i);
            *vb = self.alpha * self.gamma[k] * yb;
            total[k] += yb;
        }
        if self.gamma.iter().all(|&g| g >= 1.0) {
            return;
        }
        let mut mass = vec![0.0; self.gamma.len()];
        for i in reference_set(model) {
            mass[parts.of(i)] += model.mass[i];
        }
        for i in reference_set(model) {
            let k = parts.of(i);
            v_bar[i] += self.alpha * (1.0 - self.gamma[k]) * model.mass[i] / mass[k] * total[k];
        }
    }
}

/// The vertices whose mean motion is their part's reference: a part's pinned vertices, or all
/// of its vertices when none is pinned.
fn reference_set(model: &Model) -> impl Iterator<Item = usize> + '_ {
    let parts = &model.parts;
    let mut pinned_part = vec![false; parts.rates.len().max(1)];
    for &i in &model.pins.indices {
        pinned_part[parts.of(i as usize)] = true;
    }
    let pinned = &model.pins.pinned;
    (0..model.n_vertices()).filter(move |&i| pinned[i] || !pinned_part[parts.of(i)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Pins, SimParams};
    use crate::springs::Springs;

    fn model(rate: Real, pins: &[u32]) -> Model {
        let x: Vec<Vec3> = (0..4).map(|i| Vec3::new(i as Real, 0.0, 0.0)).collect();
        let params =
            SimParams { relative_damping: rate, time_step: 0.1, damping: 0.2, ..SimParams::default() };
        let mut m = Model::new(params, vec![1.0, 2.0, 3.0, 4.0], Springs::new(&x, &[], &[]).unwrap(), &x);
        m.pins = Pins::from_indices(pins, &x).unwrap();
        m
    }

    fn velocities() -> Vec<Vec3> {
        vec![
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.0, 2.0, 0.0),
            Vec3::new(0.0, 0.0, -3.0),
            Vec3::new(5.0, 1.0, 1.0),
        ]
    }

    #[test]
    fn without_relative_damping_it_is_the_ether_drag() {
        let (m, v) = (model(0.0, &[]), velocities());
        let d = Damping::new(&m, &v);
        for v in &v {
            assert_eq!(d.velocity(0, v), 0.8 * v);
            assert_eq!(d.displacement(0, v), v * (0.8 * 0.1));
        }
    }

    #[test]
    fn unpinned_it_keeps_momentum_and_damps_motion_relative_to_the_centre_of_mass() {
        let (m, v) = (model(2.0, &[]), velocities());
        let d = Damping::new(&m, &v);
        let momentum = |w: &[Vec3]| -> Vec3 { w.iter().zip(&m.mass).map(|(v, m)| v * *m).sum() };
        let dv: Vec<Vec3> = v.iter().enumerate().map(|(i, v)| d.velocity(i, v)).collect();
        assert!((momentum(&dv) - 0.8 * momentum(&v)).norm() < 1e-12);
        let com = momentum(&v) / 10.0;
        let gamma = (-2.0 * 0.1f64).exp();
        for (dv, v) in dv.iter().zip(&v) {
            assert!((dv / 0.8 - com - gamma * (v - com)).norm() < 1e-12);
        }
    }

    #[test]
    fn pinned_it_damps_relative_to_the_pins_and_its_adjoint_is_the_transpose() {
        let (m, v) = (model(2.0, &[1, 3]), velocities());
        let d = Damping::new(&m, &v);
        let pins = (v[1] * 2.0 + v[3] * 4.0) / 6.0;
        assert!((d.velocity(0, &pins) - 0.8 * pins).norm() < 1e-12, "the pins' mean motion is kept");
        // ⟨ȳ, D v⟩ = ⟨Dᵀ ȳ, v⟩ for the linear map D (D(v) is linear in v with the reference)
        let y_bar = velocities().iter().map(|v| v.yzx() * 0.5 - Vec3::new(0.1, 0.0, 0.3)).collect::<Vec<_>>();
        let mut v_bar = vec![Vec3::zeros(); 4];
        d.transpose(&y_bar, &mut v_bar);
        let lhs: Real = y_bar.iter().zip(&v).enumerate().map(|(i, (yb, v))| yb.dot(&d.velocity(i, v))).sum();
        let rhs: Real = v_bar.iter().zip(&v).map(|(vb, v)| vb.dot(v)).sum();
        assert!((lhs - rhs).abs() < 1e-12, "{lhs} vs {rhs}");
    }

    #[test]
    fn each_part_damps_relative_to_its_own_reference() {
        // part 0 = vertices 0, 1 with vertex 1 pinned; part 1 = vertices 2, 3, free, undamped
        let mut m = model(2.0, &[1]);
        m.parts = Parts::new(&[0, 0, 1, 1], &[2.0, 0.0], 4).unwrap();
        let v = velocities();
        let d = Damping::new(&m, &v);
        assert!((d.velocity(1, &v[1]) - 0.8 * v[1]).norm() < 1e-12, "part 0's pin keeps its motion");
        assert_eq!(d.velocity(2, &v[2]), 0.8 * v[2], "part 1 is not damped");
        assert_eq!(d.velocity(3, &v[3]), 0.8 * v[3]);
        let gamma = (-2.0 * 0.1f64).exp();
        assert!((d.velocity(0, &v[0]) - 0.8 * (gamma * v[0] + (1.0 - gamma) * v[1])).norm() < 1e-12);
        let y_bar = velocities().iter().map(|v| v.zxy() - Vec3::new(0.3, 0.1, 0.0)).collect::<Vec<_>>();
        let mut v_bar = vec![Vec3::zeros(); 4];
        d.transpose(&y_bar, &mut v_bar);
        let lhs: Real = y_bar.iter().zip(&v).enumerate().map(|(i, (yb, v))| yb.dot(&d.velocity(i, v))).sum();
        let rhs: Real = v_bar.iter().zip(&v).map(|(vb, v)| vb.dot(v)).sum();
        assert!((lhs - rhs).abs() < 1e-12, "{lhs} vs {rhs}");
        assert!(Parts::new(&[0, 0, 2, 1], &[1.0, 1.0], 4).is_err());
        assert!(Parts::new(&[0, 0, 1], &[1.0, 1.0], 4).is_err());
        assert!(Parts::new(&[0, 0, 1, 1], &[1.0, -1.0], 4).is_err());
    }
}
