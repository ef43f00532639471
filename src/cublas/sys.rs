//! The cuBLAS types that callers name, with cuBLAS's numeric values and cudarc 0.19's names and
//! derives. Plain Rust enums (exhaustive matches compile). No cuBLAS library is behind them:
//! [`cublasHandle_t`] points at this crate's own handle ([`cublasContext`]).
//!
//! The functions are the cuBLAS entry points this crate's kernels implement (handles, streams,
//! pointer mode, the GEMM family, GEMV, ASUM, status names), each forwarding to its
//! `result` function and returning its status. cuBLAS routines with no
//! implementation here are absent (a call is a compile error, not a run-time surprise);
//! `scripts/cudarc-paths` lists them.
#![allow(non_camel_case_types, non_snake_case)] // cuBLAS's own names

use core::ffi::{c_char, c_int, c_longlong, c_void};
use std::ffi::CStr;

use super::result;
pub use super::result::cublasContext;
pub use crate::driver::sys::CUstream_st;

/// A cuBLAS handle: a pointer to this crate's handle, made by
/// [`create_handle`](super::result::create_handle).
pub type cublasHandle_t = *mut cublasContext;
/// A CUDA stream, as the runtime API names it (the same object as a driver `CUstream`).
pub type cudaStream_t = *mut CUstream_st;
/// `cudaDataType` under cuBLAS's name for it.
pub use self::cudaDataType as cublasDataType_t;
/// `cudaDataType_t` under its other name.
pub use self::cudaDataType_t as cudaDataType;

/// The status every cuBLAS call returns.
#[repr(u32)]
#[derive(Debug, Copy, Clone, Hash, PartialOrd, Ord, PartialEq, Eq)]
pub enum cublasStatus_t {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_ARCH_MISMATCH = 8,
    CUBLAS_STATUS_MAPPING_ERROR = 11,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_INTERNAL_ERROR = 14,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
    CUBLAS_STATUS_LICENSE_ERROR = 16,
}

/// How an operand is used: as stored, transposed, conjugate-transposed, conjugated.
#[repr(u32)]
#[derive(Debug, Copy, Clone, Hash, PartialOrd, Ord, PartialEq, Eq)]
pub enum cublasOperation_t {
    CUBLAS_OP_N = 0,
    CUBLAS_OP_T = 1,
    CUBLAS_OP_C = 2,
    CUBLAS_OP_CONJG = 3,
}

impl cublasOperation_t {
    /// cuBLAS's other name for `CUBLAS_OP_C`.
    pub const CUBLAS_OP_HERMITAN: cublasOperation_t = cublasOperation_t::CUBLAS_OP_C;
}

/// Where scalars (alpha, beta, results) live: host memory (the default) or device memory.
#[repr(u32)]
#[derive(Debug, Copy, Clone, Hash, PartialOrd, Ord, PartialEq, Eq)]
pub enum cublasPointerMode_t {
    CUBLAS_POINTER_MODE_HOST = 0,
    CUBLAS_POINTER_MODE_DEVICE = 1,
}

/// The compute type of `cublasGemmEx`-style calls (CUDA 13.0's list).
#[repr(u32)]
#[derive(Debug, Copy, Clone, Hash, PartialOrd, Ord, PartialEq, Eq)]
pub enum cublasComputeType_t {
    CUBLAS_COMPUTE_16F = 64,
    CUBLAS_COMPUTE_16F_PEDANTIC = 65,
    CUBLAS_COMPUTE_32F = 68,
    CUBLAS_COMPUTE_32F_PEDANTIC = 69,
    CUBLAS_COMPUTE_32F_FAST_16F = 74,
    CUBLAS_COMPUTE_32F_FAST_16BF = 75,
    CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
    CUBLAS_COMPUTE_32F_EMULATED_16BFX9 = 78,
    CUBLAS_COMPUTE_64F = 70,
    CUBLAS_COMPUTE_64F_PEDANTIC = 71,
    CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT = 79,
    CUBLAS_COMPUTE_32I = 72,
    CUBLAS_COMPUTE_32I_PEDANTIC = 73,
}

