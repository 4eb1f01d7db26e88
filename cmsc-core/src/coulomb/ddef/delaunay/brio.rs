//! The insertion order: BRIO (biased randomized insertion order, Amenta–Choi–Rote), each round
//! sorted along a Morton curve ([`super::super::morton`]) so that each point's walk starts near
//! it. Random rounds keep the expected cost `O(n log n)` whatever the input order; the Morton
//! order within a round keeps the walks short.
//!
//! A hash of each point's coordinates (so exact duplicates agree) puts it in the last round
//! with probability 1/2, the one before with 1/4, …, the first (≤ ~256 points) with the rest.
//! The sort key is round (4 bits) | Morton code (3 × 20 bits); ties by input index, so the order
//! is deterministic and independent of the input order.

use super::super::morton::spread21;
use crate::math::Vec3;

/// splitmix64 finalizer (hash mixing).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The insertion order of `points` (the 8 corners of the box `[lo, hi]` first, then points in
/// it): internal id → input index, the corners first and in place.
pub(super) fn insertion_order(points: &[Vec3], lo: Vec3, hi: Vec3) -> Vec<u32> {
    let n = points.len();
    let rounds = (1..16).find(|&r| (n - 8) >> r <= 256).unwrap_or(15) as u32 + 1;
    let ext = hi - lo;
    let mut order: Vec<(u64, u32)> = (8..n as u32)
        .map(|i| {
            let p = &points[i as usize];
            let h = p.iter().fold(0, |h, x| mix(h ^ (x + 0.0).to_bits()));
            let round = (rounds - 1).saturating_sub(h.trailing_zeros()) as u64;
            let q = |a: usize| spread21(((p[a] - lo[a]) / ext[a] * 1_048_575.0) as u64);
            (round << 60 | q(0) | q(1) << 1 | q(2) << 2, i)
        })
        .collect();
    order.sort_unstable();
    (0..8).chain(order.iter().map(|o| o.1)).collect()
}
