//! The kernels' arithmetic replayed on the CPU, operation for operation in f32 and f64 (tests
//! only): checks the error bound stated in [`super`] and the `M_j` walk of `ddef_far.cu` on
//! machines without a GPU. `rsqrtf` is modelled by `1 / sqrt` in f32 (the hardware's is
//! within 2 ulp, which the bound allows for).

use super::device::{plan_slices, Frame, TILE};
use crate::math::{Real, Vec3};

const CHUNK: usize = 32;
const R2_MIN: f32 = 1e-24;
const ZERO: [f32; 4] = [0.0; 4];

/// `coulomb_term` of the kernels.
fn term(t: (&[f32], &[f32]), s: (&[f32], &[f32]), a2: f32, keep: bool, acc: &mut [f32; 3]) {
    let d: [f32; 3] = std::array::from_fn(|c| (t.0[c] - s.0[c]) + (t.1[c] - s.1[c]));
    let r2 = d[0].mul_add(d[0], d[1].mul_add(d[1], d[2] * d[2])).max(a2);
    let inv_r = 1.0 / r2.sqrt();
    let w = if keep && r2 > R2_MIN { s.0[3] * (inv_r * inv_r * inv_r) } else { 0.0 };
    for c in 0..3 {
        acc[c] = d[c].mul_add(w, acc[c]);
    }
}

/// `ddef_far_field` (or `direct_field` with `near = None`) followed by `sum_slices`, with the
/// slices the host plans for `multiprocessors` SMs: the field per target in the frame's units.
pub fn gather(
    targets: (&[f32], &[f32]),
    sources: (&[f32], &[f32]),
    a2: f32,
    near: Option<(&[u32], &[u32])>,
    multiprocessors: u32,
) -> Vec<[f64; 3]> {
    let (m, n) = (targets.0.len() / 4, sources.0.len() / 4);
    let tile = TILE as usize;
    let (slices, slice) = plan_slices(m.div_ceil(tile) as u32, n, multiprocessors);
    let mut out = vec![[0.0; 3]; m];
    for y in 0..slices as usize {
        let (begin, end) = (y * slice as usize, n.min((y + 1) * slice as usize));
        for (j, o) in out.iter_mut().enumerate() {
            let t = (&targets.0[4 * j..4 * j + 4], &targets.1[4 * j..4 * j + 4]);
            let list = near.map_or(&[][..], |(start, near)| &near[start[j] as usize..start[j + 1] as usize]);
            let mut p = list.partition_point(|&i| (i as usize) < begin);
            let mut next = list.get(p).copied().unwrap_or(u32::MAX);
            let mut e = [0.0f64; 3];
            for base in (begin..end).step_by(tile) {
                for c in (0..tile).step_by(CHUNK) {
                    let (first, mut skip) = ((base + c) as u32, 0u32);
                    while next < first + CHUNK as u32 {
                        skip |= 1 << (next - first);
                        p += 1;
                        next = list.get(p).copied().unwrap_or(u32::MAX);
                    }
                    let mut acc = [0.0f32; 3];
                    for k in 0..CHUNK {
                        let i = base + c + k;
                        let s = if i < end {
                            (&sources.0[4 * i..4 * i + 4], &sources.1[4 * i..4 * i + 4])
                        } else {
                            (&ZERO[..], &ZERO[..])
                        };
                        term(t, s, a2, (skip >> k) & 1 == 0, &mut acc);
                    }
                    for k in 0..3 {
                        e[k] += acc[k] as f64;
                    }
                }
            }
            for k in 0..3 {
                o[k] += e[k];
            }
        }
    }
    out
}

