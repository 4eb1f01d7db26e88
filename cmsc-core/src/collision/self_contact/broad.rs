//! The broad phase of self-collision ([`SelfCollision`]'s docs): parry BVHs over the triangles'
//! and the edges' boxes swept over the step ([`Trees`]), kept from step to step
//! ([`BroadPhase`]), and the [`Candidates`] they give: the pairs a step's detections test,
//! taken with a slack and kept while every vertex stays within it.

use parry3d_f64::bounding_volume::{Aabb, BoundingVolume};
use parry3d_f64::math::Point;
use parry3d_f64::partitioning::{Bvh, BvhBuildStrategy, BvhWorkspace};
use rayon::prelude::*;
use std::ops::Range;

use super::{ContactStep, Moved, SelfCollision};
use crate::math::{Real, Vec3};

/// The broad phase of [`SelfCollision::project`], kept from one step to the next: the trees
/// (parry's refit: the leaves' boxes, then their ancestors', keeping the tree's shape; built
/// afresh after 8 refits, `REBUILD_STEPS`, or when the settings changed), refit only in the
/// steps that query them, and the last step's candidates. The trees only speed up the queries:
/// every leaf's box is exact either way, so what a step finds does not depend on them.
#[derive(Default)]
pub struct BroadPhase {
    trees: Option<Trees>,
    /// The last step's candidate pairs, for the next while they hold.
    pub(super) candidates: Option<Candidates>,
}

impl BroadPhase {
    /// The trees of `sc` for `step` at `x`: as kept (fit to this step where an earlier call of
    /// it fit them, else to an earlier step: [`ContactStep::refit`] fits them where needed), or
    /// built afresh for the step where there are none for these settings.
    pub(super) fn trees(&mut self, sc: &SelfCollision, step: &mut ContactStep, x: &[Vec3]) -> Trees {
        match self.trees.take().filter(|trees| trees.fit_for(sc)) {
            Some(trees) => trees,
            None => {
                step.fitted = Some(x.to_vec());
                Trees::build(sc, step.x_old, x)
            }
        }
    }

    /// Keeps the trees for the next step.
    pub(super) fn keep(&mut self, trees: Trees) {
        self.trees = Some(trees);
    }
}

/// The broad phase's trees ([`swept_bvh`]), grown by [`SelfCollision::margins`]: the
/// triangles', and the edges' in two, the first half of the edges by index and the rest (so
/// that their pairs are found in three traversals that run in parallel,
/// [`SelfCollision::edge_candidates`]; the edges of a mesh numbered row by row, as a grid's
/// are, are then two halves of its surface), with the number of refits since they were built.
pub(super) struct Trees {
    pub(super) triangles: Bvh,
    edges: [Bvh; 2],
    pub(super) refits: usize,
}

impl Trees {
    /// Built for `sc` over the step `x_old → x`, the three trees side by side.
    pub(super) fn build(sc: &SelfCollision, x_old: &[Vec3], x: &[Vec3]) -> Self {
        let [triangle_margin, edge_margin] = sc.margins();
        let [lower, upper] = Self::halves(sc);
        let edges = |half| swept_bvh(&sc.edges, half, x_old, x, edge_margin);
        let (triangles, (lower, upper)) = rayon::join(
            || swept_bvh(&sc.triangles, 0..sc.triangles.len(), x_old, x, triangle_margin),
            || rayon::join(|| edges(lower), || edges(upper)),
        );
        Trees { triangles, edges: [lower, upper], refits: 0 }
    }

    /// The indices of the edges of `sc` in each half of [`Trees`].
    fn halves(sc: &SelfCollision) -> [Range<usize>; 2] {
        let split = sc.edges.len() / 2;
        [0..split, split..sc.edges.len()]
    }

    /// Whether they hold the items of `sc`.
    fn fit_for(&self, sc: &SelfCollision) -> bool {
        self.triangles.leaf_count() as usize == sc.triangles.len()
            && (self.edges.iter().zip(Self::halves(sc)))
                .all(|(tree, half)| tree.leaf_count() as usize == half.len())
    }

