//! `prism_gpu::nvrtc` against the real NVRTC (on the GPU machine).

use prism_gpu::nvrtc::result::NvrtcError;
use prism_gpu::nvrtc::{compile_ptx, compile_ptx_with_opts, CompileError, CompileOptions};

#[test]
#[ignore = "needs a CUDA GPU"]
fn compiles_to_ptx() {
    let ptx =
        compile_ptx("extern \"C\" __global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }").unwrap();
    let text = ptx.to_src();
    assert!(text.contains(".visible .entry twice"), "{text}");
    let bytes = ptx.as_bytes().unwrap();
    assert_eq!(bytes.last(), Some(&0), "NVRTC output keeps its NUL");
    assert_eq!(&bytes[..bytes.len() - 1], text.as_bytes());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn options_reach_the_compiler() {
    let opts = CompileOptions {
        arch: Some("compute_80"),
        ftz: Some(true),
        maxrregcount: Some(32),
        options: vec!["-DSCALE=3.5f".into()],
        name: Some("scaled.cu".into()),
        ..Default::default()
    };
    let ptx =
        compile_ptx_with_opts("extern \"C\" __global__ void k(float *x) { x[0] = SCALE; }", opts).unwrap();
    let text = ptx.to_src();
    assert!(text.contains(".target sm_80"), "{text}");
    // 3.5f is 0x40600000 = 1080033280: NVRTC writes it as a float or as its bits.
    assert!(text.contains("0f40600000") || text.contains("1080033280"), "3.5f should be baked in: {text}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn compile_error_carries_the_log() {
    let src = "extern \"C\" __global__ void k(float *x) { x[0] = undefined_name; }";
    let opts = CompileOptions { name: Some("broken.cu".into()), ..Default::default() };
    let err = compile_ptx_with_opts(src, opts).unwrap_err();
    let CompileError::CompileError { nvrtc, options, log } = &err else {
        panic!("expected a compile error, got {err:?}");
    };
    assert_eq!(*nvrtc, NvrtcError(prism_gpu::nvrtc::sys::nvrtcResult::NVRTC_ERROR_COMPILATION));
    assert!(options.is_empty());
    let log = log.to_str().unwrap();
    assert!(log.contains("undefined_name") && log.contains("broken.cu"), "{log}");
    assert!(err.to_string().contains("undefined_name"));
    // A bad option is reported too, not a panic.
    let bad = CompileOptions { options: vec!["--no-such-option".into()], ..Default::default() };
    assert!(compile_ptx_with_opts("extern \"C\" __global__ void k() {}", bad).is_err());
}

/// The on-disk cache against the real NVRTC: a hit returns the very bytes the cold compile
/// produced, and they load as a module. (NVRTC needs no GPU; loading does.) The cache is our
/// engine's (the legacy engine uses cudarc's NVRTC).
#[cfg(feature = "production-gpu")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn cached_compile_equals_the_cold_one() {
    use prism_gpu::bench::nvrtc::{options, KERNEL};
    use prism_gpu::nvrtc::cache::{NvrtcCache, DEFAULT_MAX_BYTES};

    let dir = std::env::temp_dir().join(format!("prism-nvrtc-cache-gpu-test-{}", std::process::id()));
    let cache = NvrtcCache::new(&dir, DEFAULT_MAX_BYTES);
    cache.clear().unwrap();
    let cold = cache.compile_ptx_with_opts(KERNEL, options()).unwrap();
    let warm = cache.compile_ptx_with_opts(KERNEL, options()).unwrap();
    assert_eq!((cache.misses(), cache.hits()), (1, 1), "the second compile is a hit");
    assert_eq!(warm.as_bytes().unwrap(), cold.as_bytes().unwrap(), "byte for byte");
    assert_eq!(warm.as_bytes().unwrap().last(), Some(&0), "NVRTC's NUL is kept");
    let text = warm.to_src();
    assert!(text.contains(".target sm_80") && text.contains(".visible .entry softmax_rows"), "{text}");
    // Another architecture is another entry, compiled afresh.
    let other = prism_gpu::nvrtc::CompileOptions { arch: Some("compute_90"), ..options() };
    let sm90 = cache.compile_ptx_with_opts(KERNEL, other).unwrap();
    assert_eq!(cache.misses(), 2);
    assert!(sm90.to_src().contains(".target sm_90"));
    assert_eq!(cache.stats().entries, 2);
    // A compile error is returned, not cached.
    let broken = cache.compile_ptx_with_opts("extern \"C\" __global__ void k() { nope; }", options());
    assert!(matches!(broken, Err(CompileError::CompileError { .. })), "{broken:?}");
    assert_eq!(cache.stats().entries, 2);

    let ctx = prism_gpu::driver::CudaContext::new(0).unwrap();
    let module = ctx.load_module(warm).unwrap();
    for name in ["gelu_f32", "softmax_rows", "layer_norm", "sgemm_tiled", "histogram_u32"] {
        module.load_function(name).unwrap();
    }
    assert_eq!(cache.clear().unwrap().entries, 2);
    std::fs::remove_dir(&dir).unwrap();
}
