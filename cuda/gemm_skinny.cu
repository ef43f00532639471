// Skinny GEMMs: one side of C at most 16 long (decode: a few tokens against a layer's weights). Such products
// are bound by reading the long operand once, which the tiled kernels do with 128-row tiles that are mostly
// empty and too few blocks to keep the memory system busy. Here the short side's operand X (S x k) meets a
// slice of the long operand W (k x L) that every block streams through 16-byte loads: f32 and f64 data on the
// CUDA cores (X staged in shared memory, S <= 16, each weight multiplied with all S rows; f32 sums for f32, f64
// throughout for f64), 16-bit data on the tensor cores (S = 8 or 16, below, f32 sums).
//
// The host maps C = op(A) op(B) onto X and W: m <= 16 gives X = op(A), W = op(B); n <= 16 gives X = op(B)^T,
// W = op(A)^T. `xs`, `xk` are X's element strides along S and k; W is L-contiguous (`wl` kernels: W(kk, l) at
// W[kk * wld + l]) or k-contiguous (`wk`: W[l * wld + kk]). Block z of gridDim.y takes k from z * kc and writes
// its m x n f32 partial product to part + z * m * n, element (s, l) at s * ps + l * pl; the last block of each
// column tile then sums the tile's slices in order and applies alpha, beta and the epilogue (SkinnyFinish below),
// or, where the host has no tile counters for it, gemm_splitk_reduce_<out> does in a second launch. Grid
// (ceil(L / tile), splits), block 256, no dynamic shared memory. Deterministic: every sum is taken in a fixed
// order.
// CUDA cores: kc a multiple of 64, at most skinny_kc<TI>(S). 16-bit: kc a multiple of 256. The f64 kernels' partial
// products, scales and C are f64, their fallback reduction gemm_f64_splitk_reduce.
#include "gemm_common.cuh"

namespace {

constexpr int SK_THREADS = 256, SK_WARPS = SK_THREADS / 32;

// The CUDA-core kernels' sums: f64 for f64 data, else f32.
template <typename TI> using SkAcc = std::conditional_t<std::is_same_v<TI, double>, double, float>;
template <typename TI> __device__ __forceinline__ SkAcc<TI> to_acc(TI v) {
    if constexpr (std::is_same_v<TI, double>) return v;
    else return to_f32<TI>(v);
}
// The longest k slice for S rows of TI staged as SkAcc<TI>: 32 KB of X at most (f32: 2048 up to 4 rows, then
// 8192 / S; f64 half that).
template <typename TI> __host__ __device__ constexpr int skinny_kc(int S) {
    return (S <= 4 ? 2048 : 8192 / S) * 4 / (int)sizeof(SkAcc<TI>);
}

// V consecutive elements of W (16 bytes) as SkAcc<TI>.
template <typename TI> struct Vec {
    static constexpr int V = 16 / sizeof(TI);
    __device__ __forceinline__ static void load(const TI *p, SkAcc<TI> (&v)[V]) {
        const uint4 raw = __ldg(reinterpret_cast<const uint4 *>(p));
        const TI *e = reinterpret_cast<const TI *>(&raw);
#pragma unroll
        for (int i = 0; i < V; ++i) v[i] = to_acc<TI>(e[i]);
    }
};

// X's rows (zero beyond `rows`) for k in [k0, k0 + kn), zero-filled to a multiple of 64, as SkAcc<TI> at
// xsm[s * kc + kk].
template <int S, typename TI>
__device__ __forceinline__ void stage_x(SkAcc<TI> *xsm, const TI *X, long long xs, long long xk, int rows, int k0,
                                        int kn, int kc) {
    const int padded = (kn + 63) & ~63;
    for (int i = threadIdx.x; i < S * padded; i += SK_THREADS) {
        const int s = i / padded, kk = i % padded;
        xsm[s * kc + kk] = (s < rows && kk < kn) ? to_acc<TI>(X[s * xs + (long long)(k0 + kk) * xk]) : SkAcc<TI>(0);
    }
}

// W L-contiguous: lane j of every warp owns columns l0 .. l0 + V - 1 of the block's 32 * V; warp w takes rows
// w, w + 8, ... of the block's k slice; the warps' sums are added in warp order through shared memory.
template <int S, typename TI, bool VEC>
__device__ __forceinline__ void skinny_wl(SkAcc<TI> *xsm, int rows, int L, int k, int kc, const TI *X, long long xs,
                                          long long xk, const TI *W, long long wld, SkAcc<TI> *part, long long ps,
                                          long long pl) {
    using A = SkAcc<TI>;
    constexpr int V = Vec<TI>::V, TILE = 32 * V, U = 4;
    A *red = xsm + S * skinny_kc<TI>(S);  // S * TILE sums
    const int k0 = blockIdx.y * kc, kn = min(kc, k - k0);
    stage_x<S>(xsm, X, xs, xk, rows, k0, kn, kc);
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int l0 = blockIdx.x * TILE + lane * V;
    const bool whole = VEC && l0 + V <= L;
    A acc[S][V];
#pragma unroll
    for (int s = 0; s < S; ++s)
#pragma unroll
        for (int e = 0; e < V; ++e) acc[s][e] = 0;
    const TI *w = W + (long long)k0 * wld + l0;
    for (int kb = warp; kb < kn; kb += SK_WARPS * U) {
        A wv[U][V];
        // U rows' loads first, so U 16-byte reads per thread are in flight together.
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int kk = kb + u * SK_WARPS;
            const TI *row = w + (long long)kk * wld;
            if (kk < kn && whole) {
                Vec<TI>::load(row, wv[u]);
            } else {
#pragma unroll
                for (int e = 0; e < V; ++e) wv[u][e] = (kk < kn && l0 + e < L) ? to_acc<TI>(row[e]) : A(0);
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int kk = kb + u * SK_WARPS;  // the same for the whole warp
            if (kk >= kn) break;
#pragma unroll
            for (int s = 0; s < S; ++s) {
                const A x = xsm[s * kc + kk];
#pragma unroll
                for (int e = 0; e < V; ++e) acc[s][e] = fma(x, wv[u][e], acc[s][e]);
            }
        }
    }
    for (int w8 = 0; w8 < SK_WARPS; ++w8) {
        if (warp == w8) {
#pragma unroll
            for (int s = 0; s < S; ++s)
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    A &r = red[s * TILE + lane * V + e];
                    r = (w8 == 0 ? A(0) : r) + acc[s][e];
                }
        }
        __syncthreads();
    }
    A *out = part + (long long)blockIdx.y * rows * L;
    for (int i = threadIdx.x; i < S * TILE; i += SK_THREADS) {
        const int s = i / TILE, l = blockIdx.x * TILE + i % TILE;
        if (s < rows && l < L) out[s * ps + l * pl] = red[i];
    }
}

