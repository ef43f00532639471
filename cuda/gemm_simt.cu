// CUDA-core GEMMs: exact fp32 SGEMM (FFMA only), the SIMT fallback for bf16/f16 inputs, a small-shape kernel,
// and a batched f32 transpose used to feed the K-major-only TF32 wgmma kernel.
//
// C[m x n] (row-major, ldc) = alpha * op(A) * op(B) + beta * C; op(X) = X or X^T by transA/transB
// (A: m x k row-major, or k x m when transA; B: k x n row-major, or n x k when transB). Any m, n, k >= 1,
// any leading dimensions. Batch = gridDim.z with per-matrix strides. beta == 0 never reads C.
#include "common.cuh"
#include <stdint.h>

namespace {

template <typename T> __device__ __forceinline__ float to_f32(T v);
template <> __device__ __forceinline__ float to_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_f32<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <> __device__ __forceinline__ float to_f32<__half>(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }

// ---------------------------------------------------------------------------------------------------------
// Tiled SIMT GEMM: 128 x 128 x 8 block tile, 256 threads, 8 x 8 outputs per thread (two 4 x 4 quadrants so
// that shared-memory reads are float4 and conflict-free), register-prefetched double buffer.
constexpr int ST_BM = 128, ST_BN = 128, ST_BK = 8, ST_PAD = 4;

// Loads this thread's 4 elements of the [ROWS=128 along M/N] x [8 along K] operand tile into registers.
// KCONT: K is the contiguous dimension in global memory (A not transposed / B transposed).
template <typename T, bool KCONT, bool VEC>
__device__ __forceinline__ void simt_fetch(float (&v)[4], const T *__restrict__ g, long long ld, int mn0, int k0,
                                           int mn_lim, int k_lim) {
    const int tid = threadIdx.x;
    if (KCONT) {
        // thread -> row mn = tid / 2, k = (tid % 2) * 4 .. +3
        const int mn = mn0 + tid / 2, kk = k0 + (tid % 2) * 4;
        if (VEC && mn < mn_lim && kk + 3 < k_lim) {
            float4 f = *reinterpret_cast<const float4 *>(reinterpret_cast<const float *>(g) + (long long)mn * ld + kk);
            v[0] = f.x; v[1] = f.y; v[2] = f.z; v[3] = f.w;
        } else {
#pragma unroll
            for (int e = 0; e < 4; ++e)
                v[e] = (mn < mn_lim && kk + e < k_lim) ? to_f32<T>(g[(long long)mn * ld + kk + e]) : 0.f;
        }
    } else {
        // thread -> k = tid / 32, mn = (tid % 32) * 4 .. +3
        const int kk = k0 + tid / 32, mn = mn0 + (tid % 32) * 4;
        if (VEC && kk < k_lim && mn + 3 < mn_lim) {
            float4 f = *reinterpret_cast<const float4 *>(reinterpret_cast<const float *>(g) + (long long)kk * ld + mn);
            v[0] = f.x; v[1] = f.y; v[2] = f.z; v[3] = f.w;
        } else {
#pragma unroll
            for (int e = 0; e < 4; ++e)
                v[e] = (kk < k_lim && mn + e < mn_lim) ? to_f32<T>(g[(long long)kk * ld + mn + e]) : 0.f;
        }
    }
}
// Stores the fetched elements into the [8][128 + PAD] (k-major) shared tile.
template <bool KCONT>
__device__ __forceinline__ void simt_stash(float *s, const float (&v)[4]) {
    const int tid = threadIdx.x;
    if (KCONT) {
        const int mn = tid / 2, kk = (tid % 2) * 4;
#pragma unroll
        for (int e = 0; e < 4; ++e) s[(kk + e) * (ST_BM + ST_PAD) + mn] = v[e];
    } else {
        const int kk = tid / 32, mn = (tid % 32) * 4;
        *reinterpret_cast<float4 *>(s + kk * (ST_BM + ST_PAD) + mn) = make_float4(v[0], v[1], v[2], v[3]);
    }
}

template <typename TI, typename TO, bool TA, bool TB, bool VEC>
__device__ __forceinline__ void simt_gemm(int m, int n, int k, float alpha, const TI *__restrict__ A, int lda,
                                          const TI *__restrict__ B, int ldb, float beta, TO *__restrict__ C,
                                          int ldc, float (*As)[ST_BK][ST_BM + ST_PAD],
                                          float (*Bs)[ST_BK][ST_BN + ST_PAD]) {
    const int m0 = blockIdx.y * ST_BM, n0 = blockIdx.x * ST_BN;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int nk = (k + ST_BK - 1) / ST_BK;

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

    float va[4], vb[4];
    simt_fetch<TI, !TA, VEC>(va, A, lda, m0, 0, m, k);
    simt_fetch<TI, TB, VEC>(vb, B, ldb, n0, 0, n, k);
    simt_stash<!TA>(&As[0][0][0], va);
    simt_stash<TB>(&Bs[0][0][0], vb);
    __syncthreads();

    for (int kb = 0; kb < nk; ++kb) {
        const int cur = kb & 1;
        if (kb + 1 < nk) {
            simt_fetch<TI, !TA, VEC>(va, A, lda, m0, (kb + 1) * ST_BK, m, k);
            simt_fetch<TI, TB, VEC>(vb, B, ldb, n0, (kb + 1) * ST_BK, n, k);
        }
#pragma unroll
        for (int kk = 0; kk < ST_BK; ++kk) {
            float a[8], b[8];
            const float4 a0 = *reinterpret_cast<const float4 *>(&As[cur][kk][ty * 4]);
            const float4 a1 = *reinterpret_cast<const float4 *>(&As[cur][kk][64 + ty * 4]);
            const float4 b0 = *reinterpret_cast<const float4 *>(&Bs[cur][kk][tx * 4]);
            const float4 b1 = *reinterpret_cast<const float4 *>(&Bs[cur][kk][64 + tx * 4]);
            a[0] = a0.x; a[1] = a0.y; a[2] = a0.z; a[3] = a0.w; a[4] = a1.x; a[5] = a1.y; a[6] = a1.z; a[7] = a1.w;
            b[0] = b0.x; b[1] = b0.y; b[2] = b0.z; b[3] = b0.w; b[4] = b1.x; b[5] = b1.y; b[6] = b1.z; b[7] = b1.w;
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (kb + 1 < nk) {
            simt_stash<!TA>(&As[cur ^ 1][0][0], va);
            simt_stash<TB>(&Bs[cur ^ 1][0][0], vb);
        }
        __syncthreads();
    }

    const bool vec_out = VEC && sizeof(TO) == 4 && (ldc % 4) == 0 && (((unsigned long long)C & 15ull) == 0);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int row = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        if (row >= m) continue;
        TO *crow = C + (long long)row * ldc;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int col = n0 + h * 64 + tx * 4;
            if (vec_out && col + 3 < n) {
                float4 o;
                o.x = alpha * acc[i][4 * h + 0];
                o.y = alpha * acc[i][4 * h + 1];
                o.z = alpha * acc[i][4 * h + 2];
                o.w = alpha * acc[i][4 * h + 3];
                if (beta != 0.f) {
                    const float4 c = *reinterpret_cast<const float4 *>(reinterpret_cast<const float *>(crow) + col);
                    o.x = fmaf(beta, c.x, o.x);
                    o.y = fmaf(beta, c.y, o.y);
                    o.z = fmaf(beta, c.z, o.z);
                    o.w = fmaf(beta, c.w, o.w);
                }
                *reinterpret_cast<float4 *>(reinterpret_cast<float *>(crow) + col) = o;
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    if (col + e < n) {
                        float v = alpha * acc[i][4 * h + e];
                        if (beta != 0.f) v = fmaf(beta, to_f32<TO>(crow[col + e]), v);
                        crow[col + e] = from_f32<TO>(v);
                    }
                }
            }
        }
    }
}

