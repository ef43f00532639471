//! GEMM on the CPU fallback (no GPU needed): every precision and transpose combination, alpha and
//! beta, batches, padded leading dimensions, empty dimensions and shape errors, against an f64
//! reference on fresh random inputs.

mod gemm_common;

use gemm_common::*;
use half::bf16;
use prism_gpu::rng::SplitMix64;
use prism_gpu::{Error, Gemm, Precision, ProductionGpuRuntime};

fn cpu() -> ProductionGpuRuntime {
    ProductionGpuRuntime::cpu()
}

#[test]
fn odd_shapes_every_precision_transpose_and_beta() {
    let (rt, mut rng) = (cpu(), SplitMix64::from_time());
    for (m, n, k) in ODD_SHAPES {
        for (ta, tb) in TRANSPOSES {
            for precision in PRECISIONS {
                for (alpha, beta) in [(1.0, 0.0), (0.75, -0.5)] {
                    let spec = Spec::new(m, n, k).trans(ta, tb).scaled(alpha, beta).precision(precision);
                    run_f32(&rt, &spec, &mut rng);
                }
            }
        }
    }
}

#[test]
fn large_square_f32_and_bf16() {
    let (rt, mut rng) = (cpu(), SplitMix64::from_time());
    run_f32(&rt, &Spec::new(1000, 1000, 1000), &mut rng);
    run_f32(&rt, &Spec::new(1000, 1000, 1000).precision(Precision::Bf16).scaled(1.0, 2.0), &mut rng);
}

#[test]
fn random_shapes_with_padding() {
    let (rt, mut rng) = (cpu(), SplitMix64::from_time());
    for spec in random_specs(&mut rng, 24, 300) {
        run_f32(&rt, &spec, &mut rng);
    }
}

#[test]
fn batched_with_gaps_and_broadcast() {
    let (rt, mut rng) = (cpu(), SplitMix64::from_time());
    for precision in PRECISIONS {
        for (ta, tb) in TRANSPOSES {
            let spec = Spec::new(67, 45, 33).trans(ta, tb).batch(3, 5).padded([1, 2, 3]).precision(precision);
            run_f32(&rt, &spec.scaled(0.75, -0.5), &mut rng);
            run_f32(&rt, &spec, &mut rng);
        }
    }
    // A broadcast to every entry (stride 0).
    let case = Spec::new(20, 30, 40).batch(4, 0).build(&mut rng);
    let g = case.g.batched(4, 0, case.g.stride_b, case.g.stride_c);
    let a = &case.a[..20 * 40];
    let want = reference(&g, a, &case.b, f64::from);
    let mut c = case.c.clone();
    cpu().gemm(&g, a, &case.b, &mut c).unwrap();
    assert!(compare(&g, &c, &case.c, &want).unwrap() <= 1e-5);
}

#[test]
fn sixteen_bit_inputs_and_outputs() {
    let (rt, mut rng) = (cpu(), SplitMix64::from_time());
    for (ta, tb) in TRANSPOSES {
        let spec = Spec::new(127, 129, 131).trans(ta, tb).padded([3, 5, 1]);
        for (alpha, beta) in [(1.0, 0.0), (0.75, -0.5)] {
            run_sixteen_bit(&rt, &spec.scaled(alpha, beta), &mut rng);
        }
    }
    // 16-bit inputs imply their precision when it is left at the default.
    run_typed::<bf16, f32>(&rt, &Spec::new(40, 50, 60).batch(2, 7), &mut rng);
}

#[test]
fn matmul_sgemm_and_matrix_multiply_agree_with_the_reference() {
    let (rt, mut rng) = (cpu(), SplitMix64::from_time());
    let (m, k, n) = (33, 65, 17);
    let (a, b) = (rng.vec(m * k, -1.0, 1.0), rng.vec(k * n, -1.0, 1.0));
    let g = Gemm::new(m, n, k);
    let want = reference(&g, &a, &b, f64::from);
    for precision in PRECISIONS {
        let c = rt.matmul_with(&a, &b, m, n, k, precision).unwrap();
        assert!(compare(&g, &c, &vec![0.0; m * n], &want).unwrap() <= precision.tolerance(), "{precision:?}");
    }
    // The deprecated seed function keeps its order m, k, n (on the process-wide runtime, which is
    // the CPU here or a GPU).
    #[allow(deprecated)] // the deprecated function is what is tested
    let c = prism_gpu::matrix_multiply(&a, &b, m, k, n).unwrap();
    assert!(compare(&g, &c, &vec![0.0; m * n], &want).unwrap() <= 1e-5);
    // sgemm: B given transposed (n x k), C with ldc = n + 2 and beta = 1.
    let bt: Vec<f32> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
    let ldc = n + 2;
    let mut c: Vec<f32> = rng.vec(m * ldc, -1.0, 1.0);
    let before = c.clone();
    prism_gpu::sgemm(&rt, false, true, m, n, k, 1.0, &a, k, &bt, k, 1.0, &mut c, ldc).unwrap();
    let gc = Gemm::new(m, n, k).leading_dims(k, n, ldc).scaled(1.0, 1.0);
    let want = reference(&gc, &a, &b, f64::from);
    assert!(compare(&gc, &c, &before, &want).unwrap() <= 1e-5);
}

