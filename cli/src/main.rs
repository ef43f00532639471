//! The `prism-gpu` command line: `info` (the default), `selftest`, `bench`, `replot`, `cache`.

use std::process::ExitCode;

use prism_gpu::rng::SplitMix64;
use prism_gpu::ProductionGpuRuntime;
use prism_gpu_cli::bench::suite;
use prism_gpu_cli::selftest;

const USAGE: &str =
    "usage: prism-gpu [info | selftest | bench [OPTIONS] | tune [OPTIONS] | replot FILE [DIR] | cache stats|clear | help]
  info      what the machine offers (driver, devices), then the self-test (the default)
  selftest  every operation on the GPU and on the CPU fallback, against f64 references
  bench     side-by-side benchmarks (a short run by default), written as Markdown, JSON and SVG:
              --full               target sizes, every GEMM shape, more repeats
              --groups a,b         driver, kernels, gemm, cublas, cublaslt, nccl, cpu, sweep (default: every
                                   GPU group but nccl and sweep; cpu without a GPU). nccl: all-reduce over every
                                   GPU beside PyTorch (python3 with torch), data-parallel training throughput
              --sweep              GEMM on 100+ shapes per precision beside cuBLAS, with the minimum and
                                   geometric mean of the ratios per precision (also --groups sweep)
              --gemm MxNxK,...     GEMM shapes
              --elements N         elements of the elementwise kernels
              --out DIR            where to write bench.md, bench.json and the plots (default target/bench)
  tune      time every GEMM kernel that can run each shape (against the default plan's answer, and
            cuBLAS with bench-anchors) and write the winners as a tuning table (tune/sm_90.txt's format):
              --shapes MxNxK,...   shapes (default: decode, vocabulary, small cubes, conv-like, n = 64, squares)
              --precisions a,b     f32, tf32, bf16, f16, f64 (default: all)
              --out PATH           where to write the table (default: only the summary)
              --merge-into TABLE   merge the run's entries into a checked-in table (tune/sm_90.txt)
              --candidates PATH    write every timed candidate's figure (tab-separated)
              --repeats N          timed repeats per candidate (default 7, after 2 warm-ups)
  replot FILE [DIR]  redraw the Markdown table and plots of a bench.json (default DIR: its folder)
            cudarc and cuBLAS anchors need the build feature bench-anchors:
              cargo run --release --features bench-anchors -- bench
  cache stats|clear  the on-disk NVRTC cache (PRISM_CACHE_DIR, PRISM_CACHE_MAX_BYTES): its folder,
            entries and size, or remove every entry";

fn main() -> ExitCode {
    // NVLink multicast stays off wherever NCCL runs (`bench --groups nccl` and the PyTorch processes
    // it starts inherit this). Set before any other thread exists, so no read of the environment
    // can race with it.
    std::env::set_var("NCCL_NVLS_ENABLE", "0");
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] | ["info"] => {
            info();
            run_selftest()
        }
        ["selftest"] => run_selftest(),
        ["bench", rest @ ..] => match suite::parse_args(rest) {
            Ok((options, out)) => {
                suite::run_and_write(&options, &out, &format!("prism-gpu {}", args.join(" ")))
            }
            Err(why) => {
                eprintln!("{why}\n{USAGE}");
                ExitCode::from(2)
            }
        },
        #[cfg(not(feature = "legacy-gpu"))]
        ["tune", rest @ ..] => match prism_gpu_cli::bench::tune::parse_args(rest) {
            Ok(options) => {
                prism_gpu_cli::bench::tune::run_and_write(&options, &format!("prism-gpu {}", args.join(" ")))
            }
            Err(why) => {
                eprintln!("{why}\n{USAGE}");
                ExitCode::from(2)
            }
        },
        ["replot", json, rest @ ..] if rest.len() <= 1 => {
            suite::replot(json.as_ref(), rest.first().map(|d| d.as_ref()))
        }
        ["cache", action @ ("stats" | "clear")] => cache(action),
        ["help" | "-h" | "--help"] => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn info() {
    println!("prism-gpu {}", env!("CARGO_PKG_VERSION"));
    match prism_gpu::probe() {
        Ok(probe) => print!("{probe}"),
        Err(err) => println!("No usable CUDA driver: {err}"),
    }
}

#[cfg(not(feature = "legacy-gpu"))]
fn cache(action: &str) -> ExitCode {
    use prism_gpu::nvrtc::cache::{CacheStats, NvrtcCache};
    let cache = NvrtcCache::from_env();
    let describe = |s: &CacheStats| format!("{} entries, {} bytes", s.entries, s.bytes);
    let Some(dir) = cache.dir() else {
        println!("NVRTC cache: off (PRISM_CACHE_DIR is `off` or empty, or there is no home folder)");
        return ExitCode::SUCCESS;
    };
    if action == "clear" {
        return match cache.clear() {
            Ok(removed) => {
                println!("NVRTC cache {}: removed {}", dir.display(), describe(&removed));
                ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("NVRTC cache {}: could not clear it: {err}", dir.display());
                ExitCode::FAILURE
            }
        };
    }
    let stats = cache.stats();
    println!("NVRTC cache {}", dir.display());
    println!("  {} (cap {} bytes)", describe(&stats), stats.max_bytes);
    ExitCode::SUCCESS
}

#[cfg(feature = "legacy-gpu")]
fn cache(_action: &str) -> ExitCode {
    eprintln!("the NVRTC cache belongs to the production engine; this build uses cudarc's NVRTC");
    ExitCode::from(2)
}

fn run_selftest() -> ExitCode {
    let cpu = ProductionGpuRuntime::cpu();
    let gpu = match ProductionGpuRuntime::with_device(0) {
        Ok(gpu) => Some(gpu),
        Err(err) => {
            println!("GPU self-test skipped: {err}");
            None
        }
    };
    let target = gpu.as_ref().map_or_else(|| "the CPU fallback only".to_string(), |g| g.describe());
    println!("Self-test on {target}:");
    match selftest::run(gpu.as_ref(), &cpu, &mut SplitMix64::from_time()) {
        Ok(checks) => {
            print!("{}", selftest::table(&checks));
            if checks.iter().all(|c| c.passed()) {
                println!("self-test passed ({} operations)", checks.len());
                ExitCode::SUCCESS
            } else {
                println!("self-test FAILED");
                ExitCode::FAILURE
            }
        }
        Err(err) => {
            println!("self-test could not run: {err}");
            ExitCode::FAILURE
        }
    }
}
