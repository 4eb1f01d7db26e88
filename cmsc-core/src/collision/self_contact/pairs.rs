//! A detection's tests of the candidate pairs ([`SelfCollision::test`]): the box test the trees
//! would apply, then the [`narrow`](super::narrow) phase in batches; the contact rule of a
//! vertex and a triangle and of two edges ([`SelfCollision`]'s docs); and the faces the
//! friction between layers acts on ([`SelfCollision::touching`]).

use parry3d_f64::bounding_volume::{Aabb, BoundingVolume};
use parry3d_f64::shape::TrianglePointLocation;
use rayon::prelude::*;

use super::broad::{bounds, swept_box, Candidates, Trees};
use super::narrow::{
    apart_lanes, barycentric, edge_edge, meeting_reach2, vertex_apart_lanes, vertex_triangle_crossing, Ends,
    LaneTest, INSIDE, LANES,
};
use super::response::Contact;
use super::{ContactStep, Detection, Moved, SelfCollision, FRICTION_REACH};
use crate::collision::geometry::{closest_on_triangle, triangle_normal};
use crate::math::{Real, Vec3};

/// Candidates a detection tests as one sequential run on a thread, batched for
/// [`apart_lanes`] and [`vertex_apart_lanes`] (1,024).
const TEST_CHUNK: usize = 1024;

impl SelfCollision {
    /// The violated contacts among the `candidates`, each by a box test at `x` (a vertex's box
    /// against a triangle's, or an edge's against the later edge's grown by the pair's
    /// distance, [`edges_near`]) and then the narrow phase, in the candidates' order:
    /// all of them, or, `since` the step's last detection, those with a vertex that moved
    /// since, with the boxes of the others kept from it.
    pub(super) fn test(
        &self,
        candidates: &Candidates,
        arrived: [&[Vec3]; 2],
        x: &[Vec3],
        since: Option<(&Moved, Boxes)>,
    ) -> Detection {
        let edge_reach = &candidates.edge_reach;
        let moved = since.as_ref().map(|&(moved, _)| moved);
        let (vertex_moved, triangle_moved, edge_moved) = (
            |i: u32| moved.is_none_or(|moved| moved.vertices[i as usize]),
            |t: u32| moved.is_none_or(|moved| moved.triangles[t as usize]),
            |e: u32| moved.is_none_or(|moved| moved.edges[e as usize]),
        );
        let positions = [arrived[0], x];
        let boxes = Boxes::new(self, positions, since);
        let Boxes { vertices: vertex_boxes, triangles: triangle_boxes, edges: edge_boxes } = &boxes;
        let points = candidates
            .points
            .par_chunks(TEST_CHUNK)
            .flat_map_iter(|chunk| {
                // what moved first, then the boxes of those alone
                let moved = kept(chunk, |(i, t)| vertex_moved(i) | triangle_moved(t));
                let near =
                    kept(&moved, |(i, t)| boxes_meet(&vertex_boxes[i as usize], &triangle_boxes[t as usize]))
                        .into_iter()
                        .map(|(i, t)| {
                            let [a, b, c] = self.triangles[t as usize];
                            ((i, t), [i, a, b, c], self.distance[i as usize])
                        });
                narrow_in_batches(near, vertex_apart_lanes, positions, |(i, t), _| {
                    self.vertex_triangle(i as usize, t, arrived, x, 1.0, Some(&triangle_boxes[t as usize]))
                })
            })
            .collect();
        let pairs = candidates
            .pairs
            .par_chunks(TEST_CHUNK)
            .flat_map_iter(|chunk| {
                let reach = |(e, f): (u32, u32)| edge_reach[e as usize].max(edge_reach[f as usize]);
                let moved = kept(chunk, |(e, f)| edge_moved(e) | edge_moved(f));
                let near = kept(&moved, |pair @ (e, f)| {
                    edges_near(reach(pair), [&edge_boxes[e as usize], &edge_boxes[f as usize]])
                })
                .into_iter()
                .map(|pair| (pair, edge_ends(&self.edges, pair), reach(pair)));
                narrow_in_batches(near, apart_lanes, positions, |(e, f), d| {
                    self.edge_pair(e, f, d, arrived, x)
                })
            })
            .collect();
        Detection { x: x.to_vec(), boxes, pairs, points }
    }

