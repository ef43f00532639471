//! The cudarc-shaped `sys` entry points on a GPU: cuBLAS products through a bound handle
//! (`cublasSgemm_v2`, `cublasDgemmStridedBatched`, `cublasSasum_v2`) against an f64 reference
//! written here, `cublasGetStream_v2`, `cublasLtCreate` on the current primary context, the
//! cuBLASLt logger's trace of a matmul, and NVRTC's free functions.
#![cfg(not(feature = "legacy-gpu"))] // our entry points, not the real libraries'

use std::ffi::CStr;
use std::ptr::null_mut;

use prism_gpu::driver::{CudaContext, DevicePtr, DevicePtrMut};
use prism_gpu::rng::SplitMix64;

#[cfg(feature = "cublaslt")]
mod cublaslt_common;

fn random(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix64::new(seed);
    (0..n).map(|_| f64::from(rng.uniform(-1.0, 1.0))).collect()
}

/// Column-major `C = A B` (A m x k, B k x n), in f64.
fn reference(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for j in 0..n {
        for i in 0..m {
            c[i + j * m] = (0..k).map(|p| a[i + p * m] * b[p + j * k]).sum();
        }
    }
    c
}

#[cfg(feature = "cublas")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn cublas_sys_products_on_a_bound_handle() {
    use cublasStatus_t::CUBLAS_STATUS_SUCCESS as OK;
    use prism_gpu::cublas::sys::*;
    use prism_gpu::cublas::CudaBlas;

    let stream = CudaContext::new(0).unwrap().default_stream();
    let blas = CudaBlas::new(stream.clone()).unwrap();
    let handle = *blas.handle();
    let (m, n, k) = (7usize, 5usize, 9usize);
    let op = cublasOperation_t::CUBLAS_OP_N;

    // SAFETY: live out-pointer.
    let mut got = null_mut();
    assert_eq!(unsafe { cublasGetStream_v2(handle, &mut got) }, OK);
    assert_eq!(got, stream.cu_stream());

    // f32 GEMM.
    let (a, b) = (random(m * k, 1), random(k * n, 2));
    let a32: Vec<f32> = a.iter().map(|&x| x as f32).collect();
    let b32: Vec<f32> = b.iter().map(|&x| x as f32).collect();
    let da = stream.clone_htod(&a32).unwrap();
    let db = stream.clone_htod(&b32).unwrap();
    let mut dc = stream.clone_htod(&vec![f32::NAN; m * n]).unwrap();
    let (alpha, beta) = (1.0f32, 0.0f32);
    {
        let (pa, _ga) = da.device_ptr(&stream);
        let (pb, _gb) = db.device_ptr(&stream);
        let (pc, _gc) = dc.device_ptr_mut(&stream);
        let (m, n, k) = (m as i32, n as i32, k as i32);
        // SAFETY: device buffers of the handle's context holding m x k, k x n and m x n elements;
        // host scalars (host pointer mode); beta 0 ignores C's NaNs.
        let status = unsafe {
            cublasSgemm_v2(handle, op, op, m, n, k, &alpha, pa as _, m, pb as _, k, &beta, pc as _, m)
        };
        assert_eq!(status, OK);
    }
    let c = stream.clone_dtoh(&dc).unwrap();
    for (got, want) in c.iter().zip(reference(&a, &b, m, n, k)) {
        assert!((*got as f64 - want).abs() <= 1e-5 * (1.0 + want.abs()), "{got} vs {want}");
    }

    // f64 strided batch of 3, B shared (stride 0).
    let batch = 3usize;
    let a = random(m * k * batch, 3);
    let da = stream.clone_htod(&a).unwrap();
    let db = stream.clone_htod(&b).unwrap();
    let mut dc = stream.clone_htod(&vec![f64::NAN; m * n * batch]).unwrap();
    let (alpha, beta) = (1.0f64, 0.0f64);
    {
        let (pa, _ga) = da.device_ptr(&stream);
        let (pb, _gb) = db.device_ptr(&stream);
        let (pc, _gc) = dc.device_ptr_mut(&stream);
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        let (sa, sc) = ((m * k) as i64, (m * n) as i64);
        // SAFETY: as above, for every batch entry (B read by all of them).
        let status = unsafe {
            cublasDgemmStridedBatched(
                handle,
                op,
                op,
                mi,
                ni,
                ki,
                &alpha,
                pa as _,
                mi,
                sa,
                pb as _,
                ki,
                0,
                &beta,
                pc as _,
                mi,
                sc,
                batch as i32,
            )
        };
        assert_eq!(status, OK);
    }
    let c = stream.clone_dtoh(&dc).unwrap();
    for z in 0..batch {
        let want = reference(&a[z * m * k..(z + 1) * m * k], &b, m, n, k);
        for (got, want) in c[z * m * n..(z + 1) * m * n].iter().zip(want) {
            assert!((got - want).abs() <= 1e-12 * (1.0 + want.abs()), "{got} vs {want}");
        }
    }

    // ASUM into host memory.
    let x = random(1000, 4);
    let dx = stream.clone_htod(&x.iter().map(|&v| v as f32).collect::<Vec<f32>>()).unwrap();
    let mut sum = f32::NAN;
    {
        let (px, _gx) = dx.device_ptr(&stream);
        // SAFETY: 1000 device elements, a host result (host pointer mode: the call waits).
        assert_eq!(unsafe { cublasSasum_v2(handle, 1000, px as _, 1, &mut sum) }, OK);
    }
    let want: f64 = x.iter().map(|v| (*v as f32 as f64).abs()).sum();
    assert!((sum as f64 - want).abs() <= 1e-4 * want, "{sum} vs {want}");
}

