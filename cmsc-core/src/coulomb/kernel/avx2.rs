//! The x86-64 AVX2+FMA `f64` pair kernels: the field and potential sums of
//! [`super::field_sum_portable`] and [`super::potential_sum_portable`] (charges spread over balls
//! of radius `a`, Eqs. (C1)–(C2)) without a square root or a division per pair.
//!
//! `1/sqrt(s²)`, `s² = max(r², a²)`, starts from the hardware `f32` estimate (`vrsqrtps`, relative error
//! ≤ 1.5·2⁻¹²) and is refined by three Newton steps in `f64`,
//! `y ← y (3/2 − (r²/2) y²)`, each squaring the relative error: 3.7e-4 → 2e-7 → 6e-14 → round-off.
//! The result agrees with `1/(r² sqrt r²)` to a few ulp (tested below) at a fraction of the cost
//! of `vsqrtpd` + `vdivpd`. Pairs whose `max(r², a²)` is below `f32::MIN_POSITIVE` (distances
//! under 1e-19 m, i.e. coincident points with `a = 0`) are masked to contribute nothing, as in the
//! portable kernel; beyond `f32::MAX` (1e19 m) the estimate is 0 and so is the contribution.

#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;

use super::soa::{Soa, LANES};
use crate::math::{Real, Vec3};

/// `Σ_j q_j (p − x_j) / max(|p − x_j|², a²)^{3/2}` over all sources, 8 lanes per iteration, with
/// `NEWTON` refinements of `1/r` (3 for `f64` round-off; 1 leaves a relative error of `2·10⁻⁷`).
///
/// # Safety
/// The CPU must support AVX2 and FMA; `s`'s arrays must have equal lengths, a multiple of
/// [`LANES`] (= 8).
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn field_sum<const NEWTON: usize>(p: Vec3, a2: Real, s: &Soa) -> Vec3 {
    const { assert!(LANES == 8) };
    let n = s.x.len();
    debug_assert!(s.y.len() == n && s.z.len() == n && s.q.len() == n && n.is_multiple_of(LANES));
    let (px, py, pz) = (_mm256_set1_pd(p.x), _mm256_set1_pd(p.y), _mm256_set1_pd(p.z));
    let a2 = _mm256_set1_pd(a2);
    let tiny = _mm256_set1_pd(f32::MIN_POSITIVE as f64);
    let (half, three_halves) = (_mm256_set1_pd(0.5), _mm256_set1_pd(1.5));
    let mut acc = [_mm256_setzero_pd(); 6]; // x, y, z for two interleaved half-chunks
    let mut j = 0;
    while j < n {
        for h in 0..2 {
            let k = j + 4 * h;
            // SAFETY: k + 4 <= n for every array (n is a multiple of 8, checked above).
            let (sx, sy, sz, sq) = unsafe {
                (
                    _mm256_loadu_pd(s.x.as_ptr().add(k)),
                    _mm256_loadu_pd(s.y.as_ptr().add(k)),
                    _mm256_loadu_pd(s.z.as_ptr().add(k)),
                    _mm256_loadu_pd(s.q.as_ptr().add(k)),
                )
            };
            let (dx, dy, dz) = (_mm256_sub_pd(px, sx), _mm256_sub_pd(py, sy), _mm256_sub_pd(pz, sz));
            let r2 = _mm256_fmadd_pd(dx, dx, _mm256_fmadd_pd(dy, dy, _mm256_mul_pd(dz, dz)));
            let s2 = _mm256_max_pd(r2, a2);
            let mut y = _mm256_cvtps_pd(_mm_rsqrt_ps(_mm256_cvtpd_ps(s2)));
            let half_s2 = _mm256_mul_pd(s2, half);
            for _ in 0..NEWTON {
                let t = _mm256_fnmadd_pd(_mm256_mul_pd(half_s2, y), y, three_halves); // 1.5 − s² y²/2
                y = _mm256_mul_pd(y, t);
            }
            let valid = _mm256_cmp_pd::<_CMP_GE_OQ>(s2, tiny);
            let inv_r3 = _mm256_and_pd(valid, _mm256_mul_pd(y, _mm256_mul_pd(y, y)));
            let w = _mm256_mul_pd(sq, inv_r3);
            acc[3 * h] = _mm256_fmadd_pd(dx, w, acc[3 * h]);
            acc[3 * h + 1] = _mm256_fmadd_pd(dy, w, acc[3 * h + 1]);
            acc[3 * h + 2] = _mm256_fmadd_pd(dz, w, acc[3 * h + 2]);
        }
        j += LANES;
    }
    let sum = |a: __m256d, b: __m256d| {
        let mut lanes = [0.0; 4];
        // SAFETY: `lanes` holds 4 doubles.
        unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), _mm256_add_pd(a, b)) };
        lanes.iter().sum::<Real>()
    };
    Vec3::new(sum(acc[0], acc[3]), sum(acc[1], acc[4]), sum(acc[2], acc[5]))
}

