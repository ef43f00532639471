// Experiment (DGEMM, after the H200 ncu of cuBLAS's sm90 kernel, README.md): a copy of cuda/gemm_f64.cu's DMMA
// kernel with the k-tile depth BK and the ring depth STAGES as template parameters, shaped like cuBLAS's
// `sm90_xmma_gemm_f64f64_f64f64_f64_nn_n_tilesize128x64x32_stage3_warpsize4x2x1_tensor16x8x16`: a 128 x 64 block
// tile over 8 warps of 32 x 32 (4 x 2), k tiles of 32 (two mma.m16n8k16.f64 k-substeps per stage), 3 or 4 stages
// of cp.async, one __syncthreads per stage; and the 4-warp twin (4 warps of 64 x 32 on 128 x 64, two blocks per SM:
// k 16 x 3 stages as cuBLAS's older H100 build, or k 32 x 2 stages, the most two blocks' shared memory holds).
// Included by bench.cu after cuda/gemm_f64.cu (it reuses dm_load, dmma_step, cp_async*, DM_GROUP from there).
//
// What differs from the product kernel besides BK / STAGES:
// - Loader: the copies of k tiles wholly inside k use addresses set up once: a pointer per operand that moves by
//   one k tile per load, 32-bit element offsets per chunk (chunk i = chunk 0 + i * RSTEP rows), shared-memory
//   destinations as immediates off a stage base. m/n limits are settled once per thread: rows of A (or columns of
//   B, K-contiguous) past m (n) re-read the last row in range (their products only reach rows of C that are not
//   stored); columns of an M/N-contiguous operand past the limit get a fixed byte count (0, or 8 of a 16-byte pair
//   with the rest zero-filled). Only the partial k tile, if k % BK != 0, goes through the product's fully checked
//   dm_load (k past the end must be zero), and it is taken first, in the prologue, so the k loop holds no
//   checked copies (k tiles summed in the order kfull, 0, 1, ..., kfull - 1: not bit for bit the product's sum).
// - Fragments: per k16 substep B's NJ x 4 doubles are read once and A's 8 doubles once per 16-row group, each
//   from a per-thread shared-memory base fixed before the k loop plus compile-time offsets (LDS [R + imm]).
//
// Shared-memory pitches (doubles), as the product's, valid for BK = 16 and 32: K-contiguous tiles LDK = BK + 4
// (36 for BK = 32), M/N-contiguous tiles MN + 4 (68 for B's 64, 132 for A's 128); all are 4 mod 16, and every
// row starts on 16 bytes (even pitch), as the 16-byte cp.async needs. A fragment read is an 8-byte LDS per lane;
// a warp's 256 bytes go in two 128-byte wavefronts, one per half-warp (lanes 0-15: g = lane / 4 in 0..3, t =
// lane % 4 in 0..3), conflict-free when the half-warp's 16 addresses are distinct mod 16 doubles (32 banks of
// 4 bytes = 16 doubles). K-contiguous: lane reads row (base + g), column (kk + t + 4q): address mod 16 =
// g * LDK + t = 4g + t, distinct for the 16 lanes. M/N-contiguous: row (kk + t + 4q), column (base + g):
// t * LDMN + g = 4t + g, distinct. The k-substep kk, the group q, the 16-row group i and the 8-column group j
// add the same offset to every lane, so the choice does not depend on BK (BK only sets LDK = BK + 4).
// 32-bit offsets: a chunk's offset within a tile is at most 128 * ld elements, so ld < 2^24.
#pragma once
#include <type_traits>

