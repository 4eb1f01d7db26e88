//! Stage 5 of the [`MeshColliders`] docs: the edges of the simulated surface kept outside a
//! closed obstacle's convex sharp edges ([`MeshColliders::project_edges`]).

use parry3d_f64::bounding_volume::{Aabb, BoundingVolume};
use parry3d_f64::math::Point;
use parry3d_f64::partitioning::{Bvh, BvhBuildStrategy};
use parry3d_f64::query::details::closest_points_segment_segment_with_locations_nD;
use rayon::prelude::*;

use super::{point, MeshColliders, CONTACT_EPSILON};
use crate::collision::geometry::triangle_normal;
use crate::collision::{respond, Contact, Friction, FrictionLaw};
use crate::math::{Real, Vec3};

/// An edge of a closed mesh between two faces meeting at a convex angle sharper than
/// [`SHARP_EDGE_COS`]: its two corners and its two faces (local indices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SharpEdge {
    pub(super) ends: [u32; 2],
    pub(super) faces: [u32; 2],
}

/// An edge is sharp when its faces' normals differ by more than 20° (cosine below this). Flatter
/// edges (a finely tessellated sphere's) leave a spring over them within its sag of the surface,
/// which the vertex contacts already keep outside.
pub const SHARP_EDGE_COS: Real = 0.94;

/// Most detection passes of the spring–edge contacts per step (stage 5): each moves a vertex by
/// the mean of its contacts' pushes, so one pass may leave part of a push; the passes stop as
/// soon as none is found.
pub const EDGE_PASSES: usize = 8;

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
                    m.push_out(&mut x[i], None);
                }
            }
        }
        applied
    }
}

/// A sharp edge where it is at the end of the step: its corners, its faces' outward normals, the
/// contact distance and the friction of its mesh.
pub(super) struct EdgeNow {
    pub(super) ends: [Vec3; 2],
    /// What its corners moved in the step (zero for an obstacle still during it).
    pub(super) moves: [Vec3; 2],
    pub(super) normals: [Vec3; 2],
    pub(super) distance: Real,
    pub(super) friction: Real,
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
pub(super) fn sharp_edges(pts: &[Point<Real>], indices: &[[u32; 3]]) -> Vec<SharpEdge> {
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
