//! The pair kernels every CPU backend sums with: the Coulomb term of [Paper](crate#references)
//! Eq. (8) with each charge spread over a ball of radius `a` (see [`super`], Eq. (C1)),
//! `q_j (p − x_j) / max(|p − x_j|, a)³`, over many sources `j` at one target `p` (the field at
//! `p` divided by `k_c`).
//!
//! - `f64` over sources as structure of arrays ([`Soa`]): [`field_sum_portable`], a
//!   branch-free loop over [`LANES`]-wide chunks that LLVM turns into SIMD (the `r = 0` guard is
//!   a select); on x86-64 CPUs with AVX2+FMA (detected at run time, so one binary runs
//!   everywhere) [`field_sum`] and [`field_sum_refined`] run [`avx2`]'s kernel instead, which
//!   avoids the per-pair square root and division. The direct sum and DDEF's near field use it.
//! - `f32` in a local frame with `f64` accumulation ([`mixed`]): eight pairs per AVX2
//!   instruction, for DDEF's far-field gather (Eq. (9)), whose sums only need to be far more
//!   accurate than DDEF's own approximation.
//! - [`inv_r3`], the scalar `1 / max(r², a²)^{3/2}`, and [`inv_r`], the potential kernel
//!   (Eq. (C2)), for the sums that run term by term.
//! - The potential, `Σ_j q_j φ_a(|p − x_j|)` ([`potential_sum_refined`]), the same way in `f64`
//!   (portable, or AVX2+FMA without a square root or division), for DDEF's potential energy.
//! - [`vjp_sum`], the pair sums of the force's vector–Jacobian product for the gradient's reverse
//!   pass, one branch-free loop compiled twice (portable, and for AVX2 where the CPU has it).

mod avx2;
mod mixed;
mod soa;

pub(crate) use mixed::{local, Frame32, GUARD};
pub(crate) use soa::{Soa, LANES};

use crate::math::{Real, Vec3};

/// The force kernel of Eq. (C1), `g(r) = 1 / max(r², a²)^{3/2}` given `r²` and `a²` (m²), or
/// `0` where that is too small to invert finitely (only possible with `a = 0` for coincident
/// points).
#[inline(always)]
pub(crate) fn inv_r3(r2: Real, a2: Real) -> Real {
    let s2 = r2.max(a2);
    let r3 = s2 * s2.sqrt();
    if r3 > Real::MIN_POSITIVE {
        1.0 / r3
    } else {
        0.0
    }
}

/// The potential kernel of Eq. (C2), `φ_a(r) = 1/r` for `r ≥ a` and `(3a² − r²)/(2a³)` below,
/// given `r²` and `a²` (m²); `0` where `max(r², a²)` is below `f32::MIN_POSITIVE` (coincident
/// points with `a = 0`), as in the AVX2 kernel. Written as `y (3/2 − r² y²/2)` with
/// `y = 1/max(r, a)`, which is `1/r` wherever `r ≥ a`.
#[inline(always)]
pub(crate) fn inv_r(r2: Real, a2: Real) -> Real {
    let s2 = r2.max(a2);
    if s2 >= f32::MIN_POSITIVE as Real {
        let y = 1.0 / s2.sqrt();
        y * (1.5 - 0.5 * r2 * y * y)
    } else {
        0.0
    }
}

/// `Σ_j q_j (p − x_j) g(|p − x_j|)` over all sources, `g` of Eq. (C1) (the field at `p` divided
/// by `k_c`, V/m per (N·m²/C²)). Sources at distance 0 with `a = 0` contribute nothing, which
/// also drops the self term `j = i` (with `a > 0` its term is `0 · g(0) = 0`).
#[inline(always)]
pub(crate) fn field_sum_portable(p: Vec3, a2: Real, s: &Soa) -> Vec3 {
    let (mut ax, mut ay, mut az) = ([0.0; LANES], [0.0; LANES], [0.0; LANES]);
    let chunks =
        s.x.chunks_exact(LANES)
            .zip(s.y.chunks_exact(LANES))
            .zip(s.z.chunks_exact(LANES).zip(s.q.chunks_exact(LANES)));
    for ((cx, cy), (cz, cq)) in chunks {
        for l in 0..LANES {
            let (dx, dy, dz) = (p.x - cx[l], p.y - cy[l], p.z - cz[l]);
            let r2 = dx * dx + dy * dy + dz * dz;
            let w = cq[l] * inv_r3(r2, a2);
            ax[l] += dx * w;
            ay[l] += dy * w;
            az[l] += dz * w;
        }
    }
    Vec3::new(ax.iter().sum(), ay.iter().sum(), az.iter().sum())
}