    /// Refits them to the step `x_old → x` where a triangle or an edge `moved` (all: `None`),
    /// the three trees side by side (each in a plain loop, [`refit_swept`]). On the 100K calm
    /// drape of `examples/collision_cost.rs` (2 threads) the refits and rebuilds took 0.51 s over
    /// 12 steps one tree after the other and 0.31 s side by side (timers in a build that did not
    /// land): 0.364–0.374 s per step with self-collision and the sphere against 0.385–0.389;
    /// the crumple of `examples/crumple_cost.rs` is as fast (2.89–3.00× against 2.96–3.00×),
    /// with the same states.
    pub(super) fn refit(&mut self, sc: &SelfCollision, x_old: &[Vec3], x: &[Vec3], moved: Option<&Moved>) {
        let [triangle_margin, edge_margin] = sc.margins();
        let (triangles, edges) = (moved.map(|m| &m.triangles[..]), moved.map(|m| &m.edges[..]));
        let [lower, upper] = Self::halves(sc);
        let [lower_tree, upper_tree] = &mut self.edges;
        rayon::join(
            || {
                refit_swept(
                    &mut self.triangles,
                    (&sc.triangles, 0..sc.triangles.len()),
                    x_old,
                    x,
                    triangle_margin,
                    triangles,
                )
            },
            || {
                rayon::join(
                    || refit_swept(lower_tree, (&sc.edges, lower), x_old, x, edge_margin, edges),
                    || refit_swept(upper_tree, (&sc.edges, upper), x_old, x, edge_margin, edges),
                )
            },
        );
    }
}

/// Refits of the broad phase's trees before they are built afresh (8).
pub(super) const REBUILD_STEPS: usize = 8;

/// The pairs a step's detections test (see [`SelfCollision::candidates`]): found once with
/// room for every vertex to move up to `slack` from `x`, they serve every detection of the
/// step while no vertex moved farther (the passes' corrections, the obstacles' pushes).
pub(super) struct Candidates {
    /// Each vertex's box at the step they were taken in: its start and end positions.
    pub(super) boxes: Vec<(Vec3, Vec3)>,
    slack: Real,
    /// What they were taken for: each vertex's distance where it collides (else −1), the
    /// largest distance, and the [`SelfCollision::vertex_reach`] of the vertices' queries.
    reach: Vec<Real>,
    max_distance: Real,
    vertex_reach: Real,
    /// Each edge's larger [`Candidates::reach`] of its two ends.
    pub(super) edge_reach: Vec<Real>,
    /// Vertex–triangle pairs `(vertex, triangle)`, in order.
    pub(super) points: Vec<(u32, u32)>,
    /// Edge pairs `(e, f)`, `e < f`, in order.
    pub(super) pairs: Vec<(u32, u32)>,
}

impl Candidates {
    /// Whether they hold every pair whose boxes meet in the step `x_old → x`: every vertex's
    /// box now (its start and end) lies within its box where they were taken, shifted by one
    /// translation `T` common to all and grown by the slack, so that two items' boxes that meet
    /// now met then, grown by twice the slack (a box test does not change under a common
    /// translation). Per axis, such a `T` exists where the largest rise of a box's upper end
    /// exceeds the smallest rise of a box's lower end by at most twice the slack. A mesh that
    /// moves as a whole (falling, carried) keeps its candidates from step to step.
    pub(super) fn hold(&self, x_old: &[Vec3], x: &[Vec3]) -> bool {
        let far = Vec3::repeat(Real::INFINITY);
        let (low, high) = self.moves(x_old, x).reduce(|| (far, -far), |p, q| (p.0.inf(&q.0), p.1.sup(&q.1)));
        (0..3).all(|a| high[a] - low[a] <= 2.0 * self.slack)
    }

