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
// Tiled SIMT GEMM: a BM x BN x BK block tile on 256 threads = WARPS_M x (8 / WARPS_M) warps, each warp's lanes
// LANES_M x (32 / LANES_M), each thread a TM x TN block of outputs made of 4 x 4 quadrants (so every shared
// read is a conflict-free float4). Operand tiles are stored K-major ([BK][rows + 4]) in two shared buffers:
// the next tile is fetched into registers while the current one is multiplied and stashed at its last step
// (one barrier per tile), and the next step's fragments are read from shared memory one step ahead.
// Instantiations (notes/gemm.md has the measurements): 128 x 256 x 8 (1 block per SM, the shape of cuBLAS's
// own H100 SGEMM) for grids of at least ~a wave; 64 x 128 x 16 (2 blocks per SM) for smaller ones.
constexpr int TILE_PAD = 4;

// The thread's share of the [ROWS along M/N] x [BK along K] operand tile: G groups of 4 elements.
// KCONT: K is the contiguous dimension in global memory (A not transposed, B transposed).
template <int ROWS, int BK, bool KCONT> struct OperandTile {
    static constexpr int GROUPS = ROWS * BK / 4;
    static constexpr int G = (GROUPS + 255) / 256;
    static constexpr int PITCH = ROWS + TILE_PAD;

    // Group idx covers 4 consecutive elements along the contiguous dimension: (mn, kk) is the first.
    __device__ __forceinline__ static int mn_of(int idx) { return KCONT ? idx / (BK / 4) : (idx % (ROWS / 4)) * 4; }
    __device__ __forceinline__ static int k_of(int idx) { return KCONT ? (idx % (BK / 4)) * 4 : idx / (ROWS / 4); }

    // VEC: one float4 load per group when the group lies inside the matrix (f32 data, 16-byte aligned rows).
    template <typename T, bool VEC>
    __device__ __forceinline__ static void fetch(float (&v)[4 * G], const T *__restrict__ g, long long ld, int mn0,
                                                 int k0, int mn_lim, int k_lim) {
#pragma unroll
        for (int j = 0; j < G; ++j) {
            const int idx = threadIdx.x + j * 256;
            if (GROUPS % 256 != 0 && idx >= GROUPS) break;
            const int mn = mn0 + mn_of(idx), kk = k0 + k_of(idx);
            float *o = v + 4 * j;
            const bool inside = KCONT ? (mn < mn_lim && kk + 3 < k_lim) : (kk < k_lim && mn + 3 < mn_lim);
            const long long at = KCONT ? (long long)mn * ld + kk : (long long)kk * ld + mn;
            if (VEC && inside) {
                const float4 f = *reinterpret_cast<const float4 *>(reinterpret_cast<const float *>(g) + at);
                o[0] = f.x; o[1] = f.y; o[2] = f.z; o[3] = f.w;
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const bool ok = KCONT ? (mn < mn_lim && kk + e < k_lim) : (kk < k_lim && mn + e < mn_lim);
                    o[e] = ok ? to_f32<T>(g[at + e]) : 0.f;
                }
            }
        }
    }
    // Stores the fetched elements into the K-major shared tile s[BK][PITCH].
    __device__ __forceinline__ static void stash(float *s, const float (&v)[4 * G]) {
#pragma unroll
        for (int j = 0; j < G; ++j) {
            const int idx = threadIdx.x + j * 256;
            if (GROUPS % 256 != 0 && idx >= GROUPS) break;
            const int mn = mn_of(idx), kk = k_of(idx);
            if (KCONT) {
#pragma unroll
                for (int e = 0; e < 4; ++e) s[(kk + e) * PITCH + mn] = v[4 * j + e];
            } else {
                *reinterpret_cast<float4 *>(s + kk * PITCH + mn) = make_float4(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]);
            }
        }
    }
};

