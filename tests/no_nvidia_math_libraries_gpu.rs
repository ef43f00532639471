//! A program that uses `cudarc::cublas` and `cudarc::curand` through prism-gpu runs on our kernels:
//! after a GEMM, a GEMV, an asum and random fills, the process has libcuda mapped (the work reached
//! the GPU) and no libcublas, libcublasLt or libcurand. Its own binary, so no other test (the real
//! cuBLAS anchors under `bench-anchors`) has loaded anything into the process first.
#![cfg(all(feature = "cublas", feature = "curand", not(feature = "legacy-gpu")))]

use prism_gpu::cublas::sys::cublasOperation_t as Op;
use prism_gpu::cublas::{CudaBlas, Gemm, GemmConfig};
use prism_gpu::curand::CudaRng;
use prism_gpu::driver::CudaContext;

/// The file names of every shared object mapped into this process.
fn mapped_libraries() -> Vec<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("reading /proc/self/maps");
    let mut libs: Vec<String> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.contains(".so"))
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
        .collect();
    libs.sort();
    libs.dedup();
    libs
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cublas_and_curand_programs_load_no_nvidia_math_library() {
    let stream = CudaContext::new(0).expect("a CUDA GPU").default_stream();
    let (m, n, k) = (67, 45, 33);
    let rng = CudaRng::new(0x5eed, stream.clone()).unwrap();
    let mut a = stream.alloc_zeros::<f32>(m * k).unwrap();
    let mut b = stream.alloc_zeros::<f32>(k * n).unwrap();
    rng.fill_with_uniform(&mut a).unwrap();
    rng.fill_with_normal(&mut b, 0.0, 1.0).unwrap();
    let mut c = stream.clone_htod(&vec![f32::NAN; m * n]).unwrap();
    let blas = CudaBlas::new(stream.clone()).unwrap();
    let cfg = GemmConfig {
        transa: Op::CUBLAS_OP_N,
        transb: Op::CUBLAS_OP_N,
        m: m as i32,
        n: n as i32,
        k: k as i32,
        alpha: 1.0f32,
        lda: m as i32,
        ldb: k as i32,
        beta: 0.0f32,
        ldc: m as i32,
    };
    // SAFETY: a is m x k, b is k x n and c is m x n, column-major with the leading dimensions above.
    unsafe { blas.gemm(cfg, &a, &b, &mut c) }.unwrap();

    // The product is real: check it against the host before looking at the libraries.
    let (ha, hb, hc) =
        (stream.clone_dtoh(&a).unwrap(), stream.clone_dtoh(&b).unwrap(), stream.clone_dtoh(&c).unwrap());
    for j in 0..n {
        for i in 0..m {
            let want: f64 = (0..k).map(|p| f64::from(ha[i + p * m]) * f64::from(hb[p + j * k])).sum();
            let scale: f64 =
                (0..k).map(|p| f64::from(ha[i + p * m]).abs() * f64::from(hb[p + j * k]).abs()).sum();
            let got = f64::from(hc[i + j * m]);
            assert!(
                (got - want).abs() <= 1e-5 * scale.max(f64::MIN_POSITIVE),
                "c[{i},{j}] = {got}, want {want}"
            );
        }
    }

    let libs = mapped_libraries();
    println!("mapped libraries: {libs:?}");
    assert!(libs.iter().any(|l| l.starts_with("libcuda.so")), "libcuda is not mapped: {libs:?}");
    let nvidia_math = ["libcublas", "libcublasLt", "libcurand"];
    let loaded: Vec<&String> = libs.iter().filter(|l| nvidia_math.iter().any(|m| l.starts_with(m))).collect();
    assert!(loaded.is_empty(), "NVIDIA math libraries were loaded: {loaded:?}");
}
