// Reductions over f32: sum, mean, max, argmax of a whole tensor (two deterministic passes: per-block
// partials, then one block over the partials) and of each row of a row-major [rows, cols] matrix.
// NaN is ignored by max/argmax (fmaxf semantics); argmax returns the first index of the maximum, and 0 when
// every element is NaN.
#include "kit.cuh"

namespace {
using namespace prism;

constexpr int U = 4;  // float4 loads in flight per thread

// Applies f(float4) / g(float, index) over this block's grid-stride share of x[0, n).
template <class F4, class F1>
__device__ __forceinline__ void grid_visit(const float *x, unsigned long long n, F4 &f4, F1 &f1) {
    const unsigned long long bs = blockDim.x;
    unsigned long long done = 0;
    if (prism_aligned16(x)) {
        const unsigned long long n4 = n / 4;
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        const unsigned long long stride = (unsigned long long)gridDim.x * bs * U;
        for (unsigned long long i = (unsigned long long)blockIdx.x * bs * U + threadIdx.x; i < n4; i += stride) {
            float4 v[U];
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (i + u * bs < n4) v[u] = __ldcs(x4 + i + u * bs);
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (i + u * bs < n4) f4(v[u], (i + u * bs) * 4);
        }
        done = n4 * 4;
    }
    for (unsigned long long t = done + prism_global_thread(); t < n; t += prism_grid_threads()) f1(x[t], t);
}

struct ArgBest {
    float v;
    unsigned long long i;
};
// true when (v, i) beats (bv, bi): larger value, or equal value at a smaller index; NaN never wins.
__device__ __forceinline__ bool beats(float v, unsigned long long i, float bv, unsigned long long bi) {
    return v > bv || (v == bv && i < bi) || (bv != bv && v == v);
}
__device__ __forceinline__ void arg_update(ArgBest &b, float v, unsigned long long i) {
    if (beats(v, i, b.v, b.i)) { b.v = v; b.i = i; }
}
// Block-wide argmax; result valid in thread 0.
__device__ __forceinline__ ArgBest block_argbest(ArgBest b) {
    __shared__ float sv[32];
    __shared__ unsigned long long si[32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, b.v, o);
        const unsigned long long oi = __shfl_xor_sync(0xffffffffu, b.i, o);
        if (beats(ov, oi, b.v, b.i)) { b.v = ov; b.i = oi; }
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if (lane == 0) { sv[warp] = b.v; si[warp] = b.i; }
    __syncthreads();
    if (warp == 0) {
        b = lane < nw ? ArgBest{sv[lane], si[lane]} : ArgBest{-PRISM_INF, ~0ull};
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float ov = __shfl_xor_sync(0xffffffffu, b.v, o);
            const unsigned long long oi = __shfl_xor_sync(0xffffffffu, b.i, o);
            if (beats(ov, oi, b.v, b.i)) { b.v = ov; b.i = oi; }
        }
    }
    __syncthreads();
    return b;
}

}  // namespace

