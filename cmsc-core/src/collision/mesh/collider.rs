//! One triangle-mesh obstacle ([`MeshCollider`]): its surface and BVH (parry's `TriMesh`), its
//! moves, the queries of a vertex's contact with it (stages 1–3 of the [`MeshColliders`]
//! docs), its sharp edges and each triangle's radius of curvature.
//!
//! [`MeshColliders`]: crate::MeshColliders

use parry3d_f64::math::Point;
use parry3d_f64::query::{PointQuery, Ray};
use parry3d_f64::shape::{CompositeShapeRef, FeatureId, TriMesh, TriMeshFlags};

use super::edges::{sharp_edges, EdgeNow, SharpEdge, SHARP_EDGE_COS};
use super::{point, Motion, Move, CONTACT_EPSILON, PASSES};
use crate::collision::geometry::triangle_normal;
use crate::collision::{respond, Contact, Friction};
use crate::error::{Error, Result};
use crate::math::{Real, Vec3};

/// Whether a mesh bounds a volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Surface {
    /// Every edge is shared by exactly two triangles: no vertex may end a step inside.
    Closed,
    /// A sheet (or several): only its sides count.
    Open,
}

/// One triangle-mesh obstacle.
#[derive(Clone)]
pub struct MeshCollider {
    /// The triangles at their current positions (the end of the next step), with their BVH.
    pub(super) mesh: TriMesh,
    /// `X_{t+1} − X_t` per vertex of `mesh` (m) after the last move.
    pub(super) displacement: Vec<Vec3>,
    /// Indices into the shared vertex array of the mesh's own vertices (for moves).
    pub(super) global: Vec<u32>,
    /// Contact distance (m), `>= 0`.
    pub thickness: Real,
    /// Friction under the [`FrictionLaw`] in force: in `[0, 1]`, the fraction of tangential
    /// motion removed per step in contact ([`FrictionLaw::PerStep`]), or a Coulomb coefficient
    /// `μ >= 0` ([`FrictionLaw::Coulomb`]).
    ///
    /// [`FrictionLaw`]: crate::FrictionLaw
    /// [`FrictionLaw::PerStep`]: crate::FrictionLaw::PerStep
    /// [`FrictionLaw::Coulomb`]: crate::FrictionLaw::Coulomb
    pub friction: Real,
    /// Whether the mesh bounds a volume, inside which no vertex may end a step.
    surface: Surface,
    /// The largest `|X_{t+1} − X_t|` (m).
    max_displacement: Real,
    /// Its convex sharp edges (closed meshes only): where an edge of the simulated surface
    /// between two vertices outside can cut through (stage 5 of the
    /// [`MeshColliders`](crate::MeshColliders) docs).
    edges: Vec<SharpEdge>,
    /// Each triangle's radius of curvature (m, [`curvature_radii`]), for the contact bound of
    /// [`crate::System::advance`].
    radius: Vec<Real>,
}

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

