// Experiment (issue 32, f64 decode): DGEMM with few rows (m <= 16) against wide weights is bound by reading the
// weights once; the product runs it on the tiled DMMA kernel with split-k (0.36-0.84x cuBLAS in the sweep). Two
// streaming kernels here, both f64 throughout, against cuBLAS DGEMM and a device-to-device copy of the weight
// bytes on the same operands:
//   nn: C = A B, B k x n row-major (n-contiguous): a thread owns two adjacent columns (one 16-byte load per k),
//       the block's k slice of A's rows staged in shared memory; blocks split k (gridDim.y), partials summed in
//       slice order by a second kernel (deterministic).
//   nt: C = A B^T, B n x k row-major (k-contiguous): a warp owns COLS columns, its lanes stride k with 16-byte
//       loads, A's rows read through L1 (every warp of the block reads the same ones); shuffle sums, then the
//       same slice sum.
// Checked against cuBLAS's answer (max |ours - cuBLAS| / max |cuBLAS|), timed as the median of 20 after 5 warm-ups
// (CUDA events). Build and run on the GPU machine: bash notes/dgemm/decode.sh
#include "../median_ms.cuh"
#include <cublas_v2.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

constexpr int THREADS = 256;

// Partial products of k slice blockIdx.y for columns [blockIdx.x * 2 THREADS, +2 THREADS): part[y][s][col].
template <int S>
__global__ void __launch_bounds__(THREADS) decode_nn(const double *A, int lda, const double *B, int ldb,
                                                     double *part, int m, int n, int k, int kc) {
    extern __shared__ double as[];  // [S][kc]
    const int k0 = blockIdx.y * kc, kn = min(kc, k - k0);
    for (int i = threadIdx.x; i < S * kc; i += THREADS) {
        const int s = i / kc, kk = i % kc;
        as[i] = s < m && kk < kn ? A[(size_t)s * lda + k0 + kk] : 0.0;
    }
    __syncthreads();
    const int col = (blockIdx.x * THREADS + threadIdx.x) * 2;
    if (col >= n) return;
    const bool pair = col + 1 < n && (ldb % 2 == 0) && ((reinterpret_cast<size_t>(B) & 15) == 0);
    double acc[S][2] = {};
    const double *b = B + (size_t)k0 * ldb + col;
    constexpr int U = 8;  // rows of B in flight per thread
    for (int kk = 0; kk < kn; kk += U) {
        double2 w[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const double *row = b + (size_t)(kk + u) * ldb;
            if (kk + u >= kn) w[u] = make_double2(0.0, 0.0);
            else if (pair) w[u] = __ldg(reinterpret_cast<const double2 *>(row));
            else w[u] = make_double2(__ldg(row), col + 1 < n ? __ldg(row + 1) : 0.0);
        }
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int s = 0; s < S; ++s) {
                const double a = as[s * kc + kk + u];  // zero past kn
                acc[s][0] = fma(a, w[u].x, acc[s][0]);
                acc[s][1] = fma(a, w[u].y, acc[s][1]);
            }
    }
    double *p = part + (size_t)blockIdx.y * m * n;
#pragma unroll
    for (int s = 0; s < S; ++s)
        if (s < m) {
            p[(size_t)s * n + col] = acc[s][0];
            if (col + 1 < n) p[(size_t)s * n + col + 1] = acc[s][1];
        }
}

// Partial products of k slice blockIdx.y for columns [blockIdx.x * 8 COLS, +8 COLS): warp w owns COLS of them.
template <int S, int COLS>
__global__ void __launch_bounds__(THREADS) decode_nt(const double *A, int lda, const double *B, int ldb,
                                                     double *part, int m, int n, int k, int kc) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int c0 = (blockIdx.x * (THREADS / 32) + warp) * COLS;
    if (c0 >= n) return;
    const int k0 = blockIdx.y * kc, kn = min(kc, k - k0);
    const bool vec = (lda % 2 == 0) && (ldb % 2 == 0) && (k0 % 2 == 0) &&
                     ((reinterpret_cast<size_t>(A) | reinterpret_cast<size_t>(B)) & 15) == 0;
    double acc[COLS][S] = {};
    for (int kk = 2 * lane; kk < kn; kk += 64) {
        const bool two = kk + 1 < kn;
        double2 w[COLS], a[S];
#pragma unroll
        for (int c = 0; c < COLS; ++c) {
            const double *row = B + (size_t)min(c0 + c, n - 1) * ldb + k0 + kk;
            w[c] = vec && two ? __ldg(reinterpret_cast<const double2 *>(row))
                              : make_double2(__ldg(row), two ? __ldg(row + 1) : 0.0);
        }
#pragma unroll
        for (int s = 0; s < S; ++s) {
            const double *row = A + (size_t)min(s, m - 1) * lda + k0 + kk;
            a[s] = vec && two ? __ldg(reinterpret_cast<const double2 *>(row))
                              : make_double2(__ldg(row), two ? __ldg(row + 1) : 0.0);
        }
#pragma unroll
        for (int c = 0; c < COLS; ++c)
#pragma unroll
            for (int s = 0; s < S; ++s) acc[c][s] = fma(a[s].y, w[c].y, fma(a[s].x, w[c].x, acc[c][s]));
    }
