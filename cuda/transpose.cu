// Matrix transpose, f32: out [cols, rows] = in [rows, cols]^T (both row-major, dense).
#include "common.cuh"

// out[c * rows + r] = in[r * cols + c]. Launch: block (32, 8) exactly, grid (ceil(cols / 32),
// min(ceil(rows / 32), 65535)) (grid.y loops over row tiles); 32x33-float static smem tile. out must not
// alias in.
PRISM_KERNEL void prism_transpose_f32(const float *in, float *out, int rows, int cols) {
    __shared__ float tile[32][33];
    const int tiles_y = (rows + 31) / 32;
    const int c0 = blockIdx.x * 32;
    for (int ty = blockIdx.y; ty < tiles_y; ty += gridDim.y) {
        const int r0 = ty * 32;
#pragma unroll
        for (int k = 0; k < 32; k += 8) {
            const int r = r0 + threadIdx.y + k, c = c0 + threadIdx.x;
            if (r < rows && c < cols) tile[threadIdx.y + k][threadIdx.x] = in[(size_t)r * cols + c];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 32; k += 8) {
            const int c = c0 + threadIdx.y + k, r = r0 + threadIdx.x;
            if (r < rows && c < cols) out[(size_t)c * rows + r] = tile[threadIdx.x][threadIdx.y + k];
        }
        __syncthreads();
    }
}
