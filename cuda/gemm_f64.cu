// Double-precision GEMM: C[m x n] (row-major, ldc) = alpha * op(A) * op(B) + beta * C, f64 throughout
// (scalars, products, accumulation). op(X) = X or X^T: A is m x k row-major, or k x m for the `t` layouts;
// B is k x n, or n x k. Batch = gridDim.z, entry z at A + z*strideA, B + z*strideB, C + z*strideC (A and B
// strides may be 0). beta == 0 never reads C. Any m, n >= 1, k >= 0.
//
// gemm_f64_dmma{,64}_{nn,nt,tn,tt} (sm_80+, FP64 tensor cores through mma.sync): square block tiles of 128
// (8 warps of 64 x 32, 256 threads, 122880 bytes of dynamic shared memory) or 64 (4 warps of 32 x 32, 128
// threads, 61440 bytes: for products whose 128-tiles fill less than a wave), k-steps of 16, a 3-stage cp.async
// ring (16-byte copies when every base, leading dimension and batch stride is even in doubles, else 8-byte
// copies; out-of-range elements zero-filled). Tiles are kept in shared memory as stored in global memory (K- or
// M/N-contiguous), padded so that fragment reads hit distinct banks; the products on mma.m16n8k8 (128) or
// m16n8k16 (64) on sm_90, m8n8k4 before. Launch: grid (ceil(n/tile), ceil(m/tile), batch).
// Split-K runs them on slices of k as batch entries (alpha 1, beta 0, packed m x n partial products), then
// gemm_f64_splitk_reduce sums the slices in order.
//
// gemm_f64_simt (any device, small problems): one output per thread from 16 x 16 shared tiles, transposes as
// int flags. Launch: grid (ceil(n/16), ceil(m/16), batch), block 256, no dynamic smem.
#include "gemm_common.cuh"

namespace {

constexpr int DM_BK = 16, DM_STAGES = 3;
// Pitch (doubles) of tiles stored K-contiguous (rows of 16): 4 mod 16, so the fragment reads of a half-warp
// (4 rows x 4 columns) hit 16 distinct 8-byte slots.
constexpr int DM_LDK = DM_BK + 4;
// Row tiles that consecutive blocks sweep before moving to the next columns (L2 reuse of B).
constexpr int DM_GROUP = 8;

// Each operand's tile in shared memory for one stage: MN rows or columns by DM_BK, stored as in global memory.
template <int MN> struct DmOperand {
    // Pitch of the tile stored M/N-contiguous (rows of MN): 4 mod 16 doubles, so the fragment reads of a
    // half-warp (4 rows x 4 columns) hit 16 distinct 8-byte slots.
    static constexpr int LDMN = MN + 4;
    // Doubles per stage: the larger of the two storage orders.
    static constexpr int SIZE = (MN * DM_LDK > DM_BK * LDMN) ? MN * DM_LDK : DM_BK * LDMN;
    static_assert(LDMN % 16 == 4, "pitch");
};

// A block tile of BM x BN outputs computed by WM x WN warps, each owning (BM / WM) x (BN / WN), with mma k-steps
// of KSTEP (Q = KSTEP / 4 groups of 4 along k).
template <int BM_, int BN_, int WM, int WN, int KSTEP_> struct DmTile {
    static constexpr int BM = BM_, BN = BN_, THREADS = 32 * WM * WN, WTM = BM / WM, WTN = BN / WN;
    static constexpr int KSTEP = KSTEP_, Q = KSTEP / 4;
    static constexpr int MI = WTM / 16, NJ = WTN / 8;  // mma tiles per warp
    using A = DmOperand<BM>;
    using B = DmOperand<BN>;
    static constexpr int STAGE = A::SIZE + B::SIZE;
    static constexpr int SMEM = DM_STAGES * STAGE * 8;
    static_assert(WTM % 16 == 0 && WTN % 8 == 0, "warp tile");
};
// k16 steps speed the 64-tile by 3-4% on an H100; the 128-tile spills with them and loses 1-2%
// (notes/dgemm/).
using Dm128 = DmTile<128, 128, 2, 4, 8>;
using Dm64 = DmTile<64, 64, 2, 2, 16>;
static_assert(Dm128::SMEM == 122880 && Dm64::SMEM == 61440, "the launcher's shared-memory sizes");

__device__ __forceinline__ void cp_async8(uint32_t dst, const void *src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

// Copies a ROWS x COLS tile whose COLS run contiguously in global memory (row pitch ld) to shared memory
// (row pitch SST), V doubles per copy, by THREADS threads; elements at rows >= row_lim or columns >= col_lim
// become zero.
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
        const uint32_t dst = s_u32(s + r * SST + c);
        if constexpr (V == 2) {
            // A pair cut by the limit (the matrix's last element, perhaps the allocation's) is copied as
            // one 8-byte copy and one zero fill: a 16-byte copy with an 8-byte source still counts as a
            // 16-byte read for compute-sanitizer, past the end of the buffer.
            if (bytes == 8) {
                cp_async8(dst, src, 8);
                cp_async8(dst + 8, g, 0);
            } else {
                cp_async16(dst, src, bytes);
            }
        } else {
            cp_async8(dst, src, bytes);
        }
    }
}

