// Experiment (issue 32, DGEMM): cuda/gemm_f64.cu's DMMA kernels (its tiles and candidate ones, NN) against cuBLAS DGEMM on the
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

// A candidate tile (two blocks per multiprocessor, as cuBLAS's 128 x 64 DGEMM tile runs on an H100).
template <typename T>
__global__ void __launch_bounds__(T::THREADS, 2) candidate(int m, int n, int k, double alpha, const double *A, int lda,
                                                           long long sA, const double *B, int ldb, long long sB,
                                                           double beta, double *C, int ldc, long long sC) {
    dmma_kernel<T, false, false>(m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC);
}

using Kernel = void (*)(int, int, int, double, const double *, int, long long, const double *, int, long long, double,
                        double *, int, long long);
struct Config {
    const char *name;
    Kernel fn;
    int bm, bn, threads, smem;
};
template <typename T> Config config(const char *name, Kernel fn) { return {name, fn, T::BM, T::BN, T::THREADS, T::SMEM}; }

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
        using D128x64 = DmTile<128, 64, 2, 2, 8>;
        using D128x64k16 = DmTile<128, 64, 2, 2, 16>;
        using D64x128 = DmTile<64, 128, 2, 2, 8>;
        const Config configs[] = {config<Dm128>("128x128", gemm_f64_dmma_nn), config<Dm64>("64x64", gemm_f64_dmma64_nn),
                                  config<D128x64>("128x64", candidate<D128x64>),
                                  config<D128x64k16>("128x64k16", candidate<D128x64k16>),
                                  config<D64x128>("64x128", candidate<D64x128>)};
        for (const Config &cf : configs) {
            auto *fn = cf.fn;
            const int smem = cf.smem, threads = cf.threads;
            cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
            dim3 grid((n + cf.bn - 1) / cf.bn, (m + cf.bm - 1) / cf.bm, 1);
            cudaMemset(c, 0xff, (size_t)m * n * 8);  // NaN: an unwritten element shows
            auto ours = [&] { fn<<<grid, threads, smem>>>(m, n, k, 1.0, a, k, 0, b, n, 0, 0.0, c, n, 0); };
            const float t = median_ms(ours);
            cudaMemcpy(got.data(), c, got.size() * 8, cudaMemcpyDeviceToHost);
            double err = 0;
            for (size_t i = 0; i < got.size(); ++i) err = fmax(err, std::isnan(got[i]) ? INFINITY : fabs(got[i] - want[i]));
            printf("%5dx%5dx%5d tile %-9s  ours %6.2f TFLOP/s  cuBLAS %6.2f  ratio %.3f  err %.1e%s\n", m, n, k, cf.name,
                   flop / t / 1e9, flop / t_cublas / 1e9, t_cublas / t, err / scale, err / scale > 1e-12 ? "  WRONG" : "");
        }
        if (cudaGetLastError() != cudaSuccess) { printf("CUDA error\n"); return 1; }
        cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(ref);
    }
    return 0;
}