// W k-contiguous: warp w owns columns l0 .. l0 + CPW - 1 of the block's 8 * CPW; its lanes walk the slice's k
// V elements at a time (512 contiguous bytes per column and step), and a shuffle tree sums the lanes.
template <int S, typename TI, bool VEC>
__device__ __forceinline__ void skinny_wk(SkAcc<TI> *xsm, int rows, int L, int k, int kc, const TI *X, long long xs,
                                          long long xk, const TI *W, long long wld, SkAcc<TI> *part, long long ps,
                                          long long pl) {
    using A = SkAcc<TI>;
    constexpr int V = Vec<TI>::V, CPW = 4;
    const int k0 = blockIdx.y * kc, kn = min(kc, k - k0);
    stage_x<S>(xsm, X, xs, xk, rows, k0, kn, kc);
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int l0 = (blockIdx.x * SK_WARPS + warp) * CPW;
    A acc[CPW][S];
#pragma unroll
    for (int c = 0; c < CPW; ++c)
#pragma unroll
        for (int s = 0; s < S; ++s) acc[c][s] = 0;
    for (int kk = lane * V; kk < kn; kk += 32 * V) {
        A wv[CPW][V];
#pragma unroll
        for (int c = 0; c < CPW; ++c) {
            const TI *row = W + (long long)(l0 + c) * wld + k0 + kk;
            if (VEC && l0 + c < L && kk + V <= kn) {
                Vec<TI>::load(row, wv[c]);
            } else {
#pragma unroll
                for (int e = 0; e < V; ++e) wv[c][e] = (l0 + c < L && kk + e < kn) ? to_acc<TI>(row[e]) : A(0);
            }
        }
#pragma unroll
        for (int s = 0; s < S; ++s) {
            A x[V];  // V sums of 16 bytes in all (kk is a multiple of V): one shared-memory load
            if constexpr (V == 4) {
                const float4 f = *reinterpret_cast<const float4 *>(&xsm[s * kc + kk]);
                x[0] = f.x, x[1] = f.y, x[2] = f.z, x[3] = f.w;
            } else {
                static_assert(V == 2, "f32 or f64 data");
                const double2 f = *reinterpret_cast<const double2 *>(&xsm[s * kc + kk]);
                x[0] = f.x, x[1] = f.y;
            }
#pragma unroll
            for (int c = 0; c < CPW; ++c)
#pragma unroll
                for (int e = 0; e < V; ++e) acc[c][s] = fma(x[e], wv[c][e], acc[c][s]);
        }
    }
    A *out = part + (long long)blockIdx.y * rows * L;
#pragma unroll
    for (int c = 0; c < CPW; ++c)
#pragma unroll
        for (int s = 0; s < S; ++s) {
            A v = acc[c][s];
#pragma unroll
            for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
            if (lane == 0 && s < rows && l0 + c < L) out[s * ps + (l0 + c) * pl] = v;
        }
}

