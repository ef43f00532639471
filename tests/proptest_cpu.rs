//! Property tests of every runtime op family on the CPU fallback (runs in CI, no GPU): random
//! shapes, lengths, strides, offsets, NaN/Inf, empty and huge sizes. Each result is checked
//! against an f64 reference written here (never the fallback's helpers); each bad input must be
//! an `Error::Shape`, never a panic. Every property prints its case count and the seed to replay
//! it with (`PRISM_PROPTEST_SEED=<n> cargo test --release --test proptest_cpu`);
//! `case_budget` prints the total (at least 10,000).
//!
//! Tolerances are per element: exact where the op is exact, else relative to the value or to
//! the magnitude of the terms that make it up (stated at each check).

mod proptest_support;

use prism_gpu::ProductionGpuRuntime;
use proptest_support::{ops, Suite};

/// The case count of each property (at least 10,000 in all: `case_budget`).
const SUITE: Suite = Suite {
    name: "proptest_cpu",
    least: 10_000,
    cases: &[
        ("elementwise", 3000),
        ("axpy_scale_fill", 1600),
        ("conversions", 1000),
        ("activations", 2000),
        ("activation_backward", 1600),
        ("softmax", 1200),
        ("norms", 1000),
        ("norms_bf16", 500),
        ("batch_norm", 700),
        ("reductions", 2000),
        ("row_reductions", 1200),
        ("gemv_transpose", 1200),
        ("gemm", 1000),
        ("gemm_layouts", 1200),
        ("gemm_f64", 800),
        ("random", 600),
        ("neuromorphic", 1000),
        ("bad_inputs", 2000),
    ],
};

#[test]
fn case_budget() {
    SUITE.check_budget();
}

#[test]
fn elementwise() {
    ops::elementwise(&ProductionGpuRuntime::cpu(), SUITE.cases("elementwise"));
}

#[test]
fn axpy_scale_fill() {
    ops::axpy_scale_fill(&ProductionGpuRuntime::cpu(), SUITE.cases("axpy_scale_fill"));
}

#[test]
fn conversions() {
    ops::conversions(&ProductionGpuRuntime::cpu(), SUITE.cases("conversions"));
}

#[test]
fn activations() {
    ops::activations(&ProductionGpuRuntime::cpu(), SUITE.cases("activations"));
}

#[test]
fn activation_backward() {
    ops::activation_backward(&ProductionGpuRuntime::cpu(), SUITE.cases("activation_backward"));
}

#[test]
fn softmax() {
    ops::softmax(&ProductionGpuRuntime::cpu(), SUITE.cases("softmax"));
}

#[test]
fn norms() {
    ops::norms(&ProductionGpuRuntime::cpu(), SUITE.cases("norms"));
}

#[test]
fn norms_bf16() {
    ops::norms_bf16(&ProductionGpuRuntime::cpu(), SUITE.cases("norms_bf16"));
}

#[test]
fn batch_norm() {
    ops::batch_norm(&ProductionGpuRuntime::cpu(), SUITE.cases("batch_norm"));
}

#[test]
fn reductions() {
    ops::reductions(&ProductionGpuRuntime::cpu(), SUITE.cases("reductions"));
}

#[test]
fn row_reductions() {
    ops::row_reductions(&ProductionGpuRuntime::cpu(), SUITE.cases("row_reductions"));
}

#[test]
fn gemv_transpose() {
    ops::gemv_transpose(&ProductionGpuRuntime::cpu(), SUITE.cases("gemv_transpose"));
}

#[test]
fn gemm() {
    ops::gemm(&ProductionGpuRuntime::cpu(), SUITE.cases("gemm"));
}

#[test]
fn gemm_f64() {
    ops::gemm_f64(&ProductionGpuRuntime::cpu(), SUITE.cases("gemm_f64"));
}

#[test]
fn random() {
    ops::random(&ProductionGpuRuntime::cpu(), SUITE.cases("random"));
}

#[test]
fn neuromorphic() {
    ops::neuromorphic(&ProductionGpuRuntime::cpu(), SUITE.cases("neuromorphic"));
}

#[test]
fn gemm_layouts() {
    ops::gemm_layouts(&ProductionGpuRuntime::cpu(), SUITE.cases("gemm_layouts"));
}

#[test]
fn bad_inputs() {
    ops::bad_inputs(&ProductionGpuRuntime::cpu(), SUITE.cases("bad_inputs"));
}
