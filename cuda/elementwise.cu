// Elementwise arithmetic on f32 vectors: out[i] = f(a[i], b[i]).
// Launch: 1-D grid-stride, any grid and block size; 16-byte vector loads when every pointer is aligned.
#include "common.cuh"

template <typename Op>
__device__ __forceinline__ void binary_f32(const float *a, const float *b, float *out,
                                           unsigned long long n, Op op) {
    unsigned long long i = prism_global_thread();
    const unsigned long long stride = prism_grid_threads();
    if (prism_aligned16(a) && prism_aligned16(b) && prism_aligned16(out)) {
        const unsigned long long n4 = n / 4;
        const float4 *a4 = reinterpret_cast<const float4 *>(a);
        const float4 *b4 = reinterpret_cast<const float4 *>(b);
        float4 *o4 = reinterpret_cast<float4 *>(out);
        for (unsigned long long v = i; v < n4; v += stride) {
            float4 x = a4[v], y = b4[v];
            o4[v] = make_float4(op(x.x, y.x), op(x.y, y.y), op(x.z, y.z), op(x.w, y.w));
        }
        for (unsigned long long t = n4 * 4 + i; t < n; t += stride) out[t] = op(a[t], b[t]);
    } else {
        for (; i < n; i += stride) out[i] = op(a[i], b[i]);
    }
}

// out = a + b
PRISM_KERNEL void prism_add_f32(const float *a, const float *b, float *out, unsigned long long n) {
    binary_f32(a, b, out, n, [] __device__(float x, float y) { return x + y; });
}
// out = a - b
PRISM_KERNEL void prism_sub_f32(const float *a, const float *b, float *out, unsigned long long n) {
    binary_f32(a, b, out, n, [] __device__(float x, float y) { return x - y; });
}
// out = a * b
PRISM_KERNEL void prism_mul_f32(const float *a, const float *b, float *out, unsigned long long n) {
    binary_f32(a, b, out, n, [] __device__(float x, float y) { return x * y; });
}
// out = a / b
PRISM_KERNEL void prism_div_f32(const float *a, const float *b, float *out, unsigned long long n) {
    binary_f32(a, b, out, n, [] __device__(float x, float y) { return x / y; });
}
// out = alpha * x + y (x and y read, out written; out may alias y)
PRISM_KERNEL void prism_axpy_f32(float alpha, const float *x, const float *y, float *out,
                                 unsigned long long n) {
    binary_f32(x, y, out, n, [alpha] __device__(float a, float b) { return fmaf(alpha, a, b); });
}
// out = alpha * x (out may alias x)
PRISM_KERNEL void prism_scale_f32(float alpha, const float *x, float *out, unsigned long long n) {
    binary_f32(x, x, out, n, [alpha] __device__(float a, float) { return alpha * a; });
}
// out[i] = value
PRISM_KERNEL void prism_fill_f32(float *out, float value, unsigned long long n) {
    binary_f32(out, out, out, n, [value] __device__(float, float) { return value; });
}
