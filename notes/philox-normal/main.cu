// Philox f32 normals: old (main's Box-Muller, notes/philox-normal/old/) against the ziggurat (new: cuda/,
// its table in shared memory, misses queued per warp; ldg: the table through __ldg; z1024: 1024 layers; inline:
// the slow path at once in each thread, no queue; r64: registers capped at 64), beside a memset, the
// uniforms and cuRAND's Philox normal fill; CUDA events, median of 20 after 5 warm-ups. Then a checksum of
// each variant's first 2^20 values (seed 42, offset 7, N(0.5, 2^2)): FNV-1a over their bytes, which the
// CPU's `normal_f32_statistics_on_ten_million` (tests/random_cpu.rs) prints for the committed kernel.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>
#include <curand.h>
#include "../median_ms.cuh"

void normal_old(float *, unsigned long long, int);
void normal_new(float *, unsigned long long, int);
void normal_ldg(float *, unsigned long long, int);
void normal_z1024(float *, unsigned long long, int);
void normal_inline(float *, unsigned long long, int);
void normal_r64(float *, unsigned long long, int);
void uniform_new(float *, unsigned long long, int);

struct Variant {
    const char *name;
    void (*run)(float *, unsigned long long, int);
};
static const Variant variants[] = {
    {"old", normal_old}, {"new", normal_new}, {"ldg", normal_ldg}, {"z1024", normal_z1024}, {"inline", normal_inline},
    {"r64", normal_r64}};

int main(int argc, char **) {
    const unsigned long long n = 1ull << 28;
    float *out;
    cudaMalloc(&out, n * 4);
    const int full = (int)((n / 4 + 255) / 256);
    if (argc > 1) {  // for ncu: one launch of each variant
        for (const Variant &v : variants) v.run(out, n, full);
        return cudaDeviceSynchronize() != cudaSuccess;
    }
    int sms;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    auto gbs = [&](float ms) { return n * 4.0 / (ms * 1e-3) / 1e9; };
    const float memset = median_ms([&] { cudaMemsetAsync(out, 1, n * 4); });
    printf("memset              %7.0f GB/s\n", gbs(memset));
    curandGenerator_t gen;
    curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10);
    const float cur = median_ms([&] { curandGenerateNormal(gen, out, n, 0.5f, 2.0f); });
    printf("curand normal       %7.0f GB/s (%.2fx memset)\n", gbs(cur), memset / cur);
    const float uni = median_ms([&] { uniform_new(out, n, full); });
    printf("uniform             %7.0f GB/s (%.2fx memset)\n", gbs(uni), memset / uni);
    const int grids[] = {full, sms * 8, sms * 16, sms * 32};
    for (int g : grids) {
        printf("grid %7d:", g);
        for (const Variant &v : variants) {
            const float ms = median_ms([&] { v.run(out, n, g); });
            printf("  %s %5.0f GB/s (%.2fx memset, %.2fx curand)", v.name, gbs(ms), memset / ms, cur / ms);
        }
        printf("\n");
    }
    std::vector<float> h(1 << 24);
    for (const Variant &v : variants) {
        v.run(out, n, full);
        cudaMemcpy(h.data(), out, h.size() * 4, cudaMemcpyDeviceToHost);
        unsigned long long fnv = 0xcbf29ce484222325ull;
        const unsigned char *bytes = reinterpret_cast<const unsigned char *>(h.data());
        for (size_t i = 0; i < (1u << 20) * 4; ++i) fnv = (fnv ^ bytes[i]) * 0x100000001b3ull;
        double s = 0, s2 = 0;
        for (float x : h) s += x, s2 += (double)x * x;
        const double mean = s / h.size(), var = s2 / h.size() - mean * mean;
        printf("%-6s checksum of the first 2^20: 0x%016llx; mean %.5f stddev %.5f over %zu values (want 0.5, 2)\n",
               v.name, fnv, mean, std::sqrt(var), h.size());
    }
    printf("error: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
