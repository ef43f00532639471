//! Host-side parts of `prism_gpu::driver` / `prism_gpu::nvrtc` that need no GPU. These check
//! prism-gpu's own engine (no-driver errors, public `CompileOptions::build`), so they are not
//! built for the `legacy-gpu` (real cudarc) engine.
#![cfg(not(feature = "legacy-gpu"))]

mod support;

use prism_gpu::driver::{sys, CudaContext, DriverError, LaunchConfig};
use prism_gpu::nvrtc::{compile_ptx, CompileError, CompileOptions, Ptx};

#[test]
fn for_num_elems_rounds_up_to_whole_blocks_of_1024() {
    for (n, blocks) in
        [(0u32, 0u32), (1, 1), (1023, 1), (1024, 1), (1025, 2), (4097, 5), (u32::MAX, 4_194_304)]
    {
        let cfg = LaunchConfig::for_num_elems(n);
        assert_eq!(cfg.grid_dim, (blocks, 1, 1), "n = {n}");
        assert_eq!(cfg.block_dim, (1024, 1, 1));
        assert_eq!(cfg.shared_mem_bytes, 0);
        assert!(u64::from(cfg.grid_dim.0) * 1024 >= u64::from(n));
    }
}

#[test]
fn compile_options_are_emitted_as_cudarc_emits_them() {
    assert!(CompileOptions::default().build().is_empty());
    let opts = CompileOptions {
        ftz: Some(true),
        prec_sqrt: Some(false),
        prec_div: Some(false),
        fmad: Some(true),
        options: vec!["-lineinfo".into(), "--std=c++17".into()],
        use_fast_math: Some(true),
        maxrregcount: Some(60),
        include_paths: vec!["/a".into(), "/b c".into()],
        arch: Some("compute_80"),
        name: Some("k.cu".into()),
    };
    assert_eq!(
        opts.build(),
        [
            "--ftz=true",
            "--prec-sqrt=false",
            "--prec-div=false",
            "--fmad=true",
            "--fmad=true",
            "--maxrregcount=60",
            "--include-path=/a",
            "--include-path=/b c",
            "--gpu-architecture=compute_80",
            "-lineinfo",
            "--std=c++17",
        ]
    );
    let only = CompileOptions { prec_div: Some(false), maxrregcount: Some(60), ..Default::default() };
    assert_eq!(only.build(), ["--prec-div=false", "--maxrregcount=60"]);
    assert!(CompileOptions { use_fast_math: Some(false), ..Default::default() }.build().is_empty());
}

#[test]
fn driver_error_prints_name_and_message() {
    let oom = DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY);
    let text = format!("{oom:?}");
    assert!(text.starts_with("DriverError(CUDA_ERROR_OUT_OF_MEMORY, \""), "{text}");
    assert!(text.ends_with("\")"), "{text}");
    assert!(text.contains("out of memory"), "{text}");
    assert_eq!(format!("{oom}"), text);
    // A code these bindings do not know (from a newer driver) converts to none, never to a value.
    assert_eq!(sys::CUresult::from_raw(987_654), None);
    assert_eq!(sys::CUresult::from_raw(2), Some(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY));
    // Callers match on the code.
    assert!(matches!(oom, DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY)));
    let as_error: Box<dyn std::error::Error> = Box::new(oom);
    assert_eq!(as_error.to_string(), text);
    assert_eq!(sys::CUresult::CUDA_SUCCESS.result(), Ok(()));
    assert_eq!(
        sys::CUresult::CUDA_ERROR_INVALID_VALUE.result(),
        Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))
    );
}

#[test]
fn without_a_driver_everything_is_an_error_not_a_panic() {
    if prism_gpu::sys::driver_library().is_ok() {
        if support::skip_failing_calls("an impossible ordinal") {
            return; // the check below is a deliberately failing API call
        }
        // A driver is present (GPU machine): an impossible ordinal is still a clean error.
        let err = CudaContext::new(1_000_000).unwrap_err();
        assert_eq!(err, DriverError(sys::CUresult::CUDA_ERROR_INVALID_DEVICE));
        return;
    }
    let err = CudaContext::new(0).unwrap_err();
    assert_eq!(err, DriverError(sys::CUresult::CUDA_ERROR_NO_DEVICE));
    assert_eq!(
        format!("{err:?}"),
        "DriverError(CUDA_ERROR_NO_DEVICE, \"no CUDA driver could be loaded, so no device is usable\")"
    );
    assert!(err.error_name().is_err() && err.error_string().is_err());
    assert_eq!(CudaContext::device_count(), Err(DriverError(sys::CUresult::CUDA_ERROR_NO_DEVICE)));
    assert!(CudaContext::new_non_primary(0, 0).is_err());
}