    /// How far each end of each vertex's box in the step `x_old → x` lies from where it was
    /// when they were taken: the lower end's move, the upper end's.
    fn moves<'s>(
        &'s self,
        x_old: &'s [Vec3],
        x: &'s [Vec3],
    ) -> impl IndexedParallelIterator<Item = (Vec3, Vec3)> + 's {
        (x_old, x, &self.boxes[..]).into_par_iter().map(|(a, b, (lo, hi))| (a.inf(b) - lo, a.sup(b) - hi))
    }

    /// The vertices that left the slack in the step `x_old → x` (and the translation of the
    /// others), where they are few enough to take the candidates again for them alone
    /// ([`SelfCollision::retake`]): at most [`STRAY_SHARE`] of the vertices. A vertex stays where
    /// both ends of its box, on every axis, moved within the slack of the translation (per
    /// axis, the median of the ends' moves) since the candidates were taken. That is more than
    /// [`Candidates::hold`] asks (a box that shrank within its old one needs no new pairs), so
    /// that the box it was taken at, shifted, lies within the slack of its box now: a stray's
    /// pairs are then found in the trees, fit to now. On the crumple of
    /// `examples/crumple_cost.rs` (with a slack of 1/2), 9 % of the strays are such shrunk
    /// boxes alone.
    pub(super) fn strays(&self, x_old: &[Vec3], x: &[Vec3]) -> Option<(Vec3, Vec<bool>)> {
        let moves: Vec<(Vec3, Vec3)> = self.moves(x_old, x).collect();
        let shift = Vec3::from_fn(|axis, _| {
            let mut ends: Vec<Real> = moves.iter().flat_map(|(lo, hi)| [lo[axis], hi[axis]]).collect();
            let middle = ends.len() / 2;
            *ends.select_nth_unstable_by(middle, Real::total_cmp).1
        });
        let strays: Vec<bool> = moves
            .par_iter()
            .map(|(lo, hi)| (lo - shift).amax() > self.slack || (hi - shift).amax() > self.slack)
            .collect();
        let count = strays.iter().filter(|&&s| s).count();
        (count as Real <= STRAY_SHARE * strays.len() as Real).then_some((shift, strays))
    }

    /// The triangles paired with vertex `i`, in order.
    pub(super) fn triangles_of(&self, i: u32) -> impl Iterator<Item = u32> + '_ {
        let (start, end) =
            (self.points.partition_point(|p| p.0 < i), self.points.partition_point(|p| p.0 <= i));
        self.points[start..end].iter().map(|p| p.1)
    }

    /// Whether they were taken for these settings: the same vertices colliding, at the same
    /// distances, queried as far.
    pub(super) fn fit(&self, sc: &SelfCollision, w_inv: &[Real]) -> bool {
        self.max_distance == sc.max_distance
            && self.vertex_reach == sc.vertex_reach()
            && self.reach.len() == w_inv.len()
            && (0..w_inv.len()).all(|i| self.reach[i] == sc.reach(i, w_inv))
    }
}

/// The room [`Candidates`] leave for the vertices to move, as a share of the largest contact
/// distance (0.35). With the candidates taken by traversing the trees against each other, 1/4
/// was as fast as 1/2 on the crumple of `examples/crumple_cost.rs` and slower on the calm
/// drape of `examples/collision_cost.rs` (its cloth moved beyond the slack more often), 1/8
/// slower on both. Since the candidates are taken again for the strays alone
/// ([`SelfCollision::retake`]), a smaller slack pays on the crumple (three runs of each in
/// turn, `crumple_cost 48 ratio 40 adaptive`: 3.07–3.24× at 0.35 and 2.98–3.20× at 1/4,
/// against 3.27–3.47× at 1/2), and 0.35 is as fast as 1/2 on the calm drape
/// (`collision_cost -- 10`, self-collision and the sphere, two runs of each: 23.7–25.5 ms per
/// step at 10,000 vertices against 23.7–25.1, 0.398–0.404 s at 100,489 against 0.394–0.400),
/// where 1/4 is slower (24.7–27.3 ms, 0.407–0.409 s against 23.3–25.4 ms, 0.376–0.396 s).
pub(super) const CANDIDATE_SLACK: Real = 0.35;

/// The largest share of the vertices (1/8) that may have left the [`Candidates`]' slack for a
/// take to look for their pairs alone ([`SelfCollision::retake`]); where more did, the
/// candidates are taken afresh. On the crumple of `examples/crumple_cost.rs`, one thread, with
/// a slack of 1/2: 1/16 as fast; 1/4 slower (1,048 takes for the strays instead of 480, their
/// cost near a fresh take's: 14.8–16.0 s against 12.6–13.4).
const STRAY_SHARE: Real = 0.125;