/// The algorithm hint of `cublasGemmEx`-style calls (CUDA 13.0's list). This crate accepts every
/// value and picks its kernel itself.
#[repr(i32)]
#[derive(Debug, Copy, Clone, Hash, PartialOrd, Ord, PartialEq, Eq)]
pub enum cublasGemmAlgo_t {
    CUBLAS_GEMM_DFALT = -1,
    CUBLAS_GEMM_ALGO0 = 0,
    CUBLAS_GEMM_ALGO1 = 1,
    CUBLAS_GEMM_ALGO2 = 2,
    CUBLAS_GEMM_ALGO3 = 3,
    CUBLAS_GEMM_ALGO4 = 4,
    CUBLAS_GEMM_ALGO5 = 5,
    CUBLAS_GEMM_ALGO6 = 6,
    CUBLAS_GEMM_ALGO7 = 7,
    CUBLAS_GEMM_ALGO8 = 8,
    CUBLAS_GEMM_ALGO9 = 9,
    CUBLAS_GEMM_ALGO10 = 10,
    CUBLAS_GEMM_ALGO11 = 11,
    CUBLAS_GEMM_ALGO12 = 12,
    CUBLAS_GEMM_ALGO13 = 13,
    CUBLAS_GEMM_ALGO14 = 14,
    CUBLAS_GEMM_ALGO15 = 15,
    CUBLAS_GEMM_ALGO16 = 16,
    CUBLAS_GEMM_ALGO17 = 17,
    CUBLAS_GEMM_ALGO18 = 18,
    CUBLAS_GEMM_ALGO19 = 19,
    CUBLAS_GEMM_ALGO20 = 20,
    CUBLAS_GEMM_ALGO21 = 21,
    CUBLAS_GEMM_ALGO22 = 22,
    CUBLAS_GEMM_ALGO23 = 23,
    CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99,
    CUBLAS_GEMM_ALGO0_TENSOR_OP = 100,
    CUBLAS_GEMM_ALGO1_TENSOR_OP = 101,
    CUBLAS_GEMM_ALGO2_TENSOR_OP = 102,
    CUBLAS_GEMM_ALGO3_TENSOR_OP = 103,
    CUBLAS_GEMM_ALGO4_TENSOR_OP = 104,
    CUBLAS_GEMM_ALGO5_TENSOR_OP = 105,
    CUBLAS_GEMM_ALGO6_TENSOR_OP = 106,
    CUBLAS_GEMM_ALGO7_TENSOR_OP = 107,
    CUBLAS_GEMM_ALGO8_TENSOR_OP = 108,
    CUBLAS_GEMM_ALGO9_TENSOR_OP = 109,
    CUBLAS_GEMM_ALGO10_TENSOR_OP = 110,
    CUBLAS_GEMM_ALGO11_TENSOR_OP = 111,
    CUBLAS_GEMM_ALGO12_TENSOR_OP = 112,
    CUBLAS_GEMM_ALGO13_TENSOR_OP = 113,
    CUBLAS_GEMM_ALGO14_TENSOR_OP = 114,
    CUBLAS_GEMM_ALGO15_TENSOR_OP = 115,
    CUBLAS_GEMM_AUTOTUNE = 999,
}

impl cublasGemmAlgo_t {
    /// cuBLAS's newer name for `CUBLAS_GEMM_DFALT`.
    pub const CUBLAS_GEMM_DEFAULT: cublasGemmAlgo_t = cublasGemmAlgo_t::CUBLAS_GEMM_DFALT;
    /// cuBLAS's older name for `CUBLAS_GEMM_DEFAULT_TENSOR_OP`.
    pub const CUBLAS_GEMM_DFALT_TENSOR_OP: cublasGemmAlgo_t = cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT_TENSOR_OP;
}

