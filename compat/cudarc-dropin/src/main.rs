//! cudarc-style code, unchanged: the modern API (cudarc 0.19) and the legacy one (cudarc 0.9–0.13).

#[path = "../../common/device.rs"]
mod device;

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaDevice, LaunchAsync, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::compile_ptx;

const SRC: &str = r#"
extern "C" __global__ void saxpy(float *y, const float *x, float a, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

fn modern(
    ctx: &Arc<CudaContext>,
    x: &[f32],
    y: &[f32],
    a: f32,
) -> Result<Vec<f32>, Box<dyn std::error::Error>> {
    let stream = ctx.default_stream();
    let module = ctx.load_module(compile_ptx(SRC)?)?;
    let saxpy = module.load_function("saxpy")?;
    let xd = stream.clone_htod(x)?;
    let mut yd = stream.clone_htod(y)?;
    let n = x.len() as u32;
    let mut launch = stream.launch_builder(&saxpy);
    launch.arg(&mut yd).arg(&xd).arg(&a).arg(&n);
    unsafe { launch.launch(LaunchConfig::for_num_elems(n)) }?;
    Ok(stream.clone_dtoh(&yd)?)
}

fn legacy(x: &[f32], y: &[f32], a: f32) -> Result<Vec<f32>, Box<dyn std::error::Error>> {
    let dev = CudaDevice::new(0)?;
    dev.load_ptx(compile_ptx(SRC)?, "dropin", &["saxpy"])?;
    let saxpy = dev.get_func("dropin", "saxpy").expect("saxpy was loaded");
    let xd = dev.htod_sync_copy(x)?;
    let mut yd = dev.htod_copy(y.to_vec())?;
    let n = x.len() as u32;
    unsafe { saxpy.launch(LaunchConfig::for_num_elems(n), (&mut yd, &xd, a, n)) }?;
    Ok(dev.dtoh_sync_copy(&yd)?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(ctx) = device::open("cudarc-dropin")? else { return Ok(()) };
    let n = 100_003;
    let x: Vec<f32> = (0..n).map(|i| ((i * 37 % 1009) as f32 - 504.0) / 97.0).collect();
    let y: Vec<f32> = (0..n).map(|i| ((i * 53 % 997) as f32 - 498.0) / 89.0).collect();
    let a = -1.75f32;
    let want: Vec<f64> = x.iter().zip(&y).map(|(&x, &y)| a as f64 * x as f64 + y as f64).collect();
    for (what, got) in [("modern", modern(&ctx, &x, &y, a)?), ("legacy", legacy(&x, &y, a)?)] {
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            if (*g as f64 - w).abs() > 1e-5 * (1.0 + w.abs()) {
                return Err(format!("{what} saxpy[{i}]: got {g}, want {w}").into());
            }
        }
        println!("cudarc drop-in: {what} API saxpy over {n} values on {} matches the CPU", ctx.name()?);
        println!(
            "RESULT cudarc-dropin {what} n={n} digest={:016x}",
            device::digest(got.iter().map(|v| v.to_bits() as u64))
        );
    }
    Ok(())
}
