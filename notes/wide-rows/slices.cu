// prism-targets: sm_90
// Layer norm and RMS norm of wide rows on Hopper's thread-block clusters. The block-per-row kernels of
// norms.cu re-read gamma (and beta) from L2 for every row: on rows of 65536 that doubles the L2 traffic
// of the row itself and holds them at 0.6-0.8x a copy. Here a cluster of kSlices blocks owns kRows
// rows, block j holding column slice j of all of them on chip, so each parameter chunk is read once
// for kRows rows. The row sums are added over the slices through distributed shared memory, in rank
// order, so every block of a cluster gets the same statistics bit for bit.
#include "kit.cuh"
#include <cooperative_groups.h>

namespace {
using namespace prism;
namespace cg = cooperative_groups;

constexpr int kSlices = 4;  // blocks per cluster: column slices of each row
constexpr int kRows = 4;    // rows per cluster
constexpr int kMaxPer = 4;  // chunks per thread per row at most: a slice holds up to 4 * blockDim chunks

// Sums each v[r] over the block; every thread gets the totals. Ends with a barrier.
__device__ __forceinline__ void block_sum_rows(float (&v)[kRows]) {
    __shared__ float partial[32][kRows];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
#pragma unroll
    for (int r = 0; r < kRows; ++r) v[r] = warp_reduce(v[r], SumOp{});
    if (lane == 0) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) partial[warp][r] = v[r];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kRows; ++r) v[r] = warp_reduce(lane < warps ? partial[lane][r] : 0.0f, SumOp{});
    __syncthreads();
}

// Sums each v[r] over the cluster: the block totals, added in rank order. `mine` is this exchange's own
// buffer (one per exchange, so a fast block cannot overwrite values a peer has yet to read); the caller
// keeps its shared memory alive until the peers are done (the barrier before the block exits).
__device__ __forceinline__ void cluster_sum_rows(float (&v)[kRows], float (&mine)[kRows]) {
    __shared__ float gathered[kSlices][kRows];
    cg::cluster_group cluster = cg::this_cluster();
    block_sum_rows(v);
    if (threadIdx.x == 0) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) mine[r] = v[r];
    }
    cluster.sync();
    if (threadIdx.x < kSlices * kRows) {
        const int j = threadIdx.x / kRows, r = threadIdx.x % kRows;
        gathered[j][r] = cluster.map_shared_rank(&mine[0], j)[r];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < kSlices; ++j) s += gathered[j][r];
        v[r] = s;
    }
}

// The cluster's rows as this block holds them: slot k = p * kRows + r is chunk t + p * blockDim of row r's
// slice, in registers for k < RC and in dynamic shared memory (16-byte chunks, stored as read) after.
template <typename T, int RC>
struct SliceRows {
    static constexpr int N = Pack<T>::N;
    static constexpr int K = kRows * kMaxPer;
    float reg[RC][N];
    const T *x;
    T *y;
    int rows, cols, row0, first_chunk, chunks;

