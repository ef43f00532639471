//! Neural-network operations (`cuda/nn.cu`): the optimisers' update rules, a dense layer's bias
//! add and bias gradient, and inverted dropout.

use crate::cpu;
use crate::kernels::nn as launch;
use crate::ops::{map, shape, update};

pub use crate::spec::nn::{check_dropout_rate, Optimizer};

/// `y[r, c] += bias[c]` in place (`y` `[rows, cols]`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BiasAdd {
    pub rows: usize,
    pub cols: usize,
}

update! {
    impl Update<1> for BiasAdd: Elem = f32, In = f32 {
        check(self, y, [bias]) {
            shape::matrix("bias_add", "y", y, self.rows, self.cols)?;
            shape::matrix("bias_add", "bias", bias, 1, self.cols)
        }
        launch(self, gpu, y, [bias]) {
            launch::bias_add(gpu.kernels, gpu.stream, y, bias, self.rows, self.cols)
        }
        cpu(self, y, [bias]) { cpu::nn::bias_add(y, bias) }
    }
}

/// The column sums of `dy` (`[rows, cols]`): a dense layer's bias gradient (zeros for no rows).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BiasGrad {
    pub rows: usize,
    pub cols: usize,
}

/// Inverted dropout `u > p ? x / (1 - p) : 0` with uniforms `u`, `p` in `[0, 1)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dropout(pub f32);

map! {
    impl Map<1> for BiasGrad: In = f32, Out = f32 {
        check(self, [dy]) { shape::matrix("bias_grad", "dy", dy, self.rows, self.cols).map(|()| self.cols) }
        launch(self, gpu, [dy], db) {
            launch::bias_grad(gpu.kernels, gpu.stream, dy, db, self.rows, self.cols)
        }
        cpu(self, [dy], _) { cpu::nn::bias_grad(dy, self.cols) }
    }

    impl Map<2> for Dropout: In = f32, Out = f32 {
        check(self, [x, u]) {
            let n = shape::same_len("dropout", &[("x", x), ("u", u)])?;
            check_dropout_rate("dropout", self.0)?;
            Ok(n)
        }
        launch(self, gpu, [x, u], y) { launch::dropout(gpu.kernels, gpu.stream, x, u, y, self.0) }
        cpu(self, [x, u], _) { Ok(cpu::nn::dropout(x, u, self.0)) }
    }
}
