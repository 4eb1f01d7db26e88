//! Collisions by projection (Liu 2013 §4.1): a vertex that ends a step inside an obstacle is
//! moved to its surface, its velocity into the obstacle is removed (perfectly inelastic), and
//! its tangential motion is scaled by `1 − friction`.
//!
//! Three kinds of contact, applied in this order after the integrator and pins (step.rs):
//! self-collision of the simulated mesh ([`SelfCollision`]), the ground and spheres
//! ([`Colliders`], here), and triangle-mesh obstacles ([`MeshColliders`]); the obstacles come
//! last so that no simulated vertex ends a step inside one.
//!
//! ## One contact law
//! The ground, the spheres and the mesh obstacles share one response, `respond`: at a contact
//! with outward normal `n`, on a surface moving at `u` (zero for the ground and spheres), with
//! `s` the vertex's start in the surface's frame, the tangential part of `p − s` is scaled by
//! `1 − friction`; of the velocity relative to the surface `v − u`, the part into the surface is
//! removed (perfectly inelastic) and the tangential part is scaled by `1 − friction`.
//!
//! ## Where self-collision differs, and why
//! Self-collision does not apply that law. A vertex it moves gets the velocity
//! `v = (x_{t+1} − x_t)/h` of its corrected position, with no friction: both sides of a
//! self-contact move (each vertex takes its own share in Jacobi passes, see
//! [`SelfCollision`]), so there is no surface velocity `u` to be relative to and no single
//! normal per contact; the velocity of the corrected positions keeps state and velocity
//! consistent (the next step's inertia `x + h v` continues the corrected motion) and is
//! inelastic along the separation, which is what the law above gives for a still surface.
//!
//! Triangle geometry (normals, validation, closest points via parry) lives in the leaf module
//! `geometry`, used by both the mesh obstacles and self-collision.

mod geometry;
mod mesh;
mod self_contact;

pub use mesh::{MeshCollider, MeshColliders, CONTACT_EPSILON, PASSES as MESH_PASSES};
pub use self_contact::{SelfCollision, PASSES as SELF_PASSES, TOLERANCE as SELF_TOLERANCE};

use crate::error::{Error, Result};
use crate::math::{is_finite3, Real, Vec3};

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
    /// Projects every non-pinned vertex out of every obstacle.
    ///
    /// # Arguments
    /// * `x_old` — positions at the start of the step (m); `x` — end-of-step positions (m),
    ///   projected in place; `v` — end-of-step velocities (m/s), corrected in place.
    /// * `pinned` — vertices to leave alone; `friction` in `[0, 1]`.
    ///
    /// Returns the number of vertices in contact.
    pub fn project(
        &self,
        x_old: &[Vec3],
        x: &mut [Vec3],
        v: &mut [Vec3],
        pinned: &[bool],
        friction: Real,
    ) -> usize {
        if self.ground.is_none() && self.spheres.is_empty() {
            return 0;
        }
        let mut contacts = 0;
        for i in 0..x.len() {
            if pinned[i] {
                continue;
            }
            let mut touched = false;
            if let Some(z0) = self.ground {
                if x[i].z < z0 {
                    x[i].z = z0;
                    respond(Vec3::z(), x_old[i], Vec3::zeros(), &mut x[i], &mut v[i], friction);
                    touched = true;
                }
            }
            for s in &self.spheres {
                let r = x[i] - s.center;
                let dist = r.norm();
                if dist < s.radius {
                    let normal = if dist > 0.0 { r / dist } else { Vec3::z() };
                    x[i] = s.center + normal * s.radius;
                    respond(normal, x_old[i], Vec3::zeros(), &mut x[i], &mut v[i], friction);
                    // friction may have pulled the point back inside along the tangent
                    let r = x[i] - s.center;
                    if r.norm() < s.radius {
                        x[i] = s.center + r.normalize() * s.radius;
                    }
                    touched = true;
                }
            }
            contacts += touched as usize;
        }
        contacts
    }
}

/// The contact law of the module docs, for the ground, spheres and mesh obstacles: at a surface
/// with outward unit `normal` moving at `u` (m/s), with `s` (m) the vertex's start in the
/// surface's frame, the tangential displacement `p − s` and the tangential velocity relative to
/// the surface are scaled by `1 − friction`; the relative velocity into the surface is removed.
/// `p` (m) and `v` (m/s) are corrected in place.
fn respond(normal: Vec3, s: Vec3, u: Vec3, p: &mut Vec3, v: &mut Vec3, friction: Real) {
    let disp = *p - s;
    *p -= (disp - normal * normal.dot(&disp)) * friction;
    let rel = *v - u;
    let vn = normal.dot(&rel);
    *v = u + normal * vn.max(0.0) + (rel - normal * vn) * (1.0 - friction);
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
        assert_eq!(c.project(&x_old, &mut x, &mut v, &[false], 1.0), 1);
        assert_eq!(x[0], Vec3::new(0.0, 0.0, 0.0));
        assert_eq!(v[0], Vec3::zeros());
        let mut x = [Vec3::new(1.0, 0.0, -0.2)];
        let mut v = [Vec3::new(10.0, 0.0, -3.0)];
        c.project(&x_old, &mut x, &mut v, &[false], 0.0);
        assert_eq!(x[0], Vec3::new(1.0, 0.0, 0.0));
        assert_eq!(v[0], Vec3::new(10.0, 0.0, 0.0));
    }

    #[test]
    fn sphere_pushes_out_radially_and_skips_pins() {
        let c = Colliders { ground: None, spheres: vec![Sphere { center: Vec3::zeros(), radius: 1.0 }] };
        let x_old = [Vec3::new(2.0, 0.0, 0.0), Vec3::new(0.0, 0.0, 0.5)];
        let mut x = [Vec3::new(0.5, 0.0, 0.0), Vec3::new(0.0, 0.0, 0.5)];
        let mut v = [Vec3::new(-1.0, 0.0, 0.0), Vec3::zeros()];
        assert_eq!(c.project(&x_old, &mut x, &mut v, &[false, true], 0.0), 1);
        assert!((x[0] - Vec3::new(1.0, 0.0, 0.0)).norm() < 1e-15);
        assert_eq!(v[0], Vec3::zeros());
        assert_eq!(x[1], Vec3::new(0.0, 0.0, 0.5));
    }
}