/// Packs `x` with charges `q / max|q|` in `frame`; `lo_parts = false` zeroes the low parts
/// (plain f32 positions).
pub fn pack(x: &[Vec3], q: &[Real], frame: &Frame, lo_parts: bool) -> (Vec<f32>, Vec<f32>) {
    let q_max = q.iter().map(|v| v.abs()).fold(0.0, Real::max).max(Real::MIN_POSITIVE);
    let (mut hi, mut lo) = (vec![], vec![]);
    frame.pack(x.iter().zip(q).map(|(p, qi)| (*p, (qi / q_max) as f32)), &mut hi, &mut lo);
    if !lo_parts {
        lo.fill(0.0);
    }
    (hi, lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    const U: Real = 1.0 / (1u64 << 24) as Real;
    /// The worst-case bound of [`super::super`]'s docs: `|Δe_i| ≤ 61 u Σ_j |term_ij|`.
    const BOUND: Real = 61.0;

    fn rng(seed: u64) -> impl FnMut() -> Real {
        let mut s = seed;
        move || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as Real / (1u64 << 53) as Real
        }
    }

    /// Exact field per unit `k_c` at `p` from the sources not `excluded`, and `S = Σ |term|`.
    fn exact(p: Vec3, x: &[Vec3], q: &[Real], a2: Real, excluded: impl Fn(usize) -> bool) -> (Vec3, Real) {
        let (mut e, mut s) = (Vec3::zeros(), 0.0);
        for (i, (xi, qi)) in x.iter().zip(q).enumerate() {
            let r = p - xi;
            let r2 = r.norm_squared().max(a2);
            if excluded(i) || r2 == 0.0 {
                continue;
            }
            let t = r * (qi / (r2 * r2.sqrt()));
            e += t;
            s += t.norm();
        }
        (e, s)
    }

    /// 1000 charges in the unit cube and 1000 in a cluster 10⁻⁴ across, mixed signs: pair
    /// distances from 10⁻⁶ to 1 of the box.
    fn two_scales() -> (Vec<Vec3>, Vec<Real>) {
        let mut r = rng(3);
        let mut x: Vec<Vec3> = (0..1000).map(|_| Vec3::new(r(), r(), r()) + Vec3::repeat(500.0)).collect();
        let c = Vec3::repeat(500.3);
        x.extend((0..1000).map(|_| c + 1e-4 * Vec3::new(r(), r(), r())));
        let q = (0..x.len()).map(|_| (r() - 0.3) * 1e-6).collect();
        (x, q)
    }

    #[test]
    fn direct_kernel_arithmetic_is_within_the_stated_bound() {
        let (x, q) = two_scales();
        let a = 1e-8;
        let frame = Frame::around(x.iter());
        let q_max = q.iter().map(|v| v.abs()).fold(0.0, Real::max);
        let a2 = ((a / frame.scale) * (a / frame.scale)) as f32;
        let unit = q_max / (frame.scale * frame.scale);
        let relative_l2 = |lo_parts: bool| {
            let (hi, lo) = pack(&x, &q, &frame, lo_parts);
            let got = gather((&hi, &lo), (&hi, &lo), a2, None, 132);
            let (mut err2, mut norm2) = (0.0, 0.0);
            for (i, g) in got.iter().enumerate() {
                let (e, s) = exact(x[i], &x, &q, a * a, |j| j == i);
                let d = (Vec3::from(*g) * unit - e).norm();
                if lo_parts {
                    assert!(d <= BOUND * U * s, "target {i}: error {d:e} > 61 u S = {:e}", BOUND * U * s);
                }
                err2 += d * d;
                norm2 += e.norm_squared();
            }
            (err2 / norm2).sqrt()
        };
        let mixed = relative_l2(true);
        let plain = relative_l2(false);
        eprintln!("relative L2 error of the kernel arithmetic: {mixed:.2e} (hi/lo), {plain:.2e} (plain f32)");
        assert!(mixed < 1e-6, "hi/lo positions: relative L2 error {mixed:e}");
        // without the lo parts, x_i − x_j in f32 loses u L / r: what the split is for
        assert!(plain > 30.0 * mixed && plain > 1e-5, "plain f32 positions: {plain:e} (hi/lo {mixed:e})");
    }

    #[test]
    fn far_field_kernel_leaves_out_exactly_m_j() {
        let mut r = rng(11);
        let n = 1700; // 7 tiles, the last one partial
        let x: Vec<Vec3> = (0..n).map(|_| Vec3::new(r(), r(), 0.1 * r())).collect();
        let q: Vec<Real> = (0..n).map(|_| (r() - 0.2) * 1e-6).collect();
        let mut grid: Vec<Vec3> = (0..300).map(|_| Vec3::new(r(), r(), 0.1 * r())).collect();
        // grid point 0 sits 10⁻⁹ from charge 5: counting it would swamp everything else
        grid[0] = x[5] + Vec3::new(1e-9, 0.0, 0.0);
        // M_j: scattered charges, plus runs across chunk, tile and slice boundaries
        let mut near_start = vec![0u32];
        let mut near = vec![];
        for j in 0..grid.len() {
            near.extend((0..n as u32).filter(|&i| {
                (i as usize * 7 + j * 13).is_multiple_of(10)
                    || (j.is_multiple_of(3) && (250..530).contains(&i))
                    || i == 5
            }));
            near_start.push(near.len() as u32);
        }
        let frame = Frame::around(grid.iter().chain(&x));
        let q_max = q.iter().map(|v| v.abs()).fold(0.0, Real::max);
        let a = 0.0;
        let (g_hi, g_lo) = pack(&grid, &vec![0.0; grid.len()], &frame, true);
        let (hi, lo) = pack(&x, &q, &frame, true);
        let unit = q_max / (frame.scale * frame.scale);
        for sms in [1, 132] {
            let got = gather((&g_hi, &g_lo), (&hi, &lo), 0.0, Some((&near_start, &near)), sms);
            for (j, g) in got.iter().enumerate() {
                let list = &near[near_start[j] as usize..near_start[j + 1] as usize];
                let (e, s) = exact(grid[j], &x, &q, a, |i| list.binary_search(&(i as u32)).is_ok());
                let d = (Vec3::from(*g) * unit - e).norm();
                assert!(d <= BOUND * U * s, "{sms} SMs, grid point {j}: error {d:e}, S = {s:e}");
            }
        }
    }
}
