// Neuromorphic / reservoir-computing kernels (f32): echo-state network matvecs (dense and CSR), leaky
// integration, rate-based spike encoding with a counter-based generator, sliding-window pattern
// correlation, and the steps of spectral-radius estimation by power iteration.
#include "kit.cuh"

using namespace prism;

// out[i] = sum_j w_in[i, j] * u[j], w_in row-major [n_reservoir, n_inputs]. Launch: block a multiple of 32
// <= 1024 (256), grid = ceil(n_reservoir / (block / 32)) (one warp per row); no dynamic smem.
PRISM_KERNEL void matvec_input_kernel(const float *w_in, const float *u, float *out, int n_reservoir,
                                      int n_inputs) {
    const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= n_reservoir) return;
    const bool vec = prism_aligned16(w_in) && prism_aligned16(u) && (n_inputs % 4 == 0);
    const float d = warp_dot(w_in + (size_t)row * n_inputs, u, n_inputs, vec);
    if ((threadIdx.x & 31) == 0) out[row] = d;
}

// out[i] = sum_j w[i, j] * x[j], w dense row-major [n, n]. Launch: as matvec_input_kernel with n rows.
// out must not alias x.
PRISM_KERNEL void matvec_reservoir_kernel(const float *w, const float *x, float *out, int n) {
    const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= n) return;
    const bool vec = prism_aligned16(w) && prism_aligned16(x) && (n % 4 == 0);
    const float d = warp_dot(w + (size_t)row * n, x, n, vec);
    if ((threadIdx.x & 31) == 0) out[row] = d;
}

// out[i] = sum_{k in [row_ptr[i], row_ptr[i+1])} values[k] * x[col_idx[k]] (CSR, n rows, int indices).
// Launch: as matvec_input_kernel with n rows. out must not alias x.
PRISM_KERNEL void matvec_reservoir_csr_kernel(const int *row_ptr, const int *col_idx, const float *values,
                                              const float *x, float *out, int n) {
    const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= n) return;
    const int lane = threadIdx.x & 31;
    const int b = row_ptr[row], e = row_ptr[row + 1];
    float acc = 0.0f;
    for (int k = b + lane; k < e; k += 32) acc = fmaf(values[k], __ldg(x + col_idx[k]), acc);
    acc = warp_reduce(acc, SumOp{});
    if (lane == 0) out[row] = acc;
}

// One echo-state step out of place, fused: out[i] = (1 - leak) * x[i] + leak * tanh(sum_j w[i, j] x[j] +
// sum_k w_in[i, k] u[k]), w dense row-major [n, n], w_in [n, n_in]. Launch: as matvec_input_kernel with n
// rows. out must not overlap x.
PRISM_KERNEL void reservoir_update_kernel(const float *w, const float *w_in, const float *u, const float *x,
                                          float *out, int n, int n_in, float leak) {
    const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= n) return;
    const bool vec = prism_aligned16(w) && prism_aligned16(x) && (n % 4 == 0);
    const bool vec_in = prism_aligned16(w_in) && prism_aligned16(u) && (n_in % 4 == 0);
    const float d = warp_dot(w + (size_t)row * n, x, n, vec);
    const float e = warp_dot(w_in + (size_t)row * n_in, u, n_in, vec_in);
    if ((threadIdx.x & 31) == 0) out[row] = fmaf(1.0f - leak, x[row], leak * tanhf(d + e));
}

// reservoir_update_kernel with w in CSR (n rows, int indices, columns below n). Launch and aliasing as there.
PRISM_KERNEL void reservoir_update_csr_kernel(const int *row_ptr, const int *col_idx, const float *values,
                                              const float *w_in, const float *u, const float *x, float *out,
                                              int n, int n_in, float leak) {
    const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= n) return;
    const int lane = threadIdx.x & 31;
    const int b = row_ptr[row], e = row_ptr[row + 1];
    float acc = 0.0f;
    for (int k = b + lane; k < e; k += 32) acc = fmaf(values[k], __ldg(x + col_idx[k]), acc);
    acc = warp_reduce(acc, SumOp{});
    const float in = warp_dot(w_in + (size_t)row * n_in, u, n_in, false);
    if (lane == 0) out[row] = fmaf(1.0f - leak, x[row], leak * tanhf(acc + in));
}

