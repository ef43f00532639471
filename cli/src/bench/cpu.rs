//! The CPU fallback timed on its own: what `prism-gpu bench` measures on a machine without a GPU.
//! There is no anchor: these figures describe the fallback, not a comparison.

use super::{gigabytes_per_second, time_host, Row, Settings};
use prism_gpu::rng::SplitMix64;
use prism_gpu::runtime::ProductionGpuRuntime;
use prism_gpu::Result;

/// Times the CPU fallback's main operations (short run: smaller sizes).
pub fn run(settings: Settings, full: bool) -> Result<Vec<Row>> {
    let cpu = ProductionGpuRuntime::cpu();
    let mut rng = SplitMix64::from_time();
    let n = if full { 1 << 26 } else { 1 << 22 };
    let (rows, cols) = if full { (4096, 4096) } else { (1024, 4096) };
    let side = if full { 2048 } else { 512 };
    let x = rng.vec(n, -2.0, 2.0);
    let y = rng.vec(n, -2.0, 2.0);
    let matrix = rng.vec(rows * cols, -4.0, 4.0);
    let a = rng.vec(side * side, -1.0, 1.0);
    let b = rng.vec(side * side, -1.0, 1.0);
    let bytes = |elements: usize| (elements * 4) as f64;
    let mut out = Vec::new();
    let mut row = |name: String, value: f64, unit: &str| {
        out.push(Row {
            group: "cpu fallback".into(),
            name,
            series: None,
            ours: value,
            anchor: "none (CPU only)".into(),
            anchor_value: None,
            unit: unit.into(),
            higher_is_better: true,
            kernel: None,
        })
    };
    let t = time_host(settings, |_| cpu.add(&x, &y).map(drop))?;
    row(format!("add {n} f32"), gigabytes_per_second(bytes(3 * n), t.median_ms), "GB/s");
    let t = time_host(settings, |_| cpu.relu(&x).map(drop))?;
    row(format!("relu {n} f32"), gigabytes_per_second(bytes(2 * n), t.median_ms), "GB/s");
    let t = time_host(settings, |_| cpu.sum(&x).map(drop))?;
    row(format!("sum {n} f32"), gigabytes_per_second(bytes(n), t.median_ms), "GB/s");
    let t = time_host(settings, |_| cpu.softmax_rows(&matrix, rows, cols).map(drop))?;
    row(format!("softmax {rows}x{cols}"), gigabytes_per_second(bytes(2 * rows * cols), t.median_ms), "GB/s");
    let t = time_host(settings, |_| cpu.matmul(&a, &b, side, side, side).map(drop))?;
    let flops = 2.0 * (side as f64).powi(3);
    row(format!("matmul f32 {side}^3"), flops / (t.median_ms * 1e-3) / 1e9, "GFLOP/s");
    Ok(out)
}
