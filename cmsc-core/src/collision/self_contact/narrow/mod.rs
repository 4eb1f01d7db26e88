//! The narrow phase of self-collision ([`super::SelfCollision`]): the exact tests of one
//! pair over a step's straight motion. [`edge_edge`] decides an edge pair's contact at the end
//! of the step, [`apart`] sets aside first, without a square root, the pairs it would find
//! none for ([`vertex_apart`] the vertex–triangle pairs; both four pairs at a time in vector
//! registers, [`apart_lanes`] and [`vertex_apart_lanes`]), and the swept tests
//! ([`vertex_triangle_crossing`], [`edge_edge_crossing`]) find
//! where a vertex passed through a triangle or two edges through each other within the step,
//! from the times the four points are coplanar (the roots of a cubic, [`cubic_roots_in_unit`]).

use crate::math::{Real, Vec3};

/// Barycentric coordinates of `q` (in the plane of `a b c`, e.g. its closest point) in the
/// triangle, clamped to `[0, 1]` and normalised (the closest point lies on the triangle).
pub(super) fn barycentric(q: &Vec3, a: &Vec3, b: &Vec3, c: &Vec3) -> [Real; 3] {
    let (v0, v1, v2) = (b - a, c - a, q - a);
    let (d00, d01, d11) = (v0.dot(&v0), v0.dot(&v1), v1.dot(&v1));
    let (d20, d21) = (v2.dot(&v0), v2.dot(&v1));
    let denom = d00 * d11 - d01 * d01;
    if denom <= 0.0 {
        return [1.0 / 3.0; 3];
    }
    let v = ((d11 * d20 - d01 * d21) / denom).clamp(0.0, 1.0);
    let w = ((d00 * d21 - d01 * d20) / denom).clamp(0.0, 1.0);
    let u = (1.0 - v - w).max(0.0);
    let sum = u + v + w;
    [u / sum, v / sum, w / sum]
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
pub(super) fn edge_edge(
    e0: &[Vec3; 4],
    e1: &[Vec3; 4],
    moves: &[Vec3; 4],
    d: Real,
    continuous: bool,
) -> Option<(Vec3, Real, Real)> {
    let signed = |e: &[Vec3; 4]| {
        let n = (e[1] - e[0]).cross(&(e[3] - e[2]));
        let len = n.norm();
        // near-parallel edges (under `PARALLEL`, 1e-3 rad, 0.06°) have no reliable side: the
        // sign of η flips with tiny rotations; the vertex–triangle test covers them
        (len > PARALLEL * (e[1] - e[0]).norm() * (e[3] - e[2]).norm()).then(|| {
            let n = n / len;
            ((e[0] - e[2]).dot(&n), n)
        })
    };
    // the segments passed through each other in the step (the swept test): back to the side
    // they came from, the lines `d` apart along their normal at the end
    let swept = || {
        let (_, came_from) = edge_edge_crossing(e0, e1)?;
        let (_, n) = signed(e1)?;
        let (s, t) = segment_parameters(&e1[0], &e1[1], &e1[2], &e1[3]);
        Some((if n.dot(&came_from) < 0.0 { -n } else { n }, s, t))
    };
    let (Some((eta0, n0)), Some((eta1, n))) = (signed(e0), signed(e1)) else {
        return if continuous { swept() } else { None };
    };
    // the lines' normal is only defined up to its sign: keep the orientation it had at the
    // start, or a small turn of near-parallel edges that flips `n` would flip `η` and read as a
    // crossing (and the push would then take the edges through each other)
    let (eta1, n) = if n.dot(&n0) < 0.0 { (-eta1, -n) } else { (eta1, n) };
    // on one plane at the start (within rounding): no side to keep, only the distance
    let scale = (e0[1] - e0[0]).norm() + (e0[3] - e0[2]).norm();
    let sigma = if eta0.abs() > 1e-12 * scale {
        eta0.signum()
    } else if eta1 < 0.0 {
        -1.0
    } else {
        1.0
    };
    if continuous && eta1 * sigma < 0.0 {
        // the lines changed sides: a crossing only if the segments met in the step (the
        // lines of near-parallel edges sliding across each other change sides without meeting;
        // the vertex–triangle tests keep such edges apart)
        return swept();
    }
    if continuous && may_have_met(e0, e1) {
        // on their side at the end, but the lines may have changed sides twice: once with
        // the segments apart, once meeting (two edges of a cloth folding fast, each pair
        // turning past the other: the pinned curtain of `tests/contacts.rs`)
        if let Some(contact) = swept() {
            return Some(contact);
        }
    }
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
    let mean = (moves[0] + moves[1] + moves[2] + moves[3]) / 4.0;
    let travel = moves.iter().map(|m| (m - mean).norm()).fold(0.0, Real::max);
    if gap >= d + 2.0 * travel {
        return None;
    }
    Some((n * sigma, s, t))
}

/// Whether [`edge_edge`] finds no contact for a pair that stayed on its side, decided first and
/// without a square root (most pairs a detection tests are neighbours in one layer of a cloth,
/// and end here): the edges near-parallel neither at the start nor at the end, off one plane at
/// the start, on the side they started on, at the end `d` or more apart along the lines' normal
/// or closest beyond an end of a segment, and farther apart than they can have moved relative
/// to each other in the step ([`meeting_reach2`]: else the swept test decides). With `w = x_0 −
/// x_2` and the unnormalised `n = u × v`, `a = w · n` is `η |n|`. Each condition holds by a
/// margin over the rounding of `edge_edge`'s own arithmetic (`SURE`, and signs trusted only
/// where `|a| > 10⁻¹² |w| |n|`): where one is close (a contact projected to exactly `d`,
/// coplanar edges), `edge_edge` decides as before, to the bit.
///
/// Branch-free (every condition computed, then combined), so that [`apart_lanes`] decides
/// [`LANES`] pairs at once in vector registers; a NaN in any condition leaves the pair to
/// `edge_edge`.
#[inline(always)]
pub(super) fn apart(e0: &[Vec3; 4], e1: &[Vec3; 4], d: Real) -> bool {
    const SURE: Real = 1.0 + 1e-9;
    // whether the lines have a side (neither near-parallel nor through each other), `a`, the
    // unnormalised normal `n`, `|n|²` and `|u|² + |v|²`
    let lines = |e: &[Vec3; 4]| {
        let (u, v, w) = (e[1] - e[0], e[3] - e[2], e[0] - e[2]);
        let n = u.cross(&v);
        let (a, len2, u2, v2) = (w.dot(&n), n.norm_squared(), u.norm_squared(), v.norm_squared());
        let signed =
            (len2 > SURE * PARALLEL * PARALLEL * u2 * v2) & (a * a > 1e-24 * w.norm_squared() * len2);
        (signed, a, n, len2, u2 + v2)
    };
    let ((signed0, a0, n0, len0, size0), (signed1, a1, n1, len1, _)) = (lines(e0), lines(e1));
    // `|η_0| > 1e-12 (|u_0| + |v_0|)`, with `(|u| + |v|)² ≤ 2 (|u|² + |v|²)`, and the normal not
    // turned a quarter turn
    let turn = n1.dot(&n0);
    let sided =
        signed0 & signed1 & (a0 * a0 > SURE * 2e-24 * size0 * len0) & (turn * turn > 1e-18 * len0 * len1);
    let a1 = if turn < 0.0 { -a1 } else { a1 };
    let on_its_side = sided & (a1 * a0.signum() > 0.0);
    // the lines at least `r` apart (`r²` given); the segments are at least as far apart as
    // their lines, and if that is farther than they moved relative to each other in the step
    // ([`meeting_reach2`]), they did not meet in it
    let lines_apart = |r2: Real| a1 * a1 >= SURE * r2 * len1;
    let reach2 = meeting_reach2(e0, e1);
    let (s, t) = segment_parameters(&e1[0], &e1[1], &e1[2], &e1[3]);
    let interior = (s > 0.0) & (s < 1.0) & (t > 0.0) & (t < 1.0);
    let beyond_reach = (lines_apart(d * d) & lines_apart(reach2))
        | ((lines_apart(d * d) | !interior) & !segments_within(e1, (s, t), reach2));
    on_its_side & beyond_reach
}

/// Whether [`SelfCollision::vertex_triangle`](super::SelfCollision::vertex_triangle) finds no
/// contact for vertex `p` (`e[0]`) and triangle `a b c` (`e[1..4]`), moving from `e0` to `e1`:
/// decided first, like [`apart`] for edge pairs, for the many vertices a detection tests
/// against a triangle of their own layer. Apart means: the triangle not degenerate at the start
/// or the end (by a margin over [`triangle_normal`](super::super::geometry::triangle_normal)'s
/// own test), the vertex off its plane on the same side at both (its height trusted where
/// `|η| > 10⁻¹² |p − a|`, as in [`apart`]), and at the end farther from the triangle than `d`
/// and than the pair can have moved relative to each other in the step ([`meeting_reach2`]),
/// with room for the swept test's tolerance ([`INSIDE`] of the longest edge, ten times over):
/// so it neither touches nor met it in the step. The distance is bounded below by the height
/// and the distance beyond the farthest edge's line in the plane,
/// `dist² ≥ η² + max(0, (p − a_e) · m̂_e)²`, with `m̂_e` the edge's outward normal in the
/// plane: the triangle lies on the inner side of each. Branch-free, for [`vertex_apart_lanes`].
#[inline(always)]
pub(super) fn vertex_apart(e0: &[Vec3; 4], e1: &[Vec3; 4], d: Real) -> bool {
    const SURE: Real = 1.0 + 1e-9;
    // the unnormalised normal `n`, `|n|²`, the longest edge's square, the height times `|n|`,
    // and whether the normal and the height's sign are trusted
    let plane = |e: &[Vec3; 4]| {
        let (ab, ac, bc, ap) = (e[2] - e[1], e[3] - e[1], e[3] - e[2], e[0] - e[1]);
        let n = ab.cross(&ac);
        let n2 = n.norm_squared();
        let longest = ab.norm_squared().max(bc.norm_squared()).max(ac.norm_squared());
        let h = ap.dot(&n);
        let trusted = (n2 > SURE * 1e-24 * longest * longest) & (h * h > 1e-24 * ap.norm_squared() * n2);
        (trusted, h, n, n2, longest)
    };
    let ((trusted0, h0, _, _, longest0), (trusted1, h1, n, n2, longest1)) = (plane(e0), plane(e1));
    let on_its_side = trusted0 & trusted1 & (h0 * h1 > 0.0);
    // `|n|²` times the squared distance beyond edge `a b`'s line: `m = (b − a) × n`, `|m|² =
    // |b − a|² |n|²`
    let p = e1[0];
    let beyond = |a: Vec3, b: Vec3| {
        let edge = b - a;
        let o = (p - a).dot(&edge.cross(&n)).max(0.0);
        o * o / edge.norm_squared()
    };
    let dist2 = h1 * h1 + beyond(e1[1], e1[2]).max(beyond(e1[2], e1[3])).max(beyond(e1[3], e1[1]));
    let reach = meeting_reach2(e0, e1).sqrt() + 10.0 * INSIDE * longest0.max(longest1).sqrt();
    on_its_side & (dist2 >= SURE * d * d * n2) & (dist2 >= SURE * reach * reach * n2)
}

/// How many pairs [`apart_lanes`] and [`vertex_apart_lanes`] decide at once (4: one AVX2
/// register of `f64` each).
pub(super) const LANES: usize = 4;

/// The four points of [`LANES`] pairs (two edges' ends, or a vertex and a triangle's corners),
/// by point, coordinate and lane.
pub(super) type Ends = [[[Real; LANES]; 3]; 4];

/// A pair test in lanes ([`apart_lanes`], [`vertex_apart_lanes`]): whether each lane's pair,
/// its points at the start and end of the step and its distance given, is set aside.
pub(super) type LaneTest = fn(&Ends, &Ends, &[Real; LANES]) -> [bool; LANES];

/// A lane function: `$name` decides `$test` for each of [`LANES`] pairs (`e0[k][c][l]`: point
/// `k`, coordinate `c` of lane `l`'s pair) with the same operations per lane, so the same
/// answers, in vector registers: `$portable` is the loop over the lanes and `$avx2` the same
/// loop compiled for AVX2 (four lanes per instruction; no fused multiply–add, so the same
/// bits), chosen where the CPU has it. `$test` is named, not passed: through a function
/// argument it was called lane by lane, not inlined into the loop.
macro_rules! in_lanes {
    ($(#[$doc:meta])* $name:ident, $portable:ident, $avx2:ident, $test:ident) => {
        $(#[$doc])*
        pub(super) fn $name(e0: &Ends, e1: &Ends, d: &[Real; LANES]) -> [bool; LANES] {
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 is present (checked above).
                return unsafe { $avx2(e0, e1, d) };
            }
            $portable(e0, e1, d)
        }

        #[inline(always)]
        fn $portable(e0: &Ends, e1: &Ends, d: &[Real; LANES]) -> [bool; LANES] {
            let mut out = [false; LANES];
            for l in 0..LANES {
                let ends = |e: &Ends| std::array::from_fn(|k| Vec3::new(e[k][0][l], e[k][1][l], e[k][2][l]));
                out[l] = $test(&ends(e0), &ends(e1), d[l]);
            }
            out
        }

        /// The portable loop compiled for AVX2.
        ///
        /// # Safety
        /// The CPU must support AVX2.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        unsafe fn $avx2(e0: &Ends, e1: &Ends, d: &[Real; LANES]) -> [bool; LANES] {
            $portable(e0, e1, d)
        }
    };
}

in_lanes!(
    /// [`apart`] of [`LANES`] edge pairs at once.
    apart_lanes,
    apart_lanes_portable,
    apart_lanes_avx2,
    apart
);

in_lanes!(
    /// [`vertex_apart`] of [`LANES`] vertex–triangle pairs at once.
    vertex_apart_lanes,
    vertex_apart_lanes_portable,
    vertex_apart_lanes_avx2,
    vertex_apart
);

/// `(2 τ)²`, with `τ` the largest deviation of a point's move from the four points' mean move
/// in the step `e0 → e1` (two edges' ends, or a vertex and a triangle's corners): within the
/// step the distance between the two segments (or the vertex and the triangle) changes by at
/// most `2 τ` (a common translation changes no distance, and each segment's or triangle's points
/// move with its ends or corners), so two farther apart than that at the end did not meet in it.
#[inline(always)]
pub(super) fn meeting_reach2(e0: &[Vec3; 4], e1: &[Vec3; 4]) -> Real {
    let moves: [Vec3; 4] = std::array::from_fn(|k| e1[k] - e0[k]);
    let mean = (moves[0] + moves[1] + moves[2] + moves[3]) / 4.0;
    4.0 * moves.iter().map(|m| (m - mean).norm_squared()).fold(0.0, Real::max)
}

/// Whether the segments moving from `e0` to `e1` may have met in the step: they end within
/// [`meeting_reach2`] of each other.
fn may_have_met(e0: &[Vec3; 4], e1: &[Vec3; 4]) -> bool {
    segments_within(e1, segment_parameters(&e1[0], &e1[1], &e1[2], &e1[3]), meeting_reach2(e0, e1))
}

/// Whether segments `e` (ends `e[0] e[1]` and `e[2] e[3]`), with closest points at parameters
/// `(s, t)` ([`segment_parameters`]), are less than `√r2` apart.
#[inline(always)]
fn segments_within(e: &[Vec3; 4], (s, t): (Real, Real), r2: Real) -> bool {
    (e[0] + (e[1] - e[0]) * s - e[2] - (e[3] - e[2]) * t).norm_squared() < r2
}

/// Edges closer to parallel than this (the sine of their angle, 1e-3: 0.06°) have no reliable
/// side: the sign of the lines' normal flips with tiny rotations.
const PARALLEL: Real = 1e-3;

/// A crossing found by the swept tests counts where the point is inside the triangle with
/// barycentrics down to `−INSIDE`, or the segments' closest points are within `INSIDE` of
/// their lengths (1e-6): a crossing through a shared edge or corner is not lost to rounding.
pub(super) const INSIDE: Real = 1e-6;

/// The coefficients `c` of `f(t) = c[0] + c[1] t + c[2] t² + c[3] t³ = (u(t) × v(t)) · w(t)`
/// for vectors moving linearly, `u(t) = u[0] + t u[1]` (and `v`, `w`), with a scale of `|f|`
/// on `[0, 1]`, `(|u_0| + |u_1|)(|v_0| + |v_1|)(|w_0| + |w_1|)`, for tolerances.
fn triple_product_cubic(u: [Vec3; 2], v: [Vec3; 2], w: [Vec3; 2]) -> ([Real; 4], Real) {
    let (n0, n1, n2) = (u[0].cross(&v[0]), u[0].cross(&v[1]) + u[1].cross(&v[0]), u[1].cross(&v[1]));
    let c = [n0.dot(&w[0]), n0.dot(&w[1]) + n1.dot(&w[0]), n1.dot(&w[1]) + n2.dot(&w[0]), n2.dot(&w[1])];
    let size = |a: [Vec3; 2]| a[0].norm() + a[1].norm();
    (c, size(u) * size(v) * size(w))
}

/// The roots in `[0, 1]` of `f(t) = c[0] + c[1] t + c[2] t² + c[3] t³`, ascending, with their
/// count: values within `tol` of 0 count as roots (a double root, where `f` touches 0, is one
/// root). `f` within `tol` of 0 at every coefficient has none (it is 0 throughout: no crossing
/// to find).
///
/// Not a closed form: the critical points (roots of `f'`, a quadratic solved in the stable
/// form, linear or constant when the leading coefficients vanish) split `[0, 1]` into
/// intervals on which `f` is monotone; each interval whose ends have opposite signs holds one
/// root, found by Newton's method kept inside the bracket (bisection where Newton would leave
/// it); an end within `tol` of 0 is a root itself.
fn cubic_roots_in_unit(c: [Real; 4], tol: Real) -> ([Real; 4], usize) {
    let mut roots = ([0.0; 4], 0);
    if c.iter().all(|ci| ci.abs() <= tol) {
        return roots;
    }
    let f = |t: Real| ((c[3] * t + c[2]) * t + c[1]) * t + c[0];
    let df = |t: Real| (3.0 * c[3] * t + 2.0 * c[2]) * t + c[1];
    // Bernstein coefficients on [0, 1]: f lies in their convex hull, so one sign, no root
    let bernstein = [c[0], c[0] + c[1] / 3.0, c[0] + (2.0 * c[1] + c[2]) / 3.0, c[0] + c[1] + c[2] + c[3]];
    if bernstein.iter().all(|&b| b > tol) || bernstein.iter().all(|&b| b < -tol) {
        return roots;
    }
    // 0, the critical points inside (0, 1) in order, 1
    let mut knots = [0.0, 1.0, 1.0, 1.0];
    let mut n_knots = 1;
    let (crit, n_crit) = quadratic_roots(3.0 * c[3], 2.0 * c[2], c[1]);
    for &t in &crit[..n_crit] {
        if t > 0.0 && t < 1.0 {
            knots[n_knots] = t;
            n_knots += 1;
        }
    }
    if n_knots == 3 && knots[2] < knots[1] {
        knots.swap(1, 2);
    }
    knots[n_knots] = 1.0;
    let mut push = |t: Real| {
        if roots.1 == 0 || t > roots.0[roots.1 - 1] {
            roots.0[roots.1] = t;
            roots.1 += 1;
        }
    };
    for k in 0..n_knots {
        let (lo, hi) = (knots[k], knots[k + 1]);
        let (f_lo, f_hi) = (f(lo), f(hi));
        if f_lo.abs() <= tol {
            push(lo);
        } else if f_hi.abs() > tol && (f_lo < 0.0) != (f_hi < 0.0) {
            push(bracketed_root(&f, &df, lo, hi, f_lo));
        }
    }
    if f(1.0).abs() <= tol {
        push(1.0);
    }
    roots
}

/// The root of `f` in `(lo, hi)`, where `f` is monotone and `f(lo)` (`f_lo`) and `f(hi)` have
/// opposite signs: Newton's method from the middle, bisecting where a step would leave the
/// bracket, until the step is below 1e-15 (or 100 iterations).
fn bracketed_root(
    f: &impl Fn(Real) -> Real,
    df: &impl Fn(Real) -> Real,
    lo: Real,
    hi: Real,
    f_lo: Real,
) -> Real {
    let (mut a, mut b) = (lo, hi);
    let mut t = 0.5 * (a + b);
    for _ in 0..100 {
        let ft = f(t);
        if ft == 0.0 {
            return t;
        }
        if (ft < 0.0) == (f_lo < 0.0) {
            a = t;
        } else {
            b = t;
        }
        let slope = df(t);
        let newton = t - ft / slope;
        let next = if slope != 0.0 && newton > a && newton < b { newton } else { 0.5 * (a + b) };
        if (next - t).abs() <= 1e-15 {
            return next;
        }
        t = next;
    }
    t
}

/// The real roots of `a t² + b t + c` (none, one or two, unordered): the stable form
/// `q = −(b + sign(b) √(b² − 4ac))/2`, `t = q/a, c/q`, so that a small `a` loses no precision;
/// linear where `a = 0`, none where `a = b = 0`.
fn quadratic_roots(a: Real, b: Real, c: Real) -> ([Real; 2], usize) {
    if a == 0.0 {
        return if b == 0.0 { ([0.0; 2], 0) } else { ([-c / b, 0.0], 1) };
    }
    let disc = b * b - 4.0 * a * c;
    if disc < 0.0 {
        return ([0.0; 2], 0);
    }
    let q = -0.5 * (b + b.signum() * disc.sqrt());
    if q == 0.0 {
        return ([0.0, 0.0], 1); // b = c = 0: the double root 0
    }
    ([q / a, c / q], 2)
}

/// Continuous vertex–triangle test over the straight motion of a step: vertex `p[0] → p[1]`
/// and triangle `tri[0] → tri[1]`, every point moving linearly in `t ∈ [0, 1]`. The vertex
/// meets the triangle's plane at the roots of the cubic `((b − a) × (c − a)) · (p − a) = 0`
/// (Provot 1997; Bridson, Fedkiw & Anderson 2002); a root after the start (a root at `t = 0`
/// is a vertex on the plane at the start, not a crossing within the step) where it changes
/// sides inside the triangle (barycentrics down to `−INSIDE`) is a meeting, and an odd number
/// of meetings is a crossing ([`last_of_odd`]). Returns the time of the last meeting (a
/// fraction of the step) and the triangle's unit normal then, oriented towards the side the
/// vertex came from, or `None` if it does not end through the triangle.
pub(super) fn vertex_triangle_crossing(p: &[Vec3; 2], tri: &[[Vec3; 3]; 2]) -> Option<(Real, Vec3)> {
    let rel = |k: usize| [tri[0][k] - tri[0][0], (tri[1][k] - tri[1][0]) - (tri[0][k] - tri[0][0])];
    let w = [p[0] - tri[0][0], (p[1] - tri[1][0]) - (p[0] - tri[0][0])];
    let (c, scale) = triple_product_cubic(rel(1), rel(2), w);
    let tol = 1e-12 * scale;
    last_of_odd(coplanar_times(c, tol).filter_map(|(t, side)| {
        let at = |a: &Vec3, b: &Vec3| a + (b - a) * t;
        let [a, b, c] = [0, 1, 2].map(|k| at(&tri[0][k], &tri[1][k]));
        let q = at(&p[0], &p[1]);
        let normal = (b - a).cross(&(c - a));
        let area2 = normal.norm_squared();
        if area2 == 0.0 || side.abs() <= tol {
            return None;
        }
        let beta_a = (b - q).cross(&(c - q)).dot(&normal) / area2;
        let beta_b = (c - q).cross(&(a - q)).dot(&normal) / area2;
        (beta_a >= -INSIDE && beta_b >= -INSIDE && 1.0 - beta_a - beta_b >= -INSIDE)
            .then(|| (t, normal.normalize() * side.signum()))
    }))
}

/// The times in `(0, 1]` at which the coplanarity cubic `c` (coefficients of `t⁰ … t³`) has a
/// root ([`cubic_roots_in_unit`] to `tol`) and the pair changes sides (or ends on the plane),
/// earliest first, each with the cubic's value halfway since the previous root: its sign is the
/// side the pair was on before that root. A root where the cubic touches 0 and turns back (the
/// pair grazes the plane) is no change of side.
fn coplanar_times(c: [Real; 4], tol: Real) -> impl Iterator<Item = (Real, Real)> {
    let (roots, count) = cubic_roots_in_unit(c, tol);
    let f = move |t: Real| ((c[3] * t + c[2]) * t + c[1]) * t + c[0];
    let roots: Vec<Real> = roots.into_iter().take(count).filter(|&t| t != 0.0).collect();
    (0..roots.len()).filter_map(move |k| {
        let t = roots[k];
        let before = f(0.5 * (if k == 0 { 0.0 } else { roots[k - 1] } + t));
        let after = if t < 1.0 { f(0.5 * (t + roots.get(k + 1).copied().unwrap_or(1.0))) } else { 0.0 };
        (after == 0.0 || after.signum() != before.signum()).then_some((t, before))
    })
}

/// Of the times a pair meets in a step (each with the unit normal then, oriented towards the
/// side it came from), the last, if it met an odd number of times: the pair ends on the far
/// side of where it started (met twice, it passed through and back).
fn last_of_odd(meetings: impl Iterator<Item = (Real, Vec3)>) -> Option<(Real, Vec3)> {
    let (count, last) = meetings.fold((0, None), |(count, _), m| (count + 1, Some(m)));
    if count % 2 == 1 {
        last
    } else {
        None
    }
}

/// Continuous edge–edge test over the straight motion of a step: edges `(e[0], e[1])` and
/// `(e[2], e[3])` moving from `e0` to `e1`. The four ends are coplanar at the roots of
/// `((x_1 − x_0) × (x_3 − x_2)) · (x_0 − x_2) = 0`; a root after the start where they change
/// sides and the segments' closest points meet (within `INSIDE` of their lengths;
/// near-parallel edges excepted, [`PARALLEL`]) is a meeting, and an odd number of meetings is
/// a crossing ([`last_of_odd`]). Returns the time of the last meeting (a fraction of the step)
/// and the lines' unit normal then, oriented from the second edge towards the side the first
/// came from, or `None`.
pub(super) fn edge_edge_crossing(e0: &[Vec3; 4], e1: &[Vec3; 4]) -> Option<(Real, Vec3)> {
    let mv = |k: usize, l: usize| [e0[k] - e0[l], (e1[k] - e1[l]) - (e0[k] - e0[l])];
    let (c, scale) = triple_product_cubic(mv(1, 0), mv(3, 2), mv(0, 2));
    let tol = 1e-12 * scale;
    last_of_odd(coplanar_times(c, tol).filter_map(|(t, side)| {
        let x = [0, 1, 2, 3].map(|k| e0[k] + (e1[k] - e0[k]) * t);
        let (u, v) = (x[1] - x[0], x[3] - x[2]);
        let normal = u.cross(&v);
        let len = normal.norm();
        if side.abs() <= tol || len <= PARALLEL * u.norm() * v.norm() {
            return None;
        }
        let (s, r) = segment_parameters(&x[0], &x[1], &x[2], &x[3]);
        let gap = (x[0] + u * s - x[2] - v * r).norm();
        (gap <= INSIDE * (u.norm() + v.norm())).then(|| (t, normal / len * side.signum()))
    }))
}

/// The parameters `(s, t)` of the closest points of segments `p0 p1` and `q0 q1`, clamped to
/// `[0, 1]`: Ericson, *Real-Time Collision Detection*, §5.1.9.
#[inline(always)]
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
mod tests;
