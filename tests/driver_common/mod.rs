//! The kernels and helpers of the driver GPU tests (`driver_gpu`, `per_thread_stream_gpu`).
#![allow(dead_code)] // each test binary uses part of this

use std::sync::Arc;

use prism_gpu::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
};
use prism_gpu::nvrtc::compile_ptx;

pub const KERNELS: &str = r#"
struct Pair { int a; float b; double c; };

extern "C" __global__ void affine(float *y, const float *x, float a, float b, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}

// Spins for `spin` cycles, then y = 2x + 1: slow enough to expose a missing cross-stream wait.
extern "C" __global__ void slow_affine(float *y, const float *x, unsigned n, long long spin) {
    long long start = clock64();
    while (clock64() - start < spin) { }
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}

extern "C" __global__ void scalars(double *out, signed char a, short b, int c, long long d,
                                   unsigned char e, unsigned short f, unsigned g, unsigned long long h,
                                   float fl, double db, unsigned short half_bits, Pair p) {
    out[0] = a; out[1] = b; out[2] = c; out[3] = (double)d; out[4] = e; out[5] = f; out[6] = g;
    out[7] = (double)h; out[8] = fl; out[9] = db; out[10] = half_bits; out[11] = p.a; out[12] = p.b;
    out[13] = p.c;
}

__constant__ float coeffs[4];
extern "C" __global__ void poly(float *y, const float *x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; y[i] = coeffs[0] + v * (coeffs[1] + v * (coeffs[2] + v * coeffs[3])); }
}
"#;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Pair {
    pub a: i32,
    pub b: f32,
    pub c: f64,
}
// SAFETY: repr(C), plain numbers, same layout as the kernel's struct.
unsafe impl DeviceRepr for Pair {}

/// xorshift64*: deterministic random data with no extra dependency.
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0).collect()
    }
}

pub fn setup() -> (Arc<CudaContext>, Arc<CudaModule>) {
    let ctx = CudaContext::new(0).expect("a CUDA device");
    let module = ctx.load_module(compile_ptx(KERNELS).expect("kernels compile")).expect("module loads");
    (ctx, module)
}

pub fn assert_close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{what}[{i}]: got {g}, want {w}");
    }
}

/// About 20 ms of spinning at H100 clocks.
pub const SPIN: i64 = 30_000_000;

pub fn launch_affine(
    s: &Arc<CudaStream>,
    f: &CudaFunction,
    y: &mut CudaSlice<f32>,
    x: &CudaSlice<f32>,
    a: f32,
    b: f32,
) {
    let n = x.len() as u32;
    // SAFETY: arguments match affine(float*, const float*, float, float, unsigned); n = len.
    unsafe {
        s.launch_builder(f).arg(y).arg(x).arg(&a).arg(&b).arg(&n).launch(LaunchConfig::for_num_elems(n))
    }
    .unwrap();
}

pub fn launch_slow(s: &Arc<CudaStream>, f: &CudaFunction, y: &mut CudaSlice<f32>, x: &CudaSlice<f32>) {
    let n = x.len() as u32;
    // SAFETY: arguments match slow_affine(float*, const float*, unsigned, long long).
    unsafe { s.launch_builder(f).arg(y).arg(x).arg(&n).arg(&SPIN).launch(LaunchConfig::for_num_elems(n)) }
        .unwrap();
}
