//! The GPU reservoir computer: echo state networks that run, train and predict on the GPU through
//! [`ProductionGpuRuntime`], or on its CPU fallback.
//!
//! A [`GpuReservoirComputer`] holds a random recurrent matrix `W` (`[n, n]`, dense or CSR by
//! [`ReservoirConfig::connection_prob`], scaled to the configured spectral radius by power
//! iteration) and input weights `W_in` (`[n, 1 + d]`, column 0 the bias). Each step
//! `x = (1 - leak) x + leak * tanh(W_in [1; u] + W x)` is one launch of the runtime's fused
//! reservoir update, writing the state into a chunk of state rows on the device. The
//! readout `y = W_out [1; u; x]` is fitted by ridge regression: `G = Σ z zᵀ` and `B = Σ z yᵀ` are
//! accumulated by f64 GEMMs over chunks of the sequence on the device (memory independent of its
//! length; the f32 states are widened exactly, since a small ridge needs sums beyond f32), then `(G + ridge I) W_out = B` is solved by a Cholesky factorisation in f64 on the host
//! (`F = 1 + d + n` features: the solve is `F^3 / 3` flops, once).
//!
//! ```
//! use prism_gpu::reservoir::{mackey_glass, GpuReservoirComputer, ReservoirConfig};
//! use prism_gpu::ProductionGpuRuntime;
//! # fn main() -> prism_gpu::Result<()> {
//! let series: Vec<f32> = mackey_glass(700, 17, 1.2).iter().map(|&x| (x - 1.0) as f32).collect();
//! let config = ReservoirConfig { size: 50, input_size: 1, ridge: 1e-6, warmup: 100, ..Default::default() };
//! let mut esn = GpuReservoirComputer::with_runtime(config, ProductionGpuRuntime::cpu().into())?;
//! esn.fit(&series[..500], &series[1..501])?; // one step ahead
//! let ahead = esn.generate(20)?; // then 20 steps on its own output
//! assert_eq!(ahead.len(), 20);
//! # Ok(())
//! # }
//! ```

mod batch;
mod config;
mod data;
mod ridge;
mod sums;
mod weights;

use std::sync::Arc;

pub use batch::ReservoirBatch;
pub use config::{ReservoirConfig, SPARSE_BELOW};
pub use data::{mackey_glass, narma10, nrmse, rmse, std_dev};
pub use weights::Recurrent;

use crate::driver::{CudaDevice, CudaSlice};
use crate::error::{Error, Result};
use crate::kernels::gemv;
use crate::kernels::neuromorphic::{self, DeviceCsr, DeviceReservoir};
use crate::ops::gemv::Gemv;
use crate::runtime::{GpuOps, ProductionGpuRuntime};
use sums::{add_input_part, state_part_gemm, DeviceSums, Sums};
use weights::Weights;

/// Steps per chunk of a sequence: the states of one chunk are kept (on the device, or the host on
/// the CPU fallback) for one GEMM into the readout's sums.
const CHUNK: usize = 256;

/// An echo state network on a [`ProductionGpuRuntime`] (see the [module docs](self)).
pub struct GpuReservoirComputer {
    config: ReservoirConfig,
    runtime: Arc<ProductionGpuRuntime>,
    weights: Weights,
    /// The weights and state on the device; `None` on the CPU fallback.
    device: Option<Device>,
    /// The state on the CPU fallback (on a GPU, `device.x` is the state).
    state: Vec<f32>,
    /// The input of the last step, with which a free run starts.
    last_input: Vec<f32>,
    readout: Option<Readout>,
}

/// Device copies of the weights, the state and the readout.
struct Device {
    w: DeviceMatrix,
    w_in: CudaSlice<f32>,
    x: CudaSlice<f32>,
    w_out: Option<CudaSlice<f32>>,
}

/// The recurrent matrix on the device.
enum DeviceMatrix {
    Dense(CudaSlice<f32>),
    Csr(DeviceCsr),
}