// partials[blockIdx.x] = sum of this block's grid-stride share of x[0, n) (f32 per float4, f64 per thread and
// across the block). Launch: any grid G >= 1 (recommended min(ceil(n / 4096), 8 * SMs)), block a multiple of
// 32 <= 1024 (256); partials holds G doubles. Then prism_sum_finalize_f32. Deterministic for a fixed G.
PRISM_KERNEL void prism_sum_partial_f32(const float *x, double *partials, unsigned long long n) {
    double acc = 0.0;
    auto f4 = [&](float4 v, unsigned long long) { acc += (double)((v.x + v.y) + (v.z + v.w)); };
    auto f1 = [&](float v, unsigned long long) { acc += (double)v; };
    grid_visit(x, n, f4, f1);
    const double s = block_allreduce_f64(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}
// out[0] = (float)(scale * sum(partials[0, count))) — scale 1 for sum, 1/n for mean. Launch: grid 1,
// block a multiple of 32 <= 1024 (1024). Deterministic (fixed order).
PRISM_KERNEL void prism_sum_finalize_f32(const double *partials, int count, float *out, float scale) {
    double acc = 0.0;
    for (int i = threadIdx.x; i < count; i += blockDim.x) acc += partials[i];
    const double s = block_allreduce_f64(acc);
    if (threadIdx.x == 0) out[0] = (float)(s * (double)scale);
}
// partials[blockIdx.x] = max of this block's share (-inf when empty). Launch: as prism_sum_partial_f32, G floats.
PRISM_KERNEL void prism_max_partial_f32(const float *x, float *partials, unsigned long long n) {
    float m = -PRISM_INF;
    auto f4 = [&](float4 v, unsigned long long) { m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w))); };
    auto f1 = [&](float v, unsigned long long) { m = fmaxf(m, v); };
    grid_visit(x, n, f4, f1);
    m = block_allreduce(m, MaxOp{});
    if (threadIdx.x == 0) partials[blockIdx.x] = m;
}
// out[0] = max(partials[0, count)). Launch: grid 1, block a multiple of 32 <= 1024.
PRISM_KERNEL void prism_max_finalize_f32(const float *partials, int count, float *out) {
    float m = -PRISM_INF;
    for (int i = threadIdx.x; i < count; i += blockDim.x) m = fmaxf(m, partials[i]);
    m = block_allreduce(m, MaxOp{});
    if (threadIdx.x == 0) out[0] = m;
}
// (pval, pidx)[blockIdx.x] = (max, first index of it) over this block's share (-inf, 2^64-1 when empty).
// Launch: as prism_sum_partial_f32; pval G floats, pidx G u64.
PRISM_KERNEL void prism_argmax_partial_f32(const float *x, float *pval, unsigned long long *pidx,
                                           unsigned long long n) {
    // Per float4 component: strict '>' keeps the first occurrence (indices rise within a thread) and never
    // lets NaN in; the components are merged with the full tie-break afterwards.
    float bv[4] = {-PRISM_INF, -PRISM_INF, -PRISM_INF, -PRISM_INF};
    unsigned long long bi[4] = {~0ull, ~0ull, ~0ull, ~0ull};
    ArgBest b{-PRISM_INF, ~0ull};
    auto f4 = [&](float4 v, unsigned long long i) {
        if (v.x > bv[0]) { bv[0] = v.x; bi[0] = i; }
        if (v.y > bv[1]) { bv[1] = v.y; bi[1] = i + 1; }
        if (v.z > bv[2]) { bv[2] = v.z; bi[2] = i + 2; }
        if (v.w > bv[3]) { bv[3] = v.w; bi[3] = i + 3; }
    };
    auto f1 = [&](float v, unsigned long long i) { arg_update(b, v, i); };
    grid_visit(x, n, f4, f1);
#pragma unroll
    for (int k = 0; k < 4; ++k) if (bi[k] != ~0ull) arg_update(b, bv[k], bi[k]);
    b = block_argbest(b);
    if (threadIdx.x == 0) { pval[blockIdx.x] = b.v; pidx[blockIdx.x] = b.i; }
}
// out_idx[0] = argmax over the partials (0 if none), out_val[0] = its value (out_val may be null).
// Launch: grid 1, block a multiple of 32 <= 1024.
PRISM_KERNEL void prism_argmax_finalize_f32(const float *pval, const unsigned long long *pidx, int count,
                                            unsigned long long *out_idx, float *out_val) {
    ArgBest b{-PRISM_INF, ~0ull};
    for (int i = threadIdx.x; i < count; i += blockDim.x)
        if (beats(pval[i], pidx[i], b.v, b.i)) { b.v = pval[i]; b.i = pidx[i]; }
    b = block_argbest(b);
    if (threadIdx.x == 0) {
        out_idx[0] = b.i == ~0ull ? 0ull : b.i;
        if (out_val) out_val[0] = b.v;
    }
}

// ---------------------------------------------------------------- per row
namespace {
template <class F4, class F1>
__device__ __forceinline__ void row_visit(const float *xr, int cols, bool vec, F4 &f4, F1 &f1) {
    const int bs = blockDim.x, t = threadIdx.x;
    int done = 0;
    if (vec) {
        const int n4 = cols >> 2;
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        for (int i = t; i < n4; i += U * bs) {
            float4 v[U];
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (i + u * bs < n4) v[u] = __ldcs(x4 + i + u * bs);
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (i + u * bs < n4) f4(v[u], (i + u * bs) * 4);
        }
        done = n4 * 4;
    }
    for (int j = done + t; j < cols; j += bs) f1(xr[j], j);
}
__device__ __forceinline__ bool rows_vec(const float *x, int cols) { return prism_aligned16(x) && cols % 4 == 0; }
}  // namespace

