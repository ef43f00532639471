// Precision conversions (round to nearest even): f32 <-> f16, f32 <-> bf16; f32 -> f64 (exact).
// Launch: ELEMENTWISE CONTRACT (1-D grid-stride, any grid/block; recommended block 256, grid
// ceil(n / 1024)). 16-byte f32 side / 8-byte half side vectors when both pointers allow it.
#include "common.cuh"

namespace {
template <typename H, class Down>
__device__ __forceinline__ void down(const float *x, H *y, unsigned long long n, Down cvt) {
    unsigned long long done = 0;
    if (prism_aligned16(x) && (((unsigned long long)y & 7ull) == 0)) {
        const unsigned long long n4 = n / 4;
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        uint2 *y4 = reinterpret_cast<uint2 *>(y);
        for (unsigned long long i = prism_global_thread(); i < n4; i += prism_grid_threads()) {
            const float4 v = x4[i];
            H h[4] = {cvt(v.x), cvt(v.y), cvt(v.z), cvt(v.w)};
            y4[i] = *reinterpret_cast<const uint2 *>(h);
        }
        done = n4 * 4;
    }
    for (unsigned long long t = done + prism_global_thread(); t < n; t += prism_grid_threads()) y[t] = cvt(x[t]);
}
template <typename H, class Up>
__device__ __forceinline__ void up(const H *x, float *y, unsigned long long n, Up cvt) {
    unsigned long long done = 0;
    if (prism_aligned16(y) && (((unsigned long long)x & 7ull) == 0)) {
        const unsigned long long n4 = n / 4;
        const uint2 *x4 = reinterpret_cast<const uint2 *>(x);
        float4 *y4 = reinterpret_cast<float4 *>(y);
        for (unsigned long long i = prism_global_thread(); i < n4; i += prism_grid_threads()) {
            const uint2 u = x4[i];
            const H *h = reinterpret_cast<const H *>(&u);
            y4[i] = make_float4(cvt(h[0]), cvt(h[1]), cvt(h[2]), cvt(h[3]));
        }
        done = n4 * 4;
    }
    for (unsigned long long t = done + prism_global_thread(); t < n; t += prism_grid_threads()) y[t] = cvt(x[t]);
}
}  // namespace

// y = (f16) x, round to nearest even (overflow -> inf)
PRISM_KERNEL void prism_f32_to_f16(const float *x, __half *y, unsigned long long n) {
    down(x, y, n, [] __device__(float v) { return __float2half_rn(v); });
}
// y = (f32) x (exact)
PRISM_KERNEL void prism_f16_to_f32(const __half *x, float *y, unsigned long long n) {
    up(x, y, n, [] __device__(__half v) { return __half2float(v); });
}
// y = (bf16) x, round to nearest even (NaN stays NaN)
PRISM_KERNEL void prism_f32_to_bf16(const float *x, __nv_bfloat16 *y, unsigned long long n) {
    down(x, y, n, [] __device__(float v) { return __float2bfloat16_rn(v); });
}
// y = (f32) x (exact)
PRISM_KERNEL void prism_bf16_to_f32(const __nv_bfloat16 *x, float *y, unsigned long long n) {
    up(x, y, n, [] __device__(__nv_bfloat16 v) { return __bfloat162float(v); });
}
// y = (f64) x (exact)
PRISM_KERNEL void prism_f32_to_f64(const float *x, double *y, unsigned long long n) {
    for (unsigned long long t = prism_global_thread(); t < n; t += prism_grid_threads()) y[t] = (double)x[t];
}
