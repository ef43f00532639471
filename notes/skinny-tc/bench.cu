// Experiment (issue 32, decode shapes): the tensor-core skinny kernels of cuda/gemm_skinny.cu over a sweep of
// configurations, checked against an f64 CPU reference and timed against cuBLAS and a device-to-device copy of
// the weight bytes, for 16-bit products of 1-64 rows against a wide weight matrix. Built and run on the GPU
// machine by notes/skinny-tc/run.sh. CONFIGS is defined per translation unit (wk.cu / wl.cu include this file).
#include "../../cuda/gemm_simt.cu"
#include "../../cuda/gemm_skinny.cu"
#include <cublas_v2.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#define CK(x)                                                                                                  \
    do {                                                                                                       \
        cudaError_t e = (x);                                                                                   \
        if (e != cudaSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } \
    } while (0)

template <bool WKL, int S, int MT, int WL, int WK, int U>
__global__ void __launch_bounds__(256) tc_kernel(int rows, int L, int k, int kc, const __nv_bfloat16 *X, long long xs,
                                                 long long xk, const __nv_bfloat16 *W, long long wld, float *part,
                                                 long long ps, long long pl) {
    if constexpr (WKL)
        skinny_tc_wk<S, MT, WL, WK, U, __nv_bfloat16>(rows, L, k, kc, X, xs, xk, W, wld, part, ps, pl);
    else
        skinny_tc_wl<S, WL, WK, U, __nv_bfloat16>(rows, L, k, kc, X, xs, xk, W, wld, part, ps, pl);
}

