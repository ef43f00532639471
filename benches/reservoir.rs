//! The reservoir computer's speed: fit + run of the Mackey-Glass one-step task over `--steps`
//! steps (default 50,000) at `--units` sizes (default 1000 and 10,000), and a batched
//! hyper-parameter search (`--batch` members of 1000 units, up to 10,000 steps) against a loop over
//! the same members: build, process (states) and fit timed apart, and build + fit. The settings match `scripts/reservoir_reservoirpy.py` (ReservoirPy, the anchor).
//!
//! `cargo bench --bench reservoir -- [--units 1000 10000] [--steps 50000] [--batch 8] [--cpu]`

use std::sync::Arc;
use std::time::Instant;

use prism_gpu::reservoir::{mackey_glass, rmse, GpuReservoirComputer, ReservoirBatch, ReservoirConfig};
use prism_gpu::{ProductionGpuRuntime, Result};

fn config(size: usize) -> ReservoirConfig {
    ReservoirConfig {
        size,
        input_size: 1,
        spectral_radius: 0.9,
        connection_prob: 0.1,
        leak_rate: 0.5,
        input_scaling: 1.0,
        input_connectivity: 1.0,
        bias: 0.0,
        ridge: 1e-7,
        warmup: 100,
        seed: 7,
        ..Default::default()
    }
}

/// The values after `flag` up to the next `--` argument.
fn values(args: &[String], flag: &str) -> Vec<usize> {
    args.iter()
        .skip_while(|a| *a != flag)
        .skip(1)
        .take_while(|a| !a.starts_with("--"))
        .filter_map(|a| a.parse().ok())
        .collect()
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let units = Some(values(&args, "--units")).filter(|v| !v.is_empty()).unwrap_or(vec![1000, 10_000]);
    let steps = values(&args, "--steps").first().copied().unwrap_or(50_000);
    let batch = values(&args, "--batch").first().copied().unwrap_or(8);
    let runtime = Arc::new(if args.iter().any(|a| a == "--cpu") {
        ProductionGpuRuntime::cpu()
    } else {
        ProductionGpuRuntime::initialize()?
    });
    println!("reservoir bench on {}", runtime.describe());
    let series = mackey_glass(steps + 1, 17, 1.2);
    let x: Vec<f32> = series.iter().map(|&v| v as f32).collect();
    for &n in &units {
        let t = Instant::now();
        let mut esn = GpuReservoirComputer::with_runtime(config(n), runtime.clone())?;
        let build = t.elapsed();
        let t = Instant::now();
        esn.fit(&x[..steps], &x[1..])?;
        let fit = t.elapsed();
        // Run on from the fitted state, as ReservoirPy's `run` after `fit` does.
        let t = Instant::now();
        let y = esn.predict(&x[..steps])?;
        let run = t.elapsed();
        println!(
            "{n} units, {steps} steps: build {build:.2?}, fit {fit:.2?}, run {run:.2?}, fit + run {:.2?}, RMSE after 100 steps {:.3e}",
            fit + run,
            rmse(&y[100..], &series[101..])?
        );
    }
    // A search over spectral radius and leak: one batch against a loop of the same members.
    let search_steps = steps.min(10_000);
    let configs: Vec<ReservoirConfig> = (0..batch)
        .map(|i| ReservoirConfig {
            spectral_radius: 0.8 + 0.1 * (i % 4) as f32,
            leak_rate: if i < batch / 2 { 0.3 } else { 0.6 },
            seed: 7 + i as u64,
            ..config(1000)
        })
        .collect();
    let (train, test) = (&x[..search_steps], &x[1..=search_steps]);
    // Build, process (the states alone) and fit (states, sums, solves) timed apart, so the step's
    // speed-up shows apart from the build.
    let t = Instant::now();
    let mut members = ReservoirBatch::new(&configs, runtime.clone())?;
    let batch_build = t.elapsed();
    let t = Instant::now();
    members.process(train)?;
    let batch_process = t.elapsed();
    members.reset()?;
    let t = Instant::now();
    members.fit(train, test)?;
    let batch_fit = t.elapsed();
    let t = Instant::now();
    let mut alone = configs
        .iter()
        .map(|c| GpuReservoirComputer::with_runtime(c.clone(), runtime.clone()))
        .collect::<Result<Vec<_>>>()?;
    let loop_build = t.elapsed();
    let t = Instant::now();
    for esn in &mut alone {
        esn.process(train)?;
    }
    let loop_process = t.elapsed();
    for esn in &mut alone {
        esn.reset()?;
    }
    let t = Instant::now();
    for esn in &mut alone {
        esn.fit(train, test)?;
    }
    let loop_fit = t.elapsed();
    let row = |what: &str, batched: std::time::Duration, looped: std::time::Duration| {
        println!(
            "  {what}: batched {batched:.2?}, loop {looped:.2?} ({:.2}x)",
            looped.as_secs_f64() / batched.as_secs_f64()
        )
    };
    println!("search of {batch} x 1000 units, {search_steps} steps:");
    row("build", batch_build, loop_build);
    row("process (states)", batch_process, loop_process);
    row("fit (states, sums, solves)", batch_fit, loop_fit);
    row("build + fit", batch_build + batch_fit, loop_build + loop_fit);
    Ok(())
}