impl SelfCollision {
    /// The pairs whose boxes meet at `x` or would with each vertex moved up to
    /// [`Candidates`]' slack (`CANDIDATE_SLACK` of the largest distance), from `trees` fit to
    /// `x`: every colliding free vertex with the triangles it is not a corner of, by vertex
    /// then triangle, and every pair of edges sharing no vertex, by edge then the later edge.
    pub(super) fn candidates(&self, x_old: &[Vec3], x: &[Vec3], trees: &Trees, w_inv: &[Real]) -> Candidates {
        let slack = CANDIDATE_SLACK * self.max_distance;
        // each vertex's query box: its distance scaled by the reach, grown by the slack's room
        let vertex_reach = self.vertex_reach();
        let query = (vertex_reach, self.query_growth());
        // the edges' two traversals are not split further, the vertices' queries are: each
        // traversal starts at once on a thread of its own, and the queries take what is left
        let [lower_edges, upper_edges] = Trees::halves(self);
        let split = upper_edges.start;
        let [lower_tree, upper_tree] = &trees.edges;
        let (mut pairs, (upper_pairs, points)) = rayon::join(
            || self.edge_candidates(lower_tree, lower_edges, Some((upper_tree, split))),
            || {
                rayon::join(
                    || self.edge_candidates(upper_tree, upper_edges, None),
                    || self.vertex_triangle_candidates(x_old, x, &trees.triangles, query, w_inv),
                )
            },
        );
        pairs.extend(upper_pairs);
        let boxes = x_old.iter().zip(x).map(|(a, b)| (a.inf(b), a.sup(b))).collect();
        let reach: Vec<Real> = (0..x.len()).map(|i| self.reach(i, w_inv)).collect();
        let edge_reach = self.edges.iter().map(|&[i, j]| reach[i as usize].max(reach[j as usize])).collect();
        let max_distance = self.max_distance;
        Candidates { boxes, slack, reach, max_distance, vertex_reach, edge_reach, points, pairs }
    }

    /// `kept` candidates taken again for the vertices that left their slack alone (`strays`,
    /// with the common translation `shift` of the others: [`Candidates::strays`]), with the
    /// trees fit to `x`. The strays' boxes become their boxes now, less `shift`; the pairs with
    /// an item (a vertex, a triangle or an edge) that has a stray vertex are dropped and looked
    /// for afresh: each such item's box from its vertices' candidate boxes, grown as a take
    /// grows it, shifted by `shift` and grown by the slack more (a vertex that stayed has its
    /// candidate box, shifted, within the slack of its box now), is queried in the trees, and
    /// the pairs are kept where their candidate boxes meet, grown as a take's. So the
    /// candidates are what a take would have found with every vertex at its candidate box, and
    /// they hold as a take's do. The crumple of `examples/crumple_cost.rs` leaves the slack in
    /// most steps, but with a few of its vertices: over its 48 frames (with a slack of 1/2),
    /// 480 takes take the strays' pairs again (1.0 ms each on 2 threads) and 238 take all
    /// afresh (3.2 ms), where before 471 took all afresh (a vertex that stayed keeps its older
    /// box, so the candidates are taken more often).
    pub(super) fn retake(
        &self,
        kept: Candidates,
        (shift, strays): (Vec3, Vec<bool>),
        x_old: &[Vec3],
        x: &[Vec3],
        trees: &Trees,
        w_inv: &[Real],
    ) -> Candidates {
        let room = kept.slack * (1.0 + 1e-6);
        let moved = Moved::from_vertices(self, strays);
        let mut boxes = kept.boxes;
        for (i, b) in boxes.iter_mut().enumerate().filter(|&(i, _)| moved.vertices[i]) {
            let (a, c) = (x_old[i], x[i]);
            *b = (a.inf(&c) - shift, a.sup(&c) - shift);
        }
        let (points, pairs) = rayon::join(
            || {
                let found = self.stray_vertex_triangle_candidates(
                    [x_old, x],
                    (&boxes, shift),
                    trees,
                    &moved,
                    room,
                    w_inv,
                );
                let keep = |&(i, t): &(u32, u32)| !moved.vertices[i as usize] && !moved.triangles[t as usize];
                merge(&kept.points, keep, &found)
            },
            || {
                let found = self.stray_edge_candidates((&boxes, shift), trees, &moved, room);
                let keep = |&(e, f): &(u32, u32)| !moved.edges[e as usize] && !moved.edges[f as usize];
                merge(&kept.pairs, keep, &found)
            },
        );
        Candidates { boxes, points, pairs, ..kept }
    }