    /// The contacts the friction between layers acts on at `x`: each vertex with a distance and
    /// friction with its [`SelfCollision::closest_face`]. The faces whose swept boxes meet the
    /// vertex's query box are the step's candidates of a colliding vertex (taken with that
    /// reach, [`SelfCollision::vertex_reach`]), where they hold ([`Candidates::hold`]) and the
    /// step's last detection was at `x` (its boxes are those of the triangles' tree fit to
    /// `x`); the others' (pinned vertices, or all where they do not hold) come from the
    /// triangles' tree, refit to `x`. Either way the same faces are tested, in index order.
    pub(super) fn touching(
        &self,
        step: &mut ContactStep,
        x: &[Vec3],
        trees: &mut Trees,
        w_inv: &[Real],
    ) -> Vec<Contact> {
        let rubs = |i: usize| self.distance[i] > 0.0 && self.friction[i] > 0.0;
        // the query box is grown by FRICTION_REACH times the distance, as the candidates' are
        let known = match (&step.candidates, &step.last) {
            (Some(c), Some(last)) => step.reuse && last.x == x && c.hold(step.x_old, x),
            _ => false,
        };
        if !known || (0..x.len()).any(|i| rubs(i) && !self.collides(i, w_inv)) {
            step.refit(self, trees, x);
        }
        step.rubbed_known = known;
        let arrived = [step.x_old, &step.x_in[..]];
        // the candidates and the triangles' boxes at `x`, where they serve
        let listed = (step.candidates.as_ref().zip(step.last.as_ref()))
            .filter(|_| known)
            .map(|(candidates, last)| (candidates, &last.boxes.triangles));
        let tree = &trees.triangles;
        (0..x.len())
            .into_par_iter()
            .filter(|&i| rubs(i))
            .filter_map(|i| {
                let query = self.vertex_box(i, arrived[0], x, FRICTION_REACH);
                match listed {
                    Some((candidates, boxes)) if self.collides(i, w_inv) => {
                        let near = candidates
                            .triangles_of(i as u32)
                            .filter(|&t| query.intersects(&boxes[t as usize]));
                        self.closest_face(i, near, arrived, x)
                    }
                    _ => {
                        let mut near: Vec<u32> = tree.intersect_aabb(&query).collect();
                        near.sort_unstable();
                        self.closest_face(i, near, arrived, x)
                    }
                }
            })
            .collect()
    }

    /// The face vertex `i` touches for the friction between layers: of the triangles `near` it
    /// (those whose swept boxes meet its box grown by [`FRICTION_REACH`] times its distance, in
    /// index order), the closest within that reach by [`SelfCollision::vertex_triangle`]'s rule
    /// without the swept test, the first on a tie (so that it does not depend on how they were
    /// found).
    fn closest_face(
        &self,
        i: usize,
        near: impl IntoIterator<Item = u32>,
        arrived: [&[Vec3]; 2],
        x: &[Vec3],
    ) -> Option<Contact> {
        let touching =
            near.into_iter().filter_map(|t| self.vertex_triangle(i, t, arrived, x, FRICTION_REACH, None));
        touching.min_by(|a, b| a.gap(x).total_cmp(&b.gap(x)))
    }

