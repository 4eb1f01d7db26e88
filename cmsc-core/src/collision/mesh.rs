//! Triangle-mesh obstacles; the method, momentum and energy are documented on [`MeshColliders`].

use parry3d_f64::bounding_volume::{Aabb, BoundingVolume};
use parry3d_f64::math::Point;
use parry3d_f64::partitioning::{Bvh, BvhBuildStrategy};
use parry3d_f64::query::details::closest_points_segment_segment_with_locations_nD;
use parry3d_f64::query::{PointQuery, Ray};
use parry3d_f64::shape::{CompositeShapeRef, FeatureId, TriMesh, TriMeshFlags};
use rayon::prelude::*;

use super::geometry::{check_triangles, triangle_normal};
use super::{respond, Contact, Friction, FrictionLaw};
use crate::error::{Error, Result};
use crate::math::{is_finite3, Real, Vec3};

/// Whether a mesh bounds a volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Surface {
    /// Every edge is shared by exactly two triangles: no vertex may end a step inside.
    Closed,
    /// A sheet (or several): only its sides count.
    Open,
}

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

/// One triangle-mesh obstacle.
#[derive(Clone)]
pub struct MeshCollider {
    /// The triangles at their current positions (the end of the next step), with their BVH.
    mesh: TriMesh,
    /// `X_{t+1} − X_t` per vertex of `mesh` (m) after the last move.
    displacement: Vec<Vec3>,
    /// Indices into the shared vertex array of the mesh's own vertices (for moves).
    global: Vec<u32>,
    /// Contact distance (m), `>= 0`.
    pub thickness: Real,
    /// Friction under the [`FrictionLaw`] in force: in `[0, 1]`, the fraction of tangential
    /// motion removed per step in contact ([`FrictionLaw::PerStep`]), or a Coulomb coefficient
    /// `μ >= 0` ([`FrictionLaw::Coulomb`]).
    pub friction: Real,
    /// Whether the mesh bounds a volume, inside which no vertex may end a step.
    surface: Surface,
    /// The largest `|X_{t+1} − X_t|` (m).
    max_displacement: Real,
    /// Its convex sharp edges (closed meshes only): where an edge of the simulated surface
    /// between two vertices outside can cut through (stage 5 of the [`MeshColliders`] docs).
    edges: Vec<SharpEdge>,
    /// Each triangle's radius of curvature (m, [`curvature_radii`]), for the contact bound of
    /// [`crate::System::advance`].
    radius: Vec<Real>,
}

/// An edge of a closed mesh between two faces meeting at a convex angle sharper than
/// [`SHARP_EDGE_COS`]: its two corners and its two faces (local indices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SharpEdge {
    ends: [u32; 2],
    faces: [u32; 2],
}

/// An edge is sharp when its faces' normals differ by more than 20° (cosine below this). Flatter
/// edges (a finely tessellated sphere's) leave a spring over them within its sag of the surface,
/// which the vertex contacts already keep outside.
pub const SHARP_EDGE_COS: Real = 0.94;

/// Most detection passes of the spring–edge contacts per step (stage 5): each moves a vertex by
/// the mean of its contacts' pushes, so one pass may leave part of a push; the passes stop as
/// soon as none is found.
pub const EDGE_PASSES: usize = 8;

impl std::fmt::Debug for MeshCollider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeshCollider")
            .field("triangles", &self.mesh.num_triangles())
            .field("vertices", &self.global.len())
            .field("thickness", &self.thickness)
            .field("friction", &self.friction)
            .field("surface", &self.surface)
            .finish()
    }
}

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

fn point(v: &Vec3) -> Point<Real> {
    Point::from(*v)
}

/// Every edge shared by exactly two triangles.
fn is_closed(triangles: &[[u32; 3]]) -> bool {
    let mut edges: Vec<(u32, u32)> = triangles
        .iter()
        .flat_map(|t| [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])])
        .map(|(a, b)| (a.min(b), a.max(b)))
        .collect();
    edges.sort_unstable();
    edges.chunk_by(|a, b| a == b).all(|run| run.len() == 2)
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

