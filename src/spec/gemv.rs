//! Matrix-vector products (`cuda/gemv.cu`): the dimensions of one GEMV and their check.

use crate::error::{Error, Result};
use crate::spec::shape;

/// The dimensions of one GEMV: `A` is `[m, n]` row-major with leading dimension `lda`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gemv {
    /// Rows of `A`.
    pub m: usize,
    /// Columns of `A`.
    pub n: usize,
    /// Elements between the starts of consecutive rows of `A` (`>= n`).
    pub lda: usize,
    /// Scale of the product.
    pub alpha: f32,
    /// Scale of the old `y`; 0 means `y` is not read.
    pub beta: f32,
}

impl Gemv {
    /// A dense `[m, n]` matrix (`lda = max(n, 1)`), `y = A x` (or `Aᵀ x`).
    pub fn dense(m: usize, n: usize) -> Self {
        Self { m, n, lda: n.max(1), alpha: 1.0, beta: 0.0 }
    }

    /// Checks `A`'s length against the dimensions, and `x`, `y` against the lengths they need.
    pub fn check(&self, op: &'static str, a: usize, x: usize, y: usize, transposed: bool) -> Result<()> {
        let Gemv { m, n, lda, .. } = *self;
        if lda < n.max(1) {
            return Err(Error::Shape {
                op,
                expected: format!("lda >= max(n, 1) = {}", n.max(1)),
                got: format!("lda = {lda}"),
            });
        }
        match shape::strided_extent(op, "a", 1, 0, m, lda, n) {
            Ok(need) if a >= need => {}
            _ => {
                return Err(Error::Shape {
                    op,
                    expected: format!(
                        "`a` of at least (m - 1) * lda + n elements (m = {m}, n = {n}, lda = {lda})"
                    ),
                    got: format!("{a} elements"),
                })
            }
        }
        let (xn, yn) = if transposed { (m, n) } else { (n, m) };
        shape::optional_len(op, "x", Some(x), xn)?;
        shape::optional_len(op, "y", Some(y), yn)
    }
}
