//! The method's parameters from the error asked for: the spline order `p`, `α h` and `α r_c`
//! come from a table calibrated against the direct sum (the error of the split falls like
//! `erfc(α r_c)` and `e^{−α² r_c²}`, that of the mesh like its aliasing sum, both functions of
//! these dimensionless products alone: Deserno & Holm 1998's estimates, Eqs. 30–32 of part II,
//! have this form); then one length, `r_c`, sets the balance between the pair sum (pairs within
//! `r_c`) and the mesh (`∝ volume / h³` points): it is chosen to minimise a cost model measured
//! on this machine, from the distances of sampled charges to their neighbours, so that a thin
//! cloth and a solid ball of the same `n` each get their own balance.

use rayon::prelude::*;

use super::grid::Grid;
use crate::math::{Real, Vec3};

/// The dimensionless settings for one error level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Accuracy {
    /// Spline order `p`.
    pub order: usize,
    /// `α h`: the mesh spacing in units of the split's width.
    pub alpha_h: Real,
    /// `α r_c`: the cut-off in units of the split's width.
    pub alpha_rc: Real,
}

/// The settings for a relative RMS force error of at most `tolerance`, calibrated on the test
/// scenes (`tests/p3m.rs`: sphere, torus, flat and wavy cloth, two spheres; one sign and mixed;
/// ~2K charges each): the largest error measured there is 5.5·10⁻³ for the 10⁻² row and
/// 5.4·10⁻⁴ for the 10⁻³ row. The mesh sets the error: at `α h = 0.9` the 10⁻² row reaches
/// 1.1·10⁻² whatever `α r_c` and `p` (the sampled kernel's own aliasing, `e^{−π²/(4 α² h²)}`),
/// while `α r_c` from 2.3 down to 2.0 leaves it unchanged.
pub(super) fn accuracy(tolerance: Real) -> Accuracy {
    if tolerance >= 1e-2 {
        Accuracy { order: 4, alpha_h: 0.8, alpha_rc: 2.0 }
    } else if tolerance >= 1e-3 {
        Accuracy { order: 5, alpha_h: 0.6, alpha_rc: 2.9 }
    } else {
        Accuracy { order: 6, alpha_h: 0.45, alpha_rc: 3.4 }
    }
}

/// Most FFT points `M` (the doubled mesh) the method allocates: at this size its buffers take
/// about 330 MB between calls (the charges' transform `4M` bytes, one inverse pass's `2M`, the
/// four kernel transforms `2M`, the field on the mesh `1.5M`) and 450 MB while the kernels are
/// transformed (the sampled kernel, `4M`), counted from the sizes, not measured. A scene that would need more (objects metres apart, so
/// that a mesh fine enough for each of them spans the empty space between them) goes to DDEF.
pub(super) const MAX_FFT_POINTS: f64 = (1u64 << 25) as f64;

/// Neighbours per charge the pair sum may take at most: beyond it the pair sum costs more than
/// DDEF's whole field at any `n` this method is chosen for.
const MAX_NEIGHBOURS: usize = 1024;

/// Charges whose neighbour distances are sampled.
const SAMPLES: usize = 24;

/// The cut-offs `r_c` (m) the short-range kernel resolves: it sums `1/r³ − L(r)` within `r_c`
/// in `f32`, whose normal range (10⁻³⁸ ..= 3·10³⁸) `r³` and `L`'s coefficients (`~ 1/r_c³`)
/// must stay inside with margin. Measured on 50 random charges in a cube of side `s` against the
/// direct sum: relative error 1.7·10⁻⁴ from `s` = 10⁻⁹ to 10¹⁰ m, 1.4·10⁻³ at 10¹² m, 0.25 at
/// 10¹³ m (`tests/p3m.rs` checks 10⁻¹² to 10¹⁸ m). Outside it P3M falls back to DDEF, which
/// has no such limit there.
const CUTOFF_RANGE: std::ops::RangeInclusive<Real> = 1e-10..=1e11;

/// Cost of one pair within `r_c` (with the pairs of the cells scanned beyond it) and of one
/// FFT point of the mesh work (the forward transform and three inverse ones, pruned, with the
/// spreading and interpolation), ns per call on 2 threads, from `examples/p3m_bench.rs`'s stage
/// times (torus and cloth, 100K, `f32` pair kernel): only their ratio matters.
const PAIR_COST: Real = 7.0;
const FFT_POINT_COST: Real = 8.0;

