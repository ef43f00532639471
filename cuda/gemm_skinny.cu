// Skinny GEMMs: one side of C at most 16 long (decode: a few tokens against a layer's weights). Such products
// are bound by reading the long operand once, which the tiled kernels do with 128-row tiles that are mostly
// empty and too few blocks to keep the memory system busy. Here the short side's operand X (S x k, S <= 16) is
// staged in shared memory as f32 and every block streams a slice of the long operand W (k x L) through 16-byte
// loads, each weight multiplied with all S rows of X on the CUDA cores (f32 accumulation).
//
// The host maps C = op(A) op(B) onto X and W: m <= 16 gives X = op(A), W = op(B); n <= 16 gives X = op(B)^T,
// W = op(A)^T. `xs`, `xk` are X's element strides along S and k; W is L-contiguous (`wl` kernels: W(kk, l) at
// W[kk * wld + l]) or k-contiguous (`wk`: W[l * wld + kk]). Block z of gridDim.y takes k from z * kc (kc a
// multiple of 64, at most skinny_kc(S)) and writes its m x n f32 partial product to part + z * m * n, element
// (s, l) at s * ps + l * pl; gemm_splitk_reduce_<out> then sums the slices in order and applies alpha, beta and
// the epilogue. Grid (ceil(L / tile), splits), block 256, no dynamic shared memory. Deterministic: every sum is
// taken in a fixed order.
#include "gemm_common.cuh"

namespace {

constexpr int SK_THREADS = 256, SK_WARPS = SK_THREADS / 32;
// The longest k slice for S rows: 2048 up to 4 rows, then 8192 / S (32 KB of staged X at most).
__host__ __device__ constexpr int skinny_kc(int S) { return S <= 4 ? 2048 : 8192 / S; }

// V consecutive elements of W (16 bytes) as f32.
template <typename TI> struct Vec {
    static constexpr int V = 16 / sizeof(TI);
    __device__ __forceinline__ static void load(const TI *p, float (&v)[V]) {
        const uint4 raw = __ldg(reinterpret_cast<const uint4 *>(p));
        const TI *e = reinterpret_cast<const TI *>(&raw);
#pragma unroll
        for (int i = 0; i < V; ++i) v[i] = to_f32<TI>(e[i]);
    }
};

// X's rows (zero beyond `rows`) for k in [k0, k0 + kn), zero-filled to a multiple of 64, as f32 at xsm[s * kc + kk].
template <int S, typename TI>
__device__ __forceinline__ void stage_x(float *xsm, const TI *X, long long xs, long long xk, int rows, int k0, int kn,
                                        int kc) {
    const int padded = (kn + 63) & ~63;
    for (int i = threadIdx.x; i < S * padded; i += SK_THREADS) {
        const int s = i / padded, kk = i % padded;
        xsm[s * kc + kk] = (s < rows && kk < kn) ? to_f32<TI>(X[s * xs + (long long)(k0 + kk) * xk]) : 0.f;
    }
}

// W L-contiguous: lane j of every warp owns columns l0 .. l0 + V - 1 of the block's 32 * V; warp w takes rows
// w, w + 8, ... of the block's k slice; the warps' sums are added in warp order through shared memory.
template <int S, typename TI, bool VEC>
__device__ __forceinline__ void skinny_wl(float *xsm, int rows, int L, int k, int kc, const TI *X, long long xs,
                                          long long xk, const TI *W, long long wld, float *part, long long ps,
                                          long long pl) {
    constexpr int V = Vec<TI>::V, TILE = 32 * V, U = 4;
    float *red = xsm + S * skinny_kc(S);  // S * TILE floats
    const int k0 = blockIdx.y * kc, kn = min(kc, k - k0);
    stage_x<S>(xsm, X, xs, xk, rows, k0, kn, kc);
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int l0 = blockIdx.x * TILE + lane * V;
    const bool whole = VEC && l0 + V <= L;
    float acc[S][V];
#pragma unroll
    for (int s = 0; s < S; ++s)
#pragma unroll
        for (int e = 0; e < V; ++e) acc[s][e] = 0.f;
    const TI *w = W + (long long)k0 * wld + l0;
    for (int kb = warp; kb < kn; kb += SK_WARPS * U) {
        float wv[U][V];
        // U rows' loads first, so U 16-byte reads per thread are in flight together.
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int kk = kb + u * SK_WARPS;
            const TI *row = w + (long long)kk * wld;
            if (kk < kn && whole) {
                Vec<TI>::load(row, wv[u]);
            } else {
#pragma unroll
                for (int e = 0; e < V; ++e) wv[u][e] = (kk < kn && l0 + e < L) ? to_f32<TI>(row[e]) : 0.f;
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int kk = kb + u * SK_WARPS;  // the same for the whole warp
            if (kk >= kn) break;
#pragma unroll
            for (int s = 0; s < S; ++s) {
                const float x = xsm[s * kc + kk];
#pragma unroll
                for (int e = 0; e < V; ++e) acc[s][e] = fmaf(x, wv[u][e], acc[s][e]);
            }
        }
    }
    for (int w8 = 0; w8 < SK_WARPS; ++w8) {
        if (warp == w8) {
#pragma unroll
            for (int s = 0; s < S; ++s)
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    float &r = red[s * TILE + lane * V + e];
                    r = (w8 == 0 ? 0.f : r) + acc[s][e];
                }
        }
        __syncthreads();
    }
    float *out = part + (long long)blockIdx.y * rows * L;
    for (int i = threadIdx.x; i < S * TILE; i += SK_THREADS) {
        const int s = i / TILE, l = blockIdx.x * TILE + i % TILE;
        if (s < rows && l < L) out[s * ps + l * pl] = red[i];
    }
}

