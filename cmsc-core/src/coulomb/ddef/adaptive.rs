//! The adaptive grid size of [`super::Ddef::adaptive`], the "adaptive m" the paper suggests
//! (§4.2.4, Fig. 7: "we capped m at 1000, but can achieve better results with adaptive m"),
//! and the bounds on `m`.
//!
//! The cost of a call is the far-field gather, `(m + 8) n` pair terms, plus the near field,
//! `Σ_τ (n_τ + 4) |C_τ|` (charges in `τ` and the 4 grid corrections, each over `C_τ`); with
//! charges on a surface the near term falls like `m^(−2/3)`, in a volume like `m^(−1)`. After
//! each call both are counted and the next `m` is `m (near / (c gather))^0.6`, the balance
//! point between those laws, with `c` = [`GATHER_TERM_COST`] the cost of a gather term relative
//! to a near one, on the levels `100 · 2^(k/2)` from [`ADAPTIVE_MIN_GRID_POINTS`] up to half
//! the charges (and [`MAX_GRID_POINTS`]); it moves only when that is at least two levels (2×)
//! away, so the Delaunay grid is rebuilt rarely. The first call starts at `5 n^0.6` (about
//! 1,000 at n = 10K, 5,000 at 100K). The choice depends on counts, not clocks: runs repeat
//! exactly.

use crate::math::Real;

/// Largest accepted DDEF grid size `m`: the far-field gather costs `O(m n)`, and beyond 10⁷
/// points the grid alone needs gigabytes.
pub const MAX_GRID_POINTS: u32 = 10_000_000;

/// Smallest grid of the adaptive solver: the paper's error has converged from `m ≈ 100` (Fig. 3).
pub const ADAPTIVE_MIN_GRID_POINTS: u32 = 100;

/// Cost of a far-field gather pair term relative to a near-field one, by which the adaptive
/// solver weighs its counts. The gather runs eight `f32` pairs per instruction
/// ([`super::gather`]), the near field four `f64` pairs. On the falling cloth of
/// `examples/bake_profile.rs --scene falling` (100K vertices after 125 steps;
/// `examples/ddef_bench.rs --points`, m = 6.4K–18K, 2 threads, AVX2 AMD EPYC) a gather pair cost
/// 0.23 ns, and the near field 0.40 ns per pair plus 0.8 µs per charge (fitted; gathering each
/// tet's near set): at the margin, where the grid size is decided, about half. The rule then
/// settles at the fastest m measured there (6.4K: 0.40 s per evaluation, against 0.43 s at 9K
/// and 0.48 s at 12.8K), and on the hanging cloth of the bake benchmark (100K vertices after
/// 250 steps, 2-core Intel Xeon) at m = 4,525, again the fastest of those measured: 0.376 s,
/// against 0.380 s at 3,200 and 0.395 s at 6,400.
const GATHER_TERM_COST: Real = 0.5;

/// The adaptive solver's first grid size for `n` charges: `5 n^0.6` on the levels.
pub(super) fn first_grid(n: usize) -> u32 {
    grid_at_level(level_for(5.0 * (n as Real).powf(0.6), n))
}

/// The grid size after a call with grid size `m` on `n` charges that cost `gather` and `near`
/// pair terms: `m` itself unless the balance point is at least two levels away.
pub(super) fn next_grid(m: u32, n: usize, gather: f64, near: f64) -> u32 {
    let want = level_for(m as f64 * (near / (GATHER_TERM_COST * gather)).powf(0.6), n);
    if (want - level_for(m as f64, n)).abs() >= 2 {
        grid_at_level(want)
    } else {
        m
    }
}

/// The adaptive grid level (`m = 100 · 2^(k/2)`) nearest to `m`, within
/// `[100, max(100, n/2)]` for `n` charges.
fn level_for(m: Real, n: usize) -> i32 {
    let level = |m: Real| 2.0 * (m / ADAPTIVE_MIN_GRID_POINTS as Real).log2();
    let cap =
        level((n as Real / 2.0).clamp(ADAPTIVE_MIN_GRID_POINTS as Real, MAX_GRID_POINTS as Real)).floor();
    level(m).round().clamp(0.0, cap) as i32
}

/// The grid size of adaptive level `k`.
fn grid_at_level(k: i32) -> u32 {
    (ADAPTIVE_MIN_GRID_POINTS as Real * (k as Real / 2.0).exp2()).round() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_sizes_are_on_the_levels_and_move_by_two_or_more() {
        assert_eq!((0..6).map(grid_at_level).collect::<Vec<_>>(), [100, 141, 200, 283, 400, 566]);
        // 5 n^0.6: ~1,000 at n = 10K, ~5,000 at 100K, at least 100, at most n/2
        assert_eq!([first_grid(10), first_grid(10_000), first_grid(100_000)], [100, 1131, 4525]);
        // 5 n^0.6 = 315 at n = 1000: the nearest level is 283
        assert_eq!(first_grid(1000), 283);
        // balanced (near = c gather): stays; one level off: stays; two levels off: moves
        assert_eq!(next_grid(1131, 100_000, 1e9, 0.5e9), 1131);
        assert_eq!(next_grid(1131, 100_000, 1e9, 0.5e9 * 2f64.powf(0.5 / 0.6)), 1131);
        assert_eq!(next_grid(1131, 100_000, 1e9, 0.5e9 * 2f64.powf(1.0 / 0.6)), 2263);
        assert_eq!(next_grid(1131, 100_000, 1e9, 0.5e9 / 2f64.powf(1.0 / 0.6)), 566);
        // never above half the charges
        assert_eq!(next_grid(400, 1000, 1.0, 1e9), 400);
    }
}
