//! Echo-state reservoirs and spikes (`cuda/neuromorphic.cu`): the host-side reservoir and pattern
//! types with their checks, and the input matvec, leaky integration, spike encoding and pattern
//! correlation.
//!
//! One name per thing: "neuromorphic" is this operation family in every layer
//! (`cuda/neuromorphic.cu`, `ops`, `kernels`, `cpu`, the runtime's methods); the
//! [`reservoir`](crate::reservoir) module is the application built on it (echo-state networks:
//! run, ridge readout, free run); [`ReservoirWeights`] is this family's matrix operand, a reservoir's
//! recurrent `[n, n]` matrix.

use crate::cpu;
use crate::kernels::neuromorphic as launch;
use crate::ops::{map, shape, update};

pub use crate::spec::neuromorphic::{spike_len, Csr, Patterns, ReservoirWeights};

/// `W_in u`: `w_in` row-major `[n_reservoir, n_inputs]`, `u` of `n_inputs`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MatvecInput {
    pub n_reservoir: usize,
    pub n_inputs: usize,
}

/// `x = (1 - leak) * x + leak * tanh(drive)` in place.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeakyIntegration(pub f32);

/// Rate-based spikes, time-major `[steps, rates.len()]`: 1 where `uniform01(seed, i, t) < rates[i]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpikeEncode {
    pub steps: usize,
    pub seed: u64,
}

map! {
    impl Map<2> for MatvecInput: In = f32, Out = f32 {
        check(self, [w_in, u]) {
            shape::matrix("matvec_input", "w_in", w_in, self.n_reservoir, self.n_inputs)?;
            shape::optional_len("matvec_input", "u", Some(u), self.n_inputs)?;
            Ok(self.n_reservoir)
        }
        launch(self, gpu, [w_in, u], out) {
            launch::matvec_input(gpu.kernels, gpu.stream, w_in, u, out, self.n_reservoir, self.n_inputs)
        }
        cpu(self, [w_in, u], _) { Ok(cpu::matvec_input(w_in, u, self.n_reservoir, self.n_inputs)) }
    }

    impl Map<1> for SpikeEncode: In = f32, Out = f32 {
        check(self, [rates]) { spike_len("spike_encode", rates, self.steps) }
        launch(self, gpu, [rates], out) {
            launch::spike_encode(gpu.kernels, gpu.stream, rates, out, self.steps, self.seed)
        }
        cpu(self, [rates], len) {
            let mut out = shape::zeroed("spike_encode", "out", len)?;
            cpu::spike_encode_into(rates, self.seed, &mut out);
            Ok(out)
        }
    }

    /// Sliding-window correlation of spike trains (`[t, n]`) with `p` templates (`[w, n]`).
    impl Map<2> for Patterns: In = f32, Out = f32 {
        check(self, [spikes, templates]) { Patterns::check(&self, "pattern_correlation", spikes, templates) }
        launch(self, gpu, [spikes, templates], out) {
            launch::pattern_correlation(gpu.kernels, gpu.stream, spikes, templates, out, self)
        }
        cpu(self, [spikes, templates], _) {
            Ok(cpu::pattern_correlation(spikes, self.t, self.n, templates, self.p, self.w))
        }
    }
}

update! {
    impl Update<1> for LeakyIntegration: Elem = f32, In = f32 {
        check(self, x, [drive]) {
            shape::same_len("leaky_integration", &[("x", x), ("drive", drive)]).map(drop)
        }
        launch(self, gpu, x, [drive]) { launch::leaky_integration(gpu.kernels, gpu.stream, x, drive, self.0) }
        cpu(self, x, [drive]) { cpu::leaky_integration(x, drive, self.0) }
    }
}
