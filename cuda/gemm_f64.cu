// Double-precision GEMM: C[m x n] (row-major, ldc) = alpha * op(A) * op(B) + beta * C, f64 throughout
// (scalars, products, accumulation). op(X) = X or X^T: A is m x k row-major, or k x m for the `t` layouts;
// B is k x n, or n x k. Batch = gridDim.z, entry z at A + z*strideA, B + z*strideB, C + z*strideC (A and B
// strides may be 0). beta == 0 never reads C. Any m, n >= 1, k >= 0.
//
// gemm_f64_dmma_{nn,nt,tn,tt} (sm_80+, FP64 tensor cores through mma.sync): 128 x 128 block tiles, k-steps
// of 16, a 3-stage cp.async ring (16-byte copies when every base, leading dimension and batch stride is even
// in doubles, else 8-byte copies; out-of-range elements zero-filled), 8 warps of 64 x 32 each. Tiles are
// kept in shared memory as stored in global memory (K- or M/N-contiguous), padded so that fragment reads
// hit distinct banks. On sm_90 each 16 x 8 x 8 step is one mma.m16n8k8.f64; on sm_80..89 four m8n8k4.
// Launch: grid (ceil(n/128), ceil(m/128), batch), block 256, dynamic shared memory DM_SMEM = 122880 bytes.
//
// gemm_f64_simt (any device, small or skinny problems): one output per thread from 16 x 16 shared tiles,
// transposes as int flags. Launch: grid (ceil(n/16), ceil(m/16), batch), block 256, no dynamic smem.
#include "gemm_common.cuh"