namespace k32 {

template <int BM_, int BN_, int WM_, int WN_, int BK_, int STAGES_> struct Tile {
    static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, BK = BK_, STAGES = STAGES_;
    static constexpr int THREADS = 32 * WM * WN, WTM = BM / WM, WTN = BN / WN, MI = WTM / 16, NJ = WTN / 8;
    static constexpr int LDK = BK + 4, LDA = BM + 4, LDB = BN + 4;
    // Doubles per stage for each operand: the larger of its two storage orders (any layout fits).
    static constexpr int A_SIZE = BM * LDK > BK * LDA ? BM * LDK : BK * LDA;
    static constexpr int B_SIZE = BN * LDK > BK * LDB ? BN * LDK : BK * LDB;
    static constexpr int STAGE = A_SIZE + B_SIZE, SMEM = STAGES * STAGE * 8;
    static_assert(BK % 16 == 0 && LDK % 16 == 4 && LDA % 16 == 4 && LDB % 16 == 4, "conflict-free pitches");
    static_assert(A_SIZE % 2 == 0 && STAGE % 2 == 0, "16-byte aligned operand tiles");
    static_assert(WTM % 16 == 0 && WTN % 8 == 0 && STAGES >= 2, "warp tile / ring");
    static_assert(SMEM <= 232448, "227 KB per block");
};

// Fast-path copies of one operand's tile for k tiles wholly inside k: ROWS x COLS with the COLS contiguous in
// global and shared memory (shared pitch SST), V doubles per copy, THREADS threads. ROWS_K: the rows run along k
// (the M/N-contiguous operand; each thread's column and so its byte count is fixed); else along m/n (the
// K-contiguous operand; all columns in range, rows clamped to the last row in range).
template <int ROWS, int COLS, int SST, int V, int THREADS, bool ROWS_K> struct Copier {
    static constexpr int CPR = COLS / V, N = ROWS * CPR / THREADS, RSTEP = THREADS / CPR;
    static_assert(THREADS % CPR == 0 && N * THREADS == ROWS * CPR, "tile / thread mismatch");
    const double *p;   // this thread's column in row 0 of the next k tile (ROWS_K) or of the tile (else)
    long long tstep;   // elements from one k tile to the next
    int off0, rowstep; // element offsets of chunk 0 and between chunks (RSTEP rows)
    int maxoff;        // !ROWS_K: offset of the last row in range
    int bytes;         // ROWS_K: bytes each copy reads
    uint32_t dst;      // byte offset of chunk 0 in a stage's tile

    // g: the operand; mn0 / mn_lim: the tile's first row of A (column of B) and m (n).
    __device__ __forceinline__ Copier(const double *g, int ld, int mn0, int mn_lim, int bk) {
        const int r0 = threadIdx.x / CPR, c = (threadIdx.x % CPR) * V;
        off0 = r0 * ld;
        rowstep = RSTEP * ld;
        dst = (r0 * SST + c) * 8;
        if constexpr (ROWS_K) {
            const int gc = mn0 + c;
            bytes = max(0, min(V, mn_lim - gc)) * 8;
            p = g + (bytes ? gc : mn0);  // a column in range when nothing is read
            tstep = (long long)bk * ld;
            maxoff = 0;
        } else {
            p = g + (long long)mn0 * ld + c;
            maxoff = (min(mn_lim - mn0, ROWS) - 1) * ld;  // the tile's last row in range; mn0 < mn_lim
            tstep = bk;
            bytes = V * 8;
        }
    }
    __device__ __forceinline__ void copy(uint32_t stage) {
#pragma unroll
        for (int i = 0; i < N; ++i) {
            int off = off0 + i * rowstep;
            if constexpr (!ROWS_K) off = min(off, maxoff);
            const double *src = p + off;
            const uint32_t d = stage + dst + i * RSTEP * SST * 8;
            if constexpr (V == 2) {
                if (ROWS_K && bytes == 8) {  // a pair cut by the limit: as dm_load, no 16-byte read past it
                    cp_async8(d, src, 8);
                    cp_async8(d + 8, src, 0);
                } else {
                    cp_async16(d, src, bytes);
                }
            } else {
                cp_async8(d, src, bytes);
            }
        }
        p += tstep;
    }
};

template <typename T, bool TA, bool TB, int V>
__device__ __forceinline__ void body(int m, int n, int k, double alpha, const double *A, int lda, const double *B,
                                     int ldb, double beta, double *C, int ldc, int m0, int n0) {
    extern __shared__ __align__(16) double k32_smem[];
    constexpr bool A_K = !TA, B_K = TB;  // K-contiguous storage of each operand
    constexpr int BK = T::BK, S = T::STAGES, MI = T::MI, NJ = T::NJ;
    // Strides (doubles) in shared memory along m (n) and along k of each operand's tile.
    constexpr int A_MS = A_K ? T::LDK : 1, A_KS = A_K ? 1 : T::LDA;
    constexpr int B_NS = B_K ? T::LDK : 1, B_KS = B_K ? 1 : T::LDB;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const int wm = (warp / T::WN) * T::WTM, wn = (warp % T::WN) * T::WTN;
    const int ktiles = (k + BK - 1) / BK, kfull = k / BK;

    using CA = std::conditional_t<A_K, Copier<T::BM, BK, T::LDK, V, T::THREADS, false>,
                                  Copier<BK, T::BM, T::LDA, V, T::THREADS, true>>;
    using CB = std::conditional_t<B_K, Copier<T::BN, BK, T::LDK, V, T::THREADS, false>,
                                  Copier<BK, T::BN, T::LDB, V, T::THREADS, true>>;
    CA ca(A, lda, m0, m, BK);
    CB cb(B, ldb, n0, n, BK);
    const uint32_t smem0 = s_u32(k32_smem);

    // k tiles in the order: the partial one (k0 = kfull * BK) if k % BK != 0, then the full ones from k0 = 0, so
    // that the checked copies run once, in the prologue, and the loop holds only the fast ones (a checked path
    // inside the loop had ptxas hoist its per-chunk limits out of the loop and spill them).
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
            double *pa = k32_smem, *pb = pa + T::A_SIZE;
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
        const double *fa = k32_smem + rs * T::STAGE + a_off, *fb = k32_smem + rs * T::STAGE + b_off;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            double b[NJ][4];
#pragma unroll
            for (int j = 0; j < NJ; ++j)
#pragma unroll
                for (int q = 0; q < 4; ++q) b[j][q] = fb[j * 8 * B_NS + (kk + 4 * q) * B_KS];
#pragma unroll
            for (int i = 0; i < MI; ++i) {
                double a[8];
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    a[2 * q] = fa[i * 16 * A_MS + (kk + 4 * q) * A_KS];
                    a[2 * q + 1] = fa[(i * 16 + 8) * A_MS + (kk + 4 * q) * A_KS];
                }
#pragma unroll
                for (int j = 0; j < NJ; ++j) dmma_step<4>(acc[i][j], a, b[j]);
            }
        }
        rs = rs + 1 == S ? 0 : rs + 1;
        ws = ws + 1 == S ? 0 : ws + 1;
    }
    cp_wait<0>();

