//! Triangle-mesh obstacles; the method, momentum and energy are documented on [`MeshColliders`].
//! Here: the set of obstacles, their moves and the vertices' passes (stages 1–4); one
//! obstacle's surface, its queries and its curvature are in [`collider`], the contacts of the
//! simulated surface's edges with its sharp edges (stage 5) in [`edges`].

mod collider;
mod edges;

use parry3d_f64::math::Point;
use rayon::prelude::*;

use super::geometry::check_triangles;
use super::{Friction, FrictionLaw};
use crate::error::{Error, Result};
use crate::math::{is_finite3, Real, Vec3};

pub use collider::MeshCollider;
pub use edges::{EDGE_PASSES, SHARP_EDGE_COS};

/// Whether the obstacles moved for the step being taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Motion {
    /// Moved to their positions at this step's end: the step runs in their frame.
    Moving,
    /// Still during this step.
    Still,
}

/// Whether a move is the first for its step or replaces one made for the same step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Move {
    /// The first move for this step: its displacement starts where the obstacle is now.
    First,
    /// Moved again before the step: the earlier move's displacement is kept.
    Again,
}

/// How many times a vertex is moved off the surface after its first contact, for points near
/// corners or between close faces (each pass moves it off the nearest face). 4: a vertex in the
/// corner of a box touches at most 3 faces.
pub const PASSES: usize = 4;

/// Extra separation added to every placement (m): 1 nm, far below anything visible and 10⁶
/// times the rounding of `f64` coordinates near 1 m, so that a vertex placed at distance
/// `thickness = 0` still tells which side it is on at the next step.
pub const CONTACT_EPSILON: Real = 1e-9;

/// Triangle-mesh obstacles: static, moved or deforming surfaces that vertices cannot pass
/// through, projected like the ground and spheres ([Liu 2013](crate#references) §4.1).
///
/// For every free vertex `i`, after the integrator and pins, with `x_t` its position at the
/// start of the step and `p = x_{t+1}` the integrator's end position, against each mesh in turn:
///
/// 1. **Frame of the obstacle.** The obstacle's velocity `u` near `p` is the barycentric
///    interpolation of its vertices' velocities `(X_{t+1} − X_t)/h` over the closest triangle
///    (zero when it was not moved before this step). The start point in the obstacle's frame at
///    the end of the step is `s = x_t + h u`: a vertex resting on a moving obstacle is carried
///    with it.
/// 2. **Crossing (continuous).** A ray from `s` to `p` is cast against the triangles (parry's
///    BVH). If it hits, `p` goes back out through its closest surface point to distance
///    `thickness` on the side of `s`; where that point lies on the other side, or the path from
///    `s` to the new place passes through the surface (a step that crossed all of a thin box
///    ends closest to its far face), along the hit triangle's normal onto its plane instead, and
///    failing that at the hit point. Thin obstacles (a plane, a cloth-like sheet, a slab) are
///    not tunnelled through at any step size, and the motion along the surface after the hit
///    is kept for the response's friction to act on.
///    Placed at the hit point instead, a vertex pressed through the thickness in one step (a
///    taut rope's is at 1/120 s) lost the rest of its slide: friction beyond Coulomb's that grew
///    with the step (`a_rope_over_a_sphere_or_a_mesh_holds_a_load_up_to_the_capstan_ratio`).
/// 3. **Proximity and inside.** If `p` is within `thickness` of the surface, or inside a closed
///    mesh (pseudo-normal test, `TriMeshFlags::ORIENTED`), it is moved along the direction from
///    its closest surface point to distance `thickness` outside (up to [`PASSES`] times, for
///    corners where moving off one face lands near another).
/// 4. **Response** (as [`super::Colliders::project`], the
///    [contact law](super#one-contact-law)): with `n` the contact normal and `δ` how far stages
///    2–3 moved `p` along it, of the velocity relative to the obstacle `v − u` the normal
///    component into the obstacle is removed (perfectly inelastic); the tangential components
///    of `v − u` and `p − s` are scaled by `1 − friction` ([`FrictionLaw::PerStep`]) or lose
///    Coulomb's `μ Δv_n` and `μ Δv_n h` at most, with `Δv_n = max(max(−n·(v − u), 0), δ/h)`
///    ([`FrictionLaw::Coulomb`]).
///
/// 5. **Sharp edges** ([`MeshColliders::project_edges`], after every vertex was projected): an
///    edge of the simulated surface between two vertices outside a closed obstacle can still
///    cut through it across a convex edge (a cloth draped over a box: 22 mm on
///    `tests/mesh_colliders.rs`' cube, 33 mm measured in Blender). Where the surface's triangles
///    are known ([`crate::System::set_surface`]), for every convex edge sharper than 20°
///    ([`SHARP_EDGE_COS`]) and every surface edge near it, the surface edge's point closest to
///    it is kept `thickness` outside the obstacle grown by `thickness` (a rounded edge): pushed
///    radially off the edge when it is closer, out along the two faces' mean normal when it is
///    behind both faces (inside). The push is shared by the surface edge's ends in proportion
///    to their weights `1 − s`, `s` (pinned ends take none), as a least-change projection;
///    each vertex moves by the mean of its contacts' pushes (Jacobi: applied in turn, the order
///    of the springs made a symmetric drape drift), up to [`EDGE_PASSES`] times while contacts
///    remain. Then stage 4's response acts once on every vertex an edge moved, with the normal
///    along its total push and the mesh's friction (without it a cloth draped over a box slid
///    off over its frictionless edges), relative to the edge: its velocity and move in the
///    step at the point the vertex's spring met it (a moving box carries what rests across its
///    edge, as its faces do). Open meshes (sheets) have no inside and are left to the vertex
///    contacts. Cost: a BVH over the sharp edges (a box has 12) queried with every spring's
///    box, per pass.
///
/// ## Momentum and energy
/// The obstacle has infinite mass: the projection applies an impulse `m_i Δv_i` on every
/// touching vertex and nothing on the obstacle, so the system's linear and angular momentum are
/// not conserved while in contact (as with the ground). Relative to the obstacle the contact is
/// perfectly inelastic: the normal relative kinetic energy `½ m (n·(v − u))²` of every impacting
/// vertex is dissipated, and friction dissipates part of the tangential one. A moving
/// obstacle does work on the vertices it pushes (it can add energy: a rising plate lifts a
/// cloth); the projection's normal displacement can add potential (gravity, spring) energy.
///
/// Units: metres, seconds; positions in the world frame.
///
/// The triangle-mesh obstacles of a scene, and the step after which their last move applies.
#[derive(Debug, Clone, Default)]
pub struct MeshColliders {
    /// The obstacles.
    pub(crate) meshes: Vec<MeshCollider>,
    /// Number of vertices in the shared array they were set with.
    pub(crate) n_vertices: usize,
    /// The step (count of completed steps) whose end the last move's positions are for; the
    /// obstacles are still during other steps.
    pub(crate) moved_for_step: Option<u64>,
}

