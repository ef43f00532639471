//! The f64 GEMM's CPU fallback (`ProductionGpuRuntime::gemm_f64` without a GPU) against an
//! independent triple-loop f64 reference: every transpose pair, padded leading dimensions,
//! batches with broadcast operands, beta 0 over NaN, k = 0. Needs no GPU (runs in CI).

mod dgemm_common;

use dgemm_common::*;
use prism_gpu::{Error, Gemm, ProductionGpuRuntime};

/// f64 rounding over k <= a few hundred terms, relative to sum |alpha a b| + |beta c|.
const TOL: f64 = 1e-13;

#[test]
fn odd_shapes_every_layout_and_scale() {
    let (rt, mut rng) = (ProductionGpuRuntime::cpu(), fresh_rng("dgemm cpu"));
    for shape in [(1, 1, 1), (3, 5, 7), (17, 33, 9), (65, 31, 130)] {
        for trans in TRANSPOSES {
            for scales in [(1.0, 0.0), (0.75, -0.5), (-1.0 / 3.0, 1.0)] {
                let case = case(&mut rng, shape, trans, 3, 1, (false, false), scales);
                check(&rt, &case, TOL);
            }
        }
    }
}

#[test]
fn batches_with_gaps_and_broadcast_operands() {
    let (rt, mut rng) = (ProductionGpuRuntime::cpu(), fresh_rng("dgemm cpu batched"));
    for trans in TRANSPOSES {
        for broadcast in [(false, false), (true, false), (false, true)] {
            let case = case(&mut rng, (19, 23, 29), trans, 2, 3, broadcast, (1.25, 0.0));
            check(&rt, &case, TOL);
        }
    }
}

#[test]
fn k_zero_scales_c_and_empty_shapes_do_nothing() {
    let (rt, mut rng) = (ProductionGpuRuntime::cpu(), fresh_rng("dgemm cpu k = 0"));
    for beta in [0.0, 2.5] {
        let case = case(&mut rng, (4, 6, 0), (false, false), 2, 2, (false, false), (1.0, beta));
        check(&rt, &case, TOL);
    }
    let mut c = [f64::NAN; 3];
    rt.gemm_f64(&Gemm::new(0, 3, 5).with_f64_scales(1.0, 0.0), &[], &[], &mut c).unwrap();
    assert!(c.iter().all(|x| x.is_nan()));
}

#[test]
fn f64_scales_are_not_rounded_to_f32() {
    // alpha = 1 + 2^-40 is 1.0 in f32: the product must keep the difference.
    let rt = ProductionGpuRuntime::cpu();
    let alpha = 1.0 + 2f64.powi(-40);
    let mut c = [f64::NAN];
    rt.gemm_f64(&Gemm::new(1, 1, 1).with_f64_scales(alpha, 0.0), &[1.0], &[1.0], &mut c).unwrap();
    assert_eq!(c[0], alpha);
}

#[test]
fn matmul_f64_and_shape_errors() {
    let (rt, mut rng) = (ProductionGpuRuntime::cpu(), fresh_rng("matmul_f64"));
    let (m, n, k) = (37, 41, 43);
    let a: Vec<f64> = (0..m * k).map(|_| value(&mut rng)).collect();
    let b: Vec<f64> = (0..k * n).map(|_| value(&mut rng)).collect();
    let c = rt.matmul_f64(&a, &b, m, n, k).unwrap();
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            let bound: f64 = (0..k).map(|p| (a[i * k + p] * b[p * n + j]).abs()).sum();
            assert!((c[i * n + j] - want).abs() <= TOL * bound, "({i}, {j}): {} vs {want}", c[i * n + j]);
        }
    }
    assert!(matches!(rt.matmul_f64(&a[1..], &b, m, n, k), Err(Error::Shape { .. })));
    let g = Gemm::new(2, 2, 2).with_f64_scales(1.0, 0.0);
    assert!(matches!(rt.gemm_f64(&g, &[0.0; 4], &[0.0; 4], &mut [0.0; 3]), Err(Error::Shape { .. })));
}