template <typename TI, typename TO>
__device__ __forceinline__ void simt_entry(int m, int n, int k, float alpha, const TI *A, int lda,
                                           long long strideA, int transA, const TI *B, int ldb, long long strideB,
                                           int transB, float beta, TO *C, int ldc, long long strideC) {
    __shared__ __align__(16) float As[2][ST_BK][ST_BM + ST_PAD];
    __shared__ __align__(16) float Bs[2][ST_BK][ST_BN + ST_PAD];
    const long long z = blockIdx.z;
    A += z * strideA;
    B += z * strideB;
    C += z * strideC;
    bool vec = false;
    if constexpr (sizeof(TI) == 4)
        vec = ((((unsigned long long)A | (unsigned long long)B) & 15ull) == 0) && (lda % 4 == 0) && (ldb % 4 == 0);
    if (vec) {
        if (transA) {
            if (transB) simt_gemm<TI, TO, true, true, true>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, As, Bs);
            else simt_gemm<TI, TO, true, false, true>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, As, Bs);
        } else {
            if (transB) simt_gemm<TI, TO, false, true, true>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, As, Bs);
            else simt_gemm<TI, TO, false, false, true>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, As, Bs);
        }
    } else {
        if (transA) {
            if (transB) simt_gemm<TI, TO, true, true, false>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, As, Bs);
            else simt_gemm<TI, TO, true, false, false>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, As, Bs);
        } else {
            if (transB) simt_gemm<TI, TO, false, true, false>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, As, Bs);
            else simt_gemm<TI, TO, false, false, false>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, As, Bs);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Warp-tiled SIMT GEMM: BM x 128 x 16 block tile, 256 threads as 2 x 4 warps, each warp a (BM/2) x 32 tile,
