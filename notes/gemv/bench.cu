// Experiment (issue 30, candle's `matmul_gemv`, 1 x 2048 x 2048 f32): one row times a k x L row-major weight.
// The sliced path (gemm_skinny_wl_f32_s1 over slices of k, then gemm_splitk_reduce_f32: two launches) against
// the one-launch gemm_gemv_wl_f32_f32_c<CW> (each block owns CW columns over all of k, a shared-memory tree sums its
// row groups in a fixed order, no workspace); against cuBLAS SGEMM as candle calls it. harness-h200.txt is the
// first version's run, whose kernel took U (rows in flight) as a parameter too: u4 is what the library kept. Checked against an f64 reference (max relative error per element, scaled to sum |x w|); times are
// the median of 20 runs after 5 warm-ups (CUDA events). Built and run by run.sh.
#include "../../cuda/gemm_skinny.cu"
#include "../median_ms.cuh"
#include <cublas_v2.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

// gemm_simt.cu's split-K finish (linked from its own translation unit).
PRISM_KERNEL void gemm_splitk_reduce_f32(int m, int n, int splits, const float *part, float alpha, float beta,
                                         float *C, int ldc, const float *bias, int act);

int main(int argc, char **argv) {
    const unsigned seed = argc > 1 ? atoi(argv[1]) : 1234;
    printf("seed %u\n", seed);
    const int shapes[][2] = {{2048, 2048}, {1024, 1024}, {4096, 4096}, {3072, 768}, {768, 768}, {11008, 4096},
                             {4096, 11008}, {50257 & ~3, 768}};
    cublasHandle_t h;
    cublasCreate(&h);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto &s : shapes) {
        const int L = s[0], k = s[1];
        std::vector<float> hx(k), hw((size_t)k * L);
        for (auto &v : hx) v = u(rng);
        for (auto &v : hw) v = u(rng);
        std::vector<double> want(L, 0.0), size(L, 0.0);
        for (int kk = 0; kk < k; ++kk)
            for (int l = 0; l < L; ++l) {
                const double t = (double)hx[kk] * hw[(size_t)kk * L + l];
                want[l] += t, size[l] += fabs(t);
            }
        float *x, *w, *c, *part;
        cudaMalloc(&x, k * 4), cudaMalloc(&w, hw.size() * 4), cudaMalloc(&c, L * 4);
        cudaMalloc(&part, (size_t)64 * L * 4);
        cudaMemcpy(x, hx.data(), k * 4, cudaMemcpyHostToDevice);
        cudaMemcpy(w, hw.data(), hw.size() * 4, cudaMemcpyHostToDevice);
        std::vector<float> got(L);
        auto check = [&](const char *name, float ms, float base) {
            cudaMemcpy(got.data(), c, L * 4, cudaMemcpyDeviceToHost);
            double err = 0;
            for (int l = 0; l < L; ++l) err = fmax(err, std::isnan(got[l]) ? INFINITY : fabs(got[l] - want[l]) / size[l]);
            printf("    %-18s %7.2f us %6.0f GB/s  cuBLAS/ours %.3f  err %.1e%s\n", name, ms * 1e3,
                   (double)k * L * 4 / ms / 1e6, base / ms, err, err > 1e-6 ? "  WRONG" : "");
        };
        const float one = 1, zero = 0;
        cudaMemset(c, 0xff, L * 4);
        const float t_cublas = median_ms([&] {
            cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, L, 1, k, &one, w, L, 0, x, k, 0, &zero, c, L, 0, 1);
        });
        printf("1 x %5d x %5d\n", L, k);
        check("cuBLAS", t_cublas, t_cublas);
        // Today's path: slices of 2048 / splits rows as the plan cuts them (the tuner's best for 2048^2 was 24-32).
        for (int splits : {8, 16, 32}) {
            const int kc = ((k + splits - 1) / splits + 63) & ~63, parts = (k + kc - 1) / kc;
            if (kc > 2048) continue;
            cudaMemset(c, 0xff, L * 4);
            const float t = median_ms([&] {
                gemm_skinny_wl_f32_s1<<<dim3((L + 127) / 128, parts), 256>>>(1, L, k, kc, x, 1, 1, w, L, part, L, 1);
                gemm_splitk_reduce_f32<<<(L + 255) / 256, 256>>>(1, L, parts, part, 1.f, 0.f, c, L, nullptr, 0);
            });
            char name[32];
            snprintf(name, sizeof name, "skinny+reduce s%d", parts);
            check(name, t, t_cublas);
        }
#define GEMV(CW)                                                                                        \
    {                                                                                                   \
        cudaMemset(c, 0xff, L * 4);                                                                     \
        const float t = median_ms([&] {                                                                 \
            gemm_gemv_wl_f32_f32_c##CW<<<(L + CW - 1) / CW, 256>>>(L, k, x, 1, w, L, 1.f, 0.f, c, 1, 1, L, nullptr, 0); \
        });                                                                                             \
        check("gemv cols=" #CW, t, t_cublas);                                                           \
    }
        GEMV(8) GEMV(16) GEMV(32) GEMV(64)
        if (cudaGetLastError() != cudaSuccess) { printf("CUDA error\n"); return 1; }
        cudaFree(x), cudaFree(w), cudaFree(c), cudaFree(part);
    }
    return 0;
}