impl MeshColliders {
    /// Stage 5 of the [`MeshColliders`] docs: keeps every edge of the simulated surface
    /// (`surface`, vertex pairs) at least the contact distance from the obstacles' convex sharp
    /// edges, after the vertices were
    /// projected, then applies the contact law to every vertex an edge moved (once per step,
    /// with the edge's mesh's friction under `law`, `taken` as in
    /// [`MeshColliders::project`]: a vertex the faces just pushed, its spring across an edge,
    /// loses the per-step fraction once; `x_old` are the positions at the start of the step,
    /// `h` the step, s). Returns the number of spring–edge contacts applied.
    #[allow(clippy::too_many_arguments)] // the state, the springs, the pins and the friction
    pub fn project_edges(
        &self,
        surface: &[[u32; 2]],
        x_old: &[Vec3],
        x: &mut [Vec3],
        v: &mut [Vec3],
        pinned: &[bool],
        h: Real,
        law: FrictionLaw,
        step: u64,
        taken: &mut [bool],
    ) -> usize {
        let motion = self.motion(step);
        let edges: Vec<EdgeNow> = self.meshes.iter().flat_map(|m| m.edges_now(motion)).collect();
        if edges.is_empty() || surface.is_empty() {
            return 0;
        }
        let longest = surface
            .par_iter()
            .map(|&[a, b]| (x[a as usize] - x[b as usize]).norm())
            .reduce(|| 0.0, Real::max);
        let boxes: Vec<Aabb> = edges
            .iter()
            .map(|e| Aabb::from_points([point(&e.ends[0]), point(&e.ends[1])]).loosened(e.distance))
            .collect();
        let bvh = Bvh::from_leaves(BvhBuildStrategy::Binned, &boxes);
        let (mut applied, edges) = (0, &edges);
        // per vertex: the total push over the passes, and the friction and the move in the step
        // of the last edge (at the point the vertex's spring met it)
        let mut total = vec![(Vec3::zeros(), 0.0, Vec3::zeros()); x.len()];
        for _ in 0..EDGE_PASSES {
            let found: Vec<(u32, u32)> = surface
                .par_iter()
                .enumerate()
                .flat_map_iter(|(s, &[a, b])| {
                    let (pa, pb) = (x[a as usize], x[b as usize]);
                    let query = Aabb::from_points([point(&pa), point(&pb)]);
                    let near: Vec<u32> = bvh.intersect_aabb(&query).collect();
                    near.into_iter()
                        .filter(move |&e| edges[e as usize].push(pa, pb, longest).is_some())
                        .map(move |e| (s as u32, e))
                })
                .collect();
            if found.is_empty() {
                break;
            }
            // Jacobi: each vertex moves by the mean of its contacts' pushes (the order of the
            // springs must not matter: applied one after the other, a symmetric drape drifted)
            let mut push = vec![(Vec3::zeros(), 0u32, 0.0, Vec3::zeros()); x.len()];
            for &(s, e) in &found {
                let [a, b] = surface[s as usize].map(|i| i as usize);
                let edge = &edges[e as usize];
                let Some((along, delta, on_edge)) = edge.push(x[a], x[b], longest) else { continue };
                let (wa, wb) = (if pinned[a] { 0.0 } else { 1.0 }, if pinned[b] { 0.0 } else { 1.0 });
                let denom = (1.0 - along) * (1.0 - along) * wa + along * along * wb;
                if denom <= 0.0 {
                    continue;
                }
                for (i, share) in [(a, (1.0 - along) * wa), (b, along * wb)] {
                    if share > 0.0 {
                        push[i].0 += delta * (share / denom);
                        push[i].1 += 1;
                        push[i].2 = edge.friction;
                        push[i].3 = edge.moves[0] * (1.0 - on_edge) + edge.moves[1] * on_edge;
                    }
                }
                applied += 1;
            }
            for (i, &(sum, count, friction, moved)) in push.iter().enumerate().filter(|(_, p)| p.1 > 0) {
                let delta = sum / count as Real;
                x[i] += delta;
                total[i] = (total[i].0 + delta, friction, moved);
            }
        }
        // the contact law, once per vertex: normal along its total push, relative to the edge
        for (i, &(pushed, friction, moved)) in total.iter().enumerate() {
            let push = pushed.norm();
            if push > 0.0 {
                let (start, velocity) = (x_old[i] + moved, moved / h);
                let c = Contact { normal: pushed / push, start, velocity, push };
                respond(&c, &mut x[i], &mut v[i], Friction { law, value: friction, h }.for_vertex(taken[i]));
                taken[i] = true;
                // friction may have moved it back within reach of a face
                for m in &self.meshes {
                    m.push_out(&mut x[i]);
                }
            }
        }
        applied
    }
}

