//! Self-collision of the simulated mesh; the method and its cost are documented on [`SelfCollision`].
//! Here: the settings, a step's passes ([`SelfCollision::project`]) and what a step keeps
//! between them ([`ContactStep`]). The stages, each in its module:
//! - [`broad`]: the trees and the candidate pairs they give, kept from step to step;
//! - [`pairs`]: each detection's tests of the candidates, a box test then the [`narrow`] phase,
//!   and the faces the friction between layers acts on;
//! - [`narrow`]: the exact test of one pair over the step;
//! - [`response`]: what a contact does (its projection and friction), the order of the sweeps
//!   and the impact zones' fail-safe.

mod broad;
mod narrow;
mod pairs;
mod response;
#[cfg(test)]
mod tests;

use parry3d_f64::bounding_volume::{Aabb, BoundingVolume};
use rayon::prelude::*;

use super::geometry::{check_triangles, edges_of};
use crate::error::{Error, Result};
use crate::math::{Real, Vec3};
use broad::{bounds, touched_items, Candidates, Trees, CANDIDATE_SLACK, REBUILD_STEPS};
use pairs::Boxes;
use response::Contact;

pub use broad::BroadPhase;

/// Most detection passes per step: each finds the violated contacts at the current positions
/// and runs `SWEEPS` (4) Gauss–Seidel sweeps over them; the loop stops as soon as no contact is
/// violated by more than [`TOLERANCE`] of its distance, or after 3 passes without a 10 %
/// improvement (the two charged sheets of `tests/contacts.rs` take 2–3 passes a step while
/// pressed together; 64 bounds the cost of a pathological step).
pub const PASSES: usize = 64;

/// Largest violation left at the end of a step, as a fraction of the contact distance `d`
/// (1 %): the passes stop once no contact is closer than `(1 − TOLERANCE) d`.
pub const TOLERANCE: Real = 0.01;

/// Gauss–Seidel sweeps over the contacts found so far, per detection pass.
const SWEEPS: usize = 4;

/// A pass improves on the best so far if its worst violation is below `STALL ×` that (0.9);
/// after [`STALLED_PASSES`] (3) passes without improvement the step keeps what it has.
const STALL: Real = 0.9;
const STALLED_PASSES: usize = 3;

/// A vertex within `FRICTION_REACH ×` its distance of a triangle (1.1) feels the friction
/// between layers: a layer resting at its distance is touching whether or not the step pressed
/// it in by more than [`TOLERANCE`].
const FRICTION_REACH: Real = 1.1;

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
/// `cargo run --release -p cmsc-core --example collision_cost -- 10` on the 2-core VM (2 rayon
/// threads), a cloth draped on a sphere, Coulomb off, seconds per step, two runs:
///
/// | n vertices | plain | self-collision | mesh collider (4K-triangle sphere) | both |
/// |---:|---:|---:|---:|---:|
/// | 10 000  | 0.0107–0.0164 | 0.0150–0.0193 | 0.0159–0.0173 | 0.0219–0.0235 |
/// | 100 489 | 0.208–0.238   | 0.271–0.283   | 0.270–0.273   | 0.382–0.391   |
///
/// Within a run, self-collision alone costs 1.2–1.4 plain steps; with a collider that pushes
/// vertices every step the step projects self-collision again (`step.rs`, stage 4), and the
/// pair costs 1.4 of the collider's steps. On the ±40 µC crumple at the add-on's defaults
/// (`examples/crumple_cost.rs`: 48 frames, 598 steps, layers pressed together onto the
/// sphere, about 8 detections per step), 11.9–12.7 ms per step against 4.2–4.6 with the sphere
/// alone, 2.8–2.9× (`crumple_cost 48 ratio 40 adaptive`), and 3.0× with the add-on's frictions
/// (`… friction`: 13.5–13.8 ms against 4.5–4.6). The example's docs and README keep the
/// figures of each change that led there (from seconds per step).
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
                "rate",
                None,
                format!("has {} values, expected one per vertex ({})", rate.len(), self.distance.len()),
            ));
        }
        if let Some(i) = rate.iter().position(|r| !(r.is_finite() && *r >= 0.0)) {
            return Err(Error::invalid(
                "rate",
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

    /// Whether vertex `i` has contacts of its own: free, with a distance. A pinned vertex is a
    /// triangle corner or edge end of the free vertices' contacts, never their vertex: its own
    /// contacts (with the other flap of a pinned hinge, say) are pinned closer than their
    /// distance and could only kick the free corners.
    #[inline]
    fn collides(&self, i: usize, w_inv: &[Real]) -> bool {
        self.distance[i] > 0.0 && w_inv[i] > 0.0
    }

    /// What the trees' boxes ([`Trees`]) are grown by (m): the triangles' not at all (a
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
    #[inline]
    fn reach(&self, i: usize, w_inv: &[Real]) -> Real {
        if self.collides(i, w_inv) {
            self.distance[i]
        } else {
            -1.0
        }
    }

    /// The box vertex `i`'s contacts are looked for in: its motion from `x_old` to `x`, grown
    /// by `reach` times its distance.
    #[inline]
    fn vertex_box(&self, i: usize, x_old: &[Vec3], x: &[Vec3], reach: Real) -> Aabb {
        bounds([x_old[i], x[i]]).loosened(self.distance[i] * reach)
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
