//! Activations and their gradients on host slices.

use super::ProductionGpuRuntime;
use crate::error::Result;
use crate::ops::activations::{Activation, Backward};

impl ProductionGpuRuntime {
    /// `f(x)` elementwise. ReLU and leaky ReLU are exact; sigmoid, tanh and GELU use the device's
    /// `expf`/`tanhf` on the GPU and Rust's on the CPU: within 2e-6 of the f64 reference.
    pub fn activation(&self, act: Activation, x: &[f32]) -> Result<Vec<f32>> {
        self.map(act, [x])
    }

    /// `x = f(x)` in place (tolerances as [`activation`](Self::activation)).
    pub fn activation_inplace(&self, act: Activation, x: &mut [f32]) -> Result<()> {
        self.update(act, x, [])
    }

    /// `dy * f'(x)` elementwise, `x` the forward input (tolerances as [`activation`](Self::activation)).
    pub fn activation_backward(&self, act: Activation, dy: &[f32], x: &[f32]) -> Result<Vec<f32>> {
        self.map(Backward(act), [dy, x])
    }

    /// `max(x, 0)` (exact).
    ///
    /// ```
    /// # let rt = prism_gpu::ProductionGpuRuntime::cpu();
    /// assert_eq!(rt.relu(&[-3.0, 0.5, 2.0])?, [0.0, 0.5, 2.0]);
    /// # Ok::<(), prism_gpu::Error>(())
    /// ```
    pub fn relu(&self, x: &[f32]) -> Result<Vec<f32>> {
        self.activation(Activation::Relu, x)
    }
    /// `x > 0 ? x : slope * x` (exact).
    pub fn leaky_relu(&self, x: &[f32], slope: f32) -> Result<Vec<f32>> {
        self.activation(Activation::LeakyRelu(slope), x)
    }
    /// `1 / (1 + exp(-x))` (within 2e-6).
    pub fn sigmoid(&self, x: &[f32]) -> Result<Vec<f32>> {
        self.activation(Activation::Sigmoid, x)
    }
    /// `tanh(x)` (within 2e-6).
    pub fn tanh(&self, x: &[f32]) -> Result<Vec<f32>> {
        self.activation(Activation::Tanh, x)
    }
    /// GELU, tanh form (within 2e-6).
    pub fn gelu(&self, x: &[f32]) -> Result<Vec<f32>> {
        self.activation(Activation::Gelu, x)
    }
}