impl MeshColliders {
    /// Validates and builds mesh obstacles from one shared vertex array and one triangle array;
    /// mesh `k` owns triangles `first_triangle[k] .. first_triangle[k + 1]`.
    ///
    /// # Arguments
    /// * `vertices` — (m), world frame; `triangles` — indices into `vertices`.
    /// * `first_triangle` — `thickness.len() + 1` non-decreasing offsets from 0 to
    ///   `triangles.len()` (may be empty when there are no meshes); a mesh with no triangles
    ///   collides with nothing.
    /// * `thickness` — contact distance per mesh (m, `>= 0`); `friction` — per mesh, under
    ///   `law` ([`FrictionLaw::check`]: `[0, 1]` per step, a finite `μ >= 0` for Coulomb).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the argument: non-finite vertices, out-of-range or
    /// degenerate triangles, offsets that do not match or decrease, negative or
    /// non-finite thickness, friction that `law` does not accept.
    pub fn new(
        vertices: &[Vec3],
        triangles: &[[u32; 3]],
        first_triangle: &[u32],
        thickness: &[Real],
        friction: &[Real],
        law: FrictionLaw,
    ) -> Result<Self> {
        let k = thickness.len();
        if friction.len() != k {
            return Err(Error::invalid(
                "friction",
                None,
                format!("{} values for {k} meshes", friction.len()),
            ));
        }
        if let Some(i) = vertices.iter().position(|p| !is_finite3(p)) {
            return Err(Error::invalid("vertices", Some(i), "is NaN or infinite"));
        }
        check_offsets(first_triangle, k, triangles.len())?;
        check_triangles("triangles", triangles, vertices)?;
        if let Some(i) = thickness.iter().position(|t| !(t.is_finite() && *t >= 0.0)) {
            return Err(Error::invalid(
                "thickness",
                Some(i),
                format!("{} is not a finite distance >= 0 m", thickness[i]),
            ));
        }
        for (i, &f) in friction.iter().enumerate() {
            law.check("friction", Some(i), f)?;
        }
        let mut meshes = Vec::with_capacity(k);
        for m in 0..k {
            let own = &triangles[first_triangle[m] as usize..first_triangle[m + 1] as usize];
            // a mesh with no triangles collides with nothing
            if !own.is_empty() {
                meshes.push(MeshCollider::new(vertices, own, thickness[m], friction[m])?);
            }
        }
        Ok(MeshColliders { meshes, n_vertices: vertices.len(), moved_for_step: None })
    }

