//! The cuBLASLt types cudarc's `cublaslt::sys` names that this crate's cuBLASLt uses, and the
//! entry points it implements: handles ([`cublasLtCreate`], [`cublasLtDestroy`]), status names,
//! and the logger (`cublasLtLogger*`, which logs this crate's cuBLASLt calls). The status, data
//! and compute types are cuBLAS's (the same enums as [`crate::cublas::sys`]).
//!
//! cuBLASLt's descriptor API (`cublasLtMatmulDesc*`, `cublasLtMatrixLayout*`,
//! `cublasLtMatmulPreference*`, the heuristics and `cublasLtMatmul`) and its types are absent: the
//! safe [`Matmul`](super::Matmul) runs the built-in kernels directly. `scripts/cudarc-paths` lists
//! what is left out.
#![allow(non_camel_case_types, non_snake_case)] // cuBLASLt's own names

use core::ffi::{c_char, c_int};
use std::ffi::CStr;

use super::logger;
pub use crate::cublas::sys::{
    cublasComputeType_t, cublasStatus_t, cudaDataType, cudaDataType_t, cudaStream_t, CUstream_st,
};

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

/// A C standard I/O stream (`FILE`), opaque here: only pointers to it cross this API.
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct _IO_FILE {
    _opaque: [u8; 0],
}
/// A C standard I/O stream.
pub type FILE = _IO_FILE;

/// A logger callback: the level, the function's name and the message, as C strings.
pub type cublasLtLoggerCallback_t =
    Option<unsafe extern "C" fn(logLevel: c_int, functionName: *const c_char, message: *const c_char)>;

/// Makes a handle for the context current on the calling thread and writes it to
/// `*lightHandle`. That context must be a device's primary context (the one
/// [`CudaContext::new`](crate::driver::CudaContext::new) wraps): another context is
/// `CUBLAS_STATUS_NOT_SUPPORTED`, none (or no driver) `CUBLAS_STATUS_NOT_INITIALIZED`.
///
/// # Safety
/// `lightHandle` must be null (`CUBLAS_STATUS_INVALID_VALUE`) or writable.
pub unsafe fn cublasLtCreate(lightHandle: *mut cublasLtHandle_t) -> cublasStatus_t {
    logger::log(logger::API, "cublasLtCreate", || format!("lightHandle={lightHandle:p}"));
    if lightHandle.is_null() {
        logger::log(logger::ERROR, "cublasLtCreate", || "lightHandle is null".to_owned());
        return cublasStatus_t::CUBLAS_STATUS_INVALID_VALUE;
    }
    match super::result::create_for_current_context() {
        Ok(handle) => {
            // SAFETY: not null, and writable by the caller's contract.
            unsafe { lightHandle.write(handle) };
            cublasStatus_t::CUBLAS_STATUS_SUCCESS
        }
        Err(super::result::CublasError(status)) => status,
    }
}

/// Destroys a handle made by [`cublasLtCreate`] (null: `CUBLAS_STATUS_NOT_INITIALIZED`).
///
/// # Safety
/// `lightHandle` must be null or come from [`cublasLtCreate`], not be destroyed already, and not
/// be in use.
pub unsafe fn cublasLtDestroy(lightHandle: cublasLtHandle_t) -> cublasStatus_t {
    logger::log(logger::API, "cublasLtDestroy", || format!("lightHandle={lightHandle:p}"));
    if lightHandle.is_null() {
        return cublasStatus_t::CUBLAS_STATUS_NOT_INITIALIZED;
    }
    // SAFETY: made by `Box::into_raw` in `cublasLtCreate`; the caller hands it back once.
    drop(unsafe { Box::from_raw(lightHandle) });
    cublasStatus_t::CUBLAS_STATUS_SUCCESS
}

/// The status's name (`"CUBLAS_STATUS_SUCCESS"`, ...), a static C string.
///
/// # Safety
/// None beyond the signature: `unsafe` as every cuBLASLt entry point in cudarc's `sys`.
pub unsafe fn cublasLtGetStatusName(status: cublasStatus_t) -> *const c_char {
    // SAFETY: no requirement.
    unsafe { crate::cublas::sys::cublasGetStatusName(status) }
}

/// A sentence describing the status (this crate's wording), a static C string.
///
/// # Safety
/// None beyond the signature: `unsafe` as every cuBLASLt entry point in cudarc's `sys`.
pub unsafe fn cublasLtGetStatusString(status: cublasStatus_t) -> *const c_char {
    // SAFETY: no requirement.
    unsafe { crate::cublas::sys::cublasGetStatusString(status) }
}

/// Turns on the first `level` log levels (0 off, 1 errors, 2 trace, 3 hints, 4 info, 5 API
/// trace); another value is `CUBLAS_STATUS_INVALID_VALUE`. See the logger's rules at
/// [`cublasLtLoggerOpenFile`].
///
/// # Safety
/// None beyond the signature: `unsafe` as every cuBLASLt entry point in cudarc's `sys`.
pub unsafe fn cublasLtLoggerSetLevel(level: c_int) -> cublasStatus_t {
    logger::set_level(level)
}

/// Turns on the log levels whose bits are set in `mask` (1 errors, 2 trace, 4 hints, 8 info, 16
/// API trace); a mask outside `0..=31` is `CUBLAS_STATUS_INVALID_VALUE`.
///
/// # Safety
/// None beyond the signature: `unsafe` as every cuBLASLt entry point in cudarc's `sys`.
pub unsafe fn cublasLtLoggerSetMask(mask: c_int) -> cublasStatus_t {
    logger::set_mask(mask)
}

/// Turns logging off for the rest of the process (later levels and masks are accepted and
/// ignored).
///
/// # Safety
/// None beyond the signature: `unsafe` as every cuBLASLt entry point in cudarc's `sys`.
pub unsafe fn cublasLtLoggerForceDisable() -> cublasStatus_t {
    logger::force_disable()
}

/// Hands every message to `callback` as well (`None` removes it). While a callback is set and no
/// file is, nothing is written to standard output.
///
/// # Safety
/// `callback`, if any, must be sound to call from any thread with a level and two C strings
/// that live for the call.
pub unsafe fn cublasLtLoggerSetCallback(callback: cublasLtLoggerCallback_t) -> cublasStatus_t {
    logger::set_callback(callback)
}

/// Writes the log to the file at `logFile` (created, or truncated). Messages are lines
/// `[cublasLt][<pid>][<level>][<function>] <message>`; this crate logs its cuBLASLt calls:
/// handles made and destroyed (API trace), each matmul with its shape and types (API trace and
/// trace), and the errors they return. A null path, or one that cannot be opened, is
/// `CUBLAS_STATUS_INVALID_VALUE`. Until a file is given, the log goes to standard output (unless
/// a callback is set).
///
/// # Safety
/// `logFile` must be null or a C string.
pub unsafe fn cublasLtLoggerOpenFile(logFile: *const c_char) -> cublasStatus_t {
    if logFile.is_null() {
        return cublasStatus_t::CUBLAS_STATUS_INVALID_VALUE;
    }
    // SAFETY: a C string, by the caller's contract.
    logger::open_file(unsafe { CStr::from_ptr(logFile) })
}

/// Writes the log to an open C stream (`fputs`, flushed after each message) instead of a file;
/// null is `CUBLAS_STATUS_INVALID_VALUE`.
///
/// # Safety
/// `file` must be an open stream that stays open until another output is set.
pub unsafe fn cublasLtLoggerSetFile(file: *mut FILE) -> cublasStatus_t {
    // SAFETY: the caller's obligation, passed on.
    unsafe { logger::set_file(file) }
}