// V = 16 / sizeof(TI) consecutive elements of TI kept as loaded (one 16-byte load, or V scalar loads with zeros
// past the end), widened to f32 where they are used: raw, U loads in flight take 4 registers each, not V.
template <typename TI> struct Sixteen {
    static constexpr int V = 16 / sizeof(TI);
    uint4 raw;
    __device__ __forceinline__ void load(const TI *p) { raw = __ldg(reinterpret_cast<const uint4 *>(p)); }
    // Element e from p[e * stride] where e < valid, else zero.
    __device__ __forceinline__ void gather(const TI *p, long long stride, int valid) {
        TI *e = reinterpret_cast<TI *>(&raw);
#pragma unroll
        for (int i = 0; i < V; ++i) e[i] = i < valid ? p[i * stride] : from_f32<TI>(0.f);
    }
    __device__ __forceinline__ float operator[](int i) const { return to_f32<TI>(reinterpret_cast<const TI *>(&raw)[i]); }
};

// One row (C's short side is 1) in one launch, W L-contiguous, TI data (f32, bf16 or f16, f32 sums) to TO: block
// owns CW columns over all of k, its 256 threads are CW / V lanes of 16-byte loads (V elements) along the
// columns times 256 / (CW / V) row groups along k, U rows in flight per thread; a shared-memory tree sums the row
// groups in a fixed order, and the block writes C = epilogue(alpha * sum + beta * C) itself. No workspace and no
// second launch, which is what a small GEMV costs (1 x 2048 x 2048 f32: 11.4 us against 13.0 us for slices and
// their reduction, notes/gemv/). C's element l is at C[l * cl]; its epilogue column is l when l runs along C's
// columns (l_cols), else 0.
template <int CW, bool VEC, typename TI, typename TO>
__device__ __forceinline__ void gemv_wl(int L, int k, const TI *X, long long xk, const TI *W, long long wld,
                                        float alpha, float beta, TO *C, long long cl, int l_cols,
                                        const Epilogue<TO> &epi) {
    constexpr int V = Sixteen<TI>::V, LANES = CW / V, GROUPS = SK_THREADS / LANES, U = 4;
    static_assert(LANES >= 1, "a block's columns are whole 16-byte loads");
    const int lane = threadIdx.x % LANES, group = threadIdx.x / LANES;
    const int l0 = blockIdx.x * CW + lane * V;
    const bool whole = VEC && l0 + V <= L;
    float acc[V] = {};
    for (int kb = group; kb < k; kb += GROUPS * U) {
        Sixteen<TI> w[U];
        float x[U];
        // U rows' loads first, so U 16-byte reads per thread are in flight together.
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int kk = kb + u * GROUPS;
            const TI *row = W + (long long)kk * wld + l0;
            x[u] = kk < k ? to_f32<TI>(X[kk * xk]) : 0.f;
            if (kk < k && whole) w[u].load(row);
            else w[u].gather(row, 1, kk < k ? L - l0 : 0);
        }
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int e = 0; e < V; ++e) acc[e] = fmaf(x[u], w[u][e], acc[e]);
    }
    __shared__ float4 red[SK_THREADS * V / 4];
    float *mine = reinterpret_cast<float *>(red) + threadIdx.x * V;
#pragma unroll
    for (int e = 0; e < V; ++e) mine[e] = acc[e];
    __syncthreads();
#pragma unroll
    for (int half = GROUPS / 2; half > 0; half /= 2) {
        if (group < half) {
            const float *o = mine + half * LANES * V;
#pragma unroll
            for (int e = 0; e < V; ++e) mine[e] += o[e];
        }
        __syncthreads();
    }
    if (group != 0) return;
    float sum[V], scale = alpha;
#pragma unroll
    for (int e = 0; e < V; ++e) sum[e] = mine[e];
    epi.template fuse<V>(scale, [&](int e) -> float & { return sum[e]; }, [&](int e) { return l_cols ? l0 + e : 0; });
#pragma unroll
    for (int e = 0; e < V; ++e) {
        if (l0 + e >= L) break;
        scaled_store(C + (long long)(l0 + e) * cl, scale, sum[e], beta);
    }
}

