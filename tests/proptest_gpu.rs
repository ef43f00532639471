//! GPU differential property tests: every runtime op family on random shapes, lengths, strides,
//! NaN/Inf, empty and huge sizes, on the GPU. Each property of `proptest_cpu` runs again on the GPU
//! runtime against the same f64 references (so GPU and CPU meet the same per-element bounds), and
//! `exact_ops_match_the_cpu` compares the GPU with the CPU fallback bit for bit where both are
//! exact. Every property prints its seed (`-- --nocapture`; also in any failure), replayed with
//! `PRISM_PROPTEST_SEED=<n>`. Run on a machine with a CUDA GPU:
//! `cargo test --release --test proptest_gpu -- --include-ignored --nocapture`.

mod proptest_support;

use prism_gpu::ops::activations::Activation;
use prism_gpu::ops::neuromorphic::Patterns;
use prism_gpu::ops::random::Philox;
use prism_gpu::ProductionGpuRuntime;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use proptest_support::{any_f32, check, dim, ok, ops, Suite};

fn gpu() -> ProductionGpuRuntime {
    ProductionGpuRuntime::with_device(0).expect("a usable CUDA GPU")
}

/// The case count of each GPU property (at least 1,000 in all: `gpu_case_budget`).
const SUITE: Suite = Suite {
    name: "proptest_gpu",
    least: 1_000,
    cases: &[
        ("exact_ops_match_the_cpu", 600),
        ("elementwise", 150),
        ("axpy_scale_fill", 100),
        ("conversions", 100),
        ("activations", 150),
        ("activation_backward", 100),
        ("softmax", 150),
        ("norms", 120),
        ("norms_bf16", 60),
        ("batch_norm", 80),
        ("reductions", 120),
        ("row_reductions", 120),
        ("gemv_transpose", 120),
        ("gemm", 150),
        ("gemm_f64", 100),
        ("gemm_layouts", 150),
        ("random", 80),
        ("neuromorphic", 100),
        ("bad_inputs", 100),
    ],
};

#[test]
fn gpu_case_budget() {
    SUITE.check_budget();
}

macro_rules! on_the_gpu {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $name() {
            ops::$name(&gpu(), SUITE.cases(stringify!($name)));
        }
    )*};
}

on_the_gpu!(
    elementwise,
    axpy_scale_fill,
    conversions,
    activations,
    activation_backward,
    softmax,
    norms,
    norms_bf16,
    batch_norm,
    reductions,
    row_reductions,
    gemv_transpose,
    gemm,
    gemm_f64,
    gemm_layouts,
    random,
    neuromorphic,
    bad_inputs,
);

/// `got` and `want` hold the same values bit for bit (any NaN matching any NaN).
fn same<T: PartialEq + std::fmt::Debug + Copy>(
    what: &str,
    got: &[T],
    want: &[T],
    bits: impl Fn(T) -> Option<u64>,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len(), "{} lengths", what);
    for i in 0..got.len() {
        let (g, w) = (bits(got[i]), bits(want[i]));
        prop_assert!(g == w, "{what}[{i}]: GPU {:?}, CPU {:?}", got[i], want[i]);
    }
    Ok(())
}

/// f32 bits, `None` for every NaN.
fn f32_bits(x: f32) -> Option<u64> {
    (!x.is_nan()).then_some(u64::from(x.to_bits()))
}

/// As `f32_bits`, but the two zeros are one value.
fn f32_value(x: f32) -> Option<u64> {
    f32_bits(if x == 0.0 { 0.0 } else { x })
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_ops_match_the_cpu() {
    let (g, c) = (gpu(), ProductionGpuRuntime::cpu());
    let s = (
        (0..5000usize).prop_flat_map(|n| (vec(any_f32(1e4), n), vec(any_f32(1e4), n))),
        (dim(70), dim(300)),
        (any::<u64>(), any::<u64>(), -3.0f32..3.0),
        (0..40usize, 1..10usize, 0..4usize),
    );
    check(
        "exact_ops_match_the_cpu",
        SUITE.cases("exact_ops_match_the_cpu"),
        s,
        |((a, b), (rows, cols), (seed, offset, alpha), (steps, w, p))| {
            let both = |name: &str,
                        f: &dyn Fn(&ProductionGpuRuntime) -> prism_gpu::Result<Vec<f32>>|
             -> Result<(), TestCaseError> {
                same(name, &ok(name, f(&g))?, &ok(name, f(&c))?, f32_bits)
            };
            both("add", &|rt| rt.add(&a, &b))?;
            both("sub", &|rt| rt.sub(&a, &b))?;
            both("mul", &|rt| rt.mul(&a, &b))?;
            both("div", &|rt| rt.div(&a, &b))?;
            both("scale", &|rt| rt.scale(alpha, &a))?;
            both("fill", &|rt| rt.fill(a.len(), alpha))?;
            both("relu", &|rt| rt.relu(&a))?;
            both("leaky_relu", &|rt| rt.leaky_relu(&a, alpha))?;
            both("f16 round trip", &|rt| rt.f16_to_f32(&rt.f32_to_f16(&a)?))?;
            both("bf16 round trip", &|rt| rt.bf16_to_f32(&rt.f32_to_bf16(&a)?))?;
            both("relu backward", &|rt| rt.activation_backward(Activation::Relu, &b, &a))?;
            // The maximum of a set holding both zeros may be either (IEEE maxNum): values compared.
            let same_value =
                |name: &str, f: &dyn Fn(&ProductionGpuRuntime) -> prism_gpu::Result<Vec<f32>>| {
                    same(name, &ok(name, f(&g))?, &ok(name, f(&c))?, f32_value)
                };
            same_value("max", &|rt| Ok(vec![rt.max(&a)?]))?;
            if !a.is_empty() {
                prop_assert_eq!(ok("argmax", g.argmax(&a))?, ok("argmax", c.argmax(&a))?);
            }
            let m = &a[..(rows * cols).min(a.len()) / cols.max(1) * cols.max(1)];
            let r = m.len().checked_div(cols).unwrap_or(0);
            both("transpose", &|rt| rt.transpose(m, r, cols))?;
            if cols > 0 {
                same_value("row_max", &|rt| rt.row_max(m, r, cols))?;
                prop_assert_eq!(
                    ok("row_argmax", g.row_argmax(m, r, cols))?,
                    ok("row_argmax", c.row_argmax(m, r, cols))?
                );
            }
            let at = Philox { seed, offset };
            both("rand_uniform", &|rt| rt.rand_uniform(a.len(), at))?;
            let rates = &b[..b.len().min(64)];
            both("spike_encode", &|rt| rt.spike_encode(rates, steps, seed))?;
            let spikes = ok("spike_encode", g.spike_encode(rates, steps, seed))?;
            if w <= steps {
                let n = rates.len();
                let templates: Vec<f32> = (0..p * w * n).map(|i| ((i * 31) % 7) as f32 - 3.0).collect();
                let dims = Patterns { t: steps, n, p, w };
                // Integer-valued terms: every partial sum is exact, so any order gives the same bits.
                both("pattern_correlation", &|rt| rt.pattern_correlation(&spikes, &templates, dims))?;
            }
            Ok(())
        },
    );
}
