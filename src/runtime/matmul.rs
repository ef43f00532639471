//! GEMM in the runtime: [`ProductionGpuRuntime::matmul`] and friends on host slices (GPU or CPU
//! fallback), [`GpuOps::gemm`] on device buffers, and the free functions [`sgemm`] (BLAS-style
//! arguments) and [`matrix_multiply`] (over the process-wide runtime). All matrices are row-major.

mod cpu;
mod double;

use half::{bf16, f16};

use super::{runtime, Backend, GpuOps, ProductionGpuRuntime};
use crate::driver::{CudaSlice, CudaView, CudaViewMut};
use crate::error::Result;
use crate::kernels::gemm::{self, effective_precision, Bias, Element, FusedActivation, Gemm, Precision};
use crate::kernels::shape;
use crate::selftest::{max_difference, max_error, Check, SplitMix64};

impl ProductionGpuRuntime {
    /// `a * b` for row-major `a` (m x k) and `b` (k x n): the m x n product, exact fp32.
    pub fn matmul(&self, a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Result<Vec<f32>> {
        self.matmul_with(a, b, m, n, k, Precision::F32)
    }

    /// `a * b` as [`matmul`](Self::matmul), with the products at `precision` (for BF16 / FP16 the
    /// inputs are rounded to that type first; accumulation is f32).
    pub fn matmul_with(
        &self,
        a: &[f32],
        b: &[f32],
        m: usize,
        n: usize,
        k: usize,
        precision: Precision,
    ) -> Result<Vec<f32>> {
        shape::matrix("matmul", "a", a.len(), m, k)?;
        shape::matrix("matmul", "b", b.len(), k, n)?;
        let g = Gemm::new(m, n, k).with_precision(precision);
        // Every check before the m x n allocation (with k = 0, a and b are empty whatever m, n).
        let c_len = shape::elements("matmul", "c", &[m, n])?;
        g.validate(a.len(), b.len(), c_len)?;
        let mut c = shape::zeroed("matmul", "c", c_len)?;
        self.gemm(&g, a, b, &mut c)?;
        Ok(c)
    }

    /// `act(a * b + bias)` for row-major `a` (m x k), `b` (k x n) and `bias` (n values, one per
    /// column): a dense layer's forward pass as one GEMM at `precision`, with the bias and the
    /// activation fused into its store on the GPU. The CPU fallback runs the same GEMM, then adds
    /// the bias and applies the activation.
    pub fn matmul_bias_act(
        &self,
        a: &[f32],
        b: &[f32],
        bias: &[f32],
        (m, n, k): (usize, usize, usize),
        act: FusedActivation,
        precision: Precision,
    ) -> Result<Vec<f32>> {
        shape::matrix("matmul_bias_act", "a", a.len(), m, k)?;
        shape::matrix("matmul_bias_act", "b", b.len(), k, n)?;
        shape::same_len("matmul_bias_act", &[("bias", bias.len()), ("n", n)])?;
        shape::elements("matmul_bias_act", "c", &[m, n])?;
        match &self.backend {
            Backend::Gpu(gpu) => gpu.host(|ops| {
                let (da, db, dbias) = (ops.upload(a)?, ops.upload(b)?, ops.upload(bias)?);
                let c = ops.matmul_bias_act(&da, &db, &dbias, (m, n, k), act, precision)?;
                ops.download(&c)
            }),
            Backend::Cpu { .. } => {
                let mut c = self.matmul_with(a, b, m, n, k, precision)?;
                let act = act.as_activation();
                for row in c.chunks_exact_mut(n.max(1)) {
                    for (x, &bias) in row.iter_mut().zip(bias) {
                        *x += bias;
                        if let Some(act) = act {
                            *x = act.forward(*x);
                        }
                    }
                }
                Ok(c)
            }
        }
    }

    /// The general GEMM on host slices: `c = alpha * op(a) * op(b) + beta * c` for every batch
    /// entry of `g` (transposes, leading dimensions, strides: see [`Gemm`]). f32 inputs run at
    /// any [`Precision`] (rounded to bf16 / f16 first for those); bf16 / f16 inputs give f32 or
    /// their own type. Shapes are checked first ([`Error::Shape`](crate::Error::Shape)); m, n or
    /// batch 0 does nothing, k = 0 scales C by beta.
    pub fn gemm<TIn: Element, TOut: Element>(
        &self,
        g: &Gemm,
        a: &[TIn],
        b: &[TIn],
        c: &mut [TOut],
    ) -> Result<()> {
        if TIn::INPUT_PRECISION.is_none() && TOut::INPUT_PRECISION.is_none() {
            // f32 data at a 16-bit precision: round on the host, then the 16-bit path.
            match g.precision {
                Precision::Bf16 => return self.narrowed_gemm::<TIn, bf16, TOut>(g, a, b, c),
                Precision::F16 => return self.narrowed_gemm::<TIn, f16, TOut>(g, a, b, c),
                Precision::F32 | Precision::Tf32 => {}
            }
        }
        let precision = effective_precision::<TIn, TOut>(g.precision)?;
        g.validate(a.len(), b.len(), c.len())?;
        if g.is_empty() {
            return Ok(());
        }
        if g.k == 0 {
            cpu::scale_c(g, c);
            return Ok(());
        }
        match &self.backend {
            Backend::Gpu(gpu) => gpu.host(|ops| {
                let (da, db) = (ops.upload(a)?, ops.upload(b)?);
                let (_, _, need_c) = g.min_lens()?;
                let packed = need_c == c.len()
                    && g.ldc == g.n
                    && (g.batch == 1 || Some(g.stride_c) == g.m.checked_mul(g.n));
                let mut dc = if g.beta == 0.0 && packed {
                    // SAFETY: a packed C with beta == 0: the GEMM writes every element.
                    unsafe { ops.stream().alloc::<TOut>(c.len()) }?
                } else {
                    ops.upload(c)?
                };
                ops.gemm(g, &da.as_view(), &db.as_view(), &mut dc.as_view_mut())?;
                ops.stream().memcpy_dtoh(&dc, c)?;
                Ok(())
            }),
            Backend::Cpu { .. } => cpu::gemm(g, precision, a, b, c),
        }
    }

    /// The self-test's GEMM rows: each precision on fresh random inputs at an odd shape (one
    /// transposed with alpha and beta, one batched), on the CPU fallback and, when given, the GPU,
    /// against an f64 reference. Errors are the self-test's (largest |error| / max(1, |reference|)),
    /// so the tolerances are per element: 1e-5 F32, 1e-2 TF32 and FP16, 1e-1 BF16 (measured
    /// ~3.5e-2 on the CPU: 8-bit mantissas and cancellation near 0).
    pub(crate) fn gemm_selftest(gpu: Option<&Self>, cpu: &Self, rng: &mut SplitMix64) -> Result<Vec<Check>> {
        let (m, n, k) = (127, 129, 131);
        let cases = [
            (Precision::F32, Gemm::new(m, n, k), 1e-5),
            (Precision::F32, Gemm::new(m, n, k).transposed(true, true).scaled(0.75, -0.5), 1e-5),
            (Precision::Tf32, Gemm::new(m, n, k), 1e-2),
            (Precision::Bf16, Gemm::new(m, n, k).batched(3, m * k, k * n, m * n), 1e-1),
            (Precision::F16, Gemm::new(m, n, k).transposed(false, true), 1e-2),
        ];
        let mut checks = Vec::with_capacity(cases.len());
        for (precision, g, tolerance) in cases {
            let g = g.with_precision(precision);
            let (la, lb, lc) = g.min_lens()?;
            let (a, b, c0) = (rng.vec(la, -1.0, 1.0), rng.vec(lb, -1.0, 1.0), rng.vec(lc, -1.0, 1.0));
            let reference = reference(&g, &a, &b, &c0);
            let run = |rt: &Self| -> Result<Vec<f32>> {
                let mut c = c0.clone();
                rt.gemm(&g, &a, &b, &mut c)?;
                Ok(c)
            };
            let on_cpu = run(cpu)?;
            let on_gpu = gpu.map(run).transpose()?;
            let t = |x: bool| if x { 't' } else { 'n' };
            checks.push(Check {
                op: format!(
                    "gemm {precision:?} {}{} {m}x{n}x{k}{}",
                    t(g.trans_a),
                    t(g.trans_b),
                    if g.batch > 1 { format!(" x{}", g.batch) } else { String::new() }
                ),
                gpu_vs_cpu: on_gpu.as_deref().map(|x| max_difference(x, &on_cpu)),
                gpu_error: on_gpu.as_deref().map(|x| max_error(x, &reference)),
                cpu_error: max_error(&on_cpu, &reference),
                tolerance,
            });
        }
        Ok(checks)
    }

    /// [`gemm`](Self::gemm) with the inputs rounded to the 16-bit type `T` first.
    fn narrowed_gemm<TIn: Element, T: Element, TOut: Element>(
        &self,
        g: &Gemm,
        a: &[TIn],
        b: &[TIn],
        c: &mut [TOut],
    ) -> Result<()> {
        g.validate(a.len(), b.len(), c.len())?;
        let (need_a, need_b, _) = g.min_lens()?;
        let (a, b) = (cpu::narrowed::<TIn, T>(&a[..need_a]), cpu::narrowed::<TIn, T>(&b[..need_b]));
        self.gemm::<T, TOut>(g, &a, &b, c)
    }
}

impl GpuOps {
    /// `c = alpha * op(a) * op(b) + beta * c` on device buffers, in place on `c`, for every batch
    /// entry of `g`; ordered on this runtime's stream. See [`gemm::gemm`] for the rules.
    pub fn gemm<TIn: Element, TOut: Element>(
        &self,
        g: &Gemm,
        a: &CudaView<TIn>,
        b: &CudaView<TIn>,
        c: &mut CudaViewMut<TOut>,
    ) -> Result<()> {
        gemm::gemm(self.kernels(), self.stream(), self.gemm_workspace(), g, a, b, c)
    }