// The same with W k-contiguous: the block's CW columns each get 256 / CW lanes (a warp for CW = 8), which walk
// the column's k in 16-byte loads, U of them in flight, and sum through a shuffle tree in a fixed order.
template <int CW, bool VEC, typename TI, typename TO>
__device__ __forceinline__ void gemv_wk(int L, int k, const TI *X, long long xk, const TI *W, long long wld,
                                        float alpha, float beta, TO *C, long long cl, int l_cols,
                                        const Epilogue<TO> &epi) {
    constexpr int V = Sixteen<TI>::V, LANES = SK_THREADS / CW, U = 4;
    static_assert(LANES <= 32, "a column's lanes are one warp's");
    const int lane = threadIdx.x % LANES, l = blockIdx.x * CW + threadIdx.x / LANES;
    const bool inside = l < L;
    const TI *w = W + (long long)(inside ? l : 0) * wld;
    // X's 16-byte loads need it contiguous along k and aligned.
    const bool x_vec = VEC && xk == 1 && ((unsigned long long)X & 15ull) == 0;
    float acc = 0.f;
    for (int k0 = lane * V; k0 < k; k0 += LANES * V * U) {
        Sixteen<TI> wv[U], xv[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int kk = k0 + u * LANES * V;
            if (VEC && inside && kk + V <= k) wv[u].load(w + kk);
            else wv[u].gather(w + kk, 1, inside ? k - kk : 0);
            if (x_vec && kk + V <= k) xv[u].load(X + kk);
            else xv[u].gather(X + (long long)kk * xk, xk, k - kk);
        }
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int e = 0; e < V; ++e) acc = fmaf(xv[u][e], wv[u][e], acc);
    }
#pragma unroll
    for (int d = LANES / 2; d > 0; d /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, d);
    if (lane != 0 || !inside) return;
    float scale = alpha;
    epi.template fuse<1>(scale, [&](int) -> float & { return acc; }, [&](int) { return l_cols ? l : 0; });
    scaled_store(C + (long long)l * cl, scale, acc, beta);
}

// ---- Tensor-core skinny kernels (16-bit data, 8 to 64 rows) ----
// The same slices and partial products as above, with the products on mma.sync m16n8k16 and the operands
// swapped: W's columns of C's long side are the mma's 16 rows, X's rows its 8 columns (so a decode product of a
// few tokens wastes no weight bandwidth and at most 7 of 8 token columns). Neither operand goes through shared
// memory: every lane loads its fragments straight from global memory with 16-byte loads. A sum over k does not
// care about the order of k, so the fragments use a permuted k that keeps each lane's loads contiguous (both
// operands the same permutation); for `wl`, the mma's rows are likewise a permutation of the warp's 64 columns.
// Warps: WL along the long side times WK along the block's k slice (the WK partial sums are added in warp order
// through shared memory at the end, so the result does not depend on timing).

// N consecutive k-elements (16 or 8 bytes) of one operand row as packed pairs: `valid` of them read from p,
// p[i * stride], zero beyond. Nothing is read when valid == 0. `fast`: all N valid, stride 1, p aligned.
template <int N, typename TI>
__device__ __forceinline__ void load_pairs(uint32_t (&r)[N / 2], const TI *p, long long stride, int valid, bool fast) {
    if (fast) {
        if constexpr (N == 8) {
            const uint4 v = __ldg(reinterpret_cast<const uint4 *>(p));
            r[0] = v.x; r[1] = v.y; r[2] = v.z; r[3] = v.w;
        } else {
            const uint2 v = __ldg(reinterpret_cast<const uint2 *>(p));
            r[0] = v.x; r[1] = v.y;
        }
        return;
    }
    unsigned short e[N];
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const TI v = i < valid ? p[i * stride] : from_f32<TI>(0.f);
        e[i] = *reinterpret_cast<const unsigned short *>(&v);
    }
#pragma unroll
    for (int i = 0; i < N / 2; ++i) r[i] = (uint32_t)e[2 * i] | ((uint32_t)e[2 * i + 1] << 16);
}

__device__ __forceinline__ int clamp_valid(long long left, int n) { return left <= 0 ? 0 : (left >= n ? n : (int)left); }

// Adds the WK warps' accumulators of each WL column group in warp order (shared memory, COUNT floats a lane), so
// the warps with wk == 0 hold the block's sums.
template <int COUNT, int WL, int WK>
__device__ __forceinline__ void sum_k_warps(float *red, float *acc, int wl, int wk, int lane) {
    if constexpr (WK > 1) {
        for (int w = 1; w < WK; ++w) {
            if (wk == w) {
#pragma unroll
                for (int i = 0; i < COUNT; ++i) red[(wl * COUNT + i) * 32 + lane] = acc[i];
            }
            __syncthreads();
            if (wk == 0) {
#pragma unroll
                for (int i = 0; i < COUNT; ++i) acc[i] += red[(wl * COUNT + i) * 32 + lane];
            }
            __syncthreads();
        }
    }
}

