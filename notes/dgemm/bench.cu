// Experiment (issue 32, DGEMM): cuda/gemm_f64.cu's DMMA kernels (its 128 x 64 and 64 x 64 tiles) against cuBLAS
// DGEMM on the same operands (add a candidate tile here to compare it beside them):
// checked against cuBLAS's answer (max |ours - cuBLAS| over max |cuBLAS|; an unwritten element reads NaN, shown as
// inf), timed as the median of 20 runs after 5 warm-ups (CUDA events). NN on every shape, TN and NT on some; "pad"
// shapes round every odd leading dimension up to even so that their odd m, n, k run the 16-byte copies with
// partial pairs (the others with odd k or n run the 8-byte copies). Built and run by run.sh. (The logs before
// k32-h200.log came from earlier versions of this file, in git history: tiles-h100.log etc.)
#include "../../cuda/gemm_f64.cu"
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
        {2048, 2048, 2048, N_, false},   {4096, 4096, 4096, ALL, false}, {8192, 8192, 8192, N_, false},
        {4096, 768, 3072, N_, false},    {512, 16384, 4096, N_, false},  {4097, 4095, 4093, ALL, false},
        {1001, 999, 997, ALL, true},     {1000, 1000, 1000, N_, false},  {333, 777, 129, ALL, false},
        {333, 777, 129, ALL, true},      {129, 65, 33, N_, false},       {200, 100, 20, ALL, true},
        {1, 1, 1, N_, false},
    };
    const Config configs[] = {
        {"128x64", {gemm_f64_dmma_nn, gemm_f64_dmma_tn, gemm_f64_dmma_nt}, Dm128::BM, Dm128::BN, Dm128::THREADS,
         Dm128::SMEM},
        {"64x64", {gemm_f64_dmma64_nn, gemm_f64_dmma64_tn, gemm_f64_dmma64_nt}, Dm64::BM, Dm64::BN, Dm64::THREADS,
         Dm64::SMEM},
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
            // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, each stored matrix read as its
            // column-major transpose.
            const cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
            auto cublas = [&] { cublasDgemm(h, opb, opa, n, m, k, &one, b, ldb, a, lda, &zero, ref, n); };
            const float t_cublas = median_ms(cublas);
            std::vector<double> want((size_t)m * n), got((size_t)m * n);
            cudaMemcpy(want.data(), ref, want.size() * 8, cudaMemcpyDeviceToHost);
            double scale = 0;
            for (double x : want) scale = fmax(scale, fabs(x));
            const double flop = 2.0 * m * n * k;
            for (const Config &cf : configs) {
                Kernel fn = cf.fn[lay];
                const int smem = cf.smem, threads = cf.threads;
                dim3 grid((n + cf.bn - 1) / cf.bn, (m + cf.bm - 1) / cf.bm, 1);
                cudaMemset(c, 0xff, (size_t)m * n * 8);  // NaN: an unwritten element shows
                fn<<<grid, threads, smem>>>(m, n, k, 1.0, a, lda, 0, b, ldb, 0, 0.0, c, n, 0);
                cudaMemcpy(got.data(), c, got.size() * 8, cudaMemcpyDeviceToHost);  // checked from a single run
                double err = 0;
                for (size_t i = 0; i < got.size(); ++i)
                    err = fmax(err, std::isnan(got[i]) ? INFINITY : fabs(got[i] - want[i]));
                auto ours = [&] { fn<<<grid, threads, smem>>>(m, n, k, 1.0, a, lda, 0, b, ldb, 0, 0.0, c, n, 0); };
                const float t = median_ms(ours);
                const cudaError_t e = cudaGetLastError();
                const bool bad = e != cudaSuccess || !(err / scale <= 1e-12);
                wrong += bad;
                printf("%5dx%5dx%5d %s%s tile %-8s  ours %6.2f TFLOP/s  cuBLAS %6.2f  ratio %.3f  err %.1e%s%s\n", m, n,
                       k, layout_name[lay], s.pad ? " pad" : "    ", cf.name, flop / t / 1e9, flop / t_cublas / 1e9,
                       t_cublas / t, err / scale, bad ? "  WRONG" : "", e != cudaSuccess ? cudaGetErrorString(e) : "");
            }
            cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(ref);
        }
    printf("%d wrong\n", wrong);
    return wrong != 0;
}
