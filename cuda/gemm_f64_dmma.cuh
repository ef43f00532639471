// The FP64 tensor-core GEMM kernels (DMMA through mma.sync), for gemm_f64.cu and gemm_f64_sm90.cu, which each
// define their entry points with DMMA_LAYOUTS (gemm_f64.cu's header comment describes them).
#pragma once
#include "gemm_common.cuh"

namespace {

constexpr int DM_BK = 16;
// Row tiles that consecutive blocks sweep before moving to the next columns (L2 reuse of B).
constexpr int DM_GROUP = 8;

// A block tile of BM x BN outputs computed by WM x WN warps, each owning (BM / WM) x (BN / WN), k tiles of DM_BK
// in a ring of STAGES_ stages.
// Shared-memory pitches (doubles): K-contiguous tiles LDK = DM_BK + 4, M/N-contiguous ones BM + 4 or BN + 4; all
// 4 mod 16, and even, so every row starts on 16 bytes. A fragment read is an 8-byte LDS per lane, two 128-byte
// wavefronts per warp (one per half-warp: g = lane / 4 in 0..3, t = lane % 4), conflict-free when a half-warp's
// 16 addresses are distinct mod 16 doubles: K-contiguous, row (base + g), column (kk + t + 4q) gives 4g + t;
// M/N-contiguous, row (kk + t + 4q), column (base + g) gives 4t + g.
template <int BM_, int BN_, int WM_, int WN_, int STAGES_ = 3, int MMA_K_ = 16> struct DmTile {
    static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, STAGES = STAGES_, MMA_K = MMA_K_;
    static constexpr int THREADS = 32 * WM * WN, WTM = BM / WM, WTN = BN / WN, MI = WTM / 16, NJ = WTN / 8;
    static constexpr int LDK = DM_BK + 4, LDA = BM + 4, LDB = BN + 4;
    // Doubles per stage for each operand: the larger of its two storage orders (any layout fits).
    static constexpr int A_SIZE = BM * LDK > DM_BK * LDA ? BM * LDK : DM_BK * LDA;
    static constexpr int B_SIZE = BN * LDK > DM_BK * LDB ? BN * LDK : DM_BK * LDB;
    static constexpr int STAGE = A_SIZE + B_SIZE, SMEM = STAGES * STAGE * 8;
    static_assert(LDK % 16 == 4 && LDA % 16 == 4 && LDB % 16 == 4, "conflict-free pitches");
    static_assert(A_SIZE % 2 == 0 && STAGE % 2 == 0, "16-byte aligned operand tiles");
    static_assert(WTM % 16 == 0 && WTN % 8 == 0, "warp tile");
};
// 4 warps of 64 x 32, two blocks per SM: 0.88-0.94x cuBLAS at 2048-8192 on an H200, where the 8-warp 128 x 128
// tile made 0.65-0.79x and an 8-warp 128 x 64 with k 32 (cuBLAS sm90's shape) 0.70-0.77x (notes/dgemm/).
using Dm128 = DmTile<128, 64, 2, 2>;
// The 64-tile (4 warps of 32 x 32) on m16n8k4: 2-14% faster than on m16n8k16 on most shapes it serves (the
// 128-tile loses 5-10% with it; notes/dgemm/bench.cu).
using Dm64 = DmTile<64, 64, 2, 2, 3, 4>;
// Small and skinny products (a few waves of blocks or less) on cuBLAS's small tiles (ncu: 32 x 32 and 32 x 64 over
// 4 warps): 32 x 64 (warps of 16 x 32, on m16n8k4) and 32 x 32 (16 x 16), 4-stage rings; 1.1-2x the 64-tile's
// speed where its blocks leave multiprocessors idle (notes/dgemm-small/).
using Dm32 = DmTile<32, 64, 2, 2, 4, 4>;
using Dm32x32 = DmTile<32, 32, 2, 2, 4>;
static_assert(Dm128::SMEM == 92160 && Dm64::SMEM == 61440 && Dm32::SMEM == 61440 && Dm32x32::SMEM == 40960,
              "the launcher's shared-memory sizes");

__device__ __forceinline__ void cp_async8(uint32_t dst, const void *src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

// Copies V doubles (1 or 2) from global src to shared dst, reading `bytes` of them (0 reads nothing; src must still
// be a valid address) and zero-filling the rest. A pair cut by a limit (the matrix's last element, perhaps the
// allocation's) is one 8-byte copy and one zero fill: a 16-byte copy with an 8-byte source still counts as a
// 16-byte read for compute-sanitizer, past the end of the buffer.
template <int V> __device__ __forceinline__ void dm_copy(uint32_t dst, const double *src, int bytes) {
    if constexpr (V == 2) {
        if (bytes == 8) {
            cp_async8(dst, src, 8);
            cp_async8(dst + 8, src, 0);
        } else {
            cp_async16(dst, src, bytes);
        }
    } else {
        cp_async8(dst, src, bytes);
    }
}

// Copies a ROWS x COLS tile whose COLS run contiguously in global memory (row pitch ld) to shared memory
// (row pitch SST), V doubles per copy, by THREADS threads; elements at rows >= row_lim or columns >= col_lim
// become zero. Every element checked: the partial k tile's copy.
template <int ROWS, int COLS, int SST, int V, int THREADS>
__device__ __forceinline__ void dm_load(double *s, const double *g, long long ld, int row0, int col0, int row_lim,
                                        int col_lim) {
    constexpr int CPR = COLS / V, CHUNKS = ROWS * CPR;
    static_assert(CHUNKS % THREADS == 0, "tile / thread mismatch");
#pragma unroll
    for (int i = 0; i < CHUNKS / THREADS; ++i) {
        const int ch = threadIdx.x + i * THREADS;
        const int r = ch / CPR, c = (ch % CPR) * V;
        const int gr = row0 + r, gc = col0 + c;
        int bytes = 0;
        const double *src = g;
        if (gr < row_lim && gc < col_lim) {
            bytes = min(V, col_lim - gc) * 8;
            src = g + (long long)gr * ld + gc;
        }
        dm_copy<V>(s_u32(s + r * SST + c), src, bytes);
    }
}

// The copies of one operand's tile for k tiles wholly inside k: ROWS x COLS with the COLS contiguous in global
// and shared memory (shared pitch SST), V doubles per copy, THREADS threads. ROWS_K: the rows run along k (the
// M/N-contiguous operand; each thread's column, and so its byte count, is fixed); else along m or n (the
// K-contiguous operand; every column in range, rows past the limit zero-filled from the last row in range's
// address: re-reading that row instead made a decode product's 1-row A tile cost 64 rows of L2 reads, half its
// speed). Offsets are 32-bit: at most 127 * ld elements.
template <int ROWS, int COLS, int SST, int V, int THREADS, bool ROWS_K> struct DmCopier {
    static constexpr int CPR = COLS / V, N = ROWS * CPR / THREADS, RSTEP = THREADS / CPR;
    static_assert(THREADS % CPR == 0 && N * THREADS == ROWS * CPR, "tile / thread mismatch");
    const double *p;    // this thread's column in row 0 of the next k tile (ROWS_K) or of the tile (else)
    long long tstep;    // elements from one k tile to the next
    int off0, rowstep;  // element offsets of chunk 0 and between chunks (RSTEP rows)
    int maxoff;         // !ROWS_K: offset of the tile's last row in range
    int bytes;          // ROWS_K: bytes each copy reads
    uint32_t dst;       // byte offset of chunk 0 in a stage's tile

    // g: the operand; mn0 / mn_lim: the tile's first row of A (column of B) and m (n); mn0 < mn_lim.
    __device__ __forceinline__ DmCopier(const double *g, int ld, int mn0, int mn_lim) {
        const int r0 = threadIdx.x / CPR, c = (threadIdx.x % CPR) * V;
        off0 = r0 * ld;
        rowstep = RSTEP * ld;
        dst = (r0 * SST + c) * 8;
        if constexpr (ROWS_K) {
            const int gc = mn0 + c;
            bytes = max(0, min(V, mn_lim - gc)) * 8;
            p = g + (bytes ? gc : mn0);  // a column in range even when nothing is read
            tstep = (long long)DM_BK * ld;
            maxoff = 0;
        } else {
            p = g + (long long)mn0 * ld + c;
            maxoff = (min(mn_lim - mn0, ROWS) - 1) * ld;
            tstep = DM_BK;
            bytes = V * 8;
        }
    }
    __device__ __forceinline__ void copy(uint32_t stage) {
#pragma unroll
        for (int i = 0; i < N; ++i) {
            int off = off0 + i * rowstep, read = ROWS_K ? bytes : V * 8;
            if (!ROWS_K && off > maxoff) off = maxoff, read = 0;  // past the limit: zeros, no read
            dm_copy<V>(stage + dst + i * RSTEP * SST * 8, p + off, read);
        }
        p += tstep;
    }
};

// d += a (16 x 16) * b (16 x 8) with g = lane / 4, t = lane % 4: a[2q + h] = (g + 8h, t + 4q), b[q] = (t + 4q, g),
// d = {(g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)}. A sum over k does not depend on which k each register slot
// carries as long as A's and B's agree, so the same map serves every instruction: on sm_90 one mma.m16n8k16
// (MMA_K 16), two m16n8k8 (the k8 halves q = 0, 1 and 2, 3) or four m16n8k4; before sm_90 eight m8n8k4.
template <int MMA_K>
__device__ __forceinline__ void dmma_k16(double (&d)[4], const double (&a)[8], const double (&b)[4]) {
#if __CUDA_ARCH__ >= 900
    if constexpr (MMA_K == 16) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, "
                     "{%12,%13,%14,%15}, {%0,%1,%2,%3};"
                     : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                     : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
                       "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
    } else if constexpr (MMA_K == 8) {
#pragma unroll
        for (int half = 0; half < 2; ++half)
            asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                         "{%0,%1,%2,%3};"
                         : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                         : "d"(a[4 * half]), "d"(a[4 * half + 1]), "d"(a[4 * half + 2]), "d"(a[4 * half + 3]),
                           "d"(b[2 * half]), "d"(b[2 * half + 1]));
    } else {
        static_assert(MMA_K == 4, "mma k of 16, 8 or 4");
#pragma unroll
        for (int q = 0; q < 4; ++q)
            asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                         "{%0,%1,%2,%3};"
                         : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                         : "d"(a[2 * q]), "d"(a[2 * q + 1]), "d"(b[q]));
    }
