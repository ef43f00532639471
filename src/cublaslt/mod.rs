//! cudarc 0.19's `cublaslt` module on this crate's own GEMM kernels: [`CudaBlasLT`],
//! [`MatmulConfig`], the [`Matmul`] trait for f32 (TF32 products, as cudarc asks cuBLASLt for),
//! `half::f16` and `half::bf16`, with optional bias and [`Activation`] fused into the GEMM's store,
//! with cudarc's paths and signatures. No libcublasLt is loaded.
//!
//! Column-major, as cuBLASLt: `C[m x n] = act(alpha op(A) op(B) + beta C + bias)`, the bias one
//! value per row of C (`m` of them per batch entry, `stride_bias` apart; `None` is one bias for
//! every entry). What differs from cuBLASLt is listed at [`Matmul::matmul`].

mod logger;
pub mod result;
pub mod safe;
#[allow(missing_docs)] // cuBLASLt's own names, documented by NVIDIA
pub mod sys;

pub use result::CublasError;
pub use safe::*;