// Calls f(i, j, e) for each of a lane's accumulators of the tensor-core kernels: MT x NT mma tiles of 4 floats.
template <int MT, int NT, typename F>
__device__ __forceinline__ void each_tc(F f) {
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) f(i, j, e);
}

// Zeroes the tensor-core kernels' accumulators.
template <int MT, int NT>
__device__ __forceinline__ void zero_tc(float (&acc)[MT][NT][4]) {
    each_tc<MT, NT>([&](int i, int j, int e) { acc[i][j][e] = 0.f; });
}

// Loads N k-elements at k-index kk of X's rows 8j + g (j < NT; `valid` of them in the slice, none past `rows`) as
// the mma's B fragments. `vec`: X's base and row pitch allow N-element loads.
template <int N, int NT, typename TI>
__device__ __forceinline__ void load_x(uint32_t (&xb)[NT][N / 2], const TI *X, long long xs, long long xk, int rows,
                                       int g, int kk, int valid, bool vec) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
        const int s = 8 * j + g;
        const int v = s < rows ? valid : 0;
        load_pairs<N>(xb[j], X + (long long)min(s, rows - 1) * xs + (long long)kk * xk, xk, v, vec && v == N);
    }
}

// Sums the WK warps' accumulators (sum_k_warps), then the warps with wk == 0 store them to this k slice's partial
// product (blockIdx.y's rows x L block of part, element (s, l) at s * ps + l * pl): accumulator (i, j, e) of lane
// (g, c) is token s = 8j + 2c + e % 2 of long-side column col(i, e), stored where both are in range.
template <int WL, int WK, int MT, int NT, typename Col>
__device__ __forceinline__ void store_tc(float (&acc)[MT][NT][4], int wl, int wk, int lane, int rows, int L,
                                         float *part, long long ps, long long pl, Col col) {
    __shared__ float red[WK > 1 ? WL * MT * NT * 4 * 32 : 1];
    sum_k_warps<MT * NT * 4, WL, WK>(red, &acc[0][0][0], wl, wk, lane);
    if (wk != 0) return;
    const int c = lane % 4;
    float *out = part + (long long)blockIdx.y * rows * L;
    each_tc<MT, NT>([&](int i, int j, int e) {
        const int l = col(i, e), s = 8 * j + 2 * c + e % 2;
        if (l < L && s < rows) out[s * ps + l * pl] = acc[i][j][e];
    });
}

// W k-contiguous (W[l * wld + kk]): a warp owns 16 MT columns of the long side. Lane (g, c) = (lane / 4, lane % 4)
// loads 8 k-elements at 8c of rows g and g + 8 of each 16-column tile and of X's row g of each 8-row tile; of a
// 32-deep step, elements 0-3 of each load feed the first mma, 4-7 the second.
template <int S, int MT, int WL, int WK, int U, typename TI>
__device__ __forceinline__ void skinny_tc_wk(int rows, int L, int k, int kc, const TI *X, long long xs,
                                             long long xk, const TI *W, long long wld, float *part, long long ps,
                                             long long pl) {
    constexpr int NT = S / 8, KIND = std::is_same<TI, __half>::value ? 1 : 0, STEP = 32;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
    const int wl = warp % WL, wk = warp / WL;
    const int l0 = (blockIdx.x * WL + wl) * 16 * MT;
    const int k0 = blockIdx.y * kc, kend = min(k0 + kc, k);
    const bool wvec = rows_aligned<16>(W, wld);
    const bool xvec = xk == 1 && rows_aligned<16>(X, xs);
    float acc[MT][NT][4];
    zero_tc(acc);
    for (int kb = k0 + wk * STEP * U; kb < kend; kb += WK * STEP * U) {
        uint32_t wa[U][MT][2][4], xb[U][NT][4];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int kk = kb + u * STEP + 8 * c, valid = clamp_valid((long long)kend - kk, 8);
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int l = l0 + 16 * i + 8 * h + g;
                    const int v = l < L ? valid : 0;
                    load_pairs<8>(wa[u][i][h], W + (long long)min(l, L - 1) * wld + kk, 1, v, wvec && v == 8);
                }
            load_x<8>(xb[u], X, xs, xk, rows, g, kk, valid, xvec);
        }
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j)
#pragma unroll
                    for (int half = 0; half < 2; ++half) {
                        const uint32_t a[4] = {wa[u][i][0][2 * half], wa[u][i][1][2 * half], wa[u][i][0][2 * half + 1],
                                               wa[u][i][1][2 * half + 1]};
                        mma16816<KIND>(acc[i][j], a, xb[u][j][2 * half], xb[u][j][2 * half + 1]);
                    }
    }
    // Accumulator (i, e) of a lane is W's row (long-side column) g or g + 8 of 16-column tile i.
    store_tc<WL, WK>(acc, wl, wk, lane, rows, L, part, ps, pl,
                     [=](int i, int e) { return l0 + 16 * i + g + 8 * (e / 2); });
}

