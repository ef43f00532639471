//! Reductions (sum, mean, max, argmax), whole and per row, on host slices.

use super::ProductionGpuRuntime;
use crate::error::Result;
use crate::ops::reductions::{self, Argmax, Reduce, RowArgmax};

impl ProductionGpuRuntime {
    fn reduce(&self, op: Reduce, x: &[f32]) -> Result<f32> {
        if x.is_empty() {
            return Ok(match op {
                Reduce::Sum => 0.0,
                Reduce::Mean => f32::NAN,
                Reduce::Max => f32::NEG_INFINITY,
            });
        }
        Ok(self.map(op, [x])?[0])
    }

    /// Sum of all elements (0 for none): f64 partials on both, deterministic; within 1e-6 of the
    /// f64 reference relative to the sum of magnitudes.
    pub fn sum(&self, x: &[f32]) -> Result<f32> {
        self.reduce(Reduce::Sum, x)
    }

    /// Mean of all elements (NaN for none); as [`sum`](Self::sum).
    pub fn mean(&self, x: &[f32]) -> Result<f32> {
        self.reduce(Reduce::Mean, x)
    }

    /// Maximum, NaN ignored (`-inf` for none or all NaN). Exact.
    pub fn max(&self, x: &[f32]) -> Result<f32> {
        self.reduce(Reduce::Max, x)
    }

    /// Index of the first maximum, NaN skipped (0 when all are NaN). Exact; `x` must not be empty.
    pub fn argmax(&self, x: &[f32]) -> Result<usize> {
        Ok(self.map(Argmax, [x])?[0] as usize)
    }

    fn reduce_rows(&self, op: Reduce, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.map(reductions::Rows { op, rows, cols }, [x])
    }

    /// Sum of each row of `x` (`[rows, cols]`, `cols >= 1`): f32 on the GPU, f64 on the CPU;
    /// within 1e-5 of the f64 reference relative to the row's sum of magnitudes.
    pub fn row_sum(&self, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.reduce_rows(Reduce::Sum, x, rows, cols)
    }

    /// Mean of each row (as [`row_sum`](Self::row_sum)).
    pub fn row_mean(&self, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.reduce_rows(Reduce::Mean, x, rows, cols)
    }

    /// Maximum of each row, NaN ignored. Exact.
    pub fn row_max(&self, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.reduce_rows(Reduce::Max, x, rows, cols)
    }

    /// Column index of the first maximum of each row, NaN skipped (0 for an all-NaN row). Exact.
    pub fn row_argmax(&self, x: &[f32], rows: usize, cols: usize) -> Result<Vec<usize>> {
        // Indices in 0..cols, never negative.
        Ok(self.map(RowArgmax { rows, cols }, [x])?.into_iter().map(|i| i as usize).collect())
    }
}
