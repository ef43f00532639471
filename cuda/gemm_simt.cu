// CUDA-core GEMMs: exact fp32 SGEMM (FFMA only), the SIMT fallback for bf16/f16 inputs, a small-shape kernel,
// and a batched f32 transpose used to feed the K-major-only TF32 wgmma kernel.
//
// C[m x n] (row-major, ldc) = alpha * op(A) * op(B) + beta * C; op(X) = X or X^T by transA/transB
// (A: m x k row-major, or k x m when transA; B: k x n row-major, or n x k when transB). Any m, n, k >= 1,
// any leading dimensions. Batch = gridDim.z with per-matrix strides. beta == 0 never reads C.
#include "gemm_common.cuh"

namespace {

// ---------------------------------------------------------------------------------------------------------
// Tiled SIMT GEMM: a BM x BN x BK block tile on WARPS_M x WARPS_N warps, each warp's lanes
// LANES_M x (32 / LANES_M), each thread a TM x TN block of outputs made of 4 x 4 quadrants (so every shared
// read is a conflict-free float4). Operand tiles are stored K-major ([BK][rows + 4]) in two shared buffers:
// the next tile is copied with cp.async while the current one is multiplied (one barrier per tile), and the
// next step's fragments are read from shared memory one step ahead.
// The main loop has no branch: the copies past the last tile read nothing (zero bytes), so the compiler can
// spread the copy instructions among the FMAs. With a branch around them they ran as one serial block per tile
// and SGEMM stayed at 0.90x cuBLAS; without it, 1.0x (notes/gemm.md).
// Instantiations: 128 x 256 x 8 (1 block per SM, the shape of cuBLAS's own H100 SGEMM) for grids of at least
// ~a wave; 64 x 128 x 16 (2 blocks per SM) for smaller ones; 64 x 64 x 16 on 4 warps for batches of matrices
// 64 wide; 32 x 32 x 8 on 2 warps for batches of small matrices, which the larger tiles mostly cover with padding
// (144 x 144: 42% of a 64 x 128 grid is inside).
constexpr int TILE_PAD = 4;

template <int BM_, int BN_, int BK_, int WARPS_M_, int WARPS_N_, int LANES_M_> struct SimtTile {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, WARPS_M = WARPS_M_, WARPS_N = WARPS_N_, LANES_M = LANES_M_;
    static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
};

// The thread's share of one operand tile [ROWS along M/N] x [BK along K]: G groups of 4 elements consecutive
// along the contiguous dimension of global memory. KCONT: K is that dimension (A not transposed, B
// transposed); such groups are copied into a staging slot and transposed into the K-major tile by the same
// thread (unstage), the others straight into place. Each group's pointer walks K by a constant step; which
// elements exist comes from a mask set once and the K left, and missing ones are zero-filled.
// f32 data: cp.async, one 16-byte copy per group when VEC (16-byte aligned groups that are whole, wholly
// outside the matrix, or the partial last group of a row padded to whole groups), else four 4-byte ones;
// 16-bit data: loaded, converted and stored by the thread (the fallback for GPUs without tensor cores).
template <int ROWS, int BK, bool KCONT, typename T, bool VEC, int THREADS> struct OperandFeed {
    static constexpr int GROUPS = ROWS * BK / 4;
    static constexpr int G = GROUPS / THREADS;
    static constexpr int PITCH = ROWS + TILE_PAD;
    static_assert(GROUPS % THREADS == 0, "every thread copies whole groups");

    const T *next[G];  // the group's first element in the next tile
    int inside[G];     // KCONT: 1 if the group's row exists, else 0; otherwise its elements that exist along M/N
    long long step;    // elements from one tile's group to the next tile's
    const T *base;     // a valid address for copies that read nothing

    __device__ __forceinline__ static int mn_of(int idx) { return KCONT ? idx / (BK / 4) : (idx % (ROWS / 4)) * 4; }
    __device__ __forceinline__ static int k_of(int idx) { return KCONT ? (idx % (BK / 4)) * 4 : idx / (ROWS / 4); }

    __device__ __forceinline__ OperandFeed(const T *g, long long ld, int mn0, int mn_lim) : step(KCONT ? BK : BK * ld), base(g) {
#pragma unroll
        for (int j = 0; j < G; ++j) {
            const int idx = threadIdx.x + j * THREADS;
            const int mn = mn0 + mn_of(idx), kk = k_of(idx);
            next[j] = g + (KCONT ? (long long)mn * ld + kk : (long long)kk * ld + mn);
            inside[j] = KCONT ? (mn < mn_lim) : max(0, min(4, mn_lim - mn));
        }
    }

    // Starts copying the next tile, whose first K index has k_left elements of K from it on (<= 0 past the
    // end), into `tile` or, for KCONT, into `stage`; then moves on by one tile.
    __device__ __forceinline__ void issue(float *tile, float4 *stage, int k_left) {
#pragma unroll
        for (int j = 0; j < G; ++j) {
            const int idx = threadIdx.x + j * THREADS;
            const int kk = k_of(idx);
            const int count = KCONT ? inside[j] * max(0, min(4, k_left - kk)) : (kk < k_left ? inside[j] : 0);
            float *dst = KCONT ? reinterpret_cast<float *>(stage + idx) : tile + kk * PITCH + mn_of(idx);
            copy_group(dst, next[j], count);
            next[j] += step;
        }
    }

    // The first `count` elements of the group at src into dst[0..4), zeros after them.
    __device__ __forceinline__ void copy_group(float *dst, const T *src, int count) const {
        if constexpr (sizeof(T) == 4 && VEC) {
            cp_async16(s_u32(dst), count ? src : base, 4 * count);  // count is 0 or 4
        } else if constexpr (sizeof(T) == 4) {
#pragma unroll
            for (int e = 0; e < 4; ++e) cp_async4(s_u32(dst + e), e < count ? src + e : base, e < count ? 4 : 0);
        } else {
            float v[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) v[e] = e < count ? to_f32<T>(src[e]) : 0.f;
            *reinterpret_cast<float4 *>(dst) = make_float4(v[0], v[1], v[2], v[3]);
        }
    }

    // KCONT, once this thread's copies are complete: moves its staged groups into the K-major tile.
    __device__ __forceinline__ void unstage(float *tile, const float4 *stage) const {
        if constexpr (KCONT) {
#pragma unroll
            for (int j = 0; j < G; ++j) {
                const int idx = threadIdx.x + j * THREADS;
                const float4 v = stage[idx];
                float *d = tile + k_of(idx) * PITCH + mn_of(idx);
                d[0] = v.x;
                d[PITCH] = v.y;
                d[2 * PITCH] = v.z;
                d[3 * PITCH] = v.w;
            }
        }
    }
};

// Shared memory of one block: two K-major tiles per operand and the staging slots of K-contiguous groups
// (A's first, then B's; the slot is reused every tile: its last read comes before the barrier that precedes
// the next copy into it).
template <int BM, int BN, int BK> struct TileBuffers {
    float a[2][BK][BM + TILE_PAD];
    float b[2][BK][BN + TILE_PAD];
    float4 stage[(BM + BN) * BK / 4];
};

template <typename Tile, typename TI, typename TO, bool TA, bool TB, bool VEC>
__device__ __forceinline__ void tiled_gemm(int m, int n, int k, float alpha, const TI *__restrict__ A, int lda,
                                           const TI *__restrict__ B, int ldb, float beta, TO *__restrict__ C, int ldc,
                                           TileBuffers<Tile::BM, Tile::BN, Tile::BK> &s) {
    constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, THREADS = Tile::THREADS;
    constexpr int WARPS_M = Tile::WARPS_M, WARPS_N = Tile::WARPS_N, LANES_M = Tile::LANES_M, LANES_N = 32 / LANES_M;
    constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // warp tile
    constexpr int TM = WM / LANES_M, TN = WN / LANES_N;  // thread tile
    constexpr int QM = TM / 4, QN = TN / 4;              // 4 x 4 quadrants, LANES * 4 apart
    static_assert(TM * LANES_M * WARPS_M == BM && TN * LANES_N * WARPS_N == BN, "warps and lanes do not cover the tile");
    static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tiles are made of 4 x 4 quadrants");
    static_assert(BK >= 2, "the staged groups are moved two steps before the tile's end");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = (warp / WARPS_N) * WM + (lane / LANES_N) * 4;
    const int col0 = (warp % WARPS_N) * WN + (lane % LANES_N) * 4;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int nk = (k + BK - 1) / BK;
    OperandFeed<BM, BK, !TA, TI, VEC, THREADS> feed_a(A, lda, m0, m);
    OperandFeed<BN, BK, TB, TI, VEC, THREADS> feed_b(B, ldb, n0, n);
    float4 *stage_a = s.stage, *stage_b = s.stage + BM * BK / 4;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

    feed_a.issue(&s.a[0][0][0], stage_a, k);
    feed_b.issue(&s.b[0][0][0], stage_b, k);
    cp_commit();
    cp_wait<0>();
    feed_a.unstage(&s.a[0][0][0], stage_a);
    feed_b.unstage(&s.b[0][0][0], stage_b);
    __syncthreads();

    float fa[2][TM], fb[2][TN];  // fragments of steps kk (slot kk & 1) and kk + 1
    auto load_fragments = [&](int buf, int kk, int slot) {
#pragma unroll
        for (int q = 0; q < QM; ++q) {
            const float4 f = *reinterpret_cast<const float4 *>(&s.a[buf][kk][row0 + q * LANES_M * 4]);
            fa[slot][4 * q] = f.x; fa[slot][4 * q + 1] = f.y; fa[slot][4 * q + 2] = f.z; fa[slot][4 * q + 3] = f.w;
        }
#pragma unroll
        for (int q = 0; q < QN; ++q) {
            const float4 f = *reinterpret_cast<const float4 *>(&s.b[buf][kk][col0 + q * LANES_N * 4]);
            fb[slot][4 * q] = f.x; fb[slot][4 * q + 1] = f.y; fb[slot][4 * q + 2] = f.z; fb[slot][4 * q + 3] = f.w;
        }
    };
    load_fragments(0, 0, 0);
    for (int kb = 0; kb < nk; ++kb) {
        const int cur = kb & 1, nxt = cur ^ 1;
        // Buffer nxt was last read before the previous tile's barrier.
        feed_a.issue(&s.a[nxt][0][0], stage_a, k - (kb + 1) * BK);
        feed_b.issue(&s.b[nxt][0][0], stage_b, k - (kb + 1) * BK);
        cp_commit();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            if (kk == BK - 2) {
                cp_wait<0>();
                feed_a.unstage(&s.a[nxt][0][0], stage_a);
                feed_b.unstage(&s.b[nxt][0][0], stage_b);
            }
            if (kk == BK - 1) __syncthreads();
            if (kk + 1 < BK) load_fragments(cur, kk + 1, (kk + 1) & 1);
            else load_fragments(nxt, 0, (kk + 1) & 1);
            // Odd rows walk the columns backwards (1-2% faster: operand reuse across row ends).
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int jj = 0; jj < TN; ++jj) {
                    const int j = (i & 1) ? TN - 1 - jj : jj;
                    acc[i][j] = fmaf(fa[kk & 1][i], fb[kk & 1][j], acc[i][j]);
                }
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

// Batch offsets, then the body for this call's layout and alignment (uniform branches). PADDED: the `_padded`
// entries, whose operands the launcher guarantees 16-byte copies (aligned bases, pitches of a multiple of 4
// elements, rows of whole groups or, for its own copies, padded to whole groups inside the allocation, so that a
// row's partial last group is one cp.async that reads only its valid bytes and zero-fills the rest).
template <typename Tile, typename TI, typename TO, bool PADDED = false>
__device__ __forceinline__ void tiled_entry(int m, int n, int k, float alpha, const TI *A, int lda, long long strideA,
                                            int transA, const TI *B, int ldb, long long strideB, int transB,
                                            float beta, TO *C, int ldc, long long strideC) {
    __shared__ __align__(16) TileBuffers<Tile::BM, Tile::BN, Tile::BK> tiles;
    const long long z = blockIdx.z;
    A += z * strideA;
    B += z * strideB;
    C += z * strideC;
    // 16-byte copies: aligned groups, and rows (along each operand's contiguous dimension) of whole groups.
    bool vec = PADDED;
    if constexpr (sizeof(TI) == 4 && !PADDED) {
        const int a_row = transA ? m : k, b_row = transB ? k : n;
        vec = ((((unsigned long long)A | (unsigned long long)B) & 15ull) == 0) && (lda % 4 == 0) && (ldb % 4 == 0) &&
              (a_row % 4 == 0) && (b_row % 4 == 0);
    }
#define TILED_CALL(TA, TB, V)                                                                                   \
    tiled_gemm<Tile, TI, TO, TA, TB, V>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, tiles)
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
                                           int transB, float beta, TO *C, int ldc, long long strideC,
                                           const Epilogue<TO> &epi) {
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
    epi.template fuse<1>(alpha, [&](int) -> float & { return acc; }, [&](int) { return col; });
    if (row < m && col < n) {
        TO *p = C + (long long)row * ldc + col;
        float v = alpha * acc;
        if (beta != 0.f) v = fmaf(beta, to_f32<TO>(*p), v);
        *p = from_f32<TO>(v);
    }
}

}  // namespace

