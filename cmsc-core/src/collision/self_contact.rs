//! Self-collision of the simulated mesh; the method and its cost are documented on [`SelfCollision`].

use parry3d_f64::bounding_volume::{Aabb, BoundingVolume};
use parry3d_f64::math::Point;
use parry3d_f64::partitioning::{Bvh, BvhBuildStrategy};
use rayon::prelude::*;

use super::mesh::{check_triangles, triangle_normal};
use crate::error::{Error, Result};
use crate::math::{Real, Vec3};

/// Jacobi passes per step: a vertex moved off one triangle is checked again against the others
/// at its new position, and averaged edge–edge shares converge over the passes (4: the V-fold
/// test of `tests/self_collision.rs` needs 3; one is slack).
pub const PASSES: usize = 4;

/// Self-collision of the simulated mesh: every free vertex `i` with a distance `d_i > 0` keeps
/// at least `d_i` from every triangle it is not a corner of, and does not pass through one in a
/// step. Projection in the style of [Liu 2013](crate#references) §4.1, applied after the
/// integrator and pins, before the obstacles.
///
/// For each vertex `p = x_{t+1,i}` and each nearby triangle `(a, b, c)` with unit normal `n`
/// at `x_{t+1}` (`n_0` at `x_t`):
///
/// * `σ_0 = sign((x_{t,i} − a_t)·n_0)`, the side it was on at the start of the step, and
///   `η = (p − a)·n`, its signed height now;
/// * if its closest point on the triangle is inside the face and either the side changed
///   (`sign η ≠ σ_0`: it passed through) or `|η| < d_i`, it is moved along `n` to height
///   `σ_0 d_i`, the side it came from;
/// * if its closest point `q` is on an edge or corner and `|p − q| < d_i`, it is moved along
///   `p − q` to distance `d_i`.
///
/// The velocity of a moved vertex becomes `(x_{t+1} − x_t)/h`, so that state and velocity stay
/// consistent (a position-based update, as the rest of the projection).
///
/// **Broad phase.** A parry BVH over every triangle's box swept from `x_t` to `x_{t+1}`,
/// rebuilt each step (the mesh deforms), queried with each vertex's swept box grown by `d_i`.
/// Vertices are processed in parallel against a snapshot of the positions (Jacobi), in
/// [`PASSES`] passes so that a vertex pushed by one contact into another is caught.
///
/// ## Momentum and energy
/// Only the vertex moves, not the triangle: the correction is not an equal-and-opposite
/// internal impulse, so linear momentum is not conserved exactly during self-contact (each
/// push adds `m_i Δv_i`); the normal approach velocity is removed (inelastic) and no friction
/// is applied between layers. This is the price of a parallel, order-independent pass; the
/// effect is bounded by `m_i d_i / h` per vertex and contact.
///
/// ## Cost
/// Per step: the BVH build over `T` triangles (`O(T log T)`) plus one query per colliding
/// vertex per pass. Measured by `examples/collision_cost.rs` (see the crate README or the
/// report of issue 18) on a 2-core VM: a few tens of percent of a step at 10K vertices, more
/// at 100K where the BVH build dominates.
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
        // the same contact is seen from several edges at `i`: their shares are averaged, not
        // summed (a sum overshoots by the number of edges; the passes make up the rest)
        let (mut sum, mut count) = (Vec3::zeros(), 0);
        for &j in ring {
            for &[k, l] in &others {
                if k == i as u32 || l == i as u32 || k == j || l == j {
                    continue;
                }
                let e = [*p0, x_old[j as usize], x_old[k as usize], x_old[l as usize]];
                let e1 = [*p, x[j as usize], x[k as usize], x[l as usize]];
                if let Some(shift) = edge_edge(&e, &e1, d) {
                    sum += shift;
                    count += 1;
                }
            }
        }
        if count > 0 {
            *p += sum / count as Real;
            hit = true;
        }
        let query = Aabb::from_points([Point::from(*p0), Point::from(*p)]).loosened(d);
        for t in bvh.intersect_aabb(&query) {
            let tri = self.triangles[t as usize];
            if tri.contains(&(i as u32)) {
                continue;
            }
            let [a, b, c] = tri.map(|k| x[k as usize]);
            let [a0, b0, c0] = tri.map(|k| x_old[k as usize]);
            let Some(n) = triangle_normal(&a, &b, &c) else { continue };
            let (q, in_face) = closest_on_triangle(p, &a, &b, &c);
            if in_face {
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
/// `d` plus twice the largest move of the four ends in the step, and `σ_0 η_1 < d` (they
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
    let gap = (e1[0] + (e1[1] - e1[0]) * s - e1[2] - (e1[3] - e1[2]) * t).norm();
    let travel = (0..4).map(|k| (e1[k] - e0[k]).norm()).fold(0.0, Real::max);
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

/// The closest point to `p` on triangle `(a, b, c)` and whether it lies inside the face (not on
/// an edge or corner): Ericson, *Real-Time Collision Detection*, §5.1.5 (Voronoi regions).
pub(crate) fn closest_on_triangle(p: &Vec3, a: &Vec3, b: &Vec3, c: &Vec3) -> (Vec3, bool) {
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(&ap), ac.dot(&ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return (*a, false);
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(&bp), ac.dot(&bp));
    if d3 >= 0.0 && d4 <= d3 {
        return (*b, false);
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return (a + ab * (d1 / (d1 - d3)), false);
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(&cp), ac.dot(&cp));
    if d6 >= 0.0 && d5 <= d6 {
        return (*c, false);
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return (a + ac * (d2 / (d2 - d6)), false);
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        return (b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6))), false);
    }
    let denom = 1.0 / (va + vb + vc);
    (a + ab * (vb * denom) + ac * (vc * denom), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_point_regions() {
        let (a, b, c) = (Vec3::zeros(), Vec3::x(), Vec3::y());
        let (q, inside) = closest_on_triangle(&Vec3::new(0.2, 0.2, 1.0), &a, &b, &c);
        assert!(inside && (q - Vec3::new(0.2, 0.2, 0.0)).norm() < 1e-15);
        let (q, inside) = closest_on_triangle(&Vec3::new(-1.0, -1.0, 0.5), &a, &b, &c);
        assert!(!inside && q == a);
        let (q, inside) = closest_on_triangle(&Vec3::new(0.5, -1.0, 0.0), &a, &b, &c);
        assert!(!inside && (q - Vec3::new(0.5, 0.0, 0.0)).norm() < 1e-15);
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