    /// The contact of vertex `i` with triangle `t` at `x`, if violated (the rule of the
    /// [`SelfCollision`] docs); none where `i` is a corner of `t`.
    /// `x_in` are the positions the step arrived at before any contact moved them: what the
    /// vertices moved in the step is judged from them, so that a contact's own correction never
    /// makes another pair look as if it had crossed.
    /// `reach` scales the distance a contact is detected within (1: violated contacts only).
    /// `swept`: the triangle's box swept from `x_old` to `x` ([`swept_box`], grown or not), to
    /// also test the straight motions for a crossing (continuous collision detection,
    /// [`vertex_triangle_crossing`], where the vertex's own swept box meets it); `None`: no
    /// swept test.
    pub(super) fn vertex_triangle(
        &self,
        i: usize,
        t: u32,
        [x_old, x_in]: [&[Vec3]; 2],
        x: &[Vec3],
        reach: Real,
        swept: Option<&Aabb>,
    ) -> Option<Contact> {
        let d_i = self.distance[i];
        let d = d_i * reach;
        let (p, p0) = (x[i], x_old[i]);
        let tri = self.triangles[t as usize];
        if tri.contains(&(i as u32)) {
            return None;
        }
        let [a, b, c] = tri.map(|k| x[k as usize]);
        let [a0, b0, c0] = tri.map(|k| x_old[k as usize]);
        let n = triangle_normal(&a, &b, &c)?;
        let eta = (p - a).dot(&n);
        let side0 = triangle_normal(&a0, &b0, &c0).map_or(0.0, |n0| (p0 - a0).dot(&n0));
        // on the plane at the start: the side it is moving away from
        let sigma = if side0 != 0.0 { side0.signum() } else { -(p - p0).dot(&n).signum() };
        let sigma = if sigma == 0.0 { 1.0 } else { sigma };
        // passed through the face in the step, unseen by the end state (it ends beyond an
        // edge, or the triangle turned): back to height d on the side it came from
        let crossing = || {
            // where it meets the triangle it is in the triangle's swept box (within the
            // barycentric tolerance `INSIDE` of the crossing test)
            let swept = swept?;
            let path = bounds([p0, p]).loosened(4.0 * INSIDE * (swept.maxs - swept.mins).norm());
            if !swept.intersects(&path) {
                return None;
            }
            let (_, came_from) = vertex_triangle_crossing(&[p0, p], &[[a0, b0, c0], [a, b, c]])?;
            Some(if n.dot(&came_from) < 0.0 { -n } else { n })
        };
        // on its side of the plane, `d` or more from it: no point of the triangle is nearer, and
        // only the swept test can find a contact
        let swept_through = if eta * sigma >= d { Some(crossing()?) } else { None };
        let (q, location) = closest_on_triangle(&p, &a, &b, &c);
        let bary = barycentric(&q, &a, &b, &c);
        let idx = [i as u32, tri[0], tri[1], tri[2]];
        let w = [1.0, -bary[0], -bary[1], -bary[2]];
        if let Some(n) = swept_through {
            return Some(Contact { idx, w, n, d: d_i, key: t });
        }
        if (p - q).norm_squared() < meeting_reach2(&[p0, a0, b0, c0], &[p, a, b, c]) {
            // on its side at the end, but it may have passed through and turned with the
            // triangle, changing sides twice: once beside the triangle, once through it (a
            // cloth folding fast: the pinned curtain of `tests/contacts.rs`)
            if let Some(n) = crossing() {
                return Some(Contact { idx, w, n, d: d_i, key: t });
            }
        }
        let on_face = matches!(location, TrianglePointLocation::OnFace(..));
        let mut normal = None;
        if on_face {
            // a change of side is a crossing only if the vertex is within what it moved
            // relative to the triangle's point under it (a triangle that turns over far
            // from a vertex flips the vertex's side without meeting it)
            let moved = |k: usize| x_in[tri[k] as usize] - x_old[tri[k] as usize];
            let q_move = moved(0) * bary[0] + moved(1) * bary[1] + moved(2) * bary[2];
            let travel = ((x_in[i] - p0) - q_move).norm();
            if eta * sigma < d && eta.abs() < d + travel {
                // crossed (η has the other sign) or closer than d: back to height σ d
                normal = Some(n * sigma);
            }
        }
        if normal.is_none() {
            normal = crossing();
        }
        if normal.is_none() && !on_face {
            let r = p - q;
            let dist = r.norm();
            if dist < d && dist > 0.0 {
                normal = Some(r / dist);
            }
        }
        normal.map(|n| Contact { idx, w, n, d: d_i, key: t })
    }

    /// The contact of mesh edges `e` and `f` at `x` at distance `d` (the larger
    /// [`Candidates::edge_reach`] of the two, [`edges_near`]), if violated, for a pair that
    /// [`apart`](super::narrow::apart) did not set aside. The swept test
    /// ([`edge_edge_crossing`](super::narrow::edge_edge_crossing)) always applies; see
    /// [`SelfCollision::vertex_triangle`] for `x_in`.
    fn edge_pair(&self, e: u32, f: u32, d: Real, [x_old, x_in]: [&[Vec3]; 2], x: &[Vec3]) -> Option<Contact> {
        let idx = edge_ends(&self.edges, (e, f));
        let e0 = idx.map(|v| x_old[v as usize]);
        let e1 = idx.map(|v| x[v as usize]);
        let moves = idx.map(|v| x_in[v as usize] - x_old[v as usize]);
        let (n, s, t) = edge_edge(&e0, &e1, &moves, d, true)?;
        Some(Contact { idx, w: [1.0 - s, s, t - 1.0, -t], n, d, key: f })
    }
}

