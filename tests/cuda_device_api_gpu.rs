//! GPU tests of the cudarc 0.9–0.13 `CudaDevice` API (`CudaDevice`, `LaunchAsync`) on either engine:
//! random inputs, outputs poisoned first, f64 references.
//! Run with `cargo test --release -- --include-ignored` on a machine with a CUDA GPU.

mod support;

use std::ffi::c_void;
use std::sync::Arc;

use prism_gpu::driver::legacy::DevicePtr as _;
#[cfg(feature = "legacy-gpu")]
use prism_gpu::driver::SliceDevice as _;
use prism_gpu::driver::{sys, CudaDevice, CudaFunction, CudaSlice, DriverError, LaunchAsync, LaunchConfig};
use prism_gpu::nvrtc::compile_ptx;
use support::{clock_seed, Rng};

fn kernels() -> String {
    let params: Vec<String> = (1..32).map(|i| format!("float a{i}")).collect();
    let sum: Vec<String> = (1..32).map(|i| format!("a{i}")).collect();
    format!(
        r#"
extern "C" __global__ void affine(float *y, const float *x, float a, float b, unsigned n) {{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}}
extern "C" __global__ void mix(double *y, const float *x, long long k, unsigned char c, short s, unsigned n) {{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = (double)x[i] * (double)k + (double)c - (double)s;
}}
extern "C" __global__ void sum32(float *out, {}) {{
    if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = {};
}}
"#,
        params.join(", "),
        sum.join(" + ")
    )
}

impl Rng {
    fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0).collect()
    }
}

fn device() -> Arc<CudaDevice> {
    let dev = CudaDevice::new(0).expect("a CUDA device");
    dev.load_ptx(compile_ptx(kernels()).expect("kernels compile"), "legacy", &["affine", "mix", "sum32"])
        .expect("module loads");
    dev
}

fn assert_close(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((*g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()), "{what}[{i}]: got {g}, want {w}");
    }
}

