//! The cuBLASLt types cudarc's `cublaslt::sys` names that its safe layer uses. The status, data
//! and compute types are cuBLAS's (the same enums as [`crate::cublas::sys`]).
#![allow(non_camel_case_types)] // cuBLASLt's own names

pub use crate::cublas::sys::{cublasComputeType_t, cublasStatus_t, cudaDataType, cudaDataType_t};

/// This crate's cuBLASLt handle: the built-in kernels of one context.
pub struct cublasLtContext {
    pub(crate) kernels: crate::kernels::Kernels,
}

impl std::fmt::Debug for cublasLtContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("cublasLtContext")
            .field("device", &self.kernels.context().ordinal())
            .finish_non_exhaustive()
    }
}

/// A cuBLASLt handle: a pointer to this crate's [`cublasLtContext`].
pub type cublasLtHandle_t = *mut cublasLtContext;
