// Counter-based random numbers: Philox4x32-10 (Salmon, Moraes, Dror, Shaw, SC'11).
// Block b of a fill is philox(counter = offset + b as a 128-bit number, key = seed): four 32-bit
// words. One thread makes one block and writes the elements it yields with one 16-byte store
// (scalar stores for a misaligned pointer or the last, partial block), so element i of a fill
// depends only on (seed, offset, i):
//   u32 bits      4 per block: word i % 4 of block i / 4 (a u64 fill is the u32 fill of 2n words)
//   f32 uniform   4 per block: ((w >> 8) + 1) * 2^-24, in (0, 1], exact
//   f64 uniform   2 per block: ((v >> 11) + 1) * 2^-53 with v = w[2j] | w[2j+1] << 32, in (0, 1]
//   f32 normal    4 per block: Box-Muller on the pairs (w0, w1), (w2, w3) in f32 arithmetic that the CPU
//                 repeats bit for bit (IEEE-rounded + - * / sqrt only, our own ln and sin/cos polynomials);
//                 the log-normal exponentiates that value in double
//   f64 normal    2 per block: Box-Muller on the pair (v0, v1) of 64-bit values
//   log-normal    exp of the normal (same layout)
// src/runtime/cpu/random.rs computes the same numbers; cuRAND's Philox gives other values.
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

// f32 Box-Muller, reproducible on the CPU: every operation is an IEEE-rounded one (the __f*_rn intrinsics are
// never contracted into FMAs), in the order src/runtime/cpu/random.rs uses.
namespace exact {
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }

// ln(u) for a normal u > 0: u = 2^k m with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s), s = (m - 1) / (m + 1)
// = f / (2 + f), |s| < 0.172, as 2s + 2s z (1/3 + z (1/5 + z (1/7 + z / 9))), z = s^2 (truncation < 2^-28).
__device__ __forceinline__ float ln(float u) {
    int bits = __float_as_int(u);
    int k = (bits >> 23) - 127;
    bits = (bits & 0x7fffff) | 0x3f800000;  // m in [1, 2)
    if (bits > 0x3fb504f3) {                // m > sqrt(2): halve it
        bits -= 0x800000;
        k += 1;
    }
    const float f = add(__int_as_float(bits), -1.f);  // exact (Sterbenz)
    const float s = __fdiv_rn(f, add(2.f, f));
    const float z = mul(s, s);
    float p = add(0.14285715f, mul(z, 0.11111111f));
    p = add(0.2f, mul(z, p));
    p = add(0.33333334f, mul(z, p));
    const float two_s = add(s, s);
    const float ln_m = add(two_s, mul(mul(two_s, z), p));
    // k ln 2 in two parts: ln2_hi has 16 significant bits, so k * ln2_hi is exact for |k| < 256.
    const float kf = (float)k;
    return add(mul(kf, 0.693145752f), add(mul(kf, 1.4286068e-6f), ln_m));
}

// (sin 2 pi t, cos 2 pi t) for t in [0, 1) with 24 significant bits: t = q/4 + r exactly, |r| <= 1/8, then
// Taylor polynomials in a = 2 pi r (|a| <= pi / 4; truncation < 2^-27).
__device__ __forceinline__ void sin_cos_turns(float t, float &sine, float &cosine) {
    const float q = floorf(add(mul(t, 4.f), 0.5f));  // the nearest quarter (a rounding of 4t + 0.5 >= 4 keeps the floor)
    const float r = add(t, mul(q, -0.25f));           // exact: multiples of 2^-24 below 1/8
    const float a = mul(r, 6.28318548f);
    const float a2 = mul(a, a);
    float ps = add(-1.98412701e-4f, mul(a2, 2.75573188e-6f));
    ps = add(8.33333377e-3f, mul(a2, ps));
    ps = add(-0.166666672f, mul(a2, ps));
    const float s = add(a, mul(mul(a, a2), ps));
    float pc = add(2.48015876e-5f, mul(a2, -2.75573200e-7f));
    pc = add(-1.38888892e-3f, mul(a2, pc));
    pc = add(4.16666679e-2f, mul(a2, pc));
    pc = add(-0.5f, mul(a2, pc));
    const float c = add(1.f, mul(a2, pc));
    switch ((int)q & 3) {
        case 0: sine = s, cosine = c; break;
        case 1: sine = c, cosine = -s; break;
        case 2: sine = -s, cosine = -c; break;
        default: sine = -c, cosine = s; break;
    }
}

// Box-Muller on two 32-bit words: radius from u = ((w0 >> 8) + 1) 2^-24 in (0, 1], angle from t = (w1 >> 8) 2^-24.
__device__ __forceinline__ float2 box_muller(unsigned w0, unsigned w1) {
    const float u = mul((float)((w0 >> 8) + 1u), 0x1p-24f);
    const float radius = __fsqrt_rn(mul(-2.f, ln(u)));
    float s, c;
    sin_cos_turns(mul((float)(w1 >> 8), 0x1p-24f), s, c);
    return make_float2(mul(radius, c), mul(radius, s));
}
}  // namespace exact

template <bool LOG>
__device__ __forceinline__ float shape_f32(float z, float mean, float stddev) {
    const float x = exact::add(mean, exact::mul(stddev, z));
    return LOG ? __double2float_rn(exp((double)x)) : x;
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

// Every block that `n` elements of `PER` per block need, `make(words, values)` filling each.
template <int PER, typename T, typename Make>
__device__ __forceinline__ void fill(T *out, u64 n, u64 seed, u64 offset, Make make) {
    const u64 blocks = (n + PER - 1) / PER;
    for (u64 b = prism_global_thread(); b < blocks; b += prism_grid_threads()) {
        T v[PER];
        make(philox4x32_10(seed, offset, b), v);
        store<PER>(out, n, b, v);
    }
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
