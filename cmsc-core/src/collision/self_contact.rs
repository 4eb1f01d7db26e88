//! Self-collision of the simulated mesh; the method and its cost are documented on [`SelfCollision`].

use parry3d_f64::bounding_volume::{Aabb, BoundingVolume};
use parry3d_f64::math::Point;
use parry3d_f64::partitioning::{Bvh, BvhBuildStrategy};
use rayon::prelude::*;

use parry3d_f64::shape::TrianglePointLocation;

use super::geometry::{check_triangles, closest_on_triangle, triangle_normal};
use crate::error::{Error, Result};
use crate::math::{Real, Vec3};

/// Jacobi passes per step: a vertex moved off one contact is checked again, at its new
/// position, against the others' moved positions (4: the V-fold test of
/// `tests/self_collision.rs` needs 3; one is slack). The loop stops early when a pass moves
/// nothing.
pub const PASSES: usize = 4;

/// Self-collision of the simulated mesh: every free vertex `i` with a distance `d_i > 0` keeps
/// at least `d_i` from every triangle it is not a corner of, and does not pass through one in a
/// step. Projection in the style of [Liu 2013](crate#references) §4.1, applied after the
/// integrator and pins, before the obstacles (step.rs).
///
/// **Vertex–triangle.** For each vertex `p = x_{t+1,i}` and each nearby triangle `(a, b, c)`
/// with unit normal `n` at `x_{t+1}` (`n_0` at `x_t`):
///
/// * `σ_0 = sign((x_{t,i} − a_t)·n_0)`, the side it was on at the start of the step, and
///   `η = (p − a)·n`, its signed height now;
/// * if its closest point on the triangle is inside the face and either the side changed
///   (`sign η ≠ σ_0`: it passed through) or `|η| < d_i`, it is moved along `n` to height
///   `σ_0 d_i`, the side it came from;
/// * if its closest point `q` is on an edge or corner and `|p − q| < d_i`, it is moved along
///   `p − q` to distance `d_i`.
///
/// **Edge–edge.** A vertex test alone lets an edge pass through a triangle whose plane its
/// ends cross outside the face (around a border, or into a fold). So each edge `(i, j)` at a
/// colliding vertex `i` is also tested against the edges `(k, l)` of nearby triangles that
/// share no vertex with it: with `n ∝ (x_j − x_i) × (x_l − x_k)` and the signed distance
/// `η = (x_i − x_k)·n` of the two lines, if the closest points of the segments are interior
/// and `σ_0 η < d_i` (the side changed, or closer than `d_i`), the edges must move apart by
/// `σ_0 d_i − η` along `n`; vertex `i` takes its share (half, split along its edge by the
/// closest point's parameter). Near-parallel edges (under 1e-3 rad) have no reliable side and
/// are left to the vertex test; a change of side counts only while the segments are within
/// `d_i` plus twice what their ends moved relative to each other in the step.
///
/// Each vertex applies its corrections in sequence (the next contact sees the previous move),
/// against the others' positions from the previous pass (Jacobi across vertices, so the passes
/// run in parallel and do not depend on vertex order). The velocity of a moved vertex becomes
/// `(x_{t+1} − x_t)/h`, so that state and velocity stay consistent.
///
/// **Broad phase.** A parry BVH (binned SAH build) over every triangle's box swept from `x_t`
/// to `x_{t+1}` and grown by `max d_i`, rebuilt each step (the mesh deforms), queried with each
/// vertex's swept box (with its edges, for the edge test) grown by `d_i`.
///
/// **Limits.** `d_i` should stay below about half the shortest edge, or neighbours within the
/// mesh count as contacts. The crossing tests are linearised (sides at the start and end of the
/// step, closest points at the end), not exact continuous collision detection: fast motion that
/// crosses near a triangle's edge can still pass. `tests/self_collision.rs` holds a V-folded
/// cloth with opposite charges on its halves at h = 1/240 s, 5 nC per vertex; at h = 1/120 s and
/// 10 nC an edge next to the pinned fold still passes through a triangle at step 11.
///
/// ## Momentum and energy
/// Only the vertex being processed moves (the triangle's or other edge's vertices take their
/// own shares when they are processed, and pinned or `d = 0` vertices take none): the
/// correction is not an exact equal-and-opposite internal impulse, so linear momentum is not
/// conserved exactly during self-contact (each push adds `m_i Δv_i`, at most about
/// `m_i d_i / h` per contact and step). The approach velocity is removed (inelastic: kinetic
/// energy is lost); no friction acts between layers.
///
/// ## Cost
/// Per step: the BVH build over `T` triangles (`O(T log T)`) plus, per colliding vertex and
/// pass, one query and the tests against the triangles and edges it returns. Measured by
/// `cargo run --release -p cmsc-core --example collision_cost` on the 2-core VM (2 rayon
/// threads), a cloth draped on a sphere, Coulomb off, seconds per step:
///
/// | n vertices | plain | self-collision | mesh collider (4K-triangle sphere) | both |
/// |---:|---:|---:|---:|---:|
/// | 10 000  | 0.015 | 0.052 | 0.023 | 0.052 |
/// | 100 489 | 0.28  | 0.62  | 0.31  | 0.64  |
///
/// (5 steps each after 2 warm-up steps, same run; the cores are shared, and two runs differed
/// by up to 30 %.)
/// Self-collision costs about 2.5 plain steps at 10K vertices and 1.2 at 100K; the mesh
/// collider, under 0.5 and 0.1.
///
/// Self-collision settings: the triangles that repel and each vertex's distance.
#[derive(Debug, Clone, PartialEq)]
pub struct SelfCollision {
    triangles: Vec<[u32; 3]>,
    /// The other end of every mesh edge at each vertex (CSR: `ring[ring_start[i]..ring_start[i + 1]]`).
    ring: Vec<u32>,
    ring_start: Vec<usize>,
    /// `d_i` per vertex (m), `>= 0`; 0: the vertex does not collide.
    distance: Vec<Real>,
    max_distance: Real,
}

