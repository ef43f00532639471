//! Every runtime operation on the CPU fallback against f64 references, shape errors and empty
//! inputs. Needs no GPU (runs in CI).

mod runtime_checks;

use prism_gpu::ops::activations::Activation;
use prism_gpu::ops::gemv::Gemv;
use prism_gpu::ops::neuromorphic::{Csr, Patterns, ReservoirWeights};
use prism_gpu::{Error, ProductionGpuRuntime};
use runtime_checks as checks;

fn rt() -> ProductionGpuRuntime {
    ProductionGpuRuntime::cpu()
}

#[test]
fn conversions() {
    checks::conversions(&rt(), &mut checks::fresh_rng("conversions"), 10_007);
}

#[test]
fn activations() {
    checks::activations(&rt(), &mut checks::fresh_rng("activations"), 100_003);
}

#[test]
fn softmax() {
    checks::softmax(&rt(), &mut checks::fresh_rng("softmax"), &checks::row_shapes(false));
}

#[test]
fn norms() {
    checks::norms(&rt(), &mut checks::fresh_rng("norms"), &checks::row_shapes(false));
}

#[test]
fn batch_norm() {
    checks::batch_norm(&rt(), &mut checks::fresh_rng("batch_norm"));
}

#[test]
fn reductions() {
    let sizes = [1, 3, 1000, 65_537, 1_000_003];
    checks::reductions(&rt(), &mut checks::fresh_rng("reductions"), &sizes, &checks::row_shapes(false));
}

#[test]
fn gemv() {
    let shapes =
        [(1, 1, 1), (37, 53, 53), (129, 1000, 1004), (1000, 257, 260), (3, 600, 600), (0, 5, 5), (4, 0, 1)];
    checks::gemv(&rt(), &mut checks::fresh_rng("gemv"), &shapes);
}

#[test]
fn transpose() {
    checks::transpose(&rt(), &mut checks::fresh_rng("transpose"), &[(1, 1), (33, 65), (100, 7), (513, 1025)]);
}

#[test]
fn neuromorphic() {
    checks::neuromorphic(&rt(), &mut checks::fresh_rng("neuromorphic"), 301, 13);
}

/// The error's text, which must name what was expected and what was given.
fn shape_error<T: std::fmt::Debug>(r: prism_gpu::Result<T>) -> String {
    match r {
        Err(e @ Error::Shape { .. }) => e.to_string(),
        other => panic!("expected a shape error, got {other:?}"),
    }
}

#[test]
fn shape_errors_name_expected_and_given() {
    let rt = rt();
    let x = vec![1.0f32; 12];
    let e = shape_error(rt.softmax_rows(&x, 3, 5));
    assert!(e.contains("3 x 5 = 15") && e.contains("got 12"), "{e}");
    let e = shape_error(rt.layer_norm(&x, 3, 4, Some(&[1.0; 3]), None, 1e-5));
    assert!(e.contains("`gamma` of 4") && e.contains("got 3"), "{e}");
    shape_error(rt.rms_norm_bf16(&[half::bf16::ONE; 5], 2, 2, None, 1e-5));
    shape_error(rt.activation_backward(Activation::Gelu, &x, &x[..11]));
    shape_error(rt.batch_norm(&x, (2, 3, 3), &[0.0; 3], &[1.0; 3], None, None, 1e-5));
    shape_error(rt.batch_norm(&x, (2, 3, 2), &[0.0; 2], &[1.0; 3], None, None, 1e-5));
    shape_error(rt.batch_norm_train(&[], (0, 3, 4), None, None, 1e-5, None));
    shape_error(rt.row_sum(&x, 5, 2));
    shape_error(rt.row_argmax(&[], 2, 0));
    shape_error(rt.argmax(&[]));
    let e = shape_error(rt.gemv(Gemv::dense(3, 4), &x, &[1.0; 3], &[]));
    assert!(e.contains("`x` of 4") && e.contains("got 3"), "{e}");
    shape_error(rt.gemv(Gemv { beta: 1.0, ..Gemv::dense(3, 4) }, &x, &[1.0; 4], &[]));
    shape_error(rt.gemv(Gemv { lda: 3, ..Gemv::dense(3, 4) }, &x, &[1.0; 4], &[]));
    shape_error(rt.gemv_t(Gemv::dense(3, 4), &x[..11], &[1.0; 3], &[]));
    shape_error(rt.transpose(&x, 5, 3));
    shape_error(rt.matvec_input(&x, &[1.0; 3], 3, 4));
    shape_error(rt.matvec_reservoir(ReservoirWeights::Dense(&x), &[1.0; 3]));
    shape_error(rt.spike_encode(&[0.5; 3], usize::MAX, 1));
    let p = Patterns { t: 4, n: 3, p: 1, w: 5 };
    let e = shape_error(rt.pattern_correlation(&x, &[0.0; 15], p));
    assert!(e.contains("1 <= w <= t = 4") && e.contains("w = 5"), "{e}");
    shape_error(rt.pattern_correlation(&x, &[0.0; 8], Patterns { w: 3, ..p }));
    shape_error(rt.spectral_radius(ReservoirWeights::Dense(&x), 4, 10, 1));
    let mut s = vec![0.0f32; 3];
    shape_error(rt.leaky_integration(&mut s, &[1.0; 4], 0.5));
    shape_error(rt.reservoir_step(&x, ReservoirWeights::Dense(&[0.0; 9]), &[1.0; 3], &mut s, 0.5));
}