namespace {

constexpr int DM_BM = 128, DM_BN = 128, DM_BK = 16, DM_STAGES = 3, DM_THREADS = 256;
// Pitches (doubles) of tiles stored K-contiguous (rows of 16) and M/N-contiguous (rows of 128). Both are
// 4 mod 16 doubles, so the fragment reads of a half-warp (4 rows x 4 columns) hit 16 distinct 8-byte slots.
constexpr int DM_LDK = DM_BK + 4, DM_LDMN = DM_BM + 4;
// Doubles per operand per stage: the larger of the two storage orders.
constexpr int DM_OPERAND = (DM_BM * DM_LDK > DM_BK * DM_LDMN) ? DM_BM * DM_LDK : DM_BK * DM_LDMN;
constexpr int DM_SMEM = DM_STAGES * 2 * DM_OPERAND * 8;
static_assert(DM_SMEM == 122880, "the launcher's shared-memory size");
// Row tiles that consecutive blocks sweep before moving to the next columns (L2 reuse of B).
constexpr int DM_GROUP = 8;

__device__ __forceinline__ void cp_async8(uint32_t dst, const void *src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

// Copies a ROWS x COLS tile whose COLS run contiguously in global memory (row pitch ld) to shared memory
// (row pitch SST), V doubles per copy; elements at rows >= row_lim or columns >= col_lim become zero.
template <int ROWS, int COLS, int SST, int V>
__device__ __forceinline__ void dm_load(double *s, const double *g, long long ld, int row0, int col0, int row_lim,
                                        int col_lim) {
    constexpr int CPR = COLS / V, CHUNKS = ROWS * CPR;
    static_assert(CHUNKS % DM_THREADS == 0, "tile / thread mismatch");
#pragma unroll
    for (int i = 0; i < CHUNKS / DM_THREADS; ++i) {
        const int ch = threadIdx.x + i * DM_THREADS;
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

// One operand's tile for the k-step at k0. TRANS_A stores A k x m; TRANS_B stores B n x k.
template <bool TRANS, bool IS_A, int V>
__device__ __forceinline__ void dm_load_operand(double *s, const double *g, long long ld, int mn0, int k0, int mn_lim,
                                                int k_lim) {
    // K-contiguous: A as stored (m x k) and B transposed (n x k). M/N-contiguous otherwise.
    constexpr bool K_CONTIGUOUS = IS_A ? !TRANS : TRANS;
    if constexpr (K_CONTIGUOUS)
        dm_load<DM_BM, DM_BK, DM_LDK, V>(s, g, ld, mn0, k0, mn_lim, k_lim);
    else
        dm_load<DM_BK, DM_BM, DM_LDMN, V>(s, g, ld, k0, mn0, k_lim, mn_lim);
}

// Element (mn, kk) of an operand tile in shared memory, in the storage order dm_load_operand used.
template <bool K_CONTIGUOUS>
__device__ __forceinline__ double dm_at(const double *s, int mn, int kk) {
    return K_CONTIGUOUS ? s[mn * DM_LDK + kk] : s[kk * DM_LDMN + mn];
}

// d += a (16 x 8) * b (8 x 8): a = {(g, t), (g+8, t), (g, t+4), (g+8, t+4)}, b = {(t, g), (t+4, g)},
// d = {(g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)} with g = lane / 4, t = lane % 4.
__device__ __forceinline__ void dmma_16x8x8(double (&d)[4], const double (&a)[4], const double (&b)[2]) {
#if __CUDA_ARCH__ >= 900
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
#else
    // m8n8k4: a = (g, t), b = (t, g), d = {(g, 2t), (g, 2t+1)}; rows g and g + 8, k halves 0..3 and 4..7.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int r = 0; r < 2; ++r)
            asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                         : "+d"(d[2 * r]), "+d"(d[2 * r + 1])
                         : "d"(a[2 * h + r]), "d"(b[h]));
    }
#endif
}

template <bool TA, bool TB, int V>
__device__ __forceinline__ void dmma_body(int m, int n, int k, double alpha, const double *A, int lda,
                                          const double *B, int ldb, double beta, double *C, int ldc, int m0, int n0) {
    extern __shared__ __align__(16) double dm_smem[];
    constexpr bool A_K = !TA, B_K = TB;  // K-contiguous storage of each operand
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;  // warp grid 2 x 4, warp tile 64 x 32
    const int ktiles = (k + DM_BK - 1) / DM_BK;

    auto stage_a = [&](int s) { return dm_smem + s * 2 * DM_OPERAND; };
    auto stage_b = [&](int s) { return dm_smem + s * 2 * DM_OPERAND + DM_OPERAND; };
    auto load = [&](int kt) {
        const int s = kt % DM_STAGES;
        dm_load_operand<TA, true, V>(stage_a(s), A, lda, m0, kt * DM_BK, m, k);
        dm_load_operand<TB, false, V>(stage_b(s), B, ldb, n0, kt * DM_BK, n, k);
    };

    double acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
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
        for (int kk = 0; kk < DM_BK; kk += 8) {
            double b[4][2];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int c = wn + j * 8 + g;
                b[j][0] = dm_at<B_K>(sb, c, kk + t);
                b[j][1] = dm_at<B_K>(sb, c, kk + t + 4);
            }
            // A's fragments one 16-row group at a time (fewer live registers than all four at once).
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int r = wm + i * 16 + g;
                const double a[4] = {dm_at<A_K>(sa, r, kk + t), dm_at<A_K>(sa, r + 8, kk + t),
                                     dm_at<A_K>(sa, r, kk + t + 4), dm_at<A_K>(sa, r + 8, kk + t + 4)};
#pragma unroll
                for (int j = 0; j < 4; ++j) dmma_16x8x8(acc[i][j], a, b[j]);
            }
        }
    }
    cp_wait<0>();

#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
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

template <bool TA, bool TB>
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
    const int m0 = tm * DM_BM, n0 = tn * DM_BN;
    const bool aligned = prism_aligned16(A) && prism_aligned16(B) && lda % 2 == 0 && ldb % 2 == 0 &&
                         strideA % 2 == 0 && strideB % 2 == 0;
    if (aligned)
        dmma_body<TA, TB, 2>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, m0, n0);
    else
        dmma_body<TA, TB, 1>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, m0, n0);
}

constexpr int SIMT_TILE = 16;

}  // namespace

#define DMMA_ENTRY(NAME, TA, TB)                                                                                   \
    PRISM_KERNEL void __launch_bounds__(DM_THREADS, 1)                                                             \
        NAME(int m, int n, int k, double alpha, const double *A, int lda, long long strideA, const double *B,      \
             int ldb, long long strideB, double beta, double *C, int ldc, long long strideC) {                     \
        dmma_kernel<TA, TB>(m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC);            \
    }
DMMA_ENTRY(gemm_f64_dmma_nn, false, false)
DMMA_ENTRY(gemm_f64_dmma_nt, false, true)
DMMA_ENTRY(gemm_f64_dmma_tn, true, false)
DMMA_ENTRY(gemm_f64_dmma_tt, true, true)

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
