//! Reductions (`cuda/reductions.cu`): sum, mean, max and argmax of a whole tensor and of each
//! matrix row. Max and argmax ignore NaN; argmax gives the first index of the maximum.

use crate::cpu;
use crate::error::Error;
use crate::kernels::{args, reductions as launch};
use crate::ops::map;

pub use crate::spec::reductions::{check_rows, Reduce};

/// The first index of the maximum of `x` (NaN skipped), `x` not empty.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Argmax;

/// The reduction of each row of `x` (`[rows, cols]`, `cols >= 1`) to one value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rows {
    pub op: Reduce,
    pub rows: usize,
    pub cols: usize,
}

/// The first column index of the maximum of each row of `x` (`[rows, cols]`, `cols >= 1`, NaN
/// skipped; 0 for an all-NaN row), as the kernel's `int`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowArgmax {
    pub rows: usize,
    pub cols: usize,
}

map! {
    /// The reduction of the whole of `x` to one value (empty `x`: 0, NaN, `-inf`).
    impl Map<1> for Reduce: In = f32, Out = f32 {
        check(self, [_]) { Ok(1) }
        launch(self, gpu, [x], out) { launch::reduce(gpu.kernels, gpu.stream, self, x, out) }
        cpu(self, [x], _) {
            Ok(vec![match self {
                Reduce::Sum => cpu::sum(x),
                Reduce::Mean => cpu::mean(x),
                Reduce::Max => cpu::max(x),
            }])
        }
    }

    impl Map<1> for Argmax: In = f32, Out = u64 {
        check(self, [x]) {
            if x == 0 {
                return Err(Error::Shape {
                    op: "argmax",
                    expected: "at least one element".into(),
                    got: "0 elements".into(),
                });
            }
            Ok(1)
        }
        launch(self, gpu, [x], out) { launch::argmax(gpu.kernels, gpu.stream, x, out, None) }
        cpu(self, [x], _) { Ok(vec![cpu::argmax(x) as u64]) }
    }

    impl Map<1> for Rows: In = f32, Out = f32 {
        check(self, [x]) { check_rows("reduce_rows", x, self.rows, self.rows, self.cols).map(|()| self.rows) }
        launch(self, gpu, [x], out) {
            launch::rows(gpu.kernels, gpu.stream, self.op, x, out, self.rows, self.cols)
        }
        cpu(self, [x], _) {
            let (rows, cols) = (self.rows, self.cols);
            Ok(match self.op {
                Reduce::Sum => cpu::row_sum(x, rows, cols),
                Reduce::Mean => cpu::row_mean(x, rows, cols),
                Reduce::Max => cpu::row_max(x, rows, cols),
            })
        }
    }

    impl Map<1> for RowArgmax: In = f32, Out = i32 {
        check(self, [x]) { check_rows("row_argmax", x, self.rows, self.rows, self.cols).map(|()| self.rows) }
        launch(self, gpu, [x], out) {
            launch::row_argmax(gpu.kernels, gpu.stream, x, out, self.rows, self.cols)
        }
        cpu(self, [x], _) {
            // The indices are the kernel's `int`s on the CPU too (rows of 2^31 values and more are
            // refused on both).
            args::int("row_argmax", "cols", self.cols)?;
            Ok(cpu::row_argmax(x, self.rows, self.cols).into_iter().map(|i| i as i32).collect())
        }
    }
}