// W long-side-contiguous (W[kk * wld + l]): a warp owns 64 columns; lane (g, c) loads the 8 columns at 8g for
// the k-rows 4c .. 4c + 3 of a 16-deep step, which are rows g and g + 8 of its four 16-row mma tiles (tile i
// takes columns 8g + 2i and 8g + 2i + 1), and pairs the k-rows with byte permutes; X's row g gives the same
// four k-elements (8 bytes).
template <int S, int WL, int WK, int U, typename TI>
__device__ __forceinline__ void skinny_tc_wl(int rows, int L, int k, int kc, const TI *X, long long xs,
                                             long long xk, const TI *W, long long wld, float *part, long long ps,
                                             long long pl) {
    constexpr int NT = S / 8, MT = 4, KIND = std::is_same<TI, __half>::value ? 1 : 0, STEP = 16;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
    const int wl = warp % WL, wk = warp / WL;
    const int l = (blockIdx.x * WL + wl) * 64 + 8 * g;
    const int k0 = blockIdx.y * kc, kend = min(k0 + kc, k);
    const int lvalid = clamp_valid((long long)L - l, 8);
    const bool wvec = lvalid == 8 && rows_aligned<16>(W, wld);
    const bool xvec = xk == 1 && rows_aligned<8>(X, xs);
    const TI *wcol = W + min(l, L - 1);
    float acc[MT][NT][4];
    zero_tc(acc);
    for (int kb = k0 + wk * STEP * U; kb < kend; kb += WK * STEP * U) {
        uint32_t wv[U][4][4], xb[U][NT][2];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int kq = kb + u * STEP + 4 * c;
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const bool in = kq + q < kend;
                load_pairs<8>(wv[u][q], wcol + (long long)min(kq + q, k - 1) * wld, 1, in ? lvalid : 0, in && wvec);
            }
            const int valid = clamp_valid((long long)kend - kq, 4);
            load_x<4>(xb[u], X, xs, xk, rows, g, min(kq, k - 1), valid, xvec);
        }
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int i = 0; i < MT; ++i) {
                const uint32_t a[4] = {__byte_perm(wv[u][0][i], wv[u][1][i], 0x5410),
                                       __byte_perm(wv[u][0][i], wv[u][1][i], 0x7632),
                                       __byte_perm(wv[u][2][i], wv[u][3][i], 0x5410),
                                       __byte_perm(wv[u][2][i], wv[u][3][i], 0x7632)};
#pragma unroll
                for (int j = 0; j < NT; ++j) mma16816<KIND>(acc[i][j], a, xb[u][j][0], xb[u][j][1]);
            }
    }
    // Accumulator (i, e) of a lane is column 8g + 2i or 8g + 2i + 1.
    store_tc<WL, WK>(acc, wl, wk, lane, rows, L, part, ps, pl, [=](int i, int e) { return l + 2 * i + e / 2; });
}


// The product's finish in the slices' own launch (serial split-K), in place of gemm_splitk_reduce_<out>: once a
// block has stored its slice of a column tile, it counts itself in the tile's counter, and the tile's last block
// sums the tile's slices in slice order (the reduction kernel's order: the same bits), writes C = epilogue(alpha
// * sum + beta * C) and sets the counter back to zero for the next product on this workspace. Passed by value;
// the layout matches `SkinnyFinish` in src/kernels/gemm/split.rs. A: the sums' type, f32 or (f64 data, whose C is
// f64, with no epilogue) f64.
template <typename A> struct SkinnyFinish {
    unsigned *counters;  // one per block of grid.x, zero between products; null: a reduction kernel finishes
    void *C;             // C's m x n block, rows ldc elements apart, of type `out`: 0 f32, 1 bf16, 2 f16 (A f32)
    const void *bias;    // the epilogue's n values of C's type, or null
    long long ldc;
    A alpha, beta;
    int splits, tile, m, n, out, act;  // tile: C's long-side columns per block
};

