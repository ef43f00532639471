// Wide-row norms (issue 33): the block-per-row kernels of cuda/norms.cu against the cluster-slice kernels
// of cuda/norms_sm90.cu, layer norm and RMS norm, f32 and bf16, at 2^26 elements per call over several row
// widths, beside a device-to-device copy of the same bytes (GB/s = bytes read + written); CUDA events,
// median of 20 after 5 warm-ups. Each slice kernel's output is compared with the row kernel's.
#include "common.cuh"
#undef PRISM_KERNEL
#define PRISM_KERNEL static __global__
#include "norms.cu"
#include "slices.cu"
#include "softmax.cu"
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <vector>
#include "../median_ms.cuh"

__global__ void fill(float *p, size_t n, unsigned seed, float lo, float hi) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
        p[i] = lo + (hi - lo) * (h & 0xffffff) * (1.0f / 16777216.0f);
    }
}
__global__ void to_bf16(const float *a, __nv_bfloat16 *b, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        b[i] = __float2bfloat16_rn(a[i]);
}
__global__ void max_diff(const float *a, const float *b, size_t n, float *out) {
    float m = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        m = fmaxf(m, fabsf(a[i] - b[i]));
    atomicMax((int *)out, __float_as_int(m));
}
__global__ void max_diff_bf(const __nv_bfloat16 *a, const __nv_bfloat16 *b, size_t n, float *out) {
    float m = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        m = fmaxf(m, fabsf(__bfloat162float(a[i]) - __bfloat162float(b[i])));
    atomicMax((int *)out, __float_as_int(m));
}

static int row_block(int cols) { return std::min(1024, std::max(32, ((cols + 31) / 32 + 31) / 32 * 32)); }
static size_t row_smem(int cols, int lanes, int rc, int block) {
    int per = (cols / lanes + block - 1) / block;
    return 16ull * block * std::max(0, per - rc);
}
static size_t slice_smem(int cols, int lanes, int rc) {
    int chunks = cols / lanes / 4, per = (chunks + 1023) / 1024;
    return 16ull * 1024 * std::max(0, 4 * per - rc);
}