/// The boxes a detection tests pairs by ([`SelfCollision::test`]): each vertex's motion in the
/// step grown by its distance ([`SelfCollision::vertex_box`]), each triangle's grown by its
/// margin ([`SelfCollision::margins`]) and each edge's as it is ([`swept_box`]; the test grows
/// the second edge of a pair).
pub(super) struct Boxes {
    pub(super) vertices: Vec<Aabb>,
    pub(super) triangles: Vec<Aabb>,
    pub(super) edges: Vec<Aabb>,
}

impl Boxes {
    /// The boxes of `sc` in the step `x_old → x`: all computed, or, `since` a detection, those
    /// of what moved since, the others kept from the detection's.
    pub(super) fn new(sc: &SelfCollision, [x_old, x]: [&[Vec3]; 2], since: Option<(&Moved, Boxes)>) -> Self {
        let triangle_margin = sc.margins()[0];
        let vertex = |i: usize| sc.vertex_box(i, x_old, x, 1.0);
        let triangle = |t: usize| swept_box(&sc.triangles[t], [x_old, x], triangle_margin);
        let edge = |e: usize| swept_box(&sc.edges[e], [x_old, x], 0.0);
        let Some((moved, mut boxes)) = since else {
            return Boxes {
                vertices: (0..x.len()).into_par_iter().map(vertex).collect(),
                triangles: (0..sc.triangles.len()).into_par_iter().map(triangle).collect(),
                edges: (0..sc.edges.len()).into_par_iter().map(edge).collect(),
            };
        };
        let update = |boxes: &mut [Aabb], moved: &[bool], of: &(dyn Fn(usize) -> Aabb + Sync)| {
            boxes
                .par_iter_mut()
                .zip(moved)
                .enumerate()
                .filter(|(_, (_, &m))| m)
                .for_each(|(k, (b, _))| *b = of(k));
        };
        update(&mut boxes.vertices, &moved.vertices, &vertex);
        update(&mut boxes.triangles, &moved.triangles, &triangle);
        update(&mut boxes.edges, &moved.edges, &edge);
        boxes
    }
}

/// Whether a pair of mesh edges sharing no vertex may have a contact, from their distance `d`
/// (the larger [`Candidates::edge_reach`] of the two: the largest `d_k` of their free ends,
/// `w_inv > 0`) and their boxes swept from `x_old` to `x` ([`swept_box`]): `d > 0` and the boxes
/// `d` apart at most. Without a branch, as [`kept`] asks.
fn edges_near(d: Real, [swept_e, swept_f]: [&Aabb; 2]) -> bool {
    let [[lo, hi], [lo_f, hi_f]] = [swept_e, swept_f].map(|b| [b.mins, b.maxs]);
    let apart = (0..3).fold(false, |apart, a| apart | (lo_f[a] > hi[a] + d) | (lo[a] > hi_f[a] + d));
    (d > 0.0) & !apart
}

/// Whether two boxes meet (as [`BoundingVolume::intersects`]), without a branch, as [`kept`]
/// asks.
fn boxes_meet(a: &Aabb, b: &Aabb) -> bool {
    (0..3).fold(true, |meet, k| meet & (a.mins[k] <= b.maxs[k]) & (a.maxs[k] >= b.mins[k]))
}

/// The items of `chunk` that pass `keep`, in their order. A stream compaction: every item is
/// written and the end moves past those kept, so that a `keep` without branches costs no
/// branch per item. About half the candidates a detection looks at pass each of its filters
/// (moved since the last detection; boxes that meet), in no order a branch predictor could
/// follow; with a branch per candidate (`Iterator::filter`), `perf` put the tests' work before
/// the narrow phase at 14 % of the crumple's run (`examples/crumple_cost.rs`, one thread), and
/// at 7 % this way, the boxes tested for the candidates that moved alone.
fn kept<T: Copy + Default>(chunk: &[T], keep: impl Fn(T) -> bool) -> Vec<T> {
    let mut out = vec![T::default(); chunk.len()];
    let mut len = 0;
    for &item in chunk {
        out[len] = item;
        len += usize::from(keep(item));
    }
    out.truncate(len);
    out
}

/// The ends `[i, j, k, l]` of edge pair `(e, f)`.
fn edge_ends(edges: &[[u32; 2]], (e, f): (u32, u32)) -> [u32; 4] {
    let ([i, j], [k, l]) = (edges[e as usize], edges[f as usize]);
    [i, j, k, l]
}

