//! Softmax and log-softmax over the rows of a row-major matrix (`cuda/softmax.cu`), the row
//! maximum subtracted first.

use crate::cpu;
use crate::error::Result;
use crate::kernels::softmax as launch;
use crate::ops::{map, shape, update};

pub use crate::spec::softmax::Softmax;

/// Softmax or log-softmax of each row of `x` (`[rows, cols]`), out of place or in place.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rows {
    pub kind: Softmax,
    pub rows: usize,
    pub cols: usize,
}

impl Rows {
    fn check_x(self, x: usize) -> Result<usize> {
        shape::matrix(self.kind.kernel(), "x", x, self.rows, self.cols).map(|()| x)
    }
}

map! {
    impl Map<1> for Rows: In = f32, Out = f32 {
        check(self, [x]) { self.check_x(x) }
        launch(self, gpu, [x], out) {
            launch::rows(gpu.kernels, gpu.stream, self.kind, x, out, self.rows, self.cols)
        }
        cpu(self, [x], _) {
            Ok(match self.kind {
                Softmax::Softmax => cpu::softmax_rows(x, self.rows, self.cols),
                Softmax::LogSoftmax => cpu::log_softmax_rows(x, self.rows, self.cols),
            })
        }
    }
}

update! {
    impl Update<0> for Rows: Elem = f32, In = f32 {
        check(self, x, []) { self.check_x(x).map(drop) }
        launch(self, gpu, x, []) {
            launch::rows_inplace(gpu.kernels, gpu.stream, self.kind, x, self.rows, self.cols)
        }
        cpu(self, x, []) {
            match self.kind {
                Softmax::Softmax => cpu::softmax_rows_inplace(x, self.rows, self.cols),
                Softmax::LogSoftmax => cpu::log_softmax_rows_inplace(x, self.rows, self.cols),
            }
        }
    }
}
