// Softmax and log-softmax over the rows of a row-major [rows, cols] f32 matrix, numerically stable
// (the row maximum is subtracted). One block per row; out may alias x.
#include "kit.cuh"

namespace {
using namespace prism;

constexpr float kLog2e = 1.4426950408889634f;

// Online (max, sum of exp(x - max)) pair for the streaming path.
struct MaxSum {
    float m, s;
};

template <bool LOG>
struct SoftmaxOp {
    float m, s, inv_or_logs;  // row max, sum of exp, 1/sum (or log(sum))
    struct Max {
        float acc = -PRISM_INF;
        template <int M> __device__ __forceinline__ void operator()(const float *v) {
#pragma unroll
            for (int j = 0; j < M; ++j) acc = fmaxf(acc, v[j]);
        }
    };
    struct SumExp {
        float mb, acc = 0.0f;  // mb = m * log2(e)
        template <int M> __device__ __forceinline__ void operator()(const float *v) {
#pragma unroll
            for (int j = 0; j < M; ++j) acc += exp2f(fmaf(v[j], kLog2e, -mb));
        }
    };
    struct Online {
        MaxSum st{-PRISM_INF, 0.0f};
        template <int M> __device__ __forceinline__ void operator()(const float *v) {
            float cm = v[0];
#pragma unroll
            for (int j = 1; j < M; ++j) cm = fmaxf(cm, v[j]);
            const float nm = fmaxf(st.m, cm);
            const float nb = nm * kLog2e;
            float add = 0.0f;
#pragma unroll
            for (int j = 0; j < M; ++j) add += exp2f(fmaf(v[j], kLog2e, -nb));
            // st.m == -inf only before the first chunk; then st.s == 0 and the scale is irrelevant.
            const float scale = st.m == -PRISM_INF ? 0.0f : exp2f((st.m - nm) * kLog2e);
            st.s = fmaf(st.s, scale, add);
            st.m = nm;
        }
    };
    struct Out {
        static constexpr bool kLoads = false;
        float mb, inv, logs, m;
        template <int M> __device__ __forceinline__ void apply(float *v, int) const {
#pragma unroll
            for (int j = 0; j < M; ++j) {
                if (LOG) v[j] = (v[j] - m) - logs;
                else v[j] = exp2f(fmaf(v[j], kLog2e, -mb)) * inv;
            }
        }
    };

    template <class C>
    __device__ __forceinline__ void run(C &c, int, float *out) {
        float mx, sum;
        if constexpr (C::resident) {
            Max a;
            c.each(a);
            mx = block_allreduce(a.acc, MaxOp{});
            SumExp b;
            b.mb = mx * kLog2e;
            c.each(b);
            sum = block_allreduce(b.acc, SumOp{});
        } else {
            Online o;
            c.each(o);
            // combine (m, s) across the block: max first, then rescaled sums
            mx = block_allreduce(o.st.m, MaxOp{});
            const float sc = o.st.m == -PRISM_INF ? 0.0f : exp2f((o.st.m - mx) * kLog2e);
            sum = block_allreduce(o.st.s * sc, SumOp{});
        }
        Out f{mx * kLog2e, 1.0f / sum, logf(sum), mx};
        c.store(out, f);
    }
};

}  // namespace

// y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)). Launch (ROW CONTRACT): grid = rows, block = a
// multiple of 32 <= 1024, recommended clamp(round_up(ceil(cols / 32), 32), 32, 1024); dynamic smem = 0, or
// 16 * block * max(0, ceil(cols / 4 / block) - 8) bytes (when <= the device opt-in limit, raised with
// cuFuncSetAttribute above 48 KiB) to keep rows wider than 32 * block on chip: one read instead of two.
// out may alias x.
PRISM_KERNEL void __launch_bounds__(1024) prism_softmax_rows_f32(const float *x, float *out, int rows,
                                                                  int cols) {
    SoftmaxOp<false> op;
    row_driver(x, out, rows, cols, true, op);
}
// y[r, :] = x[r, :] - max - log(sum(exp(x[r, :] - max))). Launch: as prism_softmax_rows_f32.
PRISM_KERNEL void __launch_bounds__(1024) prism_log_softmax_rows_f32(const float *x, float *out, int rows,
                                                                      int cols) {
    SoftmaxOp<true> op;
    row_driver(x, out, rows, cols, true, op);
}
