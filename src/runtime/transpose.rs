//! Transposes on host slices.

use super::ProductionGpuRuntime;
use crate::error::Result;
use crate::ops::transpose::Transpose;

impl ProductionGpuRuntime {
    /// The transpose (`[cols, rows]`) of `x` (`[rows, cols]`). Exact.
    pub fn transpose(&self, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.map(Transpose { rows, cols }, [x])
    }
}
