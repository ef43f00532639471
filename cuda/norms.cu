// Normalisations: layer norm and RMS norm over the rows of a row-major [rows, cols] matrix (f32, and bf16
// in/out with f32 accumulation and f32 gamma/beta), and batch norm over NCHW (f32): inference with
// running statistics, and the training statistics pass.
#include "kit.cuh"

namespace {
using namespace prism;

struct Sum1 {
    float acc = 0.0f;
    template <int M> __device__ __forceinline__ void operator()(const float *v) {
#pragma unroll
        for (int j = 0; j < M; ++j) acc += v[j];
    }
};
struct SumSqDev {
    float mean, acc = 0.0f;
    template <int M> __device__ __forceinline__ void operator()(const float *v) {
#pragma unroll
        for (int j = 0; j < M; ++j) {
            const float d = v[j] - mean;
            acc = fmaf(d, d, acc);
        }
    }
};
struct SumSq {
    float acc = 0.0f;
    template <int M> __device__ __forceinline__ void operator()(const float *v) {
#pragma unroll
        for (int j = 0; j < M; ++j) acc = fmaf(v[j], v[j], acc);
    }
};
// Per-thread (count, mean, M2), merged chunk by chunk (Chan et al.), for the streaming path.
struct Welford {
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    template <int M> __device__ __forceinline__ void operator()(const float *v) {
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < M; ++j) s += v[j];
        const float cm = s * (1.0f / M);
        float cm2 = 0.0f;
#pragma unroll
        for (int j = 0; j < M; ++j) {
            const float d = v[j] - cm;
            cm2 = fmaf(d, d, cm2);
        }
        const float nn = n + M;
        const float delta = cm - mean;
        mean = fmaf(delta, M / nn, mean);
        m2 += cm2 + delta * delta * (n * M / nn);
        n = nn;
    }
};

struct LayerNormOp {
    const float *gamma, *beta;
    float *mean_out, *rstd_out;
    float eps;
    int cols;
    struct Out {
        static constexpr bool kLoads = true;
        float mean, rstd;
        const float *g, *b;
        __device__ __forceinline__ void prefetch(int c0) const {
            prefetch_l1(g, c0);
            prefetch_l1(b, c0);
        }
        template <int M> __device__ __forceinline__ void apply(float *v, int c0) const {
            float gg[M], bb[M];
            if (g) load_param<M>(g, c0, gg);
            if (b) load_param<M>(b, c0, bb);
#pragma unroll
            for (int j = 0; j < M; ++j) {
                float y = (v[j] - mean) * rstd;
                if (g) y *= gg[j];
                if (b) y += bb[j];
                v[j] = y;
            }
        }
    };
    template <class C, typename O>
    __device__ __forceinline__ void run(C &c, int row, O *out) {
        const float inv_n = 1.0f / (float)cols;
        float mean, var;
        if constexpr (C::resident) {
            Sum1 s;
            c.each(s);
            mean = block_allreduce(s.acc, SumOp{}) * inv_n;
            SumSqDev d;
            d.mean = mean;
            c.each(d);
            var = block_allreduce(d.acc, SumOp{}) * inv_n;
        } else {
            Welford w;
            c.each(w);
            mean = block_allreduce(w.n * w.mean, SumOp{}) * inv_n;
            const float dm = w.mean - mean;
            var = block_allreduce(w.m2 + w.n * dm * dm, SumOp{}) * inv_n;
        }
        const float rstd = rsqrtf(var + eps);
        if (threadIdx.x == 0) {
            if (mean_out) mean_out[row] = mean;
            if (rstd_out) rstd_out[row] = rstd;
        }
        Out f{mean, rstd, gamma, beta};
        c.store(out, f);
    }
};

struct RmsNormOp {
    const float *gamma;
    float *rstd_out;
    float eps;
    int cols;
    struct Out {
        static constexpr bool kLoads = true;
        float r;
        const float *g;
        __device__ __forceinline__ void prefetch(int c0) const { prefetch_l1(g, c0); }
        template <int M> __device__ __forceinline__ void apply(float *v, int c0) const {
            float gg[M];
            if (g) load_param<M>(g, c0, gg);
#pragma unroll
            for (int j = 0; j < M; ++j) v[j] = g ? v[j] * r * gg[j] : v[j] * r;
        }
    };
    template <class C, typename O>
    __device__ __forceinline__ void run(C &c, int row, O *out) {
        SumSq s;
        c.each(s);
        const float ms = block_allreduce(s.acc, SumOp{}) / (float)cols;
        const float r = rsqrtf(ms + eps);
        if (threadIdx.x == 0 && rstd_out) rstd_out[row] = r;
        Out f{r, gamma};
        c.store(out, f);
    }
};

__device__ __forceinline__ bool param_ok(const float *p) { return p == nullptr || prism_aligned16(p); }