/// The chosen `α`, `h`, `r_c`, or why the method cannot run on this scene.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Choice {
    /// Run with splitting parameter `alpha` (1/m), spacing `h` (m) and cut-off `r_c` (m).
    Run { alpha: Real, h: Real, r_c: Real, order: usize },
    /// Fall back to DDEF, for the reason given.
    Fallback(String),
}

/// Chooses the parameters for the charges `x` (box `lo..hi`) at `tolerance` with charge radius
/// `a` (m): the cut-off is at least `a`, so that every pair closer than `a` (where the law is
/// not Coulomb's, Eq. (C1) of [`crate::coulomb`]) is summed exactly and the mesh carries only
/// the Coulomb tail.
pub(super) fn choose(x: &[Vec3], lo: Vec3, hi: Vec3, tolerance: Real, a: Real) -> Choice {
    let acc = accuracy(tolerance);
    let n = x.len();
    let diag = (hi - lo).norm();
    // relative to the box (an absolute floor broke charges a picometre apart); 1 nm for charges
    // that all coincide
    let floor = if diag > 0.0 { diag * 1e-6 } else { 1e-9 }.max(a);
    // candidates: the distance to the k-th neighbour (k pairs per charge), and beyond the box's
    // diagonal when every pair is within the neighbours allowed (a few charges then get a coarse
    // mesh that carries little)
    let mut candidates: Vec<(Real, Real)> =
        neighbour_radii(x).into_iter().enumerate().map(|(k, r)| (r, (k + 1) as Real)).collect();
    if n <= MAX_NEIGHBOURS + 1 {
        candidates.extend([1.01, 2.0, 4.0].map(|f| (f * diag, (n - 1) as Real)));
    }
    let mut best: Option<(Real, Real)> = None; // (cost, r_c)
    let mut smallest_mesh = Real::INFINITY;
    for (r, per_charge) in candidates {
        let r_c = r.max(floor);
        let h = acc.alpha_h * r_c / acc.alpha_rc;
        let points = Grid::fft_points(lo, hi, h, acc.order);
        smallest_mesh = smallest_mesh.min(points);
        if points > MAX_FFT_POINTS {
            continue;
        }
        let pairs = n as Real * per_charge;
        let cost = PAIR_COST * pairs + FFT_POINT_COST * points;
        if best.is_none_or(|(c, _)| cost < c) {
            best = Some((cost, r_c));
        }
    }
    match best {
        Some((_, r_c)) if !CUTOFF_RANGE.contains(&r_c) => Choice::Fallback(format!(
            "the cut-off the charges need ({r_c:.3e} m) is outside the {:e} ..= {:e} m its f32 pair kernel \
             resolves (1/r³ there leaves f32's range)",
            CUTOFF_RANGE.start(),
            CUTOFF_RANGE.end()
        )),
        Some((_, r_c)) => {
            let alpha = acc.alpha_rc / r_c;
            Choice::Run { alpha, h: acc.alpha_h / alpha, r_c, order: acc.order }
        }
        None => Choice::Fallback(format!(
            "the charges' box ({:.3} × {:.3} × {:.3} m) needs a mesh of {:.2e} FFT points at the \
             spacing their neighbours need, above the {:.2e} allowed (objects far apart)",
            hi.x - lo.x,
            hi.y - lo.y,
            hi.z - lo.z,
            smallest_mesh,
            MAX_FFT_POINTS
        )),
    }
}

/// `r[k]`: the median over sampled charges of the distance to their `k + 1`-th nearest charge,
/// for `k` up to [`MAX_NEIGHBOURS`] (or `n − 2`); nondecreasing.
fn neighbour_radii(x: &[Vec3]) -> Vec<Real> {
    let n = x.len();
    let k_max = MAX_NEIGHBOURS.min(n - 1);
    let samples = SAMPLES.min(n);
    let sorted: Vec<Vec<Real>> = (0..samples)
        .into_par_iter()
        .map(|s| {
            let i = s * (n / samples);
            let mut d: Vec<Real> = x.iter().map(|p| (p - x[i]).norm_squared()).collect();
            d.swap_remove(i);
            if k_max < d.len() {
                d.select_nth_unstable_by(k_max, |a, b| a.total_cmp(b));
                d.truncate(k_max);
            }
            d.sort_unstable_by(|a, b| a.total_cmp(b));
            d
        })
        .collect();
    (0..k_max)
        .map(|k| {
            let mut at: Vec<Real> = sorted.iter().map(|d| d[k]).collect();
            at.sort_unstable_by(|a, b| a.total_cmp(b));
            at[at.len() / 2].sqrt()
        })
        .collect()
}
