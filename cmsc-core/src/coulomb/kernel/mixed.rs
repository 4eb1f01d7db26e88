//! The `f32` pair kernel of DDEF's far-field gather (`coulomb/ddef/gather.rs`): eight pairs per AVX2
//! instruction, for sums that only need to be far more accurate than DDEF's own approximation
//! (~10⁻²).
//!
//! Callers put the sources in a local frame (`(x − o) / S` subtracted in `f64`, `o` near the
//! targets, `S` the grid box's largest edge) and the charges as `q / max|q|`, so rounding is
//! relative to distances from the targets, not to the scene. With `u = 2⁻²⁴`, a source at
//! distance `r` from a target that lies within `b` of `o` is placed to `≈ u (r + 2b)`; `1/r`
//! comes from the hardware estimate (relative error `≤ 1.5·2⁻¹²`) and one Newton step
//! (`≤ 2·10⁻⁷`), so a term is off by about `10⁻⁶ + 3u (1 + 2b/r)` of itself, and a sum of
//! `N` terms by at most `N/16 · u` of their magnitudes (16 lanes of partial sums). The kernel
//! also returns the smallest squared distance to a charge it met (`max(r², a²)`): a caller that finds one
//! closer than [`GUARD`] of its frame's width sums that target again in `f64`, so every `f32`
//! term is within `10⁻⁶ + 3u·65 ≈ 1.3·10⁻⁵` of itself.

use crate::math::{Real, Vec3};

/// Smallest distance of a charge from a target, as a fraction of the width of the targets'
/// frame, that an `f32` sum accepts: beyond it the frame places a source to
/// `3u (1 + 2b/r) ≤ 3u · 65` of its term (see the module docs).
pub(crate) const GUARD: Real = 1.0 / 32.0;

/// `max(r'², a'²)` below which a pair contributes nothing (`1/r'³` would overflow `f32`); in units
/// of the grid box, so only coincident points (`r < 10⁻¹²` of the box) are affected.
const TINY_R2: f32 = 1e-24;

/// Sources in a local `f32` frame, structure of arrays; the arrays have equal lengths, a
/// multiple of 16 (see [`Frame32::pad`]).
#[derive(Debug, Default)]
pub(crate) struct Frame32 {
    pub x: Vec<f32>,
    pub y: Vec<f32>,
    pub z: Vec<f32>,
}

impl Frame32 {
    /// Loads `(x − o) · inv_s` for the sources `x`, `y`, `z` (world, m), structure of arrays.
    pub fn load(&mut self, [x, y, z]: [&[Real]; 3], o: Vec3, inv_s: Real) {
        for (buf, src, o) in [(&mut self.x, x, o.x), (&mut self.y, y, o.y), (&mut self.z, z, o.z)] {
            buf.resize(src.len(), 0.0);
            convert(src, o, inv_s, buf);
        }
    }

    /// Zero-pads to a multiple of 16 sources.
    pub fn pad(&mut self) {
        let len = self.x.len().div_ceil(16) * 16;
        for buf in [&mut self.x, &mut self.y, &mut self.z] {
            buf.resize(len, 0.0);
        }
    }

    /// `Σ_k q_k (p − x_k) / max(|p − x_k|², a²)^{3/2}` over the sources in `f32` (Eq. (C1) of
    /// [`crate::coulomb`]; `a2` is `a²` in the frame's units), and the smallest
    /// `max(|p − x_k|², a²)` of a charge (`q_k ≠ 0`) met. `q` (normalized charges) is as
    /// long as the padded frame, with zeros in the padding.
    ///
    /// # Panics
    /// If `q` and the frame differ in length or it is not a multiple of 16.
    pub fn sum(&self, p: [f32; 3], a2: f32, q: &[f32]) -> ([f32; 3], f32) {
        let n = q.len();
        assert!(self.x.len() == n && self.y.len() == n && self.z.len() == n && n.is_multiple_of(16));
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: AVX2 and FMA are present (checked above); lengths checked above.
            return unsafe { avx2::sum(p, a2, self, q) };
        }
        self.sum_portable(p, a2, q)
    }

    /// [`Frame32::sum`] without SIMD intrinsics.
    pub fn sum_portable(&self, p: [f32; 3], a2: f32, q: &[f32]) -> ([f32; 3], f32) {
        let mut e = [0.0f32; 3];
        let mut closest = f32::INFINITY;
        for (k, &qk) in q.iter().enumerate() {
            let d = [p[0] - self.x[k], p[1] - self.y[k], p[2] - self.z[k]];
            let r2 = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).max(a2);
            if qk != 0.0 {
                closest = closest.min(r2);
            }
            let w = if r2 >= TINY_R2 { qk / (r2 * r2.sqrt()) } else { 0.0 };
            for (e, d) in e.iter_mut().zip(d) {
                *e += d * w;
            }
        }
        (e, closest)
    }
}