// The plain kernels' arguments; gemm_small_* (which fuses the epilogue) also takes `bias, biasStride, act`.
#define GEMM_ARGS(TIN, TO)                                                                                      \
    int m, int n, int k, float alpha, const TIN *A, int lda, long long strideA, int transA, const TIN *B,       \
        int ldb, long long strideB, int transB, float beta, TO *C, int ldc, long long strideC
#define GEMM_PASS A, lda, strideA, transA, B, ldb, strideB, transB, beta, C, ldc, strideC

// gemm_simt_*: 128 x 256 tiles, grid (ceil(n/256), ceil(m/128), batch); gemm_small_*: 16 x 16 tiles, grid
// (ceil(n/16), ceil(m/16), batch). Block 256, no dynamic smem.
#define SIMT_ENTRIES(SFX, TIN, TO)                                                                              \
    PRISM_KERNEL void __launch_bounds__(256, 1) gemm_simt_##SFX(GEMM_ARGS(TIN, TO)) {                          \
        tiled_entry<SimtTile<128, 256, 8, 2, 4, 4>, TIN, TO>(m, n, k, alpha, GEMM_PASS);                        \
    }                                                                                                           \
    PRISM_KERNEL void __launch_bounds__(256)                                                                    \
        gemm_small_##SFX(GEMM_ARGS(TIN, TO), const TO *bias, long long biasStride, int act) {                   \
        small_gemm<TIN, TO>(m, n, k, alpha, GEMM_PASS, {bias, biasStride, act, n});                             \
    }