// Sums and stores this block's tile: its `tile` long-side columns (fewer at the end) of every row, from the
// `splits` packed m x n partial products at part (element (s, l) of each at s * ps + l * pl).
template <typename TO, typename A>
__device__ void finish_tile(const SkinnyFinish<A> &f, const A *part, int rows, int L, long long ps, long long pl) {
    const long long slice = (long long)f.m * f.n;
    const int l0 = blockIdx.x * f.tile, cols = min(f.tile, L - l0);
    auto each = [&](auto store) {
        for (int i = threadIdx.x; i < rows * cols; i += SK_THREADS) {
            const long long at = (i / cols) * ps + (long long)(l0 + i % cols) * pl;
            A sum = 0;
            // L2 reads: the other blocks' partial sums are not in this SM's L1.
            for (int z = 0; z < f.splits; ++z) sum += __ldcg(part + z * slice + at);
            const int col = (int)(at % f.n);
            store(static_cast<TO *>(f.C) + at / f.n * f.ldc + col, sum, col);
        }
    };
    if constexpr (std::is_same_v<A, double>) {
        // gemm_f64_splitk_reduce's arithmetic: the same bits whichever finishes.
        each([&](double *c, double sum, int) { *c = f.beta != 0.0 ? fma(f.alpha, sum, f.beta * *c) : f.alpha * sum; });
    } else {
        const Epilogue<TO> epi{static_cast<const TO *>(f.bias), 0, f.act, f.n};
        each([&](TO *c, float sum, int col) { epilogue_store(c, sum, f.alpha, f.beta, col, epi); });
    }
}

// Called by every thread of the block after its stores to part (see SkinnyFinish).
template <typename A>
__device__ __forceinline__ void skinny_finish(const SkinnyFinish<A> &f, const A *part, int rows, int L, long long ps,
                                              long long pl) {
    if (f.counters == nullptr) return;
    __shared__ bool last;
    __threadfence();  // this thread's partial sums, visible to whichever block finishes the tile
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(f.counters + blockIdx.x, 1u) == (unsigned)f.splits - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    if constexpr (std::is_same_v<A, double>) finish_tile<double>(f, part, rows, L, ps, pl);
    else if (f.out == 1) finish_tile<__nv_bfloat16>(f, part, rows, L, ps, pl);
    else if (f.out == 2) finish_tile<__half>(f, part, rows, L, ps, pl);
    else finish_tile<float>(f, part, rows, L, ps, pl);
    if (threadIdx.x == 0) f.counters[blockIdx.x] = 0;
}

}  // namespace

// gemm_skinny_<wl|wk>_<f32|f64>_s<S>: rows <= S (the host picks the smallest S of 1, 2, 4, 8, 16), k slices of at
// most skinny_kc<T>(S) (S * kc sums of X staged). vec: W's base and pitch allow 16-byte loads (checked here).
#define SKINNY_ENTRY(LAYOUT, IN, T, S, SMEM_SUMS)                                                              \
    PRISM_KERNEL void __launch_bounds__(256)                                                                    \
        gemm_skinny_##LAYOUT##_##IN##_s##S(int rows, int L, int k, int kc, const T *X, long long xs,           \
                                           long long xk, const T *W, long long wld, T *part, long long ps,     \
                                           long long pl, SkinnyFinish<T> fin) {                                 \
        __shared__ __align__(16) T smem[SMEM_SUMS];                                                             \
        const bool vec = rows_aligned<16>(W, wld);                                                              \
        if (vec) skinny_##LAYOUT<S, T, true>(smem, rows, L, k, kc, X, xs, xk, W, wld, part, ps, pl);            \
        else skinny_##LAYOUT<S, T, false>(smem, rows, L, k, kc, X, xs, xk, W, wld, part, ps, pl);               \
        skinny_finish(fin, part, rows, L, ps, pl);                                                              \
    }
// wl also keeps the warps' sums (S x 32 V) after X.
#define SKINNY_S(IN, T, S)                                                                                      \
    SKINNY_ENTRY(wl, IN, T, S, S * skinny_kc<T>(S) + S * 32 * Vec<T>::V)                                        \
    SKINNY_ENTRY(wk, IN, T, S, S * skinny_kc<T>(S))
#define SKINNY_ROWS(IN, T)                                                                                      \
    SKINNY_S(IN, T, 1) SKINNY_S(IN, T, 2) SKINNY_S(IN, T, 4) SKINNY_S(IN, T, 8) SKINNY_S(IN, T, 16)
SKINNY_ROWS(f32, float)
SKINNY_ROWS(f64, double)

