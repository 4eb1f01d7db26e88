//! Collisions by projection (Liu 2013 §4.1): a vertex that ends a step inside an obstacle is
//! moved to its surface, its velocity into the obstacle is removed (perfectly inelastic), and
//! friction ([`FrictionLaw`]) removes part of its tangential motion.
//!
//! Three kinds of contact, applied in this order after the integrator and pins (step.rs):
//! self-collision of the simulated mesh ([`SelfCollision`]), the ground and spheres
//! ([`Colliders`], here), and triangle-mesh obstacles ([`MeshColliders`]); the obstacles come
//! last so that no simulated vertex ends a step inside one.
//!
//! ## One contact law
//! The ground, the spheres and the mesh obstacles share one response, `respond`. At a contact
//! with outward unit normal `n`, on a surface moving at `u` (zero for the ground and spheres),
//! with `s` the vertex's start in the surface's frame, `p` its projected end position, `v` its
//! velocity, `h` the step and `δ ≥ 0` the distance the projection moved it along `n`: the
//! relative velocity `w = v − u` splits into `w_n = n·w` and `w_t = w − n w_n`, the
//! displacement `p − s` into a normal part and `d_t`, and the part of `w_n` into the surface is
//! removed (perfectly inelastic): `w_n ← max(w_n, 0)`. The tangential motion then follows the
//! [`FrictionLaw`] in force (`friction` is [`SimParams::friction`](crate::SimParams::friction)
//! for the ground and spheres, each mesh's own value for the mesh obstacles):
//!
//! - [`FrictionLaw::PerStep`] (the default): `w_t ← (1 − f) w_t` and `d_t ← (1 − f) d_t` with
//!   `f = friction ∈ [0, 1]`, in every step in contact: each push takes it (a vertex on the
//!   ground and a sphere at once loses both). A step with self-collision pushes twice: the
//!   second push moves out again the vertices self-collision pressed back in, and takes no
//!   fraction from a vertex that the same kind of obstacle (the ground and spheres, or the mesh
//!   colliders) pushed in the first (before, it lost `f` twice: 0.81 for 0.9 at `f = 0.1` under
//!   a layer, `tests/contacts.rs`). The fraction removed per second grows with the number of
//!   steps: the same `f` slides less at a smaller `h`.
//! - [`FrictionLaw::Coulomb`]: Coulomb friction with coefficient `μ = friction ≥ 0`, as
//!   Blender's Cloth applies it to obstacle contacts (`collision.c`: the tangential relative
//!   velocity loses `min(μ Δv_n, |v_t|)`, with `μ` = Collision Friction / 100). The normal
//!   velocity change of the contact is
//!   `Δv_n = max(max(−w_n, 0), δ/h)`,
//!   the larger of the removed approach speed and the push-out speed (the two measure the same
//!   impulse: for a vertex resting on a surface both are `g cos θ h` per step on a slope of angle
//!   `θ`; their sum would count it twice). Then
//!   `w_t ← w_t (1 − min(μ Δv_n, |w_t|)/|w_t|)` and `d_t ← d_t (1 − min(μ Δv_n h, |d_t|)/|d_t|)`:
//!   the tangential impulse is at most `μ` times the normal one, so a vertex resting on a slope
//!   feels the deceleration `μ g cos θ` whatever `h` (it slides `½ g (sin θ − μ cos θ) t²` when
//!   `μ < tan θ`), and it sticks (static friction) while its tangential motion stays within that
//!   cone (`μ ≥ tan θ` holds it).
//!
//! In both laws `v ← u + n w_n + w_t` and `p ← s + n (n·(p − s)) + d_t`.
//!
//! ## Where self-collision differs, and why
//! Self-collision does not apply that law. Both sides of a self-contact move (each vertex
//! takes its share by mass in Gauss–Seidel sweeps, see [`SelfCollision`]), so there is no
//! surface velocity `u` to be relative to. A vertex it moves gets the velocity
//! `v = (x_{t+1} − x_t)/h` of its corrected position: that keeps state and velocity consistent
//! (the next step's inertia `x + h v` continues the corrected motion) and is inelastic along
//! the separation, which is what the law above gives for a still surface. Its friction between
//! layers is a rate per second, not a Coulomb coefficient ([`SelfCollision::with_friction`]): a
//! contact keeps the fraction `exp(−μ h)` of its slip per step, shared by mass as the normal
//! correction is, so it conserves linear momentum.
//!
//! Triangle geometry (normals, validation, closest points via parry) lives in the leaf module
//! `geometry`, used by both the mesh obstacles and self-collision.