SIMT_ENTRIES(f32_f32, float, float)
SIMT_ENTRIES(bf16_bf16, __nv_bfloat16, __nv_bfloat16)
SIMT_ENTRIES(bf16_f32, __nv_bfloat16, float)
SIMT_ENTRIES(f16_f16, __half, __half)
SIMT_ENTRIES(f16_f32, __half, float)

// Exact fp32 with 64 x 128 tiles: grid (ceil(n/128), ceil(m/64), batch), block 256, no dynamic smem. The `_padded`
// entries of this and the 64 x 64 tile take operands that the launcher copied to whole 16-byte groups where the
// caller's were not (tiled_entry): 1.03-1.20x on odd shapes, copy included, against 4-byte copies (H100 and
// H200, notes/simt-padded/). Their own entries, so that the plain kernels' code stays as it was (a padded-rows flag
// in the plain kernels' alignment test moved their code and cost aligned products 4-5%).
PRISM_KERNEL void __launch_bounds__(256, 2) gemm_simt64_f32_f32(GEMM_ARGS(float, float)) {
    tiled_entry<SimtTile<64, 128, 16, 2, 4, 4>, float, float>(m, n, k, alpha, GEMM_PASS);
}
PRISM_KERNEL void __launch_bounds__(256, 2) gemm_simt64_f32_f32_padded(GEMM_ARGS(float, float)) {
    tiled_entry<SimtTile<64, 128, 16, 2, 4, 4>, float, float, true>(m, n, k, alpha, GEMM_PASS);
}