    /// [`SelfCollision::retake`]'s vertex–triangle pairs with a `moved` vertex or triangle, in
    /// order: each colliding vertex's candidate box (from `boxes`, grown as a take grows it)
    /// shifted by `shift` and grown by `room`, queried in the triangles' tree for a stray, in a
    /// tree of the moved triangles for any other, and the pairs kept where their candidate
    /// boxes meet.
    fn stray_vertex_triangle_candidates(
        &self,
        [x_old, x]: [&[Vec3]; 2],
        (boxes, shift): (&[(Vec3, Vec3)], Vec3),
        trees: &Trees,
        moved: &Moved,
        room: Real,
        w_inv: &[Real],
    ) -> Vec<(u32, u32)> {
        let (grow, reach) = (self.query_growth(), self.vertex_reach());
        let moved_triangles: Vec<u32> =
            (0..self.triangles.len() as u32).filter(|&t| moved.triangles[t as usize]).collect();
        let moved_boxes: Vec<Aabb> = moved_triangles
            .iter()
            .map(|&t| swept_box(&self.triangles[t as usize], [x_old, x], 0.0))
            .collect();
        let moved_tree =
            (!moved_boxes.is_empty()).then(|| Bvh::from_leaves(BvhBuildStrategy::Binned, &moved_boxes));
        (0..x.len() as u32)
            .into_par_iter()
            .filter(|&i| self.collides(i as usize, w_inv))
            .flat_map_iter(|i| {
                let taken = candidate_box(&[i], boxes, self.distance[i as usize] * reach + grow);
                let query = shifted(&taken, shift).loosened(room);
                let mut near: Vec<u32> = if moved.vertices[i as usize] {
                    trees.triangles.intersect_aabb(&query).collect()
                } else if let Some(tree) = &moved_tree {
                    tree.intersect_aabb(&query).map(|k| moved_triangles[k as usize]).collect()
                } else {
                    Vec::new()
                };
                near.retain(|&t| {
                    let triangle = &self.triangles[t as usize];
                    !triangle.contains(&i) && taken.intersects(&candidate_box(triangle, boxes, 0.0))
                });
                near.sort_unstable();
                near.into_iter().map(move |t| (i, t))
            })
            .collect()
    }

    /// [`SelfCollision::retake`]'s edge pairs with a `moved` edge, in order: each moved edge's
    /// candidate box (from `boxes`, grown as the trees' leaves, [`SelfCollision::margins`])
    /// shifted by `shift` and grown by `room`, all in a tree traversed against both of the
    /// edges' trees, and the pairs kept where their candidate boxes meet.
    fn stray_edge_candidates(
        &self,
        (boxes, shift): (&[(Vec3, Vec3)], Vec3),
        trees: &Trees,
        moved: &Moved,
        room: Real,
    ) -> Vec<(u32, u32)> {
        let margin = self.margins()[1];
        let stray: Vec<u32> = (0..self.edges.len() as u32).filter(|&e| moved.edges[e as usize]).collect();
        if stray.is_empty() {
            return Vec::new();
        }
        let taken: Vec<Aabb> =
            stray.iter().map(|&e| candidate_box(&self.edges[e as usize], boxes, margin)).collect();
        let queries: Vec<Aabb> = taken.iter().map(|b| shifted(b, shift).loosened(room)).collect();
        let query_tree = Bvh::from_leaves(BvhBuildStrategy::Binned, &queries);
        let halves = Trees::halves(self);
        let found = |(tree, half): (&Bvh, Range<usize>)| -> Vec<(u32, u32)> {
            meeting_leaves(&query_tree, tree)
                .filter_map(|(k, f)| {
                    let (e, f) = (stray[k as usize], half.start as u32 + f);
                    // a pair of two moved edges once, from its first
                    let once = f != e && (!moved.edges[f as usize] || e < f);
                    let (edge, other) = (self.edges[e as usize], self.edges[f as usize]);
                    (once
                        && !share_a_vertex(edge, other)
                        && taken[k as usize].intersects(&candidate_box(&other, boxes, margin)))
                    .then_some((e.min(f), e.max(f)))
                })
                .collect()
        };
        let (mut pairs, upper) = rayon::join(
            || found((&trees.edges[0], halves[0].clone())),
            || found((&trees.edges[1], halves[1].clone())),
        );
        pairs.extend(upper);
        in_order(pairs, 0..self.edges.len())
    }

