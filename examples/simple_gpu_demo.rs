//! What this machine offers and where prism-gpu runs: the driver and devices, a few runtime
//! operations on the GPU (or the CPU fallback) checked against the CPU, and a small network's
//! forward pass on the device.
//!
//! ```text
//! cargo run --release --example simple_gpu_demo
//! ```

use std::error::Error;
use std::time::Instant;

use prism_gpu::nn::{Device, Sequential, Tensor};
use prism_gpu::ProductionGpuRuntime;

fn main() -> Result<(), Box<dyn Error>> {
    match prism_gpu::probe() {
        Ok(p) => {
            println!("CUDA driver {}.{}", p.driver_version / 1000, p.driver_version % 1000 / 10);
            for d in &p.devices {
                println!(
                    "  GPU {}: {} (sm_{}{}, {} SMs, {:.1} GiB)",
                    d.ordinal,
                    d.name,
                    d.compute_capability.0,
                    d.compute_capability.1,
                    d.multiprocessors,
                    d.total_memory as f64 / (1u64 << 30) as f64
                );
            }
        }
        Err(e) => println!("no usable CUDA driver: {e}"),
    }
    let rt = ProductionGpuRuntime::initialize()?;
    let cpu = ProductionGpuRuntime::cpu();
    println!("operations run on: {}", rt.describe());

    let (m, n, k) = (257, 129, 511);
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 104_729) % 1000) as f32 / 1000.0 - 0.5).collect();
    let start = Instant::now();
    let c = rt.matmul(&a, &b, m, n, k)?;
    let took = start.elapsed();
    let c_cpu = cpu.matmul(&a, &b, m, n, k)?;
    println!(
        "matmul {m}x{k} * {k}x{n}: {:?}, largest difference to the CPU {:.2e}",
        took,
        max_diff(&c, &c_cpu)
    );
    let r = rt.relu(&c)?;
    println!("relu: {} of {} values zeroed", r.iter().filter(|&&v| v == 0.0).count(), r.len());
    let s = rt.softmax_rows(&c, m, n)?;
    println!(
        "softmax rows: first row sums to {:.6}, largest difference to the CPU {:.2e}",
        s[..n].iter().sum::<f32>(),
        max_diff(&s, &cpu.softmax_rows(&c, m, n)?)
    );

    let device = Device::auto();
    let mut model = Sequential::builder(64).linear(128).gelu().linear(10).build(&device, 1)?;
    let x = Tensor::from_vec(&device, (0..32 * 64).map(|i| (i % 17) as f32 / 17.0).collect(), &[32, 64])?;
    let logits = model.forward(&x.view(), false)?;
    println!(
        "MLP 64-128-10 forward on {}: logits {:?}, on the {}",
        device.describe(),
        logits.shape(),
        if logits.is_gpu() { "GPU" } else { "host" }
    );
    Ok(())
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).fold(0.0, |m, (x, y)| m.max((x - y).abs()))
}
