//! The CPU fallback of GEMM: `matrixmultiply`'s f32 GEMM (cache-blocked, SIMD, threaded) on inputs
//! rounded to the requested precision first, so that it computes what the GPU kernels compute
//! (f32 accumulation of products of TF32 / bf16 / f16 values) up to summation order.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::kernels::gemm::{Element, Gemm, Precision};

/// Operands larger than this are converted on several threads.
const PAR_MIN: usize = 1 << 16;

/// `c = alpha * op(a) * op(b) + beta * c` for every batch entry of `g`, at `precision` (already
/// resolved for the element types). Assumes `g.validate(a.len(), b.len(), c.len())` passed and
/// m, n, k and batch are nonzero.
pub(super) fn gemm<TIn: Element, TOut: Element>(
    g: &Gemm,
    precision: Precision,
    a: &[TIn],
    b: &[TIn],
    c: &mut [TOut],
) -> Result<()> {
    let (need_a, need_b, need_c) = g.min_lens()?;
    if a.len() < need_a || b.len() < need_b || c.len() < need_c || g.k == 0 {
        // Not reached after `validate`; refused rather than trusted by the unsafe block below.
        return Err(Error::Shape {
            op: "gemm",
            expected: format!("operands of at least ({need_a}, {need_b}, {need_c}) elements and k > 0"),
            got: format!("({}, {}, {}) elements, k = {}", a.len(), b.len(), c.len(), g.k),
        });
    }
    let a = rounded(&a[..need_a], precision);
    let b = rounded(&b[..need_b], precision);
    let (rsa, csa) = if g.trans_a { (1, g.lda) } else { (g.lda, 1) };
    let (rsb, csb) = if g.trans_b { (1, g.ldb) } else { (g.ldb, 1) };
    let mut block = vec![0.0f32; g.m * g.n];
    for z in 0..g.batch {
        let c_at = |i: usize| z * g.stride_c + i * g.ldc;
        if g.beta != 0.0 {
            for (i, row) in block.chunks_exact_mut(g.n).enumerate() {
                let src = &c[c_at(i)..c_at(i) + g.n];
                row.iter_mut().zip(src).for_each(|(d, s)| *d = s.to_f32());
            }
        }
        // SAFETY: with the strides above, element (i, p) of op(A) is a[z*stride_a + i*rsa + p*csa]
        // for i < m, p < k, which lies within the `need_a` elements checked above (likewise for B);
        // `block` is a packed m x n matrix. With beta == 0 matrixmultiply does not read `block`.
        unsafe {
            matrixmultiply::sgemm(
                g.m,
                g.k,
                g.n,
                g.alpha,
                a.as_ptr().add(z * g.stride_a),
                rsa as isize,
                csa as isize,
                b.as_ptr().add(z * g.stride_b),
                rsb as isize,
                csb as isize,
                g.beta,
                block.as_mut_ptr(),
                g.n as isize,
                1,
            );
        }
        for (i, row) in block.chunks_exact(g.n).enumerate() {
            let dst = &mut c[c_at(i)..c_at(i) + g.n];
            dst.iter_mut().zip(row).for_each(|(d, &s)| *d = TOut::from_f32(s));
        }
    }
    Ok(())
}

/// `C = beta * C` on every m x n block (the k = 0 product); beta 0 writes zeros without reading.
pub(super) fn scale_c<TOut: Element>(g: &Gemm, c: &mut [TOut]) {
    for z in 0..g.batch {
        for i in 0..g.m {
            let start = z * g.stride_c + i * g.ldc;
            for x in &mut c[start..start + g.n] {
                *x = TOut::from_f32(if g.beta == 0.0 { 0.0 } else { g.beta * x.to_f32() });
            }
        }
    }
}

/// `x` widened to f32 and rounded to what `precision` multiplies.
fn rounded<T: Element>(x: &[T], precision: Precision) -> Vec<f32> {
    let f = |v: &T| precision.round(v.to_f32());
    if x.len() >= PAR_MIN {
        x.par_iter().map(f).collect()
    } else {
        x.iter().map(f).collect()
    }
}

/// `x` rounded to the 16-bit type `T` (round to nearest even).
pub(super) fn narrowed<TIn: Element, T: Element>(x: &[TIn]) -> Vec<T> {
    let f = |v: &TIn| T::from_f32(v.to_f32());
    if x.len() >= PAR_MIN {
        x.par_iter().map(f).collect()
    } else {
        x.iter().map(f).collect()
    }
}
