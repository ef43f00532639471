// prism_batch_norm_partials_f32 (cuda/norms.cu, or a copy given on the include path; since 2026-11-27 it also
// finishes the statistics, its channels' last blocks writing mean and var) at 32 x 64 x 12544
// f32 over a range of slices per channel and block sizes, beside a device-to-device copy of the same bytes (GB/s counts
// read + written bytes for the copy, read bytes for the statistics, as the bench does); CUDA events,
// median of 20 after 5 warm-ups.
#include "common.cuh"
#undef PRISM_KERNEL
#define PRISM_KERNEL static __global__
#include "norms.cu"
#include <algorithm>
#include <cstdio>
#include <vector>
#include "../median_ms.cuh"

int main() {
    const int n = 32, c = 64, hw = 12544;
    const size_t count = (size_t)n * c * hw, bytes = count * 4;
    float *x, *y, *mean, *var;
    double *part;
    unsigned *counters;  // the channels' arrival counters: zero, and each channel's last block sets its own back
    cudaMalloc(&x, bytes), cudaMalloc(&y, bytes), cudaMalloc(&part, 3 * 64 * 1024 * sizeof(double));
    cudaMalloc(&mean, c * sizeof(float)), cudaMalloc(&var, c * sizeof(float)), cudaMalloc(&counters, c * sizeof(unsigned));
    cudaMemset(counters, 0, c * sizeof(unsigned));
    std::vector<float> h(count);
    for (size_t i = 0; i < count; ++i) h[i] = (float)((i * 2654435761u) % 1000) * 1e-3f;
    cudaMemcpy(x, h.data(), bytes, cudaMemcpyHostToDevice);
    int sms;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    const float copy = median_ms([&] { cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice); });
    printf("copy %.0f GB/s (read + write)\n", 2.0 * bytes / (copy * 1e6));
    for (int block : {256, 512, 1024}) {
        for (int slices = 1; slices <= 40; ++slices) {
            if (slices > 12 && slices % 4) continue;
            const float ms = median_ms([&] {
                prism_batch_norm_partials_f32<<<dim3(c, slices), block>>>(x, part, counters, n, c, hw, slices, mean, var,
                                                                         nullptr, nullptr, 0.f);
            });
            const double gbs = bytes / (ms * 1e6);
            printf("block %4d, slices %2d (%.2f blocks per SM): %.0f GB/s, %.2fx copy\n", block, slices,
                   (double)c * slices / sms, gbs, gbs / (2.0 * bytes / (copy * 1e6)));
        }
    }
    printf("error: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
