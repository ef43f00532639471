//! The `prism-gpu` command line: `info` (the default), `selftest`, `bench`.

use std::path::PathBuf;
use std::process::ExitCode;

use prism_gpu::bench::suite::{self, Group, Options};
use prism_gpu::bench::{plot, report};
use prism_gpu::selftest::{self, SplitMix64};
use prism_gpu::ProductionGpuRuntime;

const USAGE: &str = "usage: prism-gpu [info | selftest | bench [OPTIONS] | help]
  info      what the machine offers (driver, devices), then the self-test (the default)
  selftest  every operation on the GPU and on the CPU fallback, against f64 references
  bench     side-by-side benchmarks (a short run by default), written as Markdown, JSON and SVG:
              --full               target sizes, every GEMM shape, more repeats
              --groups a,b         driver, kernels, gemm, cpu (default: every GPU group; cpu without a GPU)
              --gemm MxNxK,...     GEMM shapes
              --elements N         elements of the elementwise kernels
              --out DIR            where to write bench.md, bench.json and the plots (default target/bench)
            cudarc and cuBLAS anchors need the build feature bench-anchors:
              cargo run --release --features bench-anchors -- bench";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] | ["info"] => {
            info();
            run_selftest()
        }
        ["selftest"] => run_selftest(),
        ["bench", rest @ ..] => match parse_bench(rest) {
            Ok((options, out)) => run_bench(&options, &out, &args),
            Err(why) => {
                eprintln!("{why}\n{USAGE}");
                ExitCode::from(2)
            }
        },
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

fn parse_bench(args: &[&str]) -> Result<(Options, PathBuf), String> {
    let mut options = Options { groups: Vec::new(), full: false, gemm_shapes: None, elements: None };
    let mut out = PathBuf::from("target/bench");
    let mut args = args.iter();
    while let Some(&arg) = args.next() {
        let mut value = || args.next().copied().ok_or_else(|| format!("{arg} needs a value"));
        match arg {
            "--full" => options.full = true,
            "--groups" => {
                options.groups = value()?
                    .split(',')
                    .map(|g| Group::parse(g).ok_or_else(|| format!("unknown group `{g}`")))
                    .collect::<Result<_, _>>()?
            }
            "--gemm" => {
                let shapes = value()?
                    .split(',')
                    .map(|s| match s.split('x').map(str::parse).collect::<Result<Vec<usize>, _>>() {
                        Ok(d) if d.len() == 3 && d.iter().all(|&x| x > 0) => Ok((d[0], d[1], d[2])),
                        _ => Err(format!("`{s}` is not a GEMM shape MxNxK")),
                    })
                    .collect::<Result<_, _>>()?;
                options.gemm_shapes = Some(shapes);
            }
            "--elements" => {
                let n = value()?;
                options.elements = Some(n.parse().map_err(|_| format!("`{n}` is not a count"))?);
            }
            "--out" => out = PathBuf::from(value()?),
            other => return Err(format!("unknown bench option `{other}`")),
        }
    }
    Ok((options, out))
}

fn run_bench(options: &Options, out: &std::path::Path, args: &[String]) -> ExitCode {
    let command = format!("prism-gpu {}", args.join(" "));
    let (env, rows) = match suite::run(options, &command, |line| eprintln!("{line}")) {
        Ok(result) => result,
        Err(err) => {
            eprintln!("bench failed: {err}");
            return ExitCode::FAILURE;
        }
    };
    let markdown = report::markdown(&env, &rows);
    print!("{markdown}");
    let written = std::fs::create_dir_all(out)
        .and_then(|()| std::fs::write(out.join("bench.md"), &markdown))
        .and_then(|()| std::fs::write(out.join("bench.json"), report::json(&env, &rows)))
        .map_err(|e| e.to_string())
        .and_then(|()| plot::svgs(&rows))
        .and_then(|plots| {
            plots.iter().try_for_each(|(stem, svg)| {
                std::fs::write(out.join(format!("{stem}.svg")), svg).map_err(|e| e.to_string())
            })
        });
    match written {
        Ok(()) => {
            eprintln!("wrote {}/bench.md, bench.json and the plots", out.display());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("writing the results to {} failed: {err}", out.display());
            ExitCode::FAILURE
        }
    }
}
