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