// Exact fp32 with 64 x 64 tiles on 4 warps (8 x 4 outputs per thread): batches whose matrices are 64 wide, which
// 64 x 128 tiles cover half with padding (candle's Llama prefill attention, 32 heads of 512 x 64 x 512: 36.7 us
// against 57.8 on 64 x 128 and cuBLAS's 42.5, H100, notes/simt-tiles/). grid (ceil(n/64), ceil(m/64), batch),
// block 128, no dynamic smem.
PRISM_KERNEL void __launch_bounds__(128, 4) gemm_simt64x64_f32_f32(GEMM_ARGS(float, float)) {
    tiled_entry<SimtTile<64, 64, 16, 2, 2, 4>, float, float>(m, n, k, alpha, GEMM_PASS);
}
PRISM_KERNEL void __launch_bounds__(128, 4) gemm_simt64x64_f32_f32_padded(GEMM_ARGS(float, float)) {
    tiled_entry<SimtTile<64, 64, 16, 2, 2, 4>, float, float, true>(m, n, k, alpha, GEMM_PASS);
}

// Exact fp32 with 32 x 32 tiles on 2 warps (4 x 4 outputs per thread), 16 blocks per SM: batches of small
// matrices (attention's 144 x 144 x 32: 1.28x cuBLAS where 64 x 128 tiles reach 0.88x, notes/batched-sgemm/).
// grid (ceil(n/32), ceil(m/32), batch), block 64, no dynamic smem.
PRISM_KERNEL void __launch_bounds__(64, 16) gemm_simt32_f32_f32(GEMM_ARGS(float, float)) {
    tiled_entry<SimtTile<32, 32, 8, 1, 2, 8>, float, float>(m, n, k, alpha, GEMM_PASS);
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
// products (f32, one after another), then the fused epilogue (batch 1), rounded once to C's type. beta == 0
// never reads C. Every run rounds alike. Grid-stride, block 256, any grid. gemm_splitk_reduce_<C's type>.
// - lanes == 1 (few slices, or outputs enough to fill the GPU): four consecutive outputs per thread, their
//   slices summed in order, with 16-byte loads when m * n is a multiple of 4 (every slice then starts
//   16-byte aligned);
// - lanes > 1 (2, 4 or 8; few outputs in many slices): `lanes` warps of a block per 32 outputs, warp l of
//   them adding slices l, l + lanes, ... in order, then the first adding the others' sums in order.
template <typename TO>
__device__ __forceinline__ void splitk_reduce(int m, int n, int splits, int lanes, const float *part, float alpha,
                                              float beta, TO *C, int ldc, const Epilogue<TO> &epi) {
    const long long outputs = (long long)m * n;
    if (lanes == 1) {
        const bool vec = outputs % 4 == 0 && prism_aligned16(part);
        for (long long at = (blockIdx.x * 256ll + threadIdx.x) * 4; at < outputs; at += (long long)gridDim.x * 1024) {
            float sum[4] = {0.f, 0.f, 0.f, 0.f};
            const int count = (int)min(outputs - at, 4ll);
            if (vec) {
#pragma unroll 4
                for (int s = 0; s < splits; ++s) {
                    const float4 v = *reinterpret_cast<const float4 *>(part + s * outputs + at);
                    sum[0] += v.x, sum[1] += v.y, sum[2] += v.z, sum[3] += v.w;
                }
            } else {
#pragma unroll 4
                for (int s = 0; s < splits; ++s)
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        if (e < count) sum[e] += part[s * outputs + at + e];
            }
            long long row = at / n;
            int col = (int)(at - row * n);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                if (e < count) epilogue_store(C + row * ldc + col, sum[e], alpha, beta, col, epi);
                if (++col == n) col = 0, ++row;
            }
        }
        return;
    }
    // Warp w of a block sums slices w % lanes, w % lanes + lanes, ... of 32 consecutive outputs (group
    // w / lanes), so each load of a warp is 128 contiguous bytes; the block's lanes then add up in order.
    __shared__ float lane_sums[8][32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, first = warp % lanes;
    const long long per_block = 32ll * (8 / lanes);
    for (long long base = blockIdx.x * per_block; base < outputs; base += (long long)gridDim.x * per_block) {
        const long long at = base + (warp / lanes) * 32 + lane;
        float sum = 0.f;
        if (at < outputs) {
#pragma unroll 4
            for (int s = first; s < splits; s += lanes) sum += part[s * outputs + at];
        }
        lane_sums[warp][lane] = sum;
        __syncthreads();
        if (first == 0 && at < outputs) {
            for (int l = 1; l < lanes; ++l) sum += lane_sums[warp + l][lane];
            const long long row = at / n;
            const int col = (int)(at - row * n);
            epilogue_store(C + row * ldc + col, sum, alpha, beta, col, epi);
        }
        __syncthreads();
    }
}
#define SPLITK_REDUCE(SFX, TO)                                                                                   \
    PRISM_KERNEL void __launch_bounds__(256)                                                                     \
        gemm_splitk_reduce_##SFX(int m, int n, int splits, int lanes, const float *part, float alpha, float beta, \
                                 TO *C, int ldc, const TO *bias, int act) {                                       \
        splitk_reduce<TO>(m, n, splits, lanes, part, alpha, beta, C, ldc, {bias, 0, act, n});                    \
    }