    /// `a * b` for packed row-major `a` (m x k) and `b` (k x n) into a new m x n buffer, at
    /// `precision` F32 or TF32 (bf16 / f16 products take bf16 / f16 buffers through [`gemm`](Self::gemm)).
    pub fn matmul(
        &self,
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        m: usize,
        n: usize,
        k: usize,
        precision: Precision,
    ) -> Result<CudaSlice<f32>> {
        effective_precision::<f32, f32>(precision)?;
        shape::matrix("matmul", "a", a.len(), m, k)?;
        shape::matrix("matmul", "b", b.len(), k, n)?;
        let g = Gemm::new(m, n, k).with_precision(precision);
        let c_len = shape::elements("matmul", "c", &[m, n])?;
        g.validate(a.len(), b.len(), c_len)?;
        if c_len == 0 {
            return Ok(self.stream().null()?);
        }
        // SAFETY: with beta == 0 the GEMM writes all m x n elements (k == 0 included).
        let mut c = unsafe { self.stream().alloc::<f32>(c_len) }?;
        self.gemm(&g, &a.as_view(), &b.as_view(), &mut c.as_view_mut())?;
        Ok(c)
    }
}

impl GpuOps {
    /// `act(a * b + bias)` on device buffers into a new m x n buffer: packed row-major `a`
    /// (m x k), `b` (k x n), `bias` (n values), products at F32 or TF32, the bias and activation
    /// fused into the GEMM's store. See [`ProductionGpuRuntime::matmul_bias_act`].
    pub fn matmul_bias_act(
        &self,
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        bias: &CudaSlice<f32>,
        (m, n, k): (usize, usize, usize),
        act: FusedActivation,
        precision: Precision,
    ) -> Result<CudaSlice<f32>> {
        effective_precision::<f32, f32>(precision)?;
        shape::matrix("matmul_bias_act", "a", a.len(), m, k)?;
        shape::matrix("matmul_bias_act", "b", b.len(), k, n)?;
        shape::same_len("matmul_bias_act", &[("bias", bias.len()), ("n", n)])?;
        let g = Gemm::new(m, n, k).with_precision(precision);
        let c_len = shape::elements("matmul_bias_act", "c", &[m, n])?;
        if c_len == 0 {
            return Ok(self.stream().null()?);
        }
        // SAFETY: with beta == 0 the GEMM writes all m x n elements (k == 0 included).
        let mut c = unsafe { self.stream().alloc::<f32>(c_len) }?;
        let bias_view = bias.as_view();
        gemm::gemm_bias_act(
            self.kernels(),
            self.stream(),
            self.gemm_workspace(),
            &g,
            &a.as_view(),
            &b.as_view(),
            Some(Bias { values: &bias_view, stride: 0 }),
            act,
            &mut c.as_view_mut(),
        )?;
        Ok(c)
    }