#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int row = m0 + wm + i * 16 + g + (e >> 1) * 8;
                const int col = n0 + wn + j * 8 + 2 * t + (e & 1);
                if (row < m && col < n) {
                    double *p = C + (long long)row * ldc + col;
                    *p = beta == 0.0 ? alpha * acc[i][j][e] : fma(alpha, acc[i][j][e], beta * *p);
                }
            }
}

// The product's entry (batch offsets, grouped raster, 16- or 8-byte copies) around body. Launch: grid
// (ceil(n / BN), ceil(m / BM), batch), T::THREADS threads, T::SMEM bytes of dynamic shared memory.
template <typename T, bool TA, bool TB, int BLOCKS>
__global__ void __launch_bounds__(T::THREADS, BLOCKS)
    entry(int m, int n, int k, double alpha, const double *A, int lda, long long strideA, const double *B, int ldb,
          long long strideB, double beta, double *C, int ldc, long long strideC) {
    const long long z = blockIdx.z;
    A += z * strideA;
    B += z * strideB;
    C += z * strideC;
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
        body<T, TA, TB, 2>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, m0, n0);
    else
        body<T, TA, TB, 1>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, m0, n0);
}

// The candidates: 8 warps of 32 x 32 (cuBLAS sm90's shape) with 3 or 4 stages of k 32, one block per SM; 4 warps
// of 64 x 32, two blocks per SM, k 16 x 3 stages or k 32 x 2 stages.
using W8K32S3 = Tile<128, 64, 4, 2, 32, 3>;  // 165888 bytes
using W8K32S4 = Tile<128, 64, 4, 2, 32, 4>;  // 221184 bytes
using W4K16S3 = Tile<128, 64, 2, 2, 16, 3>;  //  92160 bytes (x 2 blocks)
using W4K32S2 = Tile<128, 64, 2, 2, 32, 2>;  // 110592 bytes (x 2 blocks: 221184 + 2 KB reserved of 228 KB)
static_assert(W8K32S3::SMEM == 165888 && W8K32S4::SMEM == 221184 && W4K16S3::SMEM == 92160 &&
                  W4K32S2::SMEM == 110592,
              "sizes quoted above");

}  // namespace k32
