//! The transpose of a dense row-major f32 matrix (`cuda/transpose.cu`).

use crate::cpu;
use crate::driver::CudaViewMut;
use crate::error::Result;
use crate::kernels::transpose as launch;
use crate::ops::{shape, Gpu, Map, Views};

/// The transpose (`[cols, rows]`) of `x` (`[rows, cols]`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Transpose {
    pub rows: usize,
    pub cols: usize,
}

impl Map<1> for Transpose {
    type In = f32;
    type Out = f32;

    fn check(self, [x]: [usize; 1]) -> Result<usize> {
        shape::matrix("transpose", "x", x, self.rows, self.cols).map(|()| x)
    }

    fn launch(self, gpu: Gpu, [x]: Views<f32, 1>, out: &mut CudaViewMut<f32>) -> Result<()> {
        launch::transpose(gpu.kernels, gpu.stream, x, out, self.rows, self.cols)
    }

    fn cpu(self, [x]: [&[f32]; 1], _: usize) -> Result<Vec<f32>> {
        Ok(cpu::transpose(x, self.rows, self.cols))
    }
}
