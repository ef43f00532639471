//! The standard echo-state-network benchmarks on `prism_gpu::reservoir`, on the GPU (when there is
//! one) and on the CPU fallback, with the settings used:
//!
//! 1. Mackey-Glass (tau = 17), free run 84 steps after teacher forcing, 1000 units (Jaeger and
//!    Haas 2004: NRMSE 6.3e-5 at step 84). Trained once on 3000 steps; then 20 test runs, each
//!    washed in on 1000 unseen steps and run free; NRMSE84 = RMS over the runs of the error at the
//!    84th free step, divided by the series' standard deviation (target <= 1e-4).
//! 2. Mackey-Glass one step ahead, 100 units, ReservoirPy's README task (RMSE 0.0020): train on
//!    X[:500] -> X[1:501] (warmup 100), predict X[501:-1] -> X[502:] (target <= 0.0020).
//! 3. NARMA10, 200 units: NRMSE on 1000 test steps after 4000 training steps (no target).
//!
//! `cargo run --release --example reservoir_benchmarks [-- --cpu]` (`--cpu`: the CPU fallback only).
//! Settings were tuned on the CPU fallback; `RES_<FIELD>` (`RES_SR`, `RES_P`, `RES_LEAK`, `RES_IN`,
//! `RES_INC` (input connectivity), `RES_BIAS`, `RES_RIDGE`, `RES_SEED`; `RES_1_...` for the
//! one-step task, `RES_N_...` for NARMA10) overrides one for further tuning.

use std::sync::Arc;
use std::time::Instant;

use prism_gpu::reservoir::{
    mackey_glass, narma10, nrmse, rmse, std_dev, GpuReservoirComputer, ReservoirConfig,
};
use prism_gpu::{ProductionGpuRuntime, Result};

/// Mackey-Glass free-run task: series layout and test runs.
const MG_DISCARD: usize = 1000;
const MG_TRAIN: usize = 3000;
const MG_WASH: usize = 1000;
const MG_HORIZON: usize = 84;
const MG_RUNS: usize = 20;

fn mg84_config() -> ReservoirConfig {
    tuned(
        "",
        ReservoirConfig {
            size: 1000,
            input_size: 1,
            spectral_radius: 0.95,
            connection_prob: 0.05,
            leak_rate: 0.7,
            input_scaling: 1.0,
            input_connectivity: 1.0,
            bias: 0.2,
            ridge: 1e-10,
            warmup: 1000,
            seed: 7,
            ..Default::default()
        },
    )
}

fn one_step_config() -> ReservoirConfig {
    tuned(
        "1_",
        ReservoirConfig {
            size: 100,
            input_size: 1,
            spectral_radius: 1.25,
            connection_prob: 0.1,
            leak_rate: 0.3,
            input_scaling: 1.0,
            input_connectivity: 1.0,
            bias: 1.0,
            ridge: 1e-7,
            warmup: 100,
            seed: 7,
            ..Default::default()
        },
    )
}

fn narma10_config() -> ReservoirConfig {
    tuned(
        "N_",
        ReservoirConfig {
            size: 200,
            input_size: 1,
            spectral_radius: 0.9,
            connection_prob: 0.1,
            leak_rate: 1.0,
            input_scaling: 0.5,
            input_connectivity: 1.0,
            bias: 0.2,
            ridge: 1e-6,
            warmup: 200,
            seed: 7,
            ..Default::default()
        },
    )
}

/// `settings` with each tunable field overridden from the environment when set:
/// `RES_<prefix><FIELD>` for `SR`, `P`, `LEAK`, `IN`, `INC`, `BIAS`, `RIDGE`, `SEED`.
fn tuned(prefix: &str, settings: ReservoirConfig) -> ReservoirConfig {
    let f = |field: &str, default: f64| env_f(&format!("{prefix}{field}"), default);
    ReservoirConfig {
        spectral_radius: f("SR", settings.spectral_radius.into()) as f32,
        connection_prob: f("P", settings.connection_prob.into()) as f32,
        leak_rate: f("LEAK", settings.leak_rate.into()) as f32,
        input_scaling: f("IN", settings.input_scaling.into()) as f32,
        input_connectivity: f("INC", settings.input_connectivity.into()) as f32,
        bias: f("BIAS", settings.bias.into()) as f32,
        ridge: f("RIDGE", settings.ridge),
        seed: f("SEED", settings.seed as f64) as u64,
        ..settings
    }
}

