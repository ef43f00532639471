// Several rows per block (issue 33): a block of B threads normalises R rows at once, each thread holding
// the same P chunks (16 bytes) of every row in registers, so that it loads each chunk of gamma / beta once
// and applies it to R rows (the row kernel loads the parameters once per row). Timed against the row
// kernels of cuda/norms.cu (as the launcher sizes them) and a D2D copy of the same bytes, and checked
// against an f64 CPU reference on a sample of rows (outputs NaN-poisoned first, seeds printed).
// Run from the repository root on the GPU machine: notes/wide-rows/multirow.sh
#include "common.cuh"
#undef PRISM_KERNEL
#define PRISM_KERNEL static __global__
#include "norms.cu"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "../median_ms.cuh"

using namespace prism;

// Every thread gets the block's sums of its R values (one barrier pair for all R).
template <int R>
__device__ __forceinline__ void block_sums(float (&v)[R]) {
    __shared__ float sh[R][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        v[r] = warp_reduce(v[r], SumOp{});
        if (lane == 0) sh[r][warp] = v[r];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < R; ++r) v[r] = warp_reduce(lane < nw ? sh[r][lane] : 0.0f, SumOp{});
    __syncthreads();
}

// Layer norm (LN) or RMS norm of rows [blockIdx.x R, blockIdx.x R + R) of x ([rows, cols], cols % N == 0,
// cols / N <= P blockDim.x, 16-byte aligned x, out, gamma, beta).
template <typename T, int R, int P, bool LN>
__global__ void __launch_bounds__(1024) multirow_norm(const T *x, const float *gamma, const float *beta, T *out,
                                                       int rows, int cols, float eps) {
    constexpr int N = Pack<T>::N;
    const int nch = cols / N, t = threadIdx.x, bs = blockDim.x, row0 = blockIdx.x * R;
    float v[R][P][N];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const uint4 *g = reinterpret_cast<const uint4 *>(x + (size_t)(row0 + r) * cols);
        uint4 u[P];
#pragma unroll
        for (int k = 0; k < P; ++k) {
            const int c = t + k * bs;
            u[k] = row0 + r < rows && c < nch ? g[c] : make_uint4(0u, 0u, 0u, 0u);
        }
#pragma unroll
        for (int k = 0; k < P; ++k) Pack<T>::unpack(u[k], v[r][k]);
    }
    const float inv_n = 1.0f / (float)cols;
    float mean[R], scale[R];
    if (LN) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
            float s = 0.0f;
#pragma unroll
            for (int k = 0; k < P; ++k)
#pragma unroll
                for (int j = 0; j < N; ++j) s += v[r][k][j];
            mean[r] = s;
        }
        block_sums<R>(mean);
#pragma unroll
        for (int r = 0; r < R; ++r) mean[r] *= inv_n;
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < P; ++k)
            if (t + k * bs < nch)
#pragma unroll
                for (int j = 0; j < N; ++j) {
                    const float d = LN ? v[r][k][j] - mean[r] : v[r][k][j];
                    s = fmaf(d, d, s);
                }
        scale[r] = s;
    }
    block_sums<R>(scale);
#pragma unroll
    for (int r = 0; r < R; ++r) scale[r] = rsqrtf(scale[r] * inv_n + eps);
#pragma unroll
    for (int k = 0; k < P; ++k) {
        const int c = t + k * bs;
        if (c >= nch) continue;
        float gg[N], bb[N];
        load_param<N>(gamma, c * N, gg);
        if (LN) load_param<N>(beta, c * N, bb);
#pragma unroll
        for (int r = 0; r < R; ++r) {
            if (row0 + r >= rows) continue;
            float y[N];
#pragma unroll
            for (int j = 0; j < N; ++j) {
                y[j] = LN ? fmaf((v[r][k][j] - mean[r]) * scale[r], gg[j], bb[j]) : v[r][k][j] * scale[r] * gg[j];
            }
            reinterpret_cast<uint4 *>(out + (size_t)(row0 + r) * cols)[c] = Pack<T>::pack(y);
        }
    }
}

#include "inputs.cuh"
__global__ void poison(unsigned *p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = 0x7fc00000u;  // NaN (f32), or two NaN bf16 halves
}

static int row_block(int cols) { return std::min(1024, std::max(32, ((cols + 31) / 32 + 31) / 32 * 32)); }

