//! The on-disk NVRTC cache against the real NVRTC, on the benchmark's program of about 200 lines (on the GPU
//! machine). The cache is our engine's: the legacy engine uses cudarc's NVRTC.
#![cfg(not(feature = "legacy-gpu"))]

use prism_gpu::nvrtc::cache::{NvrtcCache, DEFAULT_MAX_BYTES};
use prism_gpu::nvrtc::CompileError;
use prism_gpu_cli::bench::nvrtc::{options, KERNEL};

/// The on-disk cache against the real NVRTC: a hit returns the very bytes the cold compile
/// produced, and they load as a module. (NVRTC needs no GPU; loading does.) The cache is our
/// engine's (the legacy engine uses cudarc's NVRTC).
#[test]
#[ignore = "needs a CUDA GPU"]
fn cached_compile_equals_the_cold_one() {
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
    for name in ["gelu_f32", "softmax_rows", "layer_norm", "sgemm_tiled", "histogram_u32", "scan_blocks"] {
        module.load_function(name).unwrap();
    }
    assert_eq!(cache.clear().unwrap().entries, 2);
    std::fs::remove_dir(&dir).unwrap();
}