// out[r] = sum_j x[r, j] (f32). Launch (ROW REDUCE CONTRACT): grid = rows, block a multiple of 32 <= 512
// (recommended clamp(round_up(ceil(cols/16), 32), 32, 512)), no dynamic smem.
PRISM_KERNEL void prism_row_sum_f32(const float *x, float *out, int rows, int cols) {
    const int r = blockIdx.x;
    if (r >= rows) return;
    float acc = 0.0f;
    auto f4 = [&](float4 v, int) { acc += (v.x + v.y) + (v.z + v.w); };
    auto f1 = [&](float v, int) { acc += v; };
    row_visit(x + (size_t)r * cols, cols, rows_vec(x, cols), f4, f1);
    acc = block_allreduce(acc, SumOp{});
    if (threadIdx.x == 0) out[r] = acc;
}
// out[r] = sum_j x[r, j] / cols. Launch: ROW REDUCE CONTRACT.
PRISM_KERNEL void prism_row_mean_f32(const float *x, float *out, int rows, int cols) {
    const int r = blockIdx.x;
    if (r >= rows) return;
    float acc = 0.0f;
    auto f4 = [&](float4 v, int) { acc += (v.x + v.y) + (v.z + v.w); };
    auto f1 = [&](float v, int) { acc += v; };
    row_visit(x + (size_t)r * cols, cols, rows_vec(x, cols), f4, f1);
    acc = block_allreduce(acc, SumOp{});
    if (threadIdx.x == 0) out[r] = acc / (float)cols;
}
// out[r] = max_j x[r, j]. Launch: ROW REDUCE CONTRACT.
PRISM_KERNEL void prism_row_max_f32(const float *x, float *out, int rows, int cols) {
    const int r = blockIdx.x;
    if (r >= rows) return;
    float m = -PRISM_INF;
    auto f4 = [&](float4 v, int) { m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w))); };
    auto f1 = [&](float v, int) { m = fmaxf(m, v); };
    row_visit(x + (size_t)r * cols, cols, rows_vec(x, cols), f4, f1);
    m = block_allreduce(m, MaxOp{});
    if (threadIdx.x == 0) out[r] = m;
}
// out[r] = first j maximising x[r, j] (int; 0 if the row is all NaN). Launch: ROW REDUCE CONTRACT. Capped at three
// blocks of 512 per SM, like the row sums (40 registers, no spills; uncapped it took 47, which allowed two): 0.81 ->
// 0.92x a copy on the H200 at 8192 x 8192. Four blocks (32 registers) made the row sum slower, 1.07 -> 1.00x.
PRISM_KERNEL void __launch_bounds__(512, 3) prism_row_argmax_f32(const float *x, int *out, int rows, int cols) {
    const int r = blockIdx.x;
    if (r >= rows) return;
    float bv[4] = {-PRISM_INF, -PRISM_INF, -PRISM_INF, -PRISM_INF};
    int bi[4] = {-1, -1, -1, -1};
    ArgBest b{-PRISM_INF, ~0ull};
    auto f4 = [&](float4 v, int i) {
        if (v.x > bv[0]) { bv[0] = v.x; bi[0] = i; }
        if (v.y > bv[1]) { bv[1] = v.y; bi[1] = i + 1; }
        if (v.z > bv[2]) { bv[2] = v.z; bi[2] = i + 2; }
        if (v.w > bv[3]) { bv[3] = v.w; bi[3] = i + 3; }
    };
    auto f1 = [&](float v, int i) { arg_update(b, v, (unsigned long long)i); };
    row_visit(x + (size_t)r * cols, cols, rows_vec(x, cols), f4, f1);
#pragma unroll
    for (int k = 0; k < 4; ++k) if (bi[k] >= 0) arg_update(b, bv[k], (unsigned long long)bi[k]);
    b = block_argbest(b);
    if (threadIdx.x == 0) out[r] = b.i == ~0ull ? 0 : (int)b.i;
}
