//! The cudarc-shaped `sys` entry points of cublas, cublaslt, curand, nvrtc, nccl and the driver,
//! on the CPU: the statuses they return for null arguments and for handles not bound to a stream,
//! what they read back, and the strings they give with or without the NVIDIA library behind them.
#![cfg(not(feature = "legacy-gpu"))] // our entry points, not the real libraries'

use std::ffi::CStr;
use std::ptr::{null, null_mut};

/// The C string at `p` (not null).
///
/// # Safety
/// `p` must be a C string that lives for `'static`.
unsafe fn text(p: *const std::ffi::c_char) -> &'static str {
    assert!(!p.is_null());
    // SAFETY: the caller's obligation.
    unsafe { CStr::from_ptr(p) }.to_str().unwrap()
}

#[cfg(feature = "cublas")]
#[test]
fn cublas_handles_pointer_mode_unbound_calls_and_status_names() {
    use cublasStatus_t::*;
    use prism_gpu::cublas::sys::*;
    // SAFETY: every pointer passed is null (where the function checks for it), a live local, or the
    // live handle made here; products on the unbound handle fail before reading their operands.
    unsafe {
        assert_eq!(cublasCreate_v2(null_mut()), CUBLAS_STATUS_INVALID_VALUE);
        let mut handle = null_mut();
        assert_eq!(cublasCreate_v2(&mut handle), CUBLAS_STATUS_SUCCESS);
        assert!(!handle.is_null());

        let mut mode = cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE;
        assert_eq!(cublasGetPointerMode_v2(handle, &mut mode), CUBLAS_STATUS_SUCCESS);
        assert_eq!(mode, cublasPointerMode_t::CUBLAS_POINTER_MODE_HOST, "host mode by default");
        assert_eq!(
            cublasSetPointerMode_v2(handle, cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE),
            CUBLAS_STATUS_SUCCESS
        );
        assert_eq!(cublasGetPointerMode_v2(handle, &mut mode), CUBLAS_STATUS_SUCCESS);
        assert_eq!(mode, cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE);
        assert_eq!(cublasGetPointerMode_v2(handle, null_mut()), CUBLAS_STATUS_INVALID_VALUE);
        assert_eq!(
            cublasSetPointerMode_v2(handle, cublasPointerMode_t::CUBLAS_POINTER_MODE_HOST),
            CUBLAS_STATUS_SUCCESS
        );

        // Not bound to a stream: no stream to give, none can be set, nothing computes.
        let mut stream = null_mut();
        assert_eq!(cublasGetStream_v2(handle, &mut stream), CUBLAS_STATUS_NOT_INITIALIZED);
        assert_eq!(cublasGetStream_v2(handle, null_mut()), CUBLAS_STATUS_INVALID_VALUE);
        assert_eq!(cublasSetStream_v2(handle, null_mut()), CUBLAS_STATUS_NOT_INITIALIZED);
        let (alpha, beta) = (1.0f32, 0.0f32);
        let op = cublasOperation_t::CUBLAS_OP_N;
        let status =
            cublasSgemm_v2(handle, op, op, 2, 2, 2, &alpha, null(), 2, null(), 2, &beta, null_mut(), 2);
        assert_eq!(status, CUBLAS_STATUS_NOT_INITIALIZED);
        let mut sum = 0.0f64;
        assert_eq!(cublasDasum_v2(handle, 4, null(), 1, &mut sum), CUBLAS_STATUS_NOT_INITIALIZED);

        assert_eq!(cublasDestroy_v2(handle), CUBLAS_STATUS_SUCCESS);
        assert_eq!(cublasDestroy_v2(null_mut()), CUBLAS_STATUS_NOT_INITIALIZED);

        for status in [CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_NOT_SUPPORTED, CUBLAS_STATUS_INVALID_VALUE] {
            assert_eq!(text(cublasGetStatusName(status)), format!("{status:?}"));
            let sentence = text(cublasGetStatusString(status));
            assert!(!sentence.is_empty() && !sentence.starts_with("CUBLAS_"), "{sentence}");
        }
    }
}

