//! Shared by tests/gemm_cpu.rs and tests/gemm_gpu.rs: random GEMM cases with padded leading
//! dimensions and gaps between batch entries, an f64 reference, and the checks (relative Frobenius
//! error within the precision's tolerance, nothing written outside the m x n blocks).
#![allow(dead_code)] // each test binary uses a different subset

use half::{bf16, f16};
use prism_gpu::raw::kernels::gemm::Element;
use prism_gpu::rng::SplitMix64;
use prism_gpu::{Gemm, Precision, ProductionGpuRuntime};
use rayon::prelude::*;

/// One GEMM problem with its operands, C's starting contents, and where C must stay untouched.
pub struct Case {
    pub g: Gemm,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    pub c: Vec<f32>,
}

/// What to build.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub trans_a: bool,
    pub trans_b: bool,
    pub alpha: f32,
    pub beta: f32,
    pub batch: usize,
    /// Extra elements per row of A, B, C (0: packed).
    pub pad: [usize; 3],
    /// Extra elements between batch entries.
    pub gap: usize,
    /// A and B read as one matrix for every batch entry (batch stride 0).
    pub broadcast: (bool, bool),
    pub precision: Precision,
}

impl Spec {
    pub fn new(m: usize, n: usize, k: usize) -> Self {
        Spec {
            m,
            n,
            k,
            trans_a: false,
            trans_b: false,
            alpha: 1.0,
            beta: 0.0,
            batch: 1,
            pad: [0; 3],
            gap: 0,
            broadcast: (false, false),
            precision: Precision::F32,
        }
    }
    pub fn trans(self, trans_a: bool, trans_b: bool) -> Self {
        Spec { trans_a, trans_b, ..self }
    }
    pub fn scaled(self, alpha: f32, beta: f32) -> Self {
        Spec { alpha, beta, ..self }
    }
    pub fn batch(self, batch: usize, gap: usize) -> Self {
        Spec { batch, gap, ..self }
    }
    pub fn broadcast(self, a: bool, b: bool) -> Self {
        Spec { broadcast: (a, b), ..self }
    }
    pub fn padded(self, pad: [usize; 3]) -> Self {
        Spec { pad, ..self }
    }
    pub fn precision(self, precision: Precision) -> Self {
        Spec { precision, ..self }
    }

    /// The problem with fresh random operands in [-1, 1); C random when beta != 0, NaN-poisoned
    /// (everywhere, padding included) when beta == 0.
    pub fn build(&self, rng: &mut SplitMix64) -> Case {
        let mut g = Gemm::new(self.m, self.n, self.k)
            .transposed(self.trans_a, self.trans_b)
            .scaled(self.alpha, self.beta)
            .with_precision(self.precision);
        g = g.leading_dims(g.lda + self.pad[0], g.ldb + self.pad[1], g.ldc + self.pad[2]);
        let stride =
            |rows: usize, ld: usize, broadcast: bool| if broadcast { 0 } else { rows * ld + self.gap };
        g = g.batched(
            self.batch,
            stride(g.a_dims().0, g.lda, self.broadcast.0),
            stride(g.b_dims().0, g.ldb, self.broadcast.1),
            stride(self.m, g.ldc, false),
        );
        let (la, lb, lc) = g.min_lens().expect("test shapes fit in usize");
        let c = if self.beta == 0.0 { vec![f32::NAN; lc] } else { rng.vec(lc, -1.0, 1.0) };
        Case { g, a: rng.vec(la, -1.0, 1.0), b: rng.vec(lb, -1.0, 1.0), c }
    }
}

/// `alpha * op(A) * op(B)` in f64 for every batch entry, as packed m x n blocks (batch-major).
/// [`compare`] adds `beta * C`.
pub fn reference<T: Copy + Sync>(g: &Gemm, a: &[T], b: &[T], wide: impl Fn(T) -> f64 + Sync) -> Vec<f64> {
    let (m, n, k) = (g.m, g.n, g.k);
    let mut out = vec![0.0f64; g.batch * m * n];
    out.par_chunks_mut(n).enumerate().for_each(|(row, dst)| {
        let (z, i) = (row / m, row % m);
        let a_at = |p: usize| z * g.stride_a + if g.trans_a { p * g.lda + i } else { i * g.lda + p };
        let b_at =
            |p: usize, j: usize| z * g.stride_b + if g.trans_b { j * g.ldb + p } else { p * g.ldb + j };
        for p in 0..k {
            let x = wide(a[a_at(p)]);
            for (j, d) in dst.iter_mut().enumerate() {
                *d += x * wide(b[b_at(p, j)]);
            }
        }
        dst.iter_mut().for_each(|d| *d *= f64::from(g.alpha));
    });
    out
}

