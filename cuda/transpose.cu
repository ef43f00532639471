// Matrix transpose, f32: out [cols, rows] = in [rows, cols]^T (both row-major, dense).
#include "common.cuh"

// out[c * rows + r] = in[r * cols + c]. Launch: block (32, 8) exactly, grid (ceil(cols / 32),
// min(ceil(rows / 64), 65535)) (grid.y loops over row tiles); 64x33-float static smem tile: each thread has
// eight loads in flight (four, with 32-row tiles, left an H200 at 0.85x a copy). out must not alias in.
PRISM_KERNEL void prism_transpose_f32(const float *in, float *out, int rows, int cols) {
    constexpr int TILE_ROWS = 64, TILE_COLS = 32, BLOCK_ROWS = 8;
    __shared__ float tile[TILE_ROWS][TILE_COLS + 1];
    const int tiles_y = (rows + TILE_ROWS - 1) / TILE_ROWS;
    const int c0 = blockIdx.x * TILE_COLS;
    for (int ty = blockIdx.y; ty < tiles_y; ty += gridDim.y) {
        const int r0 = ty * TILE_ROWS;
#pragma unroll
        for (int k = 0; k < TILE_ROWS; k += BLOCK_ROWS) {
            const int r = r0 + threadIdx.y + k, c = c0 + threadIdx.x;
            if (r < rows && c < cols) tile[threadIdx.y + k][threadIdx.x] = in[(size_t)r * cols + c];
        }
        __syncthreads();
        // Output row c holds the tile's 64 rows: two warps' worth of consecutive r.
#pragma unroll
        for (int k = 0; k < TILE_COLS; k += BLOCK_ROWS) {
#pragma unroll
            for (int h = 0; h < TILE_ROWS; h += 32) {
                const int c = c0 + threadIdx.y + k, r = r0 + h + threadIdx.x;
                if (r < rows && c < cols) out[(size_t)c * rows + r] = tile[h + threadIdx.x][threadIdx.y + k];
            }
        }
        __syncthreads();
    }
}