#pragma unroll
    for (int c = 0; c < COLS; ++c)
#pragma unroll
        for (int s = 0; s < S; ++s)
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) acc[c][s] += __shfl_xor_sync(0xffffffffu, acc[c][s], o);
    if (lane == 0) {
        double *p = part + (size_t)blockIdx.y * m * n;
#pragma unroll
        for (int c = 0; c < COLS; ++c)
#pragma unroll
            for (int s = 0; s < S; ++s)
                if (s < m && c0 + c < n) p[(size_t)s * n + c0 + c] = acc[c][s];
    }
}

// C[s][col] = alpha * (sum of the slices in order) + beta * C (C row-major m x n, ldc = n).
__global__ void slice_sum(const double *part, double *C, int m, int n, int slices, double alpha, double beta) {
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x, mn = (size_t)m * n;
    if (i >= mn) return;
    double s = 0.0;
    for (int z = 0; z < slices; ++z) s += part[z * mn + i];
    C[i] = beta == 0.0 ? alpha * s : fma(beta, C[i], alpha * s);
}

struct Plan {
    int slices, kc;
};
// Slices of k so that about four blocks per multiprocessor stream at once, each slice a multiple of 64 deep.
static Plan plan(int column_blocks, int k, int sms, int max_kc) {
    int slices = std::max(1, std::min((4 * sms + column_blocks - 1) / column_blocks, (k + 63) / 64));
    int kc = ((k + slices - 1) / slices + 63) / 64 * 64;
    kc = std::min(kc, max_kc);
    return {(k + kc - 1) / kc, kc};
}

template <int S>
static void run_nn(const double *A, const double *B, double *C, double *part, int m, int n, int k, int sms) {
    const int cb = (n + 2 * THREADS - 1) / (2 * THREADS);
    const int max_kc = 48 * 1024 / (8 * S) / 64 * 64;  // staged A within the default 48 KiB
    const Plan p = plan(cb, k, sms, max_kc);
    decode_nn<S><<<dim3(cb, p.slices), THREADS, S * p.kc * 8>>>(A, k, B, n, part, m, n, k, p.kc);
    slice_sum<<<(m * n + 255) / 256, 256>>>(part, C, m, n, p.slices, 1.0, 0.0);
}

template <int S, int COLS>
static void run_nt(const double *A, const double *B, double *C, double *part, int m, int n, int k, int sms) {
    const int cb = (n + 8 * COLS - 1) / (8 * COLS);
    const Plan p = plan(cb, k, sms, 1 << 30);
    decode_nt<S, COLS><<<dim3(cb, p.slices), THREADS>>>(A, k, B, k, part, m, n, k, p.kc);
    slice_sum<<<(m * n + 255) / 256, 256>>>(part, C, m, n, p.slices, 1.0, 0.0);
}

template <int S>
static void run(bool nt, const double *A, const double *B, double *C, double *part, int m, int n, int k, int sms) {
    if (nt) run_nt<S, 4>(A, B, C, part, m, n, k, sms);
    else run_nn<S>(A, B, C, part, m, n, k, sms);
}

static void run_ours(bool nt, const double *A, const double *B, double *C, double *part, int m, int n, int k,
                     int sms) {
    if (m <= 1) run<1>(nt, A, B, C, part, m, n, k, sms);
    else if (m <= 2) run<2>(nt, A, B, C, part, m, n, k, sms);
    else if (m <= 4) run<4>(nt, A, B, C, part, m, n, k, sms);
    else if (m <= 8) run<8>(nt, A, B, C, part, m, n, k, sms);
    else run<16>(nt, A, B, C, part, m, n, k, sms);
}

