//! Reductions (`cuda/reductions.cu`): which reduction, and the row reductions' check.

use crate::error::{Error, Result};
use crate::spec::shape;

/// A reduction to one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduce {
    /// Sum (f64 partials over the whole tensor, f32 along a row).
    Sum,
    /// Mean.
    Mean,
    /// Maximum, NaN ignored (`-inf` when there is no number).
    Max,
}

impl Reduce {
    /// The entry point reducing each row.
    pub(crate) fn row_kernel(self) -> &'static str {
        match self {
            Reduce::Sum => "prism_row_sum_f32",
            Reduce::Mean => "prism_row_mean_f32",
            Reduce::Max => "prism_row_max_f32",
        }
    }
}

/// Checks `x` is `[rows, cols]` with at least one column (when there are rows) and `out` has `rows`.
pub fn check_rows(op: &'static str, x: usize, out: usize, rows: usize, cols: usize) -> Result<()> {
    shape::matrix(op, "x", x, rows, cols)?;
    shape::optional_len(op, "out", Some(out), rows)?;
    if rows > 0 && cols == 0 {
        return Err(Error::Shape { op, expected: "at least one column".into(), got: "0 columns".into() });
    }
    Ok(())
}
