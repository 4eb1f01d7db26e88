//! Self-collision of the simulated mesh; the method and its cost are documented on [`SelfCollision`].
//! Here: the settings, the passes, the impact zones and the broad phase; the exact test of one
//! pair over the step is the [`narrow`] phase.

mod narrow;

use nalgebra::Rotation3;
use parry3d_f64::bounding_volume::{Aabb, BoundingVolume};
use parry3d_f64::math::Point;
use parry3d_f64::partitioning::{Bvh, BvhBuildStrategy, BvhWorkspace};
use rayon::prelude::*;
use std::ops::Range;

use parry3d_f64::shape::TrianglePointLocation;

use super::geometry::{check_triangles, closest_on_triangle, edges_of, triangle_normal};
use crate::error::{Error, Result};
use crate::math::{Mat3, Real, Vec3};
use narrow::{
    apart_lanes, barycentric, edge_edge, meeting_reach2, vertex_apart_lanes, vertex_triangle_crossing, Ends,
    LaneTest, INSIDE, LANES,
};

/// Most detection passes per step: each finds the violated contacts at the current positions
/// and runs `SWEEPS` (4) Gauss–Seidel sweeps over them; the loop stops as soon as no contact is
/// violated by more than [`TOLERANCE`] of its distance, or after 3 passes without a 10 %
/// improvement (the two charged sheets of `tests/contacts.rs` take 2–3 passes a step while
/// pressed together; 64 bounds the cost of a pathological step).
pub const PASSES: usize = 64;