SPLITK_REDUCE(f32, float)
SPLITK_REDUCE(bf16, __nv_bfloat16)
SPLITK_REDUCE(f16, __half)

// The fused epilogue as a pass of its own, for GEMMs with beta != 0 (the stores fuse it only when C is not
// read): C[i][j] = epilogue(C[i][j]) on the m x n block of batch entry blockIdx.z. Grid-stride over the
// outputs: block 256, grid (any, 1, batch). gemm_epilogue_<C's type>.
template <typename TO>
__device__ __forceinline__ void epilogue_pass(int m, int n, TO *C, int ldc, long long strideC, const Epilogue<TO> &epi) {
    C += blockIdx.z * strideC;
    const long long outputs = (long long)m * n;
    for (long long at = blockIdx.x * 256ll + threadIdx.x; at < outputs; at += (long long)gridDim.x * 256) {
        TO *c = C + (at / n) * ldc + at % n;
        float v = to_f32<TO>(*c), one = 1.f;
        epi.template fuse<1>(one, [&](int) -> float & { return v; }, [&](int) { return (int)(at % n); });
        *c = from_f32<TO>(v);
    }
}
#define EPILOGUE_PASS(SFX, TO)                                                                                  \
    PRISM_KERNEL void __launch_bounds__(256) gemm_epilogue_##SFX(int m, int n, TO *C, int ldc, long long strideC, \
                                                                 const TO *bias, long long biasStride, int act) { \
        epilogue_pass<TO>(m, n, C, ldc, strideC, {bias, biasStride, act, n});                                   \
    }