// One operand's tile (MN = its rows of A or columns of B) for the k-step at k0, by THREADS threads. K_CONTIGUOUS:
// A as stored (m x k) or B transposed (n x k); M/N-contiguous otherwise.
template <int MN, bool K_CONTIGUOUS, int V, int THREADS>
__device__ __forceinline__ void dm_load_operand(double *s, const double *g, long long ld, int mn0, int k0, int mn_lim,
                                                int k_lim) {
    if constexpr (K_CONTIGUOUS)
        dm_load<MN, DM_BK, DM_LDK, V, THREADS>(s, g, ld, mn0, k0, mn_lim, k_lim);
    else
        dm_load<DM_BK, MN, DmOperand<MN>::LDMN, V, THREADS>(s, g, ld, k0, mn0, k_lim, mn_lim);
}

// Element (mn, kk) of an operand tile of MN in shared memory, in the storage order dm_load_operand used.
template <int MN, bool K_CONTIGUOUS>
__device__ __forceinline__ double dm_at(const double *s, int mn, int kk) {
    return K_CONTIGUOUS ? s[mn * DM_LDK + kk] : s[kk * DmOperand<MN>::LDMN + mn];
}

// d += a (16 x 4Q) * b (4Q x 8) with g = lane / 4, t = lane % 4: a[2q + h] = (g + 8h, t + 4q), b[q] = (t + 4q, g),
// d = {(g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)}. A sum over k does not depend on which k each register slot
// carries as long as A's and B's agree, so the same map serves every shape. On sm_90 one mma.m16n8k16 (Q = 4)
// or m16n8k8 (Q = 2); before, 2Q m8n8k4.
template <int Q>
__device__ __forceinline__ void dmma_step(double (&d)[4], const double (&a)[2 * Q], const double (&b)[Q]) {
#if __CUDA_ARCH__ >= 900
    if constexpr (Q == 4) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, "
                 "{%12,%13,%14,%15}, {%0,%1,%2,%3};"
                 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
                   "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
    } else {
        static_assert(Q == 2, "k-steps of 8 or 16");
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                     : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
    }
#else
    // m8n8k4: a = (g, t), b = (t, g), d = {(g, 2t), (g, 2t+1)}; rows g and g + 8, k groups q.
