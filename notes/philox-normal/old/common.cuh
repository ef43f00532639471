// Shared helpers for prism-gpu's built-in kernels.
//
// Conventions every kernel family follows (the Rust launchers in src/kernels/ rely on them):
// - entry points are `extern "C" __global__` so their names are not mangled;
// - element counts are `unsigned long long`, matrix dimensions and strides `int`, scalars `float`;
// - pointers are plain device pointers, never structs, so argument checks can compare sizes.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define PRISM_KERNEL extern "C" __global__

// Index of this thread in a 1-D grid, and the stride of a grid-stride loop over it.
__device__ __forceinline__ unsigned long long prism_global_thread() {
    return (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ unsigned long long prism_grid_threads() {
    return (unsigned long long)gridDim.x * blockDim.x;
}

// True when `p` is aligned for 16-byte vector access.
__device__ __forceinline__ bool prism_aligned16(const void *p) {
    return ((unsigned long long)p & 15ull) == 0;
}
