//! `ProductionGpuRuntime::matmul_bias_act` (a dense layer's `act(a·b + bias)` with the bias and
//! activation fused into the GEMM on a GPU) and `GpuOps::bias_act`, against an f64 reference
//! written here, on the CPU fallback and (ignored without one) on a GPU; odd sizes, every
//! activation, each precision the entry point takes; bad shapes are errors.

use prism_gpu::raw::kernels::gemm::FusedActivation;
use prism_gpu::rng::SplitMix64;
use prism_gpu::{Error, Precision, ProductionGpuRuntime};

const ACTS: [FusedActivation; 3] = [FusedActivation::Identity, FusedActivation::Relu, FusedActivation::Gelu];

fn act64(act: FusedActivation, x: f64) -> f64 {
    match act {
        FusedActivation::Identity => x,
        FusedActivation::Relu => x.max(0.0),
        FusedActivation::Gelu => {
            let u = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
            0.5 * x * (1.0 + u.tanh())
        }
    }
}

/// `act(a·b + bias)` in f64 (row-major a m x k, b k x n, bias n), and each output's magnitude
/// `Σ|a·b| + |bias|`: the scale of its rounding error, also where the sum cancels.
fn reference(
    a: &[f32],
    b: &[f32],
    bias: &[f32],
    (m, n, k): (usize, usize, usize),
    act: FusedActivation,
) -> (Vec<f64>, Vec<f64>) {
    let (mut out, mut magnitude) = (vec![0.0; m * n], vec![0.0; m * n]);
    for i in 0..m {
        for j in 0..n {
            let terms = (0..k).map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]));
            let (dot, size) = terms.fold((0.0, 0.0), |(d, s), t| (d + t, s + t.abs()));
            out[i * n + j] = act64(act, dot + f64::from(bias[j]));
            magnitude[i * n + j] = size + f64::from(bias[j]).abs();
        }
    }
    (out, magnitude)
}

/// Largest |got - want| / max(|want|, magnitude) over the elements.
fn worst_error(got: &[f32], want: &[f64], magnitude: &[f64]) -> f64 {
    assert!(got.len() == want.len() && want.len() == magnitude.len());
    let scaled = got.iter().zip(want).zip(magnitude);
    scaled.map(|((&g, &w), &s)| (f64::from(g) - w).abs() / w.abs().max(s).max(1e-30)).fold(0.0, f64::max)
}

/// The fused product against the f64 reference (F32 and TF32, each within its tolerance), then the
/// shape errors.
fn check_all(rt: &ProductionGpuRuntime) {
    let mut rng = SplitMix64::from_time();
    for (m, n, k) in [(1, 1, 1), (7, 5, 3), (1, 300, 257), (33, 129, 65), (136, 200, 264)] {
        let (a, b, bias) = (rng.vec(m * k, -1.0, 1.0), rng.vec(k * n, -1.0, 1.0), rng.vec(n, -1.0, 1.0));
        for act in ACTS {
            let (want, magnitude) = reference(&a, &b, &bias, (m, n, k), act);
            for (precision, tol) in [(Precision::F32, 1e-5), (Precision::Tf32, 5e-3)] {
                let got = rt.matmul_bias_act(&a, &b, &bias, (m, n, k), act, precision).unwrap();
                let err = worst_error(&got, &want, &magnitude);
                assert!(
                    err <= tol,
                    "{} {m}x{n}x{k} {act:?} {precision:?}: error {err:.2e} > {tol:.0e}",
                    rt.describe()
                );
            }
        }
    }
    shape_errors(rt);
}

fn shape_errors(rt: &ProductionGpuRuntime) {
    let (a, b, bias) = (vec![1.0f32; 6], vec![1.0f32; 12], vec![0.5f32; 4]);
    let run = |a: &[f32], bias: &[f32]| {
        rt.matmul_bias_act(a, &b, bias, (2, 4, 3), FusedActivation::Gelu, Precision::F32)
    };
    assert!(run(&a, &bias).is_ok());
    for (what, got) in [("short bias", run(&a, &bias[..3])), ("short a", run(&a[..5], &bias))] {
        assert!(matches!(got, Err(Error::Shape { .. })), "{what}: {got:?}");
    }
}

