// The DGEMM harnesses' shared part (notes/dgemm/bench.cu, notes/dgemm-small/tiles.cu): DMMA entry points of
// DmTile configurations (cuda/gemm_f64_dmma.cuh, included by the harness first) timed against cuBLAS DGEMM on
// the same operands, each answer checked against cuBLAS's (max |ours - cuBLAS| over max |cuBLAS|, NaN-poisoned
// output: an unwritten element shows as inf); the median of 20 runs after 5 warm-ups (CUDA events).
#pragma once
#include "../median_ms.cuh"
#include <cublas_v2.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using Kernel = void (*)(int, int, int, double, const double *, int, long long, const double *, int, long long, double,
                        double *, int, long long);
enum { NN, TN, NT, LAYOUTS };
const char *const layout_name[] = {"nn", "tn", "nt"};
struct Config {
    const char *name;
    Kernel fn[LAYOUTS];
    int bm, bn, threads, smem;
};
#define CONFIG(NAME, PREFIX, TILE) \
    {NAME, {PREFIX##_nn, PREFIX##_tn, PREFIX##_nt}, TILE::BM, TILE::BN, TILE::THREADS, TILE::SMEM}
struct Shape {
    int m, n, k;
    unsigned layouts;  // bit per layout
    bool pad;
};

// Times every configuration on every shape and layout the shape asks for; returns the number of wrong answers.
inline int run_harness(unsigned seed, const Config *configs, int n_configs, const Shape *shapes, int n_shapes) {
    printf("seed %u\n", seed);
    for (int ci = 0; ci < n_configs; ++ci)
        for (Kernel fn : configs[ci].fn)
            cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, configs[ci].smem);
    cublasHandle_t h;
    cublasCreate(&h);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    int wrong = 0;
    for (int si = 0; si < n_shapes; ++si) {
        const Shape &s = shapes[si];
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
                auto ours = [&] {
                    fn<<<grid, cf.threads, cf.smem>>>(m, n, k, 1.0, a, lda, 0, b, ldb, 0, 0.0, c, n, 0);
                };
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
    }
    printf("%d wrong\n", wrong);
    return wrong;
}