template <typename T, int LN_REG_FLOATS>
__device__ __forceinline__ void layer_norm(const T *x, const float *gamma, const float *beta, T *out,
                                           float *mean, float *rstd, int rows, int cols, float eps) {
    LayerNormOp op{gamma, beta, mean, rstd, eps, cols};
    row_driver<LN_REG_FLOATS>(x, out, rows, cols, param_ok(gamma) && param_ok(beta), op);
}
template <typename T>
__device__ __forceinline__ void rms_norm(const T *x, const float *gamma, T *out, float *rstd, int rows,
                                         int cols, float eps) {
    RmsNormOp op{gamma, rstd, eps, cols};
    row_driver(x, out, rows, cols, param_ok(gamma), op);
}

}  // namespace

// y = (x - mean_r) * rsqrt(var_r + eps) * gamma + beta per row (biased variance; gamma/beta may be null =
// ones/zeros; mean/rstd outputs [rows] may be null). Launch: ROW CONTRACT of prism_softmax_rows_f32
// (grid = rows, block multiple of 32 <= 1024) but optional dynamic smem 16*block*max(0, ceil(cols/4/block)-7).
PRISM_KERNEL void __launch_bounds__(1024)
    prism_layer_norm_f32(const float *x, const float *gamma, const float *beta, float *out, float *mean,
                         float *rstd, int rows, int cols, float eps) {
    layer_norm<float, 28>(x, gamma, beta, out, mean, rstd, rows, cols, eps);
}
// As prism_layer_norm_f32 with x/out bf16 (f32 accumulation, f32 gamma/beta/mean/rstd). Launch: ROW
// CONTRACT but dynamic smem 16*block*max(0, ceil(cols/8/block)-4) bytes.
PRISM_KERNEL void __launch_bounds__(1024)
    prism_layer_norm_bf16(const __nv_bfloat16 *x, const float *gamma, const float *beta, __nv_bfloat16 *out,
                          float *mean, float *rstd, int rows, int cols, float eps) {
    layer_norm<__nv_bfloat16, 32>(x, gamma, beta, out, mean, rstd, rows, cols, eps);
}
// y = x * rsqrt(mean_r(x^2) + eps) * gamma per row (gamma may be null; rstd [rows] may be null).
// Launch: ROW CONTRACT, exactly as prism_softmax_rows_f32 (dynamic smem 16*block*max(0, ceil(cols/4/block)-8)).
PRISM_KERNEL void __launch_bounds__(1024)
    prism_rms_norm_f32(const float *x, const float *gamma, float *out, float *rstd, int rows, int cols,
                       float eps) {
    rms_norm(x, gamma, out, rstd, rows, cols, eps);
}
// As prism_rms_norm_f32 with x/out bf16, f32 gamma. Launch: as prism_layer_norm_bf16.
PRISM_KERNEL void __launch_bounds__(1024)
    prism_rms_norm_bf16(const __nv_bfloat16 *x, const float *gamma, __nv_bfloat16 *out, float *rstd, int rows,
                        int cols, float eps) {
    rms_norm(x, gamma, out, rstd, rows, cols, eps);
}

// Batch norm, NCHW with hw = H*W: y = (x - mean[c]) * (gamma[c] * rsqrt(var[c] + eps)) + beta[c]
// (gamma/beta may be null). Used for inference (running stats) and, after prism_batch_norm_stats_f32, for
// training. Launch: 1-D grid-stride, any grid/block (recommended block 256, grid ceil(n*c*hw/1024)).
// out may alias x.
PRISM_KERNEL void prism_batch_norm_apply_f32(const float *x, float *out, const float *mean, const float *var,
                                             const float *gamma, const float *beta, int n, int c, int hw,
                                             float eps) {
    const unsigned long long total = (unsigned long long)n * c * hw;
    const unsigned long long start = prism_global_thread(), stride = prism_grid_threads();
    auto coef = [&](unsigned long long i, float &s, float &m, float &b) {
        const int ch = (int)((i / (unsigned long long)hw) % (unsigned long long)c);
        s = rsqrtf(var[ch] + eps);
        if (gamma) s *= gamma[ch];
        m = mean[ch];
        b = beta ? beta[ch] : 0.0f;
    };
    if (hw % 4 == 0 && prism_aligned16(x) && prism_aligned16(out)) {
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        float4 *o4 = reinterpret_cast<float4 *>(out);
        for (unsigned long long v = start; v < total / 4; v += stride) {
            float s, m, b;
            coef(v * 4, s, m, b);
            const float4 a = x4[v];
            o4[v] = make_float4(fmaf(a.x - m, s, b), fmaf(a.y - m, s, b), fmaf(a.z - m, s, b),
                                fmaf(a.w - m, s, b));
        }
    } else {
        for (unsigned long long i = start; i < total; i += stride) {
            float s, m, b;
            coef(i, s, m, b);
            out[i] = fmaf(x[i] - m, s, b);
        }
    }
}