/// Element types (CUDA 13.0's list).
#[repr(u32)]
#[derive(Debug, Copy, Clone, Hash, PartialOrd, Ord, PartialEq, Eq)]
pub enum cudaDataType_t {
    CUDA_R_16F = 2,
    CUDA_C_16F = 6,
    CUDA_R_16BF = 14,
    CUDA_C_16BF = 15,
    CUDA_R_32F = 0,
    CUDA_C_32F = 4,
    CUDA_R_64F = 1,
    CUDA_C_64F = 5,
    CUDA_R_4I = 16,
    CUDA_C_4I = 17,
    CUDA_R_4U = 18,
    CUDA_C_4U = 19,
    CUDA_R_8I = 3,
    CUDA_C_8I = 7,
    CUDA_R_8U = 8,
    CUDA_C_8U = 9,
    CUDA_R_16I = 20,
    CUDA_C_16I = 21,
    CUDA_R_16U = 22,
    CUDA_C_16U = 23,
    CUDA_R_32I = 10,
    CUDA_C_32I = 11,
    CUDA_R_32U = 12,
    CUDA_C_32U = 13,
    CUDA_R_64I = 24,
    CUDA_C_64I = 25,
    CUDA_R_64U = 26,
    CUDA_C_64U = 27,
    CUDA_R_8F_E4M3 = 28,
    CUDA_R_8F_E5M2 = 29,
    CUDA_R_8F_UE8M0 = 30,
    CUDA_R_6F_E2M3 = 31,
    CUDA_R_6F_E3M2 = 32,
    CUDA_R_4F_E2M1 = 33,
}

impl cudaDataType_t {
    /// The other name of `CUDA_R_8F_E4M3`.
    pub const CUDA_R_8F_UE4M3: cudaDataType_t = cudaDataType_t::CUDA_R_8F_E4M3;
}

/// The status of a `result` call.
fn code(r: Result<(), result::CublasError>) -> cublasStatus_t {
    match r {
        Ok(()) => cublasStatus_t::CUBLAS_STATUS_SUCCESS,
        Err(result::CublasError(status)) => status,
    }
}

/// Makes a handle and writes it to `*handle`: unbound, as [`result::create_handle`] (products on
/// it are `CUBLAS_STATUS_NOT_INITIALIZED` until it is bound to a stream, which
/// [`CudaBlas::new`](super::CudaBlas::new) does).
///
/// # Safety
/// `handle` must be null (`CUBLAS_STATUS_INVALID_VALUE`) or writable.
#[doc(alias = "create_handle")]
pub unsafe fn cublasCreate_v2(handle: *mut cublasHandle_t) -> cublasStatus_t {
    if handle.is_null() {
        return cublasStatus_t::CUBLAS_STATUS_INVALID_VALUE;
    }
    match result::create_handle() {
        Ok(h) => {
            // SAFETY: not null, and writable by the caller's contract.
            unsafe { handle.write(h) };
            cublasStatus_t::CUBLAS_STATUS_SUCCESS
        }
        Err(result::CublasError(status)) => status,
    }
}

/// Destroys a handle, as [`result::destroy_handle`].
///
/// # Safety
/// As [`result::destroy_handle`].
pub unsafe fn cublasDestroy_v2(handle: cublasHandle_t) -> cublasStatus_t {
    // SAFETY: the caller's obligations, passed on.
    code(unsafe { result::destroy_handle(handle) })
}

/// Orders the handle's later work on `streamId`, as [`result::set_stream`].
///
/// # Safety
/// As [`result::set_stream`].
pub unsafe fn cublasSetStream_v2(handle: cublasHandle_t, streamId: cudaStream_t) -> cublasStatus_t {
    // SAFETY: the caller's obligations, passed on.
    code(unsafe { result::set_stream(handle, streamId) })
}