impl DeviceMatrix {
    fn upload(g: &GpuOps, w: &Recurrent, n: usize) -> Result<Self> {
        Ok(match w.as_reservoir() {
            crate::ops::neuromorphic::ReservoirWeights::Dense(d) => DeviceMatrix::Dense(g.upload(d)?),
            crate::ops::neuromorphic::ReservoirWeights::Csr(c) => DeviceMatrix::Csr(g.upload_csr(c, n, n)?),
        })
    }

    fn view(&self) -> DeviceReservoir<'_> {
        match self {
            DeviceMatrix::Dense(w) => DeviceReservoir::Dense(w.as_view()),
            DeviceMatrix::Csr(c) => DeviceReservoir::Csr(c),
        }
    }
}

/// A fitted readout: `y = W_out [1; u; x]`.
#[derive(Debug, Clone)]
struct Readout {
    /// `[outputs, features]` row-major.
    w_out: Vec<f32>,
    outputs: usize,
}

/// The error for inputs that do not fit.
fn bad_input(op: &'static str, expected: String, got: String) -> Error {
    Error::Shape { op, expected, got }
}

impl GpuReservoirComputer {
    /// A reservoir on device 0, or the CPU fallback when no GPU is usable.
    pub fn new(config: ReservoirConfig) -> Result<Self> {
        Self::with_runtime(config, Arc::new(ProductionGpuRuntime::initialize()?))
    }

    /// A reservoir on `device`'s GPU (the seed's call: a cudarc 0.9-style [`CudaDevice`]).
    pub fn new_shared(config: ReservoirConfig, device: Arc<CudaDevice>) -> Result<Self> {
        Self::with_runtime(config, Arc::new(ProductionGpuRuntime::with_device(device.ordinal())?))
    }

    /// A reservoir on `runtime` (GPU or CPU fallback; `ProductionGpuRuntime::cpu()` forces the CPU).
    /// Checks the configuration, draws the weights from its seed and scales `W` to its spectral
    /// radius by power iteration on the runtime.
    pub fn with_runtime(config: ReservoirConfig, runtime: Arc<ProductionGpuRuntime>) -> Result<Self> {
        config.validate()?;
        let n = config.size;
        let mut weights = Weights::draw(&config)?;
        let rho = if runtime.is_gpu() {
            let g = runtime.gpu()?;
            runtime.context()?.bind_to_thread()?;
            let unscaled = DeviceMatrix::upload(g, &weights.w, n)?;
            weights::spectral_radius(n, config.seed, |v| {
                g.download(&g.matvec_reservoir(&unscaled.view(), &g.upload(v)?)?)
            })?
        } else {
            weights::spectral_radius(n, config.seed, |v| {
                runtime.matvec_reservoir(weights.w.as_reservoir(), v)
            })?
        };
        weights.scale_to(rho, config.spectral_radius)?;
        Self::from_weights(config, runtime, weights)
    }

