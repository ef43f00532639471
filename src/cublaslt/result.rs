//! cuBLASLt's error type. cudarc's descriptor-level functions (`create_matmul_desc`,
//! `get_matmul_algo_heuristic`, `matmul`, ...) drive libcublasLt's heuristics and are not
//! provided: the safe layer ([`super::Matmul`]) runs the built-in kernels directly.

use super::sys::cublasStatus_t;
use crate::error::Error;

/// A cuBLASLt status other than success.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CublasError(pub cublasStatus_t);

impl std::fmt::Display for CublasError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for CublasError {}

impl From<Error> for CublasError {
    /// How an error of the engine reads as a cuBLASLt status (as the cublas module maps it).
    fn from(e: Error) -> Self {
        CublasError(crate::cublas::result::status_of(e))
    }
}
