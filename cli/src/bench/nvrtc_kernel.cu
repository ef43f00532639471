// A ~200-line CUDA C++ program for the NVRTC cache benchmark and its GPU test: templates, device
// functions, shared memory, warp shuffles; no includes (NVRTC compiles it on its own).

typedef unsigned int u32;

template <typename T> struct Pair { T a; T b; };

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, offset));
    }
    return v;
}

template <int BLOCK>
__device__ float block_sum(float v, float *scratch) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (threadIdx.x < BLOCK / 32) ? scratch[lane] : 0.0f;
    if (warp == 0) v = warp_sum(v);
    if (threadIdx.x == 0) scratch[0] = v;
    __syncthreads();
    v = scratch[0];
    __syncthreads();
    return v;
}

template <int BLOCK>
__device__ float block_max(float v, float *scratch) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v = warp_max(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (threadIdx.x < BLOCK / 32) ? scratch[lane] : -3.402823466e38f;
    if (warp == 0) v = warp_max(v);
    if (threadIdx.x == 0) scratch[0] = v;
    __syncthreads();
    v = scratch[0];
    __syncthreads();
    return v;
}

__device__ __forceinline__ float gelu(float x) {
    const float k = 0.7978845608f;
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

template <typename Op>
__device__ void map_grid(const float *in, float *out, u32 n, Op op) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = op(in[i]);
    }
}

struct Gelu { __device__ float operator()(float x) const { return gelu(x); } };
struct Silu { __device__ float operator()(float x) const { return silu(x); } };
struct Scale {
    float s;
    __device__ float operator()(float x) const { return s * x; }
};

extern "C" __global__ void gelu_f32(const float *in, float *out, u32 n) { map_grid(in, out, n, Gelu()); }
extern "C" __global__ void silu_f32(const float *in, float *out, u32 n) { map_grid(in, out, n, Silu()); }
extern "C" __global__ void scale_f32(const float *in, float *out, u32 n, float s) {
    Scale op; op.s = s;
    map_grid(in, out, n, op);
}

extern "C" __global__ void __launch_bounds__(256) softmax_rows(const float *in, float *out, u32 cols) {
    __shared__ float scratch[32];
    const float *row = in + (size_t)blockIdx.x * cols;
    float *dst = out + (size_t)blockIdx.x * cols;
    float m = -3.402823466e38f;
    for (u32 c = threadIdx.x; c < cols; c += 256) m = fmaxf(m, row[c]);
    m = block_max<256>(m, scratch);
    float s = 0.0f;
    for (u32 c = threadIdx.x; c < cols; c += 256) s += expf(row[c] - m);
    s = block_sum<256>(s, scratch);
    const float inv = 1.0f / s;
    for (u32 c = threadIdx.x; c < cols; c += 256) dst[c] = expf(row[c] - m) * inv;
}

extern "C" __global__ void __launch_bounds__(256)
layer_norm(const float *in, const float *gamma, const float *beta, float *out, u32 cols, float eps) {
    __shared__ float scratch[32];
    const float *row = in + (size_t)blockIdx.x * cols;
    float *dst = out + (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (u32 c = threadIdx.x; c < cols; c += 256) s += row[c];
    const float mean = block_sum<256>(s, scratch) / cols;
    float v = 0.0f;
    for (u32 c = threadIdx.x; c < cols; c += 256) {
        const float d = row[c] - mean;
        v += d * d;
    }
    const float rstd = rsqrtf(block_sum<256>(v, scratch) / cols + eps);
    for (u32 c = threadIdx.x; c < cols; c += 256) dst[c] = (row[c] - mean) * rstd * gamma[c] + beta[c];
}

extern "C" __global__ void __launch_bounds__(256) rms_norm(const float *in, const float *w, float *out, u32 cols, float eps) {
    __shared__ float scratch[32];
    const float *row = in + (size_t)blockIdx.x * cols;
    float *dst = out + (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (u32 c = threadIdx.x; c < cols; c += 256) s += row[c] * row[c];
    const float r = rsqrtf(block_sum<256>(s, scratch) / cols + eps);
    for (u32 c = threadIdx.x; c < cols; c += 256) dst[c] = row[c] * r * w[c];
}

template <int TILE>
__device__ void transpose_tile(const float *in, float *out, u32 rows, u32 cols) {
    __shared__ float tile[TILE][TILE + 1];
    u32 x = blockIdx.x * TILE + threadIdx.x;
    u32 y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += blockDim.y) {
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * cols + x];
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += blockDim.y) {
        if (x < rows && y + j < cols) out[(size_t)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}

extern "C" __global__ void transpose_f32(const float *in, float *out, u32 rows, u32 cols) {
    transpose_tile<32>(in, out, rows, cols);
}

template <int TILE>
__device__ void gemm_tile(const float *a, const float *b, float *c, u32 m, u32 n, u32 k, float alpha, float beta) {
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE];
    const u32 row = blockIdx.y * TILE + threadIdx.y;
    const u32 col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (u32 t = 0; t < k; t += TILE) {
        as[threadIdx.y][threadIdx.x] = (row < m && t + threadIdx.x < k) ? a[(size_t)row * k + t + threadIdx.x] : 0.0f;
        bs[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < k) ? b[(size_t)(t + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int i = 0; i < TILE; ++i) acc = fmaf(as[threadIdx.y][i], bs[i][threadIdx.x], acc);
        __syncthreads();
    }
    if (row < m && col < n) {
        float *dst = c + (size_t)row * n + col;
        *dst = alpha * acc + (beta == 0.0f ? 0.0f : beta * *dst);
    }
}

extern "C" __global__ void sgemm_tiled(const float *a, const float *b, float *c, u32 m, u32 n, u32 k, float alpha, float beta) {
    gemm_tile<16>(a, b, c, m, n, k, alpha, beta);
}

extern "C" __global__ void dot_pairs(const Pair<float> *pairs, float *out, u32 n) {
    __shared__ float scratch[32];
    float s = 0.0f;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        s = fmaf(pairs[i].a, pairs[i].b, s);
    }
    s = block_sum<256>(s, scratch);
    if (threadIdx.x == 0) atomicAdd(out, s);
}

extern "C" __global__ void histogram_u32(const u32 *keys, u32 *bins, u32 n, u32 nbins) {
    extern __shared__ u32 local[];
    for (u32 b = threadIdx.x; b < nbins; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        atomicAdd(&local[keys[i] % nbins], 1u);
    }
    __syncthreads();
    for (u32 b = threadIdx.x; b < nbins; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

// Inclusive prefix sums of blocks of 256: a warp scan by shuffles, then the warps' totals.
__device__ __forceinline__ float warp_scan(float v) {
    const int lane = threadIdx.x & 31;
    for (int offset = 1; offset < 32; offset <<= 1) {
        const float up = __shfl_up_sync(0xffffffffu, v, offset);
        if (lane >= offset) v += up;
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(256) scan_blocks(const float *in, float *out, float *totals, u32 n) {
    __shared__ float warp_totals[8];
    const u32 i = blockIdx.x * 256 + threadIdx.x;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float v = warp_scan(i < n ? in[i] : 0.0f);
    if (lane == 31) warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        const float t = warp_scan(lane < 8 ? warp_totals[lane] : 0.0f);
        if (lane < 8) warp_totals[lane] = t;
    }
    __syncthreads();
    if (warp > 0) v += warp_totals[warp - 1];
    if (i < n) out[i] = v;
    if (threadIdx.x == 255) totals[blockIdx.x] = v;
}
