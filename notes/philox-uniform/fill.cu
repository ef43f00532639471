// Experiment (issue 33): what holds the Philox f32 uniform fill under a memset's speed. Times, at 2^28 f32 and
// grids of 8 to 64 blocks of 256 per multiprocessor (and a thread per Philox block): cudaMemsetAsync; a store-only
// loop with the fill's grid-stride shape (16 bytes per thread per iteration, no Philox: the stores' own ceiling);
// the fill before 32-bit indices; the product's prism_random_uniform_f32; and the fill with U Philox blocks per thread per iteration (U = 2, 4:
// blocks b + i T for a grid of T threads, so each store instruction stays one coalesced run), checked bit for bit
// against the product's output. CUDA events, median of 20 after 5 warm-ups. Run: bash notes/philox-uniform/run.sh
#include "../../cuda/random.cu"
#include "../median_ms.cuh"
#include <cstdio>
#include <cstring>
#include <vector>

// The store-only ceiling: the fill's loop writing a function of the index instead of Philox's words.
PRISM_KERNEL void store_only(float *out, u64 n) {
    const u64 blocks = n / 4;
    for (u64 b = prism_global_thread(); b < blocks; b += prism_grid_threads()) {
        const float x = (float)(unsigned)b;
        *reinterpret_cast<float4 *>(out + b * 4) = make_float4(x, x, x, x);
    }
}

// The fill before 32-bit indices (as c14272f..6fa0a3e had it): 64-bit loop, both store checks per block.
PRISM_KERNEL void uniform_old(float *out, u64 n, u64 seed, u64 offset) {
    const u64 blocks = (n + 3) / 4;
    for (u64 b = prism_global_thread(); b < blocks; b += prism_grid_threads()) {
        const uint4 w = philox4x32_10(seed, offset, b);
        const float v[4] = {uniform_f32(w.x), uniform_f32(w.y), uniform_f32(w.z), uniform_f32(w.w)};
        float *dst = out + b * 4;
        if (b * 4 + 4 <= n && prism_aligned16(dst)) {
            *reinterpret_cast<float4 *>(dst) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
            for (int i = 0; i < 4; ++i)
                if (b * 4 + i < n) dst[i] = v[i];
        }
    }
}

// U Philox blocks per iteration (n a multiple of 4 U T here; the harness's sizes are).
template <int U> __global__ void uniform_u(float *out, u64 n, u64 seed, u64 offset) {
    const u64 blocks = n / 4, t = prism_grid_threads();
    for (u64 b = prism_global_thread(); b < blocks; b += U * t) {
        uint4 w[U];
#pragma unroll
        for (int i = 0; i < U; ++i) w[i] = philox4x32_10(seed, offset, b + i * t);
#pragma unroll
        for (int i = 0; i < U; ++i)
            if (b + i * t < blocks)
                *reinterpret_cast<float4 *>(out + (b + i * t) * 4) = make_float4(
                    uniform_f32(w[i].x), uniform_f32(w[i].y), uniform_f32(w[i].z), uniform_f32(w[i].w));
    }
}

// 32-bit block indices (blocks < 2^32): the counter's low word from a 32-bit sum with its carry.
PRISM_KERNEL void uniform_i32(float *out, u64 n, u64 seed, u64 offset) {
    const unsigned blocks = (unsigned)(n / 4), t = gridDim.x * blockDim.x;
    for (unsigned b = blockIdx.x * blockDim.x + threadIdx.x; b < blocks; b += t) {
        const uint4 w = philox4x32_10(seed, offset, b);
        *reinterpret_cast<float4 *>(out + (u64)b * 4) =
            make_float4(uniform_f32(w.x), uniform_f32(w.y), uniform_f32(w.z), uniform_f32(w.w));
    }
}

int main() {
    const u64 n = 1ull << 28;
    const u64 seed = 0x1234abcd5678ef01ull, offset = 12345;
    int sms;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    printf("%s, %d SMs, 2^28 f32 (%.2f GB written)\n", prop.name, sms, n * 4 / 1e9);
    float *out, *ref;
    cudaMalloc(&out, n * 4), cudaMalloc(&ref, n * 4);
    const double gb = n * 4 / 1e9;
    auto rate = [&](float ms) { return gb / (ms * 1e-3); };
    const float memset_ms = median_ms([&] { cudaMemsetAsync(out, 0x3f, n * 4); });
    printf("memset %.0f GB/s\n", rate(memset_ms));
    const int per_sm[] = {8, 16, 32, 64, 0};  // 0: a thread per Philox block
    std::vector<unsigned> want(n), got(n);
    prism_random_uniform_f32<<<(unsigned)(n / 4 / 256), 256>>>(ref, n, seed, offset);
    cudaMemcpy(want.data(), ref, n * 4, cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int p : per_sm) {
        const unsigned grid = p ? p * sms : (unsigned)(n / 4 / 256);
        auto check = [&](const char *name) {
            cudaMemcpy(got.data(), out, n * 4, cudaMemcpyDeviceToHost);
            const bool same = memcmp(got.data(), want.data(), n * 4) == 0;
            wrong += !same;
            if (!same) printf("  %s differs from the product's fill\n", name);
        };
        const float t_store = median_ms([&] { store_only<<<grid, 256>>>(out, n); });
        const float t_old = median_ms([&] { uniform_old<<<grid, 256>>>(out, n, seed, offset); });
        check("old");
        const float t_prod = median_ms([&] { prism_random_uniform_f32<<<grid, 256>>>(out, n, seed, offset); });
        check("product");
        const float t_u2 = median_ms([&] { uniform_u<2><<<grid, 256>>>(out, n, seed, offset); });
        check("U=2");
        const float t_u4 = median_ms([&] { uniform_u<4><<<grid, 256>>>(out, n, seed, offset); });
        check("U=4");
        const float t_i32 = median_ms([&] { uniform_i32<<<grid, 256>>>(out, n, seed, offset); });
        check("i32");
        printf("grid %7u (%s): store-only %.0f (%.2fx memset) | old %.0f (%.2fx) | product %.0f (%.2fx) | U=2 %.0f (%.2fx) | U=4 %.0f "
               "(%.2fx) | 32-bit index %.0f (%.2fx)\n",
               grid, p ? (p == 8 ? "8/SM" : p == 16 ? "16/SM" : p == 32 ? "32/SM" : "64/SM") : "all", rate(t_store),
               memset_ms / t_store, rate(t_old), memset_ms / t_old, rate(t_prod), memset_ms / t_prod, rate(t_u2), memset_ms / t_u2, rate(t_u4),
               memset_ms / t_u4, rate(t_i32), memset_ms / t_i32);
    }
    printf("%s\n", wrong ? "WRONG: a variant's values differ" : "every variant's values equal the product's");
    return wrong != 0;
}
