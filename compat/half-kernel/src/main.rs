//! Written the way cudarc 0.19 users write it; depends on prism-gpu under the name `cudarc`.

#[path = "../../common/device.rs"]
mod device;

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::compile_ptx;
use half::f16;

// No cuda_fp16.h (NVRTC may not find it): halves travel as their 16 bits, converted with PTX `cvt`.
const SRC: &str = r#"
__device__ float h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ unsigned short f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
extern "C" __global__ void axpby(unsigned short *z, const unsigned short *x, const unsigned short *y,
                                 unsigned short a, float b, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = f2h(h2f(a) * h2f(x[i]) + b * h2f(y[i]));
}
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(ctx) = device::open("half-kernel")? else { return Ok(()) };
    let stream = ctx.default_stream();
    let n = 300_007usize;
    let x: Vec<f16> = device::inputs(3, n).into_iter().map(|v| f16::from_f32(v * 8.0)).collect();
    let y: Vec<f16> = device::inputs(4, n).into_iter().map(f16::from_f32).collect();
    let (a, b) = (f16::from_f32(-0.8125), 3.5f32);
    let module = ctx.load_module(compile_ptx(SRC)?)?;
    let f = module.load_function("axpby")?;
    let xd: CudaSlice<f16> = stream.clone_htod(&x)?;
    let yd = stream.clone_htod(&y)?;
    let mut zd = stream.alloc_zeros::<f16>(n)?;
    let n32 = n as u32;
    let mut launch = stream.launch_builder(&f);
    launch.arg(&mut zd).arg(&xd).arg(&yd).arg(&a).arg(&b).arg(&n32);
    unsafe { launch.launch(LaunchConfig::for_num_elems(n32)) }?;
    let z: Vec<f16> = stream.clone_dtoh(&zd)?;
    assert_eq!(z.len(), n);
    for (i, ((&z, &x), &y)) in z.iter().zip(&x).zip(&y).enumerate() {
        let want = a.to_f64() * x.to_f64() + b as f64 * y.to_f64();
        // One f16 rounding of a value computed in f32: within an f16 ulp.
        if (z.to_f64() - want).abs() > 1.0e-3 * (1.0 + want.abs()) {
            return Err(format!("axpby[{i}]: got {z}, want {want}").into());
        }
    }
    println!("half-kernel: {n} half::f16 values through a kernel match the CPU on {}", ctx.name()?);
    println!("RESULT half-kernel n={n} digest={:016x}", device::digest(z.iter().map(|v| v.to_bits() as u64)));
    Ok(())
}