// W k-contiguous: warp w owns columns l0 .. l0 + CPW - 1 of the block's 8 * CPW; its lanes walk the slice's k
// V elements at a time (512 contiguous bytes per column and step), and a shuffle tree sums the lanes.
template <int S, typename TI, bool VEC>
__device__ __forceinline__ void skinny_wk(float *xsm, int rows, int L, int k, int kc, const TI *X, long long xs,
                                          long long xk, const TI *W, long long wld, float *part, long long ps,
                                          long long pl) {
    constexpr int V = Vec<TI>::V, CPW = 4;
    const int k0 = blockIdx.y * kc, kn = min(kc, k - k0);
    stage_x<S>(xsm, X, xs, xk, rows, k0, kn, kc);
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int l0 = (blockIdx.x * SK_WARPS + warp) * CPW;
    float acc[CPW][S];
#pragma unroll
    for (int c = 0; c < CPW; ++c)
#pragma unroll
        for (int s = 0; s < S; ++s) acc[c][s] = 0.f;
    for (int kk = lane * V; kk < kn; kk += 32 * V) {
        float wv[CPW][V];
#pragma unroll
        for (int c = 0; c < CPW; ++c) {
            const TI *row = W + (long long)(l0 + c) * wld + k0 + kk;
            if (VEC && l0 + c < L && kk + V <= kn) {
                Vec<TI>::load(row, wv[c]);
            } else {
#pragma unroll
                for (int e = 0; e < V; ++e) wv[c][e] = (l0 + c < L && kk + e < kn) ? to_f32<TI>(row[e]) : 0.f;
            }
        }
#pragma unroll
        for (int s = 0; s < S; ++s) {
            float x[V];
#pragma unroll
            for (int q = 0; q < V / 4; ++q) {
                const float4 f = *reinterpret_cast<const float4 *>(&xsm[s * kc + kk + 4 * q]);
                x[4 * q] = f.x; x[4 * q + 1] = f.y; x[4 * q + 2] = f.z; x[4 * q + 3] = f.w;
            }
#pragma unroll
            for (int c = 0; c < CPW; ++c)
#pragma unroll
                for (int e = 0; e < V; ++e) acc[c][s] = fmaf(x[e], wv[c][e], acc[c][s]);
        }
    }
    float *out = part + (long long)blockIdx.y * rows * L;
#pragma unroll
    for (int c = 0; c < CPW; ++c)
#pragma unroll
        for (int s = 0; s < S; ++s) {
            float v = acc[c][s];
#pragma unroll
            for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
            if (lane == 0 && s < rows && l0 + c < L) out[s * ps + (l0 + c) * pl] = v;
        }
}

}  // namespace

// gemm_skinny_<wl|wk>_<in>_s<S>: rows <= S (the host picks the smallest S of 1, 2, 4, 8, 16), k slices of at
// most skinny_kc(S) (S * kc floats of X staged). vec: W's base and pitch allow 16-byte loads (checked here).
#define SKINNY_ENTRY(LAYOUT, SFX, TI, S, SMEM_FLOATS)                                                          \
    PRISM_KERNEL void __launch_bounds__(256)                                                                    \
        gemm_skinny_##LAYOUT##_##SFX##_s##S(int rows, int L, int k, int kc, const TI *X, long long xs,          \
                                           long long xk, const TI *W, long long wld, float *part, long long ps, \
                                           long long pl) {                                                      \
        __shared__ __align__(16) float smem[SMEM_FLOATS];                                                       \
        const bool vec = (((unsigned long long)W | (unsigned long long)(wld * sizeof(TI))) & 15ull) == 0;      \
        if (vec) skinny_##LAYOUT<S, TI, true>(smem, rows, L, k, kc, X, xs, xk, W, wld, part, ps, pl);           \
        else skinny_##LAYOUT<S, TI, false>(smem, rows, L, k, kc, X, xs, xk, W, wld, part, ps, pl);              \
    }
// wl also keeps the warps' sums (S x 32 V floats) after X.
#define SKINNY_S(SFX, TI, S)                                                                                    \
    SKINNY_ENTRY(wl, SFX, TI, S, S * skinny_kc(S) + S * 32 * Vec<TI>::V)                                        \
    SKINNY_ENTRY(wk, SFX, TI, S, S * skinny_kc(S))
#define SKINNY_TYPE(SFX, TI)                                                                                    \
    SKINNY_S(SFX, TI, 1) SKINNY_S(SFX, TI, 2) SKINNY_S(SFX, TI, 4) SKINNY_S(SFX, TI, 8) SKINNY_S(SFX, TI, 16)

SKINNY_TYPE(f32, float)
SKINNY_TYPE(bf16, __nv_bfloat16)
SKINNY_TYPE(f16, __half)
