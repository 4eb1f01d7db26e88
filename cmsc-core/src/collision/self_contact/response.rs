//! What the contacts of self-collision do ([`SelfCollision`]'s docs): each [`Contact`]'s
//! projection by mass and its friction, the order of the Gauss–Seidel sweeps, and the
//! fail-safe of the rigid impact zones.

use nalgebra::Rotation3;

use super::broad::{run_starts, Trees};
use super::{ContactStep, SelfCollision};
use crate::math::{Mat3, Real, Vec3};

/// One contact: the constraint `C(x) = n · Σ_k w_k x_{idx_k} − d ≥ 0` on four vertices, with
/// `Σ_k w_k = 0` (vertex–triangle: `w = (1, −β_a, −β_b, −β_c)`, the barycentrics of the closest
/// point; edge–edge: `(1 − s, s, −(1 − t), −t)`, the closest points' parameters) and `n` the
/// unit direction in which the two sides must part (the side at the start of the step for a
/// crossing).
#[derive(Debug, Clone, Copy)]
pub(super) struct Contact {
    pub(super) idx: [u32; 4],
    pub(super) w: [Real; 4],
    pub(super) n: Vec3,
    pub(super) d: Real,
    /// The triangle (vertex–triangle) or the second edge (edge–edge), by index: what a
    /// detection orders a vertex's or an edge's contacts by.
    pub(super) key: u32,
}

impl Contact {
    /// `C(x) = n · Σ w_k x_k − d` (m): negative while the contact is violated.
    #[inline]
    pub(super) fn gap(&self, x: &[Vec3]) -> Real {
        self.n.dot(&(0..4).map(|k| x[self.idx[k] as usize] * self.w[k]).sum::<Vec3>()) - self.d
    }

    /// Projects `C ≥ 0` by mass: `Δx_k = W_k w_k Δλ n` with `Δλ = −C / Σ_k W_k w_k²`, which
    /// leaves `Σ m_k Δx_k = Δλ n Σ_{k free} w_k` — zero when no corner is pinned (momentum
    /// conserved), the pinned corners taking the rest as the world does.
    #[inline]
    pub(super) fn project(&self, x: &mut [Vec3], w_inv: &[Real]) {
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
    #[inline]
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
    pub(super) fn friction(&self, x_old: &[Vec3], x: &mut [Vec3], w_inv: &[Real], lost: Real) {
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

/// Contacts whose [`Contact::lever`] is below this (the pins hold more than half of them) are
/// not projected (0.5).
const MIN_LEVER: Real = 0.5;

impl SelfCollision {
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
    pub(super) fn sweep_order(&self, pairs: &[Contact], points: &[Contact], w_inv: &[Real]) -> Vec<Contact> {
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
    pub(super) fn impact_zones(
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
}

/// Most rounds of [`SelfCollision::impact_zones`] per step (16): each detects once and grows
/// the zones by the contacts still crossed.
const ZONE_ROUNDS: usize = 16;

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
pub(super) fn anchors_motion(moves: &[(Vec3, Vec3)]) -> (Vec3, Mat3, Vec3) {
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