#[test]
fn cpu_fallback_matches_the_reference() {
    let rt = ProductionGpuRuntime::cpu();
    check_all(&rt);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_fused_matches_the_reference() {
    let rt = ProductionGpuRuntime::with_device(0).expect("a CUDA GPU");
    check_all(&rt);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_bias_act_pass_on_bf16_matches_the_reference() {
    use half::bf16;
    let rt = ProductionGpuRuntime::with_device(0).expect("a CUDA GPU");
    let ops = rt.gpu().unwrap();
    let mut rng = SplitMix64::from_time();
    let (rows, cols) = (37, 1029);
    let x: Vec<bf16> = rng.vec(rows * cols, -3.0, 3.0).into_iter().map(bf16::from_f32).collect();
    let bias: Vec<bf16> = rng.vec(cols, -1.0, 1.0).into_iter().map(bf16::from_f32).collect();
    for act in ACTS {
        let mut c = ops.upload(&x).unwrap();
        let dbias = ops.upload(&bias).unwrap();
        ops.bias_act(&mut c.as_view_mut(), (rows, cols), Some(&dbias.as_view()), act).unwrap();
        let got: Vec<f32> = ops.download(&c).unwrap().into_iter().map(f32::from).collect();
        let (x_at, bias_at) =
            (|i: usize| f64::from(x[i].to_f32()), |i: usize| f64::from(bias[i % cols].to_f32()));
        let want: Vec<f64> = (0..rows * cols).map(|i| act64(act, x_at(i) + bias_at(i))).collect();
        let magnitude: Vec<f64> = (0..rows * cols).map(|i| x_at(i).abs() + bias_at(i).abs()).collect();
        let err = worst_error(&got, &want, &magnitude);
        assert!(err <= 8e-3, "bias_act bf16 {act:?}: error {err:.2e}");
        // A short bias is an error, and the matrix is left alone.
        let short = ops.upload(&bias[..cols - 1]).unwrap();
        let before = ops.download(&c).unwrap();
        assert!(ops.bias_act(&mut c.as_view_mut(), (rows, cols), Some(&short.as_view()), act).is_err());
        assert_eq!(ops.download(&c).unwrap(), before);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_split_k_on_sm90_applies_the_epilogue() {
    // 64 x 2048 x 2048 in TF32: on sm_90 devices the rules split k over the sm_90 kernels (8
    // slices of 16 tiles), and the reduction applies the bias and the activation. The plan is
    // checked, then the answers.
    use prism_gpu::raw::kernels::gemm::tuning::{self, Kernel, SplitOn};
    use prism_gpu::Gemm;
    let rt = ProductionGpuRuntime::with_device(0).expect("a CUDA GPU");
    let ops = rt.gpu().unwrap();
    let (m, n, k) = (64, 2048, 2048);
    let mut rng = SplitMix64::from_time();
    let (a, b, bias) = (rng.vec(m * k, -1.0, 1.0), rng.vec(k * n, -1.0, 1.0), rng.vec(n, -1.0, 1.0));
    let (da, db) = (ops.upload(&a).unwrap(), ops.upload(&b).unwrap());
    let g = Gemm::new(m, n, k).with_precision(Precision::Tf32);
    let plan =
        tuning::plan_of::<f32, f32>(ops.kernels(), ops.stream(), &g, &da.as_view(), &db.as_view()).unwrap();
    let sm90 = tuning::device(ops.kernels()).unwrap().sm90;
    let split_on_sm90 = matches!(plan.kernel, Kernel::SplitK { on: SplitOn::Sm90 { .. }, .. });
    assert_eq!(split_on_sm90, sm90, "{m}x{n}x{k} TF32 runs {plan} on a device with sm90 = {sm90}");
    for act in ACTS {
        let (want, magnitude) = reference(&a, &b, &bias, (m, n, k), act);
        let got = rt.matmul_bias_act(&a, &b, &bias, (m, n, k), act, Precision::Tf32).unwrap();
        let err = worst_error(&got, &want, &magnitude);
        assert!(err <= 5e-3, "{m}x{n}x{k} {act:?} TF32 on {plan}: error {err:.2e} > 5e-3");
    }
}
