// Philox f32 normals, old (HEAD's cuda/random.cu) against new (the working tree's), beside a memset,
// the uniforms and cuRAND's Philox normal fill; CUDA events, median of 20 after 5 warm-ups.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>
#include <curand.h>
#include "../median_ms.cuh"

void normal_old(float *, unsigned long long, int);
void normal_new(float *, unsigned long long, int);
void normal_alt(float *, unsigned long long, int);
void uniform_new(float *, unsigned long long, int);

int main(int argc, char **) {
    const unsigned long long n = 1ull << 28;
    float *out;
    cudaMalloc(&out, n * 4);
    if (argc > 1) {  // for ncu: one launch of each variant
        normal_new(out, n, (int)((n / 4 + 255) / 256));
        normal_alt(out, n, (int)((n / 4 + 255) / 256));
        return cudaDeviceSynchronize() != cudaSuccess;
    }
    int sms;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    const int full = (int)((n / 4 + 255) / 256);
    auto gbs = [&](float ms) { return n * 4.0 / (ms * 1e-3) / 1e9; };
    const float memset = median_ms([&] { cudaMemsetAsync(out, 1, n * 4); });
    printf("memset              %7.0f GB/s\n", gbs(memset));
    curandGenerator_t gen;
    curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10);
    const float cur = median_ms([&] { curandGenerateNormal(gen, out, n, 0.5f, 2.0f); });
    printf("curand normal       %7.0f GB/s\n", gbs(cur));
    const float uni = median_ms([&] { uniform_new(out, n, full); });
    printf("uniform             %7.0f GB/s (%.2fx memset)\n", gbs(uni), memset / uni);
    const int grids[] = {full, sms * 8, sms * 16, sms * 32};
    for (int g : grids) {
        const float o = median_ms([&] { normal_old(out, n, g); });
        const float w = median_ms([&] { normal_new(out, n, g); });
        const float a = median_ms([&] { normal_alt(out, n, g); });
        const float u = median_ms([&] { uniform_new(out, n, g); });
        printf("grid %7d  old %7.0f GB/s (%.2fx memset)  new %7.0f GB/s (%.2fx memset, %.2fx curand)  alt %7.0f "
               "GB/s (%.2fx memset)  uniform %7.0f GB/s\n",
               g, gbs(o), memset / o, gbs(w), memset / w, cur / w, gbs(a), memset / a, gbs(u));
    }
    // Moments of the new fill: mean 0.5, stddev 2.
    normal_new(out, n, full);
    std::vector<float> h(1 << 24);
    cudaMemcpy(h.data(), out, h.size() * 4, cudaMemcpyDeviceToHost);
    double s = 0, s2 = 0;
    for (float v : h) s += v, s2 += (double)v * v;
    const double mean = s / h.size(), var = s2 / h.size() - mean * mean;
    printf("new: mean %.5f stddev %.5f over %zu values; error %s\n", mean, std::sqrt(var), h.size(),
           cudaGetErrorString(cudaGetLastError()));
    return 0;
}
