// Counter-based random numbers: Philox4x32-10 (Salmon, Moraes, Dror, Shaw, SC'11).
// Block b of a fill is philox(counter = offset + b as a 128-bit number, key = seed): four 32-bit
// words. One thread makes one block and writes the elements it yields with one 16-byte store
// (scalar stores for a misaligned pointer or the last, partial block), so element i of a fill
// depends only on (seed, offset, i):
//   u32 bits      4 per block: word i % 4 of block i / 4 (a u64 fill is the u32 fill of 2n words)
//   f32 uniform   4 per block: ((w >> 8) + 1) * 2^-24, in (0, 1], exact
//   f64 uniform   2 per block: ((v >> 11) + 1) * 2^-53 with v = w[2j] | w[2j+1] << 32, in (0, 1]
//   f32 normal    4 per block: Box-Muller on the pairs (w0, w1), (w2, w3) in f32 arithmetic that the CPU
//                 repeats bit for bit (fma and IEEE-rounded * and sqrt only, our own ln and sin/cos
//                 polynomials), then fma(stddev, z, mean); the log-normal exponentiates that value in double
//   f64 normal    2 per block: Box-Muller on the pair (v0, v1) of 64-bit values
//   log-normal    exp of the normal (same layout)
// src/cpu/random.rs computes the same numbers; cuRAND's Philox gives other values.
// Launch: 1-D, any grid (grid-stride over blocks), recommended one thread per block.
#include "common.cuh"

