//! Softmax and log-softmax over the rows of a row-major matrix (`cuda/softmax.cu`), the row
//! maximum subtracted first.

use crate::cpu;
use crate::driver::CudaViewMut;
use crate::error::Result;
use crate::kernels::softmax as launch;
use crate::ops::{shape, Gpu, Map, Update, Views};

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

impl Map<1> for Rows {
    type In = f32;
    type Out = f32;

    fn check(self, [x]: [usize; 1]) -> Result<usize> {
        self.check_x(x)
    }

    fn launch(self, gpu: Gpu, [x]: Views<f32, 1>, out: &mut CudaViewMut<f32>) -> Result<()> {
        launch::rows(gpu.kernels, gpu.stream, self.kind, x, out, self.rows, self.cols)
    }

    fn cpu(self, [x]: [&[f32]; 1], _: usize) -> Result<Vec<f32>> {
        Ok(match self.kind {
            Softmax::Softmax => cpu::softmax_rows(x, self.rows, self.cols),
            Softmax::LogSoftmax => cpu::log_softmax_rows(x, self.rows, self.cols),
        })
    }
}

impl Update<0> for Rows {
    type Elem = f32;
    type In = f32;

    fn check(self, x: usize, []: [usize; 0]) -> Result<()> {
        self.check_x(x).map(drop)
    }

    fn launch(self, gpu: Gpu, x: &mut CudaViewMut<f32>, []: Views<f32, 0>) -> Result<()> {
        launch::rows_inplace(gpu.kernels, gpu.stream, self.kind, x, self.rows, self.cols)
    }

    fn cpu(self, x: &mut [f32], []: [&[f32]; 0]) {
        match self.kind {
            Softmax::Softmax => cpu::softmax_rows_inplace(x, self.rows, self.cols),
            Softmax::LogSoftmax => cpu::log_softmax_rows_inplace(x, self.rows, self.cols),
        }
    }
}
