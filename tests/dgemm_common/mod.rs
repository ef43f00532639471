//! Shared by the f64 GEMM tests (CPU fallback and GPU): random layouts, an independent
//! triple-loop f64 reference, and a check scaled to the data.
#![allow(dead_code)] // each test binary uses its own part

use prism_gpu::rng::SplitMix64;
use prism_gpu::{Gemm, GemmF64, ProductionGpuRuntime};

/// A fresh generator; the seed is printed so a failure can be replayed.
pub fn fresh_rng(what: &str) -> SplitMix64 {
    let seed = SplitMix64::from_time().next_u64();
    println!("{what}: seed {seed:#x}");
    SplitMix64::new(seed)
}

/// Uniform in [-1, 1) with 53 random bits.
pub fn value(rng: &mut SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

pub fn below(rng: &mut SplitMix64, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

/// One f64 GEMM to run: the layout with its operands, C before the call (NaN where beta is 0 or
/// outside the written blocks, so a stray read or write shows).
pub struct Case {
    pub g: GemmF64,
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    pub c: Vec<f64>,
}

/// `m x n x k` with these transposes, leading dimensions padded by up to `pad`, `batch` entries
/// (A's or B's stride 0 when `broadcast` says), scales `(alpha, beta)`.
#[allow(clippy::too_many_arguments)]
pub fn case(
    rng: &mut SplitMix64,
    (m, n, k): (usize, usize, usize),
    (ta, tb): (bool, bool),
    pad: usize,
    batch: usize,
    broadcast: (bool, bool),
    (alpha, beta): (f64, f64),
) -> Case {
    let mut layout = Gemm::new(m, n, k).transposed(ta, tb);
    let mut extra = || if pad == 0 { 0 } else { below(rng, pad + 1) };
    layout = layout.leading_dims(layout.lda + extra(), layout.ldb + extra(), n + extra());
    let size = |(rows, _): (usize, usize), ld: usize| rows * ld;
    let (one_a, one_b, one_c) =
        (size(layout.a_dims(), layout.lda), size(layout.b_dims(), layout.ldb), m * layout.ldc);
    let gap = extra();
    let stride_a = if broadcast.0 { 0 } else { one_a + gap };
    let stride_b = if broadcast.1 { 0 } else { one_b + gap };
    layout = layout.batched(batch, stride_a, stride_b, one_c + gap);
    let (la, lb, lc) = layout.min_lens().unwrap();
    let a = (0..la).map(|_| value(rng)).collect();
    let b = (0..lb).map(|_| value(rng)).collect();
    let mut c = vec![f64::NAN; lc];
    if beta != 0.0 {
        for z in 0..batch {
            for i in 0..m {
                for j in 0..n {
                    c[z * layout.stride_c + i * layout.ldc + j] = value(rng);
                }
            }
        }
    }
    Case { g: layout.with_f64_scales(alpha, beta), a, b, c }
}

/// The product straight from the definition, in f64: for each written element, the expected
/// value and the bound sum |alpha a b| + |beta c| its rounding error is scaled to.
pub fn reference(case: &Case) -> Vec<Option<(f64, f64)>> {
    let (g, l) = (&case.g, &case.g.layout);
    let mut out = vec![None; case.c.len()];
    for z in 0..l.batch {
        for i in 0..l.m {
            for j in 0..l.n {
                let (mut dot, mut bound) = (0.0, 0.0);
                for p in 0..l.k {
                    let x = case.a[z * l.stride_a + if l.trans_a { p * l.lda + i } else { i * l.lda + p }];
                    let y = case.b[z * l.stride_b + if l.trans_b { j * l.ldb + p } else { p * l.ldb + j }];
                    dot += x * y;
                    bound += (x * y).abs();
                }
                let at = z * l.stride_c + i * l.ldc + j;
                let old = if g.beta == 0.0 { 0.0 } else { g.beta * case.c[at] };
                out[at] = Some((g.alpha * dot + old, (g.alpha * bound).abs() + old.abs()));
            }
        }
    }
    out
}

/// Runs `case` on `rt` and checks every element of C ([`verify`]).
pub fn check(rt: &ProductionGpuRuntime, case: &Case, tol: f64) {
    let mut got = case.c.clone();
    rt.gemm_f64(&case.g, &case.a, &case.b, &mut got).unwrap();
    verify(case, &reference(case), &got, tol, "");
}

/// Checks `got`, C after running `case` (`how`: what ran it, for the message), against the
/// reference `want`: written elements within `tol` of it relative to their bound (and finite), the
/// others untouched (still NaN).
pub fn verify(case: &Case, want: &[Option<(f64, f64)>], got: &[f64], tol: f64, how: &str) {
    let l = &case.g.layout;
    for (i, (w, &x)) in want.iter().zip(got).enumerate() {
        match w {
            Some((v, bound)) => {
                let err = (x - v).abs() / bound.max(f64::MIN_POSITIVE);
                assert!(
                    x.is_finite() && (err <= tol || (x - v).abs() <= 1e-300),
                    "{l:?}{how} alpha {} beta {}: C[{i}] = {x}, want {v} (error {err:e} of the bound {bound:e})",
                    case.g.alpha,
                    case.g.beta
                );
            }
            None => assert!(
                x.is_nan() || x.to_bits() == case.c[i].to_bits(),
                "{l:?}{how}: C[{i}] outside the blocks was written: {x}"
            ),
        }
    }
}

pub const TRANSPOSES: [(bool, bool); 4] = [(false, false), (false, true), (true, false), (true, true)];