/// `(p − o) · inv_s` in `f32` (the subtraction in `f64`).
#[inline]
pub(crate) fn local(p: Vec3, o: Vec3, inv_s: Real) -> [f32; 3] {
    let d = (p - o) * inv_s;
    [d.x as f32, d.y as f32, d.z as f32]
}

/// `out[k] = (src[k] − o) · inv_s` in `f32` (the subtraction in `f64`).
fn convert(src: &[Real], o: Real, inv_s: Real, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: AVX2 is present (checked above); `out` is at least as long as `src`.
        return unsafe { avx2::convert(src, o, inv_s, out) };
    }
    for (out, &x) in out.iter_mut().zip(src) {
        *out = ((x - o) * inv_s) as f32;
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{Frame32, Real, TINY_R2};

    /// [`super::convert`], four at a time.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn convert(src: &[Real], o: Real, inv_s: Real, out: &mut [f32]) {
        assert!(out.len() >= src.len());
        let (o4, s4) = (_mm256_set1_pd(o), _mm256_set1_pd(inv_s));
        let whole = src.len() / 4 * 4;
        for k in (0..whole).step_by(4) {
            // SAFETY: k + 4 <= whole <= src.len() <= out.len() (asserted above).
            unsafe {
                let x = _mm256_loadu_pd(src.as_ptr().add(k));
                let y = _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_sub_pd(x, o4), s4));
                _mm_storeu_ps(out.as_mut_ptr().add(k), y);
            }
        }
        for k in whole..src.len() {
            out[k] = ((src[k] - o) * inv_s) as f32;
        }
    }

    /// [`Frame32::sum`] on AVX2+FMA, 16 pairs per iteration in two independent halves: `1/r`
    /// from `vrsqrtps` and one Newton step `y ← y (3/2 − (r²/2) y²)`.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA; `q` and the frame's arrays must have equal lengths, a
    /// multiple of 16.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn sum(p: [f32; 3], a2: f32, f: &Frame32, q: &[f32]) -> ([f32; 3], f32) {
        let n = q.len();
        let (px, py, pz) = (_mm256_set1_ps(p[0]), _mm256_set1_ps(p[1]), _mm256_set1_ps(p[2]));
        let a2 = _mm256_set1_ps(a2);
        let tiny = _mm256_set1_ps(TINY_R2);
        let (half, three_halves) = (_mm256_set1_ps(0.5), _mm256_set1_ps(1.5));
        let mut acc = [_mm256_setzero_ps(); 6];
        let mut closest = _mm256_set1_ps(f32::INFINITY);
        let mut j = 0;
        while j < n {
            for h in 0..2 {
                let k = j + 8 * h;
                // SAFETY: k + 8 <= n for every array (equal lengths, a multiple of 16).
                let (sx, sy, sz, sq) = unsafe {
                    (
                        _mm256_loadu_ps(f.x.as_ptr().add(k)),
                        _mm256_loadu_ps(f.y.as_ptr().add(k)),
                        _mm256_loadu_ps(f.z.as_ptr().add(k)),
                        _mm256_loadu_ps(q.as_ptr().add(k)),
                    )
                };
                let (dx, dy, dz) = (_mm256_sub_ps(px, sx), _mm256_sub_ps(py, sy), _mm256_sub_ps(pz, sz));
                let r2 = _mm256_max_ps(
                    _mm256_fmadd_ps(dx, dx, _mm256_fmadd_ps(dy, dy, _mm256_mul_ps(dz, dz))),
                    a2,
                );
                // NaN where q = 0 (left out, or padding), which `min` passes over
                let uncharged = _mm256_cmp_ps::<_CMP_EQ_OQ>(sq, _mm256_setzero_ps());
                closest = _mm256_min_ps(_mm256_or_ps(r2, uncharged), closest);
                let y = _mm256_rsqrt_ps(r2);
                let t = _mm256_fnmadd_ps(_mm256_mul_ps(_mm256_mul_ps(r2, half), y), y, three_halves);
                let y = _mm256_mul_ps(y, t);
                let valid = _mm256_cmp_ps::<_CMP_GE_OQ>(r2, tiny);
                let inv_r3 = _mm256_and_ps(valid, _mm256_mul_ps(y, _mm256_mul_ps(y, y)));
                let w = _mm256_mul_ps(sq, inv_r3);
                acc[3 * h] = _mm256_fmadd_ps(dx, w, acc[3 * h]);
                acc[3 * h + 1] = _mm256_fmadd_ps(dy, w, acc[3 * h + 1]);
                acc[3 * h + 2] = _mm256_fmadd_ps(dz, w, acc[3 * h + 2]);
            }
            j += 16;
        }
        let mut lanes = [0.0f32; 8];
        let mut sum = |a: __m256, b: __m256| {
            // SAFETY: `lanes` holds 8 floats.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), _mm256_add_ps(a, b)) };
            lanes.iter().sum::<f32>()
        };
        let e = [sum(acc[0], acc[3]), sum(acc[1], acc[4]), sum(acc[2], acc[5])];
        // SAFETY: `lanes` holds 8 floats.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), closest) };
        (e, lanes.iter().fold(f32::INFINITY, |a, &b| a.min(b)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn avx2_and_portable_sums_agree_and_skip_uncharged_sources_for_the_closest() {
        let mut s = 5u64;
        let mut rnd = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as Real / (1u64 << 53) as Real
        };
        let mut frame = Frame32::default();
        let c: [Vec<Real>; 3] = std::array::from_fn(|_| (0..1000).map(|_| 2.0 * rnd() - 1.0).collect());
        frame.load([&c[0], &c[1], &c[2]], Vec3::zeros(), 0.5);
        frame.pad();
        assert_eq!((frame.x.len(), frame.x[7]), (1008, (c[0][7] * 0.5) as f32));
        let x = &c[0];
        let mut q: Vec<f32> =
            (0..frame.x.len()).map(|k| if k < x.len() { rnd() as f32 - 0.5 } else { 0.0 }).collect();
        let p = [0.25f32, 0.0, 0.0];
        // a source on the target, uncharged (left out): masked, not infinite, not the closest
        (frame.x[3], frame.y[3], frame.z[3], q[3]) = (0.25, 0.0, 0.0, 0.0);
        // a charged one 1e-3 away: the closest
        (frame.x[9], frame.y[9], frame.z[9]) = (0.25, 1e-3, 0.0);
        let ((fast, r2_fast), (slow, r2_slow)) = (frame.sum(p, 0.0, &q), frame.sum_portable(p, 0.0, &q));
        assert!((r2_fast - 1e-6).abs() < 1e-9 && r2_fast == r2_slow, "{r2_fast} {r2_slow}");
        let scale: f32 = (0..q.len())
            .filter(|&k| k != 3)
            .map(|k| {
                let d = [p[0] - frame.x[k], p[1] - frame.y[k], p[2] - frame.z[k]];
                q[k].abs() / (d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
            })
            .sum();
        for c in 0..3 {
            assert!(fast[c].is_finite() && (fast[c] - slow[c]).abs() < 1e-5 * scale, "{fast:?} vs {slow:?}");
        }
    }
}