mod geometry;

pub(crate) use geometry::{check_triangles, edges_of};
mod mesh;
mod self_contact;

pub use mesh::{
    MeshCollider, MeshColliders, CONTACT_EPSILON, EDGE_PASSES, PASSES as MESH_PASSES, SHARP_EDGE_COS,
};
pub use self_contact::{
    BroadPhase, ContactStep, SelfCollision, PASSES as SELF_PASSES, TOLERANCE as SELF_TOLERANCE,
};

use crate::error::{Error, Result};
use crate::math::{is_finite3, Real, Vec3};

/// How obstacle contacts (the ground, spheres and mesh obstacles) remove tangential motion; the
/// equations are in the [module docs](self#one-contact-law).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FrictionLaw {
    /// `friction ∈ [0, 1]` is the fraction of the tangential motion removed in every step in
    /// contact (the default, and the law of the C ABI's v1 callers): it depends on the step.
    #[default]
    PerStep,
    /// `friction = μ ≥ 0` is a Coulomb coefficient: the tangential impulse of a contact is at
    /// most `μ` times its normal impulse (Blender Cloth's law, `μ` = Collision Friction / 100);
    /// the same `μ` gives the same motion at any step.
    Coulomb,
}

impl FrictionLaw {
    /// Checks one friction value `value` (entry `index` of the argument `name`) under this law:
    /// `[0, 1]` for [`FrictionLaw::PerStep`], finite and `>= 0` for [`FrictionLaw::Coulomb`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `name` and `index`.
    pub fn check(self, name: &'static str, index: Option<usize>, value: Real) -> Result<()> {
        match self {
            FrictionLaw::PerStep if !(0.0..=1.0).contains(&value) => {
                Err(Error::invalid(name, index, format!("{value} is not in [0, 1] (per-step friction)")))
            }
            FrictionLaw::Coulomb if !(value.is_finite() && value >= 0.0) => {
                Err(Error::invalid(name, index, format!("{value} is not a finite Coulomb coefficient >= 0")))
            }
            _ => Ok(()),
        }
    }
}

/// One vertex's contact with an obstacle, as [`respond`] needs it (module docs' symbols).
#[derive(Debug, Clone, Copy)]
struct Contact {
    /// Outward unit normal `n`.
    normal: Vec3,
    /// The vertex's start in the surface's frame, `s` (m).
    start: Vec3,
    /// The surface's velocity `u` (m/s).
    velocity: Vec3,
    /// The distance `δ` (m, `>= 0`) the projection moved the vertex along `n`.
    push: Real,
}

/// The friction of a step's obstacle contacts: the law, its value and the step `h` (s).
#[derive(Debug, Clone, Copy)]
struct Friction {
    law: FrictionLaw,
    value: Real,
    h: Real,
}

impl Friction {
    /// This friction for a vertex whose friction from this kind of obstacle the step already
    /// took (`taken`, [`Colliders::project`]) or not: none under [`FrictionLaw::PerStep`], whose
    /// fraction is taken once per step; as it is under [`FrictionLaw::Coulomb`], whose
    /// tangential impulse follows the push's own normal impulse.
    fn for_vertex(self, taken: bool) -> Friction {
        match self.law {
            FrictionLaw::PerStep if taken => Friction { value: 0.0, ..self },
            _ => self,
        }
    }
}

/// A solid sphere that vertices cannot enter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sphere {
    /// Centre (m), world frame.
    pub center: Vec3,
    /// Radius (m), `> 0`.
    pub radius: Real,
}

