//! Reductions (`cuda/reductions.cu`): sum, mean, max and argmax of a whole tensor and of each
//! matrix row. Max and argmax ignore NaN; argmax gives the first index of the maximum.

use crate::cpu;
use crate::driver::CudaViewMut;
use crate::error::{Error, Result};
use crate::kernels::{args, reductions as launch};
use crate::ops::{Gpu, Map, Views};

pub use crate::spec::reductions::{check_rows, Reduce};

/// The reduction of the whole of `x` to one value (empty `x`: 0, NaN, `-inf`).
impl Map<1> for Reduce {
    type In = f32;
    type Out = f32;

    fn check(self, [_]: [usize; 1]) -> Result<usize> {
        Ok(1)
    }

    fn launch(self, gpu: Gpu, [x]: Views<f32, 1>, out: &mut CudaViewMut<f32>) -> Result<()> {
        launch::reduce(gpu.kernels, gpu.stream, self, x, out)
    }

    fn cpu(self, [x]: [&[f32]; 1], _: usize) -> Result<Vec<f32>> {
        Ok(vec![match self {
            Reduce::Sum => cpu::sum(x),
            Reduce::Mean => cpu::mean(x),
            Reduce::Max => cpu::max(x),
        }])
    }
}

/// The first index of the maximum of `x` (NaN skipped), `x` not empty.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Argmax;

impl Map<1> for Argmax {
    type In = f32;
    type Out = u64;

    fn check(self, [x]: [usize; 1]) -> Result<usize> {
        if x == 0 {
            return Err(Error::Shape {
                op: "argmax",
                expected: "at least one element".into(),
                got: "0 elements".into(),
            });
        }
        Ok(1)
    }

    fn launch(self, gpu: Gpu, [x]: Views<f32, 1>, out: &mut CudaViewMut<u64>) -> Result<()> {
        launch::argmax(gpu.kernels, gpu.stream, x, out, None)
    }

    fn cpu(self, [x]: [&[f32]; 1], _: usize) -> Result<Vec<u64>> {
        Ok(vec![cpu::argmax(x) as u64])
    }
}

/// The reduction of each row of `x` (`[rows, cols]`, `cols >= 1`) to one value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rows {
    pub op: Reduce,
    pub rows: usize,
    pub cols: usize,
}

impl Map<1> for Rows {
    type In = f32;
    type Out = f32;

    fn check(self, [x]: [usize; 1]) -> Result<usize> {
        check_rows("reduce_rows", x, self.rows, self.rows, self.cols).map(|()| self.rows)
    }

    fn launch(self, gpu: Gpu, [x]: Views<f32, 1>, out: &mut CudaViewMut<f32>) -> Result<()> {
        launch::rows(gpu.kernels, gpu.stream, self.op, x, out, self.rows, self.cols)
    }

    fn cpu(self, [x]: [&[f32]; 1], _: usize) -> Result<Vec<f32>> {
        let (rows, cols) = (self.rows, self.cols);
        Ok(match self.op {
            Reduce::Sum => cpu::row_sum(x, rows, cols),
            Reduce::Mean => cpu::row_mean(x, rows, cols),
            Reduce::Max => cpu::row_max(x, rows, cols),
        })
    }
}

/// The first column index of the maximum of each row of `x` (`[rows, cols]`, `cols >= 1`, NaN
/// skipped; 0 for an all-NaN row), as the kernel's `int`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowArgmax {
    pub rows: usize,
    pub cols: usize,
}

impl Map<1> for RowArgmax {
    type In = f32;
    type Out = i32;

    fn check(self, [x]: [usize; 1]) -> Result<usize> {
        check_rows("row_argmax", x, self.rows, self.rows, self.cols).map(|()| self.rows)
    }

    fn launch(self, gpu: Gpu, [x]: Views<f32, 1>, out: &mut CudaViewMut<i32>) -> Result<()> {
        launch::row_argmax(gpu.kernels, gpu.stream, x, out, self.rows, self.cols)
    }

    fn cpu(self, [x]: [&[f32]; 1], _: usize) -> Result<Vec<i32>> {
        // The indices are the kernel's `int`s on the CPU too (rows of 2^31 values and more are
        // refused on both).
        args::int("row_argmax", "cols", self.cols)?;
        Ok(cpu::row_argmax(x, self.rows, self.cols).into_iter().map(|i| i as i32).collect())
    }
}