template <int BM, int BN, int BK, int WARPS_M, int LANES_M, typename TI, typename TO, bool TA, bool TB, bool VEC>
__device__ __forceinline__ void tiled_gemm(int m, int n, int k, float alpha, const TI *__restrict__ A, int lda,
                                           const TI *__restrict__ B, int ldb, float beta, TO *__restrict__ C, int ldc,
                                           float (*As)[BK][BM + TILE_PAD], float (*Bs)[BK][BN + TILE_PAD]) {
    constexpr int WARPS_N = 8 / WARPS_M, LANES_N = 32 / LANES_M;
    constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // warp tile
    constexpr int TM = WM / LANES_M, TN = WN / LANES_N;  // thread tile
    constexpr int QM = TM / 4, QN = TN / 4;              // 4 x 4 quadrants, LANES * 4 apart
    static_assert(WARPS_M * WARPS_N == 8 && TM % 4 == 0 && TN % 4 == 0, "tile does not fit 256 threads");
    using TileA = OperandTile<BM, BK, !TA>;
    using TileB = OperandTile<BN, BK, TB>;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = (warp / WARPS_N) * WM + (lane / LANES_N) * 4;
    const int col0 = (warp % WARPS_N) * WN + (lane % LANES_N) * 4;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int nk = (k + BK - 1) / BK;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

    float va[4 * TileA::G], vb[4 * TileB::G];
    TileA::template fetch<TI, VEC>(va, A, lda, m0, 0, m, k);
    TileB::template fetch<TI, VEC>(vb, B, ldb, n0, 0, n, k);
    TileA::stash(&As[0][0][0], va);
    TileB::stash(&Bs[0][0][0], vb);
    __syncthreads();

    float fa[2][TM], fb[2][TN];  // fragments of steps kk (slot kk & 1) and kk + 1
    auto load_fragments = [&](int buf, int kk, int slot) {
#pragma unroll
        for (int q = 0; q < QM; ++q) {
            const float4 f = *reinterpret_cast<const float4 *>(&As[buf][kk][row0 + q * LANES_M * 4]);
            fa[slot][4 * q] = f.x; fa[slot][4 * q + 1] = f.y; fa[slot][4 * q + 2] = f.z; fa[slot][4 * q + 3] = f.w;
        }
#pragma unroll
        for (int q = 0; q < QN; ++q) {
            const float4 f = *reinterpret_cast<const float4 *>(&Bs[buf][kk][col0 + q * LANES_N * 4]);
            fb[slot][4 * q] = f.x; fb[slot][4 * q + 1] = f.y; fb[slot][4 * q + 2] = f.z; fb[slot][4 * q + 3] = f.w;
        }
    };
    load_fragments(0, 0, 0);
    for (int kb = 0; kb < nk; ++kb) {
        const int cur = kb & 1;
        const bool more = kb + 1 < nk;
        if (more) {
            TileA::template fetch<TI, VEC>(va, A, lda, m0, (kb + 1) * BK, m, k);
            TileB::template fetch<TI, VEC>(vb, B, ldb, n0, (kb + 1) * BK, n, k);
        }
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            if (kk == BK - 1 && more) {
                // Buffer cur ^ 1 was last read before the previous tile's barrier.
                TileA::stash(&As[cur ^ 1][0][0], va);
                TileB::stash(&Bs[cur ^ 1][0][0], vb);
                __syncthreads();
            }
            if (kk + 1 < BK) load_fragments(cur, kk + 1, (kk + 1) & 1);
            else if (more) load_fragments(cur ^ 1, 0, (kk + 1) & 1);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(fa[kk & 1][i], fb[kk & 1][j], acc[i][j]);
        }
    }

    const bool vec_out = sizeof(TO) == 4 && (ldc % 4) == 0 && (((unsigned long long)C & 15ull) == 0);
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + row0 + (i / 4) * LANES_M * 4 + i % 4;
        if (row >= m) continue;
        TO *crow = C + (long long)row * ldc;
#pragma unroll
        for (int q = 0; q < QN; ++q) {
            const int col = n0 + col0 + q * LANES_N * 4;
            const float *a = &acc[i][4 * q];
            if (vec_out && col + 3 < n) {
                float4 o = make_float4(alpha * a[0], alpha * a[1], alpha * a[2], alpha * a[3]);
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
                        float v = alpha * a[e];
                        if (beta != 0.f) v = fmaf(beta, to_f32<TO>(crow[col + e]), v);
                        crow[col + e] = from_f32<TO>(v);
                    }
                }
            }
        }
    }
}

