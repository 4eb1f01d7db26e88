// DDEF far field on the grid, [Paper] §3.1.2, Eq. (9) (Alg. 1, line 4), per unit k_c and with
// charges spread over balls of radius a (cmsc-core/src/coulomb/mod.rs, Eq. (C1)):
//
//     e(u_j) = sum_{i not in M_j} q_i (u_j - x_i) / max(|u_j - x_i|, a)^3
//
// where M_j = {i : u_j in N_i} lists the charges whose near set holds grid point u_j. Those
// charges are left out exactly (never added and subtracted, so no cancellation in f32), and
// without an if in the pair loop: before each CHUNK of sources a thread turns the part of its
// sorted M_j that falls in the chunk into a bit mask (a short loop that runs only at hits);
// the pair loop then selects on one bit per source.
//
// Conventions as in direct.cu (README.md): one thread per grid point, TILE charges at a time
// through shared memory, hi/lo positions in the normalised frame, f32 pair terms summed in
// f32 over CHUNK charges and then in f64.
//
// Launch: block (TILE, 1, 1); grid (ceil(m / TILE), slices, 1). Block row y sums the charges
// [y * slice, min(n, (y + 1) * slice)) and writes partial[y][c][j]; direct.cu's sum_slices
// adds the rows.

#include "common.cuh" // TILE, CHUNK, R2_MIN and the pair term coulomb_term

#define NONE 0xffffffffu // past the last charge of M_j

// First position in the sorted a[lo, hi) whose value is >= key.
__device__ unsigned lower_bound(const unsigned *__restrict__ a, unsigned lo, unsigned hi, unsigned key)
{
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (a[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// g_hi/g_lo: the m grid points u_j; hi/lo: the n charges (x, y, z, q); M_j is
// near[near_start[j] .. near_start[j + 1]), ascending charge indices.
extern "C" __global__ void __launch_bounds__(TILE)
ddef_far_field(const float4 *__restrict__ g_hi, const float4 *__restrict__ g_lo, int m,
               const float4 *__restrict__ hi, const float4 *__restrict__ lo, int n, int slice,
               const unsigned *__restrict__ near_start, const unsigned *__restrict__ near,
               float a2, double *__restrict__ partial)
{
    __shared__ float4 s_hi[TILE];
    __shared__ float4 s_lo[TILE];
    int j = blockIdx.x * TILE + threadIdx.x;
    int u = min(j, m - 1); // threads past m compute a copy of the last point and write nothing
    float4 t_hi = g_hi[u], t_lo = g_lo[u];
    int begin = blockIdx.y * slice;
    int end = min(n, begin + slice);
    unsigned p_end = near_start[u + 1];
    unsigned p = lower_bound(near, near_start[u], p_end, (unsigned)begin);
    unsigned next = p < p_end ? near[p] : NONE; // next charge of M_j to leave out
    double ex = 0.0, ey = 0.0, ez = 0.0;
    for (int base = begin; base < end; base += TILE) {
        int i = base + threadIdx.x;
        float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f); // q = 0 pads the last tile
        s_hi[threadIdx.x] = i < end ? hi[i] : zero;
        s_lo[threadIdx.x] = i < end ? lo[i] : zero;
        __syncthreads();
        for (int c = 0; c < TILE; c += CHUNK) {
            // bit k of `skip`: charge base + c + k is in M_j
            unsigned first = (unsigned)(base + c), skip = 0u;
            while (next < first + CHUNK) {
                skip |= 1u << (next - first);
                next = ++p < p_end ? near[p] : NONE;
            }
            float3 acc = make_float3(0.0f, 0.0f, 0.0f);
#pragma unroll
            for (int k = 0; k < CHUNK; ++k)
                coulomb_term(t_hi, t_lo, s_hi[c + k], s_lo[c + k], a2, ((skip >> k) & 1u) == 0u, acc);
            ex += acc.x;
            ey += acc.y;
            ez += acc.z;
        }
        __syncthreads();
    }
    if (j < m) {
        size_t row = (size_t)blockIdx.y * 3 * m;
        partial[row + j] = ex;
        partial[row + m + j] = ey;
        partial[row + 2 * (size_t)m + j] = ez;
    }
}
