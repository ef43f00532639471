//! Matrix-vector products (`cuda/gemv.cu`): the dimensions of one GEMV, their check, and the
//! product `y = alpha * A x + beta * y` (or `Aᵀ x`) defined once.

use crate::cpu;
use crate::driver::CudaViewMut;
use crate::error::{Error, Result};
use crate::kernels::{args, gemv as launch};
use crate::ops::{shape, Gpu, Update, Views};

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
        args::optional_len(op, "x", Some(x), xn)?;
        args::optional_len(op, "y", Some(y), yn)
    }
}

/// `y = alpha * A x + beta * y`, or `alpha * Aᵀ x + beta * y` when `transposed`, in place.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Product {
    pub dims: Gemv,
    pub transposed: bool,
}

impl Product {
    /// The name its errors carry.
    pub fn name(self) -> &'static str {
        if self.transposed {
            "gemv_t"
        } else {
            "gemv"
        }
    }

    /// The lengths of `y` and of the dot products: `(m, n)`, or `(n, m)` transposed.
    pub fn out_and_inner(self) -> (usize, usize) {
        if self.transposed {
            (self.dims.n, self.dims.m)
        } else {
            (self.dims.m, self.dims.n)
        }
    }
}

impl Update<2> for Product {
    type Elem = f32;
    type In = f32;

    fn check(self, y: usize, [a, x]: [usize; 2]) -> Result<()> {
        self.dims.check(self.name(), a, x, y, self.transposed)
    }

    fn launch(self, gpu: Gpu, y: &mut CudaViewMut<f32>, [a, x]: Views<f32, 2>) -> Result<()> {
        let launch = if self.transposed { launch::gemv_t } else { launch::gemv };
        launch(gpu.kernels, gpu.stream, self.dims, a, x, y)
    }

    fn cpu(self, y: &mut [f32], [a, x]: [&[f32]; 2]) {
        let Gemv { m, n, lda, alpha, beta } = self.dims;
        if self.transposed {
            let product = cpu::gemv_t(a, x, y, m, n, lda, alpha, beta);
            y.copy_from_slice(&product);
        } else {
            cpu::gemv_inplace(a, x, y, m, n, lda, alpha, beta);
        }
    }
}
