// Experiment (issue 30, candle's batched f32 products): cuda/gemm_simt.cu's exact-f32 tiles, today's and smaller
// candidate ones, against cublasSgemmStridedBatched on batches of small matrices (attention scores and values).
// Each answer is checked against cuBLAS's (max |ours - cuBLAS| over max |cuBLAS|); times are the median of 20
// runs after 5 warm-ups (CUDA events). Built and run by run.sh.
#include "../../cuda/gemm_simt.cu"
#include "../median_ms.cuh"
#include <cublas_v2.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

// MINB: blocks per multiprocessor the registers must allow (0: the compiler's choice).
template <typename Tile, int MINB> __global__ void __launch_bounds__(Tile::THREADS, MINB) candidate(GEMM_ARGS(float, float)) {
    tiled_entry<Tile, float, float>(m, n, k, alpha, GEMM_PASS);
}

using Kernel = void (*)(GEMM_ARGS(float, float));
struct Config {
    const char *name;
    Kernel fn;
    int bm, bn, threads;
};
template <typename T> Config config(const char *name, Kernel fn) { return {name, fn, T::BM, T::BN, T::THREADS}; }

int main(int argc, char **argv) {
    const unsigned seed = argc > 1 ? atoi(argv[1]) : 1234;
    printf("seed %u\n", seed);
    // batch, m, n, k, B transposed (stored n x k, as K in q k^T)
    const int shapes[][5] = {{1000, 144, 144, 32, 0}, {2904, 144, 144, 32, 0}, {2904, 144, 144, 32, 1},
                             {1000, 144, 32, 144, 0}, {96, 197, 197, 64, 1},   {96, 197, 64, 197, 0},
                             {384, 77, 77, 64, 1},    {384, 77, 64, 77, 0},    {256, 128, 128, 64, 1},
                             {64, 256, 256, 64, 1},   {16, 512, 512, 64, 1},   {64, 1024, 1024, 64, 1},
                             {8, 1024, 1024, 1024, 0}};
    using T32 = SimtTile<32, 32, 16, 1, 2, 8>;
    using T32k8 = SimtTile<32, 32, 8, 1, 2, 8>;
    using T32k32 = SimtTile<32, 32, 32, 1, 2, 8>;
    using T16x64 = SimtTile<16, 64, 16, 1, 2, 4>;
    using T32x64 = SimtTile<32, 64, 16, 1, 2, 8>;
    using T64x32 = SimtTile<64, 32, 16, 2, 1, 8>;
    using T64 = SimtTile<64, 64, 16, 2, 2, 8>;
    using T64w8 = SimtTile<64, 64, 16, 4, 2, 4>;  // 256 threads, 4 x 4 per thread
    const Config configs[] = {
        {"simt128x256", gemm_simt_f32_f32, 128, 256, 256}, {"simt64x128", gemm_simt64_f32_f32, 64, 128, 256},
        config<T32>("32x32k16", candidate<T32, 0>),        config<T32>("32x32k16b16", candidate<T32, 16>),
        config<T32k8>("32x32k8b16", candidate<T32k8, 16>), config<T32k32>("32x32k32", candidate<T32k32, 0>),
        config<T32k32>("32x32k32b12", candidate<T32k32, 12>), config<T16x64>("16x64b16", candidate<T16x64, 16>),
        config<T32x64>("32x64", candidate<T32x64, 0>),     config<T32x64>("32x64b10", candidate<T32x64, 10>),
        config<T64x32>("64x32b10", candidate<T64x32, 10>), config<T64>("64x64", candidate<T64, 0>),
        config<T64>("64x64b6", candidate<T64, 6>),         config<T64w8>("64x64w8b3", candidate<T64w8, 3>)};
    cublasHandle_t h;
    cublasCreate(&h);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto &s : shapes) {
        const int batch = s[0], m = s[1], n = s[2], k = s[3], tb = s[4];
        const size_t sa = (size_t)m * k, sb = (size_t)k * n, sc = (size_t)m * n;
        std::vector<float> ha(sa * batch), hb(sb * batch);
        for (auto &x : ha) x = u(rng);
        for (auto &x : hb) x = u(rng);
        float *a, *b, *c, *ref;
        cudaMalloc(&a, ha.size() * 4), cudaMalloc(&b, hb.size() * 4);
        cudaMalloc(&c, sc * batch * 4), cudaMalloc(&ref, sc * batch * 4);
        cudaMemcpy(a, ha.data(), ha.size() * 4, cudaMemcpyHostToDevice);
        cudaMemcpy(b, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice);
        const float one = 1, zero = 0;
        const int ldb = tb ? k : n;
        // Row-major C = A op(B) is column-major C^T = op(B)^T A^T.
        auto cublas = [&] {
            cublasSgemmStridedBatched(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, ldb, sb, a, k,
                                      sa, &zero, ref, n, sc, batch);
        };
        const float t_cublas = median_ms(cublas);
        std::vector<float> want(sc * batch), got(sc * batch);
        cudaMemcpy(want.data(), ref, want.size() * 4, cudaMemcpyDeviceToHost);
        double scale = 0;
        for (float x : want) scale = fmax(scale, fabs(x));
        const double flop = 2.0 * batch * m * n * k;
        printf("batch %4d %4dx%4dx%4d %s  cuBLAS %7.1f us %6.2f TFLOP/s\n", batch, m, n, k, tb ? "nt" : "nn",
               t_cublas * 1e3, flop / t_cublas / 1e9);
        for (const Config &cf : configs) {
            dim3 grid((n + cf.bn - 1) / cf.bn, (m + cf.bm - 1) / cf.bm, batch);
            cudaMemset(c, 0xff, sc * batch * 4);  // NaN: an unwritten element shows
            auto ours = [&] { cf.fn<<<grid, cf.threads>>>(m, n, k, 1.f, a, k, sa, 0, b, ldb, sb, tb, 0.f, c, n, sc); };
            const float t = median_ms(ours);
            cudaMemcpy(got.data(), c, got.size() * 4, cudaMemcpyDeviceToHost);
            double err = 0;
            for (size_t i = 0; i < got.size(); ++i) err = fmax(err, std::isnan(got[i]) ? INFINITY : fabs(got[i] - want[i]));
            printf("    %-12s %7.1f us %6.2f TFLOP/s  cuBLAS/ours %.3f  err %.1e%s\n", cf.name, t * 1e3,
                   flop / t / 1e9, t_cublas / t, err / scale, err / scale > 1e-5 ? "  WRONG" : "");
        }
        if (cudaGetLastError() != cudaSuccess) { printf("CUDA error\n"); return 1; }
        cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(ref);
    }
    return 0;
}