    /// [`SelfCollision::candidates`]' vertex–triangle pairs, in order: each colliding vertex's
    /// box ([`SelfCollision::vertex_box`] at `reach`) grown by `grow`, queried in the
    /// `triangles`' tree (whose leaves are the triangles' swept boxes, exactly), the vertices in
    /// parallel. Over the first 11 frames of the crumple
    /// of `examples/crumple_cost.rs` this takes 57 % fewer instructions (callgrind, one thread)
    /// than the traversal of a tree of the query boxes against the triangles' that it replaced:
    /// that tree was built afresh at every take.
    fn vertex_triangle_candidates(
        &self,
        x_old: &[Vec3],
        x: &[Vec3],
        triangles: &Bvh,
        (reach, grow): (Real, Real),
        w_inv: &[Real],
    ) -> Vec<(u32, u32)> {
        (0..x.len() as u32)
            .into_par_iter()
            .filter(|&i| self.collides(i as usize, w_inv))
            .flat_map_iter(|i| {
                let query = self.vertex_box(i as usize, x_old, x, reach).loosened(grow);
                let mut near: Vec<u32> = triangles
                    .intersect_aabb(&query)
                    .filter(|&t| !self.triangles[t as usize].contains(&i))
                    .collect();
                near.sort_unstable();
                near.into_iter().map(move |t| (i, t))
            })
            .collect()
    }

    /// [`SelfCollision::candidates`]' edge pairs sharing no vertex whose first edge is one of
    /// `edges`, those of `tree` ([`Trees`]), in order: the pairs of leaves that meet (each
    /// grown by half of what a pair's boxes may be apart, [`SelfCollision::margins`]) within
    /// `tree`, and between it (the first half) and the tree of the `later` edges (the second)
    /// with their first index. With all edges in one tree, a take waited on one thread for its
    /// traversal and the pairs' ordering while the vertices' queries were done: over the 48
    /// frames of the crumple of `examples/crumple_cost.rs` (2 threads), the takes took 2.0–2.2
    /// s and the vertices' queries 0.95; in halves, the takes take 1.6–1.7 s (each half's
    /// traversal 0.7 s, the halves' against each other 0.05 s).
    fn edge_candidates(
        &self,
        tree: &Bvh,
        edges: Range<usize>,
        later: Option<(&Bvh, usize)>,
    ) -> Vec<(u32, u32)> {
        // the trees' leaves are keyed by their place in their half
        let first = edges.start as u32;
        let apart = |(a, b): (u32, u32)| !share_a_vertex(self.edges[a as usize], self.edges[b as usize]);
        let mut pairs = Vec::new();
        tree.traverse_bvtt_single_tree::<false>(&mut BvhWorkspace::default(), &mut |a, b| {
            let pair = (first + a.min(b), first + a.max(b));
            if apart(pair) {
                pairs.push(pair);
            }
        });
        if let Some((later, later_first)) = later {
            let across = meeting_leaves(tree, later);
            pairs
                .extend(across.map(|(a, b)| (first + a, later_first as u32 + b)).filter(|&pair| apart(pair)));
        }
        in_order(pairs, edges)
    }
}

