//! Matrix-vector products (`cuda/gemv.cu`): the dimensions of one GEMV, their check, and the
//! product `y = alpha * A x + beta * y` (or `Aᵀ x`) defined once.

use crate::cpu;
use crate::kernels::gemv as launch;
use crate::ops::update;

pub use crate::spec::gemv::Gemv;

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

update! {
    impl Update<2> for Product: Elem = f32, In = f32 {
        check(self, y, [a, x]) { self.dims.check(self.name(), a, x, y, self.transposed) }
        launch(self, gpu, y, [a, x]) {
            let launch = if self.transposed { launch::gemv_t } else { launch::gemv };
            launch(gpu.kernels, gpu.stream, self.dims, a, x, y)
        }
        cpu(self, y, [a, x]) {
            let Gemv { m, n, lda, alpha, beta } = self.dims;
            if self.transposed {
                let product = cpu::gemv_t(a, x, y, m, n, lda, alpha, beta);
                y.copy_from_slice(&product);
            } else {
                cpu::gemv_inplace(a, x, y, m, n, lda, alpha, beta);
            }
        }
    }
}
