// Neural-network kernels for prism_gpu::nn: the bias of a dense layer (add, gradient), the fused
// losses (softmax cross-entropy, MSE: per-row loss and the gradient in one pass), dropout, row
// gathers for shuffled batches, and the optimiser steps, each one launch over every parameter.
// Matrices are row-major [rows, cols]. The CPU fallback (src/cpu/nn.rs) computes the same.
#include "common.cuh"

#define PRISM_NN_INF __int_as_float(0x7f800000)

namespace {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// (max, first index of it) across a warp; ties keep the smaller index.
__device__ __forceinline__ void warp_argmax(float &m, int &i) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float om = __shfl_xor_sync(0xffffffffu, m, o);
        const int oi = __shfl_xor_sync(0xffffffffu, i, o);
        if (om > m || (om == m && oi < i)) {
            m = om;
            i = oi;
        }
    }
}

}  // namespace

// y[r, c] += bias[c]. 1-D grid-stride over rows * cols (ELEMENTWISE launch, one element a step).
PRISM_KERNEL void prism_bias_add_f32(float *y, const float *bias, int rows, int cols) {
    const unsigned long long n = (unsigned long long)rows * cols;
    for (unsigned long long t = prism_global_thread(); t < n; t += prism_grid_threads())
        y[t] += bias[t % (unsigned)cols];
}

// db[c] = sum over r of dy[r, c]. Block (32, 8): 32 columns a block, 8 row lanes summed in a fixed
// order through shared memory, so the result is deterministic. Grid ceil(cols / 32).
PRISM_KERNEL void prism_bias_grad_f32(const float *dy, float *db, int rows, int cols) {
    __shared__ float part[8][33];
    const int c = blockIdx.x * 32 + threadIdx.x;
    float acc = 0.0f;
    if (c < cols)
        for (int r = threadIdx.y; r < rows; r += 8) acc += dy[(size_t)r * cols + c];
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < 8; ++k) s += part[k][threadIdx.x];
        db[c] = s;
    }
}

// Softmax cross-entropy of each row of logits [rows, cols] against its class labels[r] (a label
// outside [0, cols) gives a NaN loss and gradient, never a stray read): loss[r] = logsumexp(x_r) - x_r[label], correct[r] = 1 when the first
// maximum is at the label (else 0), and, when grad is not null, grad = (softmax(x_r) - onehot) *
// grad_scale (grad may alias logits). One warp per row, 8 rows per 256-thread block.
PRISM_KERNEL void prism_softmax_xent_f32(const float *logits, const int *labels, float *grad, float *loss,
                                         float *correct, float grad_scale, int rows, int cols) {
    const int row = (int)(prism_global_thread() >> 5), lane = threadIdx.x & 31;
    if (row >= rows) return;
    const float *x = logits + (size_t)row * cols;
    float m = -PRISM_NN_INF;
    int arg = cols;
    for (int c = lane; c < cols; c += 32)
        if (x[c] > m) {
            m = x[c];
            arg = c;
        }
    warp_argmax(m, arg);
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += expf(x[c] - m);
    s = warp_sum(s);
    const int label = labels[row];
    const bool known = label >= 0 && label < cols;
    const float xl = known ? x[label] : __int_as_float(0x7fc00000);
    __syncwarp();
    if (lane == 0) {
        loss[row] = m + logf(s) - xl;
        correct[row] = arg == label ? 1.0f : 0.0f;
    }
    if (grad != nullptr) {
        float *g = grad + (size_t)row * cols;
        const float inv = 1.0f / s;
        for (int c = lane; c < cols; c += 32) {
            const float p = expf(x[c] - m) * inv;
            g[c] = known ? (p - (c == label ? 1.0f : 0.0f)) * grad_scale : xl;
        }
    }
}

// Mean squared error of each row: loss[r] = sum_c (pred - target)^2 / cols and, when grad is not
// null, grad = 2 (pred - target) * grad_scale (grad may alias pred). One warp per row.
PRISM_KERNEL void prism_mse_f32(const float *pred, const float *target, float *grad, float *loss,
                                float grad_scale, int rows, int cols) {
    const int row = (int)(prism_global_thread() >> 5), lane = threadIdx.x & 31;
    if (row >= rows) return;
    const size_t base = (size_t)row * cols;
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        const float d = pred[base + c] - target[base + c];
        s = fmaf(d, d, s);
        if (grad != nullptr) grad[base + c] = 2.0f * d * grad_scale;
    }
    s = warp_sum(s);
    if (lane == 0) loss[row] = s / (float)cols;
}

// Inverted dropout with the uniforms u in (0, 1]: y = u > p ? x * scale : 0 (scale = 1 / (1 - p)).
// The backward pass is the same call on dy with the same u. y may alias x. ELEMENTWISE, one a step.
PRISM_KERNEL void prism_dropout_f32(const float *x, const float *u, float *y, float p, float scale,
                                    unsigned long long n) {
    for (unsigned long long t = prism_global_thread(); t < n; t += prism_grid_threads())
        y[t] = u[t] > p ? x[t] * scale : 0.0f;
}

