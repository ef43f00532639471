// Experiment (issue 32, DGEMM): the product's DMMA kernels (cuda/gemm_f64_dmma.cuh) with other mma shapes
// (m16n8k8, m16n8k4), deeper rings of k tiles and a 32-row tile, against
// cuBLAS DGEMM on the same operands, on the sweep's small and odd f64 shapes (where a block's k loop runs
// alone on its multiprocessor) and a few large ones (where two blocks share one). Checked against cuBLAS's
// answer (max |ours - cuBLAS| over max |cuBLAS|, NaN-poisoned output, an unwritten element shows as inf);
// timed as the median of 20 runs after 5 warm-ups (CUDA events). Built and run by run.sh. "p128" and "p64" are the product's tiles as built (the 64-tile on m16n8k16 when the logs were made, on m16n8k4 since 985a8ed).
#include "../../cuda/gemm_f64_sm90.cu"
#include "../median_ms.cuh"
#include <cublas_v2.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using Dm128k8 = DmTile<128, 64, 2, 2, 3, 8>;
using Dm128k4 = DmTile<128, 64, 2, 2, 3, 4>;
using Dm64k8 = DmTile<64, 64, 2, 2, 3, 8>;
using Dm64k4 = DmTile<64, 64, 2, 2, 3, 4>;
using Dm64s4 = DmTile<64, 64, 2, 2, 4>;
using Dm32s4 = DmTile<32, 64, 1, 2, 4>;
using Dm32s4k8 = DmTile<32, 64, 1, 2, 4, 8>;
using Dm32s6 = DmTile<32, 64, 1, 2, 6>;
DMMA_LAYOUTS(x128k8, Dm128k8, 2)
DMMA_LAYOUTS(x128k4, Dm128k4, 2)
DMMA_LAYOUTS(x64k8, Dm64k8, 2)
DMMA_LAYOUTS(x64k4, Dm64k4, 2)
DMMA_LAYOUTS(x64s4, Dm64s4, 2)
DMMA_LAYOUTS(x32s4, Dm32s4, 3)
DMMA_LAYOUTS(x32s4k8, Dm32s4k8, 3)
DMMA_LAYOUTS(x32s6, Dm32s6, 2)

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
    const Shape shapes[] = {
        {183, 103, 647, N_, false},    {179, 595, 869, N_, false},  {41, 185, 2913, N_, false},
        {121, 1885, 505, N_, false},   {2375, 47, 421, N_, false},  {2927, 51, 1083, N_, false},
        {64, 768, 768, N_, false},     {32, 3072, 768, N_, false},  {16, 3072, 768, N_, false},
        {512, 768, 768, N_, false},    {512, 1024, 1024, N_, false}, {600, 600, 600, N_, false},
        {1000, 1000, 1000, N_, false}, {161, 1817, 159, N_, false}, {403, 437, 65, N_, false},
        {64, 12288, 4096, N_, false},  {128, 128, 16384, N_, false}, {1536, 1536, 1536, N_, false},
        {4096, 4096, 128, N_, false},  {2048, 2048, 2048, N_, false}, {4096, 4096, 4096, ALL, false}, {8192, 8192, 8192, N_, false},
        {4096, 768, 3072, N_, false},  {512, 16384, 4096, N_, false},
        {1001, 999, 997, ALL, true},   {333, 777, 129, ALL, false}, {129, 65, 33, N_, false},
        {200, 100, 20, ALL, true},     {1, 1, 1, N_, false},
    };
    const Config configs[] = {
        CONFIG("p128", gemm_f64_sm90_dmma, Dm128), CONFIG("128k8", x128k8, Dm128k8),
        CONFIG("128k4", x128k4, Dm128k4),          CONFIG("p64", gemm_f64_sm90_dmma64, Dm64),
        CONFIG("64k8", x64k8, Dm64k8),             CONFIG("64k4", x64k4, Dm64k4),
        CONFIG("64s4", x64s4, Dm64s4),             CONFIG("32s4", x32s4, Dm32s4),
        CONFIG("32s4k8", x32s4k8, Dm32s4k8),       CONFIG("32s6", x32s6, Dm32s6),
    };
    for (const Config &cf : configs)
        for (Kernel fn : cf.fn) cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, cf.smem);
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
            for (const Config &cf : configs) {
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