    __device__ __forceinline__ bool valid(int k) const {
        return row0 + k % kRows < rows && (int)threadIdx.x + k / kRows * (int)blockDim.x < chunks;
    }
    // Element offset of slot k's chunk in x and y.
    __device__ __forceinline__ size_t at(int k) const {
        const int c = first_chunk + threadIdx.x + k / kRows * blockDim.x;
        return (size_t)(row0 + k % kRows) * cols + (size_t)c * N;
    }
    __device__ __forceinline__ void load() {
        uint4 *sm = prism_row_smem;
#pragma unroll
        for (int k = RC; k < K; ++k)
            if (valid(k)) cp_async16(sm + (k - RC) * blockDim.x + threadIdx.x, x + at(k));
        uint4 u[RC];
#pragma unroll
        for (int k = 0; k < RC; ++k)
            u[k] = valid(k) ? *reinterpret_cast<const uint4 *>(x + at(k)) : make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
        for (int k = 0; k < RC; ++k) Pack<T>::unpack(u[k], reg[k]);
        cp_async_wait_all();
    }
    // f(r, v) for each valid chunk v (N values) of row r.
    template <class F>
    __device__ __forceinline__ void each(F f) const {
#pragma unroll
        for (int k = 0; k < K; ++k) {
            if (!valid(k)) continue;
            if (k < RC) {
                f(k % kRows, reg[k < RC ? k : 0]);
            } else {
                float v[N];
                Pack<T>::unpack(prism_row_smem[(k - RC) * blockDim.x + threadIdx.x], v);
                f(k % kRows, v);
            }
        }
    }
    // y = f(r, v, g, b) chunk by chunk, the parameter chunks (gamma, beta: null or 16-byte aligned) read
    // once for the kRows rows that share their columns.
    template <class F>
    __device__ __forceinline__ void store(const float *gamma, const float *beta, F f) {
#pragma unroll
        for (int p = 0; p < kMaxPer; ++p) {
            const int c = threadIdx.x + p * blockDim.x;
            if (c >= chunks) break;
            float g[N], b[N];
            if (gamma) load_param<N>(gamma, (first_chunk + c) * N, g);
            if (beta) load_param<N>(beta, (first_chunk + c) * N, b);
#pragma unroll
            for (int r = 0; r < kRows; ++r) {
                const int k = p * kRows + r;
                if (row0 + r >= rows) continue;
                float v[N];
                if (k < RC) {
#pragma unroll
                    for (int j = 0; j < N; ++j) v[j] = reg[k < RC ? k : 0][j];
                } else {
                    Pack<T>::unpack(prism_row_smem[(k - RC) * blockDim.x + threadIdx.x], v);
                }
#pragma unroll
                for (int j = 0; j < N; ++j) {
                    float o = f(r, v[j]);
                    if (gamma) o *= g[j];
                    if (beta) o += b[j];
                    v[j] = o;
                }
                *reinterpret_cast<uint4 *>(y + at(k)) = Pack<T>::pack(v);
            }
        }
    }
};

template <typename T, int RC>
__device__ __forceinline__ SliceRows<T, RC> slice_rows(const T *x, T *y, int rows, int cols, int group) {
    SliceRows<T, RC> s;
    s.x = x, s.y = y, s.rows = rows, s.cols = cols;
    s.row0 = group * kRows;
    s.chunks = cols / Pack<T>::N / kSlices;
    s.first_chunk = (int)cg::this_cluster().block_rank() * s.chunks;
    s.load();
    return s;
}

// Writes per-row statistics (mean or rstd; `out` may be null) from rank 0 of the cluster.
__device__ __forceinline__ void write_rows(float *out, const float (&v)[kRows], int row0, int rows) {
    if (out && cg::this_cluster().block_rank() == 0 && threadIdx.x == 0) {
#pragma unroll
        for (int r = 0; r < kRows; ++r)
            if (row0 + r < rows) out[row0 + r] = v[r];
    }
}

// Lets the block exit only after every peer has read its exchange buffers.
__device__ __forceinline__ void cluster_done() { cg::this_cluster().sync(); }

template <typename T, int RC>
__device__ __forceinline__ void layer_norm_slices(const T *x, const float *gamma, const float *beta, T *y,
                                                  float *mean_out, float *rstd_out, int rows, int cols, float eps) {
    __shared__ float sums[kRows], squares[kRows];
    for (int group = blockIdx.x / kSlices; group * kRows < rows; group += gridDim.x / kSlices) {
    SliceRows<T, RC> s = slice_rows<T, RC>(x, y, rows, cols, group);
    const float inv_n = 1.0f / (float)cols;
    float mean[kRows] = {}, rstd[kRows] = {};
    s.each([&](int r, const float *v) {
#pragma unroll
        for (int j = 0; j < Pack<T>::N; ++j) mean[r] += v[j];
    });
    cluster_sum_rows(mean, sums);
#pragma unroll
    for (int r = 0; r < kRows; ++r) mean[r] *= inv_n;
    s.each([&](int r, const float *v) {
#pragma unroll
        for (int j = 0; j < Pack<T>::N; ++j) {
            const float d = v[j] - mean[r];
            rstd[r] = fmaf(d, d, rstd[r]);
        }
    });
    cluster_sum_rows(rstd, squares);
#pragma unroll
    for (int r = 0; r < kRows; ++r) rstd[r] = rsqrtf(rstd[r] * inv_n + eps);
    write_rows(mean_out, mean, s.row0, rows);
    write_rows(rstd_out, rstd, s.row0, rows);
    s.store(gamma, beta, [&](int r, float v) { return (v - mean[r]) * rstd[r]; });
    cluster_done();
    }
}