// each thread (BM/16) x 8 outputs in 4 x 4 quadrants (float4 shared reads, conflict-free). K-major shared tiles
// [16][BM + 4], double-buffered, with the next tile prefetched into registers. Instantiated with BM = 64 for
// exact fp32 grids that 128-row tiles leave under one wave (1024^2: 1.4x the 128-row kernel); with BM = 128
// it measured no faster than the kernel above (notes/gemm.md).
constexpr int WT_BN = 128, WT_BK = 16, WT_PAD = 4;

// Loads this thread's share (ROWS * 16 / 256 elements, in float4 groups) of the [ROWS along M/N] x [16 along K]
// operand tile starting at (mn0, k0). KCONT: K is contiguous in global memory (A not transposed / B transposed).
template <int ROWS, typename T, bool KCONT, bool VEC>
__device__ __forceinline__ void wt_fetch(float (&v)[ROWS * WT_BK / 256], const T *__restrict__ g, long long ld,
                                         int mn0, int k0, int mn_lim, int k_lim) {
    constexpr int GROUPS = ROWS * WT_BK / 1024;  // float4 groups per thread
#pragma unroll
    for (int j = 0; j < GROUPS; ++j) {
        const int idx = threadIdx.x + j * 256;
        // KCONT: 4 groups per row of 16 k; else ROWS / 4 groups per row of ROWS mn.
        const int mn = mn0 + (KCONT ? idx / 4 : (idx % (ROWS / 4)) * 4);
        const int kk = k0 + (KCONT ? (idx % 4) * 4 : idx / (ROWS / 4));
        float *o = v + 4 * j;
        if (KCONT) {
            if (VEC && mn < mn_lim && kk + 3 < k_lim) {
                const float4 f = *reinterpret_cast<const float4 *>(reinterpret_cast<const float *>(g) +
                                                                   (long long)mn * ld + kk);
                o[0] = f.x; o[1] = f.y; o[2] = f.z; o[3] = f.w;
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    o[e] = (mn < mn_lim && kk + e < k_lim) ? to_f32<T>(g[(long long)mn * ld + kk + e]) : 0.f;
            }
        } else {
            if (VEC && kk < k_lim && mn + 3 < mn_lim) {
                const float4 f = *reinterpret_cast<const float4 *>(reinterpret_cast<const float *>(g) +
                                                                   (long long)kk * ld + mn);
                o[0] = f.x; o[1] = f.y; o[2] = f.z; o[3] = f.w;
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    o[e] = (kk < k_lim && mn + e < mn_lim) ? to_f32<T>(g[(long long)kk * ld + mn + e]) : 0.f;
            }
        }
    }
}
// Stores the fetched elements into the K-major [16][ROWS + PAD] shared tile.
template <int ROWS, bool KCONT>
__device__ __forceinline__ void wt_stash(float *s, const float (&v)[ROWS * WT_BK / 256]) {
    constexpr int GROUPS = ROWS * WT_BK / 1024;
#pragma unroll
    for (int j = 0; j < GROUPS; ++j) {
        const int idx = threadIdx.x + j * 256;
        if (KCONT) {
            const int mn = idx / 4, kk = (idx % 4) * 4;
#pragma unroll
            for (int e = 0; e < 4; ++e) s[(kk + e) * (ROWS + WT_PAD) + mn] = v[4 * j + e];
        } else {
            const int mn = (idx % (ROWS / 4)) * 4, kk = idx / (ROWS / 4);
            *reinterpret_cast<float4 *>(s + kk * (ROWS + WT_PAD) + mn) =
                make_float4(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]);
        }
    }
}

