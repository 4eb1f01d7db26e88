//! Morton (Z-order) codes: the bits of a point's three quantized coordinates interleaved, so
//! that points close in space are mostly close in code order. DDEF sorts by them three times:
//! the Delaunay insertion order (BRIO rounds, Alg. 1, line 2), the order in which charges walk
//! to their tets (line 3), and the grid's blocks for the far-field gather (line 4).

use crate::math::{Real, Vec3};

/// Bits per axis: 3 × 21 = 63 bits of a `u64`.
pub(super) const BITS: u32 = 21;

/// Spreads the low 21 bits of `x` to every third bit (bit `k` to bit `3k`).
#[inline]
pub(super) fn spread21(x: u64) -> u64 {
    let mut x = x & 0x1f_ffff;
    x = (x | x << 32) & 0x001f_0000_0000_ffff;
    x = (x | x << 16) & 0x001f_0000_ff00_00ff;
    x = (x | x << 8) & 0x100f_00f0_0f00_f00f;
    x = (x | x << 4) & 0x10c3_0c30_c30c_30c3;
    (x | x << 2) & 0x1249_2492_4924_9249
}

/// 3 × 21-bit Morton code of a point in the unit cube (coordinates clamped to `[0, 1]`; `x` in
/// the lowest bit of each triple).
#[inline]
pub(super) fn morton(u: Vec3) -> u64 {
    let quantize = |v: Real| spread21((v.clamp(0.0, 1.0) * ((1 << BITS) - 1) as Real) as u64);
    quantize(u.x) | (quantize(u.y) << 1) | (quantize(u.z) << 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn morton_orders_by_interleaved_bits() {
        assert!(morton(Vec3::new(0.1, 0.1, 0.1)) < morton(Vec3::new(0.9, 0.9, 0.9)));
        assert_eq!(morton(Vec3::zeros()), 0);
        assert_eq!(spread21(0b1011), 0b1_000_001_001);
        assert_eq!(morton(Vec3::repeat(1.0)), (1 << 63) - 1);
        assert_eq!(morton(Vec3::x()) | morton(Vec3::y()) | morton(Vec3::z()), (1 << 63) - 1);
    }
}