/// Self-collision of the simulated mesh: every vertex `i` with a distance `d_i > 0` keeps at
/// least `d_i` from every triangle it is not a corner of, and does not pass through one in a
/// step. Position-based projection in the style of [Liu 2013](crate#references) §4.1, applied
/// after the integrator and pins, before the obstacles (step.rs).
///
/// **Contacts.** Each contact is a constraint `C(x) = n · Σ_k w_k x_k − d_i ≥ 0` on four
/// vertices with `Σ_k w_k = 0`:
///
/// * *vertex–triangle*: vertex `p = x_i` and triangle `(a, b, c)` (unit normal `n` at the
///   current positions, `n_0` at `x_t`), `w = (1, −β_a, −β_b, −β_c)` with `β` the barycentrics
///   of the closest point `q`. If `q` is inside the face, with `σ_0 = sign((x_{t,i} − a_t)·n_0)`
///   the side it was on at the start of the step and `η = (p − a)·n`, the contact holds when
///   `σ_0 η < d_i` (it passed through, or is closer than `d_i`) and `|η| < d_i` plus what the
///   vertex moved in the step relative to the point under it (a triangle turning over far
///   from a vertex flips its side without meeting it); its direction is `σ_0 n`, the side it came
///   from. If `q` is on an edge or corner and `|p − q| < d_i`, the direction is `(p − q)/|p − q|`
///   — unless the swept test (below) finds that the vertex passed through the face in the step:
///   then the contact has direction `±n`, the side it came from, whatever the end state shows
///   (a vertex crossing near an edge ends beyond it, below the plane and out of reach).
/// * *edge–edge*: a vertex test alone lets an edge pass through a triangle whose plane its ends
///   cross outside the face (around a border, or into a fold). So every pair of mesh edges
///   `(i, j)`, `(k, l)` that share no vertex is also tested, once, at the distance `d` of the
///   pair, the largest `d_k` of its free ends: with `n ∝ (x_j − x_i) × (x_l − x_k)` (oriented
///   as at the start of the step) and the
///   signed distance `η = (x_i − x_k)·n` of the two lines, if the closest points (parameters
///   `s`, `t`) are interior and `0 ≤ σ_0 η < d`, the contact has `w = (1 − s, s, −(1 − t), −t)`
///   and direction `σ_0 n`. A change of the lines' side (`σ_0 η < 0`) is a crossing only where
///   the swept test finds that the segments met in the step (the lines of near-parallel edges
///   sliding across each other change sides without meeting, and pushing them back would
///   take them through each other); the contact then has the lines' normal at the end,
///   pointing to the side the edge came from, and `s`, `t` of the closest points at the end.
///   Lines that end on their side may still have changed sides twice, once with the segments
///   apart and once meeting: wherever the segments end closer than twice what their ends
///   moved relative to each other in the step (they cannot have met otherwise), the swept
///   test decides first (and likewise for a vertex and a triangle). Before, such a pair, in
///   a cloth folding fast, was kept at its distance on the side it had passed to.
///   Edges near-parallel (under 1e-3 rad) at the start or the end have no reliable side: only
///   the swept test applies to them. (In the friction pass, which does not sweep, a change of
///   side counts while the segments are within `d_i` plus twice what their ends moved relative
///   to each other in the step.)
///
/// **Swept (continuous) tests.** Each detection pass also tests the straight motion of every
/// vertex from `x_t` to its position at the start of the pass, `x(τ) = x_t + τ (x − x_t)`, `τ ∈
/// [0, 1]`: a vertex meets a triangle's plane (or four edge ends are coplanar) at the roots of
/// the cubic `((x_b − x_a) × (x_c − x_a)) · (x_p − x_a) = 0` (Provot 1997; Bridson, Fedkiw &
/// Anderson 2002); a root where the pair changes sides and the vertex is inside the triangle
/// (barycentrics down to −1e-6), or the two segments' closest points meet (within 1e-6 of their
/// lengths), is a meeting, and an odd number of meetings is a crossing (met twice, the pair
/// went through and back). The roots are not taken from a closed form: the critical points
/// split `[0, 1]` into intervals where the cubic is monotone, and each sign change is refined
/// by Newton's method kept inside its bracket (a double root, where the cubic only touches 0,
/// counts as one root and is no change of side). A root at `τ = 0` (on the plane at the start)
/// is not a crossing within the step, and a cubic that vanishes throughout (motion within the
/// triangle's plane) has none. The contact keeps the side the pair was on before its last
/// meeting and is projected as any other. Every pass sweeps, not only the first: the first
/// sweeps the step's motion `x_t → x_in`; the later ones sweep to the positions the projection
/// produced, which the step ends with (the velocities gain `Δx/h`, so `x_t → x` is the step
/// taken). A crossing that one pass could not fully undo (conflicting contacts) is found again,
/// with the side it came from — the proximity test alone would see a vertex beyond a triangle's
/// edge and push it along `p − q`, further through — and a projection that pushes a vertex or
/// an edge through another triangle is caught. The friction pass (after the contacts hold) does
/// not sweep.
///
/// **Resolution.** Each detection pass finds the violated contacts at the current positions
/// (in parallel over vertices) and projects them in `SWEEPS` (4) Gauss–Seidel sweeps, each
/// contact by mass: `Δx_k = W_k w_k Δλ n` with `W_k = 1/m_k` (0 for a pinned vertex) and
/// `Δλ = −C / Σ_k W_k w_k²`. Passes repeat until no contact is violated by more than
/// [`TOLERANCE`] of its distance, so a layer pressed by a strong attraction ends the step at
/// its contact distance, or until they stop improving (contacts that cannot all hold: a fold
/// pinned at its apex closes below `d` there), at most [`PASSES`]. Contacts are swept vertex
/// by vertex (each vertex's edge–edge contacts, then its vertex–triangle ones), and the broad
/// phase returns candidates in index order, so a step's result does not depend on the trees'
/// shape.
///
/// **Fail-safe: impact zones.** Where the passes stop with a contact still crossed (`C < −d`,
/// on the far side: conflicting contacts of a crumpled layer pressed by strong charges, where
/// each pass's pushes make new crossings and more passes only spread them), the vertices of
/// the crossed contacts are joined into zones that move as rigid bodies (Provot 1997's rigid
/// impact zones): each zone keeps its shape from the start of the step, which had no crossing,
/// and the linear and angular momentum of its moves; a zone with pinned vertices moves with
/// them instead (the rigid motion that fits their moves, exact where the pins move rigidly:
/// static, or carried as one). Zones grow while they cross something outside them. Measured
/// on the ±36 µC crumple
/// (`examples/crumple_cost.rs`): without them the passes left contacts 2.5 distances through at
/// frame 24–32 and the fold tangled; with them it runs its 2 s untangled.
///
/// Every vertex's velocity then gains `Δx/h` for the total `Δx` the contacts moved it, so
/// state and velocity stay consistent.
///
/// **Friction between layers** ([`SelfCollision::with_friction`]): a contact of vertex `i` keeps
/// the fraction `exp(−μ_i h)` of its tangential slip per step, a rate `μ_i` per second, so the
/// slip lost per second of contact does not depend on the number of substeps (nor on whether
/// an obstacle pushed a vertex in the step, which projects the step again).
///
/// **Broad phase.** parry BVHs (binned SAH builds), one over every triangle's box and two over
/// the edges' (the first half of the edges by index and the rest, so that their pairs are found
/// in parallel), swept from `x_t` to the current positions, the edges' grown by `max d_i`,
/// kept from step to step ([`BroadPhase`]) and refit only in the steps that query them. A
/// detection queries them for *candidates*: each colliding vertex with the triangles whose
/// boxes meet its swept box grown by `d_i` (by `1.1 d_i` where the layers have friction, whose
/// faces are then among them), each edge with the later edges whose boxes meet its
/// swept box, both queries grown further by twice a slack of `0.35 max d_i`. So the candidates
/// hold every pair whose boxes can meet while every vertex stays within the slack of its swept
/// box where they were taken, up to one translation of the whole mesh (the passes'
/// corrections, the obstacles' pushes and, on a calm or falling scene, the next steps mostly
/// do), and they are kept from step to step while they hold. Where a few vertices (at most an
/// eighth) left the slack, the pairs of their triangles and edges alone are taken again
/// (`SelfCollision::retake`); where more did, all are taken afresh. A step's first detection
/// tests them all; each later detection of the step ([`ContactStep`]) tests only those with a
/// vertex that moved since the last detection (a pair's contact depends on its own four
/// vertices alone), with the boxes of the rest kept, and keeps what the last detection found
/// for the others. Every test is the box test the trees
/// would apply, then the narrow phase (whose vertex–triangle swept test runs only where the
/// vertex's path meets the triangle's swept box). What a step finds is the same as from fresh
/// queries at every pass (tests check it bit for bit), and does not depend on the trees'
/// shape: candidates and contacts are taken in index order.
///
/// **Limits.** `d_i` should stay below about half the shortest edge, or neighbours within the
/// mesh count as contacts. The swept tests find passes through a triangle or an edge over the
/// step's straight motion, exactly up to rounding, but they are not a thickness-aware time of
/// impact: `d_i` is held at the end of each step, not during it, and motion inside a step is
/// taken as straight (the integrator's path between `x_t` and `x` is not). A crossing the
/// passes leave is undone by the impact zones, within 16 rounds; where a zone's pins do not
/// move rigidly in the step (a pinned layer stretching), it follows their best fit and a
/// crossing can remain. Edges within 1e-3 rad of parallel at the end of the step are left to
/// the vertex test.
///
/// ## Momentum and energy
/// Every correction is an equal-and-opposite internal impulse (`Σ_k m_k Δx_k = Δλ n Σ_k w_k = 0`
/// when no corner is pinned; a pinned corner takes its share as the world does), and so is the
/// friction's: linear momentum is conserved by the contact response. The approach velocity is
/// removed (inelastic: kinetic energy is lost).
///
/// ## Cost
/// Per step: one query per colliding vertex and per edge for the candidates where they no
/// longer hold, after refitting the two trees (`O(T)` for `T` triangles and edges; a rebuild,
/// `O(T log T)`, after 8 refits), and per detection the tests of the candidates (all, or those
/// with a vertex that moved since the last). Measured by
/// `cargo run --release -p cmsc-core --example collision_cost -- 5` on the 2-core VM (2 rayon
/// threads), a cloth draped on a sphere, Coulomb off, seconds per step, in two runs
/// alternating with a build of the code before (commit 70030f3: candidates held only by fixed
/// boxes, trees refit every step, triangles' boxes grown by the distance on both sides):
///
/// | n vertices | plain | self-collision | before | mesh collider (4K-triangle sphere) | both | before |
/// |---:|---:|---:|---:|---:|---:|---:|
/// | 10 000  | 0.0085–0.0090 | 0.0124–0.0134 | 0.0200–0.0207 | 0.0123–0.0133 | 0.0194–0.0209 | 0.0260–0.0268 |
/// | 100 489 | 0.130–0.132   | 0.177–0.184   | 0.312–0.316   | 0.157–0.158   | 0.249–0.259   | 0.356–0.357   |
///
/// Self-collision alone costs 1.4–1.5 plain steps at 10K and 1.4 at 100K; before, 1.9–2.1
/// and 2.0 of the old build's own plain steps (0.0100–0.0105 and 0.156–0.163 s in the same
/// runs): the falling drape moved its candidates out of their fixed boxes every step. With a
/// collider that pushes vertices every step, the step projects self-collision again
/// (`step.rs`, stage 4), hence the "both" column. On the ±40 µC crumple at the add-on's
/// defaults (`examples/crumple_cost.rs`, 48 frames, 634 steps, layers pressed together onto
/// the sphere, about 6 detections per step), 13.6–14.8 ms per step against 3.3–3.8 ms with
/// the sphere alone (about 4×; 19.4–20.7 ms before in the same runs, and 38–40 ms two
/// versions back). Since, on another 2-core VM (598 steps, about 8 detections per step):
/// 15.6–15.9 ms per step against 4.5–4.6, 3.43–3.51× (`crumple_cost 48 ratio 40 adaptive`;
/// the example's docs keep each change's figures); with the candidates taken again for the
/// strays alone, 15.2–15.6 ms against 4.5, 3.38–3.44×; with the sweeps' order by counting,
/// 14.9–15.5 ms against 4.6–4.8, 3.11–3.28×; with a slack of 0.35 `max d_i` instead of 1/2,
/// 14.8–15.5 ms against 4.6–5.1, 3.07–3.24×; with the trees' leaves refit in a plain loop and
/// each edge's reach kept with the candidates, 13.4–13.6 ms against 4.5–4.6, 2.93–3.04×.
///
/// Self-collision settings: the triangles that repel and each vertex's distance.
#[derive(Debug, Clone, PartialEq)]
pub struct SelfCollision {
    triangles: Vec<[u32; 3]>,
    /// Every edge of the triangles once, `[i, j]` with `i < j`.
    edges: Vec<[u32; 2]>,
    /// `d_i` per vertex (m), `>= 0`; 0: the vertex does not collide.
    distance: Vec<Real>,
    max_distance: Real,
    /// Friction rate `μ_i` per vertex (1/s), `>= 0`: a contact of vertex `i` keeps the fraction
    /// `exp(−μ_i h)` of its tangential slip per step of length `h`.
    friction: Vec<Real>,
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
        let edges = edges_of(triangles);
        Ok(SelfCollision {
            triangles: triangles.to_vec(),
            edges,
            distance: distance.to_vec(),
            max_distance,
            friction: vec![0.0; x.len()],
        })
    }

    /// Sets the friction between layers: a contact of vertex `i` keeps the fraction
    /// `exp(−rate[i] h)` of its tangential slip per step of length `h` (`rate` in 1/s, one per
    /// vertex; 0: frictionless, the default). A rate per second, not a factor per step, so that
    /// the slip lost per second of contact does not depend on the number of substeps: over a
    /// time `T` the slip keeps `exp(−rate T)` at any `h`. The tangential correction is shared
    /// by mass between the vertex and the triangle (or the two edges) as the normal one is, so
    /// it conserves linear momentum.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: not one value per vertex, negative or not finite.
    pub fn with_friction(mut self, rate: &[Real]) -> Result<Self> {
        if rate.len() != self.distance.len() {
            return Err(Error::invalid(
                "friction",
                None,
                format!("has {} values, expected one per vertex ({})", rate.len(), self.distance.len()),
            ));
        }
        if let Some(i) = rate.iter().position(|r| !(r.is_finite() && *r >= 0.0)) {
            return Err(Error::invalid(
                "friction",
                Some(i),
                format!("{} is not a finite rate >= 0 1/s", rate[i]),
            ));
        }
        self.friction = rate.to_vec();
        Ok(self)
    }

    /// The friction rate per vertex (1/s), see [`SelfCollision::with_friction`].
    pub fn friction(&self) -> &[Real] {
        &self.friction
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
    /// velocities `v` (m/s) of `step` (its start positions and where it arrived), given the
    /// masses `mass` (kg) and the step `h` (s). `broad` keeps the broad phase's trees from one
    /// step to the next. A step may be projected more than once (`step.rs` projects it again
    /// after the obstacles pushed vertices); each call adds `Δx/h` to the velocities for what
    /// it moved, and the first alone takes the friction between layers. Returns the number of
    /// vertices moved.
    pub fn project(
        &self,
        step: &mut ContactStep,
        x: &mut [Vec3],
        v: &mut [Vec3],
        (mass, pinned): (&[Real], &[bool]),
        h: Real,
        broad: &mut BroadPhase,
    ) -> usize {
        if self.triangles.is_empty() || self.max_distance <= 0.0 {
            return 0;
        }
        // inverse masses: pinned vertices take no share of a correction
        let w_inv: Vec<Real> =
            mass.iter().zip(pinned).map(|(&m, &p)| if p || m <= 0.0 { 0.0 } else { 1.0 / m }).collect();
        // the shares of a correction: none for the vertices an obstacle holds
        let held: Option<Vec<Real>> = step
            .backed
            .as_ref()
            .map(|backed| w_inv.iter().zip(backed).map(|(&w, &b)| if b { 0.0 } else { w }).collect());
        let w_move = held.as_deref().unwrap_or(&w_inv);
        let x_entry = x.to_vec();
        let (mut best, mut stalled) = (Real::INFINITY, 0);
        let mut trees = broad.trees(self, step, x);
        step.candidates = broad.candidates.take().filter(|c| c.fit(self, &w_inv));
        let mut found;
        let mut crossed;
        let mut pass = 0;
        loop {
            found = self.detect(step, x, &mut trees, &w_inv);
            let worst = found.iter().map(|c| -c.gap(x) / c.d).fold(0.0, Real::max);
            crossed = worst > 1.0;
            if worst <= TOLERANCE || pass == PASSES {
                break;
            }
            // contacts that cannot all hold (a fold pinned at its apex closes below the
            // distance there) stop improving: more passes would only push the mesh around
            if worst < STALL * best {
                (best, stalled) = (worst, 0);
            } else {
                stalled += 1;
                if stalled >= STALLED_PASSES {
                    break;
                }
            }
            // this pass's contacts only: one found in an earlier pass holds its normal and
            // weights from then, a half-space that no longer describes the pair once it slid
            for _ in 0..SWEEPS {
                for c in &found {
                    c.project(x, w_move);
                }
            }
            pass += 1;
        }
        if crossed {
            self.impact_zones(step, found, x, &mut trees, [&w_inv, w_move], mass);
        }
        if !step.rubbed && self.rubs() {
            // friction on the vertices touching a triangle (within `FRICTION_REACH` of their
            // distance, so a layer resting at its distance counts whether or not this step
            // pressed it in): once per vertex, on its closest face, whatever else it touches;
            // once per step, in its first projection (a second, after the obstacles' pushes,
            // would take the slip's share again)
            step.rubbed = true;
            for c in &self.touching(step, x, &mut trees, &w_inv) {
                let mu = self.friction[c.idx[0] as usize];
                c.friction(step.x_old, x, &w_inv, 1.0 - (-mu * h).exp());
            }
        }
        broad.keep(trees);
        broad.candidates = step.candidates.take();
        let mut moved = 0;
        for ((v, (x, x_entry)), &w) in v.iter_mut().zip(x.iter().zip(&x_entry)).zip(&w_inv) {
            let dx = x - x_entry;
            if w > 0.0 && dx != Vec3::zeros() {
                // Δv = Δx / h: Σ m Δx = 0 for every contact, so momentum is unchanged
                *v += dx / h;
                moved += 1;
            }
        }
        moved
    }

    /// Every violated contact at `x` (see [`SelfCollision::vertex_triangle`] for the step's
    /// `x_in`), in the order of [`SelfCollision::sweep_order`]; `step` then remembers the
    /// detection. The pairs tested are the step's [`Candidates`], taken from `trees` (refit to
    /// `x` first) when there are none yet or a vertex moved farther than their slack; after an
    /// earlier detection of the same step, only the pairs with a vertex that moved since are
    /// tested again.
    fn detect(&self, step: &mut ContactStep, x: &[Vec3], trees: &mut Trees, w_inv: &[Real]) -> Vec<Contact> {
        if !step.candidates.as_ref().is_some_and(|c| step.reuse && c.hold(step.x_old, x)) {
            step.refit(self, trees, x);
            let kept = step.candidates.take().filter(|_| step.reuse);
            let strays = kept.as_ref().and_then(|kept| kept.strays(step.x_old, x));
            step.candidates = Some(match kept.zip(strays) {
                Some((kept, strays)) => {
                    step.retakes += 1;
                    self.retake(kept, strays, step.x_old, x, trees, w_inv)
                }
                None => self.candidates(step.x_old, x, trees, w_inv),
            });
            step.takes += 1;
            step.last = None;
        }
        let candidates = step.candidates.as_ref().expect("just taken");
        let arrived = [step.x_old, &step.x_in[..]];
        step.detections += 1;
        let detection = match step.last.take() {
            Some(last) => {
                step.retests += 1;
                let moved = Moved::new(self, x, &last.x);
                let touches = |idx: &[u32]| idx.iter().any(|&v| moved.vertices[v as usize]);
                let mut found = self.test(candidates, arrived, x, Some((&moved, last.boxes)));
                found.pairs.extend(last.pairs.into_iter().filter(|c| !touches(&c.idx)));
                found.points.extend(last.points.into_iter().filter(|c| !touches(&c.idx)));
                found.pairs.par_sort_by_key(|c| (c.idx[0], c.idx[1], c.key));
                found.points.par_sort_by_key(|c| (c.idx[0], c.key));
                found
            }
            None => self.test(candidates, arrived, x, None),
        };
        let found = self.sweep_order(&detection.pairs, &detection.points, w_inv);
        step.last = Some(detection);
        found
    }

    /// The pairs whose boxes meet at `x` or would with each vertex moved up to
    /// [`Candidates`]' slack (`CANDIDATE_SLACK` of the largest distance), from `trees` fit to
    /// `x`: every colliding free vertex with the triangles it is not a corner of, by vertex
    /// then triangle, and every pair of edges sharing no vertex, by edge then the later edge.
    fn candidates(&self, x_old: &[Vec3], x: &[Vec3], trees: &Trees, w_inv: &[Real]) -> Candidates {
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
    fn retake(
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

    /// The violated contacts among the `candidates`, each by a box test at `x` (a vertex's box
    /// against a triangle's, or an edge's against the later edge's grown by the pair's
    /// distance, [`edge_pair_distance`]) and then the narrow phase, in the candidates' order:
    /// all of them, or, `since` the step's last detection, those with a vertex that moved
    /// since, with the boxes of the others kept from it.
    fn test(
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
                let near = chunk
                    .iter()
                    .filter(|&&(i, t)| {
                        (vertex_moved(i) || triangle_moved(t))
                            && vertex_boxes[i as usize].intersects(&triangle_boxes[t as usize])
                    })
                    .map(|&(i, t)| {
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
                let near =
                    chunk.iter().filter(|&&(e, f)| edge_moved(e) || edge_moved(f)).filter_map(|&pair| {
                        let [e, f] = [pair.0, pair.1].map(|k| k as usize);
                        let d = edge_pair_distance(
                            [edge_reach[e], edge_reach[f]],
                            [&edge_boxes[e], &edge_boxes[f]],
                        )?;
                        Some((pair, edge_ends(&self.edges, pair), d))
                    });
                narrow_in_batches(near, apart_lanes, positions, |(e, f), d| {
                    self.edge_pair(e, f, d, arrived, x)
                })
            })
            .collect();
        Detection { x: x.to_vec(), boxes, pairs, points }
    }

    /// Whether vertex `i` has contacts of its own: free, with a distance. A pinned vertex is a
    /// triangle corner or edge end of the free vertices' contacts, never their vertex: its own
    /// contacts (with the other flap of a pinned hinge, say) are pinned closer than their
    /// distance and could only kick the free corners.
    fn collides(&self, i: usize, w_inv: &[Real]) -> bool {
        self.distance[i] > 0.0 && w_inv[i] > 0.0
    }

    /// What the trees' boxes ([`swept_bvh`]) are grown by (m): the triangles' not at all (a
    /// vertex's query box carries its own distance, [`SelfCollision::vertex_box`]), the edges'
    /// by half the largest distance and the candidates' slack (with room for rounding), so
    /// that two edges' leaves meet where their swept boxes come within the largest distance of
    /// each other with every vertex moved up to the slack ([`SelfCollision::candidates`]).
    fn margins(&self) -> [Real; 2] {
        [0.0, self.max_distance / 2.0 + CANDIDATE_SLACK * self.max_distance * (1.0 + 1e-6)]
    }

    /// What a vertex's box is grown by (m) for its candidate triangles, beyond its distance:
    /// twice the [`Candidates`]' slack (with room for rounding), so that it meets a triangle's
    /// box where the two could meet with every vertex moved up to the slack.
    fn query_growth(&self) -> Real {
        2.0 * CANDIDATE_SLACK * self.max_distance * (1.0 + 1e-6)
    }

    /// What a vertex's distance is scaled by in the candidates' vertex queries: 1, or
    /// [`FRICTION_REACH`] where a vertex has friction between layers, so that the faces the
    /// friction looks for ([`SelfCollision::touching`]) are among the candidates wherever they
    /// hold.
    fn vertex_reach(&self) -> Real {
        if self.rubs() {
            FRICTION_REACH
        } else {
            1.0
        }
    }

    /// Whether any vertex has friction between layers: the friction pass runs, and the
    /// candidates are taken for it ([`SelfCollision::vertex_reach`]).
    fn rubs(&self) -> bool {
        self.friction.iter().any(|&f| f > 0.0)
    }

    /// Vertex `i`'s distance where it collides, else −1.
    fn reach(&self, i: usize, w_inv: &[Real]) -> Real {
        if self.collides(i, w_inv) {
            self.distance[i]
        } else {
            -1.0
        }
    }

    /// The fail-safe for crossings the passes left (Provot 1997's rigid impact zones): the
    /// vertices of every contact still crossed (`C < −d`: on the far side) are joined into
    /// zones, the zones of contacts sharing a vertex merged, and each zone moves as a rigid
    /// body from its start positions, with the linear and angular momentum of its vertices'
    /// moves in the step ([`rigid_zone_moves`]). Pairs within a zone keep their relative
    /// positions from the start of the step, where nothing was crossed, so they do not cross in
    /// it; a zone that now crosses something outside grows, until no crossing is left or
    /// [`ZONE_ROUNDS`] (every round detects again). A zone that takes in a pinned vertex (a
    /// contact with a pinned triangle or edge) moves instead with its pinned vertices, which
    /// keep their targets ([`rigid_zone_moves`]): before, pinned vertices belonged to no zone,
    /// and a free vertex crossed through a pinned triangle was a zone of one, left where the
    /// passes left it (`tests/contacts.rs`, a patch thrown between two pinned sheets).
    fn impact_zones(
        &self,
        step: &mut ContactStep,
        mut found: Vec<Contact>,
        x: &mut [Vec3],
        trees: &mut Trees,
        [w_inv, w_move]: [&[Real]; 2],
        mass: &[Real],
    ) {
        let x_old = step.x_old;
        let mut zone: Vec<u32> = (0..x.len() as u32).collect();
        fn root(zone: &mut [u32], mut v: u32) -> u32 {
            while zone[v as usize] != v {
                zone[v as usize] = zone[zone[v as usize] as usize];
                v = zone[v as usize];
            }
            v
        }
        for round in 0..ZONE_ROUNDS {
            if round > 0 {
                found = self.detect(step, x, trees, w_inv);
            }
            let crossed: Vec<&Contact> = found.iter().filter(|c| -c.gap(x) > c.d).collect();
            if crossed.is_empty() {
                return;
            }
            for c in crossed {
                for pair in c.idx.windows(2) {
                    let (a, b) = (root(&mut zone, pair[0]), root(&mut zone, pair[1]));
                    zone[a.max(b) as usize] = a.min(b);
                }
            }
            let roots: Vec<u32> = (0..x.len() as u32).map(|v| root(&mut zone, v)).collect();
            rigid_zone_moves(&roots, x_old, x, w_move, mass);
        }
    }

    /// The order of the Gauss–Seidel sweeps: vertex by vertex, each colliding free vertex's
    /// edge–edge contacts (those with an edge ending at it), then its vertex–triangle
    /// contacts. An edge–edge contact is swept once per colliding free end, up to four times:
    /// the sweeps then weigh edges and faces as the vertex-by-vertex detection of earlier
    /// versions did. (Swept once each, all edge pairs before all faces, a frictionless layer
    /// slid 10 % faster than it can fall down its slope at h = 1/120 s, `tests/contacts.rs`;
    /// all faces first, the V-fold of `tests/self_collision.rs` crossed near its pinned fold.)
    /// Put in order by counting, not by a sort of (vertex, kind, index) as before: on the
    /// crumple of `examples/crumple_cost.rs` (about 4,800 detections of about 1,000 contacts
    /// each) 14.85–15.47 ms per step against 15.73–16.08 on 2 threads (this runs on one, while
    /// the other waits), 13.8–13.9 s against 14.1–14.3 on one, the same states.
    fn sweep_order(&self, pairs: &[Contact], points: &[Contact], w_inv: &[Real]) -> Vec<Contact> {
        let collides = |v: &u32| w_inv[*v as usize] > 0.0 && self.distance[*v as usize] > 0.0;
        // each contact with the vertex it is swept for, the edge pairs first, each in order
        let swept = || {
            let edge_pairs =
                pairs.iter().flat_map(|c| c.idx.into_iter().filter(collides).map(move |v| (v, c)));
            edge_pairs.chain(points.iter().map(|c| (c.idx[0], c)))
        };
        // counted into one run per vertex, each run in that order
        let mut start = run_starts(swept().map(|(v, _)| v as usize), w_inv.len());
        let Some((_, &first)) = swept().next() else {
            return Vec::new();
        };
        let mut order = vec![first; start[w_inv.len()]];
        for (v, &c) in swept() {
            order[start[v as usize]] = c;
            start[v as usize] += 1;
        }
        order
    }

    /// The contacts the friction between layers acts on at `x`: each vertex with a distance and
    /// friction with its [`SelfCollision::closest_face`]. The faces whose swept boxes meet the
    /// vertex's query box are the step's candidates of a colliding vertex (taken with that
    /// reach, [`SelfCollision::vertex_reach`]), where they hold ([`Candidates::hold`]) and the
    /// step's last detection was at `x` (its boxes are those of the triangles' tree fit to
    /// `x`); the others' (pinned vertices, or all where they do not hold) come from the
    /// triangles' tree, refit to `x`. Either way the same faces are tested, in index order.
    fn touching(
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

    /// The box vertex `i`'s contacts are looked for in: its motion from `x_old` to `x`, grown
    /// by `reach` times its distance.
    fn vertex_box(&self, i: usize, x_old: &[Vec3], x: &[Vec3], reach: Real) -> Aabb {
        bounds([x_old[i], x[i]]).loosened(self.distance[i] * reach)
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
    fn vertex_triangle(
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

    /// The contact of mesh edges `e` and `f` at `x` at distance `d`
    /// ([`edge_pair_distance`]), if violated, for a pair that
    /// [`apart`](narrow::apart) did not set aside. The swept test
    /// ([`edge_edge_crossing`](narrow::edge_edge_crossing)) always applies; see
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

/// Largest violation left at the end of a step, as a fraction of the contact distance `d`
/// (1 %): the passes stop once no contact is closer than `(1 − TOLERANCE) d`.
pub const TOLERANCE: Real = 0.01;

/// A vertex within `FRICTION_REACH ×` its distance of a triangle (1.1) feels the friction
/// between layers: a layer resting at its distance is touching whether or not the step pressed
/// it in by more than [`TOLERANCE`].
const FRICTION_REACH: Real = 1.1;

/// Contacts whose [`Contact::lever`] is below this (the pins hold more than half of them) are
/// not projected (0.5).
const MIN_LEVER: Real = 0.5;

/// Most rounds of [`SelfCollision::impact_zones`] per step (16): each detects once and grows
/// the zones by the contacts still crossed.
const ZONE_ROUNDS: usize = 16;

/// Candidates a detection tests as one sequential run on a thread, batched for
/// [`apart_lanes`] and [`vertex_apart_lanes`] (1,024).
const TEST_CHUNK: usize = 1024;

/// Gauss–Seidel sweeps over the contacts found so far, per detection pass.
const SWEEPS: usize = 4;

/// A pass improves on the best so far if its worst violation is below `STALL ×` that (0.9);
/// after [`STALLED_PASSES`] (3) passes without improvement the step keeps what it has.
const STALL: Real = 0.9;
const STALLED_PASSES: usize = 3;

/// One contact: the constraint `C(x) = n · Σ_k w_k x_{idx_k} − d ≥ 0` on four vertices, with
/// `Σ_k w_k = 0` (vertex–triangle: `w = (1, −β_a, −β_b, −β_c)`, the barycentrics of the closest
/// point; edge–edge: `(1 − s, s, −(1 − t), −t)`, the closest points' parameters) and `n` the
/// unit direction in which the two sides must part (the side at the start of the step for a
/// crossing).
#[derive(Debug, Clone, Copy)]
struct Contact {
    idx: [u32; 4],
    w: [Real; 4],
    n: Vec3,
    d: Real,
    /// The triangle (vertex–triangle) or the second edge (edge–edge), by index: what a
    /// detection orders a vertex's or an edge's contacts by.
    key: u32,
}

impl Contact {
    /// `C(x) = n · Σ w_k x_k − d` (m): negative while the contact is violated.
    fn gap(&self, x: &[Vec3]) -> Real {
        self.n.dot(&(0..4).map(|k| x[self.idx[k] as usize] * self.w[k]).sum::<Vec3>()) - self.d
    }

    /// Projects `C ≥ 0` by mass: `Δx_k = W_k w_k Δλ n` with `Δλ = −C / Σ_k W_k w_k²`, which
    /// leaves `Σ m_k Δx_k = Δλ n Σ_{k free} w_k` — zero when no corner is pinned (momentum
    /// conserved), the pinned corners taking the rest as the world does.
    fn project(&self, x: &mut [Vec3], w_inv: &[Real]) {
        let c = self.gap(x);
        if c >= 0.0 {
            return;
        }
        let denom: Real = (0..4).map(|k| w_inv[self.idx[k] as usize] * self.w[k] * self.w[k]).sum();
        if denom <= 0.0 {
            return;
        }
        let lever = self.lever(w_inv, denom);
        if lever < MIN_LEVER {
            return; // held by the pins: see `lever`
        }
        let lambda = -c / denom * lever;
        for k in 0..4 {
            let i = self.idx[k] as usize;
            x[i] += self.n * (w_inv[i] * self.w[k] * lambda);
        }
    }

    /// The factor (at most 1) that keeps every vertex's share of a correction within the
    /// correction itself: `W_k |w_k| Δλ ≤ |C|`. It is 1 unless pinned vertices hold part of
    /// the contact. Where they hold most of it (an edge next to a pinned hinge against the
    /// other flap's hinge edge: the closest points near the pinned ends), the free weights
    /// `w_k` are small and `Δλ = −C / Σ W w²` would move the free vertices by `C / w_k`,
    /// without bound; such a contact is pinned closer than its distance and cannot hold, and
    /// pushing at it every step only kicks the free vertices (`Δv = Δx/h`): below
    /// [`MIN_LEVER`] it is left to the pins.
    fn lever(&self, w_inv: &[Real], denom: Real) -> Real {
        let largest = (0..4).map(|k| w_inv[self.idx[k] as usize] * self.w[k].abs()).fold(0.0, Real::max);
        if largest > denom {
            denom / largest
        } else {
            1.0
        }
    }

    /// Removes the fraction `lost` of the tangential relative motion in the step (of
    /// `Σ w_k (x_k − x_{old,k})`, the slip of the contact), by mass as in [`Contact::project`]
    /// (momentum conserved): Coulomb-free viscous friction at a rate per second.
    fn friction(&self, x_old: &[Vec3], x: &mut [Vec3], w_inv: &[Real], lost: Real) {
        let slip: Vec3 =
            (0..4).map(|k| (x[self.idx[k] as usize] - x_old[self.idx[k] as usize]) * self.w[k]).sum();
        let tangential = slip - self.n * self.n.dot(&slip);
        let denom: Real = (0..4).map(|k| w_inv[self.idx[k] as usize] * self.w[k] * self.w[k]).sum();
        if denom <= 0.0 {
            return;
        }
        let lever = self.lever(w_inv, denom);
        if lever < MIN_LEVER {
            return;
        }
        let lambda = tangential * (-lost / denom * lever);
        for k in 0..4 {
            let i = self.idx[k] as usize;
            x[i] += lambda * (w_inv[i] * self.w[k]);
        }
    }
}

/// The box of `item` (a triangle or an edge, by vertex index) swept from `x_old` to `x`,
/// grown by `margin`. Its corners' least and greatest coordinates in a plain loop over a fixed
/// number of corners: through [`bounds`]' iterator (a `flat_map` over the corners), the boxes'
/// refits and updates took 272 million instructions over the first 11 frames of the crumple of
/// `examples/crumple_cost.rs`, 3.7 % of the run; this loop takes 138 million (callgrind, one
/// thread), with the same boxes.
#[inline]
fn swept_box<const K: usize>(item: &[u32; K], [x_old, x]: [&[Vec3]; 2], margin: Real) -> Aabb {
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
fn bounds(points: impl IntoIterator<Item = Vec3>) -> Aabb {
    let mut points = points.into_iter();
    let first = points.next().expect("a box of no points");
    let (lo, hi) = points.fold((first, first), |(lo, hi), p| (lo.inf(&p), hi.sup(&p)));
    Aabb::new(Point::from(lo), Point::from(hi))
}

/// Moves every zone of two or more vertices (`roots[v]`: the zone of vertex `v`) as a rigid
/// body from its start positions `x_old`; its vertices with `w_inv = 0` (pinned) are its
/// anchors and keep their positions `x`.
///
/// A zone without anchors keeps the linear and angular momentum of its moves
/// `Δx_i = x_i − x_old,i` in the step (Bridson, Fedkiw & Anderson 2002 §7.3): with `M = Σ m_i`,
/// the centre `c = Σ m_i x_old,i / M` and `r_i = x_old,i − c`, the zone translates by
/// `d = Σ m_i Δx_i / M` and turns about `c` by the rotation vector `θ = I⁻¹ Σ m_i r_i × Δx_i`,
/// `I = Σ m_i (|r_i|² 1 − r_i r_iᵀ)` (a pseudo-inverse for a zone in a line):
/// `x_i = c + d + R(θ) r_i`. Linear momentum is kept exactly (`Σ m_i R r_i = 0`), angular
/// momentum to first order in `|θ|`, and the zone's shape exactly.
///
/// A zone with anchors moves with them, as the pins hold it: by the rigid motion that best fits
/// the anchors' moves ([`anchors_motion`]), so that where they move rigidly (static pins, or
/// pins carried as one) no vertex of the zone moves relative to them from the start of the
/// step, where nothing was crossed.
fn rigid_zone_moves(roots: &[u32], x_old: &[Vec3], x: &mut [Vec3], w_inv: &[Real], mass: &[Real]) {
    let n = x.len();
    let free = |v: usize| w_inv[v] > 0.0 && mass[v] > 0.0;
    // per zone (at its root): members, mass, Σ m x_old and Σ m Δx of its free vertices
    let mut sums: Vec<(usize, Real, Vec3, Vec3)> = vec![(0, 0.0, Vec3::zeros(), Vec3::zeros()); n];
    for v in (0..n).filter(|&v| free(v)) {
        let s = &mut sums[roots[v] as usize];
        *s = (s.0 + 1, s.1 + mass[v], s.2 + x_old[v] * mass[v], s.3 + (x[v] - x_old[v]) * mass[v]);
    }
    // the anchors of the zones with free vertices, and their motion `x ↦ to + R (x − from)`
    let mut anchors: Vec<Vec<usize>> = vec![Vec::new(); n];
    for v in (0..n).filter(|&v| !free(v) && sums[roots[v] as usize].0 > 0) {
        anchors[roots[v] as usize].push(v);
    }
    let anchored: Vec<Option<(Vec3, Mat3, Vec3)>> = anchors
        .iter()
        .map(|a| {
            let moves: Vec<(Vec3, Vec3)> = a.iter().map(|&v| (x_old[v], x[v])).collect();
            (!moves.is_empty()).then(|| anchors_motion(&moves))
        })
        .collect();
    // then Σ m r × Δx and the inertia about the centre
    let mut turns: Vec<(Vec3, Mat3)> = vec![(Vec3::zeros(), Mat3::zeros()); n];
    for v in (0..n).filter(|&v| free(v)) {
        let (_, m, first, _) = sums[roots[v] as usize];
        let r = x_old[v] - first / m;
        let t = &mut turns[roots[v] as usize];
        t.0 += r.cross(&(x[v] - x_old[v])) * mass[v];
        t.1 += (Mat3::identity() * r.norm_squared() - r * r.transpose()) * mass[v];
    }
    for v in (0..n).filter(|&v| free(v)) {
        let zone = roots[v] as usize;
        if let Some((from, rotation, to)) = anchored[zone] {
            x[v] = to + rotation * (x_old[v] - from);
            continue;
        }
        let (members, m, first, moment) = sums[zone];
        if members < 2 {
            continue;
        }
        let (angular, inertia) = turns[zone];
        let theta = inertia.pseudo_inverse(1e-12 * inertia.norm()).map_or(Vec3::zeros(), |inv| inv * angular);
        let centre = first / m;
        x[v] = centre + moment / m + Rotation3::new(theta) * (x_old[v] - centre);
    }
}

/// The rigid motion `x ↦ to + R (x − from)` that best fits points moving from `p` to `q`
/// (`(p, q)` pairs, at least one), returned as `(from, R, to)`: their centroids, and the
/// rotation of least squares (Kabsch: the SVD `H = U Σ Vᵀ` of `H = Σ (p − p̄)(q − q̄)ᵀ`,
/// `R = V diag(1, 1, det(V Uᵀ)) Uᵀ`). Exact where they move rigidly. Points that all move
/// alike (static pins), or lie on a line (no turn about it can be fitted), translate only.
fn anchors_motion(moves: &[(Vec3, Vec3)]) -> (Vec3, Mat3, Vec3) {
    let count = moves.len() as Real;
    let (from, to) = moves.iter().fold((Vec3::zeros(), Vec3::zeros()), |(a, b), (p, q)| (a + p, b + q));
    let (from, to) = (from / count, to / count);
    let translation = |(p, q): &(Vec3, Vec3)| q - p;
    if moves.iter().all(|m| translation(m) == translation(&moves[0])) {
        return (from, Mat3::identity(), to);
    }
    let h: Mat3 = moves.iter().map(|(p, q)| (p - from) * (q - to).transpose()).sum();
    let svd = h.svd(true, true);
    let (Some(u), Some(v_t)) = (svd.u, svd.v_t) else {
        return (from, Mat3::identity(), to);
    };
    // singular values in descending order
    let sigma = svd.singular_values;
    if sigma[1] <= 1e-9 * sigma[0] {
        return (from, Mat3::identity(), to);
    }
    let v = v_t.transpose();
    let flip = (v * u.transpose()).determinant().signum();
    let rotation = v * Mat3::from_diagonal(&Vec3::new(1.0, 1.0, flip)) * u.transpose();
    (from, rotation, to)
}

/// Whether edges `[i, j]` and `[k, l]` have an end in common (such pairs are never tested).
fn share_a_vertex([i, j]: [u32; 2], [k, l]: [u32; 2]) -> bool {
    k == i || k == j || l == i || l == j
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

/// The pairs of a leaf of `a` and a leaf of `b` whose boxes meet. parry's `leaf_pairs` yields
/// its first pairs of nodes unchecked (two leaves at a root among them), so each pair's leaves
/// are checked again, as the traversal checks the others.
fn meeting_leaves<'t>(a: &'t Bvh, b: &'t Bvh) -> impl Iterator<Item = (u32, u32)> + 't {
    let meet = |i: u32, j: u32| a.leaf_node(i).zip(b.leaf_node(j)).is_some_and(|(p, q)| p.intersects(q));
    a.leaf_pairs(b, |p, q| p.intersects(q)).filter(move |&(i, j)| meet(i, j))
}

/// Where the run of each key starts when `keys` (each below `count`) are put in order by
/// counting, and at the end where the last run ends.
fn run_starts(keys: impl Iterator<Item = usize>, count: usize) -> Vec<usize> {
    let mut start = vec![0usize; count + 1];
    for key in keys {
        start[key + 1] += 1;
    }
    for k in 0..count {
        start[k + 1] += start[k];
    }
    start
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

/// The distance of the contact of a pair of mesh edges sharing no vertex, where it may have one,
/// from each edge's [`Candidates::edge_reach`] and their boxes swept from `x_old` to `x`
/// ([`swept_box`]): the largest `d_k` of its free ends (`w_inv > 0`); none where neither has a
/// free end with a distance or the boxes are farther apart.
fn edge_pair_distance(reach: [Real; 2], [swept_e, swept_f]: [&Aabb; 2]) -> Option<Real> {
    let d = reach[0].max(reach[1]);
    if d <= 0.0 {
        return None;
    }
    // the two edges' swept boxes, `d` apart at most, before any arithmetic
    let [[lo, hi], [lo_f, hi_f]] = [swept_e, swept_f].map(|b| [b.mins, b.maxs]);
    if (0..3).any(|a| lo_f[a] > hi[a] + d || lo[a] > hi_f[a] + d) {
        return None;
    }
    Some(d)
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

/// Which of `items` (triangles or edges, by vertex index) have a corner that `moved`.
fn touched_items<const K: usize>(items: &[[u32; K]], moved: &[bool]) -> Vec<bool> {
    items.par_iter().map(|item| item.iter().any(|&i| moved[i as usize])).collect()
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

/// The broad phase's trees ([`swept_bvh`]), grown by [`SelfCollision::margins`]: the
/// triangles', and the edges' in two, the first half of the edges by index and the rest (so
/// that their pairs are found in three traversals that run in parallel,
/// [`SelfCollision::edge_candidates`]; the edges of a mesh numbered row by row, as a grid's
/// are, are then two halves of its surface), with the number of refits since they were built.
struct Trees {
    triangles: Bvh,
    edges: [Bvh; 2],
    refits: usize,
}

impl Trees {
    /// Built for `sc` over the step `x_old → x`.
    fn build(sc: &SelfCollision, x_old: &[Vec3], x: &[Vec3]) -> Self {
        let [triangle_margin, edge_margin] = sc.margins();
        let triangles = swept_bvh(&sc.triangles, 0..sc.triangles.len(), x_old, x, triangle_margin);
        let edges = Self::halves(sc).map(|half| swept_bvh(&sc.edges, half, x_old, x, edge_margin));
        Trees { triangles, edges, refits: 0 }
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

    /// Refits them to the step `x_old → x` where a triangle or an edge `moved` (all: `None`).
    fn refit(&mut self, sc: &SelfCollision, x_old: &[Vec3], x: &[Vec3], moved: Option<&Moved>) {
        let [triangle_margin, edge_margin] = sc.margins();
        let touched = moved.map(|moved| &moved.triangles[..]);
        refit_swept(
            &mut self.triangles,
            (&sc.triangles, 0..sc.triangles.len()),
            x_old,
            x,
            triangle_margin,
            touched,
        );
        let touched = moved.map(|moved| &moved.edges[..]);
        for (tree, half) in self.edges.iter_mut().zip(Self::halves(sc)) {
            refit_swept(tree, (&sc.edges, half), x_old, x, edge_margin, touched);
        }
    }
}

/// One step's self-collision for [`SelfCollision::project`]: where the step started and where
/// it arrived before any contact moved a vertex (`x_in`, which judges what a pair travelled in
/// the step), and what the step's last detection found. A step projected again (`step.rs`
/// does, after the obstacles pushed vertices) tests again only the pairs near the vertices
/// that moved since: a pair's contact depends on its own four vertices and the step alone.
pub struct ContactStep<'a> {
    x_old: &'a [Vec3],
    x_in: Vec<Vec3>,
    /// The positions the broad phase's trees are fit to in this step; `None` while they are
    /// fit to an earlier step (they are refit only where the step needs them: to take
    /// candidates, or for friction).
    fitted: Option<Vec<Vec3>>,
    /// The pairs the step's detections test (taken over from the broad phase while they hold).
    candidates: Option<Candidates>,
    /// The step's last detection, for the next to start from.
    last: Option<Detection>,
    /// Whether a detection may start from the step's candidates and its last detection
    /// (always, but in tests that compare with detections from scratch).
    reuse: bool,
    /// Detections in the step, those of them that tested only the pairs with a vertex that
    /// moved since the last, and how often the step took candidates from the trees.
    detections: usize,
    retests: usize,
    takes: usize,
    /// Of the takes, those for the vertices that left the slack alone ([`SelfCollision::retake`]).
    retakes: usize,
    /// Whether the step's friction between layers was taken (by its first projection), and
    /// whether it found the faces from the candidates ([`SelfCollision::touching`]).
    rubbed: bool,
    rubbed_known: bool,
    /// The vertices an obstacle holds ([`ContactStep::back`]): a projection moves the others
    /// only.
    backed: Option<Vec<bool>>,
}

impl<'a> ContactStep<'a> {
    /// Marks the vertices an obstacle pushed (`backed[i]`), before the step is projected once more
    /// (`step.rs`'s third projection): the obstacle holds them, so a contact with one moves the other
    /// side only, as with a pinned vertex (they still collide). Shared by mass, a layer pressed onto
    /// the sphere by the layers above moved its vertices back into it: 35 mm on the ±40 µC crumple with
    /// the add-on's frictions (`tests/contacts.rs`).
    pub fn back(&mut self, backed: Vec<bool>) {
        self.backed = Some(backed);
    }

    /// The step from `x_old` that arrived at `x_in`.
    pub fn new(x_old: &'a [Vec3], x_in: &[Vec3]) -> Self {
        ContactStep {
            x_old,
            x_in: x_in.to_vec(),
            fitted: None,
            candidates: None,
            last: None,
            reuse: true,
            detections: 0,
            retests: 0,
            takes: 0,
            retakes: 0,
            rubbed: false,
            rubbed_known: false,
            backed: None,
        }
    }

    /// Fits `trees` to `x` in this step: where they were fit earlier in it, refit where `x`
    /// differs; else refit throughout, or built afresh after [`REBUILD_STEPS`] refits (a mesh
    /// that moved far makes a refit tree's boxes overlap more).
    fn refit(&mut self, sc: &SelfCollision, trees: &mut Trees, x: &[Vec3]) {
        match &mut self.fitted {
            Some(fitted) => {
                let moved = Moved::new(sc, x, fitted);
                if moved.vertices.contains(&true) {
                    trees.refit(sc, self.x_old, x, Some(&moved));
                    fitted.copy_from_slice(x);
                }
            }
            None => {
                if trees.refits < REBUILD_STEPS {
                    trees.refit(sc, self.x_old, x, None);
                    trees.refits += 1;
                } else {
                    *trees = Trees::build(sc, self.x_old, x);
                }
                self.fitted = Some(x.to_vec());
            }
        }
    }
}

/// What a detection found at positions `x`, before [`SelfCollision::sweep_order`]: the
/// edge–edge contacts by edge (in the order of the edges), then by the other edge, and the
/// vertex–triangle contacts by vertex, then by triangle.
struct Detection {
    x: Vec<Vec3>,
    /// The boxes its tests took at `x`.
    boxes: Boxes,
    pairs: Vec<Contact>,
    points: Vec<Contact>,
}

/// What moved since a step's last detection (or since the trees were fit): the vertices, and
/// the triangles and edges with a corner among them.
struct Moved {
    vertices: Vec<bool>,
    triangles: Vec<bool>,
    edges: Vec<bool>,
}

impl Moved {
    /// Between positions `last` and `x`.
    fn new(sc: &SelfCollision, x: &[Vec3], last: &[Vec3]) -> Self {
        Self::from_vertices(sc, x.iter().zip(last).map(|(a, b)| a != b).collect())
    }

    /// Where the `vertices` moved.
    fn from_vertices(sc: &SelfCollision, vertices: Vec<bool>) -> Self {
        let (triangles, edges) =
            (touched_items(&sc.triangles, &vertices), touched_items(&sc.edges, &vertices));
        Moved { vertices, triangles, edges }
    }
}

/// The boxes a detection tests pairs by ([`SelfCollision::test`]): each vertex's motion in the
/// step grown by its distance ([`SelfCollision::vertex_box`]), each triangle's grown by its
/// margin ([`SelfCollision::margins`]) and each edge's as it is ([`swept_box`]; the test grows
/// the second edge of a pair).
struct Boxes {
    vertices: Vec<Aabb>,
    triangles: Vec<Aabb>,
    edges: Vec<Aabb>,
}

impl Boxes {
    /// The boxes of `sc` in the step `x_old → x`: all computed, or, `since` a detection, those
    /// of what moved since, the others kept from the detection's.
    fn new(sc: &SelfCollision, [x_old, x]: [&[Vec3]; 2], since: Option<(&Moved, Boxes)>) -> Self {
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

/// The pairs a step's detections test (see [`SelfCollision::candidates`]): found once with
/// room for every vertex to move up to `slack` from `x`, they serve every detection of the
/// step while no vertex moved farther (the passes' corrections, the obstacles' pushes).
struct Candidates {
    /// Each vertex's box at the step they were taken in: its start and end positions.
    boxes: Vec<(Vec3, Vec3)>,
    slack: Real,
    /// What they were taken for: each vertex's distance where it collides (else −1), the
    /// largest distance, and the [`SelfCollision::vertex_reach`] of the vertices' queries.
    reach: Vec<Real>,
    max_distance: Real,
    vertex_reach: Real,
    /// Each edge's larger [`Candidates::reach`] of its two ends.
    edge_reach: Vec<Real>,
    /// Vertex–triangle pairs `(vertex, triangle)`, in order.
    points: Vec<(u32, u32)>,
    /// Edge pairs `(e, f)`, `e < f`, in order.
    pairs: Vec<(u32, u32)>,
}

impl Candidates {
    /// Whether they hold every pair whose boxes meet in the step `x_old → x`: every vertex's
    /// box now (its start and end) lies within its box where they were taken, shifted by one
    /// translation `T` common to all and grown by the slack, so that two items' boxes that meet
    /// now met then, grown by twice the slack (a box test does not change under a common
    /// translation). Per axis, such a `T` exists where the largest rise of a box's upper end
    /// exceeds the smallest rise of a box's lower end by at most twice the slack. A mesh that
    /// moves as a whole (falling, carried) keeps its candidates from step to step.
    fn hold(&self, x_old: &[Vec3], x: &[Vec3]) -> bool {
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
    fn strays(&self, x_old: &[Vec3], x: &[Vec3]) -> Option<(Vec3, Vec<bool>)> {
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
    fn triangles_of(&self, i: u32) -> impl Iterator<Item = u32> + '_ {
        let (start, end) =
            (self.points.partition_point(|p| p.0 < i), self.points.partition_point(|p| p.0 <= i));
        self.points[start..end].iter().map(|p| p.1)
    }

    /// Whether they were taken for these settings: the same vertices colliding, at the same
    /// distances, queried as far.
    fn fit(&self, sc: &SelfCollision, w_inv: &[Real]) -> bool {
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
const CANDIDATE_SLACK: Real = 0.35;

/// The largest share of the vertices (1/8) that may have left the [`Candidates`]' slack for a
/// take to look for their pairs alone ([`SelfCollision::retake`]); where more did, the
/// candidates are taken afresh. On the crumple of `examples/crumple_cost.rs`, one thread, with
/// a slack of 1/2: 1/16 as fast; 1/4 slower (1,048 takes for the strays instead of 480, their
/// cost near a fresh take's: 14.8–16.0 s against 12.6–13.4).
const STRAY_SHARE: Real = 0.125;

/// Refits of the broad phase's trees before they are built afresh (8).
const REBUILD_STEPS: usize = 8;

/// The broad phase of [`SelfCollision::project`], kept from one step to the next: the trees
/// (parry's refit: the leaves' boxes, then their ancestors', keeping the tree's shape; built
/// afresh after 8 refits, `REBUILD_STEPS`, or when the settings changed), refit only in the
/// steps that query them, and the last step's candidates. The trees only speed up the queries:
/// every leaf's box is exact either way, so what a step finds does not depend on them.
#[derive(Default)]
pub struct BroadPhase {
    trees: Option<Trees>,
    /// The last step's candidate pairs, for the next while they hold.
    candidates: Option<Candidates>,
}

impl BroadPhase {
    /// The trees of `sc` for `step` at `x`: as kept (fit to this step where an earlier call of
    /// it fit them, else to an earlier step: [`ContactStep::refit`] fits them where needed), or
    /// built afresh for the step where there are none for these settings.
    fn trees(&mut self, sc: &SelfCollision, step: &mut ContactStep, x: &[Vec3]) -> Trees {
        match self.trees.take().filter(|trees| trees.fit_for(sc)) {
            Some(trees) => trees,
            None => {
                step.fitted = Some(x.to_vec());
                Trees::build(sc, step.x_old, x)
            }
        }
    }

    /// Keeps the trees for the next step.
    fn keep(&mut self, trees: Trees) {
        self.trees = Some(trees);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use narrow::apart;

    /// The fail-safe on its own: a triangle spinning about z with a vertex 1 cm above it, which
    /// ended the step 1 cm through it. The vertex and the triangle are joined into one zone
    /// that moves rigidly: the vertex is back above the triangle at its start height, every
    /// distance within the zone is kept, and so are the step's linear momentum (exactly) and
    /// its angular momentum (to first order in the turn: within 1 %; a zone that only
    /// translated would lose the spin).
    #[test]
    fn an_impact_zone_moves_a_crossed_vertex_and_its_spinning_triangle_as_one_rigid_body() {
        let tri = [Vec3::new(0.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 0.0), Vec3::new(0.0, 1.0, 0.0)];
        let x_old = vec![Vec3::new(0.25, 0.25, 0.01), tri[0], tri[1], tri[2]];
        let mass = [2.0, 1.0, 1.0, 1.0];
        let w_inv = mass.map(|m| 1.0 / m);
        let centre = x_old.iter().zip(&mass).map(|(x, m)| x * *m).sum::<Vec3>() / 5.0;
        let spin = Rotation3::new(Vec3::new(0.0, 0.0, 0.05));
        let mut x: Vec<Vec3> = x_old.iter().map(|p| centre + spin * (p - centre)).collect();
        x[0].z -= 0.02;
        let sc = SelfCollision::new(&[[1, 2, 3]], &[0.004; 4], &x_old).unwrap();
        let x_in = x.clone();
        let mut step = ContactStep::new(&x_old, &x_in);
        let mut trees = BroadPhase::default().trees(&sc, &mut step, &x);
        let found = sc.detect(&mut step, &x, &mut trees, &w_inv);
        assert!(found.iter().any(|c| -c.gap(&x) > c.d), "the vertex did not end through the triangle");
        sc.impact_zones(&mut step, found, &mut x, &mut trees, [&w_inv, &w_inv], &mass);
        let moves = |x: &[Vec3]| -> Vec<Vec3> { x.iter().zip(&x_old).map(|(a, b)| a - b).collect() };
        let momentum = |x: &[Vec3]| moves(x).iter().zip(&mass).map(|(d, m)| d * *m).sum::<Vec3>();
        let angular = |x: &[Vec3]| {
            let r = x_old.iter().map(|p| p - centre);
            r.zip(moves(x)).zip(&mass).map(|((r, d), m)| r.cross(&d) * *m).sum::<Vec3>()
        };
        assert!((momentum(&x) - momentum(&x_in)).norm() < 1e-15);
        let (spun, kept) = (angular(&x_in), angular(&x));
        assert!((kept - spun).norm() < 0.01 * spun.norm(), "angular momentum {kept:?}, was {spun:?}");
        for (a, b) in [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)] {
            let (now, then) = ((x[a] - x[b]).norm(), (x_old[a] - x_old[b]).norm());
            assert!((now - then).abs() < 1e-12, "{a}–{b}: {now} m apart, {then} m at the start");
        }
        let n = triangle_normal(&x[1], &x[2], &x[3]).unwrap();
        assert!(((x[0] - x[1]).dot(&n) - 0.01).abs() < 1e-12, "the vertex is not back at its height");
    }

    #[test]
    fn anchors_motion_is_the_rigid_motion_of_pins_that_move_rigidly() {
        let p = [
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.0, 2.0, 0.0),
            Vec3::new(0.3, 0.4, 0.0),
        ];
        let (turn, shift) = (Rotation3::new(Vec3::new(0.3, -0.2, 0.5)), Vec3::new(0.1, -2.0, 0.7));
        // coplanar pins, turned and shifted: the same motion, applied anywhere
        let (from, rotation, to) = anchors_motion(&p.map(|a| (a, turn * a + shift)));
        let probe = Vec3::new(-0.4, 0.9, 1.3);
        assert!((to + rotation * (probe - from) - (turn * probe + shift)).norm() < 1e-12);
        // static pins, and pins on a line: a translation only, exactly
        let (from, rotation, to) = anchors_motion(&p.map(|a| (a, a)));
        assert_eq!((rotation, to - from), (Mat3::identity(), Vec3::zeros()));
        let line = [Vec3::zeros(), Vec3::x(), Vec3::x() * 3.0];
        let (from, rotation, to) = anchors_motion(&line.map(|a| (a, turn * a)));
        assert_eq!(rotation, Mat3::identity());
        assert!((to - from - (turn * Vec3::x() * 4.0 / 3.0 - Vec3::x() * 4.0 / 3.0)).norm() < 1e-12);
    }

    /// Two 12 × 12 sheets 2 cm apart, the upper one rippled, with self-collision at 4 mm: the
    /// settings, the start positions and the number of vertices of a sheet.
    fn two_sheets() -> (SelfCollision, Vec<Vec3>, usize) {
        sheets(12, 0.02, 0.004, |p| p + Vec3::new(0.005, 0.003, 0.02 + 0.004 * (40.0 * p.x).sin()))
    }

    /// Two square sheets of `count` × `count` vertices `spacing` apart, the second at `upper`
    /// of the first's positions, with self-collision at `distance`: as [`two_sheets`].
    fn sheets(
        count: u32,
        spacing: Real,
        distance: Real,
        upper: impl Fn(&Vec3) -> Vec3,
    ) -> (SelfCollision, Vec<Vec3>, usize) {
        let sheet = crate::shapes::grid(count, count, spacing);
        let n = sheet.positions.len();
        let x0: Vec<Vec3> =
            sheet.positions.iter().copied().chain(sheet.positions.iter().map(upper)).collect();
        let second = sheet.triangles.iter().map(|t| t.map(|v| v + n as u32));
        let triangles: Vec<[u32; 3]> = sheet.triangles.iter().copied().chain(second).collect();
        (SelfCollision::new(&triangles, &vec![distance; 2 * n], &x0).unwrap(), x0, n)
    }

    /// Step `step` (of length `h`) of [`two_sheets`] before contacts: the upper sheet (from
    /// vertex `n` on) thrown down, both swirling about z, faster at every step.
    fn throw(x: &mut [Vec3], v: &mut [Vec3], n: usize, step: usize, h: Real) {
        for (i, (x, v)) in x.iter_mut().zip(v).enumerate() {
            let swirl = Vec3::new(-x.y, x.x, 0.0) * (0.5 + 0.1 * step as Real);
            *v += if i >= n { Vec3::new(0.0, 0.0, -3.0) * h * 60.0 } else { Vec3::zeros() } + swirl * h;
            *x += *v * h;
        }
    }

    /// [`two_sheets`] thrown at each other and swirled for 24 steps of 1/120 s (the contacts'
    /// output is the next step's input): what the steps find is the same, bit for bit, with the
    /// broad phase's trees kept and refit from step to step (rebuilt every `REBUILD_STEPS`) as
    /// with trees built afresh every step, and the sheets meet (the test exercises contacts).
    #[test]
    fn kept_and_refit_trees_find_what_fresh_trees_find() {
        let (sc, x0, n) = two_sheets();
        let (mass, pinned) = (vec![1e-3; 2 * n], vec![false; 2 * n]);
        let h = 1.0 / 120.0;
        let run = |keep: bool| {
            let mut broad = BroadPhase::default();
            let (mut x, mut v) = (x0.clone(), vec![Vec3::zeros(); 2 * n]);
            let mut moved = 0;
            for step in 0..24 {
                let x_old = x.clone();
                throw(&mut x, &mut v, n, step, h);
                if !keep {
                    broad = BroadPhase::default();
                }
                moved += sc.project(
                    &mut ContactStep::new(&x_old, &x),
                    &mut x,
                    &mut v,
                    (&mass, &pinned),
                    h,
                    &mut broad,
                );
            }
            (x, v, moved)
        };
        let (kept, fresh) = (run(true), run(false));
        assert!(kept.2 > 100, "the sheets barely met: {} vertex moves", kept.2);
        assert_eq!(kept, fresh);
    }

    /// [`two_sheets`] with the upper one lowered into contact, the pair falling 5 cm per step
    /// (36 times the candidates' slack) while the upper sheet sinks 0.2 mm per step onto the
    /// lower, each vertex `i` lifted `lift(step, i)` more (m), for `steps` steps: the positions,
    /// velocities and vertex moves at the end, and the takes and the retakes of candidates,
    /// with the broad phase kept from step to step (`keep`), or afresh at every step with
    /// fresh candidates at every detection.
    fn fall_together(
        steps: usize,
        keep: bool,
        lift: impl Fn(usize, usize) -> Real,
    ) -> (Vec<Vec3>, Vec<Vec3>, usize, [usize; 2]) {
        let (sc, mut x0, n) = two_sheets();
        x0[n..].iter_mut().for_each(|p| p.z -= 0.017);
        let (mass, pinned) = (vec![1e-3; 2 * n], vec![false; 2 * n]);
        let h = 1.0 / 120.0;
        let mut broad = BroadPhase::default();
        let (mut x, mut v) = (x0.clone(), vec![Vec3::zeros(); 2 * n]);
        let (mut moved, mut takes) = (0, [0, 0]);
        for step in 0..steps {
            let x_old = x.clone();
            for (i, p) in x.iter_mut().enumerate() {
                let sink = if i >= n { -0.0502 } else { -0.05 };
                *p += Vec3::new(0.01, -0.02, sink + lift(step, i));
            }
            if !keep {
                broad = BroadPhase::default();
            }
            let mut contacts = ContactStep::new(&x_old, &x);
            contacts.reuse = keep;
            moved += sc.project(&mut contacts, &mut x, &mut v, (&mass, &pinned), h, &mut broad);
            takes = [takes[0] + contacts.takes, takes[1] + contacts.retakes];
        }
        (x, v, moved, takes)
    }

    /// [`fall_together`]: candidates kept from step to step hold under the common fall (their
    /// test allows a translation of the whole mesh), so most steps take none from the trees,
    /// and the steps find what they find with a fresh broad phase and fresh candidates at every
    /// detection, bit for bit. (Taken relative to fixed boxes, the candidates were taken afresh
    /// at every step.)
    #[test]
    fn candidates_kept_through_a_common_fall_find_what_fresh_ones_find() {
        let steps = 16;
        let (kept, fresh) = (fall_together(steps, true, |_, _| 0.0), fall_together(steps, false, |_, _| 0.0));
        assert!(kept.2 > 50, "the sheets barely met: {} vertex moves", kept.2);
        assert_eq!((&kept.0, &kept.1, kept.2), (&fresh.0, &fresh.1, fresh.2));
        assert!(fresh.3[0] >= steps);
        assert!(kept.3[0] * 3 <= steps, "candidates taken {} times in {steps} steps", kept.3[0]);
    }

    /// [`two_sheets`] thrown at each other for 12 steps (the contacts' output the next step's
    /// input): at every step, the candidates taken by traversing the trees are exactly the pairs
    /// a test of every pair against every other finds (a colliding vertex's box grown by twice
    /// the slack meeting a triangle's swept box it is not a corner of; two edges sharing no
    /// vertex whose swept boxes come within the largest distance and twice the slack), and they
    /// hold every pair within exactly that distance.
    #[test]
    fn candidates_are_the_pairs_whose_boxes_meet() {
        let (sc, x0, n) = two_sheets();
        let (mass, pinned) = (vec![1e-3; 2 * n], vec![false; 2 * n]);
        let (h, w_inv) = (1.0 / 120.0, vec![1e3; 2 * n]);
        let slack = CANDIDATE_SLACK * sc.max_distance;
        let mut broad = BroadPhase::default();
        let (mut x, mut v) = (x0.clone(), vec![Vec3::zeros(); 2 * n]);
        let (mut points, mut pairs) = (0, 0);
        for step in 0..12 {
            let x_old = x.clone();
            throw(&mut x, &mut v, n, step, h);
            let trees = Trees::build(&sc, &x_old, &x);
            let taken = sc.candidates(&x_old, &x, &trees, &w_inv);
            let vertex_triangle: Vec<(u32, u32)> = (0..2 * n as u32)
                .flat_map(|i| (0..sc.triangles.len() as u32).map(move |t| (i, t)))
                .filter(|&(i, t)| {
                    let triangle = &sc.triangles[t as usize];
                    let query =
                        sc.vertex_box(i as usize, &x_old, &x, 1.0).loosened(2.0 * slack * (1.0 + 1e-6));
                    !triangle.contains(&i) && query.intersects(&swept_box(triangle, [&x_old, &x], 0.0))
                })
                .collect();
            assert_eq!(taken.points, vertex_triangle, "step {step}");
            assert_eq!(taken.pairs, meeting_edge_pairs(&sc, &x_old, &x), "step {step}");
            let within = |(e, f): &(u32, u32)| {
                let reach = sc.max_distance + 2.0 * slack;
                let (a, b) = (sc.edges[*e as usize], sc.edges[*f as usize]);
                swept_box(&a, [&x_old, &x], reach).intersects(&swept_box(&b, [&x_old, &x], 0.0))
            };
            let all: Vec<(u32, u32)> = (0..sc.edges.len() as u32)
                .flat_map(|e| (e + 1..sc.edges.len() as u32).map(move |f| (e, f)))
                .filter(|&(e, f)| {
                    !share_a_vertex(sc.edges[e as usize], sc.edges[f as usize]) && within(&(e, f))
                })
                .collect();
            assert!(all.iter().all(|p| taken.pairs.binary_search(p).is_ok()), "step {step}");
            (points, pairs) = (points + taken.points.len(), pairs + taken.pairs.len());
            sc.project(&mut ContactStep::new(&x_old, &x), &mut x, &mut v, (&mass, &pinned), h, &mut broad);
        }
        assert!(points > 1000 && pairs > 1000, "{points} vertex–triangle and {pairs} edge candidates");
    }

    /// The pairs of edges of `sc` sharing no vertex whose swept boxes from `x_old` to `x`, each
    /// grown by the edges' margin, meet, in order: what the edge candidates must be.
    fn meeting_edge_pairs(sc: &SelfCollision, x_old: &[Vec3], x: &[Vec3]) -> Vec<(u32, u32)> {
        let grown = sc.margins()[1];
        (0..sc.edges.len() as u32)
            .flat_map(|e| (e + 1..sc.edges.len() as u32).map(move |f| (e, f)))
            .filter(|&(e, f)| {
                let (a, b) = (sc.edges[e as usize], sc.edges[f as usize]);
                !share_a_vertex(a, b)
                    && swept_box(&a, [x_old, x], grown).intersects(&swept_box(&b, [x_old, x], grown))
            })
            .collect()
    }

    /// One to four separate triangles stacked closer than their distance or far apart: the
    /// edges' trees have one to six leaves, where parry's `leaf_pairs` yields pairs of leaves
    /// it did not check, and the edge candidates are still the pairs whose boxes meet, no more.
    #[test]
    fn the_edge_candidates_of_a_few_triangles_are_the_pairs_whose_boxes_meet() {
        let corners = [Vec3::zeros(), Vec3::new(0.1, 0.0, 0.0), Vec3::new(0.0, 0.1, 0.0)];
        let mut meeting = 0;
        for count in 1..=4u32 {
            for gap in [0.002, 0.05, 1.0] {
                let x: Vec<Vec3> = (0..count)
                    .flat_map(|k| corners.map(|c| c + Vec3::new(0.0, 0.0, gap * k as Real)))
                    .collect();
                let triangles: Vec<[u32; 3]> = (0..count).map(|k| [3 * k, 3 * k + 1, 3 * k + 2]).collect();
                let sc = SelfCollision::new(&triangles, &vec![0.004; x.len()], &x).unwrap();
                let x_old: Vec<Vec3> = x.iter().map(|p| p - Vec3::new(0.0, 0.0, 0.001)).collect();
                let trees = Trees::build(&sc, &x_old, &x);
                let taken = sc.candidates(&x_old, &x, &trees, &vec![1.0; x.len()]);
                let expected = meeting_edge_pairs(&sc, &x_old, &x);
                assert_eq!(taken.pairs, expected, "{count} triangles {gap} m apart");
                meeting += expected.len();
            }
        }
        assert!(meeting > 0, "no pair of edges meets");
    }

    /// Two sheets, the upper about 3 mm above the lower, at 6 mm, carried 3 mm sideways and 1
    /// mm down in each of two steps, every vertex also moved up to 1.9 mm on each axis in the
    /// second and a patch of 10 upper vertices lifted 9 mm (the slack is 2.1 mm): the
    /// candidates taken in the first step hold but for the patch, whose vertices are the
    /// strays, and taken again for them alone they are exactly the pairs whose boxes meet with
    /// every vertex at its candidates' box (the strays' now, less the common move), as a take
    /// finds them (`candidates_are_the_pairs_whose_boxes_meet`); they hold for the second step
    /// and have every pair whose boxes meet in it. With a third of the upper sheet lifted the
    /// candidates are taken afresh.
    #[test]
    fn candidates_taken_again_for_the_strays_are_the_pairs_whose_boxes_meet() {
        // two 16 × 16 sheets of 1 cm, the upper rippled about 3 mm above the lower, at 6 mm
        let (sc, x0, n) =
            sheets(16, 0.01, 0.006, |p| p + Vec3::new(0.002, 0.003, 0.003 + 0.002 * (60.0 * p.x).sin()));
        let w_inv = vec![1e3; 2 * n];
        // each step moves every vertex by `motion`, so each box moves by it
        let motion = Vec3::new(0.003, -0.003, -0.001);
        let x1: Vec<Vec3> = x0.iter().map(|p| p + motion).collect();
        let taken = sc.candidates(&x0, &x1, &Trees::build(&sc, &x0, &x1), &w_inv);
        // and in the second, each vertex up to 1.9 mm more on each axis
        let jitter = |i: usize| Vec3::from_fn(|a, _| 0.0019 * ((7 * i + 3 * a) as Real).sin());
        let carry = |lifted: &[usize]| -> Vec<Vec3> {
            let mut x2: Vec<Vec3> = x1.iter().enumerate().map(|(i, p)| p + motion + jitter(i)).collect();
            lifted.iter().for_each(|&i| x2[i].z += 0.009);
            x2
        };
        let patch: Vec<usize> = (0..10).map(|k| n + 100 + k).collect();
        let x2 = carry(&patch);
        assert!(!taken.hold(&x1, &x2));
        let (shift, strays) = taken.strays(&x1, &x2).expect("10 of 512 vertices stray");
        let stray_list: Vec<usize> = (0..2 * n).filter(|&i| strays[i]).collect();
        assert_eq!(stray_list, patch);
        assert!((shift - motion).amax() < 0.0019, "{shift}");
        let trees = Trees::build(&sc, &x1, &x2);
        let retaken = sc.retake(taken, (shift, strays), &x1, &x2, &trees, &w_inv);
        assert!(retaken.hold(&x1, &x2));
        // the pairs whose candidates' boxes meet, grown as a take grows them
        let boxes = &retaken.boxes;
        let at = |item: &[u32], grow: Real| {
            let lo = item
                .iter()
                .map(|&v| boxes[v as usize].0)
                .fold(Vec3::repeat(Real::INFINITY), |a, b| a.inf(&b));
            let hi = item
                .iter()
                .map(|&v| boxes[v as usize].1)
                .fold(Vec3::repeat(-Real::INFINITY), |a, b| a.sup(&b));
            Aabb::new(lo.into(), hi.into()).loosened(grow)
        };
        let grow = 2.0 * CANDIDATE_SLACK * sc.max_distance * (1.0 + 1e-6);
        let points: Vec<(u32, u32)> = (0..2 * n as u32)
            .flat_map(|i| (0..sc.triangles.len() as u32).map(move |t| (i, t)))
            .filter(|&(i, t)| {
                let triangle = &sc.triangles[t as usize];
                !triangle.contains(&i)
                    && at(&[i], sc.distance[i as usize] + grow).intersects(&at(triangle, 0.0))
            })
            .collect();
        let margin = sc.margins()[1];
        let pairs: Vec<(u32, u32)> = (0..sc.edges.len() as u32)
            .flat_map(|e| (e + 1..sc.edges.len() as u32).map(move |f| (e, f)))
            .filter(|&(e, f)| {
                let (a, b) = (sc.edges[e as usize], sc.edges[f as usize]);
                !share_a_vertex(a, b) && at(&a, margin).intersects(&at(&b, margin))
            })
            .collect();
        let differ = |a: &[(u32, u32)], b: &[(u32, u32)]| -> Vec<(u32, u32)> {
            let missing = b.iter().filter(|p| a.binary_search(p).is_err());
            missing.chain(a.iter().filter(|p| b.binary_search(p).is_err())).take(8).copied().collect()
        };
        assert!(
            retaken.points == points,
            "vertex–triangle pairs differ: {:?}",
            differ(&retaken.points, &points)
        );
        assert!(retaken.pairs == pairs, "edge pairs differ: {:?}", differ(&retaken.pairs, &pairs));
        assert!(points.iter().any(|&(i, _)| stray_list.contains(&(i as usize))), "no stray pairs");
        // every pair a detection in the second step tests
        let now = Boxes::new(&sc, [&x1, &x2], None);
        let meet = (0..2 * n as u32)
            .flat_map(|i| (0..sc.triangles.len() as u32).map(move |t| (i, t)))
            .filter(|&(i, t)| {
                !sc.triangles[t as usize].contains(&i)
                    && now.vertices[i as usize].intersects(&now.triangles[t as usize])
            });
        assert!(meet.into_iter().all(|p| retaken.points.binary_search(&p).is_ok()));
        let near = meeting_edge_pairs(&sc, &x1, &x2).into_iter().filter(|&(e, f)| {
            now.edges[e as usize].intersects(&now.edges[f as usize].loosened(sc.max_distance))
        });
        assert!(near.into_iter().all(|p| retaken.pairs.binary_search(&p).is_ok()));
        // a third of the upper sheet lifted: taken afresh
        let taken = sc.candidates(&x0, &x1, &Trees::build(&sc, &x0, &x1), &w_inv);
        let third: Vec<usize> = (n..n + n / 3).collect();
        assert!(taken.strays(&x1, &carry(&third)).is_none());
    }

    /// [`fall_together`], with a patch of 8 upper vertices also thrown up 5 mm (3.6 times the
    /// slack) in two steps and down in the next two, in turn: the candidates are taken again
    /// for the patch alone every other step (a box that shrinks within its candidates' box
    /// needs none), and the steps find what they find with a fresh broad phase and fresh
    /// candidates at every detection, bit for bit.
    #[test]
    fn candidates_taken_again_for_the_strays_find_what_fresh_ones_find() {
        let (steps, n) = (16, two_sheets().2);
        let patch = n + 60..n + 68;
        let lift = |step: usize, i: usize| match (patch.contains(&i), step % 4 < 2) {
            (false, _) => 0.0,
            (true, up) => {
                if up {
                    0.005
                } else {
                    -0.005
                }
            }
        };
        let (kept, fresh) = (fall_together(steps, true, lift), fall_together(steps, false, lift));
        assert!(kept.2 > 50, "the sheets barely met: {} vertex moves", kept.2);
        assert_eq!((&kept.0, &kept.1, kept.2), (&fresh.0, &fresh.1, fresh.2));
        assert_eq!(fresh.3[1], 0);
        assert!(kept.3[1] * 3 >= steps, "candidates taken again {} times in {steps} steps", kept.3[1]);
    }

    /// The same two sheets, with a floor under the lower one that pushes its vertices back up
    /// after the contacts, and the step projected again where it pushed (as `step.rs` does
    /// after the obstacles): detections that start from the step's candidates and its last
    /// detection, testing again only the pairs with a vertex that moved since, find what
    /// detections from scratch find, bit for bit (a sixth of them take that shortcut here; the
    /// others follow moves beyond the candidates' slack: the floor's pushes, impact zones).
    #[test]
    fn detections_that_retest_only_what_moved_find_what_detections_from_scratch_find() {
        let (sc, x0, n) = two_sheets();
        let (mass, pinned) = (vec![1e-3; 2 * n], vec![false; 2 * n]);
        let (h, floor) = (1.0 / 120.0, -0.01);
        let run = |reuse: bool| {
            let mut broad = BroadPhase::default();
            let (mut x, mut v) = (x0.clone(), vec![Vec3::zeros(); 2 * n]);
            let (mut moved, mut retests, mut detections) = (0, 0, 0);
            for step in 0..24 {
                let x_old = x.clone();
                throw(&mut x, &mut v, n, step, h);
                let mut contacts = ContactStep::new(&x_old, &x);
                contacts.reuse = reuse;
                moved += sc.project(&mut contacts, &mut x, &mut v, (&mass, &pinned), h, &mut broad);
                let mut pushed = false;
                for (x, v) in x.iter_mut().zip(&mut v) {
                    if x.z < floor {
                        (x.z, v.z, pushed) = (floor, 0.0, true);
                    }
                }
                if pushed {
                    moved += sc.project(&mut contacts, &mut x, &mut v, (&mass, &pinned), h, &mut broad);
                }
                (retests, detections) = (retests + contacts.retests, detections + contacts.detections);
            }
            (x, v, moved, retests, detections)
        };
        let (reused, fresh) = (run(true), run(false));
        assert!(reused.2 > 100, "the sheets barely met: {} vertex moves", reused.2);
        assert_eq!((&reused.0, &reused.1, reused.2), (&fresh.0, &fresh.1, fresh.2));
        assert_eq!((fresh.3, fresh.4), (0, reused.4), "as many detections, none from the last");
        assert!(reused.3 * 10 > reused.4, "{} of {} detections retested what moved", reused.3, reused.4);
    }

    /// The same with friction between layers (20/s): the friction's faces found from the
    /// step's candidates (taken with its reach) and its last detection's boxes, where they
    /// hold, are those the triangles' tree finds, bit for bit.
    #[test]
    fn friction_from_the_candidates_finds_what_the_tree_finds() {
        let (frictionless, x0, n) = two_sheets();
        let sc = frictionless.clone().with_friction(&vec![20.0; 2 * n]).unwrap();
        let (mass, pinned) = (vec![1e-3; 2 * n], vec![false; 2 * n]);
        let h = 1.0 / 120.0;
        let run = |sc: &SelfCollision, reuse: bool| {
            let mut broad = BroadPhase::default();
            let (mut x, mut v) = (x0.clone(), vec![Vec3::zeros(); 2 * n]);
            let mut known = 0;
            for step in 0..24 {
                let x_old = x.clone();
                throw(&mut x, &mut v, n, step, h);
                let mut contacts = ContactStep::new(&x_old, &x);
                contacts.reuse = reuse;
                sc.project(&mut contacts, &mut x, &mut v, (&mass, &pinned), h, &mut broad);
                known += contacts.rubbed_known as usize;
            }
            (x, v, known)
        };
        let (reused, fresh, free) = (run(&sc, true), run(&sc, false), run(&frictionless, true));
        assert_eq!((&reused.0, &reused.1), (&fresh.0, &fresh.1));
        assert!(fresh.2 == 0 && reused.2 >= 6, "faces from the candidates in {} of 24 steps", reused.2);
        let slowed = reused.1.iter().zip(&free.1).filter(|(a, b)| a != b).count();
        assert!(slowed > n / 4, "the friction changed {slowed} of {} velocities", 2 * n);
    }

    /// With friction between layers, the candidates hold every face the friction looks for
    /// (within [`FRICTION_REACH`] of a vertex's distance) wherever they hold: two flat sheets
    /// 10.5 mm apart at a 6 mm distance (slack 2.1 mm), the upper sheet then lowered and the
    /// lower raised by nearly the slack. The upper vertices' friction queries now meet the
    /// lower triangles, and each such pair is a candidate; taken for the distance alone (no
    /// friction) the candidates miss them, though they hold as well.
    #[test]
    fn candidates_with_friction_hold_the_faces_the_friction_looks_for() {
        let (frictionless, x0, n) = sheets(8, 0.01, 0.006, |p| p + Vec3::new(0.0, 0.0, 0.0105));
        let rubbing = frictionless.clone().with_friction(&vec![5.0; 2 * n]).unwrap();
        let w_inv = vec![1e3; 2 * n];
        let step = 0.99 * CANDIDATE_SLACK * 0.006;
        let x1: Vec<Vec3> =
            x0.iter().enumerate().map(|(i, p)| p + Vec3::z() * if i < n { step } else { -step }).collect();
        let faces = |sc: &SelfCollision| -> Vec<(u32, u32)> {
            let query = |i: u32| sc.vertex_box(i as usize, &x0, &x1, FRICTION_REACH);
            let face = |t: u32| swept_box(&sc.triangles[t as usize], [&x0, &x1], sc.margins()[0]);
            (n as u32..2 * n as u32)
                .flat_map(|i| (0..sc.triangles.len() as u32 / 2).map(move |t| (i, t)))
                .filter(|&(i, t)| query(i).intersects(&face(t)))
                .collect()
        };
        let missing = |sc: &SelfCollision| {
            let taken = sc.candidates(&x0, &x0, &Trees::build(sc, &x0, &x0), &w_inv);
            assert!(taken.hold(&x0, &x1));
            let faces = faces(sc);
            assert!(faces.len() > 50, "{} faces within reach", faces.len());
            faces.iter().filter(|p| taken.points.binary_search(p).is_err()).count()
        };
        assert_eq!(missing(&rubbing), 0);
        assert!(missing(&frictionless) > 50);
    }

    /// Start and end positions of a step, from `[start xyz, end xyz]` rows.
    fn start_and_end<const K: usize>(rows: [[Real; 6]; K]) -> ([Vec3; K], [Vec3; K]) {
        (rows.map(|r| Vec3::new(r[0], r[1], r[2])), rows.map(|r| Vec3::new(r[3], r[4], r[5])))
    }

    /// Two pairs from a pinned curtain folding fast (±150 µC at the add-on's most steps,
    /// `tests/contacts.rs`), each on the side of the other it started on at the end of the
    /// step, having changed sides twice in it: once beside the other, once through it. Before,
    /// each was taken for a contact on the side it had passed to (`C` = −0.30 and −0.008 mm),
    /// which the passes then kept, and the curtain tangled. Now each is a contact on the far
    /// side of where it came from (`C < −d`).
    #[test]
    fn a_pair_that_changed_sides_twice_in_a_step_passing_through_once_is_crossed() {
        let d = 0.015;
        // edges (193, 234) and (194, 235) at step 53: their lines cross beside the segments at
        // 0.03 of the step, and the segments meet at 0.63
        let (e0, e1) = start_and_end([
            [
                0.08194354345206263,
                0.009060713312295023,
                1.0130268954787789,
                0.11702004203162414,
                0.004906852624723304,
                1.0267931518647377,
            ],
            [
                0.08418113924448974,
                0.007867503875426273,
                1.086315749263694,
                0.08586975751159753,
                -0.0028511102386516037,
                1.1178600912246808,
            ],
            [
                0.1025214834159211,
                0.0003595606776277793,
                1.0056326018799515,
                0.08221831751573855,
                -0.01001262755089903,
                1.00940462652767,
            ],
            [
                0.11055103745935382,
                -0.005677797224881421,
                1.0654450374159334,
                0.11182501593886365,
                0.03020369612445469,
                1.0721295216700901,
            ],
        ]);
        assert!(!apart(&e0, &e1, d));
        let moves: [Vec3; 4] = std::array::from_fn(|k| e1[k] - e0[k]);
        let (n, s, t) = edge_edge(&e0, &e1, &moves, d, true).expect("a contact");
        let gap = n.dot(&(e1[0] * (1.0 - s) + e1[1] * s - e1[2] * (1.0 - t) - e1[3] * t)) - d;
        assert!(gap < -d, "C = {gap}");
        // vertex 117 and triangle (75, 76, 116) at step 72: it is level with the triangle's
        // plane beside it at 0.02 of the step, and passes through it at 0.52
        let (x_old, x) = start_and_end([
            [
                0.0505786298113548,
                0.047136993605583974,
                1.0427960074441547,
                0.011571694274460318,
                0.06162928941283256,
                1.045552381236166,
            ],
            [
                0.009875237921152644,
                0.04286630439282681,
                1.0304459219280282,
                0.011207804893337555,
                0.02935143913124034,
                1.0249006328815862,
            ],
            [
                0.017956060874388207,
                0.05237313704597983,
                0.9953171974072693,
                0.020333048287720142,
                0.08567936872917511,
                1.0102499410735242,
            ],
            [
                0.05092433387096628,
                0.036055726767252695,
                1.085891859138105,
                0.05162070366518612,
                0.05471876470403702,
                1.1076022529299754,
            ],
        ]);
        let sc = SelfCollision::new(&[[1, 2, 3]], &[d, 0.0, 0.0, 0.0], &x_old).unwrap();
        let swept = swept_box(&[1, 2, 3], [&x_old, &x], 0.0);
        let contact = sc.vertex_triangle(0, 0, [&x_old, &x], &x, 1.0, Some(&swept)).expect("a contact");
        assert!(contact.gap(&x) < -d, "C = {}", contact.gap(&x));
    }

    #[test]
    fn a_vertex_passing_through_a_triangle_is_put_back_on_its_side() {
        let x_old = [Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::new(0.2, 0.2, 0.1)];
        let mut x = x_old;
        x[3].z = -0.3;
        let mut v = [Vec3::zeros(), Vec3::zeros(), Vec3::zeros(), Vec3::new(0.0, 0.0, -4.0)];
        let sc = SelfCollision::new(&[[0, 1, 2]], &[0.0, 0.0, 0.0, 0.05], &x_old).unwrap();
        let pinned = [true, true, true, false];
        assert_eq!(
            sc.project(
                &mut ContactStep::new(&x_old, &x),
                &mut x,
                &mut v,
                (&[1.0; 4], &pinned),
                0.1,
                &mut BroadPhase::default()
            ),
            1
        );
        assert!((x[3] - Vec3::new(0.2, 0.2, 0.05)).norm() < 1e-12, "{:?}", x[3]);
        // v = −4 + Δx/h = −4 + 3.5 = −0.5: what (x − x_old)/h says
        assert!((v[3] - Vec3::new(0.0, 0.0, -0.5)).norm() < 1e-12, "{:?}", v[3]);
        // the triangle's corners are pinned and did not move
        assert_eq!(&x[..3], &x_old[..3]);
    }

    #[test]
    fn a_free_triangle_shares_the_push_by_mass_and_momentum_is_kept() {
        let x_old = [Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::new(0.2, 0.2, 0.1)];
        let mut x = x_old;
        x[3].z = -0.3;
        let mut v = [Vec3::zeros(), Vec3::zeros(), Vec3::zeros(), Vec3::new(0.0, 0.0, -4.0)];
        let mass = [0.5, 1.0, 2.0, 0.3];
        let momentum = |v: &[Vec3]| v.iter().zip(&mass).map(|(v, m)| v * *m).sum::<Vec3>();
        let before = momentum(&v);
        let sc = SelfCollision::new(&[[0, 1, 2]], &[0.0, 0.0, 0.0, 0.05], &x_old).unwrap();
        sc.project(
            &mut ContactStep::new(&x_old, &x),
            &mut x,
            &mut v,
            (&mass, &[false; 4]),
            0.1,
            &mut BroadPhase::default(),
        );
        assert!((momentum(&v) - before).norm() < 1e-12, "{:?} vs {before:?}", momentum(&v));
        // the vertex ends d above the plane of the (moved) triangle, on its starting side
        let n = triangle_normal(&x[0], &x[1], &x[2]).unwrap();
        assert!(((x[3] - x[0]).dot(&n) - 0.05).abs() < 0.05 * TOLERANCE, "{}", (x[3] - x[0]).dot(&n));
        assert!(x[0].z < 0.0 && x[1].z < 0.0 && x[2].z < 0.0, "the triangle was pushed down: {x:?}");
    }
}
