// Matrix-vector products in f32, A row-major [M, N] with leading dimension lda (>= N):
//   prism_gemv_f32:   y = alpha * A x + beta * y      (x [N], y [M]), one warp per row;
//   prism_gemv_t_*:   y = alpha * A^T x + beta * y    (x [M], y [N]), column strips split over row ranges,
//                     deterministic two-kernel scheme (partials, then finalize).
// beta == 0 means y is not read (BLAS convention).
#include "kit.cuh"

using namespace prism;

// y[i] = alpha * dot(A[i, :N], x) + beta * y[i]. Launch: block a multiple of 32 <= 1024 (256), grid =
// ceil(M / (block / 32)); no dynamic smem. 16-byte path when A, x are 16-byte aligned and lda % 4 == 0.
PRISM_KERNEL void prism_gemv_f32(const float *A, const float *x, float *y, int M, int N, int lda, float alpha,
                                 float beta) {
    const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= M) return;
    const bool vec = prism_aligned16(A) && prism_aligned16(x) && (lda % 4 == 0);
    const float d = warp_dot(A + (size_t)row * lda, x, N, vec);
    if ((threadIdx.x & 31) == 0) y[row] = beta == 0.0f ? alpha * d : fmaf(alpha, d, beta * y[row]);
}

// partial[s, j] = sum over rows i in [s*rows_per_split, min(M, (s+1)*rows_per_split)) of A[i, j] * x[i], with
// s = blockIdx.y. Launch: block (32, BY) with BY <= 32 (recommended 8), grid (ceil(N / 128), S) where
// S = ceil(M / rows_per_split) (recommended S = clamp(ceil(8 * SMs / ceil(N / 128)), 1, ceil(M / 64))); no
// dynamic smem; partial holds S * N floats. Then prism_gemv_t_finalize_f32 with splits = S.
PRISM_KERNEL void prism_gemv_t_partial_f32(const float *A, const float *x, float *partial, int M, int N,
                                           int lda, int rows_per_split) {
    __shared__ float4 red[32][32];
    const int lane = threadIdx.x, ty = threadIdx.y, by = blockDim.y;
    const int r0 = blockIdx.y * rows_per_split;
    const int r1 = min(M, r0 + rows_per_split);
    const bool vec = prism_aligned16(A) && (lda % 4 == 0) && (N % 4 == 0);
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    const int base = blockIdx.x * 128;
    constexpr int UR = 4;
    if (vec) {
        const int col = base + lane * 4;
        if (col < N) {
            int i = r0 + ty;
            for (; i + (UR - 1) * by < r1; i += UR * by) {
                float4 a[UR];
                float xv[UR];
#pragma unroll
                for (int u = 0; u < UR; ++u) {
                    a[u] = __ldcs(reinterpret_cast<const float4 *>(A + (size_t)(i + u * by) * lda + col));
                    xv[u] = __ldg(x + i + u * by);
                }
#pragma unroll
                for (int u = 0; u < UR; ++u) {
                    acc.x = fmaf(a[u].x, xv[u], acc.x);
                    acc.y = fmaf(a[u].y, xv[u], acc.y);
                    acc.z = fmaf(a[u].z, xv[u], acc.z);
                    acc.w = fmaf(a[u].w, xv[u], acc.w);
                }
            }
            for (; i < r1; i += by) {
                const float4 a = __ldcs(reinterpret_cast<const float4 *>(A + (size_t)i * lda + col));
                const float xv = __ldg(x + i);
                acc.x = fmaf(a.x, xv, acc.x);
                acc.y = fmaf(a.y, xv, acc.y);
                acc.z = fmaf(a.z, xv, acc.z);
                acc.w = fmaf(a.w, xv, acc.w);
            }
        }
    } else {
        // columns base + lane + 32 * k, k < 4 (coalesced scalar loads)
        float s[4] = {0.f, 0.f, 0.f, 0.f};
        for (int i = r0 + ty; i < r1; i += by) {
            const float xv = __ldg(x + i);
            const float *ar = A + (size_t)i * lda;
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const int c = base + lane + 32 * k;
                if (c < N) s[k] = fmaf(ar[c], xv, s[k]);
            }
        }
        acc = make_float4(s[0], s[1], s[2], s[3]);
    }
    red[ty][lane] = acc;
    __syncthreads();
    if (ty == 0) {
        float4 t = red[0][lane];
        for (int w = 1; w < by; ++w) {
            const float4 o = red[w][lane];
            t.x += o.x; t.y += o.y; t.z += o.z; t.w += o.w;
        }
        float *p = partial + (size_t)blockIdx.y * N;
        if (vec) {
            const int col = base + lane * 4;
            if (col < N) {
                if (prism_aligned16(p)) {
                    *reinterpret_cast<float4 *>(p + col) = t;
                } else {
                    p[col] = t.x; p[col + 1] = t.y; p[col + 2] = t.z; p[col + 3] = t.w;
                }
            }
        } else {
            const float tv[4] = {t.x, t.y, t.z, t.w};
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const int c = base + lane + 32 * k;
                if (c < N) p[c] = tv[k];
            }
        }
    }
}

// y[j] = alpha * sum_{s < splits} partial[s, j] + beta * y[j] (fixed order: deterministic). Launch: 1-D
// grid-stride, any grid/block (recommended block 256, grid ceil(N / 256)).
PRISM_KERNEL void prism_gemv_t_finalize_f32(const float *partial, float *y, int N, int splits, float alpha,
                                            float beta) {
    for (unsigned long long j = prism_global_thread(); j < (unsigned long long)N; j += prism_grid_threads()) {
        float s = 0.0f;
        for (int k = 0; k < splits; ++k) s += partial[(size_t)k * N + j];
        y[j] = beta == 0.0f ? alpha * s : fmaf(alpha, s, beta * y[j]);
    }
}
