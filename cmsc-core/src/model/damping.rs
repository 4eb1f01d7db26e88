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

use crate::math::{Real, Vec3};
use crate::model::Model;

/// `D` of the module docs for one step: the factors and the reference velocity at `v_t`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Damping {
    alpha: Real,
    gamma: Real,
    reference: Vec3,
    h: Real,
}

impl Damping {
    /// `D` for `model` at velocities `v` (m/s).
    pub fn new(model: &Model, v: &[Vec3]) -> Self {
        let p = &model.params;
        let gamma = (-p.relative_damping * p.time_step).exp();
        let reference = if gamma < 1.0 {
            let (moment, mass) = reference_set(model)
                .map(|i| (v[i] * model.mass[i], model.mass[i]))
                .fold((Vec3::zeros(), 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
            moment / mass
        } else {
            Vec3::zeros()
        };
        Damping { alpha: p.alpha(), gamma, reference, h: p.time_step }
    }

    /// `D(v)_i` for a vertex of velocity `v` (m/s).
    #[inline]
    pub fn velocity(&self, v: &Vec3) -> Vec3 {
        if self.gamma < 1.0 {
            self.alpha * (self.gamma * v + (1.0 - self.gamma) * self.reference)
        } else {
            self.alpha * v
        }
    }

    /// `h D(v)` (m), the inertial displacement; without relative damping exactly `v (α h)`, as
    /// Liu 2013's ether drag always computed it.
    #[inline]
    pub fn displacement(&self, v: &Vec3) -> Vec3 {
        if self.gamma < 1.0 {
            self.h * self.velocity(v)
        } else {
            v * (self.alpha * self.h)
        }
    }

    /// The adjoint `v̄ = Dᵀ ȳ`, written to `v_bar`: `α γ ȳ_i`, plus `α (1 − γ) m_i / Σ_R m Σ_j ȳ_j`
    /// for `i` in the reference set.
    pub fn transpose(&self, model: &Model, y_bar: &[Vec3], v_bar: &mut [Vec3]) {
        for (vb, yb) in v_bar.iter_mut().zip(y_bar) {
            *vb = self.alpha * self.gamma * yb;
        }
        if self.gamma < 1.0 {
            let total: Vec3 = y_bar.iter().sum();
            let mass: Real = reference_set(model).map(|i| model.mass[i]).sum();
            let share = self.alpha * (1.0 - self.gamma) / mass;
            for i in reference_set(model) {
                v_bar[i] += share * model.mass[i] * total;
            }
        }
    }
}

/// The vertices whose mean motion is the reference: the pinned ones, or all when none is.
fn reference_set(model: &Model) -> impl Iterator<Item = usize> + '_ {
    let pins = &model.pins.indices;
    let all = if pins.is_empty() { 0..model.n_vertices() } else { 0..0 };
    pins.iter().map(|&i| i as usize).chain(all)
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
            assert_eq!(d.velocity(v), 0.8 * v);
            assert_eq!(d.displacement(v), v * (0.8 * 0.1));
        }
    }

    #[test]
    fn unpinned_it_keeps_momentum_and_damps_motion_relative_to_the_centre_of_mass() {
        let (m, v) = (model(2.0, &[]), velocities());
        let d = Damping::new(&m, &v);
        let momentum = |w: &[Vec3]| -> Vec3 { w.iter().zip(&m.mass).map(|(v, m)| v * *m).sum() };
        let dv: Vec<Vec3> = v.iter().map(|v| d.velocity(v)).collect();
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
        assert!((d.velocity(&pins) - 0.8 * pins).norm() < 1e-12, "the pins' mean motion is kept");
        // ⟨ȳ, D v⟩ = ⟨Dᵀ ȳ, v⟩ for the linear map D (D(v) is linear in v with the reference)
        let y_bar = velocities().iter().map(|v| v.yzx() * 0.5 - Vec3::new(0.1, 0.0, 0.3)).collect::<Vec<_>>();
        let mut v_bar = vec![Vec3::zeros(); 4];
        d.transpose(&m, &y_bar, &mut v_bar);
        let lhs: Real = y_bar.iter().zip(&v).map(|(yb, v)| yb.dot(&d.velocity(v))).sum();
        let rhs: Real = v_bar.iter().zip(&v).map(|(vb, v)| vb.dot(v)).sum();
        assert!((lhs - rhs).abs() < 1e-12, "{lhs} vs {rhs}");
    }
}
