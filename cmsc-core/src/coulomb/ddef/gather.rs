//! Alg. 1, line 4 on the CPU: the far field on the grid, [Paper](crate#references) Eq. (9),
//! `ê(u_j) = Σ_{i ∉ M_j} q_i (u_j − x_i) / max(|u_j − x_i|, a)³` (Eq. (C1) of [`crate::coulomb`]), in mixed precision.
//!
//! The gather is `(m + 8) n` pair terms of arithmetic, so it runs in `f32`, eight pairs per AVX2
//! instruction instead of four, with every sum carried on in `f64`:
//!
//! - grid points go in blocks of at most [`BLOCK`] neighbours, the cells of an octree over them
//!   ([`Blocks`]), and each block has its own origin `o`, the centre of its points. Positions
//!   enter `f32` as `(x − o) / S` (`S` the grid box's largest edge), subtracted in `f64`, so a
//!   source's rounding is relative to its distance from the block, not to the size of the
//!   scene: two meshes a kilometre apart lose nothing;
//! - charges enter as `q / max|q|`;
//! - `M_j` is left out by zeroing its charges while the block's point `j` sums a chunk, not by
//!   summing everything and subtracting the near terms as the `f64` direct kernel could: a
//!   charge next to a grid point has a term far larger than the whole far field, and its `f32`
//!   rounding would survive the subtraction;
//! - each grid point sums a chunk of [`CHUNK`] sources in `f32`, then adds that to `f64`.
//!
//! Error (see the `f32` kernel, [`crate::coulomb::kernel`]): every `f32` term is within about
//! `10⁻⁶ + 3u (1 + 2b/r)` of itself for a block of half-width `b`; a grid point that met a
//! charge closer than [`GUARD`] of its block's width (which Delaunay slivers allow: `M_j`
//! covers the tets around `u_j`, and a sliver among them lets a charge outside come close) is
//! summed again in `f64`.
//! So the gather is accurate to ~10⁻⁵ of `Σ_i |term_i|`, three orders below DDEF's own
//! approximation error (~10⁻², `tests/ddef.rs`); a test below checks it against the `f64` sum
//! on a scene with a 1 mm cluster 1 km from a metre-wide cloud.

use rayon::prelude::*;

use super::super::kernel::{field_sum, inv_r3, local, Frame32, Soa, GUARD};
use super::blocks::Blocks;
#[cfg(doc)]
use super::blocks::BLOCK;
use crate::math::{Real, Vec3};

/// Sources per chunk: converted to `f32` once per block and summed in `f32` by each of its
/// points (16 KB, held in L1), a multiple of the kernel's 16 pairs per iteration.
const CHUNK: usize = 1024;