fn affine_ref(x: &[f32], a: f32, b: f32) -> Vec<f64> {
    x.iter().map(|&v| a as f64 * v as f64 + b as f64).collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_describes_itself() {
    let dev = device();
    assert!(CudaDevice::count().unwrap() >= 1);
    assert_eq!(dev.ordinal(), 0);
    assert!(!dev.name().unwrap().is_empty());
    let major = dev.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR).unwrap();
    assert!(major >= 5, "compute capability {major}");
    assert_eq!(*dev.cu_device(), dev.context().cu_device());
    assert_eq!(*dev.cu_stream(), dev.stream().cu_stream());
    dev.bind_to_thread().unwrap();
    assert!(dev.has_func("legacy", "affine") && dev.has_func("legacy", "sum32"));
    assert!(!dev.has_func("legacy", "nope") && !dev.has_func("other", "affine"));
    assert!(dev.get_func("legacy", "nope").is_none());
    assert!(dev.get_func("other", "affine").is_none());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn copies_round_trip() {
    let dev = device();
    let mut rng = Rng(clock_seed());
    let n = 10_007;
    let x = rng.f32s(n);
    let d = dev.htod_copy(x.clone()).unwrap();
    assert_eq!(dev.dtoh_sync_copy(&d).unwrap(), x);
    let d2 = dev.htod_sync_copy(&x).unwrap();
    let mut back = vec![f32::NAN; n];
    dev.dtoh_sync_copy_into(&d2, &mut back).unwrap();
    assert_eq!(back, x);

    let mut into = dev.alloc_zeros::<f32>(n).unwrap();
    let y = rng.f32s(n);
    dev.htod_copy_into(y.clone(), &mut into).unwrap();
    assert_eq!(dev.dtoh_sync_copy(&into).unwrap(), y);
    dev.htod_sync_copy_into(&x, &mut into).unwrap();
    assert_eq!(dev.dtoh_sync_copy(&into).unwrap(), x);

    let mut copy = dev.htod_copy(vec![f32::NAN; n]).unwrap();
    dev.dtod_copy(&d, &mut copy).unwrap();
    dev.memset_zeros(&mut into).unwrap();
    assert!(dev.dtoh_sync_copy(&into).unwrap().iter().all(|&v| v == 0.0));
    assert_eq!(dev.sync_reclaim(copy).unwrap(), x);

    // A view: the middle of `d`.
    assert_eq!(dev.dtoh_sync_copy(&d.slice(3..20)).unwrap(), x[3..20]);
    // SAFETY: written right away.
    let mut raw = unsafe { dev.alloc::<f32>(5) }.unwrap();
    dev.htod_sync_copy_into(&x[..5], &mut raw).unwrap();
    assert_eq!(dev.dtoh_sync_copy(&raw).unwrap(), x[..5]);
    assert_eq!(dev.null::<f32>().unwrap().len(), 0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn short_destinations_are_errors_not_panics() {
    let dev = device();
    let invalid = DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE);
    let mut small = dev.alloc_zeros::<f32>(3).unwrap();
    let big = dev.htod_copy(vec![1.0f32; 4]).unwrap();
    assert_eq!(dev.htod_sync_copy_into(&[1.0f32; 4], &mut small), Err(invalid));
    assert_eq!(dev.htod_copy_into(vec![1.0f32; 4], &mut small), Err(invalid));
    assert_eq!(dev.dtod_copy(&big, &mut small), Err(invalid));
    assert_eq!(dev.dtoh_sync_copy_into(&big, &mut [0.0f32; 3]), Err(invalid));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn launch_with_slices_views_and_scalars() {
    let dev = device();
    let mut rng = Rng(clock_seed());
    let n = 4099;
    let x = rng.f32s(n);
    let (a, b) = (rng.f32s(1)[0], rng.f32s(1)[0]);
    let xd = dev.htod_copy(x.clone()).unwrap();
    let mut yd = dev.htod_copy(vec![f32::NAN; n]).unwrap();
    let affine = dev.get_func("legacy", "affine").unwrap();
    // SAFETY: affine(float*, const float*, float, float, unsigned) with n = len.
    unsafe { affine.clone().launch(LaunchConfig::for_num_elems(n as u32), (&mut yd, &xd, a, b, n as u32)) }
        .unwrap();
    assert_close(&dev.dtoh_sync_copy(&yd).unwrap(), &affine_ref(&x, a, b), "slices");

    // Views: y[5..] = a * x[7..] + b over the shorter length.
    let m = n - 7;
    let mut yd = dev.htod_copy(vec![f32::NAN; n]).unwrap();
    {
        let mut yv = yd.slice_mut(5..5 + m);
        let xv = xd.slice(7..);
        // SAFETY: as above, m elements in both views.
        unsafe {
            affine.clone().launch(LaunchConfig::for_num_elems(m as u32), (&mut yv, &xv, a, b, m as u32))
        }
        .unwrap();
    }
    let y = dev.dtoh_sync_copy(&yd).unwrap();
    assert!(y[..5].iter().chain(&y[5 + m..]).all(|v| v.is_nan()), "outside the view stays poisoned");
    assert_close(&y[5..5 + m], &affine_ref(&x[7..], a, b), "views");

    // Mixed widths: double out, long long, unsigned char, short.
    let mix = dev.get_func("legacy", "mix").unwrap();
    let (k, c, s) =
        (-((rng.next() % 1000) as i64) - 1, (rng.next() % 256) as u8, (rng.next() % 30000) as i16 - 15000);
    let mut out = dev.htod_copy(vec![f64::NAN; n]).unwrap();
    // SAFETY: mix(double*, const float*, long long, unsigned char, short, unsigned).
    unsafe { mix.launch(LaunchConfig::for_num_elems(n as u32), (&mut out, &xd, k, c, s, n as u32)) }.unwrap();
    let got = dev.dtoh_sync_copy(&out).unwrap();
    for (i, (&g, &v)) in got.iter().zip(&x).enumerate() {
        let want = v as f64 * k as f64 + c as f64 - s as f64;
        assert!((g - want).abs() <= 1e-9 * (1.0 + want.abs()), "mix[{i}]: got {g}, want {want}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn thirty_two_arguments() {
    let dev = device();
    let v = Rng(clock_seed()).f32s(31);
    let mut out = dev.htod_copy(vec![f32::NAN]).unwrap();
    let f = dev.get_func("legacy", "sum32").unwrap();
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    #[rustfmt::skip]
    let params = (
        &mut out, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14],
        v[15], v[16], v[17], v[18], v[19], v[20], v[21], v[22], v[23], v[24], v[25], v[26], v[27], v[28], v[29], v[30],
    );
    // SAFETY: sum32(float*, 31 floats).
    unsafe { f.launch(cfg, params) }.unwrap();
    let want: f64 = v.iter().map(|&x| x as f64).sum();
    assert_close(&dev.dtoh_sync_copy(&out).unwrap(), &[want], "sum32");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn forked_stream_raw_params_and_cooperative_launch() {
    let dev = device();
    let mut rng = Rng(clock_seed());
    let n = 1001u32;
    let x = rng.f32s(n as usize);
    let xd = dev.htod_copy(x.clone()).unwrap();
    let mut yd = dev.htod_copy(vec![f32::NAN; n as usize]).unwrap();
    let affine = dev.get_func("legacy", "affine").unwrap();
    let cfg = LaunchConfig { grid_dim: (n.div_ceil(256), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };

    let stream = dev.fork_default_stream().unwrap();
    // SAFETY: affine's parameters.
    unsafe { affine.clone().launch_on_stream(&stream, cfg, (&mut yd, &xd, 3.0f32, -1.0f32, n)) }.unwrap();
    dev.wait_for(&stream).unwrap();
    assert_close(&dev.dtoh_sync_copy(&yd).unwrap(), &affine_ref(&x, 3.0, -1.0), "forked stream");

    // The raw parameter array: one pointer per parameter.
    let (mut y_ptr, mut x_ptr) = (*yd.device_ptr(), *xd.device_ptr());
    let (mut a, mut b, mut count) = (0.5f32, 2.0f32, n);
    let mut params: Vec<*mut c_void> = vec![
        (&mut y_ptr as *mut u64).cast(),
        (&mut x_ptr as *mut u64).cast(),
        (&mut a as *mut f32).cast(),
        (&mut b as *mut f32).cast(),
        (&mut count as *mut u32).cast(),
    ];
    // SAFETY: each pointer points at a live value of the matching parameter type.
    unsafe { affine.clone().launch(cfg, &mut params[..]) }.unwrap();
    assert_close(&dev.dtoh_sync_copy(&yd).unwrap(), &affine_ref(&x, 0.5, 2.0), "raw parameters");

    // Cooperative launch: 4 blocks of 256 are resident at once on any device.
    // SAFETY: affine's parameters.
    unsafe { affine.launch_cooperative(cfg, (&mut yd, &xd, -2.0f32, 0.25f32, n)) }.unwrap();
    dev.synchronize().unwrap();
    assert_close(&dev.dtoh_sync_copy(&yd).unwrap(), &affine_ref(&x, -2.0, 0.25), "cooperative");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn slices_know_their_device_and_raw_pointers_agree() {
    let dev = device();
    let x: CudaSlice<f32> = dev.htod_copy(vec![1.0, 2.0, 3.0]).unwrap();
    let again = x.device();
    assert!(Arc::ptr_eq(&again, &dev), "the live device is found, with its modules");
    assert!(again.has_func("legacy", "affine"));
    let (modern, _guard) = prism_gpu::driver::DevicePtr::device_ptr(&x, dev.stream());
    assert_eq!(*x.device_ptr(), modern);
    assert_eq!(*x.slice(1..).device_ptr(), modern + 4);

    // A second device object on its own stream is a different device with no modules.
    let other = CudaDevice::new_with_stream(0).unwrap();
    let y = other.htod_copy(vec![4.0f32]).unwrap();
    assert!(Arc::ptr_eq(&y.device(), &other));
    assert!(other.get_func("legacy", "affine").is_none());
    assert_eq!(other.dtoh_sync_copy(&y).unwrap(), [4.0]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_kernel_not_loaded_by_a_device_needs_a_stream() {
    let dev = device();
    let module = dev.context().load_module(compile_ptx(kernels()).unwrap()).unwrap();
    let f: CudaFunction = module.load_function("affine").unwrap();
    let xd = dev.htod_copy(vec![1.0f32; 8]).unwrap();
    let mut yd = dev.htod_copy(vec![f32::NAN; 8]).unwrap();
    let cfg = LaunchConfig::for_num_elems(8);
    // SAFETY: affine's parameters.
    let err = unsafe { f.clone().launch(cfg, (&mut yd, &xd, 2.0f32, 1.0f32, 8u32)) };
    assert_eq!(err, Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_HANDLE)));
    // SAFETY: affine's parameters.
    unsafe { f.launch_on_stream(dev.stream(), cfg, (&mut yd, &xd, 2.0f32, 1.0f32, 8u32)) }.unwrap();
    assert_eq!(dev.dtoh_sync_copy(&yd).unwrap(), [3.0f32; 8]);
}