#[test]
fn bad_csr_is_rejected_before_any_use() {
    let rt = rt();
    let x = [1.0f32; 3];
    let bad = [
        Csr { row_ptr: &[0, 1, 2], col_idx: &[0, 1], values: &[1.0, 1.0] }, // 2 rows for n = 3
        Csr { row_ptr: &[0, 1, 2, 3], col_idx: &[0, 1], values: &[1.0, 1.0, 1.0] }, // lengths differ
        Csr { row_ptr: &[0, 2, 1, 3], col_idx: &[0, 1, 2], values: &[1.0; 3] }, // decreasing offsets
        Csr { row_ptr: &[1, 1, 2, 3], col_idx: &[0, 1, 2], values: &[1.0; 3] }, // not from 0
        Csr { row_ptr: &[0, 1, 2, 4], col_idx: &[0, 1, 2], values: &[1.0; 3] }, // past the entries
        Csr { row_ptr: &[0, 1, 2, 3], col_idx: &[0, 3, 2], values: &[1.0; 3] }, // column out of range
        Csr { row_ptr: &[0, 1, 2, 3], col_idx: &[0, -1, 2], values: &[1.0; 3] }, // negative column
    ];
    for csr in bad {
        shape_error(rt.matvec_reservoir(ReservoirWeights::Csr(csr), &x));
    }
    let good = Csr { row_ptr: &[0, 1, 1, 3], col_idx: &[2, 0, 1], values: &[2.0, 3.0, 4.0] };
    assert_eq!(
        rt.matvec_reservoir(ReservoirWeights::Csr(good), &[1.0, 10.0, 100.0]).unwrap(),
        vec![200.0, 0.0, 43.0]
    );
}

#[test]
fn empty_inputs_give_empty_outputs() {
    let rt = rt();
    let e: [f32; 0] = [];
    assert!(rt.f32_to_f16(&e).unwrap().is_empty());
    assert!(rt.f32_to_bf16(&e).unwrap().is_empty());
    assert!(rt.relu(&e).unwrap().is_empty());
    assert!(rt.activation_backward(Activation::Tanh, &e, &e).unwrap().is_empty());
    assert!(rt.softmax_rows(&e, 0, 7).unwrap().is_empty());
    assert!(rt.log_softmax_rows(&e, 3, 0).unwrap().is_empty());
    assert!(rt.layer_norm(&e, 0, 4, Some(&[1.0; 4]), None, 1e-5).unwrap().is_empty());
    let (y, m, r) = rt.layer_norm_with_stats(&e, 0, 4, None, None, 1e-5).unwrap();
    assert!(y.is_empty() && m.is_empty() && r.is_empty());
    assert!(rt.rms_norm(&e, 0, 3, None, 1e-5).unwrap().is_empty());
    assert!(rt.batch_norm(&e, (0, 2, 5), &[0.0; 2], &[1.0; 2], None, None, 1e-5).unwrap().is_empty());
    let (y, m, v) = rt.batch_norm_train(&e, (4, 0, 5), None, None, 1e-5, None).unwrap();
    assert!(y.is_empty() && m.is_empty() && v.is_empty());
    assert_eq!(rt.sum(&e).unwrap(), 0.0);
    assert!(rt.mean(&e).unwrap().is_nan());
    assert_eq!(rt.max(&e).unwrap(), f32::NEG_INFINITY);
    assert!(rt.row_sum(&e, 0, 5).unwrap().is_empty());
    assert!(rt.row_argmax(&e, 0, 5).unwrap().is_empty());
    assert!(rt.gemv(Gemv::dense(0, 4), &e, &[1.0; 4], &e).unwrap().is_empty());
    assert_eq!(
        rt.gemv(Gemv { beta: 2.0, ..Gemv::dense(2, 0) }, &e, &e, &[1.0, 3.0]).unwrap(),
        vec![2.0, 6.0]
    );
    assert!(rt.gemv_t(Gemv::dense(3, 0), &e, &[1.0; 3], &e).unwrap().is_empty());
    assert_eq!(
        rt.gemv_t(Gemv { beta: 0.5, ..Gemv::dense(0, 2) }, &e, &e, &[4.0, 2.0]).unwrap(),
        vec![2.0, 1.0]
    );
    assert!(rt.transpose(&e, 0, 9).unwrap().is_empty());
    assert!(rt.matvec_reservoir(ReservoirWeights::Dense(&e), &e).unwrap().is_empty());
    assert!(rt.spike_encode(&e, 10, 1).unwrap().is_empty());
    assert!(rt.spike_encode(&[0.5], 0, 1).unwrap().is_empty());
    assert!(rt.pattern_correlation(&[0.0; 6], &e, Patterns { t: 3, n: 2, p: 0, w: 2 }).unwrap().is_empty());
    assert_eq!(rt.spectral_radius(ReservoirWeights::Dense(&e), 0, 10, 1).unwrap(), 0.0);
    let mut s: Vec<f32> = vec![];
    rt.leaky_integration(&mut s, &e, 0.5).unwrap();
    rt.activation_inplace(Activation::Relu, &mut s).unwrap();
}

