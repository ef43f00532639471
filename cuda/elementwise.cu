// Elementwise arithmetic on f32 vectors: out[i] = f(a[i], b[i]).
// Launch (ELEMENTWISE CONTRACT): 1-D grid-stride, any grid and block size; recommended block 256 and
// grid ceil(n / 4096) (each thread moves 4 float4 per round, 4 loads of each input in flight). 16-byte
// vector loads when every pointer is 16-byte aligned, scalar otherwise. out may alias any input.
#include "kit.cuh"

using prism::map1;
using prism::map2;

// out = a + b
PRISM_KERNEL void prism_add_f32(const float *a, const float *b, float *out, unsigned long long n) {
    map2(a, b, out, n, [] __device__(float x, float y) { return x + y; });
}
// out = a - b
PRISM_KERNEL void prism_sub_f32(const float *a, const float *b, float *out, unsigned long long n) {
    map2(a, b, out, n, [] __device__(float x, float y) { return x - y; });
}
// out = a * b
PRISM_KERNEL void prism_mul_f32(const float *a, const float *b, float *out, unsigned long long n) {
    map2(a, b, out, n, [] __device__(float x, float y) { return x * y; });
}
// out = a / b (IEEE division)
PRISM_KERNEL void prism_div_f32(const float *a, const float *b, float *out, unsigned long long n) {
    map2(a, b, out, n, [] __device__(float x, float y) { return __fdiv_rn(x, y); });
}
// out = alpha * x + y (fused multiply-add; out may alias x or y). ELEMENTWISE CONTRACT.
PRISM_KERNEL void prism_axpy_f32(float alpha, const float *x, const float *y, float *out,
                                 unsigned long long n) {
    map2(x, y, out, n, [alpha] __device__(float a, float b) { return fmaf(alpha, a, b); });
}
// out = alpha * x (out may alias x). ELEMENTWISE CONTRACT.
PRISM_KERNEL void prism_scale_f32(float alpha, const float *x, float *out, unsigned long long n) {
    map1(x, out, n, [alpha] __device__(float a) { return alpha * a; });
}
// out[i] = value. ELEMENTWISE CONTRACT.
PRISM_KERNEL void prism_fill_f32(float *out, float value, unsigned long long n) {
    if (prism_aligned16(out)) {
        const unsigned long long n4 = n / 4;
        float4 *o4 = reinterpret_cast<float4 *>(out);
        const float4 v = make_float4(value, value, value, value);
        for (unsigned long long i = prism_global_thread(); i < n4; i += prism_grid_threads()) o4[i] = v;
        for (unsigned long long t = n4 * 4 + prism_global_thread(); t < n; t += prism_grid_threads())
            out[t] = value;
    } else {
        for (unsigned long long t = prism_global_thread(); t < n; t += prism_grid_threads()) out[t] = value;
    }
}
