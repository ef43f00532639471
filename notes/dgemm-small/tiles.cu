// Experiment (issue 32, DGEMM on small and odd shapes): cuBLAS runs those on 32 x 32 and 32 x 64 tiles of four
// warps (16 x 16 or 16 x 32 each) with deep rings (ncu, cublas_kernels.py); this times such tiles of the product's
// DmTile (cuda/gemm_f64_dmma.cuh) beside the product's 128 and 64 tiles and cuBLAS, same operands, same run.
// Checked against cuBLAS's answer (max |ours - cuBLAS| over max |cuBLAS|, NaN-poisoned output); median of 20
// runs after 5 warm-ups (CUDA events). `tiles product` times only the product's tiles (for A/Bs of the header:
// run.sh builds this file against other copies of gemm_f64_dmma.cuh by include path).
#include "gemm_f64_dmma.cuh"
#include "../median_ms.cuh"
#include <cublas_v2.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

DMMA_LAYOUTS(p128, Dm128, 2)
DMMA_LAYOUTS(p64, Dm64, 2)
using T32s4 = DmTile<32, 32, 2, 2, 4>;
using T32s6 = DmTile<32, 32, 2, 2, 6>;
using T32s8 = DmTile<32, 32, 2, 2, 8>;
using T32s6k4 = DmTile<32, 32, 2, 2, 6, 4>;
using T3264s4 = DmTile<32, 64, 2, 2, 4>;
using T3264s6 = DmTile<32, 64, 2, 2, 6>;
using T3264s4k4 = DmTile<32, 64, 2, 2, 4, 4>;
DMMA_LAYOUTS(x32s4, T32s4, 4)
DMMA_LAYOUTS(x32s6, T32s6, 4)
DMMA_LAYOUTS(x32s8, T32s8, 4)
DMMA_LAYOUTS(x32s6k4, T32s6k4, 4)
DMMA_LAYOUTS(x3264s4, T3264s4, 3)
DMMA_LAYOUTS(x3264s6, T3264s6, 3)
DMMA_LAYOUTS(x3264s4k4, T3264s4k4, 3)

using Kernel = void (*)(int, int, int, double, const double *, int, long long, const double *, int, long long, double,
                        double *, int, long long);
enum { NN, TN, NT, LAYOUTS };
const char *const layout_name[] = {"nn", "tn", "nt"};
struct Config {
    const char *name;
    Kernel fn[LAYOUTS];
    int bm, bn, threads, smem;
};
#define CONFIG(NAME, PREFIX, TILE) {NAME, {PREFIX##_nn, PREFIX##_tn, PREFIX##_nt}, TILE::BM, TILE::BN, TILE::THREADS, TILE::SMEM}
struct Shape {
    int m, n, k;
    unsigned layouts;  // bit per layout
    bool pad;
};