// gemm_gemv_<wl|wk>_<in>_<out>_c<CW>: C's short side 1 (gemv_wl, gemv_wk above): f32 -> f32, and bf16 or f16
// -> the same or f32. Grid (ceil(L / CW), 1, batch entries), block 256; entry z's X, W, C and bias start xb, wb,
// cb and bias_stride elements after entry z - 1's. vec: W's base and pitch allow 16-byte loads (checked here).
#define GEMV_ENTRY(LAYOUT, IN, TI, OUT, TO, CW)                                                                \
    PRISM_KERNEL void __launch_bounds__(256, 3) gemm_gemv_##LAYOUT##_##IN##_##OUT##_c##CW(                       \
        int L, int k, const TI *X, long long xk, long long xb, const TI *W, long long wld, long long wb,        \
        float alpha, float beta, TO *C, long long cl, long long cb, int l_cols, int n, const TO *bias,           \
        long long bias_stride, int act) {                                                                        \
        const long long z = blockIdx.z;                                                                          \
        X += z * xb, W += z * wb, C += z * cb;                                                                   \
        const Epilogue<TO> epi{bias, bias_stride, act, n};                                                      \
        if (rows_aligned<16>(W, wld)) gemv_##LAYOUT<CW, true>(L, k, X, xk, W, wld, alpha, beta, C, cl, l_cols, epi); \
        else gemv_##LAYOUT<CW, false>(L, k, X, xk, W, wld, alpha, beta, C, cl, l_cols, epi);                    \
    }
#define GEMV_IO(IN, TI, OUT, TO)                                                                                \
    GEMV_ENTRY(wl, IN, TI, OUT, TO, 8) GEMV_ENTRY(wl, IN, TI, OUT, TO, 16) GEMV_ENTRY(wl, IN, TI, OUT, TO, 32)    \
    GEMV_ENTRY(wl, IN, TI, OUT, TO, 64) GEMV_ENTRY(wk, IN, TI, OUT, TO, 8) GEMV_ENTRY(wk, IN, TI, OUT, TO, 16)    \
    GEMV_ENTRY(wk, IN, TI, OUT, TO, 32) GEMV_ENTRY(wk, IN, TI, OUT, TO, 64)
GEMV_IO(f32, float, f32, float)
GEMV_IO(bf16, __nv_bfloat16, bf16, __nv_bfloat16) GEMV_IO(bf16, __nv_bfloat16, f32, float)
GEMV_IO(f16, __half, f16, __half) GEMV_IO(f16, __half, f32, float)

// gemm_skinny_tc_<wl|wk>_<bf16|f16>_s<S>: 16-bit data on the tensor cores, rows <= S (8 or 16: the host picks
// the smaller that holds C's short side), slices of any depth (X is read from global memory). Configurations
// measured on an H100 (notes/skinny-tc), the best over both layouts' shapes with the weights in L2 and not: wk,
// 2 warps of one 16-column tile along the long side x 4 along k; wl, 1 warp of 64 columns x 8 along k; both 2
// steps in flight. Blocks cover 32 (wk) or 64 (wl) columns.
#define SKINNY_TC_ENTRY(SFX, TI, S)                                                                            \
    PRISM_KERNEL void __launch_bounds__(256)                                                                    \
        gemm_skinny_tc_wk_##SFX##_s##S(int rows, int L, int k, int kc, const TI *X, long long xs, long long xk, \
                                       const TI *W, long long wld, float *part, long long ps, long long pl,     \
                                       SkinnyFinish<float> fin) {                                               \
        skinny_tc_wk<S, 1, 2, 4, 2, TI>(rows, L, k, kc, X, xs, xk, W, wld, part, ps, pl);                       \
        skinny_finish(fin, part, rows, L, ps, pl);                                                              \
    }                                                                                                           \
    PRISM_KERNEL void __launch_bounds__(256)                                                                    \
        gemm_skinny_tc_wl_##SFX##_s##S(int rows, int L, int k, int kc, const TI *X, long long xs, long long xk, \
                                       const TI *W, long long wld, float *part, long long ps, long long pl,     \
                                       SkinnyFinish<float> fin) {                                               \
        skinny_tc_wl<S, 1, 8, 2, TI>(rows, L, k, kc, X, xs, xk, W, wld, part, ps, pl);                          \
        skinny_finish(fin, part, rows, L, ps, pl);                                                              \
    }
SKINNY_TC_ENTRY(bf16, __nv_bfloat16, 8)
SKINNY_TC_ENTRY(bf16, __nv_bfloat16, 16)
SKINNY_TC_ENTRY(f16, __half, 8)
SKINNY_TC_ENTRY(f16, __half, 16)