#pragma unroll
    for (int q = 0; q < Q; ++q) {
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
    constexpr int MI = T::MI, NJ = T::NJ, WARPS_N = T::BN / T::WTN;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const int wm = (warp / WARPS_N) * T::WTM, wn = (warp % WARPS_N) * T::WTN;
    const int ktiles = (k + DM_BK - 1) / DM_BK;

    auto stage_a = [&](int s) { return dm_smem + s * T::STAGE; };
    auto stage_b = [&](int s) { return dm_smem + s * T::STAGE + T::A::SIZE; };
    auto load = [&](int kt) {
        const int s = kt % DM_STAGES;
        dm_load_operand<T::BM, A_K, V, T::THREADS>(stage_a(s), A, lda, m0, kt * DM_BK, m, k);
        dm_load_operand<T::BN, B_K, V, T::THREADS>(stage_b(s), B, ldb, n0, kt * DM_BK, n, k);
    };

    double acc[MI][NJ][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0;

#pragma unroll
    for (int s = 0; s < DM_STAGES - 1; ++s) {
        if (s < ktiles) load(s);
        cp_commit();
    }
    for (int kt = 0; kt < ktiles; ++kt) {
        cp_wait<DM_STAGES - 2>();
        __syncthreads();  // stage kt is visible to all; stage kt - 1 is no longer read
        if (kt + DM_STAGES - 1 < ktiles) load(kt + DM_STAGES - 1);
        cp_commit();
        const double *sa = stage_a(kt % DM_STAGES), *sb = stage_b(kt % DM_STAGES);
#pragma unroll
        for (int kk = 0; kk < DM_BK; kk += T::KSTEP) {
            double b[NJ][T::Q];
#pragma unroll
            for (int j = 0; j < NJ; ++j)
#pragma unroll
                for (int q = 0; q < T::Q; ++q) b[j][q] = dm_at<T::BN, B_K>(sb, wn + j * 8 + g, kk + t + 4 * q);
            // A's fragments one 16-row group at a time (fewer live registers than all at once).
#pragma unroll
            for (int i = 0; i < MI; ++i) {
                const int r = wm + i * 16 + g;
                double a[2 * T::Q];
#pragma unroll
                for (int q = 0; q < T::Q; ++q) {
                    a[2 * q] = dm_at<T::BM, A_K>(sa, r, kk + t + 4 * q);
                    a[2 * q + 1] = dm_at<T::BM, A_K>(sa, r + 8, kk + t + 4 * q);
                }
#pragma unroll
                for (int j = 0; j < NJ; ++j) dmma_step<T::Q>(acc[i][j], a, b[j]);
            }
        }
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

constexpr int SIMT_TILE = 16;

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
DMMA_LAYOUTS(gemm_f64_dmma, Dm128, 1)
DMMA_LAYOUTS(gemm_f64_dmma64, Dm64, 2)

// Split-K finish: C[i][j] = alpha * sum_s part[s][i][j] + beta * C[i][j] over `splits` packed m x n partial
// products, summed in split order. beta == 0 never reads C. Grid-stride over the outputs: block 256, any grid.
PRISM_KERNEL void __launch_bounds__(256) gemm_f64_splitk_reduce(int m, int n, int splits, const double *part,
                                                                double alpha, double beta, double *C, int ldc) {
    const long long outputs = (long long)m * n;
    for (long long at = blockIdx.x * 256ll + threadIdx.x; at < outputs; at += (long long)gridDim.x * 256) {
        double sum = 0.0;
        for (int s = 0; s < splits; ++s) sum += part[s * outputs + at];
        double *c = C + (at / n) * ldc + at % n;
        *c = beta != 0.0 ? fma(alpha, sum, beta * *c) : alpha * sum;
    }
}

PRISM_KERNEL void __launch_bounds__(SIMT_TILE *SIMT_TILE)
    gemm_f64_simt(int m, int n, int k, double alpha, const double *A, int lda, long long strideA, int transA,
                  const double *B, int ldb, long long strideB, int transB, double beta, double *C, int ldc,
                  long long strideC) {
    __shared__ double sa[SIMT_TILE][SIMT_TILE + 1], sb[SIMT_TILE][SIMT_TILE + 1];
    const long long z = blockIdx.z;
    A += z * strideA;
    B += z * strideB;
    C += z * strideC;
    const int tx = threadIdx.x % SIMT_TILE, ty = threadIdx.x / SIMT_TILE;
    const int row = blockIdx.y * SIMT_TILE + ty, col = blockIdx.x * SIMT_TILE + tx;
    double acc = 0.0;
    for (int k0 = 0; k0 < k; k0 += SIMT_TILE) {
        // sa[ty][tx] = op(A)(row, k0 + tx); sb[ty][tx] = op(B)(k0 + ty, col).
        const int ak = k0 + tx, bk = k0 + ty;
        sa[ty][tx] = (row < m && ak < k) ? (transA ? A[(long long)ak * lda + row] : A[(long long)row * lda + ak]) : 0.0;
        sb[ty][tx] = (col < n && bk < k) ? (transB ? B[(long long)col * ldb + bk] : B[(long long)bk * ldb + col]) : 0.0;
        __syncthreads();
#pragma unroll
        for (int p = 0; p < SIMT_TILE; ++p) acc = fma(sa[ty][p], sb[p][tx], acc);
        __syncthreads();
    }
    if (row < m && col < n) {
        double *p = C + (long long)row * ldc + col;
        *p = beta == 0.0 ? alpha * acc : fma(alpha, acc, beta * *p);
    }
}