// dst[r, :] = src[index[r], :] for r < rows, src holding src_rows rows of cols; an index out of
// range gives a row of zeros. ELEMENTWISE over rows * cols, one element a step.
template <typename T>
__device__ __forceinline__ void gather_rows(const T *src, const unsigned *index, T *dst, int src_rows,
                                            int rows, int cols) {
    const unsigned long long n = (unsigned long long)rows * cols;
    for (unsigned long long t = prism_global_thread(); t < n; t += prism_grid_threads()) {
        const unsigned long long r = t / (unsigned)cols, c = t % (unsigned)cols;
        const unsigned s = index[r];
        dst[t] = s < (unsigned)src_rows ? src[(unsigned long long)s * cols + c] : T(0);
    }
}
PRISM_KERNEL void prism_gather_rows_f32(const float *src, const unsigned *index, float *dst, int src_rows,
                                        int rows, int cols) {
    gather_rows(src, index, dst, src_rows, rows, cols);
}
PRISM_KERNEL void prism_gather_rows_i32(const int *src, const unsigned *index, int *dst, int src_rows,
                                        int rows, int cols) {
    gather_rows(src, index, dst, src_rows, rows, cols);
}

// SGD with momentum (PyTorch's, dampening 0): g' = g + weight_decay * p; v = momentum * v + g';
// p -= lr * v. ELEMENTWISE over all n parameters, one element a step.
PRISM_KERNEL void prism_sgd_momentum_f32(float *p, const float *g, float *v, float lr, float momentum,
                                         float weight_decay, unsigned long long n) {
    for (unsigned long long t = prism_global_thread(); t < n; t += prism_grid_threads()) {
        const float grad = fmaf(weight_decay, p[t], g[t]);
        const float vel = fmaf(momentum, v[t], grad);
        v[t] = vel;
        p[t] = fmaf(-lr, vel, p[t]);
    }
}

// Adam's moment update and step (PyTorch's arithmetic): m = b1 m + (1 - b1) g,
// v = b2 v + (1 - b2) g^2, p -= step_size * m / (sqrt(v) / bc2_sqrt + eps), where the host passes
// step_size = lr / (1 - b1^t) and bc2_sqrt = sqrt(1 - b2^t).
__device__ __forceinline__ float adam_update(float p, float grad, float *m, float *v, float beta1,
                                             float beta2, float eps, float step_size, float bc2_sqrt) {
    const float mt = fmaf(beta1, *m, (1.0f - beta1) * grad);
    const float vt = fmaf(beta2, *v, (1.0f - beta2) * grad * grad);
    *m = mt;
    *v = vt;
    return p - step_size * mt / (sqrtf(vt) / bc2_sqrt + eps);
}

// Adam with L2 weight decay added to the gradient (g' = g + weight_decay * p). ELEMENTWISE.
PRISM_KERNEL void prism_adam_f32(float *p, const float *g, float *m, float *v, float beta1, float beta2,
                                 float eps, float weight_decay, float step_size, float bc2_sqrt,
                                 unsigned long long n) {
    for (unsigned long long t = prism_global_thread(); t < n; t += prism_grid_threads()) {
        const float grad = fmaf(weight_decay, p[t], g[t]);
        p[t] = adam_update(p[t], grad, &m[t], &v[t], beta1, beta2, eps, step_size, bc2_sqrt);
    }
}

// AdamW: decoupled weight decay p *= 1 - lr * weight_decay (decay = lr * weight_decay from the
// host), then Adam's step on the plain gradient. ELEMENTWISE.
PRISM_KERNEL void prism_adamw_f32(float *p, const float *g, float *m, float *v, float beta1, float beta2,
                                  float eps, float decay, float step_size, float bc2_sqrt,
                                  unsigned long long n) {
    for (unsigned long long t = prism_global_thread(); t < n; t += prism_grid_threads()) {
        const float decayed = p[t] * (1.0f - decay);
        p[t] = adam_update(decayed, g[t], &m[t], &v[t], beta1, beta2, eps, step_size, bc2_sqrt);
    }
}

// Adam and AdamW for a replayed CUDA graph, where host scalars would be frozen: the step count and
// its bias corrections live on the device in sched = [t, step_size, bc2_sqrt, decay].
// prism_adam_tick_f32 (one thread) advances t and computes the rest in double precision:
// step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t), decay = lr * decoupled_decay.
PRISM_KERNEL void prism_adam_tick_f32(float *sched, float lr, float beta1, float beta2, float decoupled_decay) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    const double t = (double)sched[0] + 1.0;
    sched[0] = (float)t;
    sched[1] = (float)((double)lr / (1.0 - pow((double)beta1, t)));
    sched[2] = (float)sqrt(1.0 - pow((double)beta2, t));
    sched[3] = lr * decoupled_decay;
}

// The Adam / AdamW update with the scalars of sched (after prism_adam_tick_f32): AdamW decays
// p *= 1 - sched[3] first (0 for Adam), weight_decay is Adam's L2 term (0 for AdamW). ELEMENTWISE.
PRISM_KERNEL void prism_adam_sched_f32(float *p, const float *g, float *m, float *v, float beta1, float beta2,
                                       float eps, float weight_decay, const float *sched,
                                       unsigned long long n) {
    const float step_size = sched[1], bc2_sqrt = sched[2], decay = sched[3];
    for (unsigned long long t = prism_global_thread(); t < n; t += prism_grid_threads()) {
        const float decayed = p[t] * (1.0f - decay);
        const float grad = fmaf(weight_decay, p[t], g[t]);
        p[t] = adam_update(decayed, grad, &m[t], &v[t], beta1, beta2, eps, step_size, bc2_sqrt);
    }
}
