// Exact all-pairs Coulomb field, [Paper] Eq. (8) with charges spread over balls of radius a
// (cmsc-core/src/coulomb/mod.rs, Eq. (C1)):
//
//     e_i = sum_{j != i} q_j (x_i - x_j) / max(|x_i - x_j|, a)^3
//
// (the force is f_i = k_c q_i e_i; the host applies k_c q_i and the unit scales). Conventions
// shared with ddef_far.cu (see README.md): one thread per target, TILE sources at a time
// through shared memory, positions as float hi + float lo pairs in the normalised frame
// (|p| <= 1), f32 arithmetic summed in f32 over CHUNK sources and then in f64.
//
// Launch: block (TILE, 1, 1); grid (ceil(n / TILE), slices, 1). Block row y sums the sources
// [y * slice, min(n, (y + 1) * slice)) and writes partial[y][c][i] (c = x, y, z); sum_slices
// adds the rows. The self term j = i is zero by itself (x_i - x_j = 0).

#include "common.cuh" // TILE, CHUNK, R2_MIN and the pair term coulomb_term

// hi[j] = (x, y, z, q) and lo[j] = (x, y, z, 0): the charges in the normalised frame.
extern "C" __global__ void __launch_bounds__(TILE)
direct_field(const float4 *__restrict__ hi, const float4 *__restrict__ lo, int n, int slice,
             float a2, double *__restrict__ partial)
{
    __shared__ float4 s_hi[TILE];
    __shared__ float4 s_lo[TILE];
    int i = blockIdx.x * TILE + threadIdx.x;
    int t = min(i, n - 1); // threads past n compute a copy of the last target and write nothing
    float4 t_hi = hi[t], t_lo = lo[t];
    int begin = blockIdx.y * slice;
    int end = min(n, begin + slice);
    double ex = 0.0, ey = 0.0, ez = 0.0;
    for (int base = begin; base < end; base += TILE) {
        int j = base + threadIdx.x;
        float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f); // q = 0 pads the last tile
        s_hi[threadIdx.x] = j < end ? hi[j] : zero;
        s_lo[threadIdx.x] = j < end ? lo[j] : zero;
        __syncthreads();
        for (int c = 0; c < TILE; c += CHUNK) {
            float3 acc = make_float3(0.0f, 0.0f, 0.0f);
#pragma unroll
            for (int k = 0; k < CHUNK; ++k)
                coulomb_term(t_hi, t_lo, s_hi[c + k], s_lo[c + k], a2, true, acc);
            ex += acc.x;
            ey += acc.y;
            ez += acc.z;
        }
        __syncthreads();
    }
    if (i < n) {
        size_t row = (size_t)blockIdx.y * 3 * n;
        partial[row + i] = ex;
        partial[row + n + i] = ey;
        partial[row + 2 * (size_t)n + i] = ez;
    }
}

// out[k] = sum over the slices y of partial[y * len + k], for k < len (deterministic order).
extern "C" __global__ void sum_slices(const double *__restrict__ partial, int len, int slices,
                                      double *__restrict__ out)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < len) {
        double s = 0.0;
        for (int y = 0; y < slices; ++y)
            s += partial[(size_t)y * len + k];
        out[k] = s;
    }
}