#[cfg(feature = "cublaslt")]
#[test]
fn cublaslt_handles_need_a_context_and_share_status_names() {
    use cublasStatus_t::*;
    use prism_gpu::cublaslt::{result, sys::*};
    // SAFETY: null or live out-pointers; static strings.
    unsafe {
        assert_eq!(cublasLtCreate(null_mut()), CUBLAS_STATUS_INVALID_VALUE);
        // No context is current on a test's thread.
        let mut handle = null_mut();
        assert_eq!(cublasLtCreate(&mut handle), CUBLAS_STATUS_NOT_INITIALIZED);
        assert!(handle.is_null());
        assert_eq!(result::create_handle().unwrap_err(), result::CublasError(CUBLAS_STATUS_NOT_INITIALIZED));
        assert_eq!(cublasLtDestroy(null_mut()), CUBLAS_STATUS_NOT_INITIALIZED);
        assert_eq!(text(cublasLtGetStatusName(CUBLAS_STATUS_ALLOC_FAILED)), "CUBLAS_STATUS_ALLOC_FAILED");
        assert_eq!(
            text(cublasLtGetStatusString(CUBLAS_STATUS_ALLOC_FAILED)),
            text(prism_gpu::cublas::sys::cublasGetStatusString(CUBLAS_STATUS_ALLOC_FAILED))
        );
    }
}

#[cfg(feature = "curand")]
#[test]
fn curand_generators_types_and_unbound_fills() {
    use curandStatus_t::*;
    use prism_gpu::curand::sys::*;
    // SAFETY: null or live out-pointers, the live generator made here; fills on the unbound
    // generator fail before writing.
    unsafe {
        let mut generator = null_mut();
        assert_eq!(
            curandCreateGenerator(&mut generator, curandRngType_t::CURAND_RNG_QUASI_SOBOL32),
            CURAND_STATUS_TYPE_ERROR
        );
        assert!(generator.is_null());
        assert_eq!(
            curandCreateGenerator(null_mut(), curandRngType_t::CURAND_RNG_PSEUDO_DEFAULT),
            CURAND_STATUS_NOT_INITIALIZED
        );
        assert_eq!(
            curandCreateGenerator(&mut generator, curandRngType_t::CURAND_RNG_PSEUDO_XORWOW),
            CURAND_STATUS_SUCCESS
        );
        assert!(!generator.is_null());
        assert_eq!(curandSetPseudoRandomGeneratorSeed(generator, 42), CURAND_STATUS_SUCCESS);
        assert_eq!(curandSetGeneratorOffset(generator, 7), CURAND_STATUS_SUCCESS);
        assert_eq!(curandSetStream(generator, null_mut()), CURAND_STATUS_NOT_INITIALIZED);
        assert_eq!(curandGenerateUniform(generator, null_mut(), 4), CURAND_STATUS_NOT_INITIALIZED);
        assert_eq!(
            curandGenerateNormalDouble(generator, null_mut(), 3, 0.0, 1.0),
            CURAND_STATUS_NOT_INITIALIZED
        );
        assert_eq!(curandDestroyGenerator(generator), CURAND_STATUS_SUCCESS);
        assert_eq!(curandDestroyGenerator(null_mut()), CURAND_STATUS_NOT_INITIALIZED);
        assert_eq!(curandSetPseudoRandomGeneratorSeed(null_mut(), 1), CURAND_STATUS_NOT_INITIALIZED);
    }
}

#[test]
fn nvrtc_and_driver_report_their_library() {
    use prism_gpu::nvrtc::sys::*;
    // SAFETY: live out-pointers; static strings.
    unsafe {
        assert_eq!(is_culib_present(), prism_gpu::sys::nvrtc_library().is_ok());
        assert_eq!(prism_gpu::driver::sys::is_culib_present(), prism_gpu::sys::driver_library().is_ok());
        let description = text(nvrtcGetErrorString(nvrtcResult::NVRTC_ERROR_COMPILATION));
        let (mut major, mut minor) = (0, 0);
        let status = nvrtcVersion(&mut major, &mut minor);
        if is_culib_present() {
            assert_eq!(status, nvrtcResult::NVRTC_SUCCESS);
            assert!(major >= 11, "{major}.{minor}");
            assert!(!description.is_empty());
        } else {
            println!("no NVRTC library here: checking the answers without one");
            assert_eq!(status, nvrtcResult::NVRTC_ERROR_PROGRAM_CREATION_FAILURE);
            assert_eq!(description, "no NVRTC library is loaded to describe this code");
        }
    }
}

#[cfg(feature = "nccl")]
#[test]
fn nccl_strings_with_or_without_the_library() {
    use prism_gpu::nccl::sys::*;
    // SAFETY: a null communicator (allowed by ncclGetLastError); static strings.
    unsafe {
        let description = text(ncclGetErrorString(ncclResult_t::ncclInvalidArgument));
        let last = ncclGetLastError(null_mut());
        ncclResetDebugInit();
        if is_culib_present() {
            assert!(!description.is_empty());
        } else {
            println!("no NCCL library here: checking the answers without one");
            assert_eq!(description, "no NCCL library is loaded to describe this code");
            assert_eq!(text(last), "no NCCL library is loaded");
        }
    }
}