EPILOGUE_PASS(f32, float)
EPILOGUE_PASS(bf16, __nv_bfloat16)
EPILOGUE_PASS(f16, __half)

// Copies `rows` rows of `width` bytes from src (rows src_pitch bytes apart) to dst (dst_pitch apart): the
// 128-byte-pitch copies of the sm_90 path. The rows are cut into 16-byte chunks, numbered over all rows so
// that a few long rows or many short ones spread over the whole grid (grid-stride, block 256). A chunk is
// read in the widest units the source's alignment allows (ALIGN bytes: the least alignment of src and
// src_pitch) and written with one 16-byte store when dst and dst_pitch are multiples of 16; a row's last,
// shorter chunk and a misaligned destination move 2 bytes at a time (the callers' elements are 2 or 4
// bytes, so width and both pitches are even).
template <int ALIGN, typename Index>
__device__ __forceinline__ void copy_row_chunks(Index rows, Index width, const unsigned char *src, Index src_pitch,
                                                unsigned char *dst, Index dst_pitch) {
    const Index per_row = (width + 15) / 16;
    const Index chunks = rows * per_row;
    const bool wide_stores = (((unsigned long long)dst | (unsigned long long)dst_pitch) & 15) == 0;
    for (Index c = blockIdx.x * (Index)256 + threadIdx.x; c < chunks; c += (Index)gridDim.x * 256) {
        const Index r = c / per_row, at = (c - r * per_row) * 16;
        const unsigned char *s = src + r * src_pitch + at;
        unsigned char *d = dst + r * dst_pitch + at;
        if (wide_stores && at + 16 <= width) {
            constexpr int UNITS = 16 / ALIGN;
            using Unit = typename std::conditional<
                ALIGN == 16, uint4,
                typename std::conditional<ALIGN == 8, uint2,
                                          typename std::conditional<ALIGN == 4, unsigned, unsigned short>::type>::type>::type;
            union {
                Unit unit[UNITS];
                uint4 whole;
            } v;
#pragma unroll
            for (int u = 0; u < UNITS; ++u) v.unit[u] = reinterpret_cast<const Unit *>(s)[u];
            *reinterpret_cast<uint4 *>(d) = v.whole;
        } else {
            const Index end = min(width - at, (Index)16);
            for (Index i = 0; i < end; i += 2)
                *reinterpret_cast<unsigned short *>(d + i) = *reinterpret_cast<const unsigned short *>(s + i);
        }
    }
}
template <typename Index>
__device__ __forceinline__ void copy_rows_in(Index rows, Index width, const unsigned char *src, Index src_pitch,
                                             unsigned char *dst, Index dst_pitch) {
    const unsigned long long bits = (unsigned long long)src | (unsigned long long)src_pitch;
    if ((bits & 15) == 0) copy_row_chunks<16>(rows, width, src, src_pitch, dst, dst_pitch);
    else if ((bits & 7) == 0) copy_row_chunks<8>(rows, width, src, src_pitch, dst, dst_pitch);
    else if ((bits & 3) == 0) copy_row_chunks<4>(rows, width, src, src_pitch, dst, dst_pitch);
    else copy_row_chunks<2>(rows, width, src, src_pitch, dst, dst_pitch);
}
// One block of rows to copy (its Rust twin: `RowCopy` in src/kernels/gemm/copies.rs, the same layout).
struct RowCopy {
    long long rows, width;
    const unsigned char *src;
    long long src_pitch;
    unsigned char *dst;
    long long dst_pitch;
};
// grid.y copies: `first`, then `second` when grid.y is 2 (both operands of one GEMM in one launch, which
// saves a launch in front of the GEMM on the small odd shapes that copy both).
PRISM_KERNEL void __launch_bounds__(256) gemm_copy_rows(RowCopy first, RowCopy second) {
    prism_allow_dependent_grid();  // the sm_90 GEMM after it launches as a dependent
    const RowCopy c = blockIdx.y == 0 ? first : second;
    // 32-bit chunk arithmetic (its divisions are far cheaper) wherever every offset fits.
    const long long chunks = c.rows * ((c.width + 15) / 16) + (long long)gridDim.x * 256;
    const long long span = max(c.rows * max(c.src_pitch, c.dst_pitch), chunks * 16);
    if (span < (1ll << 32))
        copy_rows_in<unsigned>(c.rows, c.width, c.src, c.src_pitch, c.dst, c.dst_pitch);
    else
        copy_rows_in<unsigned long long>(c.rows, c.width, c.src, c.src_pitch, c.dst, c.dst_pitch);
}
