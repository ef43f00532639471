// Counter-based random numbers: Philox4x32-10 (Salmon, Moraes, Dror, Shaw, SC'11).
// Block b of a fill is philox(counter = offset + b as a 128-bit number, key = seed): four 32-bit
// words. One thread makes one block and writes the elements it yields with one 16-byte store
// (scalar stores for a misaligned pointer or the last, partial block), so element i of a fill
// depends only on (seed, offset, i):
//   u32 bits      4 per block: word i % 4 of block i / 4 (a u64 fill is the u32 fill of 2n words)
//   f32 uniform   4 per block: ((w >> 8) + 1) * 2^-24, in (0, 1], exact
//   f64 uniform   2 per block: ((v >> 11) + 1) * 2^-53 with v = w[2j] | w[2j+1] << 32, in (0, 1]
//   f32 normal    4 per block: Box-Muller on the pairs (w0, w1), (w2, w3) in double, rounded once
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
        // 32-bit uniforms in double: (w + 1) 2^-32 in (0, 1] for the radius, w 2^-32 for the angle.
        const double2 a = box_muller(((double)w.x + 1.0) * 0x1p-32, (double)w.y * 0x1p-32);
        const double2 b = box_muller(((double)w.z + 1.0) * 0x1p-32, (double)w.w * 0x1p-32);
        v[0] = __double2float_rn(shape<LOG>(a.x, mean, stddev));
        v[1] = __double2float_rn(shape<LOG>(a.y, mean, stddev));
        v[2] = __double2float_rn(shape<LOG>(b.x, mean, stddev));
        v[3] = __double2float_rn(shape<LOG>(b.y, mean, stddev));
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
