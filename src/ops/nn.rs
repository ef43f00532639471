//! Neural-network operations (`cuda/nn.cu`): the optimisers' update rules, a dense layer's bias
//! add and bias gradient, and inverted dropout.

use crate::cpu;
use crate::driver::CudaViewMut;
use crate::error::Result;
use crate::kernels::nn as launch;
use crate::ops::{shape, Gpu, Map, Update, Views};

pub use crate::spec::nn::{check_dropout_rate, Optimizer};

/// `y[r, c] += bias[c]` in place (`y` `[rows, cols]`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BiasAdd {
    pub rows: usize,
    pub cols: usize,
}

impl Update<1> for BiasAdd {
    type Elem = f32;
    type In = f32;

    fn check(self, y: usize, [bias]: [usize; 1]) -> Result<()> {
        shape::matrix("bias_add", "y", y, self.rows, self.cols)?;
        shape::matrix("bias_add", "bias", bias, 1, self.cols)
    }

    fn launch(self, gpu: Gpu, y: &mut CudaViewMut<f32>, [bias]: Views<f32, 1>) -> Result<()> {
        launch::bias_add(gpu.kernels, gpu.stream, y, bias, self.rows, self.cols)
    }

    fn cpu(self, y: &mut [f32], [bias]: [&[f32]; 1]) {
        cpu::nn::bias_add(y, bias);
    }
}

/// The column sums of `dy` (`[rows, cols]`): a dense layer's bias gradient (zeros for no rows).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BiasGrad {
    pub rows: usize,
    pub cols: usize,
}

impl Map<1> for BiasGrad {
    type In = f32;
    type Out = f32;

    fn check(self, [dy]: [usize; 1]) -> Result<usize> {
        shape::matrix("bias_grad", "dy", dy, self.rows, self.cols).map(|()| self.cols)
    }

    fn launch(self, gpu: Gpu, [dy]: Views<f32, 1>, db: &mut CudaViewMut<f32>) -> Result<()> {
        launch::bias_grad(gpu.kernels, gpu.stream, dy, db, self.rows, self.cols)
    }

    fn cpu(self, [dy]: [&[f32]; 1], _: usize) -> Result<Vec<f32>> {
        cpu::nn::bias_grad(dy, self.cols)
    }
}

/// Inverted dropout `u > p ? x / (1 - p) : 0` with uniforms `u`, `p` in `[0, 1)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dropout(pub f32);

impl Map<2> for Dropout {
    type In = f32;
    type Out = f32;

    fn check(self, [x, u]: [usize; 2]) -> Result<usize> {
        let n = shape::same_len("dropout", &[("x", x), ("u", u)])?;
        check_dropout_rate("dropout", self.0)?;
        Ok(n)
    }

    fn launch(self, gpu: Gpu, [x, u]: Views<f32, 2>, y: &mut CudaViewMut<f32>) -> Result<()> {
        launch::dropout(gpu.kernels, gpu.stream, x, u, y, self.0)
    }

    fn cpu(self, [x, u]: [&[f32]; 2], _: usize) -> Result<Vec<f32>> {
        Ok(cpu::nn::dropout(x, u, self.0))
    }
}
