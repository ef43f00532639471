//! Launch-argument checks of our engine: a launch whose argument count or sizes do not match the
//! kernel's parameters is refused with `CUDA_ERROR_INVALID_VALUE`, and `LaunchArgs::check` says why.
//! (cudarc does not check, so these run on the production engine only.)
#![cfg(not(feature = "legacy-gpu"))]

use prism_gpu::driver::{sys, ArgumentMismatch, CudaContext, DriverError, LaunchConfig, PushKernelArg};
use prism_gpu::nvrtc::compile_ptx;

#[test]
fn mismatch_messages_name_the_kernel_and_both_lists() {
    let e = ArgumentMismatch {
        kernel: "affine".into(),
        expected: vec![8, 8, 4, 4, 4],
        complete: true,
        given: vec![8, 8, 4, 8, 4],
    };
    assert_eq!(e.first_difference(), Some(3));
    assert_eq!(
        e.to_string(),
        "kernel `affine` takes 5 parameters (8, 8, 4, 4, 4 bytes), but the launch passes 5 arguments \
         (8, 8, 4, 8, 4 bytes): argument 3 is 8 bytes where the parameter is 4"
    );
    // Our conversions live on our own error type: cudarc's `DriverError` gets none it lacks.
    let ours = prism_gpu::Error::from(e.clone());
    assert!(matches!(&ours, prism_gpu::Error::LaunchArguments(m) if *m == e), "{ours:?}");
    assert_eq!(ours.to_string(), e.to_string());
}

const AFFINE: &str = r#"
struct Pair { int a; double b; };
extern "C" __global__ void affine(float *y, const float *x, float a, float b, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}
extern "C" __global__ void take_pair(double *out, Pair p) { out[0] = p.a + p.b; }
"#;

#[repr(C)]
struct Pair {
    a: i32,
    b: f64,
}
// SAFETY: repr(C), the kernel's layout (int, then double at offset 8).
unsafe impl prism_gpu::driver::DeviceRepr for Pair {}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wrong_count_or_size_is_refused_and_right_arguments_launch() {
    let ctx = CudaContext::new(0).expect("a CUDA device");
    let stream = ctx.default_stream();
    let module = ctx.load_module(compile_ptx(AFFINE).unwrap()).unwrap();
    let f = module.load_function("affine").unwrap();
    assert_eq!(f.name(), "affine");
    assert_eq!(f.param_sizes().unwrap(), [8, 8, 4, 4, 4]);
    let n = 1003u32;
    let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
    let xd = stream.clone_htod(&x).unwrap();
    let mut yd = stream.clone_htod(&vec![f32::NAN; n as usize]).unwrap();
    let cfg = LaunchConfig::for_num_elems(n);
    let invalid = Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE));
    let (a, b, wide_n) = (1.5f32, -0.5f32, n as u64);

    // One argument short.
    let mut short = stream.launch_builder(&f);
    short.arg(&mut yd).arg(&xd).arg(&a).arg(&b);
    let e = short.check().unwrap_err();
    assert_eq!(
        (e.expected.as_slice(), e.given.as_slice(), e.complete),
        (&[8, 8, 4, 4, 4][..], &[8, 8, 4, 4][..], true)
    );
    assert!(e.to_string().contains("kernel `affine` takes 5 parameters"), "{e}");
    // SAFETY: refused before submission.
    assert_eq!(unsafe { short.launch(cfg) }.map(|_| ()), invalid);

    // A u64 where the kernel takes `unsigned`.
    let mut wide = stream.launch_builder(&f);
    wide.arg(&mut yd).arg(&xd).arg(&a).arg(&b).arg(&wide_n);
    assert_eq!(wide.check().unwrap_err().first_difference(), Some(4));
    // SAFETY: refused before submission.
    assert_eq!(unsafe { wide.launch(cfg) }.map(|_| ()), invalid);

    // One too many.
    let mut long = stream.launch_builder(&f);
    long.arg(&mut yd).arg(&xd).arg(&a).arg(&b).arg(&n).arg(&n);
    assert_eq!(long.check().unwrap_err().given.len(), 6);
    // SAFETY: refused before submission.
    assert_eq!(unsafe { long.launch(cfg) }.map(|_| ()), invalid);

    // Nothing was launched: y is still poisoned.
    assert!(stream.clone_dtoh(&yd).unwrap().iter().all(|v| v.is_nan()));

    // The right arguments launch and compute.
    let mut good = stream.launch_builder(&f);
    good.arg(&mut yd).arg(&xd).arg(&a).arg(&b).arg(&n);
    assert_eq!(good.check(), Ok(()));
    // SAFETY: affine's parameters.
    unsafe { good.launch(cfg) }.unwrap();
    let y = stream.clone_dtoh(&yd).unwrap();
    for (i, (&g, &v)) in y.iter().zip(&x).enumerate() {
        let want = a as f64 * v as f64 + b as f64;
        assert!((g as f64 - want).abs() <= 1e-5 * (1.0 + want.abs()), "y[{i}]: got {g}, want {want}");
    }

    // A struct by value: its size (16, with padding) is the parameter's.
    let pair_fn = module.load_function("take_pair").unwrap();
    assert_eq!(pair_fn.param_sizes().unwrap(), [8, 16]);
    let mut out = stream.clone_htod(&[f64::NAN]).unwrap();
    let p = Pair { a: -7, b: 0.125 };
    // SAFETY: take_pair(double*, Pair).
    unsafe { stream.launch_builder(&pair_fn).arg(&mut out).arg(&p).launch(LaunchConfig::for_num_elems(1)) }
        .unwrap();
    assert_eq!(stream.clone_dtoh(&out).unwrap(), [-6.875]);
}
