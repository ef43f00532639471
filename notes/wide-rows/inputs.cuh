// Inputs the wide-row experiments share: a hashed uniform fill (seeded, never zeros) and its bf16 copy.
#pragma once
#include <cuda_bf16.h>

__global__ void fill(float *p, size_t n, unsigned seed, float lo, float hi) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
        p[i] = lo + (hi - lo) * (h & 0xffffff) * (1.0f / 16777216.0f);
    }
}
__global__ void to_bf16(const float *a, __nv_bfloat16 *b, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        b[i] = __float2bfloat16_rn(a[i]);
}