impl Sphere {
    /// Validates spheres given as centres and radii.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch, a non-finite centre, or a radius that is
    /// not finite and positive.
    pub fn from_arrays(centers: &[Vec3], radii: &[Real]) -> Result<Vec<Sphere>> {
        if centers.len() != radii.len() {
            return Err(Error::invalid(
                "radii",
                None,
                format!("{} radii for {} centers", radii.len(), centers.len()),
            ));
        }
        centers
            .iter()
            .zip(radii)
            .enumerate()
            .map(|(i, (c, &r))| {
                if !is_finite3(c) {
                    Err(Error::invalid("centers", Some(i), "not finite"))
                } else if !(r.is_finite() && r > 0.0) {
                    Err(Error::invalid("radii", Some(i), format!("{r} is not a finite radius > 0 m")))
                } else {
                    Ok(Sphere { center: *c, radius: r })
                }
            })
            .collect()
    }
}

/// The obstacles of a scene.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Colliders {
    /// Ground plane height `z` (m), if any.
    pub ground: Option<Real>,
    /// Sphere obstacles.
    pub spheres: Vec<Sphere>,
}

impl Colliders {
    /// The least radius (m) of the spheres that a vertex at `p` moving at `v` (m/s) meets over
    /// `seconds`: keeping its velocity, it would come within `tolerance` (m) of the surface, or
    /// pass it; infinite where it meets none. The ground is flat: it has no radius to give.
    pub(crate) fn meet(&self, p: &Vec3, v: &Vec3, seconds: Real, tolerance: Real) -> Real {
        self.spheres
            .iter()
            .filter(|s| {
                let r = p - s.center;
                let dist = r.norm();
                let normal = if dist > 0.0 { r / dist } else { Vec3::z() };
                -normal.dot(v) * seconds - (dist - s.radius) > -tolerance
            })
            .map(|s| s.radius)
            .fold(Real::INFINITY, Real::min)
    }

    /// Whether there is no obstacle: no ground and no sphere.
    pub fn is_empty(&self) -> bool {
        self.ground.is_none() && self.spheres.is_empty()
    }

    /// Projects every non-pinned vertex out of every obstacle, with the contact law of the
    /// [module docs](self#one-contact-law).
    ///
    /// # Arguments
    /// * `x_old` — positions at the start of the step (m); `x` — end-of-step positions (m),
    ///   projected in place; `v` — end-of-step velocities (m/s), corrected in place.
    /// * `pinned` — vertices to leave alone; `friction` — under `law` (checked by
    ///   [`FrictionLaw::check`]); `h` — the step (s, `> 0`).
    /// * `taken` — one flag per vertex: whether this kind of obstacle (the ground and the
    ///   spheres) already took its friction from it in this step (`step.rs` pushes again the
    ///   vertices self-collision moved back into an obstacle). Under [`FrictionLaw::PerStep`],
    ///   a fraction per step, those lose none of their tangential motion again. The vertices
    ///   this push touches are flagged.
    ///
    /// Returns the number of vertices in contact.
    #[allow(clippy::too_many_arguments)] // the state, the pins and the friction of one step
    pub fn project(
        &self,
        x_old: &[Vec3],
        x: &mut [Vec3],
        v: &mut [Vec3],
        pinned: &[bool],
        friction: Real,
        law: FrictionLaw,
        h: Real,
        taken: &mut [bool],
    ) -> usize {
        if self.is_empty() {
            return 0;
        }
        let friction = Friction { law, value: friction, h };
        let mut contacts = 0;
        for i in 0..x.len() {
            if pinned[i] {
                continue;
            }
            let friction = friction.for_vertex(taken[i]);
            let contact = |normal, push| Contact { normal, start: x_old[i], velocity: Vec3::zeros(), push };
            let mut touched = false;
            if let Some(z0) = self.ground {
                if x[i].z < z0 {
                    let push = z0 - x[i].z;
                    x[i].z = z0;
                    respond(&contact(Vec3::z(), push), &mut x[i], &mut v[i], friction);
                    touched = true;
                }
            }
            for s in &self.spheres {
                let r = x[i] - s.center;
                let dist = r.norm();
                if dist < s.radius {
                    let normal = if dist > 0.0 { r / dist } else { Vec3::z() };
                    x[i] = s.center + normal * s.radius;
                    respond(&contact(normal, s.radius - dist), &mut x[i], &mut v[i], friction);
                    // friction may have pulled the point back inside along the tangent
                    let r = x[i] - s.center;
                    if r.norm() < s.radius {
                        x[i] = s.center + r.normalize() * s.radius;
                    }
                    touched = true;
                }
            }
            taken[i] |= touched;
            contacts += touched as usize;
        }
        contacts
    }
}

