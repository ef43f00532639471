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

// Programmatic dependent launches (sm_90 and newer; no-ops elsewhere and in a launch without the attribute).
// A kernel the host launches as a dependent (`launch!(@dependent ...)`) may start before the work ahead of it on
// the stream is done, so every one of its threads calls prism_await_previous_grid() before its first access to
// global memory: it returns once that work has finished and its writes are visible. A kernel that calls
// prism_allow_dependent_grid() lets the dependent launch after it start (and wait) that early.
__device__ __forceinline__ void prism_await_previous_grid() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void prism_allow_dependent_grid() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