// x[i] = (1 - leak) * x[i] + leak * tanh(drive[i]). Launch: 1-D grid-stride, any grid/block (recommended
// block 256, grid ceil(n / 4096)). drive may alias x.
PRISM_KERNEL void leaky_integration_kernel(float *x, const float *drive, float leak, unsigned long long n) {
    const float keep = 1.0f - leak;
    map2(x, drive, x, n, [keep, leak](float s, float d) { return fmaf(keep, s, leak * tanhf(d)); });
}

// spikes[t * n + i] = (uniform01(seed, i, t) < rates[i]) ? 1 : 0 for t < steps (rates are per-step spike
// probabilities; uniform01 = splitmix64 hash of (seed, i, t), 24-bit float in [0, 1), identical on the CPU).
// Launch: 1-D grid-stride over n * steps, any grid/block (recommended block 256, grid ceil(n*steps/256)).
PRISM_KERNEL void spike_encode_kernel(const float *rates, float *spikes, unsigned long long n, int steps,
                                      unsigned long long seed) {
    const unsigned long long total = n * (unsigned long long)steps;
    for (unsigned long long k = prism_global_thread(); k < total; k += prism_grid_threads()) {
        const unsigned long long t = k / n, i = k - t * n;
        spikes[k] = uniform01(seed, i, t) < rates[i] ? 1.0f : 0.0f;
    }
}

// Sliding-window correlation: spikes time-major [T, n], templates [P, W, n];
// out[p * (T - W + 1) + t] = sum_{w < W, i < n} spikes[t + w, i] * templates[p, w, i] for t <= T - W
// (a contiguous dot of length W*n). Launch: block a multiple of 32 <= 1024 (256), grid =
// ceil(P * (T - W + 1) / (block / 32)) (one warp per output); requires 1 <= W <= T.
PRISM_KERNEL void pattern_correlation_kernel(const float *spikes, const float *templates, float *out, int T,
                                             int n, int P, int W) {
    const int outs = T - W + 1;
    const long long o = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (o >= (long long)P * outs) return;
    const int p = (int)(o / outs), t = (int)(o - (long long)p * outs);
    const float *a = spikes + (size_t)t * n;
    const float *b = templates + (size_t)p * W * n;
    const int len = W * n;
    const bool vec = prism_aligned16(a) && prism_aligned16(b);
    const float d = warp_dot(b, a, len, vec);
    if ((threadIdx.x & 31) == 0) out[o] = d;
}

// v[i] = 2 * uniform01(seed, i, 0) - 1 (start vector of the power iteration). Launch: 1-D grid-stride, any
// grid/block.
PRISM_KERNEL void power_iteration_init_kernel(float *v, unsigned long long n, unsigned long long seed) {
    for (unsigned long long i = prism_global_thread(); i < n; i += prism_grid_threads())
        v[i] = 2.0f * uniform01(seed, i, 0) - 1.0f;
}

// norm_out[0] = ||w||_2 (f64 accumulation), v = w / ||w|| (v = w when the norm is 0; v may alias w).
// Power iteration: v = init; normalize(v, v); repeat { w = W v (matvec_reservoir_kernel); normalize(w, v) };
// the last norm estimates the spectral radius. Launch: grid 1, block a multiple of 32 <= 1024 (1024).
PRISM_KERNEL void power_iteration_normalize_kernel(const float *w, float *v, float *norm_out, int n) {
    double acc = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) acc += (double)w[i] * (double)w[i];
    const double s = block_allreduce_f64(acc);
    const float nrm = (float)sqrt(s);
    const float inv = nrm > 0.0f ? 1.0f / nrm : 1.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) v[i] = w[i] * inv;
    if (threadIdx.x == 0) norm_out[0] = nrm;
}