impl SelfCollision {
    /// Validates self-collision settings for a mesh at positions `x`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: `distance` not one per vertex, negative or not finite;
    /// `triangles` out of range or degenerate (zero area at `x`).
    pub fn new(triangles: &[[u32; 3]], distance: &[Real], x: &[Vec3]) -> Result<Self> {
        if distance.len() != x.len() {
            return Err(Error::invalid(
                "distance",
                None,
                format!("has {} values, expected one per vertex ({})", distance.len(), x.len()),
            ));
        }
        if let Some(i) = distance.iter().position(|d| !(d.is_finite() && *d >= 0.0)) {
            return Err(Error::invalid(
                "distance",
                Some(i),
                format!("{} is not a finite distance >= 0 m", distance[i]),
            ));
        }
        check_triangles("triangles", triangles, x)?;
        let max_distance = distance.iter().copied().fold(0.0, Real::max);
        let mut edges: Vec<(u32, u32)> = triangles
            .iter()
            .flat_map(|t| [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])])
            .flat_map(|(a, b)| [(a, b), (b, a)])
            .collect();
        edges.sort_unstable();
        edges.dedup();
        let mut ring_start = vec![0; x.len() + 1];
        for &(a, _) in &edges {
            ring_start[a as usize + 1] += 1;
        }
        for i in 0..x.len() {
            ring_start[i + 1] += ring_start[i];
        }
        let ring = edges.iter().map(|&(_, b)| b).collect();
        Ok(SelfCollision {
            triangles: triangles.to_vec(),
            ring,
            ring_start,
            distance: distance.to_vec(),
            max_distance,
        })
    }

    /// The triangles that repel.
    pub fn triangles(&self) -> &[[u32; 3]] {
        &self.triangles
    }

    /// `d_i` per vertex (m).
    pub fn distance(&self) -> &[Real] {
        &self.distance
    }

    /// Applies the rule of the [`SelfCollision`] docs to the end-of-step positions `x` (m) and
    /// velocities `v` (m/s), given the start-of-step positions `x_old` and the step `h` (s).
    /// Returns the number of vertices moved.
    pub fn project(&self, x_old: &[Vec3], x: &mut [Vec3], v: &mut [Vec3], pinned: &[bool], h: Real) -> usize {
        if self.triangles.is_empty() || self.max_distance <= 0.0 {
            return 0;
        }
        let margin = self.max_distance;
        let boxes: Vec<Aabb> = self
            .triangles
            .par_iter()
            .map(|t| {
                let pts = t.iter().flat_map(|&i| [x_old[i as usize], x[i as usize]]).map(Point::from);
                Aabb::from_points(pts).loosened(margin)
            })
            .collect();
        let bvh = Bvh::from_leaves(BvhBuildStrategy::Binned, &boxes);
        let mut moved = vec![false; x.len()];
        for _ in 0..PASSES {
            let snapshot = x.to_vec();
            let changed: usize = x
                .par_iter_mut()
                .zip(moved.par_iter_mut())
                .enumerate()
                .filter(|(i, _)| !pinned[*i] && self.distance[*i] > 0.0)
                .map(|(i, (p, m))| {
                    let hit = self.separate(i, p, &x_old[i], x_old, &snapshot, &bvh);
                    *m |= hit;
                    hit as usize
                })
                .sum();
            if changed == 0 {
                break;
            }
        }
        v.par_iter_mut().zip(x.par_iter()).zip(x_old.par_iter()).zip(moved.par_iter()).for_each(
            |(((v, x), x0), &m)| {
                if m {
                    *v = (x - x0) / h;
                }
            },
        );
        moved.iter().filter(|&&m| m).count()
    }

    /// Moves vertex `i` at `p` off every triangle near it; `x`: the other vertices' positions.
    fn separate(&self, i: usize, p: &mut Vec3, p0: &Vec3, x_old: &[Vec3], x: &[Vec3], bvh: &Bvh) -> bool {
        let d = self.distance[i];
        let ring = &self.ring[self.ring_start[i]..self.ring_start[i + 1]];
        let ends = ring.iter().flat_map(|&j| [x_old[j as usize], x[j as usize]]);
        let query = Aabb::from_points([*p0, *p].into_iter().chain(ends).map(Point::from)).loosened(d);
        let mut hit = false;
        let mut others: Vec<[u32; 2]> = Vec::new();
        for t in bvh.intersect_aabb(&query) {
            let tri = self.triangles[t as usize];
            others.extend(
                [[tri[0], tri[1]], [tri[1], tri[2]], [tri[2], tri[0]]].map(|[k, l]| [k.min(l), k.max(l)]),
            );
        }
        others.sort_unstable();
        others.dedup();
        let mut count = 0;
        let swept = |pts: [&Vec3; 4]| {
            let lo = pts[0].inf(pts[1]).inf(pts[2]).inf(pts[3]);
            let hi = pts[0].sup(pts[1]).sup(pts[2]).sup(pts[3]);
            (lo, hi)
        };
        for &j in ring {
            let (j_old, j_new) = (&x_old[j as usize], &x[j as usize]);
            let (lo, hi) = swept([p0, p, j_old, j_new]);
            for &[k, l] in &others {
                if k == i as u32 || l == i as u32 || k == j || l == j {
                    continue;
                }
                let (k_old, k_new, l_old, l_new) =
                    (&x_old[k as usize], &x[k as usize], &x_old[l as usize], &x[l as usize]);
                // the two edges' swept boxes, `d` apart at most, before any arithmetic
                let (lo_f, hi_f) = swept([k_old, k_new, l_old, l_new]);
                if (0..3).any(|a| lo_f[a] > hi[a] + d || lo[a] > hi_f[a] + d) {
                    continue;
                }
                let e = [*p0, *j_old, *k_old, *l_old];
                let e1 = [*p, *j_new, *k_new, *l_new];
                if let Some(shift) = edge_edge(&e, &e1, d) {
                    // in sequence: the next pair sees this move (no overshoot from one contact
                    // seen through several edges)
                    *p += shift;
                    count += 1;
                }
            }
        }
        hit |= count > 0;
        let query = Aabb::from_points([Point::from(*p0), Point::from(*p)]).loosened(d);
        for t in bvh.intersect_aabb(&query) {
            let tri = self.triangles[t as usize];
            if tri.contains(&(i as u32)) {
                continue;
            }
            let [a, b, c] = tri.map(|k| x[k as usize]);
            let [a0, b0, c0] = tri.map(|k| x_old[k as usize]);
            let Some(n) = triangle_normal(&a, &b, &c) else { continue };
            let (q, location) = closest_on_triangle(p, &a, &b, &c);
            if let TrianglePointLocation::OnFace(..) = location {
                let eta = (*p - a).dot(&n);
                let side0 = triangle_normal(&a0, &b0, &c0).map_or(0.0, |n0| (p0 - a0).dot(&n0));
                // on the plane at the start: the side it is moving away from
                let sigma = if side0 != 0.0 { side0.signum() } else { -(*p - p0).dot(&n).signum() };
                let sigma = if sigma == 0.0 { 1.0 } else { sigma };
                if eta * sigma < d {
                    // crossed (η has the other sign) or closer than d: back to height σ d
                    *p += n * (sigma * d - eta);
                    hit = true;
                }
            } else {
                let r = *p - q;
                let dist = r.norm();
                if dist < d && dist > 0.0 {
                    *p = q + r * (d / dist);
                    hit = true;
                }
            }
        }
        hit
    }
}

