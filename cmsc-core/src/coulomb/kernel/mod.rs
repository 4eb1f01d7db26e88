//! The pair kernels every CPU backend sums with: the softened Coulomb term of
//! [Paper](crate#references) Eq. (8), `q_j (p − x_j) / (|p − x_j|² + ε²)^{3/2}`, over many
//! sources `j` at one target `p` (the field at `p` divided by `k_c`).
//!
//! - `f64` over sources as structure of arrays ([`Soa`]): [`field_sum_portable`], a
//!   branch-free loop over [`LANES`]-wide chunks that LLVM turns into SIMD (the `r = 0` guard is
//!   a select); on x86-64 CPUs with AVX2+FMA (detected at run time, so one binary runs
//!   everywhere) [`field_sum`] and [`field_sum_refined`] run [`avx2`]'s kernel instead, which
//!   avoids the per-pair square root and division. The direct sum and DDEF's near field use it.
//! - `f32` in a local frame with `f64` accumulation ([`mixed`]): eight pairs per AVX2
//!   instruction, for DDEF's far-field gather (Eq. (9)), whose sums only need to be far more
//!   accurate than DDEF's own approximation.
//! - [`inv_r3`], the scalar `1 / (r² + ε²)^{3/2}`, for the sums that run term by term.
//! - The potential, `Σ_j q_j / (|p − x_j|² + ε²)^{1/2}` ([`potential_sum_refined`]), the same way in
//!   `f64` (portable, or AVX2+FMA without a square root or division), for DDEF's potential
//!   energy.

mod avx2;
mod mixed;
mod soa;

pub(crate) use mixed::{local, Frame32, GUARD};
pub(crate) use soa::{Soa, LANES};

use crate::math::{Real, Vec3};

/// Softened inverse cube distance `1 / (r² + ε²)^{3/2}` given `r² + ε²`, or `0` where that is
/// too small to invert finitely (only possible with `ε = 0` for coincident points).
#[inline(always)]
pub(crate) fn inv_r3(r2_soft: Real) -> Real {
    let r3 = r2_soft * r2_soft.sqrt();
    if r3 > Real::MIN_POSITIVE {
        1.0 / r3
    } else {
        0.0
    }
}

/// `Σ_j q_j (p − x_j) / (|p − x_j|² + ε²)^{3/2}` over all sources (the field at `p` divided by
/// `k_c`, V/m per (N·m²/C²)). Sources at distance 0 with `ε = 0` contribute nothing, which also
/// drops the self term `j = i`.
#[inline(always)]
pub(crate) fn field_sum_portable(p: Vec3, eps2: Real, s: &Soa) -> Vec3 {
    let (mut ax, mut ay, mut az) = ([0.0; LANES], [0.0; LANES], [0.0; LANES]);
    let chunks =
        s.x.chunks_exact(LANES)
            .zip(s.y.chunks_exact(LANES))
            .zip(s.z.chunks_exact(LANES).zip(s.q.chunks_exact(LANES)));
    for ((cx, cy), (cz, cq)) in chunks {
        for l in 0..LANES {
            let (dx, dy, dz) = (p.x - cx[l], p.y - cy[l], p.z - cz[l]);
            let r2 = dx * dx + dy * dy + dz * dz + eps2;
            let w = cq[l] * inv_r3(r2);
            ax[l] += dx * w;
            ay[l] += dy * w;
            az[l] += dz * w;
        }
    }
    Vec3::new(ax.iter().sum(), ay.iter().sum(), az.iter().sum())
}

/// The softened field sum at `p` (see [`field_sum_portable`]), with the AVX2+FMA kernel where
/// the CPU has it (detected at run time; the check is a cached load), to `f64` round-off.
#[inline]
pub(crate) fn field_sum(p: Vec3, eps2: Real, s: &Soa) -> Vec3 {
    field_sum_refined::<3>(p, eps2, s)
}

/// [`field_sum`] with `NEWTON` refinements of the AVX2 kernel's `1/r` estimate: 3 give `f64`
/// round-off, 1 a relative error of `2·10⁻⁷` per term (`6·10⁻⁷` in `1/r³`) at about 0.8× the
/// cost. The portable kernel is exact either way.
#[inline]
pub(crate) fn field_sum_refined<const NEWTON: usize>(p: Vec3, eps2: Real, s: &Soa) -> Vec3 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: AVX2 and FMA are present (checked above); `s` is padded to LANES.
        return unsafe { avx2::field_sum::<NEWTON>(p, eps2, s) };
    }
    field_sum_portable(p, eps2, s)
}

/// `Σ_j q_j / (|p − x_j|² + ε²)^{1/2}` over all sources (the softened potential at `p` divided
/// by `k_c`, V per (N·m²/C²)). Sources whose `|p − x_j|² + ε²` is below `f32::MIN_POSITIVE`
/// (coincident points with `ε = 0`) contribute nothing, as in the AVX2 kernel.
#[inline(always)]
pub(crate) fn potential_sum_portable(p: Vec3, eps2: Real, s: &Soa) -> Real {
    let tiny = f32::MIN_POSITIVE as Real;
    let mut acc = [0.0; LANES];
    let chunks =
        s.x.chunks_exact(LANES)
            .zip(s.y.chunks_exact(LANES))
            .zip(s.z.chunks_exact(LANES).zip(s.q.chunks_exact(LANES)));
    for ((cx, cy), (cz, cq)) in chunks {
        for l in 0..LANES {
            let (dx, dy, dz) = (p.x - cx[l], p.y - cy[l], p.z - cz[l]);
            let r2 = dx * dx + dy * dy + dz * dz + eps2;
            acc[l] += if r2 >= tiny { cq[l] / r2.sqrt() } else { 0.0 };
        }
    }
    acc.iter().sum()
}

/// The softened potential sum at `p` (see [`potential_sum_portable`]), with the AVX2+FMA kernel
/// where the CPU has it and `NEWTON` refinements of its `1/r` estimate: 3 give `f64` round-off,
/// 1 a relative error of `2·10⁻⁷` per term. The portable kernel is exact either way.
#[inline]
pub(crate) fn potential_sum_refined<const NEWTON: usize>(p: Vec3, eps2: Real, s: &Soa) -> Real {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: AVX2 and FMA are present (checked above); `s` is padded to LANES.
        return unsafe { avx2::potential_sum::<NEWTON>(p, eps2, s) };
    }
    potential_sum_portable(p, eps2, s)
}