    /// A reservoir of a validated `config` with its scaled `weights`, copied to the device when
    /// `runtime` is a GPU.
    fn from_weights(
        config: ReservoirConfig,
        runtime: Arc<ProductionGpuRuntime>,
        weights: Weights,
    ) -> Result<Self> {
        let device = if runtime.is_gpu() {
            let g = runtime.gpu()?;
            runtime.context()?.bind_to_thread()?;
            Some(Device {
                w: DeviceMatrix::upload(g, &weights.w, config.size)?,
                w_in: g.upload(&weights.w_in)?,
                x: g.stream().alloc_zeros(config.size)?,
                w_out: None,
            })
        } else {
            None
        };
        Ok(Self {
            state: vec![0.0; config.size],
            last_input: vec![0.0; config.input_size],
            config,
            runtime,
            weights,
            device,
            readout: None,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ReservoirConfig {
        &self.config
    }

    /// The runtime the reservoir runs on.
    pub fn runtime(&self) -> &Arc<ProductionGpuRuntime> {
        &self.runtime
    }

    /// `true` when the reservoir runs on a GPU.
    pub fn is_gpu(&self) -> bool {
        self.device.is_some()
    }

    /// The recurrent matrix (scaled), as built on the host.
    pub fn recurrent(&self) -> &Recurrent {
        &self.weights.w
    }

    /// The input weights `[size, 1 + input_size]`, column 0 the bias.
    pub fn input_weights(&self) -> &[f32] {
        &self.weights.w_in
    }

    /// The readout weights `[outputs, 1 + input_size + size]` over `[1; u; x]`, once fitted.
    pub fn readout(&self) -> Option<&[f32]> {
        self.readout.as_ref().map(|r| r.w_out.as_slice())
    }

    /// The current state (`size` values).
    pub fn state(&self) -> Result<Vec<f32>> {
        match &self.device {
            Some(dev) => self.gpu()?.download(&dev.x),
            None => Ok(self.state.clone()),
        }
    }

    /// Zeroes the state (and the remembered last input).
    pub fn reset(&mut self) -> Result<()> {
        self.last_input.fill(0.0);
        self.state.fill(0.0);
        if let Some(dev) = &mut self.device {
            let g = self.runtime.gpu()?;
            self.runtime.context()?.bind_to_thread()?;
            g.stream().memset_zeros(&mut dev.x)?;
        }
        Ok(())
    }

    /// The GPU operations, with the context bound to this thread.
    fn gpu(&self) -> Result<&GpuOps> {
        let g = self.runtime.gpu()?;
        self.runtime.context()?.bind_to_thread()?;
        Ok(g)
    }

    /// Rate-coded spikes for `rates` (one per input, a per-step probability), time-major
    /// `[steps, input_size]`, from the configured seed: the seed's input pipeline, whose output
    /// [`process_gpu`](Self::process_gpu) takes.
    pub fn encode_spikes(&self, rates: &[f32], steps: usize) -> Result<Vec<f32>> {
        if rates.len() != self.config.input_size {
            return Err(bad_input(
                "GpuReservoirComputer::encode_spikes",
                format!("{} rates (input_size)", self.config.input_size),
                format!("{}", rates.len()),
            ));
        }
        self.runtime.spike_encode(rates, steps, self.config.seed)
    }

    /// Runs the inputs (time-major `[steps, input_size]`) from the current state and returns the
    /// states, time-major `[steps, size]`.
    pub fn process(&mut self, inputs: &[f32]) -> Result<Vec<f32>> {
        let n = self.config.size;
        let steps = self.check_inputs("GpuReservoirComputer::process", inputs)?;
        let mut states = Vec::with_capacity(steps * n);
        if self.device.is_some() {
            self.run_gpu(inputs, |g, s, _, rows| {
                states.extend(g.stream().clone_dtoh(&s.slice(..rows * n))?);
                Ok(())
            })?;
        } else {
            self.run_cpu(inputs, |s, _, _| {
                states.extend_from_slice(s);
                Ok(())
            })?;
        }
        Ok(states)
    }

    /// [`process`](Self::process) on the GPU (the seed's entry point, typically for the spikes of
    /// [`encode_spikes`](Self::encode_spikes)); [`Error::NoGpu`] on the CPU fallback.
    pub fn process_gpu(&mut self, pattern: &[f32]) -> Result<Vec<f32>> {
        if self.device.is_none() {
            self.runtime.gpu()?;
        }
        self.process(pattern)
    }

    /// Fits the readout by ridge regression of `targets` (time-major `[steps, outputs]`) on the
    /// features `[1; u; x]` of running `inputs` from the current state, the first
    /// [`warmup`](ReservoirConfig::warmup) steps left out. The state moves on to the sequence's end,
    /// so [`generate`](Self::generate) continues from there.
    pub fn fit(&mut self, inputs: &[f32], targets: &[f32]) -> Result<()> {
        const OP: &str = "GpuReservoirComputer::fit";
        let steps = self.check_inputs(OP, inputs)?;
        let outputs = check_targets(OP, targets, steps, self.config.warmup)?;
        let (d, n, warmup) = (self.config.input_size, self.config.size, self.config.warmup);
        let mut sums = Sums::new(d, n, outputs, 1);
        if self.device.is_some() {
            let stream = self.gpu()?.stream().clone();
            let mut device = DeviceSums::new(&stream, &sums, CHUNK.min(steps))?;
            self.run_gpu(inputs, |g, s, first, rows| {
                device.add(g, &mut sums, s, inputs, targets, first, rows, warmup)
            })?;
            device.download(&stream, &mut sums)?;
        } else {
            let rt = self.runtime.clone();
            let (mut g_xx, mut g_ux, mut g_xy) = (sums.xx.clone(), sums.ux.clone(), sums.xy.clone());
            self.run_cpu(inputs, |s, first, rows| {
                let Some((k, heads, y)) = sums.heads(inputs, targets, first, rows, warmup) else {
                    return Ok(());
                };
                let s64 = rt.f32_to_f64(&s[(rows - k) * n..])?;
                let [xx, ux, xy] = sums.gemms(k);
                rt.gemm_f64(&xx, &s64, &s64, &mut g_xx)?;
                rt.gemm_f64(&ux, &heads, &s64, &mut g_ux)?;
                rt.gemm_f64(&xy, &s64, &y, &mut g_xy)
            })?;
            (sums.xx, sums.ux, sums.xy) = (g_xx, g_ux, g_xy);
        }
        let (gram, cross) = sums.assemble(0);
        let solution = ridge::solve(&gram, &cross, self.config.features(), outputs, self.config.ridge)?;
        self.set_readout(&solution, outputs)
    }

    /// Keeps a ridge solution (`[features, outputs]`) as the readout, stored transposed
    /// (`[outputs, features]`) so a prediction is one GEMV per step or one GEMM per chunk.
    fn set_readout(&mut self, solution: &[f64], outputs: usize) -> Result<()> {
        let f = self.config.features();
        let mut w_out = vec![0.0f32; outputs * f];
        for i in 0..f {
            for o in 0..outputs {
                w_out[o * f + i] = solution[i * outputs + o] as f32;
            }
        }
        if let Some(dev) = &mut self.device {
            let g = self.runtime.gpu()?;
            dev.w_out = Some(g.upload(&w_out)?);
        }
        self.readout = Some(Readout { w_out, outputs });
        Ok(())
    }

    /// The readout's outputs for `inputs` run from the current state, time-major `[steps, outputs]`.
    pub fn predict(&mut self, inputs: &[f32]) -> Result<Vec<f32>> {
        const OP: &str = "GpuReservoirComputer::predict";
        let readout = self.fitted(OP)?.clone();
        let steps = self.check_inputs(OP, inputs)?;
        let (d, n, o) = (self.config.input_size, self.config.size, readout.outputs);
        let mut out = Vec::with_capacity(steps * o);
        let state_part = |rows: usize| state_part_gemm(rows, o, n, d, 1);
        if self.device.is_some() {
            let w_out = self.gpu()?.upload(&readout.w_out)?;
            self.run_gpu(inputs, |g, s, first, rows| {
                let mut y = g.stream().alloc_zeros::<f32>(rows * o)?;
                g.gemm(&state_part(rows), &s.slice(..rows * n), &w_out.slice(1 + d..), &mut y.as_view_mut())?;
                let mut y = g.download(&y)?;
                add_input_part(&readout, d, &inputs[first * d..(first + rows) * d], &mut y);
                out.extend(y);
                Ok(())
            })?;
        } else {
            let rt = self.runtime.clone();
            self.run_cpu(inputs, |s, first, rows| {
                let mut y = vec![0.0f32; rows * o];
                rt.gemm(&state_part(rows), s, &readout.w_out[1 + d..], &mut y)?;
                add_input_part(&readout, d, &inputs[first * d..(first + rows) * d], &mut y);
                out.extend(y);
                Ok(())
            })?;
        }
        Ok(out)
    }

    /// Generative free run: `steps` outputs, each fed back as the next input, starting from the
    /// current state and the last input (so right after [`fit`](Self::fit) or
    /// [`predict`](Self::predict) on a one-step-ahead task, the first output is the step after the
    /// sequence). Needs `outputs == input_size`. Time-major `[steps, outputs]`.
    pub fn generate(&mut self, steps: usize) -> Result<Vec<f32>> {
        const OP: &str = "GpuReservoirComputer::generate";
        let Some(readout) = &self.readout else {
            return Err(unfitted(OP));
        };
        let (d, f) = (self.config.input_size, self.config.features());
        if readout.outputs != d {
            return Err(bad_input(
                OP,
                format!("a readout with input_size = {d} outputs to feed back"),
                format!("{} outputs", readout.outputs),
            ));
        }
        let leak = self.config.leak_rate;
        let mut head = vec![1.0f32; 1 + d];
        head[1..].copy_from_slice(&self.last_input);
        let out = if let Some(dev) = &mut self.device {
            let g = self.runtime.gpu()?;
            self.runtime.context()?.bind_to_thread()?;
            let (kernels, stream) = (g.kernels(), g.stream());
            let w_out = dev.w_out.as_ref().ok_or_else(|| unfitted(OP))?;
            // Features [1; u; x] of this step and the next, swapped every step.
            let mut z = stream.alloc_zeros::<f32>(f)?;
            let mut next = stream.clone_htod(&vec![1.0f32; f])?;
            stream.memcpy_htod(&head, &mut z.slice_mut(..1 + d))?;
            stream.memcpy_dtod(&dev.x, &mut z.slice_mut(1 + d..))?;
            let mut out = stream.alloc_zeros::<f32>(steps * d)?;
            for t in 0..steps {
                let mut y = out.slice_mut(t * d..(t + 1) * d);
                gemv::gemv(kernels, stream, Gemv::dense(d, f), &w_out.as_view(), &z.as_view(), &mut y)?;
                stream.memcpy_dtod(&y, &mut next.slice_mut(1..1 + d))?;
                let (head_next, mut x_next) = next.split_at_mut(1 + d);
                neuromorphic::reservoir_update(
                    kernels,
                    stream,
                    &dev.w_in.as_view(),
                    &dev.w.view(),
                    &head_next.as_view(),
                    &z.slice(1 + d..),
                    &mut x_next,
                    leak,
                )?;
                std::mem::swap(&mut z, &mut next);
            }
            stream.memcpy_dtod(&z.slice(1 + d..), &mut dev.x)?;
            g.download(&out)?
        } else {
            let rt = self.runtime.clone();
            let mut z = head;
            z.extend_from_slice(&self.state);
            let mut out = Vec::with_capacity(steps * d);
            for _ in 0..steps {
                let y = rt.gemv(Gemv::dense(d, f), &readout.w_out, &z, &[])?;
                z[1..1 + d].copy_from_slice(&y);
                self.state = rt.reservoir_update(
                    &self.weights.w_in,
                    self.weights.w.as_reservoir(),
                    &z[..1 + d],
                    &self.state,
                    leak,
                )?;
                z[1 + d..].copy_from_slice(&self.state);
                out.extend(y);
            }
            out
        };
        if steps > 0 {
            self.last_input.copy_from_slice(&out[(steps - 1) * d..]);
        }
        Ok(out)
    }

    fn fitted(&self, op: &'static str) -> Result<&Readout> {
        self.readout.as_ref().ok_or_else(|| unfitted(op))
    }

    /// The number of steps in `inputs`, or an error when it is empty, not whole steps, or not finite.
    fn check_inputs(&self, op: &'static str, inputs: &[f32]) -> Result<usize> {
        let d = self.config.input_size;
        if inputs.is_empty() || inputs.len() % d != 0 {
            return Err(bad_input(
                op,
                format!("a non-empty sequence of whole steps of input_size = {d} values"),
                format!("{} values", inputs.len()),
            ));
        }
        check_finite(op, "inputs", inputs)?;
        Ok(inputs.len() / d)
    }

    /// Runs `inputs` on the GPU chunk by chunk, one fused launch per step; `sink(g, s, first, rows)`
    /// gets each chunk's states `s` (`rows` rows of `size`, from step `first`).
    fn run_gpu(
        &mut self,
        inputs: &[f32],
        mut sink: impl FnMut(&GpuOps, &CudaSlice<f32>, usize, usize) -> Result<()>,
    ) -> Result<()> {
        let (d, n, leak) = (self.config.input_size, self.config.size, self.config.leak_rate);
        let runtime = self.runtime.clone();
        let g = runtime.gpu()?;
        runtime.context()?.bind_to_thread()?;
        let dev = self.device.as_mut().ok_or_else(|| Error::NoGpu {
            op: "GpuReservoirComputer",
            reason: "the reservoir was built on the CPU fallback".into(),
        })?;
        let (kernels, stream) = (g.kernels(), g.stream());
        let rows_max = CHUNK.min(inputs.len() / d);
        let mut s = stream.alloc_zeros::<f32>(rows_max * n)?;
        let mut heads = stream.alloc_zeros::<f32>(rows_max * (1 + d))?;
        let mut host = vec![1.0f32; rows_max * (1 + d)];
        for (c, chunk) in inputs.chunks(CHUNK * d).enumerate() {
            let rows = chunk.len() / d;
            for (head, u) in host.chunks_exact_mut(1 + d).zip(chunk.chunks_exact(d)) {
                head[1..].copy_from_slice(u);
            }
            stream.memcpy_htod(&host[..rows * (1 + d)], &mut heads.slice_mut(..rows * (1 + d)))?;
            for r in 0..rows {
                let head = heads.slice(r * (1 + d)..(r + 1) * (1 + d));
                // State r from state r - 1: the previous row, or the carried state at a chunk's start.
                let (done, mut rest) = s.split_at_mut(r * n);
                let mut out = rest.slice_mut(..n);
                let prev = if r == 0 { dev.x.as_view() } else { done.slice((r - 1) * n..) };
                let (w_in, w) = (dev.w_in.as_view(), dev.w.view());
                neuromorphic::reservoir_update(kernels, stream, &w_in, &w, &head, &prev, &mut out, leak)?;
            }
            stream.memcpy_dtod(&s.slice((rows - 1) * n..rows * n), &mut dev.x)?;
            sink(g, &s, c * CHUNK, rows)?;
        }
        self.last_input.copy_from_slice(&inputs[inputs.len() - d..]);
        Ok(())
    }

    /// [`run_gpu`](Self::run_gpu) on the CPU fallback: `sink(s, first, rows)` with `s` exactly
    /// `rows` states.
    fn run_cpu(
        &mut self,
        inputs: &[f32],
        mut sink: impl FnMut(&[f32], usize, usize) -> Result<()>,
    ) -> Result<()> {
        let (d, n, leak) = (self.config.input_size, self.config.size, self.config.leak_rate);
        let mut s = vec![0.0f32; CHUNK.min(inputs.len() / d) * n];
        let mut head = vec![1.0f32; 1 + d];
        for (c, chunk) in inputs.chunks(CHUNK * d).enumerate() {
            let rows = chunk.len() / d;
            for (x, u) in s.chunks_exact_mut(n).zip(chunk.chunks_exact(d)) {
                head[1..].copy_from_slice(u);
                let w = self.weights.w.as_reservoir();
                self.state =
                    self.runtime.reservoir_update(&self.weights.w_in, w, &head, &self.state, leak)?;
                x.copy_from_slice(&self.state);
            }
            sink(&s[..rows * n], c * CHUNK, rows)?;
        }
        self.last_input.copy_from_slice(&inputs[inputs.len() - d..]);
        Ok(())
    }
}

/// The error for a prediction before [`GpuReservoirComputer::fit`].
fn unfitted(op: &'static str) -> Error {
    bad_input(op, "a fitted readout (call fit first)".into(), "none".into())
}

/// The outputs per step of `targets` for `steps` steps, or an error when they are not whole
/// steps, not finite, or all within the warmup.
fn check_targets(op: &'static str, targets: &[f32], steps: usize, warmup: usize) -> Result<usize> {
    if targets.is_empty() || targets.len() % steps != 0 {
        return Err(bad_input(
            op,
            format!("targets of steps x outputs for {steps} steps"),
            format!("{} values", targets.len()),
        ));
    }
    if warmup >= steps {
        return Err(bad_input(
            op,
            format!("more steps than the warmup ({warmup})"),
            format!("{steps} steps"),
        ));
    }
    check_finite(op, "targets", targets)?;
    Ok(targets.len() / steps)
}

/// An error naming `what` when `values` holds a NaN or an infinity.
fn check_finite(op: &'static str, what: &str, values: &[f32]) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(bad_input(op, format!("finite {what}"), format!("{} at index {i}", values[i]))),
    }
}