int main() {
    const size_t n = 1ull << 26;
    float *x, *y, *y2, *gamma, *beta, *stat, *diff;
    cudaMalloc(&x, n * 4), cudaMalloc(&y, n * 4), cudaMalloc(&y2, n * 4);
    cudaMalloc(&gamma, 131072 * 4), cudaMalloc(&beta, 131072 * 4), cudaMalloc(&stat, 2 * 65536 * 4);
    cudaMalloc(&diff, 4);
    fill<<<1024, 256>>>(x, n, 1, -3.0f, 5.0f);
    fill<<<64, 256>>>(gamma, 131072, 2, 0.5f, 1.5f);
    fill<<<64, 256>>>(beta, 131072, 3, -1.0f, 1.0f);
    __nv_bfloat16 *xb, *yb = (__nv_bfloat16 *)y, *yb2 = (__nv_bfloat16 *)y2;
    cudaMalloc(&xb, n * 2);
    to_bf16<<<1024, 256>>>(x, xb, n);
    for (auto f : {(const void *)prism_layer_norm_f32, (const void *)prism_layer_norm_bf16, (const void *)prism_rms_norm_f32,
                   (const void *)prism_rms_norm_bf16, (const void *)prism_layer_norm_slices_f32,
                   (const void *)prism_layer_norm_slices_bf16, (const void *)prism_rms_norm_slices_f32,
                   (const void *)prism_rms_norm_slices_bf16})
        cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 225 * 1024);
    const float copy32 = median_ms([&] { cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice); });
    const float copy16 = median_ms([&] { cudaMemcpyAsync(y, x, n * 2, cudaMemcpyDeviceToDevice); });
    printf("copy f32 %.0f GB/s, bf16 bytes %.0f GB/s\n", 2.0 * n * 4 / (copy32 * 1e6), 2.0 * n * 2 / (copy16 * 1e6));
    const float eps = 1e-5f;
    // op: 0 layer f32, 1 layer bf16, 2 rms f32, 3 rms bf16, 4 softmax f32
    const void *row_fn[5] = {(const void *)prism_layer_norm_f32, (const void *)prism_layer_norm_bf16,
                             (const void *)prism_rms_norm_f32, (const void *)prism_rms_norm_bf16,
                             (const void *)prism_softmax_rows_f32};
    const void *slice_fn[4] = {(const void *)prism_layer_norm_slices_f32, (const void *)prism_layer_norm_slices_bf16,
                               (const void *)prism_rms_norm_slices_f32, (const void *)prism_rms_norm_slices_bf16};
    cudaFuncSetAttribute(row_fn[4], cudaFuncAttributeMaxDynamicSharedMemorySize, 225 * 1024);
    const char *names[5] = {"layer f32 ", "layer bf16", "rms   f32 ", "rms   bf16", "softmax   "};
    for (int cols : {32768, 65536}) {
        const int rows = (int)(n / cols);
        int active = 0;
        {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(4 * ((rows + 3) / 4)); cfg.blockDim = dim3(1024);
            cfg.dynamicSmemBytes = slice_smem(cols, 4, 6);
            cudaOccupancyMaxActiveClusters(&active, (const void *)prism_layer_norm_slices_f32, &cfg);
        }
        const int grid = getenv("PERSIST") ? 4 * std::min(active, (rows + 3) / 4) : 4 * ((rows + 3) / 4);
        printf("active clusters %d, grid %d\n", active, grid);
        for (int op = 0; op < 5; ++op) {
            const bool bf = op == 1 || op == 3, rms = op == 2 || op == 3, sm = op == 4;
            const int lanes = bf ? 8 : 4;
            if (!bf && cols > 65536) continue;
            const int rc_old = bf ? 4 : (op == 0 ? 7 : 8), rc_new = bf ? (rms ? 4 : 2) : 6;
            const size_t bytes = 2ull * n * (bf ? 2 : 4);
            const double gc = bytes / ((bf ? copy16 : copy32) * 1e6);
            printf("%s %5d x %6d:", names[op], rows, cols);
            for (int rb : {256, 512, 1024}) {
                const size_t so = row_smem(cols, lanes, rc_old, rb);
                if (so > 225 * 1024) { printf("  b%d -", rb); continue; }
                int occ = 0;
                cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, row_fn[op], rb, so);
                const float t = median_ms([&] {
                    if (op == 0) prism_layer_norm_f32<<<rows, rb, so>>>(x, gamma, beta, y, stat, stat + 65536, rows, cols, eps);
                    if (op == 1) prism_layer_norm_bf16<<<rows, rb, so>>>(xb, gamma, beta, yb, stat, stat + 65536, rows, cols, eps);
                    if (op == 2) prism_rms_norm_f32<<<rows, rb, so>>>(x, gamma, y, stat, rows, cols, eps);
                    if (op == 3) prism_rms_norm_bf16<<<rows, rb, so>>>(xb, gamma, yb, stat, rows, cols, eps);
                    if (op == 4) prism_softmax_rows_f32<<<rows, rb, so>>>(x, y, rows, cols);
                });
                printf("  b%d %.2fx (%d/SM)", rb, bytes / (t * 1e6) / gc, occ);
            }
            if (!sm) {
                const int rb = 1024;
                const size_t so = row_smem(cols, lanes, rc_old, rb);
                if (so <= 225 * 1024) {
                    const float t = median_ms([&] {
                        if (op == 0) prism_layer_norm_f32<<<rows, rb, so>>>(x, nullptr, nullptr, y, stat, stat + 65536, rows, cols, eps);
                        if (op == 1) prism_layer_norm_bf16<<<rows, rb, so>>>(xb, nullptr, nullptr, yb, stat, stat + 65536, rows, cols, eps);
                        if (op == 2) prism_rms_norm_f32<<<rows, rb, so>>>(x, nullptr, y, stat, rows, cols, eps);
                        if (op == 3) prism_rms_norm_bf16<<<rows, rb, so>>>(xb, nullptr, yb, stat, rows, cols, eps);
                    });
                    printf("  b1024-no-params %.2fx", bytes / (t * 1e6) / gc);
                }
                const size_t sn0 = slice_smem(cols, lanes, rc_new);
                const float t0 = median_ms([&] {
                    if (op == 0) prism_layer_norm_slices_f32<<<grid, 1024, sn0>>>(x, nullptr, nullptr, y2, stat, stat + 65536, rows, cols, eps);
                    if (op == 1) prism_layer_norm_slices_bf16<<<grid, 1024, sn0>>>(xb, nullptr, nullptr, yb2, stat, stat + 65536, rows, cols, eps);
                    if (op == 2) prism_rms_norm_slices_f32<<<grid, 1024, sn0>>>(x, nullptr, y2, stat, rows, cols, eps);
                    if (op == 3) prism_rms_norm_slices_bf16<<<grid, 1024, sn0>>>(xb, nullptr, yb2, stat, rows, cols, eps);
                });
                printf("  slices-no-params %.2fx", bytes / (t0 * 1e6) / gc);
                const size_t sn = slice_smem(cols, lanes, rc_new);
                const float t = median_ms([&] {
                    if (op == 0) prism_layer_norm_slices_f32<<<grid, 1024, sn>>>(x, gamma, beta, y2, stat, stat + 65536, rows, cols, eps);
                    if (op == 1) prism_layer_norm_slices_bf16<<<grid, 1024, sn>>>(xb, gamma, beta, yb2, stat, stat + 65536, rows, cols, eps);
                    if (op == 2) prism_rms_norm_slices_f32<<<grid, 1024, sn>>>(x, gamma, y2, stat, rows, cols, eps);
                    if (op == 3) prism_rms_norm_slices_bf16<<<grid, 1024, sn>>>(xb, gamma, yb2, stat, rows, cols, eps);
                });
                printf("  slices %.2fx", bytes / (t * 1e6) / gc);
            }
            printf("\n");
        }
    }
    printf("error: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
