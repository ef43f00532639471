//! Double-precision GEMM in the runtime: [`ProductionGpuRuntime::gemm_f64`] and
//! [`matmul_f64`](ProductionGpuRuntime::matmul_f64) on host slices (the f64 GPU kernels, or
//! `matrixmultiply`'s f64 GEMM on the CPU), [`GpuOps::gemm_f64`] on device buffers.

use crate::driver::{CudaView, CudaViewMut};
use crate::error::{Error, Result};
use crate::kernels::gemm::{double, Gemm, GemmF64};
use crate::ops::shape;
use crate::runtime::{Backend, GpuOps, ProductionGpuRuntime};

impl ProductionGpuRuntime {
    /// `a * b` for row-major `a` (m x k) and `b` (k x n): the m x n product in f64.
    pub fn matmul_f64(&self, a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Result<Vec<f64>> {
        shape::matrix("matmul_f64", "a", a.len(), m, k)?;
        shape::matrix("matmul_f64", "b", b.len(), k, n)?;
        let g = Gemm::new(m, n, k).with_f64_scales(1.0, 0.0);
        let c_len = shape::elements("matmul_f64", "c", &[m, n])?;
        g.layout.validate(a.len(), b.len(), c_len)?;
        let mut c = Vec::new();
        c.try_reserve_exact(c_len).map_err(|_| Error::Shape {
            op: "matmul_f64",
            expected: format!("an m x n = {m} x {n} product that fits in host memory"),
            got: format!("{c_len} f64 elements"),
        })?;
        c.resize(c_len, 0.0);
        self.gemm_f64(&g, a, b, &mut c)?;
        Ok(c)
    }

    /// The general f64 GEMM on host slices: `c = alpha * op(a) * op(b) + beta * c` for every batch
    /// entry of `g.layout` (transposes, leading dimensions, strides: see [`Gemm`]), f64
    /// throughout. Shapes are checked first ([`Error::Shape`]); m, n or batch 0 does nothing,
    /// k = 0 scales C by beta; beta 0 never reads C.
    pub fn gemm_f64(&self, g: &GemmF64, a: &[f64], b: &[f64], c: &mut [f64]) -> Result<()> {
        let l = &g.layout;
        l.validate(a.len(), b.len(), c.len())?;
        if l.is_empty() {
            return Ok(());
        }
        match &self.backend {
            Backend::Gpu(gpu) if l.k > 0 => gpu.host(|ops| {
                let (da, db) = (ops.upload(a)?, ops.upload(b)?);
                let mut dc = ops.upload(c)?;
                ops.gemm_f64(g, &da.as_view(), &db.as_view(), &mut dc.as_view_mut())?;
                ops.stream().memcpy_dtoh(&dc, c)?;
                Ok(())
            }),
            _ => cpu_gemm_f64(g, a, b, c),
        }
    }
}

impl GpuOps {
    /// `c = alpha * op(a) * op(b) + beta * c` in f64 on device buffers, in place on `c`, for every
    /// batch entry of `g.layout`; ordered on this runtime's stream. See [`double::gemm_f64`].
    pub fn gemm_f64(
        &self,
        g: &GemmF64,
        a: &CudaView<f64>,
        b: &CudaView<f64>,
        c: &mut CudaViewMut<f64>,
    ) -> Result<()> {
        double::gemm_f64(self.kernels(), self.stream(), self.workspace(), g, a, b, c)
    }
}

/// The CPU f64 GEMM: `matrixmultiply::dgemm` per batch entry, straight on C's strided blocks
/// (beta 0: C is not read); k = 0 scales C by beta.
pub(super) fn cpu_gemm_f64(g: &GemmF64, a: &[f64], b: &[f64], c: &mut [f64]) -> Result<()> {
    let l = &g.layout;
    let (need_a, need_b, need_c) = l.min_lens()?;
    if a.len() < need_a || b.len() < need_b || c.len() < need_c {
        // Not reached after `validate`; refused rather than trusted by the unsafe block below.
        return Err(Error::Shape {
            op: "gemm_f64",
            expected: format!("operands of at least ({need_a}, {need_b}, {need_c}) elements"),
            got: format!("({}, {}, {}) elements", a.len(), b.len(), c.len()),
        });
    }
    if l.is_empty() {
        return Ok(());
    }
    if l.k == 0 {
        for z in 0..l.batch {
            for i in 0..l.m {
                let start = z * l.stride_c + i * l.ldc;
                for x in &mut c[start..start + l.n] {
                    *x = if g.beta == 0.0 { 0.0 } else { g.beta * *x };
                }
            }
        }
        return Ok(());
    }
    let (rsa, csa) = if l.trans_a { (1, l.lda) } else { (l.lda, 1) };
    let (rsb, csb) = if l.trans_b { (1, l.ldb) } else { (l.ldb, 1) };
    for z in 0..l.batch {
        // SAFETY: with the strides above, element (i, p) of op(A) is a[z*stride_a + i*rsa + p*csa]
        // for i < m, p < k, within the `need_a` elements checked above (likewise B); C's block
        // (i, j) at z*stride_c + i*ldc + j lies within `need_c`, and batch entries of C do not
        // overlap (validate), nor does C alias A or B (distinct slices).
        unsafe {
            matrixmultiply::dgemm(
                l.m,
                l.k,
                l.n,
                g.alpha,
                a.as_ptr().add(z * l.stride_a),
                rsa as isize,
                csa as isize,
                b.as_ptr().add(z * l.stride_b),
                rsb as isize,
                csb as isize,
                g.beta,
                c.as_mut_ptr().add(z * l.stride_c),
                l.ldc as isize,
                1,
            );
        }
    }
    Ok(())
}