/// Writes the stream the handle's work is ordered on to `*streamId`
/// (`CUBLAS_STATUS_NOT_INITIALIZED` for a handle not bound to one).
///
/// # Safety
/// `handle` must be null or a live handle; `streamId` null (`CUBLAS_STATUS_INVALID_VALUE`) or
/// writable.
pub unsafe fn cublasGetStream_v2(handle: cublasHandle_t, streamId: *mut cudaStream_t) -> cublasStatus_t {
    if streamId.is_null() {
        return cublasStatus_t::CUBLAS_STATUS_INVALID_VALUE;
    }
    // SAFETY: the caller vouches for `handle`.
    match unsafe { result::get_stream(handle) } {
        Ok(stream) => {
            // SAFETY: not null, and writable by the caller's contract.
            unsafe { streamId.write(stream) };
            cublasStatus_t::CUBLAS_STATUS_SUCCESS
        }
        Err(result::CublasError(status)) => status,
    }
}

/// Sets where scalars live, as [`result::set_pointer_mode`].
///
/// # Safety
/// As [`result::set_pointer_mode`].
pub unsafe fn cublasSetPointerMode_v2(handle: cublasHandle_t, mode: cublasPointerMode_t) -> cublasStatus_t {
    // SAFETY: the caller's obligations, passed on.
    code(unsafe { result::set_pointer_mode(handle, mode) })
}

/// Writes where scalars live to `*mode`, as [`result::get_pointer_mode`].
///
/// # Safety
/// `handle` must be null or a live handle; `mode` null (`CUBLAS_STATUS_INVALID_VALUE`) or
/// writable.
pub unsafe fn cublasGetPointerMode_v2(
    handle: cublasHandle_t,
    mode: *mut cublasPointerMode_t,
) -> cublasStatus_t {
    if mode.is_null() {
        return cublasStatus_t::CUBLAS_STATUS_INVALID_VALUE;
    }
    // SAFETY: the caller vouches for `handle`.
    match unsafe { result::get_pointer_mode(handle) } {
        Ok(m) => {
            // SAFETY: not null, and writable by the caller's contract.
            unsafe { mode.write(m) };
            cublasStatus_t::CUBLAS_STATUS_SUCCESS
        }
        Err(result::CublasError(status)) => status,
    }
}

/// The typed GEMM of one element type, forwarding to its `result` function.
macro_rules! typed_gemm {
    ($(#[$doc:meta])* $name:ident => $target:ident, $t:ty) => {
        $(#[$doc])*
        ///
        /// # Safety
        #[doc = concat!("As [`result::", stringify!($target), "`].")]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $name(
            handle: cublasHandle_t,
            transa: cublasOperation_t,
            transb: cublasOperation_t,
            m: c_int,
            n: c_int,
            k: c_int,
            alpha: *const $t,
            A: *const $t,
            lda: c_int,
            B: *const $t,
            ldb: c_int,
            beta: *const $t,
            C: *mut $t,
            ldc: c_int,
        ) -> cublasStatus_t {
            // SAFETY: the caller's obligations, passed on.
            code(unsafe { result::$target(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc) })
        }
    };
}

typed_gemm!(
    /// Single precision GEMM, as [`result::sgemm`].
    cublasSgemm_v2 => sgemm, f32
);
typed_gemm!(
    /// Double precision GEMM, as [`result::dgemm`].
    cublasDgemm_v2 => dgemm, f64
);

/// GEMM with the element and compute types as arguments, as [`result::gemm_ex`] (which lists
/// the supported combinations; the others are `CUBLAS_STATUS_NOT_SUPPORTED`).
///
/// # Safety
/// As [`result::gemm_ex`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn cublasGemmEx(
    handle: cublasHandle_t,
    transa: cublasOperation_t,
    transb: cublasOperation_t,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const c_void,
    A: *const c_void,
    Atype: cudaDataType,
    lda: c_int,
    B: *const c_void,
    Btype: cudaDataType,
    ldb: c_int,
    beta: *const c_void,
    C: *mut c_void,
    Ctype: cudaDataType,
    ldc: c_int,
    computeType: cublasComputeType_t,
    algo: cublasGemmAlgo_t,
) -> cublasStatus_t {
    // SAFETY: the caller's obligations, passed on.
    code(unsafe {
        result::gemm_ex(
            handle,
            transa,
            transb,
            m,
            n,
            k,
            alpha,
            A,
            Atype,
            lda,
            B,
            Btype,
            ldb,
            beta,
            C,
            Ctype,
            ldc,
            computeType,
            algo,
        )
    })
}