#[test]
fn empty_dimensions_and_k_zero() {
    let rt = cpu();
    assert_eq!(rt.matmul(&[], &[], 0, 5, 0).unwrap(), Vec::<f32>::new());
    assert_eq!(rt.matmul(&[], &[1.0; 5], 0, 5, 1).unwrap(), Vec::<f32>::new());
    // k = 0: C = beta * C, and beta = 0 writes zeros over NaN.
    assert_eq!(rt.matmul(&[], &[], 2, 3, 0).unwrap(), vec![0.0; 6]);
    let g = Gemm::new(2, 2, 0).leading_dims(0, 2, 3).scaled(1.0, 2.0);
    let mut c = vec![1.0, 2.0, 9.0, 3.0, 4.0];
    rt.gemm(&g, &[] as &[f32], &[], &mut c).unwrap();
    assert_eq!(c, [2.0, 4.0, 9.0, 6.0, 8.0]);
    let mut c = vec![f32::NAN; 5];
    rt.gemm(&g.scaled(1.0, 0.0), &[] as &[f32], &[], &mut c).unwrap();
    assert_eq!(&c[..2], [0.0, 0.0]);
    assert!(c[2].is_nan());
    // m = 0 or batch = 0: nothing is touched.
    let mut c = vec![f32::NAN; 4];
    rt.gemm(&Gemm::new(2, 2, 2).batched(0, 4, 4, 4), &[1.0; 4], &[1.0; 4], &mut c).unwrap();
    assert!(c.iter().all(|x| x.is_nan()));
}

#[test]
fn bad_shapes_are_shape_errors() {
    let rt = cpu();
    let shape = |r: prism_gpu::Result<Vec<f32>>| match r {
        Err(Error::Shape { op, expected, got }) => format!("{op}: {expected} / {got}"),
        other => panic!("expected a shape error, got {other:?}"),
    };
    let msg = shape(rt.matmul(&[1.0; 6], &[1.0; 5], 2, 2, 3));
    assert!(msg.contains("`b` of 3 x 2 = 6 elements") && msg.contains("/ 5 elements"), "{msg}");
    let msg = shape(rt.matmul(&[1.0; 5], &[1.0; 6], 2, 2, 3));
    assert!(msg.contains("`a` of 2 x 3 = 6 elements") && msg.contains("5 elements"), "{msg}");
    let gemm = |g: Gemm, la: usize, lb: usize, lc: usize| {
        let mut c = vec![0.0f32; lc];
        shape(rt.gemm(&g, &vec![1.0f32; la], &vec![1.0f32; lb], &mut c).map(|_| c))
    };
    let msg = gemm(Gemm::new(4, 5, 6).leading_dims(5, 5, 5), 100, 100, 100);
    assert!(msg.contains("lda >= 6") && msg.contains("lda = 5"), "{msg}");
    let msg = gemm(Gemm::new(4, 5, 6).transposed(true, false).leading_dims(3, 5, 5), 100, 100, 100);
    assert!(msg.contains("lda >= 4"), "{msg}");
    let msg = gemm(Gemm::new(4, 5, 6), 24, 30, 19);
    assert!(msg.contains("`C` of at least 20"), "{msg}");
    let msg = gemm(Gemm::new(4, 5, 6).batched(2, 24, 30, 10), 100, 100, 100);
    assert!(msg.contains("stride_c >= 20"), "{msg}");
    // f32 inputs cannot give bf16 outputs; bf16 inputs cannot run at F16.
    let mut c16 = vec![bf16::ZERO; 4];
    assert!(matches!(
        rt.gemm(&Gemm::new(2, 2, 2), &[1.0f32; 4], &[1.0; 4], &mut c16),
        Err(Error::Shape { .. })
    ));
    let g = Gemm::new(2, 2, 2).with_precision(Precision::F16);
    let mut c = vec![0.0f32; 4];
    assert!(matches!(rt.gemm(&g, &[bf16::ONE; 4], &[bf16::ONE; 4], &mut c), Err(Error::Shape { .. })));
}