/// Writes `ê(u_j) / k_c` for every grid point `j` into `out`; returns how many points were
/// summed again in `f64` (the guard of the module docs).
///
/// # Arguments
/// * `blocks` — the grid points in blocks of neighbours (the grid's [`Blocks`]);
/// * `world` — grid points (m, world frame); `extent` — the largest edge of their box (m);
/// * `sources` — the charges (m, C), padded with zero charges; `a2` — the charge radius squared `a²` (m²);
/// * `near_start`, `near` — `M_j` as CSR (offsets and items of the location's inverse lists):
///   indices into `sources`, ascending within each `j`.
pub(super) fn far_field(
    blocks: &Blocks,
    world: &[Vec3],
    extent: Real,
    sources: &Soa,
    a2: Real,
    (near_start, near): (&[u32], &[u32]),
    out: &mut [Vec3],
) -> usize {
    debug_assert!(blocks.point_count() == world.len() && out.len() == world.len());
    debug_assert!(near_start.len() == world.len() + 1);
    let q_max = sources.q.iter().fold(0.0, |a: Real, b| a.max(b.abs()));
    if q_max == 0.0 || !q_max.is_finite() {
        out.fill(Vec3::zeros());
        return 0;
    }
    let inv_s = 1.0 / extent;
    let qn: Vec<f32> = sources.q.iter().map(|&q| (q / q_max) as f32).collect();
    let a2n = (a2 * inv_s * inv_s) as f32;
    let unscale = q_max * inv_s * inv_s;
    // per point: its field, or None where the guard sends it to f64
    let fields: Vec<Vec<(u32, Option<Vec3>)>> = blocks
        .iter()
        .map_init(
            || (Frame32::default(), Vec::new()),
            |(frame, q), block| {
                let (lo, hi) =
                    block.iter().map(|&j| world[j as usize]).fold(
                        (Vec3::repeat(Real::INFINITY), Vec3::repeat(Real::NEG_INFINITY)),
                        |(lo, hi), p| (lo.inf(&p), hi.sup(&p)),
                    );
                let o = (lo + hi) * 0.5;
                let guard2 = ((hi - lo).max() * inv_s * GUARD).powi(2) as f32;
                let targets: Vec<[f32; 3]> =
                    block.iter().map(|&j| local(world[j as usize], o, inv_s)).collect();
                let mut acc = vec![Vec3::zeros(); block.len()];
                let mut closest = vec![f32::INFINITY; block.len()];
                let mut cursor: Vec<usize> = block.iter().map(|&j| near_start[j as usize] as usize).collect();
                for start in (0..qn.len()).step_by(CHUNK) {
                    let end = (start + CHUNK).min(qn.len());
                    frame.load(
                        [&sources.x[start..end], &sources.y[start..end], &sources.z[start..end]],
                        o,
                        inv_s,
                    );
                    frame.pad();
                    q.clear();
                    q.extend_from_slice(&qn[start..end]);
                    q.resize(frame.x.len(), 0.0);
                    for (t, &j) in block.iter().enumerate() {
                        // M_j ∩ this chunk: zero those charges while j sums, then put them back
                        let near_end = near_start[j as usize + 1] as usize;
                        let first = cursor[t];
                        let mut c = first;
                        while c < near_end && (near[c] as usize) < end {
                            q[near[c] as usize - start] = 0.0;
                            c += 1;
                        }
                        let (e, r2) = frame.sum(targets[t], a2n, q);
                        for &i in &near[first..c] {
                            q[i as usize - start] = qn[i as usize];
                        }
                        cursor[t] = c;
                        acc[t] += Vec3::new(e[0] as Real, e[1] as Real, e[2] as Real);
                        closest[t] = closest[t].min(r2);
                    }
                }
                block
                    .iter()
                    .zip(acc)
                    .zip(closest)
                    .map(|((&j, e), r2)| (j, (r2 >= guard2).then_some(e * unscale)))
                    .collect()
            },
        )
        .collect();
    let mut again = vec![];
    for (j, e) in fields.into_iter().flatten() {
        match e {
            Some(e) => out[j as usize] = e,
            None => again.push(j),
        }
    }
    // the whole sum minus M_j in f64, where the subtraction cancels to round-off
    let exact: Vec<Vec3> = again
        .par_iter()
        .map(|&j| {
            let u = world[j as usize];
            let m_j = &near[near_start[j as usize] as usize..near_start[j as usize + 1] as usize];
            m_j.iter().fold(field_sum(u, a2, sources), |e, &i| {
                let i = i as usize;
                let r = u - Vec3::new(sources.x[i], sources.y[i], sources.z[i]);
                e - r * (sources.q[i] * inv_r3(r.norm_squared(), a2))
            })
        })
        .collect();
    for (&j, e) in again.iter().zip(exact) {
        out[j as usize] = e;
    }
    again.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> Real {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 11) as Real / (1u64 << 53) as Real
        }

        fn in_box(&mut self, lo: Vec3, size: Real) -> Vec3 {
            lo + Vec3::new(self.next(), self.next(), self.next()) * size
        }
    }

    /// The far field in `f64`, term by term, and `Σ_i |term_i|` per point: the reference.
    fn reference(world: &[Vec3], x: &[Vec3], q: &[Real], a2: Real, near: &[Vec<u32>]) -> Vec<(Vec3, Real)> {
        world
            .iter()
            .zip(near)
            .map(|(&u, m_j)| {
                let mut e = Vec3::zeros();
                let mut scale = 0.0;
                for i in (0..x.len()).filter(|i| !m_j.contains(&(*i as u32))) {
                    let r = u - x[i];
                    let t = r * (q[i] / r.norm_squared().max(a2).powf(1.5));
                    e += t;
                    scale += t.norm();
                }
                (e, scale)
            })
            .collect()
    }

    fn csr(near: &[Vec<u32>]) -> (Vec<u32>, Vec<u32>) {
        let mut start = vec![0u32];
        let mut flat = vec![];
        for m_j in near {
            flat.extend_from_slice(m_j);
            start.push(flat.len() as u32);
        }
        (start, flat)
    }

    /// Grid points among a metre-wide cloud and a 1 mm cluster 1 km away, `M_j` = the charges
    /// within a radius of each point, one charge 10 nm from a grid point (in its `M_j`), one
    /// 1 µm from another (outside its `M_j`): every point's field is within 2·10⁻⁶ of `Σ|terms|`
    /// of the `f64` sum. The cluster's points fail this by orders of magnitude without the
    /// blocks' own origins (`f32` spacing at 1 km is 61 µm), the first charge's point if `M_j`
    /// were summed and subtracted in `f32`, the second's without the guard.
    #[test]
    fn matches_the_f64_sum_with_far_apart_scales() {
        let mut rng = Rng(11);
        let far = Vec3::new(1000.0, -300.0, 20.0);
        let mut x: Vec<Vec3> = (0..1500).map(|_| rng.in_box(Vec3::zeros(), 1.0)).collect();
        x.extend((0..300).map(|_| rng.in_box(far, 1e-3)));
        let mut world: Vec<Vec3> = (0..200).map(|_| rng.in_box(Vec3::repeat(-0.1), 1.2)).collect();
        world.extend((0..50).map(|_| rng.in_box(far - Vec3::repeat(1e-4), 1.2e-3)));
        x.push(world[7] + Vec3::new(1e-8, 0.0, 0.0));
        x.push(world[9] + Vec3::new(0.0, 1e-6, 0.0));
        let q: Vec<Real> = (0..x.len()).map(|_| (rng.next() - 0.3) * 1e-6).collect();
        let mut near: Vec<Vec<u32>> = world
            .iter()
            .map(|&u| {
                let radius = if u.x > 500.0 { 2e-4 } else { 0.1 };
                (0..x.len() as u32).filter(|&i| (x[i as usize] - u).norm() < radius).collect()
            })
            .collect();
        let (by_7, by_9) = (x.len() as u32 - 2, x.len() as u32 - 1);
        assert!(near[7].contains(&by_7));
        // a charge 1 µm from point 9 but outside M_9 (as behind a sliver): the guard's case
        near[9].retain(|&i| i != by_9);
        let (start, flat) = csr(&near);
        let lo = world.iter().fold(Vec3::repeat(Real::INFINITY), |a, p| a.inf(p));
        let hi = world.iter().fold(Vec3::repeat(Real::NEG_INFINITY), |a, p| a.sup(p));
        let extent = (hi - lo).max();
        let blocks = Blocks::new(&world.iter().map(|p| (p - lo) / extent).collect::<Vec<_>>());
        let mut sources = Soa::default();
        sources.load(&x, &q);
        for eps in [0.0, 1e-5] {
            let mut out = vec![Vec3::zeros(); world.len()];
            let again = far_field(&blocks, &world, extent, &sources, eps * eps, (&start, &flat), &mut out);
            assert_eq!(again, 1, "points summed again in f64");
            for (j, (e, scale)) in reference(&world, &x, &q, eps * eps, &near).into_iter().enumerate() {
                let err = (out[j] - e).norm() / scale;
                assert!(err < 2e-6, "point {j} (eps {eps}): error {err:e} of Σ|terms|");
            }
        }
    }
}