    /// Whether the obstacles moved for the step numbered `step`.
    fn motion(&self, step: u64) -> Motion {
        if self.moved_for_step == Some(step) {
            Motion::Moving
        } else {
            Motion::Still
        }
    }

    /// The obstacles.
    pub fn meshes(&self) -> &[MeshCollider] {
        &self.meshes
    }

    /// A copy moved to `vertices` (the shared array, same count and order as set), positions at
    /// the end of the step numbered `step`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`vertices`) on a count mismatch, a non-finite coordinate or a
    /// triangle that the move makes degenerate.
    pub fn moved(&self, vertices: &[Vec3], step: u64) -> Result<Self> {
        if vertices.len() != self.n_vertices {
            return Err(Error::invalid(
                "vertices",
                None,
                format!(
                    "has {} vertices, the mesh colliders were set with {}",
                    vertices.len(),
                    self.n_vertices
                ),
            ));
        }
        if let Some(i) = vertices.iter().position(|p| !is_finite3(p)) {
            return Err(Error::invalid("vertices", Some(i), "is NaN or infinite"));
        }
        // moved again before the step: the step's motion runs from where they were after the
        // last step, so the earlier move's displacement is kept
        let again = if self.moved_for_step == Some(step) { Move::Again } else { Move::First };
        let meshes = self.meshes.iter().map(|m| m.moved(vertices, again)).collect::<Result<_>>()?;
        Ok(MeshColliders { meshes, n_vertices: self.n_vertices, moved_for_step: Some(step) })
    }

    /// Where the obstacles' shared vertices are at the start and at the end of the step numbered
    /// `step` when a move is pending for it (`None` when they are still during it); entries no
    /// triangle uses are zero.
    pub(crate) fn pending_move(&self, step: u64) -> Option<(Vec<Vec3>, Vec<Vec3>)> {
        if self.moved_for_step != Some(step) {
            return None;
        }
        let (mut from, mut to) = (vec![Vec3::zeros(); self.n_vertices], vec![Vec3::zeros(); self.n_vertices]);
        for m in &self.meshes {
            for (k, (&g, p)) in m.global.iter().zip(m.mesh.vertices()).enumerate() {
                to[g as usize] = p.coords;
                from[g as usize] = p.coords - m.displacement[k];
            }
        }
        Some((from, to))
    }

    /// Projects every non-pinned vertex out of every mesh (stages 1–4 of the [`MeshColliders`]
    /// docs).
    ///
    /// # Arguments
    /// * `x_old` — positions at the start of the step (m); `x` — end-of-step positions (m),
    ///   projected in place; `v` — end-of-step velocities (m/s), corrected in place.
    /// * `pinned` — vertices to leave alone; `h` — the step (s); `step` — the number of the
    ///   step being taken (completed steps before it); `law` — the friction law the meshes'
    ///   `friction` values were checked for; `taken` — as in
    ///   [`Colliders::project`](super::Colliders::project), for the mesh colliders as one kind
    ///   of obstacle (a vertex touching two meshes in one push loses the fraction of each).
    ///
    /// Returns the number of vertices in contact.
    #[allow(clippy::too_many_arguments)] // the state, the pins, the step and the friction law
    pub fn project(
        &self,
        x_old: &[Vec3],
        x: &mut [Vec3],
        v: &mut [Vec3],
        pinned: &[bool],
        h: Real,
        step: u64,
        law: FrictionLaw,
        taken: &mut [bool],
    ) -> usize {
        if self.meshes.is_empty() {
            return 0;
        }
        let motion = self.motion(step);
        (x, v, taken)
            .into_par_iter()
            .enumerate()
            .filter(|(i, _)| !pinned[*i])
            .map(|(i, (p, vi, taken))| {
                let mut touched = false;
                for m in &self.meshes {
                    let friction = Friction { law, value: m.friction, h }.for_vertex(*taken);
                    touched |= m.project_vertex(x_old[i], p, vi, friction, motion);
                }
                *taken |= touched;
                touched as usize
            })
            .sum()
    }