/// A sharp edge where it is at the end of the step: its corners, its faces' outward normals, the
/// contact distance and the friction of its mesh.
struct EdgeNow {
    ends: [Vec3; 2],
    /// What its corners moved in the step (zero for an obstacle still during it).
    moves: [Vec3; 2],
    normals: [Vec3; 2],
    distance: Real,
    friction: Real,
}

impl EdgeNow {
    /// For the surface edge from `pa` to `pb`: where along it (`s` in `(0, 1)`) and by how much (m)
    /// its closest point to the edge must move to be `distance` outside the edge's rounded
    /// wedge (the obstacle grown by `distance`), if it is not: radially off the edge where the
    /// point is outside both faces' planes, out along the faces' mean normal where it is behind
    /// both (the spring cuts through the solid). A point behind both planes but farther from
    /// the edge than `reach` (the longest surface edge) is not near this edge. Surface edges
    /// whose closest point is an end are left to the vertex contacts.
    fn push(&self, pa: Vec3, pb: Vec3, reach: Real) -> Option<(Real, Vec3, Real)> {
        let [e0, e1] = self.ends.map(|e| point(&e));
        let (on_spring, on_edge) =
            closest_points_segment_segment_with_locations_nD((&point(&pa), &point(&pb)), (&e0, &e1));
        let [_, s] = on_spring.barycentric_coordinates();
        if s <= 0.0 || s >= 1.0 {
            return None;
        }
        let [u0, u1] = on_edge.barycentric_coordinates();
        let p = pa * (1.0 - s) + pb * s;
        let q = self.ends[0] * u0 + self.ends[1] * u1;
        let r = p - q;
        let dist = r.norm();
        let d = self.distance + CONTACT_EPSILON;
        let behind = r.dot(&self.normals[0]) < 0.0 && r.dot(&self.normals[1]) < 0.0;
        if behind {
            if dist > reach {
                return None;
            }
            let n = (self.normals[0] + self.normals[1]).normalize();
            Some((s, q + n * d - p, u1))
        } else if dist < self.distance && dist > 0.0 {
            Some((s, r * ((d - dist) / dist), u1))
        } else {
            None
        }
    }
}

