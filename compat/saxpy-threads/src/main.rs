//! Written the way cudarc 0.19 users write it; depends on prism-gpu under the name `cudarc`.

#[path = "../../common/device.rs"]
mod device;

use std::sync::Arc;
use std::thread;

use cudarc::driver::{sys, CudaContext, CudaModule, DriverError, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::compile_ptx;

const SRC: &str = r#"
extern "C" __global__ void saxpy(float *y, const float *x, float a, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

/// One saxpy on a stream of its own.
fn saxpy(
    ctx: &Arc<CudaContext>,
    module: &Arc<CudaModule>,
    x: &[f32],
    y: &[f32],
    a: f32,
) -> Result<Vec<f32>, DriverError> {
    let stream = ctx.new_stream()?;
    let f = module.load_function("saxpy")?;
    let xd = stream.clone_htod(x)?;
    let mut yd = stream.clone_htod(y)?;
    let n = x.len() as u32;
    let mut launch = stream.launch_builder(&f);
    launch.arg(&mut yd).arg(&xd).arg(&a).arg(&n);
    unsafe { launch.launch(LaunchConfig::for_num_elems(n)) }?;
    stream.clone_dtoh(&yd)
}

/// cudarc's example 06: `?` inside the scope's closure, which ends in `Ok(())`, and inside each thread.
fn threaded(
    ctx: &Arc<CudaContext>,
    x: &[f32],
    y: &[f32],
    a: f32,
    threads: usize,
) -> Result<Vec<f32>, DriverError> {
    let chunk = x.len().div_ceil(threads);
    let mut out = Vec::with_capacity(x.len());
    thread::scope(|s| {
        let ptx = compile_ptx(SRC).unwrap();
        let module = ctx.load_module(ptx)?;
        let handles: Vec<_> = x
            .chunks(chunk)
            .zip(y.chunks(chunk))
            .map(|(x, y)| {
                let ctx = ctx.clone();
                let module = module.clone();
                s.spawn(move || {
                    ctx.bind_to_thread()?;
                    saxpy(&ctx, &module, x, y, a)
                })
            })
            .collect();
        for handle in handles {
            out.extend(handle.join().expect("saxpy thread panicked")?);
        }
        Ok(())
    })?;
    Ok(out)
}

/// cudarc's example 12: an exhaustive match on a `sys` enum, no wildcard arm.
fn cache_config(ctx: &Arc<CudaContext>) -> Result<&'static str, DriverError> {
    Ok(match ctx.get_cache_config()? {
        sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_NONE => "prefer none",
        sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_SHARED => "prefer shared",
        sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_L1 => "prefer L1",
        sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_EQUAL => "prefer equal",
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(ctx) = device::open("saxpy-threads")? else { return Ok(()) };
    let n = 1 << 20;
    let (x, y, a) = (device::inputs(1, n), device::inputs(2, n), -1.75f32);
    let want: Vec<f64> = x.iter().zip(&y).map(|(&x, &y)| a as f64 * x as f64 + y as f64).collect();
    let module = ctx.load_module(compile_ptx(SRC)?)?;
    let single = saxpy(&ctx, &module, &x, &y, a)?;
    let threaded = threaded(&ctx, &x, &y, a, 4)?;
    for (what, got) in [("single", &single), ("threaded", &threaded)] {
        assert_eq!(got.len(), n, "{what}: length");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            if (*g as f64 - w).abs() > 1e-5 * (1.0 + w.abs()) {
                return Err(format!("{what} saxpy[{i}]: got {g}, want {w}").into());
            }
        }
    }
    assert!(single == threaded, "one stream and four threads computed different bits");
    println!("saxpy-threads: {n} values on one stream and on 4 threads match the CPU on {}", ctx.name()?);
    println!(
        "RESULT saxpy-threads n={n} digest={:016x}",
        device::digest(single.iter().map(|v| v.to_bits() as u64))
    );
    println!("RESULT saxpy-threads cache-config={}", cache_config(&ctx)?);
    Ok(())
}