/// The field sum at `p` (see [`field_sum_portable`]), with the AVX2+FMA kernel where
/// the CPU has it (detected at run time; the check is a cached load), to `f64` round-off.
#[inline]
pub(crate) fn field_sum(p: Vec3, a2: Real, s: &Soa) -> Vec3 {
    field_sum_refined::<3>(p, a2, s)
}

/// [`field_sum`] with `NEWTON` refinements of the AVX2 kernel's `1/r` estimate: 3 give `f64`
/// round-off, 1 a relative error of `2·10⁻⁷` per term (`6·10⁻⁷` in `1/r³`) at about 0.8× the
/// cost. The portable kernel is exact either way.
#[inline]
pub(crate) fn field_sum_refined<const NEWTON: usize>(p: Vec3, a2: Real, s: &Soa) -> Vec3 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: AVX2 and FMA are present (checked above); `s` is padded to LANES.
        return unsafe { avx2::field_sum::<NEWTON>(p, a2, s) };
    }
    field_sum_portable(p, a2, s)
}

/// `Σ_j q_j φ_a(|p − x_j|)` over all sources, `φ_a` of Eq. (C2) (the potential at `p` divided
/// by `k_c`, V per (N·m²/C²)). Sources whose `max(|p − x_j|², a²)` is below `f32::MIN_POSITIVE`
/// (coincident points with `a = 0`) contribute nothing, as in the AVX2 kernel; with `a > 0` a
/// coincident source (the target itself) contributes `3 q_j / (2a)`.
#[inline(always)]
pub(crate) fn potential_sum_portable(p: Vec3, a2: Real, s: &Soa) -> Real {
    let mut acc = [0.0; LANES];
    let chunks =
        s.x.chunks_exact(LANES)
            .zip(s.y.chunks_exact(LANES))
            .zip(s.z.chunks_exact(LANES).zip(s.q.chunks_exact(LANES)));
    for ((cx, cy), (cz, cq)) in chunks {
        for l in 0..LANES {
            let (dx, dy, dz) = (p.x - cx[l], p.y - cy[l], p.z - cz[l]);
            acc[l] += cq[l] * inv_r(dx * dx + dy * dy + dz * dz, a2);
        }
    }
    acc.iter().sum()
}

/// The pair sums of the Coulomb force's vector–Jacobian product at target `p`
/// ([`crate::gradient::adjoint::coulomb_vjp`]): with `r = p − x_j`, `w = g(|r|)` of Eq. (C1)
/// and `d = f̄_p − f̄_j` (the adjoints `fp` and `f`, the latter as [`Soa`] positions),
/// `(Σ_j q_j (w d − 3 w (r·d) r / r²), Σ_j q_j w r·d)`, the radial term only beyond the charge
/// radius (`r² > a²`; inside it `w` is constant). Branch-free over [`LANES`]-wide chunks, like
/// [`field_sum_portable`]: the self term and padding contribute exactly 0 (`r = d = 0`, or
/// `q_j = 0`), and the product `i = j` need not be skipped.
#[inline(always)]
fn vjp_sum_portable(p: Vec3, fp: Vec3, a2: Real, s: &Soa, f: &Soa) -> (Vec3, Real) {
    let (mut ax, mut ay, mut az, mut aq) = ([0.0; LANES], [0.0; LANES], [0.0; LANES], [0.0; LANES]);
    let chunks = s.x.chunks_exact(LANES).zip(s.y.chunks_exact(LANES)).zip(s.z.chunks_exact(LANES));
    let adjoints = f.x.chunks_exact(LANES).zip(f.y.chunks_exact(LANES)).zip(f.z.chunks_exact(LANES));
    for ((((cx, cy), cz), cq), ((fx, fy), fz)) in chunks.zip(s.q.chunks_exact(LANES)).zip(adjoints) {
        for l in 0..LANES {
            let (rx, ry, rz) = (p.x - cx[l], p.y - cy[l], p.z - cz[l]);
            let (dx, dy, dz) = (fp.x - fx[l], fp.y - fy[l], fp.z - fz[l]);
            let r2 = rx * rx + ry * ry + rz * rz;
            let w = inv_r3(r2, a2);
            let rd = rx * dx + ry * dy + rz * dz;
            let radial = if r2 > a2 { 3.0 * w * rd / r2 } else { 0.0 };
            ax[l] += (dx * w - rx * radial) * cq[l];
            ay[l] += (dy * w - ry * radial) * cq[l];
            az[l] += (dz * w - rz * radial) * cq[l];
            aq[l] += cq[l] * w * rd;
        }
    }
    (Vec3::new(ax.iter().sum(), ay.iter().sum(), az.iter().sum()), aq.iter().sum())
}

