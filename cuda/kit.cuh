// Device toolkit shared by prism-gpu's kernel families (not gemm): elementwise maps with 16-byte
// vectors and several loads in flight, block reductions, row containers, warp dot products, and the
// counter-based random generator.
//
// Row kernels:
// Block-per-row kernels read a row either into registers (32 floats per thread), into registers plus
// dynamic shared memory (cp.async, 16-byte chunks) when the launcher gave enough dynamic shared memory,
// or, for rows too wide for either, stream it twice (statistics pass, then a reverse output pass that
// finds the row's tail still in L2). Warp-shuffle then shared-memory reductions.
#pragma once
#include "common.cuh"
// +infinity usable in device code and in the host compiler's pass over member initialisers.
#define PRISM_INF (__builtin_huge_valf())

namespace prism {

// ---------------------------------------------------------------- small reductions
struct SumOp {
    __device__ __forceinline__ static float identity() { return 0.0f; }
    __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
    __device__ __forceinline__ static float identity() { return -PRISM_INF; }
    __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <class Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// All threads of the block get the reduction of `v`. blockDim.x must be a multiple of 32.
// Uses a 32-entry static shared buffer and ends with a barrier, so it can be called back to back.
template <class Op>
__device__ __forceinline__ float block_allreduce(float v, Op op) {
    __shared__ float sh[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_reduce(v, op);
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    float r = lane < nw ? sh[lane] : Op::identity();
    r = warp_reduce(r, op);
    __syncthreads();
    return r;
}

__device__ __forceinline__ double warp_sum_f64(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
// Block sum in f64, result valid in every thread (fixed order, deterministic).
__device__ __forceinline__ double block_allreduce_f64(double v) {
    __shared__ double shd[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum_f64(v);
    if (lane == 0) shd[warp] = v;
    __syncthreads();
    double r = lane < nw ? shd[lane] : 0.0;
    r = warp_sum_f64(r);
    __syncthreads();
    return r;
}

// ---------------------------------------------------------------- element packing
template <typename T> struct Pack;
template <> struct Pack<float> {
    static constexpr int N = 4;  // elements per 16-byte chunk
    __device__ __forceinline__ static void unpack(const uint4 &u, float *f) {
        f[0] = __uint_as_float(u.x); f[1] = __uint_as_float(u.y);
        f[2] = __uint_as_float(u.z); f[3] = __uint_as_float(u.w);
    }
    __device__ __forceinline__ static uint4 pack(const float *f) {
        return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]),
                          __float_as_uint(f[3]));
    }
    __device__ __forceinline__ static float load1(const float *p) { return *p; }
    __device__ __forceinline__ static void store1(float *p, float v) { *p = v; }
};
template <> struct Pack<__nv_bfloat16> {
    static constexpr int N = 8;
    __device__ __forceinline__ static void split(unsigned w, float *f) {
        f[0] = __uint_as_float(w << 16);
        f[1] = __uint_as_float(w & 0xffff0000u);
    }
    __device__ __forceinline__ static unsigned join(float a, float b) {
        __nv_bfloat162 h = __floats2bfloat162_rn(a, b);  // .x = a (low half), .y = b
        return *reinterpret_cast<unsigned *>(&h);
    }
    __device__ __forceinline__ static void unpack(const uint4 &u, float *f) {
        split(u.x, f); split(u.y, f + 2); split(u.z, f + 4); split(u.w, f + 6);
    }
    __device__ __forceinline__ static uint4 pack(const float *f) {
        return make_uint4(join(f[0], f[1]), join(f[2], f[3]), join(f[4], f[5]), join(f[6], f[7]));
    }
    __device__ __forceinline__ static float load1(const __nv_bfloat16 *p) { return __bfloat162float(*p); }
    __device__ __forceinline__ static void store1(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }
};

__device__ __forceinline__ unsigned dynamic_smem_bytes() {
    unsigned r;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// Asks for the line holding p[c0] in L1 (no register, no wait); p may be null.
__device__ __forceinline__ void prefetch_l1(const float *p, int c0) {
    if (p) asm volatile("prefetch.global.L1 [%0];" ::"l"(p + c0));
}

// Loads N floats of a per-column parameter (gamma/beta) starting at column c0; `vec` says 16-byte ok.
template <int M>
__device__ __forceinline__ void load_param(const float *p, int c0, float *out) {
    if (M % 4 == 0) {
#pragma unroll
        for (int j = 0; j < M; j += 4) {
            float4 g = __ldg(reinterpret_cast<const float4 *>(p + c0 + j));
            out[j] = g.x; out[j + 1] = g.y; out[j + 2] = g.z; out[j + 3] = g.w;
        }
    } else {
#pragma unroll
        for (int j = 0; j < M; ++j) out[j] = __ldg(p + c0 + j);
    }
}

// ---------------------------------------------------------------- row containers
// Interface shared by every container (used by the row operations):
//   resident            : true when the row stays on chip (a second look costs no memory traffic)
//   each<F>(f)          : f.template operator()<M>(const float *v) over chunks of M valid values
//   store<F>(out, f)    : f.template apply<M>(float *v, int col0) transforms a chunk; result is written.
//                         F::kLoads says apply() reads memory (gamma/beta): then a group of chunks is
//                         transformed before any is stored, so those loads are not serialised behind stores;
//                         F::prefetch(col0) then asks for a later chunk's parameters in L1.

// Row kept in registers (RC chunks of 16 bytes per thread) plus `ks` chunks per thread in dynamic shared
// memory. Requires cols % N == 0 and 16-byte aligned row pointers.
template <typename T, int RC>
struct VecRow {
    static constexpr bool resident = true;
    static constexpr int N = Pack<T>::N;
    // f32 rows ask for the parameters (gamma, beta) of their shared-memory chunks in L1 two chunks ahead
    // of use: 1024 x 65536 layer / RMS norm 0.64 / 0.71x -> 0.68 / 0.76x a copy on an H200. bf16 rows
    // lost 2-5% with it (notes/wide-rows/).
    static constexpr int kParamsAhead = N == 4 ? 2 : 0;
    float r[RC * N];
    uint4 *sm;
    int nchunks, ks;

    __device__ __forceinline__ void load(const T *row, int cols, uint4 *smem, int smem_chunks) {
        nchunks = cols / N;
        ks = smem_chunks;
        sm = smem;
        const uint4 *g = reinterpret_cast<const uint4 *>(row);
        const int t = threadIdx.x, bs = blockDim.x;
        for (int k = 0; k < ks; ++k) {
            const int c = t + (RC + k) * bs;
            if (c < nchunks) cp_async16(sm + k * bs + t, g + c);
        }
        uint4 u[RC];
#pragma unroll
        for (int k = 0; k < RC; ++k) {
            const int c = t + k * bs;
            u[k] = c < nchunks ? g[c] : make_uint4(0u, 0u, 0u, 0u);
        }
#pragma unroll
        for (int k = 0; k < RC; ++k) Pack<T>::unpack(u[k], r + k * N);
        if (ks) cp_async_wait_all();
    }
    template <class F>
    __device__ __forceinline__ void each(F &f) const {
        const int t = threadIdx.x, bs = blockDim.x;
#pragma unroll
        for (int k = 0; k < RC; ++k)
            if (t + k * bs < nchunks) f.template operator()<N>(r + k * N);
        for (int k = 0; k < ks; ++k) {
            if (t + (RC + k) * bs < nchunks) {
                float v[N];
                Pack<T>::unpack(sm[k * bs + t], v);
                f.template operator()<N>(v);
            }
        }
    }
    // Transforms the register chunks in place first and stores them afterwards, so no store sits between
    // the parameter (gamma/beta) loads and they can all be in flight; smem chunks go two at a time.
    template <typename O, class F>
    __device__ __forceinline__ void store(O *out, F &f) {
        uint4 *g = reinterpret_cast<uint4 *>(out);
        const int t = threadIdx.x, bs = blockDim.x;
        if constexpr (F::kLoads) {
            for (int k = 0; k < kParamsAhead && k < ks; ++k)
                if (t + (RC + k) * bs < nchunks) f.prefetch((t + (RC + k) * bs) * N);
#pragma unroll
            for (int k = 0; k < RC; ++k)
                if (t + k * bs < nchunks) f.template apply<N>(r + k * N, (t + k * bs) * N);
        }
#pragma unroll
        for (int k = 0; k < RC; ++k) {
            const int c = t + k * bs;
            if (c < nchunks) {
                if constexpr (!F::kLoads) f.template apply<N>(r + k * N, c * N);
                g[c] = Pack<O>::pack(r + k * N);
            }
        }
        for (int k = 0; k < ks; k += 2) {
            if constexpr (F::kLoads && kParamsAhead > 0) {
#pragma unroll
                for (int u = kParamsAhead; u < kParamsAhead + 2; ++u) {
                    const int c = t + (RC + k + u) * bs;
                    if (k + u < ks && c < nchunks) f.prefetch(c * N);
                }
            }
            float v[2][N];
#pragma unroll
            for (int u = 0; u < 2; ++u) {
                const int c = t + (RC + k + u) * bs;
                if (k + u < ks && c < nchunks) {
                    Pack<T>::unpack(sm[(k + u) * bs + t], v[u]);
                    f.template apply<N>(v[u], c * N);
                }
            }
#pragma unroll
            for (int u = 0; u < 2; ++u) {
                const int c = t + (RC + k + u) * bs;
                if (k + u < ks && c < nchunks) g[c] = Pack<O>::pack(v[u]);
            }
        }
    }
};

// Row kept in registers element by element (any alignment, cols <= RE * blockDim.x).
template <typename T, int RE>
struct ScalarRow {
    static constexpr bool resident = true;
    float r[RE];
    int cols;
    __device__ __forceinline__ void load(const T *row, int cols_) {
        cols = cols_;
        const int t = threadIdx.x, bs = blockDim.x;
#pragma unroll
        for (int k = 0; k < RE; ++k) {
            const int e = t + k * bs;
            r[k] = e < cols ? Pack<T>::load1(row + e) : 0.0f;
        }
    }
    template <class F>
    __device__ __forceinline__ void each(F &f) const {
        const int t = threadIdx.x, bs = blockDim.x;
#pragma unroll
        for (int k = 0; k < RE; ++k)
            if (t + k * bs < cols) f.template operator()<1>(r + k);
    }
    template <typename O, class F>
    __device__ __forceinline__ void store(O *out, F &f) {
        const int t = threadIdx.x, bs = blockDim.x;
        if constexpr (F::kLoads) {  // batch the parameter loads ahead of the stores
#pragma unroll
            for (int k = 0; k < RE; ++k)
                if (t + k * bs < cols) f.template apply<1>(r + k, t + k * bs);
#pragma unroll
            for (int k = 0; k < RE; ++k)
                if (t + k * bs < cols) Pack<O>::store1(out + t + k * bs, r[k]);
        } else {
#pragma unroll
            for (int k = 0; k < RE; ++k)
                if (t + k * bs < cols) {
                    f.template apply<1>(r + k, t + k * bs);
                    Pack<O>::store1(out + t + k * bs, r[k]);
                }
        }
    }
};

// Row streamed from global memory on every look (rows of any width). VEC: 16-byte chunks.
template <typename T, bool VEC>
struct StreamRow {
    static constexpr bool resident = false;
    static constexpr int N = VEC ? Pack<T>::N : 1;
    static constexpr int U = VEC ? 16 / N : 4;  // 16-byte loads in flight per thread
    const T *row;
    int n;  // chunks
    __device__ __forceinline__ void load(const T *row_, int cols) {
        row = row_;
        n = cols / N;
    }
    __device__ __forceinline__ void get(int c, float *v) const {
        if (VEC) Pack<T>::unpack(reinterpret_cast<const uint4 *>(row)[c], v);
        else v[0] = Pack<T>::load1(row + c);
    }
    template <class F>
    __device__ __forceinline__ void each(F &f) const {
        const int t = threadIdx.x, bs = blockDim.x;
        for (int c0 = t; c0 < n; c0 += U * bs) {
            float v[U][N];
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (c0 + u * bs < n) get(c0 + u * bs, v[u]);
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (c0 + u * bs < n) f.template operator()<N>(v[u]);
        }
    }
    // Reverse order: the row's tail, read last by `each`, is the likeliest to still be in L2.
    template <typename O, class F>
    __device__ __forceinline__ void store(O *out, F &f) const {
        const int t = threadIdx.x, bs = blockDim.x;
        const int per = (n + bs - 1) / bs;  // chunk rounds
        for (int k = per - 1; k >= 0; k -= U) {
            float v[U][N];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int c = t + (k - u) * bs;
                if (k - u >= 0 && c < n) get(c, v[u]);
            }
            if constexpr (F::kLoads) {
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    const int c = t + (k - u) * bs;
                    if (k - u >= 0 && c < n) f.template apply<N>(v[u], c * N);
                }
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int c = t + (k - u) * bs;
                if (k - u >= 0 && c < n) {
                    if constexpr (!F::kLoads) f.template apply<N>(v[u], c * N);
                    if (VEC) reinterpret_cast<uint4 *>(out)[c] = Pack<O>::pack(v[u]);
                    else Pack<O>::store1(out + c, v[u][0]);
                }
            }
        }
    }
};

extern __shared__ uint4 prism_row_smem[];

// Runs `op.run(container, row, out_row)` for row blockIdx.x (grid = rows; no grid-stride loop: it would
// keep registers live across the paths and spill), picking the container.
// `extra_ok`: other pointers (gamma/beta) allow 16-byte access.
template <int REG_FLOATS = 32, typename T, typename O, class Op>
__device__ __forceinline__ void row_driver(const T *x, O *y, int rows, int cols, bool extra_ok, Op &op) {
    constexpr int N = Pack<T>::N;
    constexpr int RC = REG_FLOATS / N;  // row floats per thread kept in registers
    const int bs = blockDim.x;
    const bool vec = extra_ok && (cols % N == 0) && prism_aligned16(x) && prism_aligned16(y) &&
                     (sizeof(O) == sizeof(T));
    const int smem_chunks_cap = (int)(dynamic_smem_bytes() / (16u * (unsigned)bs));
    {
        const int row = blockIdx.x;
        if (row >= rows) return;
        const T *xr = x + (size_t)row * cols;
        O *yr = y + (size_t)row * cols;
        if (vec) {
            const int nch = cols / N;
            const int per = (nch + bs - 1) / bs;
            if (per <= RC + smem_chunks_cap) {
                VecRow<T, RC> c;
                c.load(xr, cols, prism_row_smem, per > RC ? per - RC : 0);
                op.run(c, row, yr);
            } else {
                StreamRow<T, true> c;
                c.load(xr, cols);
                op.run(c, row, yr);
            }
        } else if (cols <= 16 * bs) {
            ScalarRow<T, 16> c;
            c.load(xr, cols);
            op.run(c, row, yr);
        } else {
            StreamRow<T, false> c;
            c.load(xr, cols);
            op.run(c, row, yr);
        }
    }
}

// ---------------------------------------------------------------- counter-based random numbers
// splitmix64 finaliser; the CPU fallback (src/cpu/mod.rs) uses the same functions bit for bit.
__host__ __device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
// Uniform in [0, 1) with 24 random bits, from (seed, index, step).
__host__ __device__ __forceinline__ float uniform01(unsigned long long seed, unsigned long long index,
                                                    unsigned long long step) {
    unsigned long long h = mix64(seed ^ (index * 0x9E3779B97F4A7C15ull));
    h = mix64(h ^ ((step + 1ull) * 0xD1B54A32D192ED03ull));
    return (float)(h >> 40) * (1.0f / 16777216.0f);
}


// ---------------------------------------------------------------- elementwise maps
// Grid-stride maps over n elements. Aligned path: U float4 per thread per round (U loads of each input in
// flight), then a scalar tail; unaligned path: scalar. Every element is read and written by one thread,
// so out may alias an input. Any grid and block; best grid = ceil(n / (4 * U * block)).
constexpr int kMapU = 4;

template <class F>
__device__ __forceinline__ float4 apply4(F &f, float4 a) {
    return make_float4(f(a.x), f(a.y), f(a.z), f(a.w));
}
template <class F>
__device__ __forceinline__ float4 apply4(F &f, float4 a, float4 b) {
    return make_float4(f(a.x, b.x), f(a.y, b.y), f(a.z, b.z), f(a.w, b.w));
}

template <class F>
__device__ __forceinline__ void map1(const float *x, float *y, unsigned long long n, F f) {
    const unsigned long long bs = blockDim.x;
    if (prism_aligned16(x) && prism_aligned16(y)) {
        const unsigned long long n4 = n / 4;
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        float4 *y4 = reinterpret_cast<float4 *>(y);
        const unsigned long long stride = (unsigned long long)gridDim.x * bs * kMapU;
        for (unsigned long long b = (unsigned long long)blockIdx.x * bs * kMapU + threadIdx.x; b < n4;
             b += stride) {
            float4 v[kMapU];
#pragma unroll
            for (int u = 0; u < kMapU; ++u)
                if (b + u * bs < n4) v[u] = x4[b + u * bs];
#pragma unroll
            for (int u = 0; u < kMapU; ++u)
                if (b + u * bs < n4) y4[b + u * bs] = apply4(f, v[u]);
        }
        for (unsigned long long t = n4 * 4 + prism_global_thread(); t < n; t += prism_grid_threads())
            y[t] = f(x[t]);
    } else {
        for (unsigned long long t = prism_global_thread(); t < n; t += prism_grid_threads()) y[t] = f(x[t]);
    }
}

template <class F>
__device__ __forceinline__ void map2(const float *a, const float *b, float *y, unsigned long long n, F f) {
    const unsigned long long bs = blockDim.x;
    if (prism_aligned16(a) && prism_aligned16(b) && prism_aligned16(y)) {
        const unsigned long long n4 = n / 4;
        const float4 *a4 = reinterpret_cast<const float4 *>(a);
        const float4 *b4 = reinterpret_cast<const float4 *>(b);
        float4 *y4 = reinterpret_cast<float4 *>(y);
        const unsigned long long stride = (unsigned long long)gridDim.x * bs * kMapU;
        for (unsigned long long i = (unsigned long long)blockIdx.x * bs * kMapU + threadIdx.x; i < n4;
             i += stride) {
            float4 va[kMapU], vb[kMapU];
#pragma unroll
            for (int u = 0; u < kMapU; ++u)
                if (i + u * bs < n4) {
                    va[u] = a4[i + u * bs];
                    vb[u] = b4[i + u * bs];
                }
#pragma unroll
            for (int u = 0; u < kMapU; ++u)
                if (i + u * bs < n4) y4[i + u * bs] = apply4(f, va[u], vb[u]);
        }
        for (unsigned long long t = n4 * 4 + prism_global_thread(); t < n; t += prism_grid_threads())
            y[t] = f(a[t], b[t]);
    } else {
        for (unsigned long long t = prism_global_thread(); t < n; t += prism_grid_threads())
            y[t] = f(a[t], b[t]);
    }
}

// ---------------------------------------------------------------- warp dot product
// Sum over j < n of a[j] * x[j] by one warp (result in every lane). `vec`: a and x 16-byte aligned.
// a is streamed (evict-first), x is expected to stay in cache.
__device__ __forceinline__ float warp_dot(const float *a, const float *x, int n, bool vec) {
    const int lane = threadIdx.x & 31;
    float acc = 0.0f;
    int done = 0;
    if (vec) {
        const int n4 = n >> 2;
        const float4 *a4 = reinterpret_cast<const float4 *>(a);
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        constexpr int U = 4;
        float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int c = lane; c < n4; c += 32 * U) {
            float4 va[U], vx[U];
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (c + 32 * u < n4) {
                    va[u] = __ldcs(a4 + c + 32 * u);
                    vx[u] = __ldg(x4 + c + 32 * u);
                }
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (c + 32 * u < n4) {
                    s.x = fmaf(va[u].x, vx[u].x, s.x);
                    s.y = fmaf(va[u].y, vx[u].y, s.y);
                    s.z = fmaf(va[u].z, vx[u].z, s.z);
                    s.w = fmaf(va[u].w, vx[u].w, s.w);
                }
        }
        acc = (s.x + s.y) + (s.z + s.w);
        done = n4 << 2;
    }
    for (int j = done + lane; j < n; j += 32) acc = fmaf(a[j], x[j], acc);
    return warp_reduce(acc, SumOp{});
}

}  // namespace prism