/// A tuning override from the environment (`RES_<NAME>`), else the default.
fn env_f(name: &str, default: f64) -> f64 {
    std::env::var(format!("RES_{name}")).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The 84-step free-run benchmark; returns (NRMSE84, NRMSE over all 84 steps).
fn mackey_glass_84(runtime: &Arc<ProductionGpuRuntime>) -> Result<(f64, f64)> {
    let total = MG_DISCARD + MG_TRAIN + MG_RUNS * (MG_WASH + MG_HORIZON);
    let raw = mackey_glass(total + 1, 17, 1.2);
    // Jaeger's squashing into the tanh units' range; errors are measured on the raw series.
    let squashed: Vec<f32> = raw.iter().map(|&x| (x - 1.0).tanh() as f32).collect();
    let sigma = std_dev(&raw[MG_DISCARD..]);
    let mut esn = GpuReservoirComputer::with_runtime(mg84_config(), runtime.clone())?;
    let train = MG_DISCARD..MG_DISCARD + MG_TRAIN;
    esn.fit(&squashed[train.start..train.end], &squashed[train.start + 1..train.end + 1])?;
    let (mut at84, mut all, mut count) = (0.0, 0.0, 0usize);
    for run in 0..MG_RUNS {
        let start = MG_DISCARD + MG_TRAIN + run * (MG_WASH + MG_HORIZON);
        esn.reset()?;
        esn.process(&squashed[start..start + MG_WASH])?;
        let free = esn.generate(MG_HORIZON)?;
        let want = &raw[start + MG_WASH..start + MG_WASH + MG_HORIZON];
        for (k, (&y, &w)) in free.iter().zip(want).enumerate() {
            let e = (f64::from(y).atanh() + 1.0 - w).powi(2);
            all += e;
            count += 1;
            if k == MG_HORIZON - 1 {
                at84 += e;
            }
        }
    }
    Ok(((at84 / MG_RUNS as f64).sqrt() / sigma, (all / count as f64).sqrt() / sigma))
}

/// ReservoirPy's README task: one-step-ahead RMSE with 100 units.
fn mackey_glass_one_step(runtime: &Arc<ProductionGpuRuntime>) -> Result<f64> {
    let x64 = mackey_glass(2000, 17, 1.2);
    let x: Vec<f32> = x64.iter().map(|&v| v as f32).collect();
    let mut esn = GpuReservoirComputer::with_runtime(one_step_config(), runtime.clone())?;
    esn.fit(&x[..500], &x[1..501])?;
    let y = esn.predict(&x[501..x.len() - 1])?;
    rmse(&y, &x64[502..])
}

/// NARMA10 with 200 units: train on 4000 steps, NRMSE on the next 1000 (state carried on).
fn narma10_test(runtime: &Arc<ProductionGpuRuntime>) -> Result<f64> {
    let (u, y) = narma10(5000, 11);
    let (u, y): (Vec<f32>, Vec<f32>) =
        (u.iter().map(|&v| v as f32).collect(), y.iter().map(|&v| v as f32).collect());
    let mut esn = GpuReservoirComputer::with_runtime(narma10_config(), runtime.clone())?;
    esn.fit(&u[..4000], &y[..4000])?;
    let got = esn.predict(&u[4000..])?;
    let want: Vec<f64> = y[4000..].iter().map(|&v| f64::from(v)).collect();
    nrmse(&got, &want, std_dev(&want))
}

fn main() -> Result<()> {
    let cpu_only = std::env::args().any(|a| a == "--cpu");
    let mut runtimes = vec![Arc::new(ProductionGpuRuntime::cpu())];
    if !cpu_only {
        let rt = ProductionGpuRuntime::initialize()?;
        if rt.is_gpu() {
            runtimes.insert(0, Arc::new(rt));
        }
    }
    println!("Mackey-Glass tau=17, 84-step free run: {:?}", mg84_config());
    println!(
        "  series x0=1.2, RK4 h=0.1 sampled at 1; input tanh(x - 1); discard {MG_DISCARD}, train {MG_TRAIN}, \
         {MG_RUNS} runs of {MG_WASH} wash-in + {MG_HORIZON} free steps"
    );
    println!("Mackey-Glass one step ahead (ReservoirPy README): {:?}", one_step_config());
    println!("NARMA10: {:?}; train 4000, test 1000 (inputs uniform in [0, 0.5), seed 11)", narma10_config());
    for rt in &runtimes {
        let t = Instant::now();
        let (at84, all) = mackey_glass_84(rt)?;
        let t84 = t.elapsed();
        let t = Instant::now();
        let one = mackey_glass_one_step(rt)?;
        println!("{}", rt.describe());
        println!(
            "  MG84  1000 units: NRMSE84 {at84:.3e} (target <= 1e-4, {}), NRMSE over the 84 steps {all:.3e}  [{:.2?}]",
            if at84 <= 1e-4 { "met" } else { "NOT met" },
            t84
        );
        println!(
            "  MG one step, 100 units: RMSE {one:.4e} (target <= 0.0020, {})  [{:.2?}]",
            if one <= 0.0020 { "met" } else { "NOT met" },
            t.elapsed()
        );
        println!("  NARMA10, 200 units: NRMSE {:.3e} (no target; for reference)", narma10_test(rt)?);
    }
    Ok(())
}
