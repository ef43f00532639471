//! `cargo bench --bench kernels [-- --quick]`: every memory-bound kernel against a device-to-device
//! copy of the same traffic, and the reservoir step on the GPU against the CPU fallback; prints a
//! Markdown table. Needs no cudarc: the copy is our own.

use prism_gpu::bench::{kernels, Settings};
use prism_gpu::driver::CudaContext;

fn main() -> prism_gpu::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let settings = if quick { Settings::QUICK } else { Settings::FULL };
    let ctx = match CudaContext::new(0) {
        Ok(ctx) => ctx,
        Err(err) => {
            println!("kernels bench skipped: no usable GPU ({err})");
            return Ok(());
        }
    };
    println!("Device: {}", ctx.name()?);
    let rows = kernels::run(&ctx.default_stream(), settings, &kernels::Sizes::default())?;
    println!("| kernel | ours | anchor | anchor figure | unit | ratio (>1: ours better) |\n|---|---|---|---|---|---|");
    for r in &rows {
        let ratio = r.ratio().map_or_else(|| "-".into(), |v| format!("{v:.3}"));
        let anchor = r.anchor_value.map_or_else(|| "-".into(), |v| format!("{v:.1}"));
        println!("| {} | {:.1} | {} | {} | {} | {} |", r.name, r.ours, r.anchor, anchor, r.unit, ratio);
    }
    Ok(())
}