/// The typed strided batched GEMM of one element type, forwarding to its `result` function.
macro_rules! typed_strided_batched {
    ($(#[$doc:meta])* $name:ident => $target:ident, $t:ty) => {
        $(#[$doc])*
        ///
        /// # Safety
        #[doc = concat!("As [`result::", stringify!($target), "`].")]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $name(
            handle: cublasHandle_t,
            transa: cublasOperation_t,
            transb: cublasOperation_t,
            m: c_int,
            n: c_int,
            k: c_int,
            alpha: *const $t,
            A: *const $t,
            lda: c_int,
            strideA: c_longlong,
            B: *const $t,
            ldb: c_int,
            strideB: c_longlong,
            beta: *const $t,
            C: *mut $t,
            ldc: c_int,
            strideC: c_longlong,
            batchCount: c_int,
        ) -> cublasStatus_t {
            // SAFETY: the caller's obligations, passed on.
            code(unsafe {
                result::$target(
                    handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,
                    batchCount,
                )
            })
        }
    };
}

typed_strided_batched!(
    /// Single precision strided batched GEMM, as [`result::sgemm_strided_batched`].
    cublasSgemmStridedBatched => sgemm_strided_batched, f32
);
typed_strided_batched!(
    /// Double precision strided batched GEMM, as [`result::dgemm_strided_batched`].
    cublasDgemmStridedBatched => dgemm_strided_batched, f64
);

/// Strided batched GEMM with the element and compute types as arguments, as
/// [`result::gemm_strided_batched_ex`].
///
/// # Safety
/// As [`result::gemm_strided_batched_ex`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn cublasGemmStridedBatchedEx(
    handle: cublasHandle_t,
    transa: cublasOperation_t,
    transb: cublasOperation_t,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const c_void,
    A: *const c_void,
    Atype: cudaDataType,
    lda: c_int,
    strideA: c_longlong,
    B: *const c_void,
    Btype: cudaDataType,
    ldb: c_int,
    strideB: c_longlong,
    beta: *const c_void,
    C: *mut c_void,
    Ctype: cudaDataType,
    ldc: c_int,
    strideC: c_longlong,
    batchCount: c_int,
    computeType: cublasComputeType_t,
    algo: cublasGemmAlgo_t,
) -> cublasStatus_t {
    // SAFETY: the caller's obligations, passed on.
    code(unsafe {
        result::gemm_strided_batched_ex(
            handle,
            transa,
            transb,
            m,
            n,
            k,
            alpha,
            A,
            Atype,
            lda,
            strideA,
            B,
            Btype,
            ldb,
            strideB,
            beta,
            C,
            Ctype,
            ldc,
            strideC,
            batchCount,
            computeType,
            algo,
        )
    })
}