int main(int argc, char **argv) {
    const unsigned seed = argc > 1 ? atoi(argv[1]) : 1234;
    printf("seed %u\n", seed);
    constexpr unsigned ALL = 1u << NN | 1u << TN | 1u << NT, N_ = 1u << NN;
    const bool product_only = argc > 2 && !strcmp(argv[2], "product");
    const Shape shapes[] = {
        {183, 103, 647, N_, false},    {179, 595, 869, N_, false},   {41, 185, 2913, N_, false},
        {121, 1885, 505, N_, false},   {2375, 47, 421, N_, false},   {2927, 51, 1083, N_, false},
        {64, 768, 768, N_, false},     {32, 3072, 768, N_, false},   {16, 3072, 768, N_, false},
        {512, 768, 768, N_, false},    {512, 1024, 1024, N_, false}, {600, 600, 600, N_, false},
        {700, 700, 700, N_, false},    {1000, 1000, 1000, N_, false}, {1001, 1003, 1005, N_, false},
        {161, 1817, 159, N_, false},   {403, 437, 65, N_, false},    {533, 1091, 1883, N_, false},
        {209, 1113, 2443, N_, false},  {512, 3072, 768, N_, false},  {64, 12288, 4096, N_, false},
        {1536, 1536, 1536, N_, false}, {4096, 4096, 128, N_, false}, {8192, 8192, 64, N_, false},
        {8192, 8192, 256, N_, false},  {2881, 1717, 51, N_, false},  {2048, 2048, 2048, N_, false},
        {4096, 4096, 4096, ALL, false}, {4096, 768, 3072, N_, false},
        {1001, 999, 997, ALL, true},   {333, 777, 129, ALL, false},  {129, 65, 33, N_, false},
        {200, 100, 20, ALL, true},     {1, 1, 1, N_, false},
    };

    const Config all_configs[] = {
        CONFIG("p128", p128, Dm128),          CONFIG("p64", p64, Dm64),
        CONFIG("32s4", x32s4, T32s4),         CONFIG("32s6", x32s6, T32s6),
        CONFIG("32s8", x32s8, T32s8),         CONFIG("32s6k4", x32s6k4, T32s6k4),
        CONFIG("32x64s4", x3264s4, T3264s4),  CONFIG("32x64s6", x3264s6, T3264s6),
        CONFIG("32x64s4k4", x3264s4k4, T3264s4k4),
    };
    const int n_configs = product_only ? 2 : sizeof all_configs / sizeof all_configs[0];
    const Config *configs = all_configs;
    for (int ci = 0; ci < n_configs; ++ci)
        for (Kernel fn : configs[ci].fn) cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, configs[ci].smem);
    cublasHandle_t h;
    cublasCreate(&h);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    int wrong = 0;
    for (const Shape &s : shapes)
        for (int lay = 0; lay < LAYOUTS; ++lay) {
            if (!(s.layouts >> lay & 1)) continue;
            const int m = s.m, n = s.n, k = s.k;
            const bool ta = lay == TN, tb = lay == NT;
            auto even = [&](int x) { return s.pad && x % 2 ? x + 1 : x; };
            // A stored m x k (k x m transposed), B stored k x n (n x k transposed), row-major.
            const int a_rows = ta ? k : m, lda = even(ta ? m : k), b_rows = tb ? n : k, ldb = even(tb ? k : n);
            std::vector<double> ha((size_t)a_rows * lda), hb((size_t)b_rows * ldb);
            for (auto &x : ha) x = u(rng);
            for (auto &x : hb) x = u(rng);
            double *a, *b, *c, *ref;
            cudaMalloc(&a, ha.size() * 8), cudaMalloc(&b, hb.size() * 8);
            cudaMalloc(&c, (size_t)m * n * 8), cudaMalloc(&ref, (size_t)m * n * 8);
            cudaMemcpy(a, ha.data(), ha.size() * 8, cudaMemcpyHostToDevice);
            cudaMemcpy(b, hb.data(), hb.size() * 8, cudaMemcpyHostToDevice);
            const double one = 1, zero = 0;
            // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
            const cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
            auto cublas = [&] { cublasDgemm(h, opb, opa, n, m, k, &one, b, ldb, a, lda, &zero, ref, n); };
            const float t_cublas = median_ms(cublas);
            std::vector<double> want((size_t)m * n), got((size_t)m * n);
            cudaMemcpy(want.data(), ref, want.size() * 8, cudaMemcpyDeviceToHost);
            double scale = 0;
            for (double x : want) scale = fmax(scale, fabs(x));
            const double flop = 2.0 * m * n * k;
            printf("%5dx%5dx%5d %s%s cuBLAS %6.2f TFLOP/s |", m, n, k, layout_name[lay], s.pad ? " pad" : "    ",
                   flop / t_cublas / 1e9);
            const char *best = "";
            float best_t = 1e30f;
            for (int ci = 0; ci < n_configs; ++ci) {
                const Config &cf = configs[ci];
                Kernel fn = cf.fn[lay];
                dim3 grid((n + cf.bn - 1) / cf.bn, (m + cf.bm - 1) / cf.bm, 1);
                cudaMemset(c, 0xff, (size_t)m * n * 8);  // NaN: an unwritten element shows
                fn<<<grid, cf.threads, cf.smem>>>(m, n, k, 1.0, a, lda, 0, b, ldb, 0, 0.0, c, n, 0);
                cudaMemcpy(got.data(), c, got.size() * 8, cudaMemcpyDeviceToHost);
                double err = 0;
                for (size_t i = 0; i < got.size(); ++i)
                    err = fmax(err, std::isnan(got[i]) ? INFINITY : fabs(got[i] - want[i]));
                auto ours = [&] { fn<<<grid, cf.threads, cf.smem>>>(m, n, k, 1.0, a, lda, 0, b, ldb, 0, 0.0, c, n, 0); };
                const float t = median_ms(ours);
                const cudaError_t e = cudaGetLastError();
                const bool bad = e != cudaSuccess || !(err / scale <= 1e-12);
                wrong += bad;
                if (t < best_t) best_t = t, best = cf.name;
                printf(" %s %.2f%s", cf.name, t_cublas / t, bad ? " WRONG" : "");
                if (e != cudaSuccess) printf(" (%s)", cudaGetErrorString(e));
            }
            printf(" | best %s %.2f\n", best, t_cublas / best_t);
            fflush(stdout);
            cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(ref);
        }
    printf("%d wrong\n", wrong);
    return wrong != 0;
}