namespace {

typedef unsigned long long u64;

__device__ __forceinline__ uint4 philox4x32_10(u64 seed, u64 offset, u64 block) {
    const u64 low = offset + block;
    unsigned c0 = (unsigned)low, c1 = (unsigned)(low >> 32), c2 = low < offset ? 1u : 0u, c3 = 0;
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

// f32 Box-Muller that the CPU repeats bit for bit: integer operations, conversions of integers below 2^24
// (exact), fma, IEEE-rounded multiplications and sqrt, in the order src/cpu/random.rs uses. The polynomials
// (cuda/random_polynomials.inc) are evaluated by Horner's rule with one fma per coefficient.
namespace exact {
#define PRISM_F32_BITS(name, ...) __constant__ const unsigned name[] = {__VA_ARGS__};
#include "random_polynomials.inc"
#undef PRISM_F32_BITS

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

// x, negated when `negate` is nonzero.
__device__ __forceinline__ float flip_sign(float x, int negate) {
    return negate ? __int_as_float(__float_as_int(x) ^ 0x80000000) : x;
}

// (sin 2 pi t, cos 2 pi t) for t = j 2^-24, j = w >> 8: t = q/4 + r with q the nearest quarter and
// r = (j - q 2^22) 2^-24 in [-1/8, 1/8) (exact), sin 2 pi r = r S(r^2), cos 2 pi r = C(r^2).
__device__ __forceinline__ void sin_cos_turns(unsigned w, float &sine, float &cosine) {
    const int j = (int)(w >> 8);
    const int q = (j + (1 << 21)) >> 22;
    const float r = __fmul_rn((float)(j - (q << 22)), 0x1p-24f);
    const float r2 = __fmul_rn(r, r);
    const float s = __fmul_rn(r, horner(SIN_TURNS, r2));
    const float c = horner(COS_TURNS, r2);
    // Quarter q: (sin, cos) = (s, c), (c, -s), (-s, -c), (-c, s), by selects and sign flips (no branch).
    const bool odd = q & 1;
    sine = flip_sign(odd ? c : s, q & 2);
    cosine = flip_sign(odd ? s : c, (q + 1) & 2);
}

// Box-Muller on two 32-bit words: the radius from the first, the angle from the second.
__device__ __forceinline__ float2 box_muller(unsigned w0, unsigned w1) {
    const float radius = __fsqrt_rn(minus_two_ln_unit(w0));
    float s, c;
    sin_cos_turns(w1, s, c);
    return make_float2(__fmul_rn(radius, c), __fmul_rn(radius, s));
}
}  // namespace exact

template <bool LOG>
__device__ __forceinline__ float shape_f32(float z, float mean, float stddev) {
    const float x = __fmaf_rn(stddev, z, mean);
    return LOG ? __double2float_rn(exp((double)x)) : x;
}

template <bool LOG>
__device__ __forceinline__ double shape(double z, double mean, double stddev) {
    const double x = fma(stddev, z, mean);
    return LOG ? exp(x) : x;
}

// Every block that `n` elements of `PER` per block need, `make(words, values)` filling each, with block
// indices of type I. A block wholly inside `n` of an aligned `out` is one 16-byte store; the last, partial
// block and a misaligned `out` store element by element.
template <typename I, int PER, typename T, typename Make>
__device__ __forceinline__ void fill_blocks(T *out, u64 n, u64 seed, u64 offset, Make make) {
    static_assert(PER * sizeof(T) == 16, "one block is 16 bytes");
    const I blocks = (I)((n + PER - 1) / PER), whole = prism_aligned16(out) ? (I)(n / PER) : 0;
    const I step = (I)prism_grid_threads();
    for (I b = (I)prism_global_thread(); b < blocks; b += step) {
        T v[PER];
        make(philox4x32_10(seed, offset, b), v);
        T *dst = out + (u64)b * PER;
        if (b < whole) {
            *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(v);
        } else {
#pragma unroll
            for (int i = 0; i < PER; ++i)
                if ((u64)b * PER + i < n) dst[i] = v[i];
        }
    }
}

// fill_blocks with 32-bit block indices when every index the loop reaches fits them (any fill below 2^32
// blocks, 64 GiB of f32): the 64-bit loop cost the uniform fill 10% of its speed on an H200
// (notes/philox-uniform).
template <int PER, typename T, typename Make>
__device__ __forceinline__ void fill(T *out, u64 n, u64 seed, u64 offset, Make make) {
    const u64 blocks = (n + PER - 1) / PER;
    if (blocks + prism_grid_threads() <= 0xffffffffull)
        fill_blocks<unsigned, PER>(out, n, seed, offset, make);
    else
        fill_blocks<u64, PER>(out, n, seed, offset, make);
}

template <bool LOG>
__device__ __forceinline__ void normal_f32(float *out, u64 n, u64 seed, u64 offset, float mean,
                                           float stddev) {
    fill<4>(out, n, seed, offset, [=] __device__(uint4 w, float (&v)[4]) {
        const float2 a = exact::box_muller(w.x, w.y), b = exact::box_muller(w.z, w.w);
        v[0] = shape_f32<LOG>(a.x, mean, stddev);
        v[1] = shape_f32<LOG>(a.y, mean, stddev);
        v[2] = shape_f32<LOG>(b.x, mean, stddev);
        v[3] = shape_f32<LOG>(b.y, mean, stddev);
    });
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
// out[i] ~ N(mean, stddev^2).
PRISM_KERNEL void prism_random_normal_f32(float *out, u64 n, u64 seed, u64 offset, float mean, float stddev) {
    normal_f32<false>(out, n, seed, offset, mean, stddev);
}
PRISM_KERNEL void prism_random_normal_f64(double *out, u64 n, u64 seed, u64 offset, double mean,
                                          double stddev) {
    normal_f64<false>(out, n, seed, offset, mean, stddev);
}
// out[i] = exp(N(mean, stddev^2)).
PRISM_KERNEL void prism_random_log_normal_f32(float *out, u64 n, u64 seed, u64 offset, float mean,
                                              float stddev) {
    normal_f32<true>(out, n, seed, offset, mean, stddev);
}
PRISM_KERNEL void prism_random_log_normal_f64(double *out, u64 n, u64 seed, u64 offset, double mean,
                                              double stddev) {
    normal_f64<true>(out, n, seed, offset, mean, stddev);
}
