//! Written the way cudarc 0.19 users write it; depends on prism-gpu under the name `cudarc`.

#[path = "../../common/device.rs"]
mod device;

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::compile_ptx;
use cudarc::types::CudaTypeName;
use float8::F8E4M3;

// E4M3 decoded in software (no cuda_fp8.h, no sm_89 `cvt`): every finite byte, exactly.
const SRC: &str = r#"
__device__ float e4m3(unsigned char b) {
    float m = (float)(b & 7), v;
    int e = (b >> 3) & 15;
    if (e == 0) v = ldexpf(m / 8.0f, -6); else v = ldexpf(1.0f + m / 8.0f, e - 7);
    return (b & 128) ? -v : v;
}
extern "C" __global__ void scale_f8(float *out, const unsigned char *x, float s, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = e4m3(x[i]) * s;
}
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    assert_eq!(<F8E4M3 as CudaTypeName>::NAME, "__nv_fp8_e4m3");
    let Some(ctx) = device::open("candle-f8")? else { return Ok(()) };
    let stream = ctx.default_stream();
    let n = 200_003usize;
    // Mostly in E4M3's range (|x| <= 448); NaN bytes (0x7F, 0xFF) left out.
    let x: Vec<F8E4M3> = device::inputs(5, n)
        .into_iter()
        .map(|v| F8E4M3::from_f32(v * 300.0))
        .map(|v| if v.is_nan() { F8E4M3::from_f32(1.0) } else { v })
        .collect();
    // Round trip: the bytes come back unchanged; a zeroed slice reads back as zeros.
    let xd: CudaSlice<F8E4M3> = stream.clone_htod(&x)?;
    let back: Vec<F8E4M3> = stream.clone_dtoh(&xd)?;
    assert!(back.iter().zip(&x).all(|(a, b)| a.to_bits() == b.to_bits()), "f8 round trip changed bytes");
    let zeros: Vec<F8E4M3> = stream.clone_dtoh(&stream.alloc_zeros::<F8E4M3>(n)?)?;
    assert!(zeros.iter().all(|z| z.to_bits() == 0), "alloc_zeros::<F8E4M3> is not zero");

    let module = ctx.load_module(compile_ptx(SRC)?)?;
    let f = module.load_function("scale_f8")?;
    let mut out = stream.alloc_zeros::<f32>(n)?;
    let (s, n32) = (-0.375f32, n as u32);
    let mut launch = stream.launch_builder(&f);
    launch.arg(&mut out).arg(&xd).arg(&s).arg(&n32);
    unsafe { launch.launch(LaunchConfig::for_num_elems(n32)) }?;
    let got = stream.clone_dtoh(&out)?;
    for (i, (g, x)) in got.iter().zip(&x).enumerate() {
        let want = x.to_f32() * s;
        if g.to_bits() != want.to_bits() {
            return Err(format!("scale_f8[{i}] of {x}: got {g}, want {want}").into());
        }
    }
    println!(
        "candle-f8: {n} F8E4M3 values round-trip and decode on the GPU exactly as on the CPU, on {}",
        ctx.name()?
    );
    println!("RESULT candle-f8 n={n} digest={:016x}", device::digest(got.iter().map(|v| v.to_bits() as u64)));
    Ok(())
}