// Batch offsets, then the body for this call's layout and alignment (uniform branches).
template <int BM, int BN, int BK, int WARPS_M, int LANES_M, typename TI, typename TO>
__device__ __forceinline__ void tiled_entry(int m, int n, int k, float alpha, const TI *A, int lda, long long strideA,
                                            int transA, const TI *B, int ldb, long long strideB, int transB,
                                            float beta, TO *C, int ldc, long long strideC) {
    __shared__ __align__(16) float As[2][BK][BM + TILE_PAD];
    __shared__ __align__(16) float Bs[2][BK][BN + TILE_PAD];
    const long long z = blockIdx.z;
    A += z * strideA;
    B += z * strideB;
    C += z * strideC;
    bool vec = false;
    if constexpr (sizeof(TI) == 4)
        vec = ((((unsigned long long)A | (unsigned long long)B) & 15ull) == 0) && (lda % 4 == 0) && (ldb % 4 == 0);
#define TILED_CALL(TA, TB, V)                                                                                   \
    tiled_gemm<BM, BN, BK, WARPS_M, LANES_M, TI, TO, TA, TB, V>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, As, Bs)
    if (vec) {
        if (transA) { if (transB) TILED_CALL(true, true, true); else TILED_CALL(true, false, true); }
        else { if (transB) TILED_CALL(false, true, true); else TILED_CALL(false, false, true); }
    } else {
        if (transA) { if (transB) TILED_CALL(true, true, false); else TILED_CALL(true, false, false); }
        else { if (transB) TILED_CALL(false, true, false); else TILED_CALL(false, false, false); }
    }
#undef TILED_CALL
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

// gemm_simt_*: 128 x 256 tiles, grid (ceil(n/256), ceil(m/128), batch); gemm_small_*: 16 x 16 tiles, grid
// (ceil(n/16), ceil(m/16), batch). Block 256, no dynamic smem.
#define SIMT_ENTRIES(SFX, TIN, TO)                                                                              \
    PRISM_KERNEL void __launch_bounds__(256, 1) gemm_simt_##SFX(GEMM_ARGS(TIN, TO)) {                          \
        tiled_entry<128, 256, 8, 2, 4, TIN, TO>(m, n, k, alpha, GEMM_PASS);                                     \
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
PRISM_KERNEL void __launch_bounds__(256, 2) gemm_simt64_f32_f32(GEMM_ARGS(float, float)) {
    tiled_entry<64, 128, 16, 2, 4, float, float>(m, n, k, alpha, GEMM_PASS);
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

// Split-K finish: C[i][j] = alpha * sum_s part[s][i][j] + beta * C[i][j] over `splits` packed m x n partial
// products (f32, one after another), summed in split order. beta == 0 never reads C. Grid-stride over the
// outputs: block 256, any grid.
PRISM_KERNEL void __launch_bounds__(256)
    gemm_splitk_reduce_f32(int m, int n, int splits, const float *part, float alpha, float beta, float *C, int ldc) {
    const long long outputs = (long long)m * n;
    for (long long at = blockIdx.x * 256ll + threadIdx.x; at < outputs; at += (long long)gridDim.x * 256) {
        float sum = 0.f;
        for (int s = 0; s < splits; ++s) sum += part[s * outputs + at];
        float *c = C + (at / n) * ldc + at % n;
        const float v = alpha * sum;
        *c = beta != 0.f ? fmaf(beta, *c, v) : v;
    }
}

// Copies `rows` rows of `width` bytes from src (rows src_pitch bytes apart) to dst (dst_pitch apart): the
// 128-byte-pitch copies of the sm_90 path. 16-byte moves when width, both pitches and both addresses are
// multiples of 16, else 2-byte moves (the callers' elements are 2 or 4 bytes). Grid-stride over rows
// (blockIdx.x + k * gridDim.x), threads along the row; block 256.
PRISM_KERNEL void __launch_bounds__(256)
    gemm_copy_rows(long long rows, long long width, const unsigned char *src, long long src_pitch, unsigned char *dst,
                   long long dst_pitch) {
    const bool vec = ((width | src_pitch | dst_pitch | (long long)src | (long long)dst) & 15) == 0;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const unsigned char *s = src + r * src_pitch;
        unsigned char *d = dst + r * dst_pitch;
        if (vec) {
            for (long long i = threadIdx.x * 16ll; i < width; i += 256 * 16ll)
                *reinterpret_cast<uint4 *>(d + i) = *reinterpret_cast<const uint4 *>(s + i);
        } else {
            for (long long i = threadIdx.x * 2ll; i < width; i += 256 * 2ll)
                *reinterpret_cast<unsigned short *>(d + i) = *reinterpret_cast<const unsigned short *>(s + i);
        }
    }
}