#[test]
fn compile_without_nvrtc_is_an_error_with_the_reason() {
    let result = compile_ptx("extern \"C\" __global__ void k() {}");
    match prism_gpu::sys::nvrtc_library() {
        Err(load) => {
            let err = result.unwrap_err();
            assert!(matches!(err, CompileError::CreationError(_)), "{err:?}");
            assert!(err.to_string().contains(&load.to_string()), "{err}");
        }
        Ok(_) => assert!(result.unwrap().to_src().contains(".entry k")),
    }
    // A NUL in the source is an error, not a panic.
    assert!(matches!(compile_ptx("a\0b"), Err(CompileError::CreationError(_))));
}

#[test]
fn ptx_constructors() {
    let p = Ptx::from_src(".version 8.0");
    assert_eq!(p.to_src(), ".version 8.0");
    assert!(p.as_bytes().is_none());
    let q: Ptx = ".target sm_80".into();
    assert_eq!(q.to_src(), ".target sm_80");
    let owned: Ptx = String::from("x").into();
    assert_eq!(owned.to_src(), "x");
    let bin = Ptx::from_binary(vec![0x7f, b'E', b'L', b'F']);
    assert!(bin.as_bytes().is_none());
    assert!(std::panic::catch_unwind(|| bin.to_src()).is_err(), "a binary image has no text");
    let dir = std::env::temp_dir().join(format!("prism-ptx-{}.ptx", std::process::id()));
    std::fs::write(&dir, "// from a file\n").unwrap();
    assert_eq!(Ptx::from_file(&dir).to_src(), "// from a file\n");
    std::fs::remove_file(&dir).unwrap();
}

/// The sys enums are plain Rust enums, as in cudarc: exhaustive matches without a wildcard compile
/// (cudarc's example 12 matches `CUfunc_cache` this way), and integers from the driver convert only
/// through the checked `from_raw`.
#[test]
fn sys_enums_match_exhaustively_and_convert_checked() {
    fn describe(cache: sys::CUfunc_cache) -> &'static str {
        match cache {
            sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_NONE => "none",
            sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_SHARED => "shared",
            sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_L1 => "l1",
            sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_EQUAL => "equal",
        }
    }
    let all: Vec<&str> = (0..5).filter_map(sys::CUfunc_cache::from_raw).map(describe).collect();
    assert_eq!(all, ["none", "shared", "l1", "equal"]);
    assert_eq!(sys::CUlimit::from_raw(u32::MAX), None);
    assert_eq!(
        sys::CUdevice_attribute::from_raw(75),
        Some(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
    );
    assert_eq!(sys::CUresult::CUDA_ERROR_NOT_READY as u32, 600);
    assert_eq!(sys::CUresult::CUDA_ERROR_NOT_READY.name(), "CUDA_ERROR_NOT_READY");
    // Aliases of one value stay usable as in cudarc (bindgen makes them associated constants).
    let _ = (
        sys::CUevent_flags::CU_EVENT_DEFAULT,
        sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY,
    );
}

/// cudarc's example 06 pattern: `?` inside scoped threads whose closures end in a bare `Ok(())`.
/// It compiles only while `DriverError` has no `From` impls beyond cudarc's, so that the closures'
/// error type is inferred from `?` on the joins.
fn scoped_threads_like_cudarc_example_06() -> Result<usize, DriverError> {
    let ctx = CudaContext::new(0)?;
    std::thread::scope(|s| {
        let first = s.spawn(|| {
            ctx.bind_to_thread()?;
            let stream = ctx.new_stream()?;
            stream.synchronize()?;
            Ok(())
        });
        let second = s.spawn(|| {
            ctx.bind_to_thread()?;
            Ok(())
        });
        first.join().unwrap()?;
        second.join().unwrap()?;
        Ok(())
    })?;
    Ok(ctx.ordinal())
}

#[test]
fn question_mark_in_closures_infers_like_cudarc() {
    match scoped_threads_like_cudarc_example_06() {
        Ok(ordinal) => assert_eq!(ordinal, 0),
        // Without a driver (CI) the first call fails; the point is that this file compiled.
        Err(e) => assert!(prism_gpu::sys::driver_library().is_err(), "a driver is loaded, yet: {e}"),
    }
}
