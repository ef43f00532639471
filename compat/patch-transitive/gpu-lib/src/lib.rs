//! A library over cudarc 0.19 from crates.io, re-exporting it as candle does.

#[path = "../../../common/device.rs"]
mod device;

pub use cudarc;

use cudarc::driver::{LaunchConfig, PushKernelArg};
use cudarc::nvrtc::compile_ptx;

const SRC: &str = r#"
extern "C" __global__ void dot_partial(float *out, const float *x, const float *y, unsigned n) {
    __shared__ float acc[256];
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    acc[threadIdx.x] = i < n ? x[i] * y[i] : 0.0f;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) acc[threadIdx.x] += acc[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = acc[0];
}
"#;

/// Block-wise partial dot products of two vectors on device 0, checked against the CPU; prints the
/// result line. `Ok(())` without a device (after saying so).
pub fn run(program: &str) -> Result<(), Box<dyn std::error::Error>> {
    let Some(ctx) = device::open(program)? else { return Ok(()) };
    let stream = ctx.default_stream();
    let n = 1_000_003usize;
    let (x, y) = (device::inputs(6, n), device::inputs(7, n));
    let module = ctx.load_module(compile_ptx(SRC)?)?;
    let f = module.load_function("dot_partial")?;
    let (xd, yd) = (stream.clone_htod(&x)?, stream.clone_htod(&y)?);
    let blocks = n.div_ceil(256);
    let mut out = stream.alloc_zeros::<f32>(blocks)?;
    let n32 = n as u32;
    let cfg = LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let mut launch = stream.launch_builder(&f);
    launch.arg(&mut out).arg(&xd).arg(&yd).arg(&n32);
    unsafe { launch.launch(cfg) }?;
    let partial = stream.clone_dtoh(&out)?;
    for (b, got) in partial.iter().enumerate() {
        let range = b * 256..((b + 1) * 256).min(n);
        let want: f64 = range.map(|i| x[i] as f64 * y[i] as f64).sum();
        if (*got as f64 - want).abs() > 1e-4 * (1.0 + want.abs()) {
            return Err(format!("block {b}: got {got}, want {want}").into());
        }
    }
    let total: f64 = partial.iter().map(|&p| p as f64).sum();
    println!("{program}: {blocks} partial dot products over {n} values match the CPU (total {total:.6})");
    println!(
        "RESULT {program} n={n} digest={:016x}",
        device::digest(partial.iter().map(|v| v.to_bits() as u64))
    );
    Ok(())
}
