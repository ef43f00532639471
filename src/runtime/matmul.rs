//! GEMM in the runtime: [`ProductionGpuRuntime::matmul`] and friends on host slices (GPU or CPU
//! fallback), [`GpuOps::gemm`] on device buffers, and the free functions [`sgemm`] (BLAS-style
//! arguments) and the deprecated [`matrix_multiply`] (over the process-wide runtime, sizes `m, k, n`). All matrices are row-major.

mod cpu;
mod double;

use half::{bf16, f16};

use super::{runtime, Backend, GpuOps, ProductionGpuRuntime};
use crate::driver::{CudaSlice, CudaView, CudaViewMut};
use crate::error::Result;
use crate::kernels::gemm::{self, effective_precision, Bias, Element, FusedActivation, Gemm, Precision};
use crate::ops::shape;

impl ProductionGpuRuntime {
    /// `a * b` for row-major `a` (m x k) and `b` (k x n): the m x n product, exact fp32.
    ///
    /// ```
    /// # let rt = prism_gpu::ProductionGpuRuntime::cpu();
    /// let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2 x 3
    /// let b = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0]; // 3 x 2
    /// let (m, n, k) = (2, 2, 3);
    /// assert_eq!(rt.matmul(&a, &b, m, n, k)?, [4.0, 5.0, 10.0, 11.0]);
    /// // `a` is not m x k: an error naming the shapes.
    /// assert!(rt.matmul(&a[..5], &b, m, n, k).is_err());
    /// # Ok::<(), prism_gpu::Error>(())
    /// ```
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
        gemm::gemm(self.kernels(), self.stream(), self.workspace(), g, a, b, c)
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
        self.new_product("matmul", [a, b], None, (m, n, k), FusedActivation::Identity, precision)
    }

    /// `act(a * b + bias)` on device buffers into a new m x n buffer: packed row-major `a`
    /// (m x k), `b` (k x n), `bias` (n values), products at F32 or TF32, the bias and activation
    /// fused into the GEMM's store. See [`ProductionGpuRuntime::matmul_bias_act`].
    pub fn matmul_bias_act(
        &self,
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        bias: &CudaSlice<f32>,
        dims: (usize, usize, usize),
        act: FusedActivation,
        precision: Precision,
    ) -> Result<CudaSlice<f32>> {
        self.new_product("matmul_bias_act", [a, b], Some(bias), dims, act, precision)
    }

    /// `act(a * b + bias)` into a new m x n buffer for [`matmul`](Self::matmul) and
    /// [`matmul_bias_act`](Self::matmul_bias_act): every check (named `op`) before the allocation.
    fn new_product(
        &self,
        op: &'static str,
        [a, b]: [&CudaSlice<f32>; 2],
        bias: Option<&CudaSlice<f32>>,
        (m, n, k): (usize, usize, usize),
        act: FusedActivation,
        precision: Precision,
    ) -> Result<CudaSlice<f32>> {
        effective_precision::<f32, f32>(precision)?;
        shape::matrix(op, "a", a.len(), m, k)?;
        shape::matrix(op, "b", b.len(), k, n)?;
        if let Some(bias) = bias {
            shape::same_len(op, &[("bias", bias.len()), ("n", n)])?;
        }
        let g = Gemm::new(m, n, k).with_precision(precision);
        let c_len = shape::elements(op, "c", &[m, n])?;
        g.validate(a.len(), b.len(), c_len)?;
        if c_len == 0 {
            return Ok(self.stream().null()?);
        }
        // SAFETY: with beta == 0 the GEMM writes all m x n elements (k == 0 included).
        let mut c = unsafe { self.stream().alloc::<f32>(c_len) }?;
        let bias_view = bias.map(CudaSlice::as_view);
        gemm::gemm_bias_act(
            self.kernels(),
            self.stream(),
            self.workspace(),
            &g,
            &a.as_view(),
            &b.as_view(),
            bias_view.as_ref().map(|values| Bias { values, stride: 0 }),
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
/// fp32, with the seed executor's argument order `m, k, n`. Deprecated: every other GEMM entry
/// point takes `m, n, k`; call `runtime().matmul(a, b, m, n, k)`.
#[deprecated(
    since = "0.1.0",
    note = "sizes in the order m, k, n unlike every other entry point: use `prism_gpu::runtime().matmul(a, b, m, n, k)`"
)]
pub fn matrix_multiply(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Result<Vec<f32>> {
    runtime().matmul(a, b, m, n, k)
}
