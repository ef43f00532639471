//! Echo-state reservoirs and spikes (`cuda/neuromorphic.cu`): the host-side reservoir and pattern
//! types with their checks, and the input matvec, leaky integration, spike encoding and pattern
//! correlation.
//!
//! One name per thing: "neuromorphic" is this operation family in every layer
//! (`cuda/neuromorphic.cu`, `ops`, `kernels`, `cpu`, the runtime's methods); the
//! [`reservoir`](crate::reservoir) module is the application built on it (echo-state networks:
//! run, ridge readout, free run); [`Reservoir`] is this family's matrix operand, a reservoir's
//! recurrent `[n, n]` matrix.

use crate::cpu;
use crate::driver::CudaViewMut;
use crate::error::Result;
use crate::kernels::neuromorphic as launch;
use crate::ops::{shape, Gpu, Map, Update, Views};

pub use crate::spec::neuromorphic::{spike_len, Csr, Patterns, Reservoir};

/// `W_in u`: `w_in` row-major `[n_reservoir, n_inputs]`, `u` of `n_inputs`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MatvecInput {
    pub n_reservoir: usize,
    pub n_inputs: usize,
}

impl Map<2> for MatvecInput {
    type In = f32;
    type Out = f32;

    fn check(self, [w_in, u]: [usize; 2]) -> Result<usize> {
        shape::matrix("matvec_input", "w_in", w_in, self.n_reservoir, self.n_inputs)?;
        shape::optional_len("matvec_input", "u", Some(u), self.n_inputs)?;
        Ok(self.n_reservoir)
    }

    fn launch(self, gpu: Gpu, [w_in, u]: Views<f32, 2>, out: &mut CudaViewMut<f32>) -> Result<()> {
        launch::matvec_input(gpu.kernels, gpu.stream, w_in, u, out, self.n_reservoir, self.n_inputs)
    }

    fn cpu(self, [w_in, u]: [&[f32]; 2], _: usize) -> Result<Vec<f32>> {
        Ok(cpu::matvec_input(w_in, u, self.n_reservoir, self.n_inputs))
    }
}

/// `x = (1 - leak) * x + leak * tanh(drive)` in place.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeakyIntegration(pub f32);

impl Update<1> for LeakyIntegration {
    type Elem = f32;
    type In = f32;

    fn check(self, x: usize, [drive]: [usize; 1]) -> Result<()> {
        shape::same_len("leaky_integration", &[("x", x), ("drive", drive)]).map(drop)
    }

    fn launch(self, gpu: Gpu, x: &mut CudaViewMut<f32>, [drive]: Views<f32, 1>) -> Result<()> {
        launch::leaky_integration(gpu.kernels, gpu.stream, x, drive, self.0)
    }

    fn cpu(self, x: &mut [f32], [drive]: [&[f32]; 1]) {
        cpu::leaky_integration(x, drive, self.0);
    }
}

/// Rate-based spikes, time-major `[steps, rates.len()]`: 1 where `uniform01(seed, i, t) < rates[i]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpikeEncode {
    pub steps: usize,
    pub seed: u64,
}

impl Map<1> for SpikeEncode {
    type In = f32;
    type Out = f32;

    fn check(self, [rates]: [usize; 1]) -> Result<usize> {
        spike_len("spike_encode", rates, self.steps)
    }

    fn launch(self, gpu: Gpu, [rates]: Views<f32, 1>, out: &mut CudaViewMut<f32>) -> Result<()> {
        launch::spike_encode(gpu.kernels, gpu.stream, rates, out, self.steps, self.seed)
    }

    fn cpu(self, [rates]: [&[f32]; 1], len: usize) -> Result<Vec<f32>> {
        let mut out = shape::zeroed("spike_encode", "out", len)?;
        cpu::spike_encode_into(rates, self.seed, &mut out);
        Ok(out)
    }
}

/// Sliding-window correlation of spike trains (`[t, n]`) with `p` templates (`[w, n]`).
impl Map<2> for Patterns {
    type In = f32;
    type Out = f32;

    fn check(self, [spikes, templates]: [usize; 2]) -> Result<usize> {
        Patterns::check(&self, "pattern_correlation", spikes, templates)
    }

    fn launch(self, gpu: Gpu, [spikes, templates]: Views<f32, 2>, out: &mut CudaViewMut<f32>) -> Result<()> {
        launch::pattern_correlation(gpu.kernels, gpu.stream, spikes, templates, out, self)
    }

    fn cpu(self, [spikes, templates]: [&[f32]; 2], _: usize) -> Result<Vec<f32>> {
        Ok(cpu::pattern_correlation(spikes, self.t, self.n, templates, self.p, self.w))
    }
}