/// A BVH over the boxes of the `items` (triangles or edges, by vertex index) in `range`, swept
/// from `x_old` to `x`, grown by `margin`; each leaf is keyed by its item's place in `range`
/// (parry's `Bvh::from_iter` keys a tree of one or two leaves 0 and 1 whatever it is given).
fn swept_bvh<const K: usize>(
    items: &[[u32; K]],
    range: Range<usize>,
    x_old: &[Vec3],
    x: &[Vec3],
    margin: Real,
) -> Bvh {
    let boxes: Vec<Aabb> = items[range].par_iter().map(|item| swept_box(item, [x_old, x], margin)).collect();
    Bvh::from_leaves(BvhBuildStrategy::Binned, &boxes)
}

/// Refits a BVH of [`swept_bvh`] (over the `items` in `range`) to the boxes of the `touched`
/// items (by index; all: `None`), in one loop on this thread: the boxes collected in parallel
/// first made the ±40 µC crumple's refits (about 2,100 a run, 1,600–3,200 leaves each) take
/// twice as long on 2 threads as on one, and 4 times as long as this loop; the 100K calm drape
/// of `examples/collision_cost.rs` is as fast either way.
fn refit_swept<const K: usize>(
    bvh: &mut Bvh,
    (items, range): (&[[u32; K]], Range<usize>),
    x_old: &[Vec3],
    x: &[Vec3],
    margin: Real,
    touched: Option<&[bool]>,
) {
    let first = range.start;
    let mut any = false;
    for (k, item) in items[range].iter().enumerate() {
        if touched.is_none_or(|touched| touched[first + k]) {
            bvh.insert_or_update_partially(swept_box(item, [x_old, x], margin), k as u32, 0.0);
            any = true;
        }
    }
    if any {
        bvh.refit_without_opt();
    }
}

/// Which of `items` (triangles or edges, by vertex index) have a corner that `moved`.
pub(super) fn touched_items<const K: usize>(items: &[[u32; K]], moved: &[bool]) -> Vec<bool> {
    items.par_iter().map(|item| item.iter().any(|&i| moved[i as usize])).collect()
}

/// The box of `item` (a triangle or an edge, by vertex index) swept from `x_old` to `x`,
/// grown by `margin`. Its corners' least and greatest coordinates in a plain loop over a fixed
/// number of corners: through [`bounds`]' iterator (a `flat_map` over the corners), the boxes'
/// refits and updates took 272 million instructions over the first 11 frames of the crumple of
/// `examples/crumple_cost.rs`, 3.7 % of the run; this loop takes 138 million (callgrind, one
/// thread), with the same boxes.
#[inline]
pub(super) fn swept_box<const K: usize>(item: &[u32; K], [x_old, x]: [&[Vec3]; 2], margin: Real) -> Aabb {
    let first = x[item[0] as usize];
    let (mut lo, mut hi) = (first, first);
    for &i in item {
        let (a, b) = (x_old[i as usize], x[i as usize]);
        lo = lo.inf(&a).inf(&b);
        hi = hi.sup(&a).sup(&b);
    }
    Aabb::new(Point::from(lo), Point::from(hi)).loosened(margin)
}

/// The box of `points` (at least one), by their componentwise least and greatest coordinates:
/// what `Aabb::from_points` gives, without its generic point-cloud pass (a box of 2–6 points is
/// taken millions of times a second in a crumpling cloth's detections).
#[inline]
pub(super) fn bounds(points: impl IntoIterator<Item = Vec3>) -> Aabb {
    let mut points = points.into_iter();
    let first = points.next().expect("a box of no points");
    let (lo, hi) = points.fold((first, first), |(lo, hi), p| (lo.inf(&p), hi.sup(&p)));
    Aabb::new(Point::from(lo), Point::from(hi))
}

/// The box of an `item` from its vertices' [`Candidates`] `boxes`, grown by `grow`.
fn candidate_box<const K: usize>(item: &[u32; K], boxes: &[(Vec3, Vec3)], grow: Real) -> Aabb {
    let (mut lo, mut hi) = boxes[item[0] as usize];
    for &v in &item[1..] {
        let (a, b) = boxes[v as usize];
        (lo, hi) = (lo.inf(&a), hi.sup(&b));
    }
    Aabb::new(lo.into(), hi.into()).loosened(grow)
}

