//! Elementwise arithmetic on host slices.

use super::ProductionGpuRuntime;
use crate::error::Result;
use crate::ops::elementwise::{Axpy, Binary, Fill, Scale};

impl ProductionGpuRuntime {
    /// `a + b` elementwise; `a` and `b` must have the same length.
    ///
    /// ```
    /// # let rt = prism_gpu::ProductionGpuRuntime::cpu();
    /// assert_eq!(rt.add(&[1.0, -2.0], &[0.25, 2.0])?, [1.25, 0.0]);
    /// # Ok::<(), prism_gpu::Error>(())
    /// ```
    pub fn add(&self, a: &[f32], b: &[f32]) -> Result<Vec<f32>> {
        self.map(Binary::Add, [a, b])
    }
    /// `a - b` elementwise.
    pub fn sub(&self, a: &[f32], b: &[f32]) -> Result<Vec<f32>> {
        self.map(Binary::Sub, [a, b])
    }
    /// `a * b` elementwise.
    pub fn mul(&self, a: &[f32], b: &[f32]) -> Result<Vec<f32>> {
        self.map(Binary::Mul, [a, b])
    }
    /// `a / b` elementwise.
    pub fn div(&self, a: &[f32], b: &[f32]) -> Result<Vec<f32>> {
        self.map(Binary::Div, [a, b])
    }

    /// `alpha * x + y`.
    pub fn axpy(&self, alpha: f32, x: &[f32], y: &[f32]) -> Result<Vec<f32>> {
        self.map(Axpy(alpha), [x, y])
    }

    /// `alpha * x`.
    pub fn scale(&self, alpha: f32, x: &[f32]) -> Result<Vec<f32>> {
        self.map(Scale(alpha), [x])
    }

    /// `n` copies of `value`.
    pub fn fill(&self, n: usize, value: f32) -> Result<Vec<f32>> {
        self.map(Fill { len: n, value }, [])
    }
}