#else
    // m8n8k4: a = (g, t), b = (t, g), d = {(g, 2t), (g, 2t+1)}; rows g and g + 8, k groups q.
#pragma unroll
    for (int q = 0; q < 4; ++q) {
#pragma unroll
        for (int h = 0; h < 2; ++h)
            asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                         : "+d"(d[2 * h]), "+d"(d[2 * h + 1])
                         : "d"(a[2 * q + h]), "d"(b[q]));
    }
#endif
}

template <typename T, bool TA, bool TB, int V>
__device__ __forceinline__ void dmma_body(int m, int n, int k, double alpha, const double *A, int lda,
                                          const double *B, int ldb, double beta, double *C, int ldc, int m0, int n0) {
    extern __shared__ __align__(16) double dm_smem[];
    constexpr bool A_K = !TA, B_K = TB;  // K-contiguous storage of each operand
    constexpr int BK = DM_BK, S = T::STAGES, MI = T::MI, NJ = T::NJ;
    // Strides (doubles) in shared memory along m (n) and along k of each operand's tile.
    constexpr int A_MS = A_K ? T::LDK : 1, A_KS = A_K ? 1 : T::LDA;
    constexpr int B_NS = B_K ? T::LDK : 1, B_KS = B_K ? 1 : T::LDB;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const int wm = (warp / T::WN) * T::WTM, wn = (warp % T::WN) * T::WTN;
    const int ktiles = (k + BK - 1) / BK, kfull = k / BK;

    using CA = std::conditional_t<A_K, DmCopier<T::BM, BK, T::LDK, V, T::THREADS, false>,
                                  DmCopier<BK, T::BM, T::LDA, V, T::THREADS, true>>;
    using CB = std::conditional_t<B_K, DmCopier<T::BN, BK, T::LDK, V, T::THREADS, false>,
                                  DmCopier<BK, T::BN, T::LDB, V, T::THREADS, true>>;
    CA ca(A, lda, m0, m);
    CB cb(B, ldb, n0, n);
    const uint32_t smem0 = s_u32(dm_smem);

    // k tiles in the order: the partial one (k0 = kfull * BK) if k % BK != 0, then the full ones from k0 = 0, so
    // that the checked copies run once, in the prologue (a checked path inside the loop had ptxas hoist its
    // per-chunk limits out of the loop and spill them). The sum's order is the same for every tile and layout.
    const bool partial = kfull < ktiles;
    auto load_fast = [&](int s) {
        const uint32_t sa = smem0 + s * (T::STAGE * 8);
        ca.copy(sa);
        cb.copy(sa + T::A_SIZE * 8);
    };
    auto load_first = [&](int s) {
        if (s > 0 || !partial) {
            load_fast(s);
        } else {  // the partial k tile: every element checked, k past the end zero-filled
            double *pa = dm_smem, *pb = pa + T::A_SIZE;
            const int k0 = kfull * BK;
            if constexpr (A_K)
                dm_load<T::BM, BK, T::LDK, V, T::THREADS>(pa, A, lda, m0, k0, m, k);
            else
                dm_load<BK, T::BM, T::LDA, V, T::THREADS>(pa, A, lda, k0, m0, k, m);
            if constexpr (B_K)
                dm_load<T::BN, BK, T::LDK, V, T::THREADS>(pb, B, ldb, n0, k0, n, k);
            else
                dm_load<BK, T::BN, T::LDB, V, T::THREADS>(pb, B, ldb, k0, n0, k, n);
        }
    };

    // This thread's first fragment element in a stage: A (row wm + g, k t), B (column wn + g, k t).
    const int a_off = (wm + g) * A_MS + t * A_KS;
    const int b_off = T::A_SIZE + (wn + g) * B_NS + t * B_KS;

    double acc[MI][NJ][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0;

#pragma unroll
    for (int s = 0; s < S - 1; ++s) {
        if (s < ktiles) load_first(s);
        cp_commit();
    }
    int rs = 0, ws = S - 1;  // stages read and written this iteration
    for (int kt = 0; kt < ktiles; ++kt) {
        cp_wait<S - 2>();
        __syncthreads();  // stage kt is visible to all; stage kt - 1 (= ws) is no longer read
        if (kt + S - 1 < ktiles) load_fast(ws);
        cp_commit();
        const double *fa = dm_smem + rs * T::STAGE + a_off, *fb = dm_smem + rs * T::STAGE + b_off;
        double b[NJ][4];
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) b[j][q] = fb[j * 8 * B_NS + 4 * q * B_KS];
        // A's fragments one 16-row group at a time (fewer live registers than all at once).
#pragma unroll
        for (int i = 0; i < MI; ++i) {
            double a[8];
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                a[2 * q] = fa[i * 16 * A_MS + 4 * q * A_KS];
                a[2 * q + 1] = fa[(i * 16 + 8) * A_MS + 4 * q * A_KS];
            }
#pragma unroll
            for (int j = 0; j < NJ; ++j) dmma_k16<T::MMA_K>(acc[i][j], a, b[j]);
        }
        rs = rs + 1 == S ? 0 : rs + 1;
        ws = ws + 1 == S ? 0 : ws + 1;
    }
    cp_wait<0>();

    // Each lane holds C's columns (2t, 2t + 1) of rows g and g + 8: one 16-byte store a pair where C's rows
    // keep pairs 16-byte aligned (half the stores: the products whose time is their stores, k <= 256, are held
    // by their number), else element by element. The choice is made once, outside the loops.
    auto store = [&](auto store_pair) {
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int j = 0; j < NJ; ++j)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int row = m0 + wm + i * 16 + g + h * 8, col = n0 + wn + j * 8 + 2 * t;
                    if (row < m && col < n)
                        store_pair(C + (long long)row * ldc + col, col + 1 < n, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                }
    };
    auto scaled = [&](double v, const double *p) { return beta == 0.0 ? alpha * v : fma(alpha, v, beta * *p); };
    if (prism_aligned16(C) && ldc % 2 == 0) {
        store([&](double *p, bool both, double v0, double v1) {
            if (both) {
                double2 out = make_double2(alpha * v0, alpha * v1);
                if (beta != 0.0) {
                    const double2 old = *reinterpret_cast<const double2 *>(p);
                    out = make_double2(fma(alpha, v0, beta * old.x), fma(alpha, v1, beta * old.y));
                }
                *reinterpret_cast<double2 *>(p) = out;
            } else {
                p[0] = scaled(v0, p);
            }
        });
    } else {
        store([&](double *p, bool both, double v0, double v1) {
            p[0] = scaled(v0, p);
            if (both) p[1] = scaled(v1, p + 1);
        });
    }
}

