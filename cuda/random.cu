// Counter-based random numbers: Philox4x32-10 (Salmon, Moraes, Dror, Shaw, SC'11).
// Block b of a fill is philox(counter = (offset + b as a 128-bit number, its top word 0), key = seed):
// four 32-bit words. One thread makes one block and writes the elements it yields with one 16-byte store
// (scalar stores for a misaligned pointer or the last, partial block), so element i of a fill
// depends only on (seed, offset, i):
//   u32 bits      4 per block: word i % 4 of block i / 4 (a u64 fill is the u32 fill of 2n words)
//   f32 uniform   4 per block: ((w >> 8) + 1) * 2^-24, in (0, 1], exact
//   f64 uniform   2 per block: ((v >> 11) + 1) * 2^-53 with v = w[2j] | w[2j+1] << 32, in (0, 1]
//   f32 normal    4 per block: a ziggurat (Marsaglia & Tsang 2000) on word e of the block, one word per
//                 normal: bits 0-7 the layer (256, cuda/random_ziggurat.inc), bit 8 the sign, bits 9-31 the
//                 fraction j; |z| = j W[layer] when j < K[layer] (98.5% of draws), else the wedge or tail
//                 test, whose uniforms (and a rejected draw's next word) come from retry blocks
//                 philox(counter = (offset + b, 4t + e in the top word), key = seed), t = 1, 2, ...: the
//                 main stream's top word is 0, so they never meet it, and element e's retries are its own.
//                 f32 arithmetic that the CPU repeats bit for bit (fma and IEEE-rounded + * only, our own
//                 ln and exp polynomials), then fma(stddev, z, mean); the log-normal exponentiates that
//                 value in double
//   f64 normal    2 per block: Box-Muller on the pair (v0, v1) of 64-bit values
//   log-normal    exp of the normal (same layout)
// src/cpu/random.rs computes the same numbers; cuRAND's Philox gives other values.
// Launch: 1-D, any grid (grid-stride over blocks), recommended one thread per block. Define
// PRISM_ZIGGURAT_LDG to read the ziggurat's table through __ldg instead of shared memory (a benchmark
// switch, notes/philox-normal).
#include "common.cuh"