/// The contacts `narrow` finds among `pairs` (each with its four points and its distance), in
/// their order, after `set_aside` ([`apart_lanes`], [`vertex_apart_lanes`]) has set aside what it
/// can, [`LANES`] pairs at a time, their points read from `positions` (the step's start and end).
fn narrow_in_batches(
    pairs: impl Iterator<Item = ((u32, u32), [u32; 4], Real)>,
    set_aside: LaneTest,
    positions: [&[Vec3]; 2],
    mut narrow: impl FnMut((u32, u32), Real) -> Option<Contact>,
) -> Vec<Contact> {
    let mut found = Vec::new();
    let mut batch = Batch::default();
    let mut decide =
        |batch: &mut Batch| batch.decide(set_aside, &mut |pair, d| found.extend(narrow(pair, d)));
    for (pair, ends, d) in pairs {
        batch.push(pair, ends, d, positions);
        if batch.len == LANES {
            decide(&mut batch);
        }
    }
    decide(&mut batch);
    found
}

/// Pairs waiting for a narrow phase's first decision in lanes ([`apart_lanes`],
/// [`vertex_apart_lanes`]): up to [`LANES`] edge pairs or vertex–triangle pairs, their four
/// points at the start and end of the step by lane, and their distances.
#[derive(Default)]
struct Batch {
    pairs: [(u32, u32); LANES],
    e0: Ends,
    e1: Ends,
    d: [Real; LANES],
    len: usize,
}

impl Batch {
    /// Adds `pair` at distance `d`, its four points `ends` at `x_old` and `x`.
    fn push(&mut self, pair: (u32, u32), ends: [u32; 4], d: Real, [x_old, x]: [&[Vec3]; 2]) {
        let l = self.len;
        for (k, v) in ends.into_iter().enumerate() {
            for c in 0..3 {
                self.e0[k][c][l] = x_old[v as usize][c];
                self.e1[k][c][l] = x[v as usize][c];
            }
        }
        (self.pairs[l], self.d[l], self.len) = (pair, d, l + 1);
    }

    /// Hands each pair `set_aside` does not set aside to `narrow`, in the order they came, and
    /// empties the batch (lanes past its length hold old pairs, decided and ignored).
    fn decide(&mut self, set_aside: LaneTest, narrow: &mut impl FnMut((u32, u32), Real)) {
        let apart = set_aside(&self.e0, &self.e1, &self.d);
        for ((&pair, &d), apart) in self.pairs.iter().zip(&self.d).zip(apart).take(self.len) {
            if !apart {
                narrow(pair, d);
            }
        }
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The branch-free box tests answer as parry's and as the early returns they replaced, on
    /// boxes that overlap, touch (equal bounds) or miss along each axis.
    #[test]
    fn branch_free_box_tests_answer_as_the_branching_ones() {
        let coordinates = [-1.0, 0.0, 0.5, 1.0, 2.0];
        let mut boxes = Vec::new();
        for (&lo, &hi) in coordinates.iter().zip(&coordinates[1..]) {
            for axis in 0..3 {
                let (mut mins, mut maxs) = (Vec3::zeros(), Vec3::repeat(1.0));
                (mins[axis], maxs[axis]) = (lo, hi);
                boxes.push(Aabb::new(mins.into(), maxs.into()));
            }
        }
        let mut kept_pairs = 0;
        for a in &boxes {
            for b in &boxes {
                assert_eq!(boxes_meet(a, b), a.intersects(b), "{a:?} {b:?}");
                for d in [0.0, 0.25, 0.5] {
                    let branching =
                        d > 0.0 && !(0..3).any(|k| b.mins[k] > a.maxs[k] + d || a.mins[k] > b.maxs[k] + d);
                    assert_eq!(edges_near(d, [a, b]), branching, "{a:?} {b:?} {d}");
                    kept_pairs += usize::from(branching);
                }
            }
        }
        // both answers occur
        assert!(kept_pairs > 0 && kept_pairs < 3 * boxes.len() * boxes.len());
        let items: Vec<u32> = (0..100).collect();
        let every_third = kept(&items, |k| k % 3 == 1);
        assert_eq!(every_third, items.iter().copied().filter(|k| k % 3 == 1).collect::<Vec<_>>());
    }
}
