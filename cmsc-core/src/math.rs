//! Scalar and vector aliases used throughout the solver.
//!
//! All state is `f64` ([`Real`]) in SI units; 3-vectors are `nalgebra` fixed-size vectors, which
//! are plain `[f64; 3]` in memory, so a `&[Vec3]` is also a packed `xyz xyz …` array.

/// The scalar type of every physical quantity in the solver.
pub type Real = f64;

/// A 3-vector of [`Real`] (position in m, velocity in m/s, force in N, field in V/m).
pub type Vec3 = nalgebra::Vector3<Real>;

/// A 3 × 3 matrix of [`Real`] (a spring's stiffness block in N/m).
pub type Mat3 = nalgebra::Matrix3<Real>;

/// True when all three components are finite (neither NaN nor ±∞).
#[inline]
pub fn is_finite3(v: &Vec3) -> bool {
    v.x.is_finite() && v.y.is_finite() && v.z.is_finite()
}

/// `Σ f(i)` over `i` in `0..n`, in parallel and with the same bits on any number of threads:
/// the terms are added in order within fixed blocks of [`SUM_BLOCK`], and the blocks' sums in
/// order. A rayon `sum` groups the terms as its work stealing splits them, so two runs of one
/// state could differ in the last bit; the low-dissipation safeguard scales the velocities by
/// such sums, and two runs of one sphere drifted 2e-9 m apart over 45 calls.
pub(crate) fn ordered_sum(n: usize, f: impl Fn(usize) -> Real + Sync) -> Real {
    ordered_blocks(n, SUM_BLOCK, |block| block.map(&f).sum::<Real>()).iter().sum()
}

/// `part` of each block of `block` consecutive indices in `0..n` (the last one shorter), in
/// parallel, in order: for sums that must not depend on the number of threads, each block's
/// part is added up in its own order and the parts then in theirs (see [`ordered_sum`]).
pub(crate) fn ordered_blocks<T: Send>(
    n: usize,
    block: usize,
    part: impl Fn(std::ops::Range<usize>) -> T + Sync,
) -> Vec<T> {
    use rayon::prelude::*;
    (0..n.div_ceil(block)).into_par_iter().map(|b| part(b * block..((b + 1) * block).min(n))).collect()
}

/// The terms [`ordered_sum`] adds in one block.
pub(crate) const SUM_BLOCK: usize = 256;

/// Runs `op` on a thread of rayon's pool, and waits for it. A step starts dozens of parallel
/// loops (the field, the springs, each detection of the contacts); started from a thread outside
/// the pool (the caller's: Blender's, a C program's), each one hands its work to the pool and
/// sleeps until it is done, a futex wake and wait per loop, where from inside the pool it only
/// queues its halves. On the ±40 µC crumple of `examples/crumple_cost.rs` (2 threads) the
/// handovers were 14 % of the run's samples, and running the steps inside the pool took 8 % off
/// its time (13 % with the sphere alone). The work is the same, and the crumple's runs end in the
/// same state as before it, to the bit: the step's sums that must not depend on how rayon splits
/// them are [`ordered_sum`]s, from any thread.
pub(crate) fn on_pool<R: Send>(op: impl FnOnce() -> R + Send) -> R {
    rayon::scope(|_| op())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_sums_have_the_same_bits_on_any_number_of_threads() {
        let term = |i: usize| ((i as Real) * 0.618_033_988_7).sin() * 10f64.powi((i % 17) as i32 - 8);
        let sum_on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| ordered_sum(100_003, term))
        };
        let one = sum_on(1);
        for threads in [2, 3, 4, 7] {
            assert_eq!(sum_on(threads).to_bits(), one.to_bits(), "{threads} threads");
        }
        let serial: Real = (0..100_003).map(term).sum();
        assert!((one - serial).abs() <= 1e-12 * serial.abs().max(1.0), "{one} vs {serial}");
    }
}