/// The convex sharp edges of a closed, outward-wound mesh (points `pts`, triangles `indices`).
fn sharp_edges(pts: &[Point<Real>], indices: &[[u32; 3]]) -> Vec<SharpEdge> {
    let mut halves: Vec<([u32; 2], u32)> = indices
        .iter()
        .enumerate()
        .flat_map(|(f, t)| {
            [[t[0], t[1]], [t[1], t[2]], [t[2], t[0]]].map(|[a, b]| ([a.min(b), a.max(b)], f as u32))
        })
        .collect();
    halves.sort_unstable();
    let normal = |f: u32| {
        let [a, b, c] = indices[f as usize].map(|i| pts[i as usize].coords);
        triangle_normal(&a, &b, &c)
    };
    halves
        .chunk_by(|a, b| a.0 == b.0)
        .filter_map(|run| {
            let [(ends, f1), (_, f2)] = run else { return None };
            let (n1, n2) = (normal(*f1)?, normal(*f2)?);
            // convex: the far corner of the second face is behind the first face's plane
            let far = indices[*f2 as usize].iter().find(|&&i| !ends.contains(&i))?;
            let convex = (pts[*far as usize].coords - pts[ends[0] as usize].coords).dot(&n1) < 0.0;
            (convex && n1.dot(&n2) < SHARP_EDGE_COS).then_some(SharpEdge { ends: *ends, faces: [*f1, *f2] })
        })
        .collect()
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

impl MeshCollider {
    /// One obstacle from its triangles (indices into the shared `vertices`, already checked).
    fn new(vertices: &[Vec3], triangles: &[[u32; 3]], thickness: Real, friction: Real) -> Result<Self> {
        let mut global: Vec<u32> = triangles.iter().flatten().copied().collect();
        global.sort_unstable();
        global.dedup();
        let local = |g: u32| global.binary_search(&g).expect("every corner is in `global`") as u32;
        let mut indices: Vec<[u32; 3]> = triangles.iter().map(|t| t.map(local)).collect();
        let surface = if is_closed(&indices) { Surface::Closed } else { Surface::Open };
        let pts: Vec<Point<Real>> = global.iter().map(|&g| point(&vertices[g as usize])).collect();
        // the inside test needs outward normals: a closed mesh with negative signed volume
        // Σ a·(b × c)/6 is wound inward, and is turned
        let volume: Real = indices
            .iter()
            .map(|t| t.map(|i| pts[i as usize].coords))
            .map(|[a, b, c]| a.dot(&b.cross(&c)))
            .sum();
        if surface == Surface::Closed && volume < 0.0 {
            indices.iter_mut().for_each(|t| t.swap(1, 2));
        }
        let edges = if surface == Surface::Closed { sharp_edges(&pts, &indices) } else { Vec::new() };
        let radius = curvature_radii(&pts, &indices);
        let mesh = build(pts, indices, surface)?;
        let displacement = vec![Vec3::zeros(); global.len()];
        Ok(MeshCollider {
            mesh,
            displacement,
            global,
            thickness,
            friction,
            surface,
            max_displacement: 0.0,
            edges,
            radius,
        })
    }

    /// A copy at `vertices`.
    fn moved(&self, vertices: &[Vec3], again: Move) -> Result<Self> {
        let pts: Vec<Point<Real>> = self.global.iter().map(|&g| point(&vertices[g as usize])).collect();
        for (t, tri) in self.mesh.indices().iter().enumerate() {
            let [a, b, c] = tri.map(|i| pts[i as usize].coords);
            if triangle_normal(&a, &b, &c).is_none() {
                let g = tri.map(|i| self.global[i as usize]);
                return Err(Error::invalid(
                    "vertices",
                    Some(t),
                    format!("the move makes triangle {g:?} degenerate"),
                ));
            }
        }
        let earlier = |k: usize| if again == Move::Again { self.displacement[k] } else { Vec3::zeros() };
        let displacement: Vec<Vec3> = pts
            .iter()
            .zip(self.mesh.vertices())
            .enumerate()
            .map(|(k, (new, old))| new - old + earlier(k))
            .collect();
        let max_displacement = displacement.iter().map(|d| d.norm()).fold(0.0, Real::max);
        let radius = curvature_radii(&pts, self.mesh.indices());
        let mesh = build(pts, self.mesh.indices().to_vec(), self.surface)?;
        Ok(MeshCollider {
            mesh,
            displacement,
            max_displacement,
            global: self.global.clone(),
            edges: self.edges.clone(),
            radius,
            ..*self
        })
    }

    /// Whether the mesh bounds a volume (every edge shared by two triangles).
    pub fn is_closed(&self) -> bool {
        self.surface == Surface::Closed
    }

    /// Number of triangles.
    pub fn n_triangles(&self) -> usize {
        self.mesh.num_triangles()
    }

    /// Number of convex sharp edges (stage 5 of the [`MeshColliders`] docs).
    pub fn n_sharp_edges(&self) -> usize {
        self.edges.len()
    }

    /// The sharp edges at the mesh's current positions (a moving obstacle's where it is at the
    /// end of the step), those a move left convex.
    fn edges_now(&self, motion: Motion) -> impl Iterator<Item = EdgeNow> + '_ {
        let at = |i: u32| self.mesh.vertices()[i as usize].coords;
        let moved = move |i: u32| {
            if motion == Motion::Moving {
                self.displacement[i as usize]
            } else {
                Vec3::zeros()
            }
        };
        self.edges.iter().filter_map(move |e| {
            let normals = e.faces.map(|f| self.face_normal(f));
            let far = self.mesh.indices()[e.faces[1] as usize].into_iter().find(|i| !e.ends.contains(i))?;
            let convex = (at(far) - at(e.ends[0])).dot(&normals[0]) < 0.0;
            let (distance, friction) = (self.thickness, self.friction);
            convex.then(|| EdgeNow {
                ends: e.ends.map(at),
                moves: e.ends.map(moved),
                normals,
                distance,
                friction,
            })
        })
    }

    /// The obstacle's velocity (m/s) at the closest surface point to `p` within `reach`.
    fn velocity_near(&self, p: &Vec3, reach: Real, h: Real) -> Vec3 {
        let near =
            CompositeShapeRef(&self.mesh).project_local_point_and_get_location(&point(p), reach, false);
        let Some((tri, (_, location))) = near else { return Vec3::zeros() };
        let w = location.barycentric_coordinates().unwrap_or([1.0 / 3.0; 3]);
        let idx = self.mesh.indices()[tri as usize];
        (0..3).map(|k| self.displacement[idx[k] as usize] * w[k]).sum::<Vec3>() / h
    }

    /// Whether a vertex at `p` moving at `v` (m/s) meets the mesh over `seconds`: keeping its
    /// velocity relative to the mesh's, it would come within `tolerance` (m) of the contact
    /// surface (`thickness` outside), or pass it. Then the radius of curvature there (m): its
    /// closest triangle's.
    fn meet(&self, p: &Vec3, v: &Vec3, seconds: Real, motion: Motion, tolerance: Real) -> Option<Real> {
        let drift = if motion == Motion::Moving { self.max_displacement } else { 0.0 };
        let reach = v.norm() * seconds + self.thickness + tolerance + drift;
        let bounds = self.mesh.local_aabb();
        if (0..3).any(|k| p[k] + reach < bounds.mins[k] || p[k] - reach > bounds.maxs[k]) {
            return None;
        }
        let (tri, (proj, _)) =
            CompositeShapeRef(&self.mesh).project_local_point_and_get_location(&point(p), reach, false)?;
        let face = self.face_normal(tri);
        let r = *p - proj.point.coords;
        let dist = r.norm();
        let inside = self.surface == Surface::Closed && r.dot(&face) < 0.0;
        let normal = outward(r, inside).unwrap_or(face);
        let outside = if inside { -dist } else { dist } - self.thickness;
        let u = if drift > 0.0 { self.velocity_near(p, reach, seconds) } else { Vec3::zeros() };
        let depth = -normal.dot(&(v - u)) * seconds - outside;
        (depth > -tolerance).then(|| self.radius[tri as usize])
    }

    /// Stages 1–4 of the [`MeshColliders`] docs for one vertex; returns whether it touched.
    fn project_vertex(
        &self,
        x_old: Vec3,
        p: &mut Vec3,
        v: &mut Vec3,
        friction: Friction,
        motion: Motion,
    ) -> bool {
        let h = friction.h;
        let d = self.thickness + CONTACT_EPSILON;
        let moving = motion == Motion::Moving;
        let drift = if moving { self.max_displacement } else { 0.0 };
        let lo = x_old.inf(p) - Vec3::repeat(d + drift);
        let hi = x_old.sup(p) + Vec3::repeat(d + drift);
        let bounds = self.mesh.local_aabb();
        if (0..3).any(|k| hi[k] < bounds.mins[k] || lo[k] > bounds.maxs[k]) {
            return false;
        }
        let u = if moving && drift > 0.0 {
            self.velocity_near(p, (*p - x_old).norm() + d + drift, h)
        } else {
            Vec3::zeros()
        };
        let s = x_old + u * h;
        let p_in = *p;
        let mut normal = None;
        // 2. crossing: the path s → p through a triangle
        let dir = *p - s;
        if dir.norm_squared() > 0.0 {
            let ray = Ray::new(point(&s), dir);
            if let Some((tri, hit)) =
                CompositeShapeRef(&self.mesh).cast_local_ray_and_get_normal(&ray, 1.0, false)
            {
                let n = self.face_normal(tri);
                let q = s + dir * hit.time_of_impact;
                let side = (s - q).dot(&n);
                // on the plane at the start (rounding): it came from the side opposite its motion
                let sign = if side != 0.0 { side.signum() } else { -dir.dot(&n).signum() };
                if sign != 0.0 {
                    let n = n * sign;
                    // back out at `d` on the side it came from, keeping its motion along the
                    // surface after the hit (the response's friction takes its share): through
                    // its closest surface point, else along the hit face's normal onto its
                    // plane, else (each checked for a path from `s` through the surface, as
                    // past the far face of a thin box) at the hit point
                    let closest = self.mesh.project_local_point(&point(p), false).point.coords;
                    let back = closest - *p;
                    let dist = back.norm();
                    let through_closest = (dist > 0.0 && back.dot(&n) > 0.0)
                        .then(|| (closest + back * (d / dist), back / dist));
                    let onto_plane = (*p + n * (d - n.dot(&(*p - q))), n);
                    let (placed, pushed_along) = through_closest
                        .into_iter()
                        .chain([onto_plane])
                        .find(|(c, _)| !self.crosses(&s, c))
                        .unwrap_or((q + n * d, n));
                    *p = placed;
                    normal = Some(pushed_along);
                }
            }
        }
        // 3. proximity and inside
        if let Some(n) = self.push_out(p) {
            normal = normal.or(Some(n));
        }
        let Some(n) = normal else { return false };
        // 4. response, relative to the obstacle
        let contact = Contact { normal: n, start: s, velocity: u, push: n.dot(&(*p - p_in)).max(0.0) };
        respond(&contact, p, v, friction);
        // friction may have moved it back within reach of a face
        self.push_out(p);
        true
    }

    /// Whether the straight path from `a` to `b` passes through a triangle.
    fn crosses(&self, a: &Vec3, b: &Vec3) -> bool {
        let dir = *b - *a;
        dir.norm_squared() > 0.0
            && CompositeShapeRef(&self.mesh).cast_local_ray(&Ray::new(point(a), dir), 1.0, false).is_some()
    }

    /// Moves `p` to distance `thickness` outside if it is closer or inside (up to [`PASSES`]
    /// times); returns the normal of the first move.
    fn push_out(&self, p: &mut Vec3) -> Option<Vec3> {
        let d = self.thickness + CONTACT_EPSILON;
        let mut first = None;
        for _ in 0..PASSES {
            let (proj, feature) = self.mesh.project_local_point_and_get_feature(&point(p));
            let inside = self.surface == Surface::Closed && proj.is_inside;
            let r = *p - proj.point.coords;
            let dist = r.norm();
            // `d` itself counts as touching: `p` was placed there and stays put
            if !inside && dist >= self.thickness {
                break;
            }
            let n = outward(r, inside).unwrap_or_else(|| self.feature_normal(feature));
            *p = proj.point.coords + n * d;
            first = first.or(Some(n));
        }
        first
    }

    fn face_normal(&self, tri: u32) -> Vec3 {
        let [a, b, c] = self.mesh.indices()[tri as usize].map(|i| self.mesh.vertices()[i as usize].coords);
        triangle_normal(&a, &b, &c).unwrap_or_else(Vec3::z)
    }

    fn feature_normal(&self, feature: FeatureId) -> Vec3 {
        match feature {
            FeatureId::Face(f) => self.face_normal(f % self.mesh.num_triangles() as u32),
            _ => self.mesh.feature_normal(feature).map(|n| n.into_inner()).unwrap_or_else(Vec3::z),
        }
    }
}

