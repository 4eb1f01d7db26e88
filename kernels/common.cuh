// Shared by every kernel in this directory: the launch constants and the Coulomb pair term,
// [Paper] Eq. (8)/(9), with charges spread over balls of radius a (cmsc-core/src/coulomb/mod.rs,
// Eq. (C1): 1/r^3 becomes 1/max(r, a)^3). Each .cu includes it as `#include "common.cuh"`; the library
// embeds this file and substitutes it for that line before NVRTC compiles a kernel
// (cmsc-core/src/coulomb/gpu/device.rs, `HEADERS`), so no include path is needed at run time.

#ifndef CMSC_KERNELS_COMMON_CUH
#define CMSC_KERNELS_COMMON_CUH

// Threads per block and sources per shared-memory tile (the host's TILE must match).
#define TILE 256
// Sources summed in f32 before the partial sum is added to the f64 accumulator.
#define CHUNK 32
// max(r^2, a^2) (in units of the frame scale squared) below which a pair is skipped instead of
// overflowing f32: only coincident points with a < 1e-12 of the frame scale reach it.
#define R2_MIN 1e-24f

// One Coulomb term q_s (t - s) / max(|t - s|^2, a^2)^{3/2} of target t and source s
// (s_hi.w = q_s), accumulated into acc when `keep`; branch-free (selects).
__device__ __forceinline__ void coulomb_term(float4 t_hi, float4 t_lo, float4 s_hi, float4 s_lo,
                                             float a2, bool keep, float3 &acc)
{
    // (t_hi - s_hi) is exact or correctly rounded, (t_lo - s_lo) is ~2^-24 of it: the
    // difference keeps its relative accuracy however far the pair is from the frame centre.
    float dx = (t_hi.x - s_hi.x) + (t_lo.x - s_lo.x);
    float dy = (t_hi.y - s_hi.y) + (t_lo.y - s_lo.y);
    float dz = (t_hi.z - s_hi.z) + (t_lo.z - s_lo.z);
    float r2 = fmaxf(fmaf(dx, dx, fmaf(dy, dy, dz * dz)), a2);
    float inv_r = rsqrtf(r2);
    float w = (keep && r2 > R2_MIN) ? s_hi.w * (inv_r * inv_r * inv_r) : 0.0f; // q_s / max(r, a)^3
    acc.x = fmaf(dx, w, acc.x);
    acc.y = fmaf(dy, w, acc.y);
    acc.z = fmaf(dz, w, acc.z);
}

#endif // CMSC_KERNELS_COMMON_CUH
