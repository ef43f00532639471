//! The transpose of a dense row-major f32 matrix (`cuda/transpose.cu`).

use crate::cpu;
use crate::kernels::transpose as launch;
use crate::ops::{map, shape};

/// The transpose (`[cols, rows]`) of `x` (`[rows, cols]`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Transpose {
    pub rows: usize,
    pub cols: usize,
}

map! {
    impl Map<1> for Transpose: In = f32, Out = f32 {
        check(self, [x]) { shape::matrix("transpose", "x", x, self.rows, self.cols).map(|()| x) }
        launch(self, gpu, [x], out) {
            launch::transpose(gpu.kernels, gpu.stream, x, out, self.rows, self.cols)
        }
        cpu(self, [x], _) { Ok(cpu::transpose(x, self.rows, self.cols)) }
    }
}
