//! Activation functions, forward and backward, out of place or in place (`cuda/activations.cu`).

use crate::cpu;
use crate::driver::CudaViewMut;
use crate::error::Result;
use crate::kernels::activations as launch;
use crate::ops::{shape, Gpu, Map, Update, Views};

pub use crate::spec::activations::Activation;

/// `out = f(x)`.
impl Map<1> for Activation {
    type In = f32;
    type Out = f32;

    fn check(self, [x]: [usize; 1]) -> Result<usize> {
        Ok(x)
    }

    fn launch(self, gpu: Gpu, [x]: Views<f32, 1>, out: &mut CudaViewMut<f32>) -> Result<()> {
        launch::forward(gpu.kernels, gpu.stream, self, x, out)
    }

    fn cpu(self, [x]: [&[f32]; 1], _: usize) -> Result<Vec<f32>> {
        Ok(cpu::activation(self, x))
    }
}

/// `x = f(x)`.
impl Update<0> for Activation {
    type Elem = f32;
    type In = f32;

    fn check(self, _: usize, []: [usize; 0]) -> Result<()> {
        Ok(())
    }

    fn launch(self, gpu: Gpu, x: &mut CudaViewMut<f32>, []: Views<f32, 0>) -> Result<()> {
        launch::forward_inplace(gpu.kernels, gpu.stream, self, x)
    }

    fn cpu(self, x: &mut [f32], []: [&[f32]; 0]) {
        cpu::activation_inplace(self, x);
    }
}

/// The backward pass of an activation: `dx = dy * f'(x)`, `x` the forward input; in place, `dy`
/// is updated.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Backward(pub Activation);

impl Backward {
    fn check_lens(self, dy: usize, x: usize) -> Result<usize> {
        shape::same_len(self.0.backward_kernel(), &[("dy", dy), ("x", x)])
    }
}

impl Map<2> for Backward {
    type In = f32;
    type Out = f32;

    fn check(self, [dy, x]: [usize; 2]) -> Result<usize> {
        self.check_lens(dy, x)
    }

    fn launch(self, gpu: Gpu, [dy, x]: Views<f32, 2>, dx: &mut CudaViewMut<f32>) -> Result<()> {
        launch::backward(gpu.kernels, gpu.stream, self.0, dy, x, dx)
    }

    fn cpu(self, [dy, x]: [&[f32]; 2], _: usize) -> Result<Vec<f32>> {
        Ok(cpu::activation_backward(self.0, dy, x))
    }
}

impl Update<1> for Backward {
    type Elem = f32;
    type In = f32;

    fn check(self, dy: usize, [x]: [usize; 1]) -> Result<()> {
        self.check_lens(dy, x).map(drop)
    }

    fn launch(self, gpu: Gpu, dy: &mut CudaViewMut<f32>, [x]: Views<f32, 1>) -> Result<()> {
        launch::backward_inplace(gpu.kernels, gpu.stream, self.0, dy, x)
    }

    fn cpu(self, dy: &mut [f32], [x]: [&[f32]; 1]) {
        cpu::activation_backward_inplace(self.0, dy, x);
    }
}