// Training statistics, NCHW, in one kernel. Block (ch, s) of prism_batch_norm_partials_f32 reads its channel's
// n x hw values as one sequence of vectors (n rows of hw / V vectors of V floats: V = 4 when hw % 4 == 0 and x is
// 16-byte aligned, else 1): the vectors s * T + t, s * T + t + S, ... for thread t (T = threads per block, S =
// slices * T), BN_VALUES values loaded before each fold, folded into (count, mean, M2) (per-thread Welford in f32,
// combined across the block in f64) at part[(ch * slices + s) * 3]. The channel's last block to finish (an arrival
// counter per channel, zero between calls: it sets it back) merges the slices in order (Chan et al., f64) into
// mean[c] and the biased var[c], and when running_mean/running_var are non-null updates r = (1 - momentum) * r +
// momentum * stat with the unbiased variance (count / (count - 1)) for running_var. Merging in the same launch
// saves a second launch's wait for every block (the finish kernel it replaces cost a few of the 49 us at
// 32 x 64 x 12544 on the H100).
// Every block strides over whole rows, so a short last segment of a row costs no more than its own loads
// (cutting rows into 4096-value units left 12544-value rows a unit of 256 values, a quarter of the block's
// steps nearly idle: 0.78x a copy on the H100).
constexpr int BN_VALUES = 16;

namespace {
// V consecutive floats at p (16-byte aligned when V == 4).
template <int V> __device__ __forceinline__ void load_values(const float *p, float *v) {
    if constexpr (V == 4) {
        const float4 a = __ldg(reinterpret_cast<const float4 *>(p));
        v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
    } else {
        v[0] = __ldg(p);
    }
}

template <int V>
__device__ __forceinline__ void batch_norm_fold(const float *x, int n, int c, int hw, int slices, Welford &w) {
    constexpr int LOADS = BN_VALUES / V;
    const int ch = blockIdx.x;
    const long long len = hw / V;  // vectors per row
    const long long step = (long long)slices * blockDim.x, first = (long long)blockIdx.y * blockDim.x + threadIdx.x;
    const long long step_rows = step / len, step_rest = step % len;
    long long row = first / len, col = first % len;
    while (row < n) {
        float v[BN_VALUES];
        int loaded = 0;
        // The positions rise, so the loads in range are a prefix of the LOADS.
#pragma unroll
        for (int q = 0; q < LOADS; ++q) {
            if (row < n) {
                load_values<V>(x + (row * c + ch) * (long long)hw + col * V, v + q * V);
                ++loaded;
            }
            col += step_rest;
            row += step_rows;
            if (col >= len) col -= len, ++row;
        }
        if (loaded == LOADS) {
            w.operator()<BN_VALUES>(v);  // one division per BN_VALUES values
        } else {
#pragma unroll
            for (int q = 0; q < LOADS; ++q)
                if (q < loaded) w.operator()<V>(v + q * V);
        }
    }
}
}  // namespace

// Channel ch's statistics from its `slices` triples in part (read from L2: other blocks wrote them).
__device__ void batch_norm_merge(const double *part, int slices, int ch, float *mean, float *var,
                                 float *running_mean, float *running_var, float momentum) {
    double count = 0.0, mu = 0.0, m2 = 0.0;
    for (int s = 0; s < slices; ++s) {
        const double *p = part + ((long long)ch * slices + s) * 3;
        const double pc = __ldcg(p), pm = __ldcg(p + 1), pq = __ldcg(p + 2);
        if (pc == 0.0) continue;
        const double total = count + pc, delta = pm - mu;
        mu += delta * (pc / total);
        m2 += pq + delta * delta * (count * pc / total);
        count = total;
    }
    const float muf = (float)mu, v = (float)(m2 / count);
    mean[ch] = muf;
    var[ch] = v;
    if (running_mean) running_mean[ch] = (1.0f - momentum) * running_mean[ch] + momentum * muf;
    if (running_var) {
        const float unb = count > 1.0 ? (float)(m2 / (count - 1.0)) : v;
        running_var[ch] = (1.0f - momentum) * running_var[ch] + momentum * unb;
    }
}

// Launch: grid (c, slices), block 256 (a multiple of 32, at most 1024). counters: c zeros.
PRISM_KERNEL void __launch_bounds__(1024)
    prism_batch_norm_partials_f32(const float *x, double *part, unsigned *counters, int n, int c, int hw, int slices,
                                  float *mean, float *var, float *running_mean, float *running_var, float momentum) {
    Welford w;
    if (hw > 0) {
        if (hw % 4 == 0 && prism_aligned16(x))
            batch_norm_fold<4>(x, n, c, hw, slices, w);
        else
            batch_norm_fold<1>(x, n, c, hw, slices, w);
    }
    const double count = block_allreduce_f64(w.n);
    const double mean_b = count > 0.0 ? block_allreduce_f64((double)w.n * w.mean) / count : 0.0;
    const double dm = (double)w.mean - mean_b;
    const double m2 = block_allreduce_f64((double)w.m2 + (double)w.n * dm * dm);
    if (threadIdx.x != 0) return;
    double *p = part + ((long long)blockIdx.x * slices + blockIdx.y) * 3;
    p[0] = count;
    p[1] = mean_b;
    p[2] = m2;
    __threadfence();  // the triple, visible to whichever block merges the channel
    if (atomicAdd(counters + blockIdx.x, 1u) != (unsigned)slices - 1) return;
    __threadfence();
    batch_norm_merge(part, slices, blockIdx.x, mean, var, running_mean, running_var, momentum);
    counters[blockIdx.x] = 0;  // for the next call on this workspace
}
