//! cudarc 0.19's `cublas` module on this crate's own kernels: [`CudaBlas`], the [`Gemm`],
//! [`Gemv`] and [`Asum`] traits and their configs at the root, [`result`] and [`sys`] beside them,
//! with cudarc's paths and signatures. No libcublas is loaded: every product runs on the built-in
//! GEMM kernels, column-major as cuBLAS defines it (computed as the row-major `Cᵀ = op(B)ᵀ
//! op(A)ᵀ`).
//!
//! What is computed as asked, and what returns `CUBLAS_STATUS_NOT_SUPPORTED` (never a silent
//! substitute), is listed at [`result::gemm_ex`]; f64 (`dgemm`, `dgemv`, `Gemm<f64>`, `Gemv<f64>`)
//! runs on the f64 GEMM kernels (FP64 tensor cores on sm_80+), `asum` on a two-pass reduction.
//! Device pointer mode reads alpha and beta with a copy to the host and a stream synchronisation
//! (the call blocks).

pub(crate) mod plan;
pub mod result;
pub mod safe;
#[allow(missing_docs)] // cuBLAS's own names, documented by NVIDIA
pub mod sys;

pub use result::CublasError;
pub use safe::*;