template <int BM, typename TI, typename TO, bool TA, bool TB, bool VEC>
__device__ __forceinline__ void wt_gemm(int m, int n, int k, float alpha, const TI *__restrict__ A, int lda,
                                        const TI *__restrict__ B, int ldb, float beta, TO *__restrict__ C, int ldc,
                                        float (*As)[WT_BK][BM + WT_PAD], float (*Bs)[WT_BK][WT_BN + WT_PAD]) {
    constexpr int QM = BM / 64;  // 4-row quadrants per thread (2 or 1)
    constexpr int TM = 4 * QM;   // rows per thread
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * WT_BN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // Warp (wm, wn) of 2 x 4 covers rows wm * BM/2 .., columns wn * 32 ..; lane (ly, lx) of 8 x 4.
    const int row0 = (warp / 4) * (BM / 2) + (lane / 4) * 4;
    const int col0 = (warp % 4) * 32 + (lane % 4) * 4;
    const int nk = (k + WT_BK - 1) / WT_BK;

    float acc[TM][8];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

    float va[BM * WT_BK / 256], vb[WT_BN * WT_BK / 256];
    wt_fetch<BM, TI, !TA, VEC>(va, A, lda, m0, 0, m, k);
    wt_fetch<WT_BN, TI, TB, VEC>(vb, B, ldb, n0, 0, n, k);
    wt_stash<BM, !TA>(&As[0][0][0], va);
    wt_stash<WT_BN, TB>(&Bs[0][0][0], vb);
    __syncthreads();

    for (int kb = 0; kb < nk; ++kb) {
        const int cur = kb & 1;
        if (kb + 1 < nk) {
            wt_fetch<BM, TI, !TA, VEC>(va, A, lda, m0, (kb + 1) * WT_BK, m, k);
            wt_fetch<WT_BN, TI, TB, VEC>(vb, B, ldb, n0, (kb + 1) * WT_BK, n, k);
        }
#pragma unroll
        for (int kk = 0; kk < WT_BK; ++kk) {
            float a[TM], b[8];
#pragma unroll
            for (int q = 0; q < QM; ++q) {
                const float4 f = *reinterpret_cast<const float4 *>(&As[cur][kk][row0 + q * 32]);
                a[4 * q] = f.x; a[4 * q + 1] = f.y; a[4 * q + 2] = f.z; a[4 * q + 3] = f.w;
            }
#pragma unroll
            for (int q = 0; q < 2; ++q) {
                const float4 f = *reinterpret_cast<const float4 *>(&Bs[cur][kk][col0 + q * 16]);
                b[4 * q] = f.x; b[4 * q + 1] = f.y; b[4 * q + 2] = f.z; b[4 * q + 3] = f.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (kb + 1 < nk) {
            wt_stash<BM, !TA>(&As[cur ^ 1][0][0], va);
            wt_stash<WT_BN, TB>(&Bs[cur ^ 1][0][0], vb);
        }
        __syncthreads();
    }

    const bool vec_out = VEC && sizeof(TO) == 4 && (ldc % 4) == 0 && (((unsigned long long)C & 15ull) == 0);
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + row0 + (i / 4) * 32 + i % 4;
        if (row >= m) continue;
        TO *crow = C + (long long)row * ldc;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int col = n0 + col0 + h * 16;
            if (vec_out && col + 3 < n) {
                float4 o;
                o.x = alpha * acc[i][4 * h + 0];
                o.y = alpha * acc[i][4 * h + 1];
                o.z = alpha * acc[i][4 * h + 2];
                o.w = alpha * acc[i][4 * h + 3];
                if (beta != 0.f) {
                    const float4 c = *reinterpret_cast<const float4 *>(reinterpret_cast<const float *>(crow) + col);
                    o.x = fmaf(beta, c.x, o.x);
                    o.y = fmaf(beta, c.y, o.y);
                    o.z = fmaf(beta, c.z, o.z);
                    o.w = fmaf(beta, c.w, o.w);
                }
                *reinterpret_cast<float4 *>(reinterpret_cast<float *>(crow) + col) = o;
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    if (col + e < n) {
                        float v = alpha * acc[i][4 * h + e];
                        if (beta != 0.f) v = fmaf(beta, to_f32<TO>(crow[col + e]), v);
                        crow[col + e] = from_f32<TO>(v);
                    }
                }
            }
        }
    }
}

