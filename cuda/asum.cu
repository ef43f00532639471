// BLAS asum: out[0] = sum of |x[i * incx]| for i in [0, n), in two deterministic passes (per-block f64
// partials, then one block over them), f32 and f64 elements. The sum is accumulated in f64 for both.
#include "kit.cuh"

using namespace prism;

namespace {

template <typename T>
__device__ __forceinline__ void asum_partial(const T *x, unsigned long long n, long long incx, double *partials) {
    double acc = 0.0;
    for (unsigned long long i = prism_global_thread(); i < n; i += prism_grid_threads())
        acc += fabs((double)x[(long long)i * incx]);
    const double s = block_allreduce_f64(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

template <typename T> __device__ __forceinline__ void asum_finalize(const double *partials, int count, T *out) {
    double acc = 0.0;
    for (int i = threadIdx.x; i < count; i += blockDim.x) acc += partials[i];
    const double s = block_allreduce_f64(acc);
    if (threadIdx.x == 0) out[0] = (T)s;
}

}  // namespace

// partials[blockIdx.x] = sum of |x[i * incx]| over this block's grid-stride share of [0, n). Launch: any grid
// G >= 1, block a multiple of 32 <= 1024 (256); partials holds G doubles. Then prism_asum_finalize_*.
PRISM_KERNEL void prism_asum_partial_f32(const float *x, unsigned long long n, long long incx, double *partials) {
    asum_partial(x, n, incx, partials);
}
PRISM_KERNEL void prism_asum_partial_f64(const double *x, unsigned long long n, long long incx, double *partials) {
    asum_partial(x, n, incx, partials);
}
// out[0] = sum(partials[0, count)) rounded to the element type. Launch: grid 1, block a multiple of 32 <= 1024.
PRISM_KERNEL void prism_asum_finalize_f32(const double *partials, int count, float *out) {
    asum_finalize(partials, count, out);
}
PRISM_KERNEL void prism_asum_finalize_f64(const double *partials, int count, double *out) {
    asum_finalize(partials, count, out);
}
