// One build of cuda/random.cu (the directory on the include path picks which) with host launchers.
#include "common.cuh"
#undef PRISM_KERNEL
#define PRISM_KERNEL static __global__
#include "random.cu"

#ifndef VARIANT
#error "define VARIANT"
#endif
#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)

void CAT(normal, VARIANT)(float *out, unsigned long long n, int grid) {
    prism_random_normal_f32<<<grid, 256>>>(out, n, 42, 7, 0.5f, 2.0f);
}
void CAT(uniform, VARIANT)(float *out, unsigned long long n, int grid) {
    prism_random_uniform_f32<<<grid, 256>>>(out, n, 42, 7);
}