int main(int argc, char **argv) {
    const unsigned seed = argc > 1 ? (unsigned)atoi(argv[1]) : 1234u;
    int sms;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    printf("%s, seed %u\n", prop.name, seed);
    cublasHandle_t h;
    cublasCreate(&h);
    const int ms[] = {1, 2, 4, 8, 16, 3, 13};
    const int nk[][2] = {{768, 768}, {3072, 768}, {4096, 4096}, {4096, 12288}, {12288, 4096}, {1000, 1001}};
    int failed = 0;
    for (int layout = 0; layout < 2; ++layout) {
        const bool nt = layout == 1;
        for (auto &sh : nk) {
            for (int m : ms) {
                const int n = sh[0], k = sh[1];
                std::mt19937_64 gen(seed ^ (unsigned)(m * 7919 + n * 31 + k + layout));
                std::uniform_real_distribution<double> dist(-1.0, 1.0);
                std::vector<double> ha((size_t)m * k), hb((size_t)k * n);
                for (auto &v : ha) v = dist(gen);
                for (auto &v : hb) v = dist(gen);
                double *A, *B, *C, *R, *part, *copy;
                cudaMalloc(&A, ha.size() * 8), cudaMalloc(&B, hb.size() * 8);
                cudaMalloc(&C, (size_t)m * n * 8), cudaMalloc(&R, (size_t)m * n * 8);
                cudaMalloc(&part, (size_t)m * n * 8 * ((k + 63) / 64)), cudaMalloc(&copy, hb.size() * 8);  // slices <= k / 64
                cudaMemcpy(A, ha.data(), ha.size() * 8, cudaMemcpyHostToDevice);
                cudaMemcpy(B, hb.data(), hb.size() * 8, cudaMemcpyHostToDevice);
                cudaMemset(C, 0xff, (size_t)m * n * 8);  // NaN: every element must be written
                const double one = 1.0, zero = 0.0;
                // Row-major C = A B is column-major C^T = B^T A^T; with B n x k row-major (nt), C^T = B A^T.
                auto cublas = [&] {
                    if (nt) cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, B, k, A, k, &zero, R, n);
                    else cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, B, n, A, k, &zero, R, n);
                };
                auto ours = [&] { run_ours(nt, A, B, C, part, m, n, k, sms); };
                cublas();
                ours();
                std::vector<double> hc((size_t)m * n), hr((size_t)m * n);
                cudaMemcpy(hc.data(), C, hc.size() * 8, cudaMemcpyDeviceToHost);
                cudaMemcpy(hr.data(), R, hr.size() * 8, cudaMemcpyDeviceToHost);
                double diff = 0, scale = 0;
                for (size_t i = 0; i < hc.size(); ++i) {
                    diff = std::max(diff, std::isnan(hc[i]) ? INFINITY : std::fabs(hc[i] - hr[i]));
                    scale = std::max(scale, std::fabs(hr[i]));
                }
                const double err = diff / scale;
                const bool ok = err < 1e-12;
                failed += !ok;
                const float t_ours = median_ms(ours), t_cublas = median_ms(cublas);
                const float t_copy = median_ms([&] { cudaMemcpyAsync(copy, B, hb.size() * 8, cudaMemcpyDeviceToDevice); });
                // A copy moves the weight bytes twice (read + write); the product reads them once.
                const double weight_gbs = hb.size() * 8 / (t_ours * 1e6), copy_gbs = 2.0 * hb.size() * 8 / (t_copy * 1e6);
                printf("%s %2d x %5d x %5d: ours %7.1f us, cuBLAS %7.1f us (%.2fx), weights %6.0f GB/s = %.2fx a copy; "
                       "error %.1e %s\n",
                       nt ? "nt" : "nn", m, n, k, t_ours * 1e3, t_cublas * 1e3, t_cublas / t_ours, weight_gbs,
                       weight_gbs / copy_gbs, err, ok ? "PASS" : "FAIL");
                cudaFree(A), cudaFree(B), cudaFree(C), cudaFree(R), cudaFree(part), cudaFree(copy);
            }
        }
    }
    printf("%s; %d failed\n", cudaGetErrorString(cudaDeviceSynchronize()), failed);
    return failed != 0;
}
