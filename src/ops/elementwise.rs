//! f32 arithmetic over equal-length vectors (`cuda/elementwise.cu`).

use crate::cpu;
use crate::driver::CudaViewMut;
use crate::error::Result;
use crate::kernels::elementwise as launch;
use crate::ops::{shape, Gpu, Map, Update, Views};

pub use crate::spec::elementwise::Binary;

/// `out = a ∘ b`.
impl Map<2> for Binary {
    type In = f32;
    type Out = f32;

    fn check(self, [a, b]: [usize; 2]) -> Result<usize> {
        shape::same_len(self.kernel(), &[("a", a), ("b", b)])
    }

    fn launch(self, gpu: Gpu, [a, b]: Views<f32, 2>, out: &mut CudaViewMut<f32>) -> Result<()> {
        launch::binary(gpu.kernels, gpu.stream, self, a, b, out)
    }

    fn cpu(self, [a, b]: [&[f32]; 2], _: usize) -> Result<Vec<f32>> {
        Ok(cpu::binary(self, a, b))
    }
}

/// `out = alpha * x + y`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Axpy(pub f32);

impl Map<2> for Axpy {
    type In = f32;
    type Out = f32;

    fn check(self, [x, y]: [usize; 2]) -> Result<usize> {
        shape::same_len("axpy", &[("x", x), ("y", y)])
    }

    fn launch(self, gpu: Gpu, [x, y]: Views<f32, 2>, out: &mut CudaViewMut<f32>) -> Result<()> {
        launch::axpy(gpu.kernels, gpu.stream, self.0, x, y, out)
    }

    fn cpu(self, [x, y]: [&[f32]; 2], _: usize) -> Result<Vec<f32>> {
        Ok(cpu::axpy(self.0, x, y))
    }
}

/// `out = alpha * x`, or `x *= alpha` in place.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scale(pub f32);

impl Map<1> for Scale {
    type In = f32;
    type Out = f32;

    fn check(self, [x]: [usize; 1]) -> Result<usize> {
        Ok(x)
    }

    fn launch(self, gpu: Gpu, [x]: Views<f32, 1>, out: &mut CudaViewMut<f32>) -> Result<()> {
        launch::scale(gpu.kernels, gpu.stream, self.0, x, out)
    }

    fn cpu(self, [x]: [&[f32]; 1], _: usize) -> Result<Vec<f32>> {
        Ok(cpu::scale(self.0, x))
    }
}

impl Update<0> for Scale {
    type Elem = f32;
    type In = f32;

    fn check(self, _: usize, []: [usize; 0]) -> Result<()> {
        Ok(())
    }

    fn launch(self, gpu: Gpu, x: &mut CudaViewMut<f32>, []: Views<f32, 0>) -> Result<()> {
        launch::scale_inplace(gpu.kernels, gpu.stream, self.0, x)
    }

    fn cpu(self, x: &mut [f32], []: [&[f32]; 0]) {
        cpu::scale_inplace(self.0, x);
    }
}

/// `len` copies of a value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fill {
    pub len: usize,
    pub value: f32,
}

impl Map<0> for Fill {
    type In = f32;
    type Out = f32;

    fn check(self, []: [usize; 0]) -> Result<usize> {
        Ok(self.len)
    }

    fn launch(self, gpu: Gpu, []: Views<f32, 0>, out: &mut CudaViewMut<f32>) -> Result<()> {
        launch::fill(gpu.kernels, gpu.stream, out, self.value)
    }

    fn cpu(self, []: [&[f32]; 0], len: usize) -> Result<Vec<f32>> {
        // A size the host cannot hold is an error, not an allocation abort.
        let mut out = shape::zeroed("fill", "out", len)?;
        out.fill(self.value);
        Ok(out)
    }
}
