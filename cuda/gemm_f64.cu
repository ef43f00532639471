// Double-precision GEMM: C[m x n] (row-major, ldc) = alpha * op(A) * op(B) + beta * C, f64 throughout
// (scalars, products, accumulation). op(X) = X or X^T: A is m x k row-major, or k x m for the `t` layouts;
// B is k x n, or n x k. Batch = gridDim.z, entry z at A + z*strideA, B + z*strideB, C + z*strideC (A and B
// strides may be 0). beta == 0 never reads C. Any m, n >= 1, k >= 0.
//
// gemm_f64_dmma{,64,32,32x32}_{nn,nt,tn,tt} (sm_80+, FP64 tensor cores through mma.sync): block tiles of
// 128 x 64, 64 x 64, 32 x 64 or 32 x 32 outputs, all 4 warps (128 threads; two blocks per SM, two, three, four) of
// 64 x 32, 32 x 32, 16 x 32 or 16 x 16, 92160, 61440, 61440 or 40960 bytes of dynamic shared memory; k tiles of
// 16 in a 3-stage (the 32-row tiles: 4-stage) cp.async ring (16-byte copies when every base, leading dimension
// and batch stride is even in doubles, else 8-byte copies). Leading dimensions of A and B below 2^24 (the copies'
// offsets are 32-bit). Tiles are kept in shared memory as stored in global memory (K- or M/N-contiguous), padded
// so that fragment reads hit distinct banks; the products on sm_90 on mma.m16n8k16 (128 x 64, 32 x 32) or
// m16n8k4 (64 x 64, 32 x 64), on m8n8k4 before. C's column pairs go out as 16-byte stores where its rows keep
// them aligned. Launch: grid (ceil(n/tile cols), ceil(m/tile rows), batch).
// The kernels live in gemm_f64_dmma.cuh; gemm_f64_sm90.cu builds them for sm_90 alone (gemm_f64_sm90_dmma...),
// which the launcher takes on sm_90 and newer (see there).
// Split-K runs them on slices of k as batch entries (alpha 1, beta 0, packed m x n partial products), then
// gemm_f64_splitk_reduce sums the slices in order.
//
// gemm_f64_simt (any device, small problems): one output per thread from 16 x 16 shared tiles, transposes as
// int flags. Launch: grid (ceil(n/16), ceil(m/16), batch), block 256, no dynamic smem.
//
// The DMMA loop issues little besides its loads and mma (the 8-warp 128 x 128 tile it replaced issued twice the
// instructions per mma; notes/dgemm/README.md): addresses of the copies are set up once per block and move by a
// k tile per load, m/n limits are settled once, and only a partial last k tile goes through the fully checked
// copy, taken first so that the loop holds none.
#include "gemm_f64_dmma.cuh"

namespace {
constexpr int SIMT_TILE = 16;
}  // namespace

DMMA_LAYOUTS(gemm_f64_dmma, Dm128, 2)
DMMA_LAYOUTS(gemm_f64_dmma64, Dm64, 2)
DMMA_LAYOUTS(gemm_f64_dmma32, Dm32, 3)
DMMA_LAYOUTS(gemm_f64_dmma32x32, Dm32x32, 4)

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