    /// The least radius of curvature (m) of the meshes that a vertex at `p` moving at `v` (m/s)
    /// meets over `seconds` ([`MeshCollider::meet`]), relative to their motion when they were
    /// moved for the step numbered `step`; infinite where it meets none.
    pub(crate) fn meet(&self, p: &Vec3, v: &Vec3, seconds: Real, step: u64, tolerance: Real) -> Real {
        let motion = self.motion(step);
        self.meshes
            .iter()
            .filter_map(|m| m.meet(p, v, seconds, motion, tolerance))
            .fold(Real::INFINITY, Real::min)
    }
}

fn check_offsets(first: &[u32], k: usize, n_triangles: usize) -> Result<()> {
    if k == 0 {
        return if n_triangles == 0 {
            Ok(())
        } else {
            Err(Error::invalid("first_triangle", None, format!("no meshes but {n_triangles} triangles")))
        };
    }
    if first.len() != k + 1 {
        return Err(Error::invalid(
            "first_triangle",
            None,
            format!("has {} offsets, expected {}", first.len(), k + 1),
        ));
    }
    if first[0] != 0 {
        return Err(Error::invalid("first_triangle", Some(0), format!("is {}, expected 0", first[0])));
    }
    if first[k] as usize != n_triangles {
        return Err(Error::invalid(
            "first_triangle",
            Some(k),
            format!("is {}, expected n_triangles = {n_triangles}", first[k]),
        ));
    }
    match first.windows(2).position(|w| w[1] < w[0]) {
        Some(m) => Err(Error::invalid(
            "first_triangle",
            Some(m + 1),
            format!("offsets must not decrease ({} then {})", first[m], first[m + 1]),
        )),
        None => Ok(()),
    }
}

/// `v` as a parry point.
#[inline]
fn point(v: &Vec3) -> Point<Real> {
    Point::from(*v)
}

#[cfg(test)]
mod tests {
    use super::collider::curvature_radii;
    use super::*;
    use crate::shapes;

    fn radii(mesh: &shapes::TriMesh) -> Vec<Real> {
        let pts: Vec<Point<Real>> = mesh.positions.iter().map(point).collect();
        curvature_radii(&pts, &mesh.triangles)
    }

    /// A closed cylinder of radius `r` and height 1 along z with `sides` sides, its caps fans
    /// from their centres: the side triangles first (2 per side), then the caps'.
    fn cylinder(sides: u32, r: Real) -> shapes::TriMesh {
        let angle = |k: u32| 2.0 * std::f64::consts::PI * Real::from(k % sides) / Real::from(sides);
        let mut positions: Vec<Vec3> = (0..2 * sides)
            .map(|k| Vec3::new(r * angle(k).cos(), r * angle(k).sin(), Real::from(k / sides)))
            .collect();
        positions.extend([Vec3::zeros(), Vec3::z()]);
        let (bottom, top) = (2 * sides, 2 * sides + 1);
        let mut triangles = Vec::new();
        for k in 0..sides {
            let next = (k + 1) % sides;
            triangles.extend([[k, next, sides + next], [k, sides + next, sides + k]]);
        }
        for k in 0..sides {
            let next = (k + 1) % sides;
            triangles.extend([[bottom, next, k], [top, sides + k, sides + next]]);
        }
        shapes::TriMesh { positions, triangles }
    }

    #[test]
    fn curvature_radii_are_a_spheres_radius_a_cylinders_on_its_sides_and_infinite_on_flat_faces() {
        // a UV sphere's poles have fans of thin triangles: area-weighted vertex normals put its
        // radius at 0.514–0.600 m there, angle-weighted ones at 0.591–0.600
        for (name, mesh) in
            [("UV sphere", shapes::uv_sphere(32, 64, 0.6)), ("icosphere", shapes::icosphere(3, 0.6))]
        {
            let r = radii(&mesh);
            assert!(r.iter().all(|r| (r / 0.6 - 1.0).abs() < 0.05), "{name}: {r:?}");
        }
        let r = radii(&shapes::grid(5, 5, 0.1));
        assert!(r.iter().all(|r| r.is_infinite()), "{r:?}");
        // the caps' edges are creases: blended across them, the rims' normals leaned 45° and the
        // sides' radius came out at 0.37 m
        let r = radii(&cylinder(64, 0.3));
        let (sides, caps) = r.split_at(128);
        assert!(sides.iter().all(|r| (r / 0.3 - 1.0).abs() < 0.01), "sides: {sides:?}");
        assert!(caps.iter().all(|r| r.is_infinite()), "caps: {caps:?}");
        // a box (a cylinder of 4 sides) has no bend, only creases
        let r = radii(&cylinder(4, 0.5));
        assert!(r.iter().all(|r| r.is_infinite()), "box: {r:?}");
    }
}
