//! NVRTC: a cold compile of a program of about 200 lines beside a warm hit of the on-disk cache
//! ([`prism_gpu::nvrtc::cache`]), in the `driver` group. The anchor is the cold compile, so the ratio
//! is how many times faster a hit is than compiling.

use std::cell::Cell;

use super::{time_host, Row, Settings};
use prism_gpu::nvrtc::cache::{NvrtcCache, DEFAULT_MAX_BYTES};
use prism_gpu::nvrtc::{CompileError, CompileOptions};
use prism_gpu::Result;

/// The program compiled: templates, shared memory, warp shuffles, no includes (also used by the
/// NVRTC cache's GPU test).
pub const KERNEL: &str = include_str!("nvrtc_kernel.cu");

/// The options it is compiled with.
pub fn options() -> CompileOptions {
    CompileOptions { arch: Some("compute_80"), name: Some("bench.cu".into()), ..Default::default() }
}

/// Times a cold compile and a warm cache hit; no rows (and a note on stderr) when NVRTC cannot be
/// loaded or the program does not compile.
pub fn run(settings: Settings) -> Result<Vec<Row>> {
    if let Err(err) = prism_gpu::nvrtc::result::version() {
        eprintln!("nvrtc: skipped, NVRTC cannot be loaded ({err})");
        return Ok(Vec::new());
    }
    let dir = std::env::temp_dir().join(format!("prism-gpu-bench-nvrtc-{}", std::process::id()));
    let warm = NvrtcCache::new(&dir, DEFAULT_MAX_BYTES);
    let failed: Cell<Option<CompileError>> = Cell::new(None);
    let compile = |cache: &NvrtcCache| {
        if let Err(err) = cache.compile_ptx_with_opts(KERNEL, options()) {
            failed.set(Some(err));
        }
        Ok(())
    };
    // A compile takes a good fraction of a second: fewer repeats than the other rows.
    let cold =
        time_host(Settings { warmup: 1, repeats: settings.repeats.min(5) }, |_| compile(&NvrtcCache::off()));
    // The warm-up's first call fills the cache; every timed call is a hit.
    let hit = time_host(settings, |_| compile(&warm));
    let _ = warm.clear();
    let _ = std::fs::remove_dir(&dir);
    let (cold, hit) = (cold?, hit?);
    if let Some(err) = failed.take() {
        eprintln!("nvrtc: skipped, the benchmark program did not compile: {err}");
        return Ok(Vec::new());
    }
    Ok(vec![Row {
        group: "driver".into(),
        name: format!("NVRTC compile, {}-line program: cached", KERNEL.lines().count()),
        series: None,
        ours: hit.median_ms * 1e3,
        anchor: "cold compile".into(),
        anchor_value: Some(cold.median_ms * 1e3),
        unit: "us".into(),
        higher_is_better: false,
        kernel: None,
    }])
}
