//! Echo-state reservoirs and spikes (`cuda/neuromorphic.cu`): the host-side reservoir matrix and pattern
//! types with their checks.

use crate::error::{Error, Result};
use crate::spec::shape;

/// A sparse matrix in compressed sparse rows, on the host: row `i` holds `values[k]` at column
/// `col_idx[k]` for `k` in `row_ptr[i]..row_ptr[i + 1]`.
#[derive(Debug, Clone, Copy)]
pub struct Csr<'a> {
    /// `rows + 1` non-decreasing offsets, starting at 0 and ending at the number of entries.
    pub row_ptr: &'a [i32],
    /// The column of each entry.
    pub col_idx: &'a [i32],
    /// The value of each entry.
    pub values: &'a [f32],
}

impl Csr<'_> {
    /// Number of rows (`row_ptr.len() - 1`).
    pub fn rows(&self) -> usize {
        self.row_ptr.len().saturating_sub(1)
    }

    /// Checks the layout for a `[rows, cols]` matrix: offsets from 0 to the entry count, never
    /// decreasing, column indices in `0..cols`. The kernels trust it, so every device CSR is
    /// checked this way before it is uploaded.
    pub fn check(&self, op: &'static str, rows: usize, cols: usize) -> Result<()> {
        let bad = |expected: String, got: String| Err(Error::Shape { op, expected, got });
        let Some(offsets) = rows.checked_add(1) else {
            return bad(format!("at most {} rows", usize::MAX - 1), format!("{rows} rows"));
        };
        if self.row_ptr.len() != offsets {
            return bad(
                format!("`row_ptr` of rows + 1 = {offsets} offsets"),
                format!("{} offsets", self.row_ptr.len()),
            );
        }
        if self.col_idx.len() != self.values.len() {
            return bad(
                format!("`col_idx` as long as `values` ({} entries)", self.values.len()),
                format!("{} entries", self.col_idx.len()),
            );
        }
        let nnz = self.values.len();
        if self.row_ptr[0] != 0
            || self.row_ptr[rows] as usize != nnz
            || self.row_ptr.windows(2).any(|w| w[0] > w[1])
        {
            return bad(
                format!("`row_ptr` non-decreasing from 0 to the entry count {nnz}"),
                format!("offsets from {} to {}", self.row_ptr[0], self.row_ptr[rows]),
            );
        }
        if let Some(c) = self.col_idx.iter().find(|&&c| c < 0 || c as usize >= cols) {
            return bad(format!("column indices in 0..{cols}"), format!("index {c}"));
        }
        Ok(())
    }
}

/// A reservoir matrix on the host: dense row-major `[n, n]`, or sparse.
#[derive(Debug, Clone, Copy)]
pub enum ReservoirWeights<'a> {
    /// Dense row-major `[n, n]`.
    Dense(&'a [f32]),
    /// Compressed sparse rows, `n` rows, columns in `0..n`.
    Csr(Csr<'a>),
}

impl ReservoirWeights<'_> {
    /// Checks that this is an `[n, n]` reservoir.
    pub fn check(&self, op: &'static str, n: usize) -> Result<()> {
        match self {
            ReservoirWeights::Dense(w) => shape::matrix(op, "w", w.len(), n, n),
            ReservoirWeights::Csr(csr) => csr.check(op, n, n),
        }
    }
}

/// The dimensions of a pattern correlation: spike trains `[t, n]`, `p` templates `[w, n]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Patterns {
    /// Time steps of the spike trains.
    pub t: usize,
    /// Neurons.
    pub n: usize,
    /// Templates.
    pub p: usize,
    /// Window (template) length in steps, `1 <= w <= t`.
    pub w: usize,
}

impl Patterns {
    /// Output positions per template: `t - w + 1`.
    pub fn positions(&self) -> usize {
        self.t + 1 - self.w
    }

    /// Checks the window and the lengths of the spikes and templates; the output's length
    /// (`p * (t - w + 1)`).
    pub fn check(&self, op: &'static str, spikes: usize, templates: usize) -> Result<usize> {
        let Patterns { t, n, p, w } = *self;
        if w == 0 || w > t {
            return Err(Error::Shape {
                op,
                expected: format!("a window 1 <= w <= t = {t}"),
                got: format!("w = {w}"),
            });
        }
        shape::matrix(op, "spikes", spikes, t, n)?;
        shape::matrix(op, "templates", templates, p, w.saturating_mul(n))?;
        // With n = 0 every length above is 0 whatever p is: the product is checked too.
        shape::elements(op, "out", &[p, self.positions()])
    }
}

/// The length of `steps` spike vectors of `n` neurons, or [`Error::Shape`] when it overflows.
pub fn spike_len(op: &'static str, n: usize, steps: usize) -> Result<usize> {
    n.checked_mul(steps).ok_or_else(|| Error::Shape {
        op,
        expected: "steps * rates.len() within usize".into(),
        got: format!("{steps} x {n}"),
    })
}
