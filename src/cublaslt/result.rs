//! cuBLASLt's error type and handle functions. cudarc's descriptor-level functions
//! (`create_matmul_desc`, `get_matmul_algo_heuristic`, `matmul`, ...) drive libcublasLt's
//! heuristics and are not provided: the safe layer ([`super::Matmul`]) runs the built-in kernels
//! directly.

use super::logger;
use super::sys::{self, cublasStatus_t};
use crate::driver::{self, CudaContext};
use crate::error::Error;
use crate::kernels::Kernels;

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

/// Makes a handle for the context current on the calling thread (see
/// [`sys::cublasLtCreate`] for which contexts work).
#[doc(alias = "cublasLtCreate")]
pub fn create_handle() -> Result<sys::cublasLtHandle_t, CublasError> {
    let mut handle = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    match unsafe { sys::cublasLtCreate(&mut handle) } {
        cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(handle),
        status => Err(CublasError(status)),
    }
}

/// Destroys a handle made by [`create_handle`].
///
/// # Safety
/// `handle` must come from [`create_handle`], not be destroyed already, and not be in use.
#[doc(alias = "cublasLtDestroy")]
pub unsafe fn destroy_handle(handle: sys::cublasLtHandle_t) -> Result<(), CublasError> {
    // SAFETY: the caller's obligations, passed on.
    match unsafe { sys::cublasLtDestroy(handle) } {
        cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(()),
        status => Err(CublasError(status)),
    }
}

/// The handle `cublasLtCreate` makes: the kernels of the current context, which must be its
/// device's primary context. Failures are logged.
pub(crate) fn create_for_current_context() -> Result<sys::cublasLtHandle_t, CublasError> {
    let fail = |status: cublasStatus_t, why: String| {
        logger::log(logger::ERROR, "cublasLtCreate", || format!("{why}: {status:?}"));
        CublasError(status)
    };
    let not_initialized = cublasStatus_t::CUBLAS_STATUS_NOT_INITIALIZED;
    let current = match driver::result::ctx::get_current() {
        Ok(Some(ctx)) => ctx,
        Ok(None) => return Err(fail(not_initialized, "no CUDA context is current on this thread".into())),
        Err(e) => return Err(fail(not_initialized, format!("no usable CUDA driver ({e})"))),
    };
    let device = driver::result::ctx::get_device().map_err(|e| fail(not_initialized, e.to_string()))?;
    let count = driver::result::device::get_count().map_err(|e| fail(not_initialized, e.to_string()))?;
    let ordinal = (0..count)
        .find(|&i| driver::result::device::get(i).is_ok_and(|d| d == device))
        .ok_or_else(|| fail(not_initialized, "the current context's device is not listed".into()))?;
    let ordinal = usize::try_from(ordinal).map_err(|_| fail(not_initialized, "negative ordinal".into()))?;
    let context = CudaContext::new(ordinal).map_err(|e| fail(not_initialized, e.to_string()))?;
    if context.cu_ctx() != current {
        return Err(fail(
            cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED,
            "the current context is not its device's primary context".into(),
        ));
    }
    let kernels = Kernels::new(context).map_err(|e| {
        let status = CublasError::from(e).0;
        fail(status, "loading the built-in kernels failed".into())
    })?;
    Ok(Box::into_raw(Box::new(sys::cublasLtContext { kernels })))
}
