// Experiment (issue 32, DGEMM): cuda/gemm_f64.cu's DMMA kernels (both tiles, NN) against cuBLAS DGEMM on the
// same operands: checked against cuBLAS's answer (max |ours - cuBLAS| over max |cuBLAS|), timed as the median of
// 20 runs after 5 warm-ups (CUDA events). Built and run by run.sh.
#include "../../cuda/gemm_f64.cu"
#include "../median_ms.cuh"
#include <cublas_v2.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

int main(int argc, char **argv) {
    const unsigned seed = argc > 1 ? atoi(argv[1]) : 1234;
    printf("seed %u\n", seed);
    const int shapes[][3] = {{4096, 4096, 4096}, {8192, 8192, 4096}, {2048, 2048, 2048}, {4096, 768, 768},
                             {1000, 1000, 1000}, {600, 600, 600},    {512, 4096, 4096}, {256, 256, 8192}};
    cublasHandle_t h;
    cublasCreate(&h);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto &s : shapes) {
        const int m = s[0], n = s[1], k = s[2];
        std::vector<double> ha((size_t)m * k), hb((size_t)k * n);
        for (auto &x : ha) x = u(rng);
        for (auto &x : hb) x = u(rng);
        double *a, *b, *c, *ref;
        cudaMalloc(&a, ha.size() * 8), cudaMalloc(&b, hb.size() * 8);
        cudaMalloc(&c, (size_t)m * n * 8), cudaMalloc(&ref, (size_t)m * n * 8);
        cudaMemcpy(a, ha.data(), ha.size() * 8, cudaMemcpyHostToDevice);
        cudaMemcpy(b, hb.data(), hb.size() * 8, cudaMemcpyHostToDevice);
        const double one = 1, zero = 0;
        // Row-major C = A B is column-major C^T = B^T A^T.
        auto cublas = [&] { cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, ref, n); };
        const float t_cublas = median_ms(cublas);
        std::vector<double> want((size_t)m * n), got((size_t)m * n);
        cudaMemcpy(want.data(), ref, want.size() * 8, cudaMemcpyDeviceToHost);
        double scale = 0;
        for (double x : want) scale = fmax(scale, fabs(x));
        const double flop = 2.0 * m * n * k;
        for (int tile : {128, 64}) {
            const int smem = tile == 128 ? Dm128::SMEM : Dm64::SMEM, threads = tile == 128 ? 256 : 128;
            auto *fn = tile == 128 ? gemm_f64_dmma_nn : gemm_f64_dmma64_nn;
            cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
            dim3 grid((n + tile - 1) / tile, (m + tile - 1) / tile, 1);
            cudaMemset(c, 0xff, (size_t)m * n * 8);  // NaN: an unwritten element shows
            auto ours = [&] { fn<<<grid, threads, smem>>>(m, n, k, 1.0, a, k, 0, b, n, 0, 0.0, c, n, 0); };
            const float t = median_ms(ours);
            cudaMemcpy(got.data(), c, got.size() * 8, cudaMemcpyDeviceToHost);
            double err = 0;
            for (size_t i = 0; i < got.size(); ++i) err = fmax(err, std::isnan(got[i]) ? INFINITY : fabs(got[i] - want[i]));
            printf("%5dx%5dx%5d tile %3d  ours %6.2f TFLOP/s  cuBLAS %6.2f  ratio %.3f  err %.1e%s\n", m, n, k, tile,
                   flop / t / 1e9, flop / t_cublas / 1e9, t_cublas / t, err / scale, err / scale > 1e-12 ? "  WRONG" : "");
        }
        if (cudaGetLastError() != cudaSuccess) { printf("CUDA error\n"); return 1; }
        cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(ref);
    }
    return 0;
}