struct Config {
    const char *name;
    bool wk;
    int S, MT, WL, WK, U;
    void (*fn)(int, int, int, int, const __nv_bfloat16 *, long long, long long, const __nv_bfloat16 *, long long,
               float *, long long, long long);
    int cols() const { return WL * 16 * MT; }
};
#define CFG(WKL, S, MT, WL, WK, U) \
    Config{#WKL " S" #S " MT" #MT " WL" #WL " WK" #WK " U" #U, WKL, S, MT, WL, WK, U, tc_kernel<WKL, S, MT, WL, WK, U>}

static float bf(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

// Median over `reps` batches of 20 back-to-back calls (CUDA events around each batch), per call: the launch
// overhead is hidden as in a stream of work, as the prism bench times.
template <typename F> static float median_us(F f, int reps) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 5; ++i) f(i);
    std::vector<float> t;
    int it = 0;
    for (int i = 0; i < reps; ++i) {
        CK(cudaEventRecord(a));
        for (int j = 0; j < 20; ++j) f(it++);
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1000.f / 20);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main(int argc, char **argv) {
    extern std::vector<Config> configs();
    const std::vector<Config> all = configs();
    const bool wk_layout = all[0].wk;
    cublasHandle_t h;
    cublasCreate(&h);
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    // Shapes: (rows, L, K). Four copies of the weights rotate so that they do not sit in L2 (50 MB).
    const int shapes[][3] = {{1, 4096, 4096}, {2, 4096, 4096}, {4, 4096, 4096}, {8, 4096, 4096}, {16, 4096, 4096},
                             {8, 12288, 4096}, {8, 4096, 12288}, {8, 2048, 8192}, {16, 8192, 2048}, {8, 32000, 2048},
                             {13, 50257, 768}, {5, 4100, 4099}};
    const int copies = argc > 2 ? atoi(argv[2]) : 4;
    std::mt19937 rng(argc > 1 ? atoi(argv[1]) : 1234);
    printf("seed %d, layout %s, %d copies of the weights\n", argc > 1 ? atoi(argv[1]) : 1234,
           wk_layout ? "wk (W[l*K+k])" : "wl (W[k*L+l])", copies);
    for (auto &sh : shapes) {
        const int rows = sh[0], L = sh[1], K = sh[2];
        const size_t wn = (size_t)L * K, xn = (size_t)rows * K;
        std::vector<uint16_t> hw(wn), hx(xn);
        std::uniform_real_distribution<float> d(-1.f, 1.f);
        auto tobf = [](float f) { uint32_t u; memcpy(&u, &f, 4); return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16); };
        for (auto &v : hw) v = tobf(d(rng));
        for (auto &v : hx) v = tobf(d(rng));
        __nv_bfloat16 *dw, *dx, *dc;
        float *part, *cf;
        CK(cudaMalloc(&dw, wn * 2 * copies));
        CK(cudaMalloc(&dx, xn * 2));
        CK(cudaMalloc(&dc, (size_t)rows * L * 2));
        CK(cudaMalloc(&cf, (size_t)rows * L * 4));
        CK(cudaMalloc(&part, (size_t)64 * rows * L * 4 + 1024));
        for (int i = 0; i < copies; ++i) CK(cudaMemcpy(dw + i * wn, hw.data(), wn * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dx, hx.data(), xn * 2, cudaMemcpyHostToDevice));
        // f64 reference, and the scale sum |x w| per output for the tolerance.
        std::vector<double> ref((size_t)rows * L), mag((size_t)rows * L);
        std::vector<float> xf(xn), wf(wn);
        for (size_t i = 0; i < xn; ++i) xf[i] = bf(hx[i]);
        for (size_t i = 0; i < wn; ++i) wf[i] = bf(hw[i]);
        for (int s = 0; s < rows; ++s)
            for (int l = 0; l < L; ++l) {
                double acc = 0, m = 0;
                for (int kk = 0; kk < K; ++kk) {
                    const double w = wk_layout ? wf[(size_t)l * K + kk] : wf[(size_t)kk * L + l];
                    acc += (double)xf[(size_t)s * K + kk] * w;
                    m += fabs((double)xf[(size_t)s * K + kk] * w);
                }
                ref[(size_t)s * L + l] = acc;
                mag[(size_t)s * L + l] = m;
            }
        const long long wld = wk_layout ? K : L;
        // cuBLAS (column-major view of the row-major product), bf16 out, f32 compute.
        const float one = 1.f, zero = 0.f;
        auto cublas = [&](int it) {
            const __nv_bfloat16 *w = dw + (size_t)(it % copies) * wn;
            cublasGemmEx(h, wk_layout ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, L, rows, K, &one, w, CUDA_R_16BF,
                         wk_layout ? K : L, dx, CUDA_R_16BF, K, &zero, dc, CUDA_R_16BF, L, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT);
        };
        const float t_cublas = median_us(cublas, 15);
        const float t_copy = median_us(
            [&](int it) { CK(cudaMemcpyAsync(dw + (size_t)((it + 1) % copies) * wn, dw + (size_t)(it % copies) * wn, wn * 2, cudaMemcpyDeviceToDevice)); }, 15);
        // restore the copy the copies overwrote (all equal anyway)
        printf("\n%d x %d x %d: cuBLAS %.2f us, copy of the weights %.2f us (%.0f GB/s)\n", rows, L, K, t_cublas,
               t_copy, 2.0 * wn * 2 / t_copy / 1e3);
        float best = 1e30f;
        std::string best_name;
        for (auto &c : all) {
            if (c.S < rows || (c.S > 8 && c.S / 2 >= rows)) continue;
            const int cols = c.wk ? c.cols() : c.WL * 64;
            const int bx = (L + cols - 1) / cols;
            for (int per_sm : {1, 2, 4, 8}) {
                int splits = std::max(1, (per_sm * sms + bx - 1) / bx);
                splits = std::min(splits, std::max(1, K / 256));
                int kc = ((K + splits - 1) / splits + 255) / 256 * 256;
                splits = (K + kc - 1) / kc;
                if (splits > 64) continue;
                auto run = [&](int it, bool f32out) {
                    c.fn<<<dim3(bx, splits), 256>>>(rows, L, K, kc, dx, K, 1, dw + (size_t)(it % copies) * wn,
                                                             wld, part, L, 1);
                    if (f32out) gemm_splitk_reduce_f32<<<std::min((rows * L + 255) / 256, 4 * sms), 256>>>(rows, L, splits, part, 1.f, 0.f, cf, L, nullptr, 0);
                    else gemm_splitk_reduce_bf16<<<std::min((rows * L + 255) / 256, 4 * sms), 256>>>(rows, L, splits, part, 1.f, 0.f, dc, L, nullptr, 0);
                };
                // correctness, outputs poisoned
                CK(cudaMemset(part, 0xff, (size_t)splits * rows * L * 4));
                CK(cudaMemset(cf, 0xff, (size_t)rows * L * 4));
                CK(cudaMemset(dc, 0xff, (size_t)rows * L * 2));
                run(0, true);
                CK(cudaGetLastError());
                CK(cudaDeviceSynchronize());
                std::vector<float> out((size_t)rows * L);
                CK(cudaMemcpy(out.data(), cf, out.size() * 4, cudaMemcpyDeviceToHost));
                double worst = 0;
                for (size_t i = 0; i < out.size(); ++i) {
                    const double tol = mag[i] * 1e-5 + 1e-30;
                    const double e = fabs(out[i] - ref[i]) / tol;
                    if (!(e <= worst)) worst = std::isnan(e) ? 1e30 : std::max(worst, e);
                }
                const float t = median_us([&](int it) { run(it, false); }, 15);
                const float t_slices = median_us([&](int it) {
                    c.fn<<<dim3(bx, splits), 256>>>(rows, L, K, kc, dx, K, 1, dw + (size_t)(it % copies) * wn,
                                                             wld, part, L, 1);
                }, 15);
                printf("  %-34s splits %2d kc %5d grid %4d x %2d: %7.2f us (slices %6.2f)  %.2fx cuBLAS  %.2fx copy  err %.3f%s\n",
                       c.name, splits, kc, bx, splits, t, t_slices, t_cublas / t, t_copy / t, worst, worst > 1 ? "  WRONG" : "");
                if (worst <= 1 && t < best) { best = t; best_name = std::string(c.name) + " splits " + std::to_string(splits); }
            }
        }
        printf("BEST %d x %d x %d: %s %.2f us = %.2fx cuBLAS, %.2fx copy\n", rows, L, K, best_name.c_str(), best,
               t_cublas / best, t_copy / best);
        cudaFree(dw); cudaFree(dx); cudaFree(dc); cudaFree(cf); cudaFree(part);
    }
    return 0;
}