#[test]
fn the_seed_executor_entry_points() {
    // On a machine without a GPU the process-wide runtime is the CPU fallback; with one, the GPU.
    let rt = prism_gpu::runtime::get_global_executor();
    assert!(std::ptr::eq(rt, prism_gpu::runtime()));
    let mut rng = checks::fresh_rng("relu_inplace");
    let mut x = rng.vec(1001, -1.0, 1.0);
    let want: Vec<f64> = x.iter().map(|&v| f64::from(v.max(0.0))).collect();
    prism_gpu::runtime::relu_inplace(&mut x).unwrap();
    checks::close(&x, &want, 0.0, "relu_inplace");
}

/// Sizes computed from the caller's dimensions overflow into errors, never a panic, an abort or a
/// wild pointer (each of these panicked in a debug build, and the GEMM one crashed with SIGSEGV in
/// release, before the extents were checked).
#[test]
fn overflowing_extents_are_shape_errors() {
    use prism_gpu::raw::kernels::gemm::Gemm;
    let rt = rt();
    // A batch stride whose extent wraps: min_lens used to wrap to a small length, pass
    // validation, and the CPU GEMM read far outside `a`.
    let g = Gemm::new(2, 2, 2).batched(3, usize::MAX / 2, 0, 4);
    let (a, b, mut c) = (vec![1.0f32; 8], vec![1.0f32; 4], vec![0.0f32; 12]);
    let e = shape_error(rt.gemm(&g, &a, &b, &mut c));
    assert!(e.contains("`A`") && e.contains("overflows"), "{e}");
    let g = Gemm::new(2, 2, 2).batched(usize::MAX, 0, 0, 4);
    shape_error(rt.gemm(&g, &a, &b, &mut c));
    let e = shape_error(prism_gpu::runtime::sgemm(
        &rt,
        false,
        false,
        2,
        2,
        2,
        1.0,
        &a,
        usize::MAX,
        &b,
        2,
        0.0,
        &mut c,
        2,
    ));
    assert!(e.contains("lda"), "{e}");

    // k = 0: empty a and b match any m and n; the m x n output used to be allocated unchecked.
    shape_error(rt.matmul(&[], &[], usize::MAX, 2, 0));
    shape_error(rt.matmul(&[], &[], 1 << 31, 1 << 31, 0));
    // Within the kernels' range but no host can hold 2^60 floats: refused, not an abort.
    shape_error(rt.matmul(&[], &[], 1 << 30, 1 << 30, 0));

    // rows + 1 offsets for rows = usize::MAX.
    let csr = Csr { row_ptr: &[0, 1], col_idx: &[0], values: &[1.0] };
    shape_error(rt.spectral_radius(ReservoirWeights::Csr(csr), usize::MAX, 10, 1));

    // n = 0 makes every input empty whatever p is; p * (t - w + 1) used to overflow.
    shape_error(rt.pattern_correlation(&[], &[], Patterns { t: 2, n: 0, p: usize::MAX, w: 1 }));
    // A product that fits in usize but in no host: an error, not a capacity-overflow panic.
    shape_error(rt.pattern_correlation(&[], &[], Patterns { t: 1, n: 0, p: 1 << 62, w: 1 }));

    // No operands at all.
    assert!(matches!(prism_gpu::ops::shape::same_len("add", &[]), Err(Error::Shape { .. })));
}