static float host_value(const float *p, size_t i) { return p[i]; }
static float host_value(const __nv_bfloat16 *p, size_t i) {
    unsigned short h;
    memcpy(&h, reinterpret_cast<const unsigned short *>(p) + i, 2);
    unsigned u = (unsigned)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

// Max error of `rows_checked` sampled rows of out against an f64 reference, relative to 1 + |ref|.
template <typename T>
static double check(const T *dx, const T *dout, const float *dg, const float *db, int rows, int cols, bool ln,
                    float eps, unsigned seed) {
    std::vector<T> hx((size_t)rows * cols), ho((size_t)rows * cols);
    std::vector<float> g(cols), b(cols);
    cudaMemcpy(hx.data(), dx, hx.size() * sizeof(T), cudaMemcpyDeviceToHost);
    cudaMemcpy(ho.data(), dout, ho.size() * sizeof(T), cudaMemcpyDeviceToHost);
    cudaMemcpy(g.data(), dg, cols * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(b.data(), db, cols * 4, cudaMemcpyDeviceToHost);
    srand(seed);
    double worst = 0;
    for (int s = 0; s < 24; ++s) {
        const int row = s < 2 ? (s == 0 ? 0 : rows - 1) : rand() % rows;
        double mean = 0, ss = 0;
        for (int c = 0; c < cols; ++c) mean += host_value(hx.data(), (size_t)row * cols + c);
        mean /= cols;
        for (int c = 0; c < cols; ++c) {
            const double d = host_value(hx.data(), (size_t)row * cols + c) - (ln ? mean : 0.0);
            ss += d * d;
        }
        const double rstd = 1.0 / std::sqrt(ss / cols + eps);
        for (int c = 0; c < cols; ++c) {
            const double xv = host_value(hx.data(), (size_t)row * cols + c);
            const double ref = ln ? (xv - mean) * rstd * g[c] + b[c] : xv * rstd * g[c];
            const double got = host_value(ho.data(), (size_t)row * cols + c);
            const double e = std::isnan(got) ? 1e30 : std::fabs(got - ref) / (1.0 + std::fabs(ref));
            worst = std::max(worst, e);
        }
    }
    return worst;
}

struct Variant {
    const char *name;
    int r, block;
    void (*launch)(const void *, const float *, const float *, void *, int, int, float, int);
};

template <typename T, int R, int P, bool LN>
static void launch_multi(const void *x, const float *g, const float *b, void *y, int rows, int cols, float eps,
                         int block) {
    multirow_norm<T, R, P, LN><<<(rows + R - 1) / R, block>>>((const T *)x, g, b, (T *)y, rows, cols, eps);
}

int main() {
    const size_t n = 1ull << 26;
    float *x, *y, *gamma, *beta, *stat;
    cudaMalloc(&x, n * 4), cudaMalloc(&y, n * 4);
    cudaMalloc(&gamma, 65536 * 4), cudaMalloc(&beta, 65536 * 4), cudaMalloc(&stat, 2 * 65536 * 4 * 4);
    const unsigned seed = 20261127;
    printf("seeds: x %u, gamma %u, beta %u\n", seed, seed + 1, seed + 2);
    fill<<<1024, 256>>>(x, n, seed, -3.0f, 5.0f);
    fill<<<64, 256>>>(gamma, 65536, seed + 1, 0.5f, 1.5f);
    fill<<<64, 256>>>(beta, 65536, seed + 2, -1.0f, 1.0f);
    __nv_bfloat16 *xb, *yb = (__nv_bfloat16 *)y;
    cudaMalloc(&xb, n * 2);
    to_bf16<<<1024, 256>>>(x, xb, n);
    for (auto f : {(const void *)prism_layer_norm_f32, (const void *)prism_layer_norm_bf16,
                   (const void *)prism_rms_norm_f32, (const void *)prism_rms_norm_bf16})
        cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 225 * 1024);
    const float copy32 = median_ms([&] { cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice); });
    const float copy16 = median_ms([&] { cudaMemcpyAsync(y, x, n * 2, cudaMemcpyDeviceToDevice); });
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    printf("%s: copy f32 %.0f GB/s, bf16 bytes %.0f GB/s\n", prop.name, 2.0 * n * 4 / (copy32 * 1e6),
           2.0 * n * 2 / (copy16 * 1e6));
    const float eps = 1e-5f;
    int failed = 0;
    // (operation, bf16, cols): the variants each one offers, R rows a block of `block` threads.
    for (int cols : {4096, 8192, 16384}) {
        for (int op = 0; op < 4; ++op) {
            const bool bf = op == 1 || op == 3, ln = op < 2;
            const int rows = (int)(n / cols);
            std::vector<Variant> vs;
#define V(T, R, P, LNV, B) vs.push_back({#T " R=" #R " P=" #P " block " #B, R, B, launch_multi<T, R, P, LNV>})
            if (cols == 4096) {
                if (bf) { if (ln) { V(__nv_bfloat16, 2, 2, true, 256); V(__nv_bfloat16, 4, 1, true, 512); }
                          else { V(__nv_bfloat16, 2, 2, false, 256); V(__nv_bfloat16, 4, 1, false, 512); } }
                else { if (ln) { V(float, 2, 2, true, 512); V(float, 4, 1, true, 1024); V(float, 2, 4, true, 256); }
                       else { V(float, 2, 2, false, 512); V(float, 4, 1, false, 1024); V(float, 2, 4, false, 256); } }
            } else if (cols == 8192) {
                if (bf) { if (ln) { V(__nv_bfloat16, 2, 2, true, 512); V(__nv_bfloat16, 4, 1, true, 1024); }
                          else { V(__nv_bfloat16, 2, 2, false, 512); V(__nv_bfloat16, 4, 1, false, 1024); } }
                else { if (ln) { V(float, 2, 4, true, 512); V(float, 2, 2, true, 1024); V(float, 4, 2, true, 1024); }
                       else { V(float, 2, 4, false, 512); V(float, 2, 2, false, 1024); V(float, 4, 2, false, 1024); } }
            } else {
                if (bf) { if (ln) { V(__nv_bfloat16, 2, 2, true, 1024); } else { V(__nv_bfloat16, 2, 2, false, 1024); } }
                else { if (ln) { V(float, 2, 4, true, 1024); } else { V(float, 2, 4, false, 1024); } }
            }
#undef V
            const int rb = row_block(cols);
            const int lanes = bf ? 8 : 4, rc = bf ? 4 : (op == 0 ? 7 : 8);
            const int per = (cols / lanes + rb - 1) / rb;
            const size_t so = 16ull * rb * std::max(0, per - rc);
            const void *xin = bf ? (const void *)xb : (const void *)x;
            const double bytes = 2.0 * n * (bf ? 2 : 4), gc = bytes / ((bf ? copy16 : copy32) * 1e6);
            auto row_kernel = [&] {
                if (op == 0) prism_layer_norm_f32<<<rows, rb, so>>>(x, gamma, beta, y, stat, stat + 65536, rows, cols, eps);
                if (op == 1) prism_layer_norm_bf16<<<rows, rb, so>>>(xb, gamma, beta, yb, stat, stat + 65536, rows, cols, eps);
                if (op == 2) prism_rms_norm_f32<<<rows, rb, so>>>(x, gamma, y, stat, rows, cols, eps);
                if (op == 3) prism_rms_norm_bf16<<<rows, rb, so>>>(xb, gamma, yb, stat, rows, cols, eps);
            };
            const char *names[4] = {"layer_norm f32 ", "layer_norm bf16", "rms_norm f32   ", "rms_norm bf16  "};
            const float base = median_ms(row_kernel);
            printf("%s %5d x %5d  row kernel (block %4d) %.2fx copy\n", names[op], rows, cols, rb,
                   bytes / (base * 1e6) / gc);
            for (const Variant &v : vs) {
                const float t = median_ms([&] { v.launch(xin, gamma, beta, y, rows, cols, eps, v.block); });
                printf("    %-36s %.2fx copy (%.2fx the row kernel)\n", v.name, bytes / (t * 1e6) / gc, base / t);
                // Check on an odd row count (not a multiple of R) with poisoned outputs.
                const int odd_rows = 1001;
                poison<<<1024, 256>>>((unsigned *)y, n);
                v.launch(xin, gamma, beta, y, odd_rows, cols, eps, v.block);
                const double err = bf ? check(xb, yb, gamma, beta, odd_rows, cols, ln, eps, seed + 3)
                                      : check(x, y, gamma, beta, odd_rows, cols, ln, eps, seed + 3);
                const double tol = bf ? 1e-2 : 1e-5;
                const bool ok = err <= tol && cudaGetLastError() == cudaSuccess;
                failed += !ok;
                printf("    %-36s check %d x %d: %s (max error %.2e, tolerance %.0e)\n", "", odd_rows, cols,
                       ok ? "PASS" : "FAIL", err, tol);
            }
        }
    }
    printf("%s; %d failed\n", cudaGetErrorString(cudaDeviceSynchronize()), failed);
    return failed != 0;
}