/// The share of vertex `i` (the first point) in separating edge `(i, j)` from edge `(k, l)`,
/// given their ends at the start (`e0`) and end (`e1`) of the step, or `None` if they are apart.
///
/// With `n = (x_j − x_i) × (x_l − x_k) / |…|` and the signed distance `η = (x_i − x_k)·n`
/// between the two lines, `σ_0 = sign η_0` is the side edge `(i, j)` was on at the start. If
/// the closest points of the two segments at the end are interior to both, no farther apart than
/// `d` plus twice the largest deviation of an end's move from the four ends' mean move in the
/// step (their relative travel), and `σ_0 η_1 < d` (they
/// crossed, or are closer than `d`), the edges must move apart by `δ = σ_0 d − η_1` along
/// `n`: half by each edge, and of edge `(i, j)`'s half, the share of `x_i` at the closest
/// point's parameter `s` is `(1 − s)/((1 − s)² + s²)` (the least-norm split of a move of the
/// point `(1 − s) x_i + s x_j`). The other three vertices move themselves when they are
/// processed (Jacobi). Edges that share a vertex are skipped by the caller.
fn edge_edge(e0: &[Vec3; 4], e1: &[Vec3; 4], d: Real) -> Option<Vec3> {
    let signed = |e: &[Vec3; 4]| {
        let n = (e[1] - e[0]).cross(&(e[3] - e[2]));
        let len = n.norm();
        // near-parallel edges (under 1e-3 rad, 0.06°) have no reliable side: the sign of η
        // flips with tiny rotations; the vertex–triangle test covers them
        (len > 1e-3 * (e[1] - e[0]).norm() * (e[3] - e[2]).norm()).then(|| {
            let n = n / len;
            ((e[0] - e[2]).dot(&n), n)
        })
    };
    let (eta0, _) = signed(e0)?;
    let (eta1, n) = signed(e1)?;
    // on one plane at the start (within rounding): no side to keep, only the distance
    let scale = (e0[1] - e0[0]).norm() + (e0[3] - e0[2]).norm();
    let sigma = if eta0.abs() > 1e-12 * scale {
        eta0.signum()
    } else if eta1 < 0.0 {
        -1.0
    } else {
        1.0
    };
    if eta1 * sigma >= d {
        return None;
    }
    let (s, t) = segment_parameters(&e1[0], &e1[1], &e1[2], &e1[3]);
    if !(s > 0.0 && s < 1.0 && t > 0.0 && t < 1.0) {
        return None;
    }
    // a change of side is a crossing only if the segments are now within what they moved
    // relative to each other: the closest points' displacements differ by at most twice the
    // largest deviation of an end's move from the four ends' mean move (all four moving alike,
    // as in free fall, cannot cross; the absolute move would make every pair of nearby edges of
    // a falling, gently curving sheet "cross" as the sign of η, near 0, flips)
    let gap = (e1[0] + (e1[1] - e1[0]) * s - e1[2] - (e1[3] - e1[2]) * t).norm();
    let moves = [0, 1, 2, 3].map(|k| e1[k] - e0[k]);
    let mean = (moves[0] + moves[1] + moves[2] + moves[3]) / 4.0;
    let travel = moves.iter().map(|m| (m - mean).norm()).fold(0.0, Real::max);
    if gap >= d + 2.0 * travel {
        return None;
    }
    let delta = sigma * d - eta1;
    Some(n * (0.5 * delta * (1.0 - s) / ((1.0 - s).powi(2) + s * s)))
}