/// The typed GEMV and ASUM of one element type, forwarding to their `result` functions.
macro_rules! typed_gemv_asum {
    ($gemv:ident => $gemv_target:ident, $asum:ident => $asum_target:ident, $t:ty, $precision:literal) => {
        #[doc = concat!($precision, " precision matrix-vector product, as [`result::", stringify!($gemv_target), "`].")]
        ///
        /// # Safety
        #[doc = concat!("As [`result::", stringify!($gemv_target), "`].")]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $gemv(
            handle: cublasHandle_t,
            trans: cublasOperation_t,
            m: c_int,
            n: c_int,
            alpha: *const $t,
            A: *const $t,
            lda: c_int,
            x: *const $t,
            incx: c_int,
            beta: *const $t,
            y: *mut $t,
            incy: c_int,
        ) -> cublasStatus_t {
            // SAFETY: the caller's obligations, passed on.
            code(unsafe { result::$gemv_target(handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy) })
        }

        #[doc = concat!("Sum of absolute values, ", $precision, " precision, as [`result::", stringify!($asum_target), "`].")]
        ///
        /// # Safety
        #[doc = concat!("As [`result::", stringify!($asum_target), "`].")]
        pub unsafe fn $asum(handle: cublasHandle_t, n: c_int, x: *const $t, incx: c_int, result: *mut $t) -> cublasStatus_t {
            // SAFETY: the caller's obligations, passed on.
            code(unsafe { result::$asum_target(handle, n, x, incx, result) })
        }
    };
}

typed_gemv_asum!(cublasSgemv_v2 => sgemv, cublasSasum_v2 => sasum, f32, "Single");
typed_gemv_asum!(cublasDgemv_v2 => dgemv, cublasDasum_v2 => dasum, f64, "Double");

/// The status's name and a sentence describing it (this crate's wording), as static C strings.
fn describe(status: cublasStatus_t) -> (&'static CStr, &'static CStr) {
    use cublasStatus_t as S;
    match status {
        S::CUBLAS_STATUS_SUCCESS => (c"CUBLAS_STATUS_SUCCESS", c"success"),
        S::CUBLAS_STATUS_NOT_INITIALIZED => {
            (c"CUBLAS_STATUS_NOT_INITIALIZED", c"the handle is null or not bound to a stream")
        }
        S::CUBLAS_STATUS_ALLOC_FAILED => (c"CUBLAS_STATUS_ALLOC_FAILED", c"a device allocation failed"),
        S::CUBLAS_STATUS_INVALID_VALUE => (c"CUBLAS_STATUS_INVALID_VALUE", c"an argument is out of range"),
        S::CUBLAS_STATUS_ARCH_MISMATCH => {
            (c"CUBLAS_STATUS_ARCH_MISMATCH", c"the device lacks a feature the operation needs")
        }
        S::CUBLAS_STATUS_MAPPING_ERROR => {
            (c"CUBLAS_STATUS_MAPPING_ERROR", c"device memory could not be accessed")
        }
        S::CUBLAS_STATUS_EXECUTION_FAILED => {
            (c"CUBLAS_STATUS_EXECUTION_FAILED", c"a kernel failed to launch or to run")
        }
        S::CUBLAS_STATUS_INTERNAL_ERROR => (c"CUBLAS_STATUS_INTERNAL_ERROR", c"an internal operation failed"),
        S::CUBLAS_STATUS_NOT_SUPPORTED => {
            (c"CUBLAS_STATUS_NOT_SUPPORTED", c"this combination of arguments is not supported")
        }
        S::CUBLAS_STATUS_LICENSE_ERROR => (c"CUBLAS_STATUS_LICENSE_ERROR", c"a license check failed"),
    }
}

/// The status's name (`"CUBLAS_STATUS_SUCCESS"`, ...), a static C string.
///
/// # Safety
/// None beyond the signature: `unsafe` as every cuBLAS entry point in cudarc's `sys`.
pub unsafe fn cublasGetStatusName(status: cublasStatus_t) -> *const c_char {
    describe(status).0.as_ptr()
}

/// A sentence describing the status (this crate's wording), a static C string.
///
/// # Safety
/// None beyond the signature: `unsafe` as every cuBLAS entry point in cudarc's `sys`.
pub unsafe fn cublasGetStatusString(status: cublasStatus_t) -> *const c_char {
    describe(status).1.as_ptr()
}