/// The unit direction out of the mesh for a point `r` from its closest surface point (`−r`
/// inside a closed mesh); `None` on the surface, where the feature's normal is the caller's.
fn outward(r: Vec3, inside: bool) -> Option<Vec3> {
    let dist = r.norm();
    (dist > 0.0).then(|| if inside { -r / dist } else { r / dist })
}

/// Each triangle's radius of curvature (m): over its edges, the edge's length over the angle
/// between the normals of its ends; infinite where the mesh is flat. A corner's normal is the
/// mean of the faces around the vertex that reach this triangle without crossing an edge
/// sharper than [`SHARP_EDGE_COS`], weighted by their angles there (Thürmer and Wüthrich's): a
/// sharp edge is a crease of the surface, not a bend (stage 5 of the [`MeshColliders`] docs
/// keeps cloth off it), so the faces on its two sides do not blend. A UV sphere's radius is
/// about its own, a cylinder's sides' the cylinder's and its caps' infinite, a box's infinite.
/// Blended across the caps' edges, the normals at a 64-sided cylinder's rims lean 45° out of
/// its sides, which put the sides' radius at 1.25 times the cylinder's.
fn curvature_radii(pts: &[Point<Real>], indices: &[[u32; 3]]) -> Vec<Real> {
    let corners = |f: usize| indices[f].map(|i| pts[i as usize].coords);
    let normals: Vec<Option<Vec3>> = (0..indices.len())
        .map(|f| {
            let [a, b, c] = corners(f);
            triangle_normal(&a, &b, &c)
        })
        .collect();
    let mut around = vec![Vec::new(); pts.len()];
    for (f, t) in indices.iter().enumerate().filter(|(f, _)| normals[*f].is_some()) {
        t.iter().for_each(|&i| around[i as usize].push(f));
    }
    fn root(fan: &mut [usize], mut a: usize) -> usize {
        while fan[a] != a {
            fan[a] = fan[fan[a]];
            a = fan[a];
        }
        a
    }
    // per triangle, the normal at each corner: the angle-weighted mean of its smooth fan
    let mut corner_normals = vec![[Vec3::zeros(); 3]; indices.len()];
    for (v, faces) in around.iter().enumerate() {
        let slot = |f: usize| indices[f].iter().position(|&i| i as usize == v).expect("a face around v");
        // the fan's faces joined across the smooth edges at v (each shares v and one more vertex)
        let mut fan: Vec<usize> = (0..faces.len()).collect();
        for a in 0..faces.len() {
            for b in a + 1..faces.len() {
                let (f, g) = (faces[a], faces[b]);
                let shared = indices[f].iter().filter(|i| indices[g].contains(i)).count();
                let smooth = normals[f].zip(normals[g]).is_some_and(|(n, m)| n.dot(&m) >= SHARP_EDGE_COS);
                if shared == 2 && smooth {
                    let (ra, rb) = (root(&mut fan, a), root(&mut fan, b));
                    fan[ra] = rb;
                }
            }
        }
        let mut sums = vec![Vec3::zeros(); faces.len()];
        for (a, &f) in faces.iter().enumerate() {
            let (k, c) = (slot(f), corners(f));
            let (to_next, to_prev) = (c[(k + 1) % 3] - c[k], c[(k + 2) % 3] - c[k]);
            sums[root(&mut fan, a)] += normals[f].expect("kept") * to_next.angle(&to_prev);
        }
        for (a, &f) in faces.iter().enumerate() {
            corner_normals[f][slot(f)] =
                sums[root(&mut fan, a)].try_normalize(0.0).unwrap_or_else(Vec3::zeros);
        }
    }
    (0..indices.len())
        .map(|f| {
            let (c, n) = (corners(f), corner_normals[f]);
            (0..3)
                .map(|k| {
                    let angle = n[k].dot(&n[(k + 1) % 3]).clamp(-1.0, 1.0).acos();
                    if angle > 0.0 {
                        (c[(k + 1) % 3] - c[k]).norm() / angle
                    } else {
                        Real::INFINITY
                    }
                })
                .fold(Real::INFINITY, Real::min)
        })
        .collect()
}

/// A parry `TriMesh` (with its BVH); closed meshes are `ORIENTED` for inside tests.
fn build(pts: Vec<Point<Real>>, indices: Vec<[u32; 3]>, surface: Surface) -> Result<TriMesh> {
    let flags = match surface {
        Surface::Closed => TriMeshFlags::ORIENTED,
        Surface::Open => TriMeshFlags::empty(),
    };
    TriMesh::with_flags(pts, indices, flags)
        .map_err(|e| Error::invalid("triangles", None, format!("cannot build the collider mesh: {e}")))
}

#[cfg(test)]
mod tests {
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