template <typename T, int RC>
__device__ __forceinline__ void rms_norm_slices(const T *x, const float *gamma, T *y, float *rstd_out, int rows,
                                                int cols, float eps) {
    __shared__ float squares[kRows];
    for (int group = blockIdx.x / kSlices; group * kRows < rows; group += gridDim.x / kSlices) {
    SliceRows<T, RC> s = slice_rows<T, RC>(x, y, rows, cols, group);
    float rstd[kRows] = {};
    s.each([&](int r, const float *v) {
#pragma unroll
        for (int j = 0; j < Pack<T>::N; ++j) rstd[r] = fmaf(v[j], v[j], rstd[r]);
    });
    cluster_sum_rows(rstd, squares);
#pragma unroll
    for (int r = 0; r < kRows; ++r) rstd[r] = rsqrtf(rstd[r] / (float)cols + eps);
    write_rows(rstd_out, rstd, s.row0, rows);
    s.store(gamma, nullptr, [&](int r, float v) { return v * rstd[r]; });
    cluster_done();
    }
}
}  // namespace

// SLICE CONTRACT (the four entries below): as prism_layer_norm_f32 / prism_rms_norm_f32 and their bf16
// twins in norms.cu (same arguments, same results to rounding), for rows of 16-byte chunks split into 4
// column slices: cols a multiple of 4 * (16 / sizeof(T)) with cols / (16 / sizeof(T)) / 4 <= 4 * block
// chunks per slice; x, out, gamma and beta (where given) 16-byte aligned. Launch: grid 4 * ceil(rows / 4)
// (clusters of 4, compiled in), block 1024, dynamic smem 16 * block * max(0, 4 * ceil(chunks / block) - RC)
// bytes with RC = 6 for f32 and 4 for bf16.
PRISM_KERNEL void __cluster_dims__(kSlices, 1, 1) __launch_bounds__(1024)
    prism_layer_norm_slices_f32(const float *x, const float *gamma, const float *beta, float *out, float *mean,
                                float *rstd, int rows, int cols, float eps) {
    layer_norm_slices<float, 6>(x, gamma, beta, out, mean, rstd, rows, cols, eps);
}
PRISM_KERNEL void __cluster_dims__(kSlices, 1, 1) __launch_bounds__(1024)
    prism_layer_norm_slices_bf16(const __nv_bfloat16 *x, const float *gamma, const float *beta,
                                 __nv_bfloat16 *out, float *mean, float *rstd, int rows, int cols, float eps) {
    layer_norm_slices<__nv_bfloat16, 2>(x, gamma, beta, out, mean, rstd, rows, cols, eps);
}
PRISM_KERNEL void __cluster_dims__(kSlices, 1, 1) __launch_bounds__(1024)
    prism_rms_norm_slices_f32(const float *x, const float *gamma, float *out, float *rstd, int rows, int cols,
                              float eps) {
    rms_norm_slices<float, 6>(x, gamma, out, rstd, rows, cols, eps);
}
PRISM_KERNEL void __cluster_dims__(kSlices, 1, 1) __launch_bounds__(1024)
    prism_rms_norm_slices_bf16(const __nv_bfloat16 *x, const float *gamma, __nv_bfloat16 *out, float *rstd,
                               int rows, int cols, float eps) {
    rms_norm_slices<__nv_bfloat16, 4>(x, gamma, out, rstd, rows, cols, eps);
}