template <int BM, typename TI, typename TO>
__device__ __forceinline__ void wt_entry(int m, int n, int k, float alpha, const TI *A, int lda, long long strideA,
                                         int transA, const TI *B, int ldb, long long strideB, int transB, float beta,
                                         TO *C, int ldc, long long strideC) {
    __shared__ __align__(16) float As[2][WT_BK][BM + WT_PAD];
    __shared__ __align__(16) float Bs[2][WT_BK][WT_BN + WT_PAD];
    const long long z = blockIdx.z;
    A += z * strideA;
    B += z * strideB;
    C += z * strideC;
    bool vec = false;
    if constexpr (sizeof(TI) == 4)
        vec = ((((unsigned long long)A | (unsigned long long)B) & 15ull) == 0) && (lda % 4 == 0) && (ldb % 4 == 0);
#define WT_CALL(TA, TB, V) wt_gemm<BM, TI, TO, TA, TB, V>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, As, Bs)
    if (vec) {
        if (transA) { if (transB) WT_CALL(true, true, true); else WT_CALL(true, false, true); }
        else { if (transB) WT_CALL(false, true, true); else WT_CALL(false, false, true); }
    } else {
        if (transA) { if (transB) WT_CALL(true, true, false); else WT_CALL(true, false, false); }
        else { if (transB) WT_CALL(false, true, false); else WT_CALL(false, false, false); }
    }
#undef WT_CALL
}