    /// `c = act(c + bias)` in place on a packed row-major `rows x cols` device matrix (f32, bf16
    /// or f16), `bias` one value per column: the GEMM epilogue as a separate pass, for products
    /// that did not fuse it.
    pub fn bias_act<T: Element>(
        &self,
        c: &mut CudaViewMut<T>,
        (rows, cols): (usize, usize),
        bias: Option<&CudaView<T>>,
        act: FusedActivation,
    ) -> Result<()> {
        gemm::bias_act(self.kernels(), self.stream(), c, (rows, cols), bias, act)
    }
}

/// BLAS-style single-precision GEMM on host slices, row-major:
/// `c = alpha * op(a) * op(b) + beta * c` with `op(a)` m x k (`a` stored k x m when `trans_a`),
/// `op(b)` k x n (`b` stored n x k when `trans_b`), leading dimensions `lda`, `ldb`, `ldc`.
/// Exact fp32; [`ProductionGpuRuntime::gemm`] takes a [`Gemm`] for other precisions and batches.
#[allow(clippy::too_many_arguments)] // the BLAS argument list, on purpose
pub fn sgemm(
    runtime: &ProductionGpuRuntime,
    trans_a: bool,
    trans_b: bool,
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    a: &[f32],
    lda: usize,
    b: &[f32],
    ldb: usize,
    beta: f32,
    c: &mut [f32],
    ldc: usize,
) -> Result<()> {
    let g = Gemm::new(m, n, k).transposed(trans_a, trans_b).scaled(alpha, beta).leading_dims(lda, ldb, ldc);
    runtime.gemm(&g, a, b, c)
}

/// `a * b` for row-major `a` (m x k) and `b` (k x n) on the process-wide [`runtime`], exact
/// fp32. Note the argument order `m, k, n` (the seed executor's).
pub fn matrix_multiply(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Result<Vec<f32>> {
    runtime().matmul(a, b, m, n, k)
}

/// `alpha * op(a) * op(b) + beta * c` in f64 for packed batches (C's layout, C's length).
fn reference(g: &Gemm, a: &[f32], b: &[f32], c: &[f32]) -> Vec<f64> {
    let mut out: Vec<f64> = c.iter().map(|&x| f64::from(g.beta) * f64::from(x)).collect();
    for z in 0..g.batch {
        for i in 0..g.m {
            for j in 0..g.n {
                let dot: f64 = (0..g.k)
                    .map(|p| {
                        let x = a[z * g.stride_a + if g.trans_a { p * g.lda + i } else { i * g.lda + p }];
                        let y = b[z * g.stride_b + if g.trans_b { j * g.ldb + p } else { p * g.ldb + j }];
                        f64::from(x) * f64::from(y)
                    })
                    .sum();
                out[z * g.stride_c + i * g.ldc + j] += f64::from(g.alpha) * dot;
            }
        }
    }
    out
}
