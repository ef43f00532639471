// Wide-row norms (issue 33): the row kernels of cuda/norms.cu and softmax.cu (or copies given on the include
// path) as the launcher sizes them, layer norm and RMS norm with and without gamma / beta, f32 and bf16, at
// 2^26 elements per call over several row widths, as a fraction of a device-to-device copy of the same bytes
// (read + written); CUDA events, median of 20 after 5 warm-ups.
#include "common.cuh"
#undef PRISM_KERNEL
#define PRISM_KERNEL static __global__
#include "norms.cu"
#include "softmax.cu"
#include <cmath>
#include <cstdio>
#include <vector>
#include "../median_ms.cuh"

#include "inputs.cuh"

static int row_block(int cols) { return std::min(1024, std::max(32, ((cols + 31) / 32 + 31) / 32 * 32)); }
static size_t row_smem(int cols, int lanes, int rc, int block) {
    int per = (cols / lanes + block - 1) / block;
    return 16ull * block * std::max(0, per - rc);
}

int main() {
    const size_t n = 1ull << 26;
    float *x, *y, *gamma, *beta, *stat;
    cudaMalloc(&x, n * 4), cudaMalloc(&y, n * 4);
    cudaMalloc(&gamma, 131072 * 4), cudaMalloc(&beta, 131072 * 4), cudaMalloc(&stat, 2 * 65536 * 4);
    fill<<<1024, 256>>>(x, n, 1, -3.0f, 5.0f);
    fill<<<64, 256>>>(gamma, 131072, 2, 0.5f, 1.5f);
    fill<<<64, 256>>>(beta, 131072, 3, -1.0f, 1.0f);
    __nv_bfloat16 *xb, *yb = (__nv_bfloat16 *)y;
    cudaMalloc(&xb, n * 2);
    to_bf16<<<1024, 256>>>(x, xb, n);
    for (auto f : {(const void *)prism_layer_norm_f32, (const void *)prism_layer_norm_bf16, (const void *)prism_rms_norm_f32,
                   (const void *)prism_rms_norm_bf16, (const void *)prism_softmax_rows_f32})
        cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 225 * 1024);
    const float copy32 = median_ms([&] { cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice); });
    const float copy16 = median_ms([&] { cudaMemcpyAsync(y, x, n * 2, cudaMemcpyDeviceToDevice); });
    printf("copy f32 %.0f GB/s, bf16 bytes %.0f GB/s\n", 2.0 * n * 4 / (copy32 * 1e6), 2.0 * n * 2 / (copy16 * 1e6));
    const float eps = 1e-5f;
    const char *names[5] = {"layer_norm f32 ", "layer_norm bf16", "rms_norm f32   ", "rms_norm bf16  ", "softmax f32    "};
    for (int cols : {8192, 16384, 32768, 65536, 131072}) {
        const int rows = (int)(n / cols), rb = row_block(cols);
        for (int op = 0; op < 5; ++op) {
            const bool bf = op == 1 || op == 3;
            const int lanes = bf ? 8 : 4, rc = bf ? 4 : (op == 0 ? 7 : 8);
            if (!bf && cols > 65536) continue;
            const size_t so = row_smem(cols, lanes, rc, rb);
            if (so > 225 * 1024) continue;
            const double bytes = 2.0 * n * (bf ? 2 : 4), gc = bytes / ((bf ? copy16 : copy32) * 1e6);
            printf("%s %5d x %6d (block %4d, smem %6zu):", names[op], rows, cols, rb, so);
            for (int params = op < 4; params >= 0; --params) {
                const float *g = params ? gamma : nullptr, *b = params ? beta : nullptr;
                const float t = median_ms([&] {
                    if (op == 0) prism_layer_norm_f32<<<rows, rb, so>>>(x, g, b, y, stat, stat + 65536, rows, cols, eps);
                    if (op == 1) prism_layer_norm_bf16<<<rows, rb, so>>>(xb, g, b, yb, stat, stat + 65536, rows, cols, eps);
                    if (op == 2) prism_rms_norm_f32<<<rows, rb, so>>>(x, g, y, stat, rows, cols, eps);
                    if (op == 3) prism_rms_norm_bf16<<<rows, rb, so>>>(xb, g, yb, stat, rows, cols, eps);
                    if (op == 4) prism_softmax_rows_f32<<<rows, rb, so>>>(x, y, rows, cols);
                });
                printf("  %s %.2fx copy", params ? "with parameters" : (op < 4 ? "without" : ""), bytes / (t * 1e6) / gc);
            }
            printf("\n");
        }
    }
    printf("error: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