#[cfg(feature = "cublaslt")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn cublaslt_create_on_the_primary_context_and_the_logger_traces_a_matmul() {
    use prism_gpu::cublaslt::sys::{self, cublasStatus_t::CUBLAS_STATUS_SUCCESS as OK};
    use prism_gpu::cublaslt::{CudaBlasLT, Matmul};

    let ctx = CudaContext::new(0).unwrap();
    ctx.bind_to_thread().unwrap();
    let mut handle = null_mut();
    // SAFETY: a live out-pointer; the handle is destroyed once.
    unsafe {
        assert_eq!(sys::cublasLtCreate(&mut handle), OK);
        assert!(!handle.is_null());
        assert_eq!(sys::cublasLtDestroy(handle), OK);
    }

    let dir = std::env::temp_dir().join(format!("prism-cublaslt-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.log");
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a C string that outlives the call.
    unsafe {
        assert_eq!(sys::cublasLtLoggerOpenFile(c_path.as_ptr()), OK);
        assert_eq!(sys::cublasLtLoggerSetLevel(2), OK);
    }
    let stream = ctx.default_stream();
    let lt = CudaBlasLT::new(stream.clone()).unwrap();
    let (m, n, k) = (3usize, 5usize, 4usize);
    let a = stream.clone_htod(&vec![1.0f32; m * k]).unwrap();
    let b = stream.clone_htod(&vec![1.0f32; k * n]).unwrap();
    let mut c = stream.alloc_zeros::<f32>(m * n).unwrap();
    let cfg = cublaslt_common::plain_config(m, n, k);
    // SAFETY: the buffers hold the elements the configuration touches.
    unsafe { lt.matmul(cfg, &a, &b, &mut c, None, None) }.unwrap();
    assert_eq!(stream.clone_dtoh(&c).unwrap(), vec![4.0f32; m * n]);
    // SAFETY: plain value.
    unsafe { assert_eq!(sys::cublasLtLoggerSetLevel(0), OK) };
    let log = std::fs::read_to_string(&path).unwrap();
    let pid = std::process::id();
    let trace: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with(&format!("[cublasLt][{pid}][Trace][cublasLtMatmul] ")))
        .collect();
    assert_eq!(trace.len(), 1, "{log}");
    assert!(trace[0].contains("type=f32") && trace[0].contains("m=3 n=5 k=4"), "{}", trace[0]);
    assert!(!log.contains("[Api]"), "level 2 has no API trace: {log}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nvrtc_and_driver_free_functions_reach_the_libraries() {
    use prism_gpu::nvrtc::sys::*;
    // SAFETY: live out-pointers; static strings.
    unsafe {
        assert!(prism_gpu::driver::sys::is_culib_present());
        assert!(is_culib_present());
        let (mut major, mut minor) = (0, 0);
        assert_eq!(nvrtcVersion(&mut major, &mut minor), nvrtcResult::NVRTC_SUCCESS);
        assert!(major >= 12, "{major}.{minor}");
        let text = CStr::from_ptr(nvrtcGetErrorString(nvrtcResult::NVRTC_ERROR_COMPILATION));
        assert_eq!(text.to_str().unwrap(), "NVRTC_ERROR_COMPILATION", "NVRTC's own text");
    }
}