/// `b` moved by `shift`.
fn shifted(b: &Aabb, shift: Vec3) -> Aabb {
    Aabb::new(b.mins + shift, b.maxs + shift)
}

/// Whether edges `[i, j]` and `[k, l]` have an end in common (such pairs are never tested).
pub(super) fn share_a_vertex([i, j]: [u32; 2], [k, l]: [u32; 2]) -> bool {
    k == i || k == j || l == i || l == j
}

/// The pairs of a leaf of `a` and a leaf of `b` whose boxes meet. parry's `leaf_pairs` yields
/// its first pairs of nodes unchecked (two leaves at a root among them), so each pair's leaves
/// are checked again, as the traversal checks the others.
fn meeting_leaves<'t>(a: &'t Bvh, b: &'t Bvh) -> impl Iterator<Item = (u32, u32)> + 't {
    let meet = |i: u32, j: u32| a.leaf_node(i).zip(b.leaf_node(j)).is_some_and(|(p, q)| p.intersects(q));
    a.leaf_pairs(b, |p, q| p.intersects(q)).filter(move |&(i, j)| meet(i, j))
}

/// `pairs` in order, by their first then their second element, each first element in
/// `firsts`: counted into one bucket per first element, then each bucket sorted. A broad
/// phase's pairs are tens of thousands, a few dozen per item: in the crumple of
/// `examples/crumple_cost.rs` this took 0.36 s where one sort of them all took 0.59 (measured
/// when it ordered the vertex–triangle pairs too; it now orders the edge pairs only).
fn in_order(pairs: Vec<(u32, u32)>, firsts: Range<usize>) -> Vec<(u32, u32)> {
    let bucket = |a: u32| a as usize - firsts.start;
    let start = run_starts(pairs.iter().map(|&(a, _)| bucket(a)), firsts.len());
    let mut sorted = vec![(0, 0); pairs.len()];
    let mut next = start.clone();
    for pair in pairs {
        sorted[next[bucket(pair.0)]] = pair;
        next[bucket(pair.0)] += 1;
    }
    for bucket in start.windows(2) {
        sorted[bucket[0]..bucket[1]].sort_unstable_by_key(|&(_, b)| b);
    }
    sorted
}

/// Where the run of each key starts when `keys` (each below `count`) are put in order by
/// counting, and at the end where the last run ends.
pub(super) fn run_starts(keys: impl Iterator<Item = usize>, count: usize) -> Vec<usize> {
    let mut start = vec![0usize; count + 1];
    for key in keys {
        start[key + 1] += 1;
    }
    for k in 0..count {
        start[k + 1] += start[k];
    }
    start
}

/// The `kept` pairs that `keep` holds, with the `found` pairs (each in order, none in
/// common), in order: merged in parallel, in pieces of `kept` of 4,096 pairs.
fn merge(
    kept: &[(u32, u32)],
    keep: impl Fn(&(u32, u32)) -> bool + Sync,
    found: &[(u32, u32)],
) -> Vec<(u32, u32)> {
    const PIECE: usize = 4096;
    let pieces = kept.len().div_ceil(PIECE).max(1);
    // where each piece's share of `found` starts
    let start = |k: usize| match k {
        0 => 0,
        k if k >= pieces => found.len(),
        k => found.partition_point(|p| *p < kept[k * PIECE]),
    };
    let merged: Vec<(u32, u32)> = (0..pieces)
        .into_par_iter()
        .flat_map_iter(|k| {
            let piece = &kept[(k * PIECE).min(kept.len())..((k + 1) * PIECE).min(kept.len())];
            let mut found = found[start(k)..start(k + 1)].iter().copied().peekable();
            let mut merged = Vec::with_capacity(piece.len() + found.len());
            for &pair in piece.iter().filter(|p| keep(p)) {
                while let Some(earlier) = found.next_if(|&q| q < pair) {
                    merged.push(earlier);
                }
                merged.push(pair);
            }
            merged.extend(found);
            merged
        })
        .collect();
    debug_assert!(merged.windows(2).all(|w| w[0] < w[1]), "merged out of order");
    merged
}