impl MeshCollider {
    /// One obstacle from its triangles (indices into the shared `vertices`, already checked).
    pub(super) fn new(
        vertices: &[Vec3],
        triangles: &[[u32; 3]],
        thickness: Real,
        friction: Real,
    ) -> Result<Self> {
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
    pub(super) fn moved(&self, vertices: &[Vec3], again: Move) -> Result<Self> {
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

    /// Number of convex sharp edges (stage 5 of the [`MeshColliders`](crate::MeshColliders)
    /// docs).
    pub fn n_sharp_edges(&self) -> usize {
        self.edges.len()
    }

    /// The sharp edges at the mesh's current positions (a moving obstacle's where it is at the
    /// end of the step), those a move left convex.
    pub(super) fn edges_now(&self, motion: Motion) -> impl Iterator<Item = EdgeNow> + '_ {
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
    pub(super) fn meet(
        &self,
        p: &Vec3,
        v: &Vec3,
        seconds: Real,
        motion: Motion,
        tolerance: Real,
    ) -> Option<Real> {
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

    /// Stages 1–4 of the [`MeshColliders`](crate::MeshColliders) docs for one vertex; returns
    /// whether it touched.
    pub(super) fn project_vertex(
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
        // 3. proximity and inside (a point on a sheet goes back to the side it came from)
        if let Some(n) = self.push_out(p, Some(s)) {
            normal = normal.or(Some(n));
        }
        let Some(n) = normal else { return false };
        // 4. response, relative to the obstacle
        let contact = Contact { normal: n, start: s, velocity: u, push: n.dot(&(*p - p_in)).max(0.0) };
        respond(&contact, p, v, friction);
        // friction may have moved it back within reach of a face
        self.push_out(p, Some(s));
        true
    }

    /// Whether the straight path from `a` to `b` passes through a triangle.
    fn crosses(&self, a: &Vec3, b: &Vec3) -> bool {
        let dir = *b - *a;
        dir.norm_squared() > 0.0
            && CompositeShapeRef(&self.mesh).cast_local_ray(&Ray::new(point(a), dir), 1.0, false).is_some()
    }

    /// Moves `p` to distance `thickness` outside if it is closer or inside (up to [`PASSES`]
    /// times); returns the normal of the first move. A point on the surface itself has no
    /// direction from it: it goes along its triangle's normal, on a sheet turned to the side of
    /// `from` (where the vertex comes from, in the obstacle's frame).
    pub(super) fn push_out(&self, p: &mut Vec3, from: Option<Vec3>) -> Option<Vec3> {
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
            let n = outward(r, inside).unwrap_or_else(|| self.on_surface_normal(p, from, feature));
            *p = proj.point.coords + n * d;
            first = first.or(Some(n));
        }
        first
    }

    /// The direction to push a point `p` lying on the surface: the feature's normal on a closed
    /// mesh (outward), on a sheet the normal of its triangle turned to the side `from` lies on.
    /// A sheet's edge between two coplanar faces has no normal of its own: parry's lay in the
    /// sheet's plane and moved a cloth vertex sideways, still on a moving paddle's plane, and
    /// the paddle's next step took it through (3 of 37 vertices of a cloth it passed).
    fn on_surface_normal(&self, p: &Vec3, from: Option<Vec3>, feature: FeatureId) -> Vec3 {
        if self.surface == Surface::Closed {
            return self.feature_normal(feature);
        }
        let (tri, _) = CompositeShapeRef(&self.mesh).project_local_point(&point(p), false);
        let n = self.face_normal(tri);
        match from {
            Some(f) if (f - *p).dot(&n) < 0.0 => -n,
            _ => n,
        }
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

/// The unit direction out of the mesh for a point `r` from its closest surface point (`−r`
/// inside a closed mesh); `None` on the surface, where the feature's normal is the caller's.
/// Within half of [`CONTACT_EPSILON`] a point counts as on the surface: that close, `r` is the
/// rounding of the projection and points anywhere (on a sheet's edge between two coplanar
/// faces it lay in the sheet's plane, and pushed a vertex sideways along it).
fn outward(r: Vec3, inside: bool) -> Option<Vec3> {
    let dist = r.norm();
    (dist > 0.5 * CONTACT_EPSILON).then(|| if inside { -r / dist } else { r / dist })
}

/// Each triangle's radius of curvature (m): over its edges, the edge's length over the angle
/// between the normals of its ends; infinite where the mesh is flat. A corner's normal is the
/// mean of the faces around the vertex that reach this triangle without crossing an edge
/// sharper than [`SHARP_EDGE_COS`], weighted by their angles there (Thürmer and Wüthrich's): a
/// sharp edge is a crease of the surface, not a bend (stage 5 of the
/// [`MeshColliders`](crate::MeshColliders) docs keeps cloth off it), so the faces on its two
/// sides do not blend. A UV sphere's radius is about its own, a cylinder's sides' the
/// cylinder's and its caps' infinite, a box's infinite.
/// Blended across the caps' edges, the normals at a 64-sided cylinder's rims lean 45° out of
/// its sides, which put the sides' radius at 1.25 times the cylinder's.
pub(super) fn curvature_radii(pts: &[Point<Real>], indices: &[[u32; 3]]) -> Vec<Real> {
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