/// [`vjp_sum_portable`] compiled for AVX2 (four lanes per instruction): the same operations in
/// the same order (Rust fuses no multiply–add on its own), so the same result to the bit.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn vjp_sum_avx2(p: Vec3, fp: Vec3, a2: Real, s: &Soa, f: &Soa) -> (Vec3, Real) {
    vjp_sum_portable(p, fp, a2, s, f)
}

/// [`vjp_sum_portable`], in AVX2 where the CPU has it (detected at run time).
#[inline]
pub(crate) fn vjp_sum(p: Vec3, fp: Vec3, a2: Real, s: &Soa, f: &Soa) -> (Vec3, Real) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: AVX2 and FMA are present (checked above).
        return unsafe { vjp_sum_avx2(p, fp, a2, s, f) };
    }
    vjp_sum_portable(p, fp, a2, s, f)
}

/// The potential sum at `p` (see [`potential_sum_portable`]), with the AVX2+FMA kernel
/// where the CPU has it and `NEWTON` refinements of its `1/r` estimate: 3 give `f64` round-off,
/// 1 a relative error of `2·10⁻⁷` per term. The portable kernel is exact either way.
#[inline]
pub(crate) fn potential_sum_refined<const NEWTON: usize>(p: Vec3, a2: Real, s: &Soa) -> Real {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: AVX2 and FMA are present (checked above); `s` is padded to LANES.
        return unsafe { avx2::potential_sum::<NEWTON>(p, a2, s) };
    }
    potential_sum_portable(p, a2, s)
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// The AVX2 build of the adjoint's pair sums is the portable one to the bit (the same
    /// operations, no fused multiply–add), with a coincident point at `a = 0`.
    #[test]
    fn vjp_sum_in_avx2_is_the_portable_sum_to_the_bit() {
        if !(std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")) {
            eprintln!("skipped: this CPU has no AVX2+FMA");
            return;
        }
        let n = 29;
        let x: Vec<Vec3> =
            (0..n).map(|i| Vec3::new((i as Real).sin(), (2.1 * i as Real).cos(), 0.1 * i as Real)).collect();
        let q: Vec<Real> = (0..n).map(|i| 1e-6 * (0.3 * i as Real).cos()).collect();
        let f: Vec<Vec3> = (0..n).map(|i| Vec3::new(0.2, (i as Real).cos(), -(i as Real).sin())).collect();
        let (mut s, mut adj) = (Soa::default(), Soa::default());
        s.load(&x, &q);
        adj.load(&f, &[]);
        for a2 in [0.0, 0.01] {
            for i in 0..n {
                let portable = vjp_sum_portable(x[i], f[i], a2, &s, &adj);
                // SAFETY: AVX2 and FMA are present (checked above).
                let simd = unsafe { vjp_sum_avx2(x[i], f[i], a2, &s, &adj) };
                assert_eq!(portable, simd, "a² = {a2}, target {i}");
            }
        }
    }
}