/// The parameters `(s, t)` of the closest points of segments `p0 p1` and `q0 q1`, clamped to
/// `[0, 1]`: Ericson, *Real-Time Collision Detection*, §5.1.9.
fn segment_parameters(p0: &Vec3, p1: &Vec3, q0: &Vec3, q1: &Vec3) -> (Real, Real) {
    let (d1, d2, r) = (p1 - p0, q1 - q0, p0 - q0);
    let (a, e, f) = (d1.dot(&d1), d2.dot(&d2), d2.dot(&r));
    let (b, c) = (d1.dot(&d2), d1.dot(&r));
    let denom = a * e - b * b;
    let mut s = if denom > 0.0 { ((b * f - c * e) / denom).clamp(0.0, 1.0) } else { 0.0 };
    let mut t = (b * s + f) / e;
    if t < 0.0 {
        t = 0.0;
        s = (-c / a).clamp(0.0, 1.0);
    } else if t > 1.0 {
        t = 1.0;
        s = ((b - c) / a).clamp(0.0, 1.0);
    }
    (s, t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two edges 3 cm apart that fall 4 cm together while one turns through parallel to the
    /// other: their lines' normal, hence the sign of η, flips, but they never come near each
    /// other. The test once compared the change of side with the ends' absolute travel and
    /// pushed them (every pair of nearby edges of a falling, bending cloth counted as crossing,
    /// and the pushes tore a falling charged cloth apart); their relative travel (4 mm) says no.
    #[test]
    fn edges_falling_together_through_parallel_do_not_cross() {
        let (d, fall) = (0.015, Vec3::new(0.0, 0.0, -0.04));
        let b = |eps: Real| [Vec3::new(0.0, -0.5 * eps, 0.03), Vec3::new(1.0, 0.5 * eps, 0.03)];
        let (b0, b1) = (b(0.004), b(-0.004));
        let e0 = [Vec3::zeros(), Vec3::x(), b0[0], b0[1]];
        let e1 = [e0[0] + fall, e0[1] + fall, b1[0] + fall, b1[1] + fall];
        assert_eq!(edge_edge(&e0, &e1, d), None);
        // the same edges closing 3 cm on each other while turning do cross and are separated
        let e1 = [e0[0] + fall, e0[1] + fall, b1[0] + fall * 1.75, b1[1] + fall * 1.75];
        assert!(edge_edge(&e0, &e1, d).is_some());
    }

    #[test]
    fn a_vertex_passing_through_a_triangle_is_put_back_on_its_side() {
        let x_old = [Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::new(0.2, 0.2, 0.1)];
        let mut x = x_old;
        x[3].z = -0.3;
        let mut v = [Vec3::zeros(); 4];
        let sc = SelfCollision::new(&[[0, 1, 2]], &[0.0, 0.0, 0.0, 0.05], &x_old).unwrap();
        assert_eq!(sc.project(&x_old, &mut x, &mut v, &[false; 4], 0.1), 1);
        assert!((x[3] - Vec3::new(0.2, 0.2, 0.05)).norm() < 1e-12, "{:?}", x[3]);
        assert!((v[3] - Vec3::new(0.0, 0.0, -0.5)).norm() < 1e-12, "{:?}", v[3]);
        // the triangle's corners do not collide (d = 0) and did not move
        assert_eq!(&x[..3], &x_old[..3]);
    }
}