/// `Σ_j q_j φ_a(|p − x_j|)` (Eq. (C2): `y (3/2 − r² y²/2)`, `y = 1/max(r, a)`) over all sources, 8 lanes per iteration, with `NEWTON`
/// refinements of `1/r` as in [`field_sum`] (3 for `f64` round-off).
///
/// # Safety
/// As [`field_sum`]: AVX2 and FMA present; `s`'s arrays of equal length, a multiple of [`LANES`].
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn potential_sum<const NEWTON: usize>(p: Vec3, a2: Real, s: &Soa) -> Real {
    const { assert!(LANES == 8) };
    let n = s.x.len();
    debug_assert!(s.y.len() == n && s.z.len() == n && s.q.len() == n && n.is_multiple_of(LANES));
    let (px, py, pz) = (_mm256_set1_pd(p.x), _mm256_set1_pd(p.y), _mm256_set1_pd(p.z));
    let a2 = _mm256_set1_pd(a2);
    let tiny = _mm256_set1_pd(f32::MIN_POSITIVE as f64);
    let (half, three_halves) = (_mm256_set1_pd(0.5), _mm256_set1_pd(1.5));
    let mut acc = [_mm256_setzero_pd(); 2];
    let mut j = 0;
    while j < n {
        for (h, acc) in acc.iter_mut().enumerate() {
            let k = j + 4 * h;
            // SAFETY: k + 4 <= n for every array (n is a multiple of 8, checked above).
            let (sx, sy, sz, sq) = unsafe {
                (
                    _mm256_loadu_pd(s.x.as_ptr().add(k)),
                    _mm256_loadu_pd(s.y.as_ptr().add(k)),
                    _mm256_loadu_pd(s.z.as_ptr().add(k)),
                    _mm256_loadu_pd(s.q.as_ptr().add(k)),
                )
            };
            let (dx, dy, dz) = (_mm256_sub_pd(px, sx), _mm256_sub_pd(py, sy), _mm256_sub_pd(pz, sz));
            let r2 = _mm256_fmadd_pd(dx, dx, _mm256_fmadd_pd(dy, dy, _mm256_mul_pd(dz, dz)));
            let s2 = _mm256_max_pd(r2, a2);
            let mut y = _mm256_cvtps_pd(_mm_rsqrt_ps(_mm256_cvtpd_ps(s2)));
            let half_s2 = _mm256_mul_pd(s2, half);
            for _ in 0..NEWTON {
                let t = _mm256_fnmadd_pd(_mm256_mul_pd(half_s2, y), y, three_halves); // 1.5 − s² y²/2
                y = _mm256_mul_pd(y, t);
            }
            let valid = _mm256_cmp_pd::<_CMP_GE_OQ>(s2, tiny);
            // φ_a = y (3/2 − r² y²/2): 1/r where r ≥ a (then s² = r²)
            let phi = _mm256_mul_pd(
                y,
                _mm256_fnmadd_pd(_mm256_mul_pd(_mm256_mul_pd(r2, half), y), y, three_halves),
            );
            *acc = _mm256_fmadd_pd(sq, _mm256_and_pd(valid, phi), *acc);
        }
        j += LANES;
    }
    let mut lanes = [0.0; 4];
    // SAFETY: `lanes` holds 4 doubles.
    unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), _mm256_add_pd(acc[0], acc[1])) };
    lanes.iter().sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_portable_kernels_to_a_few_ulp() {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
            eprintln!("skipped: this CPU has no AVX2+FMA");
            return;
        }
        let mut soa = Soa::default();
        // distances from 1e-9 m to 1e6 m, one coincident point, signs mixed
        let x: Vec<Vec3> = (0..61)
            .map(|i| {
                Vec3::new(
                    10f64.powf(-9.0 + 0.25 * i as f64),
                    0.3 * (i % 7) as f64 * 10f64.powi(i / 10 - 3),
                    0.0,
                )
            })
            .chain([Vec3::zeros()])
            .collect();
        let q: Vec<Real> = (0..x.len()).map(|i| if i % 3 == 0 { -1.0 } else { 2.0 }).collect();
        soa.load(&x, &q);
        for p in [Vec3::zeros(), Vec3::new(0.5, -0.25, 1.0), Vec3::new(1e3, 1e-3, 0.0)] {
            for a2 in [0.0, 1e-8, 0.04] {
                let fast = unsafe { field_sum::<3>(p, a2, &soa) };
                let exact = super::super::field_sum_portable(p, a2, &soa);
                let scale: Real = x
                    .iter()
                    .zip(&q)
                    .map(|(xj, qj)| {
                        let r2 = (p - xj).norm_squared().max(a2);
                        if r2 > 0.0 {
                            qj.abs() * (p - xj).norm() / (r2 * r2.sqrt())
                        } else {
                            0.0
                        }
                    })
                    .sum();
                assert!((fast - exact).norm() <= 1e-14 * scale, "p {p:?} a2 {a2}: {fast:?} vs {exact:?}");
                // the potential: the same points, to round-off of Σ |q_j| / r_j
                let fast = unsafe { potential_sum::<3>(p, a2, &soa) };
                let exact = super::super::potential_sum_portable(p, a2, &soa);
                let scale: Real = x
                    .iter()
                    .zip(&q)
                    .map(|(xj, qj)| {
                        let r2 = (p - xj).norm_squared().max(a2);
                        if r2 > 0.0 {
                            1.5 * qj.abs() / r2.sqrt()
                        } else {
                            0.0
                        }
                    })
                    .sum();
                assert!((fast - exact).abs() <= 1e-14 * scale, "p {p:?} a2 {a2}: {fast} vs {exact}");
            }
        }
    }
}
