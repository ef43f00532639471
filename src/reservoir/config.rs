//! [`ReservoirConfig`]: the hyper-parameters of an echo state network, and their checks.

use crate::error::{Error, Result};
use crate::ops::activations::Activation;

/// Below this connection probability the reservoir matrix is stored sparse (CSR); at or above, dense.
pub const SPARSE_BELOW: f32 = 0.2;

/// The hyper-parameters of an echo state network: `x(t) = (1 - leak) x(t-1) + leak * tanh(W_in [1;
/// u(t)] + W x(t-1))`, read out linearly from `[1; u(t); x(t)]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReservoirConfig {
    /// Reservoir units `n`.
    pub size: usize,
    /// Input dimension `d` (values per step).
    pub input_size: usize,
    /// The spectral radius the recurrent matrix is scaled to (> 0).
    pub spectral_radius: f32,
    /// Probability of each recurrent connection, in (0, 1]; below [`SPARSE_BELOW`] the matrix is
    /// stored in CSR.
    pub connection_prob: f32,
    /// Leak rate in (0, 1]: 1 is no memory of the previous state beyond `W x`.
    pub leak_rate: f32,
    /// Input weights are uniform in `[-input_scaling, input_scaling]`.
    pub input_scaling: f32,
    /// Probability of each input connection, in (0, 1].
    pub input_connectivity: f32,
    /// Bias weights (the input column fed a constant 1) are uniform in `[-bias, bias]`; 0 for none.
    pub bias: f32,
    /// Ridge (Tikhonov) regularisation of the readout, `>= 0`.
    pub ridge: f64,
    /// Steps at the start of a training sequence whose states are not used by the readout.
    pub warmup: usize,
    /// Seed of every random weight: the same seed builds the same reservoir on GPU and CPU.
    pub seed: u64,
    /// The units' nonlinearity. Only [`Activation::Tanh`] (the fused leaky-integration kernel's).
    pub activation: Activation,
}

impl Default for ReservoirConfig {
    /// The seed document's reservoir: 1000 units, 50 inputs, spectral radius 0.95, connection
    /// probability 0.3, leak rate 0.3.
    fn default() -> Self {
        Self {
            size: 1000,
            input_size: 50,
            spectral_radius: 0.95,
            connection_prob: 0.3,
            leak_rate: 0.3,
            input_scaling: 1.0,
            input_connectivity: 1.0,
            bias: 0.0,
            ridge: 1e-6,
            warmup: 100,
            seed: 42,
            activation: Activation::Tanh,
        }
    }
}

impl ReservoirConfig {
    /// Checks every field; the error names the field and the accepted range.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &str, expected: &str, got: String| {
            Err(Error::Shape { op: "ReservoirConfig", expected: format!("`{field}` {expected}"), got })
        };
        let unit = |x: f32| x > 0.0 && x <= 1.0;
        if self.size == 0 {
            return bad("size", "of at least 1 unit", "0".into());
        }
        if self.input_size == 0 {
            return bad("input_size", "of at least 1", "0".into());
        }
        // The readout's features [1; u; x] and a dense matrix's n * n entries must be countable.
        let features = self.size.checked_add(self.input_size).and_then(|f| f.checked_add(1));
        if features.and_then(|f| f.checked_mul(f)).is_none() || self.size.checked_mul(self.size).is_none() {
            return bad("size", "small enough to count its weights", format!("{}", self.size));
        }
        if !(self.spectral_radius.is_finite() && self.spectral_radius > 0.0) {
            return bad("spectral_radius", "finite and > 0", format!("{}", self.spectral_radius));
        }
        if !unit(self.connection_prob) {
            return bad("connection_prob", "in (0, 1]", format!("{}", self.connection_prob));
        }
        if !unit(self.leak_rate) {
            return bad("leak_rate", "in (0, 1]", format!("{}", self.leak_rate));
        }
        if !(self.input_scaling.is_finite() && self.input_scaling >= 0.0) {
            return bad("input_scaling", "finite and >= 0", format!("{}", self.input_scaling));
        }
        if !unit(self.input_connectivity) {
            return bad("input_connectivity", "in (0, 1]", format!("{}", self.input_connectivity));
        }
        if !(self.bias.is_finite() && self.bias >= 0.0) {
            return bad("bias", "finite and >= 0", format!("{}", self.bias));
        }
        if !(self.ridge.is_finite() && self.ridge >= 0.0) {
            return bad("ridge", "finite and >= 0", format!("{}", self.ridge));
        }
        if self.activation != Activation::Tanh {
            return bad(
                "activation",
                "Tanh (the fused leaky-integration kernel)",
                format!("{:?}", self.activation),
            );
        }
        Ok(())
    }

    /// `true` when the recurrent matrix is stored in CSR.
    pub fn is_sparse(&self) -> bool {
        self.connection_prob < SPARSE_BELOW
    }

    /// Readout features per step: `1 + input_size + size` (`[1; u; x]`).
    pub fn features(&self) -> usize {
        1 + self.input_size + self.size
    }
}