namespace {

typedef unsigned long long u64;

// Philox4x32-10 of the counter (c.x, c.y, c.z, c.w) under the key `seed`.
__device__ __forceinline__ uint4 philox4x32_10(uint4 c, u64 seed) {
    unsigned c0 = c.x, c1 = c.y, c2 = c.z, c3 = c.w;
    unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
#pragma unroll
    for (int round = 0; round < 10; ++round) {
        const unsigned hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        const unsigned hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return make_uint4(c0, c1, c2, c3);
}

// The counter of block `block` of a fill at `offset`: offset + block in 128 bits (top word 0).
__device__ __forceinline__ uint4 block_counter(u64 offset, u64 block) {
    const u64 low = offset + block;
    return make_uint4((unsigned)low, (unsigned)(low >> 32), low < offset ? 1u : 0u, 0u);
}

__device__ __forceinline__ float uniform_f32(unsigned w) {
    return __uint2float_rn((w >> 8) + 1u) * 0x1p-24f;
}
__device__ __forceinline__ u64 join(unsigned lo, unsigned hi) { return (u64)lo | ((u64)hi << 32); }
__device__ __forceinline__ double uniform_f64(u64 v) {
    return __ull2double_rn((v >> 11) + 1ull) * 0x1p-53;
}

// Box-Muller: u1 in (0, 1] gives the radius, `turns` in [0, 1) the angle; (r cos, r sin).
__device__ __forceinline__ double2 box_muller(double u1, double turns) {
    const double r = sqrt(-2.0 * log(u1));
    double s, c;
    sincospi(2.0 * turns, &s, &c);
    return make_double2(r * c, r * s);
}

// The f32 ziggurat that the CPU repeats bit for bit: integer operations, conversions of integers below
// 2^24 (exact), fma, IEEE-rounded additions and multiplications, in the order src/cpu/random.rs uses. The
// polynomials (cuda/random_polynomials.inc) are evaluated by Horner's rule with one fma per coefficient.
namespace exact {
#define PRISM_F32_BITS(name, ...) __constant__ const unsigned name[] = {__VA_ARGS__};
#include "random_polynomials.inc"
#undef PRISM_F32_BITS
// The ziggurat's tables in global memory: the fast path reads its (K, W) pairs from a copy in shared memory
// (or through __ldg), the slow paths read the heights through __ldg.
#define PRISM_F32_BITS(name, ...) __device__ __align__(8) const unsigned name[] = {__VA_ARGS__};
#include "random_ziggurat.inc"
#undef PRISM_F32_BITS

constexpr int log2_exact(int n) { return n == 1 ? 0 : 1 + log2_exact(n / 2); }
constexpr int LAYERS = sizeof(ZIGGURAT_FAST) / sizeof(uint2);
constexpr int LAYER_BITS = log2_exact(LAYERS);
static_assert(1 << LAYER_BITS == LAYERS, "a power of two of layers");
static_assert(sizeof(ZIGGURAT_F) == (LAYERS + 1) * sizeof(unsigned), "a height per layer edge");

template <int N>
__device__ __forceinline__ float horner(const unsigned (&coefficients)[N], float x) {
    float acc = __uint_as_float(coefficients[0]);
#pragma unroll
    for (int i = 1; i < N; ++i) acc = __fmaf_rn(acc, x, __uint_as_float(coefficients[i]));
    return acc;
}

// -2 ln u for u = j 2^-24, j = (w >> 8) + 1 in [1, 2^24]: j = 2^k m with m in [sqrt(1/2), sqrt(2)) (k from
// the bits of j - sqrt(1/2)), -2 ln u = (k - 24) (-2 ln 2) - 2 ln(1 + f) with f = m - 1 (exact) and
// -2 ln(1 + f) = f P(f).
__device__ __forceinline__ float minus_two_ln_unit(unsigned w) {
    const int bits = __float_as_int((float)((w >> 8) + 1u));
    const int k = (bits - 0x3f3504f3) >> 23;
    const float f = __fadd_rn(__int_as_float(bits - (k << 23)), -1.f);  // exact (Sterbenz)
    const float ef = (float)(k - 24);
    const float ln1p = __fmul_rn(f, horner(LN1P_M2, f));
    return __fmaf_rn(ef, __uint_as_float(M2LN2[0]), __fmaf_rn(ef, __uint_as_float(M2LN2[1]), ln1p));
}

// exp(-x^2 / 2) for |x| <= r (the wedges): h = -x^2 / 2 (one rounding) = k ln 2 + s with k = round(h log2 e)
// (1.5 2^23 added and taken away rounds to an integer; its low bits are k) and s in about [-ln 2 / 2, ln 2 / 2]
// (two fma with ln 2 split in two f32), exp(s) by the polynomial, 2^k added to its exponent (k >= -10: no
// underflow).
__device__ __forceinline__ float exp_minus_half_square(float x) {
    const float h = __fmul_rn(__fmul_rn(x, x), -0.5f);
    const float shifted = __fmaf_rn(h, __uint_as_float(EXP_REDUCE[0]), 0x1.8p23f);
    const float k = __fadd_rn(shifted, -0x1.8p23f);
    float s = __fmaf_rn(-k, __uint_as_float(EXP_REDUCE[1]), h);
    s = __fmaf_rn(-k, __uint_as_float(EXP_REDUCE[2]), s);
    const unsigned scale = (unsigned)(__float_as_int(shifted) - 0x4b400000) << 23;
    return __uint_as_float(__float_as_uint(horner(EXP, s)) + scale);
}

// The fast path's (K, W) pairs: K an integer, W an f32's bits.
__device__ __forceinline__ uint2 fast_pair(const uint2 *table, unsigned layer) {
#ifdef PRISM_ZIGGURAT_LDG
    return __ldg(table + layer);
#else
    return table[layer];
#endif
}

// A word's ziggurat draw: the layer, the fraction j, the layer's (K, W) and j W (the value if accepted).
struct Draw {
    unsigned layer, fraction;
    uint2 pair;
    float x;
    // j < K: the point lies in the layer's inner rectangle, under the curve.
    __device__ __forceinline__ bool fast() const { return fraction < pair.x; }
};

__device__ __forceinline__ Draw draw(const uint2 *table, unsigned w) {
    Draw d;
    d.layer = w & (LAYERS - 1);
    d.fraction = w >> (LAYER_BITS + 1);
    d.pair = fast_pair(table, d.layer);
    d.x = __fmul_rn(__uint2float_rn(d.fraction), __uint_as_float(d.pair.y));
    return d;
}

// The sign of a word's normal (its bit LAYER_BITS) as an f32 sign bit.
__device__ __forceinline__ unsigned sign_bit(unsigned w) { return (w << (31 - LAYER_BITS)) & 0x80000000u; }

// |z| for element e of the block at `counter` whose word's draw `d` missed the fast path. Retry t
// (t = 1, 2, ...) is the block at counter (counter.x, counter.y, counter.z, 4t + e): a wedge test takes its
// word 0 as the height and, rejected, word 1 as the next draw's word; a tail round takes words 0 and 1 as
// u1, u2 (x = -ln u1 / r, accepted when -2 ln u2 > x^2, Marsaglia's tail method). The loop ends with
// probability 1: 0.0150 retry blocks per normal on average (scripts/fit-normal-f32), a wedge test accepts
// 54%, a tail round 94%. (4t + e wraps after 2^30 retries of one element, which never happens.)
__device__ __noinline__ float slow_magnitude(const uint2 *table, uint4 counter, u64 seed, unsigned e, Draw d) {
    for (unsigned t = 1;; ++t) {
        counter.w = 4u * t + e;
        const uint4 b = philox4x32_10(counter, seed);
        if (d.layer == 0) {  // beyond r: Marsaglia's tail; a rejected round draws again from the tail
            const float x = __fmul_rn(minus_two_ln_unit(b.x), __uint_as_float(ZIGGURAT_TAIL[1]));
            if (minus_two_ln_unit(b.y) > __fmul_rn(x, x)) return __fadd_rn(__uint_as_float(ZIGGURAT_TAIL[0]), x);
            continue;
        }
        // A wedge: accepted when a height uniform in [f(x_i), f(x_{i+1})] lies under exp(-x^2 / 2).
        const float lo = __uint_as_float(__ldg(ZIGGURAT_F + d.layer)),
                    hi = __uint_as_float(__ldg(ZIGGURAT_F + d.layer + 1));
        const float y = __fmaf_rn(__fmul_rn(__uint2float_rn(b.x >> 8), 0x1p-24f), __fsub_rn(hi, lo), lo);
        if (y < exp_minus_half_square(d.x)) return d.x;
        d = draw(table, b.y);  // rejected: a fresh draw, the same sign
        if (d.fast()) return d.x;
    }
}

// The fast path's table for this thread block: a copy in shared memory (one coalesced load per entry per
// thread block), or the global table itself under PRISM_ZIGGURAT_LDG. Every thread of the block calls it.
__device__ __forceinline__ const uint2 *fast_table() {
    const uint2 *global = reinterpret_cast<const uint2 *>(ZIGGURAT_FAST);
#ifdef PRISM_ZIGGURAT_LDG
    return global;
#else
    __shared__ uint2 table[LAYERS];
    for (unsigned k = threadIdx.x; k < LAYERS; k += blockDim.x) table[k] = __ldg(global + k);
    __syncthreads();
    return table;
#endif
}

// The magnitudes of the fast path for the four words of a block (the missed ones hold j W, to be replaced),
// and which missed it (bit e for word e).
__device__ __forceinline__ unsigned fast_magnitudes(const uint2 *table, const unsigned (&words)[4],
                                                    float (&z)[4]) {
    unsigned missed = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        const Draw d = draw(table, words[e]);
        z[e] = d.x;
        missed |= d.fast() ? 0u : 1u << e;
    }
    return missed;
}

// The standard normal of a word whose magnitude is m.
__device__ __forceinline__ float with_sign(float m, unsigned w) {
    return __uint_as_float(__float_as_uint(m) | sign_bit(w));
}

// Replaces the missed magnitudes of a block at `counter` by the slow path's, in this thread.
__device__ __forceinline__ void slow_magnitudes(const uint2 *table, uint4 counter, u64 seed,
                                                const unsigned (&words)[4], unsigned missed, float (&z)[4]) {
    while (missed) {
        const unsigned e = __ffs(missed) - 1;
        missed &= missed - 1;
        const unsigned word = e == 0 ? words[0] : e == 1 ? words[1] : e == 2 ? words[2] : words[3];
        const float m = slow_magnitude(table, counter, seed, e, draw(table, word));
        z[0] = e == 0 ? m : z[0];
        z[1] = e == 1 ? m : z[1];
        z[2] = e == 2 ? m : z[2];
        z[3] = e == 3 ? m : z[3];
    }
}

// The slow path, deferred: a warp's missed draws (1.5%: 1.9 per warp and block of 128 draws, but in 85% of
// the warps' blocks) wait in a queue in shared memory, and the warp takes them 32 at a time, one per lane, so
// one pass of the slow path (a Philox block and the wedge test, about 100 instructions) serves 32 draws
// instead of the one or two of each block. The values are those of the immediate slow path; only where and
// when they are computed differ. PRISM_ZIGGURAT_INLINE_SLOW turns the queue off (a benchmark switch).
// The first QUEUE_WARPS warps of a thread block queue (any further take the slow path at once), QUEUE entries
// each (misses that would overflow the queue take the slow path at once).
constexpr int QUEUE_WARPS = 8;
constexpr int QUEUE = 64;
struct Queue {
    u64 index[QUEUE];  // the element (4 b + e)
    unsigned word[QUEUE];
};
}  // namespace exact

template <bool LOG>
__device__ __forceinline__ float shape_f32(float z, float mean, float stddev) {
    const float x = __fmaf_rn(stddev, z, mean);
    return LOG ? __double2float_rn(exp((double)x)) : x;
}

// Takes the queue's entries from .. from + count, one a lane (lanes below `count`), and writes the values of
// those inside the fill.
template <bool LOG>
__device__ __forceinline__ void drain(const exact::Queue &q, unsigned from, unsigned count, unsigned lane,
                                      const uint2 *table, float *out, u64 n, u64 seed, u64 offset, float mean,
                                      float stddev) {
    if (lane < count) {
        const u64 i = q.index[from + lane];
        const unsigned w = q.word[from + lane];
        if (i < n) {
            const float m = exact::slow_magnitude(table, block_counter(offset, i >> 2), seed, (unsigned)i & 3u,
                                                  exact::draw(table, w));
            out[i] = shape_f32<LOG>(exact::with_sign(m, w), mean, stddev);
        }
    }
}

template <bool LOG>
__device__ __forceinline__ double shape(double z, double mean, double stddev) {
    const double x = fma(stddev, z, mean);
    return LOG ? exp(x) : x;
}

// Stores the `PER` values of block `b` (16 bytes) at element b * PER, as far as `n` reaches.
template <int PER, typename T>
__device__ __forceinline__ void store(T *out, u64 n, u64 b, const T (&v)[PER]) {
    static_assert(PER * sizeof(T) == 16, "one block is 16 bytes");
    const u64 first = b * PER;
    T *dst = out + first;
    if (first + PER <= n && prism_aligned16(dst)) {
        *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(v);
    } else {
#pragma unroll
        for (int i = 0; i < PER; ++i)
            if (first + i < n) dst[i] = v[i];
    }
}

// Every block that `n` elements of `PER` per block need, `make(b, values)` filling block b's.
template <int PER, typename T, typename Make>
__device__ __forceinline__ void fill_blocks(T *out, u64 n, Make make) {
    const u64 blocks = (n + PER - 1) / PER;
    for (u64 b = prism_global_thread(); b < blocks; b += prism_grid_threads()) {
        T v[PER];
        make(b, v);
        store<PER>(out, n, b, v);
    }
}

// Every block that `n` elements of `PER` per block need, `make(words, values)` filling each.
template <int PER, typename T, typename Make>
__device__ __forceinline__ void fill(T *out, u64 n, u64 seed, u64 offset, Make make) {
    fill_blocks<PER>(out, n, [=] __device__(u64 b, T(&v)[PER]) {
        make(philox4x32_10(block_counter(offset, b), seed), v);
    });
}

template <bool LOG>
__device__ __forceinline__ void normal_f32(float *out, u64 n, u64 seed, u64 offset, float mean,
                                           float stddev) {
    const uint2 *table = exact::fast_table();
#ifdef PRISM_ZIGGURAT_INLINE_SLOW
    fill_blocks<4>(out, n, [=] __device__(u64 b, float (&v)[4]) {
        const uint4 counter = block_counter(offset, b), w = philox4x32_10(counter, seed);
        const unsigned words[4] = {w.x, w.y, w.z, w.w};
        float z[4];
        exact::slow_magnitudes(table, counter, seed, words, exact::fast_magnitudes(table, words, z), z);
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = shape_f32<LOG>(exact::with_sign(z[e], words[e]), mean, stddev);
    });
#else
    // The warp steps through the blocks together (lanes past the end idle), so that its votes and its queue
    // see every lane. Warps of fewer than 32 threads (a thread block not a multiple of 32) and warps past
    // QUEUE_WARPS take the slow path at once.
    __shared__ exact::Queue queues[exact::QUEUE_WARPS];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    exact::Queue *q = warp < exact::QUEUE_WARPS && (warp + 1) * 32 <= blockDim.x ? &queues[warp] : nullptr;
    unsigned queued = 0;  // the same in every lane
    const u64 blocks = (n + 3) / 4;
    for (u64 base = prism_global_thread() - lane; base < blocks; base += prism_grid_threads()) {
        const u64 b = base + lane;
        const uint4 counter = block_counter(offset, b), w = philox4x32_10(counter, seed);
        const unsigned words[4] = {w.x, w.y, w.z, w.w};
        float z[4];
        unsigned missed = exact::fast_magnitudes(table, words, z);
        if (q == nullptr) {
            exact::slow_magnitudes(table, counter, seed, words, b < blocks ? missed : 0u, z);
        } else if (const unsigned missing = __ballot_sync(0xffffffffu, missed != 0)) {
            // Each lane with a miss queues its first (past the fill's end too: drain skips those), unless
            // the queue would overflow; a lane's further misses (0.13% of lanes) take the slow path at once.
            if (queued + __popc(missing) <= exact::QUEUE) {
                if (missed) {
                    const unsigned e = __ffs(missed) - 1, at = queued + __popc(missing & ((1u << lane) - 1u));
                    q->index[at] = 4 * b + e;
                    const unsigned low = e & 1 ? words[1] : words[0], high = e & 1 ? words[3] : words[2];
                    q->word[at] = e & 2 ? high : low;
                    missed &= missed - 1;
                }
                queued += __popc(missing);
            }
            exact::slow_magnitudes(table, counter, seed, words, b < blocks ? missed : 0u, z);
        }
        if (b < blocks) {
            float v[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) v[e] = shape_f32<LOG>(exact::with_sign(z[e], words[e]), mean, stddev);
            store<4>(out, n, b, v);  // queued elements get their values below, after this store
        }
        if (queued >= 32) {
            __syncwarp();  // the queue's entries and this block's stores are visible to the warp
#pragma unroll 1
            do {
                queued -= 32;
                drain<LOG>(*q, queued, 32, lane, table, out, n, seed, offset, mean, stddev);
            } while (queued >= 32);
            __syncwarp();  // read before the next block's entries overwrite them
        }
    }
    if (queued) {
        __syncwarp();
        drain<LOG>(*q, 0, queued, lane, table, out, n, seed, offset, mean, stddev);
    }
#endif
}

template <bool LOG>
__device__ __forceinline__ void normal_f64(double *out, u64 n, u64 seed, u64 offset, double mean,
                                           double stddev) {
    fill<2>(out, n, seed, offset, [=] __device__(uint4 w, double (&v)[2]) {
        const u64 v0 = join(w.x, w.y), v1 = join(w.z, w.w);
        const double2 z = box_muller(uniform_f64(v0), (double)(v1 >> 11) * 0x1p-53);
        v[0] = shape<LOG>(z.x, mean, stddev);
        v[1] = shape<LOG>(z.y, mean, stddev);
    });
}

}  // namespace

