//! Softmax and log-softmax over rows on host slices.

use super::ProductionGpuRuntime;
use crate::error::Result;
use crate::ops::softmax::{self, Softmax};

impl ProductionGpuRuntime {
    fn softmax(&self, kind: Softmax, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.map(softmax::Rows { kind, rows, cols }, [x])
    }

    /// Softmax of each row of `x` (`[rows, cols]`), the maximum subtracted first. Within 1e-5 of
    /// the f64 reference on GPU and CPU (the GPU sums in f32, the CPU in f64).
    ///
    /// ```
    /// # let rt = prism_gpu::ProductionGpuRuntime::cpu();
    /// // Two rows of three; the second is the first shifted, which softmax ignores.
    /// let p = rt.softmax_rows(&[1.0, 2.0, 3.0, 101.0, 102.0, 103.0], 2, 3)?;
    /// assert!((p[0] + p[1] + p[2] - 1.0).abs() < 1e-6);
    /// assert!(p[..3].iter().zip(&p[3..]).all(|(a, b)| (a - b).abs() < 1e-6));
    /// # Ok::<(), prism_gpu::Error>(())
    /// ```
    pub fn softmax_rows(&self, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.softmax(Softmax::Softmax, x, rows, cols)
    }

    /// Log-softmax of each row of `x` (`[rows, cols]`). Within 1e-5 (relative to max(1, |y|)).
    pub fn log_softmax_rows(&self, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.softmax(Softmax::LogSoftmax, x, rows, cols)
    }
}