// ---------------------------------------------------------------- batched reservoirs
// `batch` reservoirs of n units each, stacked. Member b's recurrent matrix is dense row-major [n, n] at
// w_dense + dense_off[b] when dense_off[b] >= 0, else CSR: its row i holds values[k] at column col_idx[k]
// (< n) for k in [row_ptr[b * n + i], row_ptr[b * n + i + 1]) (one offset array over every member; a dense
// member's rows are empty there). Each row is reduced exactly as the single-reservoir kernels above reduce
// it (the same lanes, the same order, the same vector test), so a member's results are bit-for-bit those
// of its own matrix alone.
__device__ __forceinline__ float batched_recurrent_dot(const float *w_dense, const long long *dense_off,
                                                       const int *row_ptr, const int *col_idx,
                                                       const float *values, const float *xb, int b, int row,
                                                       int n) {
    const long long off = dense_off[b];
    if (off >= 0) {
        const float *w = w_dense + off;
        const bool vec = prism_aligned16(w) && prism_aligned16(xb) && (n % 4 == 0);
        return warp_dot(w + (size_t)row * n, xb, n, vec);
    }
    const int lane = threadIdx.x & 31;
    const size_t r = (size_t)b * n + row;
    const int s = row_ptr[r], e = row_ptr[r + 1];
    float acc = 0.0f;
    for (int k = s + lane; k < e; k += 32) acc = fmaf(values[k], __ldg(xb + col_idx[k]), acc);
    return warp_reduce(acc, SumOp{});
}

// One echo-state step of every member in one launch, out of place: for member b and unit i,
// out[b * n + i] = (1 - leak[b]) * x[b * n + i] + leak[b] * tanh(sum_k W_b[i, k] x[b * n + k] +
// sum_j w_in[(b * n + i) * n_in + j] u[j]), the same arithmetic as reservoir_update_kernel (dense members)
// and reservoir_update_csr_kernel (CSR members). w_in [batch * n, n_in], u [n_in], leaks [batch], x and out
// [batch * n]. Launch: block a multiple of 32 <= 1024 (256: one warp per row), grid = batch * row_blocks,
// row_blocks = ceil(n / (block / 32)); no dynamic smem. out must not overlap x.
PRISM_KERNEL void reservoir_update_batched_kernel(const float *w_dense, const long long *dense_off,
                                                  const int *row_ptr, const int *col_idx, const float *values,
                                                  const float *w_in, const float *u, const float *leaks,
                                                  const float *x, float *out, int n, int n_in,
                                                  int row_blocks) {
    const int b = blockIdx.x / row_blocks;
    const int row = (blockIdx.x - b * row_blocks) * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= n) return;
    const float *xb = x + (size_t)b * n;
    const float d = batched_recurrent_dot(w_dense, dense_off, row_ptr, col_idx, values, xb, b, row, n);
    const float *w_in_b = w_in + (size_t)b * n * n_in;
    // The dense kernel tests the input weights for vector loads; the CSR kernel reads them scalar.
    const bool vec_in =
        dense_off[b] >= 0 && prism_aligned16(w_in_b) && prism_aligned16(u) && (n_in % 4 == 0);
    const float e = warp_dot(w_in_b + (size_t)row * n_in, u, n_in, vec_in);
    const float leak = leaks[b];
    if ((threadIdx.x & 31) == 0) out[(size_t)b * n + row] = fmaf(1.0f - leak, xb[row], leak * tanhf(d + e));
}

// out[b * n + i] = sum_k W_b[i, k] x[b * n + k] for every member (as matvec_reservoir_kernel /
// matvec_reservoir_csr_kernel reduce a row): the batched power iteration's step. Stacking, launch and
// aliasing as reservoir_update_batched_kernel.
PRISM_KERNEL void matvec_reservoir_batched_kernel(const float *w_dense, const long long *dense_off,
                                                  const int *row_ptr, const int *col_idx, const float *values,
                                                  const float *x, float *out, int n, int row_blocks) {
    const int b = blockIdx.x / row_blocks;
    const int row = (blockIdx.x - b * row_blocks) * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= n) return;
    const float *xb = x + (size_t)b * n;
    const float d = batched_recurrent_dot(w_dense, dense_off, row_ptr, col_idx, values, xb, b, row, n);
    if ((threadIdx.x & 31) == 0) out[(size_t)b * n + row] = d;
}
