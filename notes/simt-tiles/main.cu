// SIMT f32 tile shapes on candle's Llama prefill attention (issue 30): 32 heads of scores q·Kᵀ (512 x 512 x 64,
// K stored n x k) and of weighted values (512 x 64 x 512, NN), against cuBLAS's strided-batched SGEMM in the same
// run (CUDA events, median of 20 after 5 warm-ups). Each tile's answer is checked against cuBLAS's.
#include <cublas_v2.h>
#include <cstdio>
#include <cmath>
#include <vector>
#include "../../cuda/gemm_simt.cu"
#include "../median_ms.cuh"

#define TILE_KERNEL(NAME, BM, BN, BK, WM, WN, LM, MINB)                                                         \
    PRISM_KERNEL void __launch_bounds__(32 * WM * WN, MINB) NAME(GEMM_ARGS(float, float)) {                   \
        tiled_entry<SimtTile<BM, BN, BK, WM, WN, LM>, float, float>(m, n, k, alpha, GEMM_PASS);                \
    }
TILE_KERNEL(t64x64k16, 64, 64, 16, 2, 2, 4, 4)
TILE_KERNEL(t64x64k8, 64, 64, 8, 2, 2, 4, 4)
TILE_KERNEL(t64x64l8, 64, 64, 16, 2, 2, 8, 4)
TILE_KERNEL(t128x64, 128, 64, 16, 2, 2, 4, 2)
TILE_KERNEL(t64x128, 64, 128, 16, 2, 4, 4, 2)
TILE_KERNEL(t32x32, 32, 32, 8, 1, 2, 8, 16)

typedef void (*Kern)(GEMM_ARGS(float, float));
struct Tile { const char *name; Kern k; int bm, bn, threads; };

int main() {
    const Tile tiles[] = {{"64x64 k16 (8x4)", t64x64k16, 64, 64, 128}, {"64x64 k8 (8x4)", t64x64k8, 64, 64, 128},
                          {"64x64 k16 (4x8)", t64x64l8, 64, 64, 128}, {"128x64 k16", t128x64, 128, 64, 128},
                          {"64x128 (simt64)", t64x128, 64, 128, 256}, {"32x32 (simt32)", t32x32, 32, 32, 64}};
    struct Shape { int m, n, k, tb; const char *what; } shapes[] = {
        {512, 512, 64, 1, "scores 512x512x64 x·Kᵀ *32"}, {512, 64, 512, 0, "values 512x64x512 *32"},
        {144, 144, 32, 0, "candle attn 144x144x32 *1000"}, {144, 32, 144, 0, "candle attn 144x32x144 *1000"}};
    cublasHandle_t h;
    cublasCreate(&h);
    for (auto s : shapes) {
        const int batch = s.m == 144 ? 1000 : 32;
        const long long sa = (long long)s.m * s.k, sb = (long long)s.k * s.n, sc = (long long)s.m * s.n;
        std::vector<float> ha(sa * batch), hb(sb * batch);
        unsigned x = 12345;
        for (auto &v : ha) v = ((x = x * 1664525u + 1013904223u) >> 8) / 16777216.f - 0.5f;
        for (auto &v : hb) v = ((x = x * 1664525u + 1013904223u) >> 8) / 16777216.f - 0.5f;
        float *A, *B, *C, *R;
        cudaMalloc(&A, 4 * sa * batch), cudaMalloc(&B, 4 * sb * batch);
        cudaMalloc(&C, 4 * sc * batch), cudaMalloc(&R, 4 * sc * batch);
        cudaMemcpy(A, ha.data(), 4 * sa * batch, cudaMemcpyHostToDevice);
        cudaMemcpy(B, hb.data(), 4 * sb * batch, cudaMemcpyHostToDevice);
        const float one = 1.f, zero = 0.f;
        const int ldb = s.tb ? s.k : s.n;
        auto blas = [&] {
            cublasSgemmStridedBatched(h, s.tb ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &one, B, ldb, sb,
                                      A, s.k, sa, &zero, R, s.n, sc, batch);
        };
        const double flops = 2.0 * s.m * s.n * s.k * batch;
        const float ref_ms = median_ms(blas);
        std::vector<float> want(sc * batch), got(sc * batch);
        cudaMemcpy(want.data(), R, 4 * sc * batch, cudaMemcpyDeviceToHost);
        printf("%s: cuBLAS %.1f us (%.1f TFLOP/s)\n", s.what, ref_ms * 1e3, flops / ref_ms / 1e9);
        for (auto t : tiles) {
            dim3 grid((s.n + t.bn - 1) / t.bn, (s.m + t.bm - 1) / t.bm, batch);
            auto run = [&] { t.k<<<grid, t.threads>>>(s.m, s.n, s.k, 1.f, A, s.k, sa, 0, B, ldb, sb, s.tb, 0.f, C, s.n, sc); };
            cudaMemset(C, 0xff, 4 * sc * batch);
            const float ms = median_ms(run);
            cudaMemcpy(got.data(), C, 4 * sc * batch, cudaMemcpyDeviceToHost);
            double d = 0, nrm = 0;
            for (size_t i = 0; i < got.size(); ++i) d += (got[i] - want[i]) * (double)(got[i] - want[i]), nrm += want[i] * (double)want[i];
            printf("  %-18s %7.1f us  %5.1f TFLOP/s  %.2fx cuBLAS  rel.diff %.1e %s\n", t.name, ms * 1e3, flops / ms / 1e9,
                   ref_ms / ms, std::sqrt(d / nrm), cudaGetErrorString(cudaGetLastError()));
        }
        cudaFree(A), cudaFree(B), cudaFree(C), cudaFree(R);
    }
}
