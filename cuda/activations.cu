// Activations on f32, forward and backward. Forward: out = f(x); backward: dx = dy * f'(x), where x is the
// forward INPUT. Launch: ELEMENTWISE CONTRACT (1-D grid-stride, any grid/block; recommended block 256, grid
// ceil(n / 4096)). In place is allowed: out may alias x; dx may alias dy or x.
#include "kit.cuh"

using prism::map1;
using prism::map2;

namespace {
constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;
__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
// gelu(x) = 0.5 x (1 + tanh(c (x + a x^3)))
__device__ __forceinline__ float gelu(float x) {
    const float t = tanhf(kGeluC * fmaf(kGeluA * x, x * x, x));
    return 0.5f * x * (1.0f + t);
}
// gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2)
__device__ __forceinline__ float gelu_grad(float x) {
    const float t = tanhf(kGeluC * fmaf(kGeluA * x, x * x, x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluC * fmaf(3.0f * kGeluA, x * x, 1.0f);
}
}  // namespace

// out = max(x, 0)
PRISM_KERNEL void prism_relu_f32(const float *x, float *out, unsigned long long n) {
    map1(x, out, n, [] __device__(float v) { return v > 0.0f ? v : 0.0f; });
}
// dx = x > 0 ? dy : 0
PRISM_KERNEL void prism_relu_backward_f32(const float *dy, const float *x, float *dx, unsigned long long n) {
    map2(dy, x, dx, n, [] __device__(float g, float v) { return v > 0.0f ? g : 0.0f; });
}
// out = x > 0 ? x : slope * x
PRISM_KERNEL void prism_leaky_relu_f32(const float *x, float *out, float slope, unsigned long long n) {
    map1(x, out, n, [slope] __device__(float v) { return v > 0.0f ? v : slope * v; });
}
// dx = x > 0 ? dy : slope * dy
PRISM_KERNEL void prism_leaky_relu_backward_f32(const float *dy, const float *x, float *dx, float slope,
                                                unsigned long long n) {
    map2(dy, x, dx, n, [slope] __device__(float g, float v) { return v > 0.0f ? g : slope * g; });
}
// out = 1 / (1 + exp(-x))
PRISM_KERNEL void prism_sigmoid_f32(const float *x, float *out, unsigned long long n) {
    map1(x, out, n, [] __device__(float v) { return sigmoid(v); });
}
// dx = dy * s (1 - s), s = sigmoid(x)
PRISM_KERNEL void prism_sigmoid_backward_f32(const float *dy, const float *x, float *dx, unsigned long long n) {
    map2(dy, x, dx, n, [] __device__(float g, float v) {
        const float s = sigmoid(v);
        return g * s * (1.0f - s);
    });
}
// out = tanh(x)
PRISM_KERNEL void prism_tanh_f32(const float *x, float *out, unsigned long long n) {
    map1(x, out, n, [] __device__(float v) { return tanhf(v); });
}
// dx = dy * (1 - tanh(x)^2)
PRISM_KERNEL void prism_tanh_backward_f32(const float *dy, const float *x, float *dx, unsigned long long n) {
    map2(dy, x, dx, n, [] __device__(float g, float v) {
        const float t = tanhf(v);
        return g * (1.0f - t * t);
    });
}
// out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
PRISM_KERNEL void prism_gelu_f32(const float *x, float *out, unsigned long long n) {
    map1(x, out, n, [] __device__(float v) { return gelu(v); });
}
// dx = dy * gelu'(x) (derivative of the tanh form)
PRISM_KERNEL void prism_gelu_backward_f32(const float *dy, const float *x, float *dx, unsigned long long n) {
    map2(dy, x, dx, n, [] __device__(float g, float v) { return g * gelu_grad(v); });
}