template <typename T, bool TA, bool TB>
__device__ __forceinline__ void dmma_kernel(int m, int n, int k, double alpha, const double *A, int lda,
                                            long long strideA, const double *B, int ldb, long long strideB,
                                            double beta, double *C, int ldc, long long strideC) {
    const long long z = blockIdx.z;
    A += z * strideA;
    B += z * strideB;
    C += z * strideC;
    // Grouped raster: DM_GROUP row tiles per sweep over the column tiles.
    const long long tiles_n = gridDim.x, tiles_m = gridDim.y;
    const long long id = (long long)blockIdx.y * tiles_n + blockIdx.x;
    const long long per_group = DM_GROUP * tiles_n;
    const long long first = (id / per_group) * DM_GROUP;
    const long long rows = min(tiles_m - first, (long long)DM_GROUP);
    const int tm = (int)(first + (id % per_group) % rows), tn = (int)((id % per_group) / rows);
    const int m0 = tm * T::BM, n0 = tn * T::BN;
    const bool aligned = prism_aligned16(A) && prism_aligned16(B) && lda % 2 == 0 && ldb % 2 == 0 &&
                         strideA % 2 == 0 && strideB % 2 == 0;
    if (aligned)
        dmma_body<T, TA, TB, 2>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, m0, n0);
    else
        dmma_body<T, TA, TB, 1>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, m0, n0);
}

}  // namespace

#define DMMA_ENTRY(NAME, TILE, BLOCKS, TA, TB)                                                                     \
    PRISM_KERNEL void __launch_bounds__(TILE::THREADS, BLOCKS)                                                     \
        NAME(int m, int n, int k, double alpha, const double *A, int lda, long long strideA, const double *B,      \
             int ldb, long long strideB, double beta, double *C, int ldc, long long strideC) {                     \
        dmma_kernel<TILE, TA, TB>(m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC);      \
    }
#define DMMA_LAYOUTS(PREFIX, TILE, BLOCKS)                                                                         \
    DMMA_ENTRY(PREFIX##_nn, TILE, BLOCKS, false, false)                                                            \
    DMMA_ENTRY(PREFIX##_nt, TILE, BLOCKS, false, true)                                                             \
    DMMA_ENTRY(PREFIX##_tn, TILE, BLOCKS, true, false)                                                             \
    DMMA_ENTRY(PREFIX##_tt, TILE, BLOCKS, true, true)