// ---------------------------------------------------------------------------------------------------------
// Small / skinny kernel: 16 x 16 output tile per 256-thread block, one output per thread, K walked in 16-wide
// shared-memory tiles. No tile-size waste for tiny shapes, coalesced loads for every transpose combination.
template <typename TI, typename TO>
__device__ __forceinline__ void small_gemm(int m, int n, int k, float alpha, const TI *A, int lda,
                                           long long strideA, int transA, const TI *B, int ldb, long long strideB,
                                           int transB, float beta, TO *C, int ldc, long long strideC) {
    __shared__ float As[16][17];  // [m][k]
    __shared__ float Bs[16][17];  // [k][n]
    const long long z = blockIdx.z;
    A += z * strideA;
    B += z * strideB;
    C += z * strideC;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.f;
    for (int k0 = 0; k0 < k; k0 += 16) {
        // A tile: element (mi, ki). Lanes walk the contiguous global dimension.
        {
            const int mi = transA ? tx : ty, ki = transA ? ty : tx;
            const int gm = blockIdx.y * 16 + mi, gk = k0 + ki;
            As[mi][ki] = (gm < m && gk < k)
                             ? to_f32<TI>(transA ? A[(long long)gk * lda + gm] : A[(long long)gm * lda + gk])
                             : 0.f;
        }
        {
            const int ki = transB ? tx : ty, ni = transB ? ty : tx;
            const int gk = k0 + ki, gn = blockIdx.x * 16 + ni;
            Bs[ki][ni] = (gk < k && gn < n)
                             ? to_f32<TI>(transB ? B[(long long)gn * ldb + gk] : B[(long long)gk * ldb + gn])
                             : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < 16; ++kk) acc = fmaf(As[ty][kk], Bs[kk][tx], acc);
        __syncthreads();
    }
    if (row < m && col < n) {
        TO *p = C + (long long)row * ldc + col;
        float v = alpha * acc;
        if (beta != 0.f) v = fmaf(beta, to_f32<TO>(*p), v);
        *p = from_f32<TO>(v);
    }
}

}  // namespace

#define GEMM_ARGS(TIN, TO)                                                                                      \
    int m, int n, int k, float alpha, const TIN *A, int lda, long long strideA, int transA, const TIN *B,       \
        int ldb, long long strideB, int transB, float beta, TO *C, int ldc, long long strideC
#define GEMM_PASS A, lda, strideA, transA, B, ldb, strideB, transB, beta, C, ldc, strideC

#define SIMT_ENTRIES(SFX, TIN, TO)                                                                              \
    PRISM_KERNEL void __launch_bounds__(256) gemm_simt_##SFX(GEMM_ARGS(TIN, TO)) {                             \
        simt_entry<TIN, TO>(m, n, k, alpha, GEMM_PASS);                                                         \
    }                                                                                                           \
    PRISM_KERNEL void __launch_bounds__(256) gemm_small_##SFX(GEMM_ARGS(TIN, TO)) {                            \
        small_gemm<TIN, TO>(m, n, k, alpha, GEMM_PASS);                                                         \
    }

SIMT_ENTRIES(f32_f32, float, float)
SIMT_ENTRIES(bf16_bf16, __nv_bfloat16, __nv_bfloat16)
SIMT_ENTRIES(bf16_f32, __nv_bfloat16, float)
SIMT_ENTRIES(f16_f16, __half, __half)
SIMT_ENTRIES(f16_f32, __half, float)

// Exact fp32 with 64 x 128 tiles: grid (ceil(n/128), ceil(m/64), batch), block 256, no dynamic smem.
PRISM_KERNEL void __launch_bounds__(256) gemm_simt64_f32_f32(GEMM_ARGS(float, float)) {
    wt_entry<64, float, float>(m, n, k, alpha, GEMM_PASS);
}

// Batched transpose of f32 matrices: out[c][r] = in[r][c] for a rows x cols input (ld_in >= cols,
// ld_out >= rows). grid (ceil(cols/32), ceil(rows/32), batch), block (32, 8).
PRISM_KERNEL void __launch_bounds__(256)
    gemm_transpose_f32(int rows, int cols, const float *in, int ld_in, long long stride_in, float *out, int ld_out,
                       long long stride_out) {
    __shared__ float tile[32][33];
    in += (long long)blockIdx.z * stride_in;
    out += (long long)blockIdx.z * stride_out;
    const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
    for (int i = threadIdx.y; i < 32; i += 8) {
        const int r = r0 + i, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[i][threadIdx.x] = in[(long long)r * ld_in + c];
    }
    __syncthreads();
    for (int i = threadIdx.y; i < 32; i += 8) {
        const int c = c0 + i, r = r0 + threadIdx.x;
        if (r < rows && c < cols) out[(long long)c * ld_out + r] = tile[threadIdx.x][i];
    }
}