/// The contact law of the [module docs](self#one-contact-law), for the ground, spheres and mesh
/// obstacles: the relative velocity into the surface is removed, and the tangential relative
/// velocity `w_t` and displacement `d_t = (p − s)_t` lose what the friction law takes (scaled by
/// `1 − f` per step, or Coulomb's `min(μ Δv_n, |w_t|)` and `min(μ Δv_n h, |d_t|)` with
/// `Δv_n = max(max(−w_n, 0), δ/h)`). `p` (m) and `v` (m/s) are corrected in place.
fn respond(c: &Contact, p: &mut Vec3, v: &mut Vec3, friction: Friction) {
    let n = c.normal;
    let tangential = |a: Vec3| a - n * n.dot(&a);
    let d_t = tangential(*p - c.start);
    let w = *v - c.velocity;
    let w_n = n.dot(&w);
    let w_t = w - n * w_n;
    // the fractions of the tangential displacement removed and of the velocity kept (the
    // per-step law in the arithmetic it always had: `p` loses `f d_t`, `w_t` keeps `1 − f`)
    let (remove_d, keep_w) = match friction.law {
        FrictionLaw::PerStep => (friction.value, 1.0 - friction.value),
        FrictionLaw::Coulomb => {
            let dv_n = (-w_n).max(0.0).max(c.push / friction.h);
            let cap = friction.value * dv_n;
            (removed(d_t.norm(), cap * friction.h), 1.0 - removed(w_t.norm(), cap))
        }
    };
    *p -= d_t * remove_d;
    *v = c.velocity + n * w_n.max(0.0) + w_t * keep_w;
}

