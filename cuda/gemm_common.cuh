// Helpers shared by the GEMM families (gemm_simt.cu, gemm_mma.cu, gemm_sm90.cu): element conversions and
// the cp.async copies (sm_80+).
#pragma once
#include "common.cuh"
#include <stdint.h>
#include <type_traits>

namespace {

template <typename T> __device__ __forceinline__ float to_f32(T v);
template <> __device__ __forceinline__ float to_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_f32<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <> __device__ __forceinline__ float to_f32<__half>(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }

// Whether p and every row `pitch` elements of T after it start on a multiple of BYTES (a vector access's alignment).
template <int BYTES, typename T> __device__ __forceinline__ bool rows_aligned(const T *p, long long pitch) {
    return (((unsigned long long)p | (unsigned long long)(pitch * (long long)sizeof(T))) & (BYTES - 1ull)) == 0;
}

// Shared-memory address of a generic pointer into shared memory.
__device__ __forceinline__ uint32_t s_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

// Asynchronous global -> shared copies of 16 or 4 bytes of which the first `src_bytes` are read and the
// rest zero-filled (src_bytes == 0 reads nothing; src must still be a valid global address).
// compute-sanitizer counts a 16-byte copy as a 16-byte read whatever src_bytes says, so callers keep its
// source inside the matrix.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async4(uint32_t dst, const void *src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most N of this thread's committed copy groups are still in flight.
template <int N> __device__ __forceinline__ void cp_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// D += A B on the tensor cores, m16n8k16 with f32 accumulators: KIND 0 for bf16 inputs, 1 for f16 (the
// fragments as the PTX ISA lays them out; used by gemm_mma.cu and the skinny tensor-core kernels).
template <int KIND>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    if constexpr (KIND == 0)
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// The fused epilogue (cuBLASLt's BIAS / RELU / GELU): D = act(alpha * acc + bias[col]) with bias (C's element
// type, one value per column of the row-major C, batch entry z at z * bias_stride) optional; act codes match
// `FusedActivation` in src/kernels/gemm/epilogue.rs. The host sends an epilogue with beta == 0 only (beta != 0
// runs the plain GEMM, then `gemm_epilogue_<type>`), so it is applied to the accumulators in registers before
// the unchanged store, which then scales by 1. Fused in: gemm_small_*, gemm_splitk_reduce_*, gemm_epilogue_*
// and the `_fused` twins of the gemm_sm90_* kernels. The big CUDA-core and mma.sync kernels store plainly and
// the host follows them with `gemm_epilogue_<type>`: compiled into their stores, the epilogue kept every
// accumulator and its bias value live at once and cost the plain GEMM registers (ptxas sm_90: gemm_mma
// 120-128 -> 148-162, one block per multiprocessor instead of two; gemm_simt 1.1 KB of spills) and 3-25% of
// its speed.
constexpr int EPI_NONE = 0, EPI_RELU = 1, EPI_GELU = 2;
template <typename TO> struct Epilogue {
    const TO *bias;
    long long bias_stride;
    int act;
    int bias_cols;  // columns of C when there is a bias, else 0: one predicated load, no second code path

    __device__ __forceinline__ Epilogue(const TO *bias, long long bias_stride, int act, int n)
        : bias(bias), bias_stride(bias_stride), act(act), bias_cols(bias != nullptr ? n : 0) {}

    __device__ __forceinline__ bool active() const { return bias_cols > 0 || act != EPI_NONE; }

    template <bool GELU, bool APPROX> __device__ __forceinline__ float apply(float v, int col) const {
        if (col < bias_cols) v += to_f32<TO>(bias[(long long)blockIdx.z * bias_stride + col]);
        if constexpr (GELU) {
            // tanh form, u = sqrt(2/pi) (v + 0.044715 v^3). APPROX (the tensor-core kernels, whose products carry
            // TF32 / 16-bit rounding already): 0.5 v (1 + tanh.approx(u)), one MUFU operation, absolute error
            // ~2^-11 |v|. Otherwise v * sigmoid(2u), no cancellation for negative v, two MUFU operations.
            const float u = 0.7978845608028654f * fmaf(0.044715f * v, v * v, v);
            if constexpr (APPROX) {
                float t;
                asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
                const float h = 0.5f * v;
                return fmaf(h, t, h);
            } else {
                return __fdividef(v, 1.f + __expf(-2.f * u));
            }
        } else {
            return (act == EPI_RELU && !(v > 0.f)) ? 0.f : v;  // NaN -> 0, as prism_relu_f32
        }
    }

    // Folds alpha and the epilogue into `count` accumulators, acc(i) at column col(i), and sets alpha to 1.
    // One unrolled copy with GELU and one without, so GEMMs without GELU pay nothing for it. APPROX: see apply.
    template <int COUNT, bool APPROX = false, class Acc, class Col>
    __device__ __forceinline__ void fuse(float &alpha, Acc acc, Col col) const {
        if (!active()) return;
        const float a = alpha;
        auto run = [&](auto gelu) {
#pragma unroll
            for (int i = 0; i < COUNT; ++i) acc(i) = apply<decltype(gelu)::value, APPROX>(a * acc(i), col(i));
        };
        if (act == EPI_GELU) run(std::true_type{});
        else run(std::false_type{});
        alpha = 1.f;
    }
};

// *c = scale * v + beta * *c, rounded once to C's type (*c read only when beta != 0).
template <typename TO> __device__ __forceinline__ void scaled_store(TO *c, float scale, float v, float beta) {
    const float r = scale * v;
    *c = from_f32<TO>(beta != 0.f ? fmaf(beta, to_f32<TO>(*c), r) : r);
}

// One output from its sum (split-K's reduction, the skinny kernels' in-launch finish): *c = epilogue(alpha * sum +
// beta * *c); `col` is the output's column in C (the bias's index).
template <typename TO>
__device__ __forceinline__ void epilogue_store(TO *c, float sum, float alpha, float beta, int col,
                                               const Epilogue<TO> &epi) {
    float scale = alpha;
    epi.template fuse<1>(scale, [&](int) -> float & { return sum; }, [&](int) { return col; });
    scaled_store(c, scale, sum, beta);
}

// The plain store's stand-in for Epilogue: a kernel instantiated with it compiles no epilogue code at all.
struct NoEpilogue {
    template <int COUNT, bool APPROX = false, class Acc, class Col>
    __device__ __forceinline__ void fuse(float &, Acc, Col) const {}
};

}  // namespace