// out[i] = raw 32-bit words (a u64 fill passes its buffer as 2n words).
PRISM_KERNEL void prism_random_bits(unsigned *out, u64 n, u64 seed, u64 offset) {
    fill<4>(out, n, seed, offset, [] __device__(uint4 w, unsigned (&v)[4]) {
        v[0] = w.x, v[1] = w.y, v[2] = w.z, v[3] = w.w;
    });
}
// out[i] uniform in (0, 1].
PRISM_KERNEL void prism_random_uniform_f32(float *out, u64 n, u64 seed, u64 offset) {
    fill<4>(out, n, seed, offset, [] __device__(uint4 w, float (&v)[4]) {
        v[0] = uniform_f32(w.x), v[1] = uniform_f32(w.y), v[2] = uniform_f32(w.z), v[3] = uniform_f32(w.w);
    });
}
// out[i] uniform in (0, 1], 53 random bits.
PRISM_KERNEL void prism_random_uniform_f64(double *out, u64 n, u64 seed, u64 offset) {
    fill<2>(out, n, seed, offset, [] __device__(uint4 w, double (&v)[2]) {
        v[0] = uniform_f64(join(w.x, w.y)), v[1] = uniform_f64(join(w.z, w.w));
    });
}
// PRISM_ZIGGURAT_MAXNREG caps the f32 normal kernels' registers (a benchmark switch: 74 uncapped on sm_90 with
// nvcc 13.0, three thread blocks of 256 a multiprocessor; 64 without spills, four).
#ifdef PRISM_ZIGGURAT_MAXNREG
#define PRISM_NORMAL_F32_REGISTERS __maxnreg__(PRISM_ZIGGURAT_MAXNREG)
#else
#define PRISM_NORMAL_F32_REGISTERS
#endif
// out[i] ~ N(mean, stddev^2).
PRISM_KERNEL PRISM_NORMAL_F32_REGISTERS void prism_random_normal_f32(float *out, u64 n, u64 seed, u64 offset, float mean, float stddev) {
    normal_f32<false>(out, n, seed, offset, mean, stddev);
}
PRISM_KERNEL void prism_random_normal_f64(double *out, u64 n, u64 seed, u64 offset, double mean,
                                          double stddev) {
    normal_f64<false>(out, n, seed, offset, mean, stddev);
}
// out[i] = exp(N(mean, stddev^2)).
PRISM_KERNEL PRISM_NORMAL_F32_REGISTERS void prism_random_log_normal_f32(float *out, u64 n, u64 seed, u64 offset, float mean,
                                              float stddev) {
    normal_f32<true>(out, n, seed, offset, mean, stddev);
}
PRISM_KERNEL void prism_random_log_normal_f64(double *out, u64 n, u64 seed, u64 offset, double mean,
                                              double stddev) {
    normal_f64<true>(out, n, seed, offset, mean, stddev);
}