/// The fraction of a length `len >= 0` that removing up to `cap >= 0` of it takes:
/// `min(cap, len)/len` (0 for a zero length).
fn removed(len: Real, cap: Real) -> Real {
    if len > cap {
        cap / len
    } else if len > 0.0 {
        1.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ground_projection_with_full_friction_stops_sliding() {
        let c = Colliders { ground: Some(0.0), spheres: vec![] };
        let x_old = [Vec3::new(0.0, 0.0, 0.1)];
        let mut x = [Vec3::new(1.0, 0.0, -0.2)];
        let mut v = [Vec3::new(10.0, 0.0, -3.0)];
        let mut taken = [false];
        assert_eq!(
            c.project(&x_old, &mut x, &mut v, &[false], 1.0, FrictionLaw::PerStep, 0.01, &mut taken),
            1
        );
        assert_eq!(x[0], Vec3::new(0.0, 0.0, 0.0));
        assert_eq!(v[0], Vec3::zeros());
        // pushed again in the same step (`taken`): the fraction is not taken again
        let (mut x, mut v) = ([Vec3::new(1.0, 0.0, -0.2)], [Vec3::new(10.0, 0.0, -3.0)]);
        c.project(&x_old, &mut x, &mut v, &[false], 1.0, FrictionLaw::PerStep, 0.01, &mut taken);
        assert_eq!((x[0], v[0]), (Vec3::new(1.0, 0.0, 0.0), Vec3::new(10.0, 0.0, 0.0)));
        let mut x = [Vec3::new(1.0, 0.0, -0.2)];
        let mut v = [Vec3::new(10.0, 0.0, -3.0)];
        c.project(&x_old, &mut x, &mut v, &[false], 0.0, FrictionLaw::PerStep, 0.01, &mut [false]);
        assert_eq!(x[0], Vec3::new(1.0, 0.0, 0.0));
        assert_eq!(v[0], Vec3::new(10.0, 0.0, 0.0));
    }

    #[test]
    fn sphere_pushes_out_radially_and_skips_pins() {
        let c = Colliders { ground: None, spheres: vec![Sphere { center: Vec3::zeros(), radius: 1.0 }] };
        let x_old = [Vec3::new(2.0, 0.0, 0.0), Vec3::new(0.0, 0.0, 0.5)];
        let mut x = [Vec3::new(0.5, 0.0, 0.0), Vec3::new(0.0, 0.0, 0.5)];
        let mut v = [Vec3::new(-1.0, 0.0, 0.0), Vec3::zeros()];
        let mut taken = [false; 2];
        assert_eq!(
            c.project(&x_old, &mut x, &mut v, &[false, true], 0.0, FrictionLaw::PerStep, 0.01, &mut taken),
            1
        );
        assert_eq!(taken, [true, false]);
        assert!((x[0] - Vec3::new(1.0, 0.0, 0.0)).norm() < 1e-15);
        assert_eq!(v[0], Vec3::zeros());
        assert_eq!(x[1], Vec3::new(0.0, 0.0, 0.5));
    }

    #[test]
    fn coulomb_friction_removes_mu_times_the_normal_velocity_change_or_sticks() {
        // Δv_n = max(3 m/s removed, 0.2 m pushed / 0.1 s) = 3 m/s; μ = 0.5 takes 1.5 m/s of the
        // 10 m/s slip and 1.5 m/s × 0.1 s = 0.15 m of the 1 m tangential displacement
        let c = Colliders { ground: Some(0.0), spheres: vec![] };
        let x_old = [Vec3::new(0.0, 0.0, 0.1)];
        let mut x = [Vec3::new(1.0, 0.0, -0.2)];
        let mut v = [Vec3::new(10.0, 0.0, -3.0)];
        assert_eq!(
            c.project(&x_old, &mut x, &mut v, &[false], 0.5, FrictionLaw::Coulomb, 0.1, &mut [false]),
            1
        );
        assert!((x[0] - Vec3::new(0.85, 0.0, 0.0)).norm() < 1e-15, "{x:?}");
        assert!((v[0] - Vec3::new(8.5, 0.0, 0.0)).norm() < 1e-14, "{v:?}");
        // the push-out speed counts when it is the larger: 0.5 m / 0.1 s = 5 m/s > 3 m/s
        let (mut x, mut v) = ([Vec3::new(1.0, 0.0, -0.5)], [Vec3::new(10.0, 0.0, -3.0)]);
        c.project(&x_old, &mut x, &mut v, &[false], 0.5, FrictionLaw::Coulomb, 0.1, &mut [false]);
        assert!((v[0] - Vec3::new(7.5, 0.0, 0.0)).norm() < 1e-14, "{v:?}");
        // within the cone (μ Δv_n = 30 m/s > 10 m/s): it sticks where it started
        let (mut x, mut v) = ([Vec3::new(1.0, 0.0, -0.2)], [Vec3::new(10.0, 0.0, -3.0)]);
        c.project(&x_old, &mut x, &mut v, &[false], 10.0, FrictionLaw::Coulomb, 0.1, &mut [false]);
        assert_eq!((x[0], v[0]), (Vec3::zeros(), Vec3::zeros()));
    }

    #[test]
    fn friction_values_are_checked_by_law() {
        assert!(FrictionLaw::PerStep.check("f", None, 1.0).is_ok());
        assert!(FrictionLaw::PerStep.check("f", None, 1.5).is_err());
        assert!(FrictionLaw::Coulomb.check("f", None, 1.5).is_ok());
        for bad in [-0.1, Real::NAN, Real::INFINITY] {
            assert!(FrictionLaw::Coulomb.check("f", Some(2), bad).is_err(), "{bad}");
            assert!(FrictionLaw::PerStep.check("f", Some(2), bad).is_err(), "{bad}");
        }
    }
}
