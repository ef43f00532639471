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

/// `act(a·b + bias)` in f64 (row-major a m x k, b k x n, bias n).
fn reference(
    a: &[f32],
    b: &[f32],
    bias: &[f32],
    (m, n, k): (usize, usize, usize),
    act: FusedActivation,
) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let dot: f64 = (0..k).map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j])).sum();
            out[i * n + j] = act64(act, dot + f64::from(bias[j]));
        }
    }
    out
}

/// Largest |got - want| / max(|want|, RMS of want).
fn worst_error(got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let rms = (want.iter().map(|w| w * w).sum::<f64>() / want.len().max(1) as f64).sqrt().max(1e-30);
    got.iter().zip(want).map(|(&g, &w)| (f64::from(g) - w).abs() / w.abs().max(rms)).fold(0.0, f64::max)
}

/// The fused product against the f64 reference (F32 and TF32, each within its tolerance), then the
/// shape errors.
fn check_all(rt: &ProductionGpuRuntime) {
    let mut rng = SplitMix64::from_time();
    for (m, n, k) in [(1, 1, 1), (7, 5, 3), (33, 129, 65), (136, 200, 264)] {
        let (a, b, bias) = (rng.vec(m * k, -1.0, 1.0), rng.vec(k * n, -1.0, 1.0), rng.vec(n, -1.0, 1.0));
        for act in ACTS {
            let want = reference(&a, &b, &bias, (m, n, k), act);
            for (precision, tol) in [(Precision::F32, 1e-5), (Precision::Tf32, 5e-3)] {
                let got = rt.matmul_bias_act(&a, &b, &bias, (m, n, k), act, precision).unwrap();
                let err = worst_error(&got, &want);
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
        let want: Vec<f64> = (0..rows * cols)
            .map(|i| act64(act, f64::from(x[i].to_f32()) + f64::from(bias[i % cols].to_f32())))
            .collect();
        let err = worst_error(&got, &want);
        assert!(err <= 8e-3, "bias_act bf16 {act:?}: error {err:.2e}");
        // A short bias is an error, and the matrix is left alone.
        let short = ops.upload(&bias[..cols - 1]).unwrap();
        let before = ops.download(&c).unwrap();
        assert!(ops.bias_act(&mut c.as_view_mut(), (rows, cols), Some(&short.as_view()), act).is_err());
        assert_eq!(ops.download(&c).unwrap(), before);
    }
}
