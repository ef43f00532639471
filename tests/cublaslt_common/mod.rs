//! What the cuBLASLt test binaries share.

use prism_gpu::cublaslt::MatmulConfig;

/// One column-major `C[m x n] = A[m x k] B[k x n]` with tight leading dimensions: no transposes,
/// alpha 1, beta 0, no batch.
pub fn plain_config(m: usize, n: usize, k: usize) -> MatmulConfig {
    MatmulConfig {
        transa: false,
        transb: false,
        transc: false,
        m: m as u64,
        n: n as u64,
        k: k as u64,
        alpha: 1.0,
        lda: m as i64,
        ldb: k as i64,
        beta: 0.0,
        ldc: m as i64,
        stride_a: None,
        stride_b: None,
        stride_c: None,
        stride_bias: None,
        batch_size: None,
    }
}