/// Relative Frobenius error of C's m x n blocks against `product + beta * before` (`product`
/// from [`reference`]), relative to the largest of the Frobenius norms of the result and of its
/// two terms, so that cancellation between `alpha * A * B` and `beta * C` does not turn the
/// inputs' rounding into a large relative error. Fails (an error message) when anything outside
/// the blocks differs from `before` bit for bit.
pub fn compare<T: Element>(g: &Gemm, got: &[T], before: &[f32], product: &[f64]) -> Result<f64, String> {
    if got.len() != before.len() {
        return Err(format!("C has {} elements, expected {}", got.len(), before.len()));
    }
    let mut inside = vec![false; got.len()];
    let (mut diff, mut norm, mut norm_product, mut norm_c) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for z in 0..g.batch {
        for i in 0..g.m {
            for j in 0..g.n {
                let at = z * g.stride_c + i * g.ldc + j;
                inside[at] = true;
                let p = product[(z * g.m + i) * g.n + j];
                let c = if g.beta == 0.0 { 0.0 } else { f64::from(g.beta) * f64::from(before[at]) };
                let e = f64::from(got[at].to_f32()) - (p + c);
                diff += e * e;
                norm += (p + c) * (p + c);
                norm_product += p * p;
                norm_c += c * c;
            }
        }
    }
    let norm = norm.max(norm_product).max(norm_c);
    for (at, (&x, &b)) in got.iter().zip(before).enumerate() {
        if !inside[at] && x.to_f32().to_bits() != T::from_f32(b).to_f32().to_bits() {
            return Err(format!("element {at} outside the m x n blocks was written: {b} -> {:?}", x));
        }
    }
    let err = (diff / norm.max(f64::MIN_POSITIVE)).sqrt();
    if err.is_nan() {
        return Err("NaN in the result".into());
    }
    Ok(err)
}

/// Runs `spec` on `rt` through the host-slice API (f32 in and out) and checks it.
pub fn run_f32(rt: &ProductionGpuRuntime, spec: &Spec, rng: &mut SplitMix64) {
    let case = spec.build(rng);
    let want = reference(&case.g, &case.a, &case.b, f64::from);
    let mut c = case.c.clone();
    rt.gemm(&case.g, &case.a, &case.b, &mut c).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
    let err = compare(&case.g, &c, &case.c, &want).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
    let tol = spec.precision.tolerance();
    assert!(err <= tol, "{spec:?}: relative Frobenius error {err:.3e} > {tol:.0e}");
}

/// Runs `spec` with `TIn` inputs and `TOut` outputs (the reference uses the `TIn` values).
pub fn run_typed<TIn: Element, TOut: Element>(rt: &ProductionGpuRuntime, spec: &Spec, rng: &mut SplitMix64) {
    let case = spec.build(rng);
    let a: Vec<TIn> = case.a.iter().map(|&x| TIn::from_f32(x)).collect();
    let b: Vec<TIn> = case.b.iter().map(|&x| TIn::from_f32(x)).collect();
    let before: Vec<TOut> = case.c.iter().map(|&x| TOut::from_f32(x)).collect();
    let before_f32: Vec<f32> = before.iter().map(|x| x.to_f32()).collect();
    let want = reference(&case.g, &a, &b, |x: TIn| f64::from(x.to_f32()));
    let mut c = before.clone();
    rt.gemm(&case.g, &a, &b, &mut c).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
    let err = compare(&case.g, &c, &before_f32, &want).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
    let tol = spec.precision.tolerance();
    assert!(
        err <= tol,
        "{spec:?} {}->{}: relative Frobenius error {err:.3e} > {tol:.0e}",
        TIn::NAME,
        TOut::NAME
    );
}

/// Runs `spec` through every 16-bit combination: bf16 and f16 in, each with its own type and with
/// f32 out (at `Precision::Bf16` / `Precision::F16`).
pub fn run_sixteen_bit(rt: &ProductionGpuRuntime, spec: &Spec, rng: &mut SplitMix64) {
    let (bf, hf) = (spec.precision(Precision::Bf16), spec.precision(Precision::F16));
    run_typed::<bf16, bf16>(rt, &bf, rng);
    run_typed::<bf16, f32>(rt, &bf, rng);
    run_typed::<f16, f16>(rt, &hf, rng);
    run_typed::<f16, f32>(rt, &hf, rng);
}

pub const PRECISIONS: [Precision; 4] = [Precision::F32, Precision::Tf32, Precision::Bf16, Precision::F16];
pub const TRANSPOSES: [(bool, bool); 4] = [(false, false), (false, true), (true, false), (true, true)];

/// The fixed odd shapes every precision and transpose runs through.
pub const ODD_SHAPES: [(usize, usize, usize); 4] = [(1, 1, 1), (1, 4097, 3), (127, 129, 131), (257, 300, 70)];

/// `count` random shapes with sides in 1..=max, random transposes, scaling, padding, precision.
pub fn random_specs(rng: &mut SplitMix64, count: usize, max: usize) -> Vec<Spec> {
    let mut pick = |hi: usize| 1 + (rng.next_u64() % hi as u64) as usize;
    (0..count)
        .map(|_| {
            let (m, n, k) = (pick(max), pick(max), pick(max));
            let flags = pick(16) - 1;
            let pad = [pick(9) - 1, pick(9) - 1, pick(9) - 1];
            let beta = if flags & 4 != 0 { 0.0 } else { -0.5 };
            Spec::new(m, n, k)
                .trans(flags & 1 != 0, flags & 2 != 0)
                .scaled(0.75, beta)
                .padded(pad)
                .precision(PRECISIONS[pick(4) - 1])
        })
        .collect()
}
