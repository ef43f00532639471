//! Many independent reservoirs stepped together: a hyper-parameter search runs as one launch per
//! step for every member (each member's matrix stacked in its own format, dense or CSR, and
//! reduced row by row as the member alone would be, so the states are bit-for-bit the loop's), one
//! batched f64 GEMM per chunk for every member's Gram matrix and the members' ridge solves in
//! parallel on the host, instead of a loop over reservoirs. The build estimates every member's
//! spectral radius in one power iteration (one launch per product for all members).

use std::sync::Arc;

use rayon::prelude::*;

use super::sums::{add_input_part, state_part_gemm, DeviceSums, Sums};
use super::weights::{self, Weights};
use super::{bad_input, check_targets, ridge, GpuReservoirComputer, Readout, CHUNK};
use crate::driver::CudaSlice;
use crate::error::Result;
use crate::kernels::neuromorphic::{self, DeviceReservoirStack};
use crate::ops::neuromorphic::ReservoirWeights;
use crate::ops::shape;
use crate::runtime::{GpuOps, ProductionGpuRuntime};

/// A batch of reservoirs of one size and input size (different seeds, spectral radii, leak rates,
/// scalings, ridges, densities) driven by the same inputs. On a GPU the members are stepped
/// together, one launch per step; on the CPU fallback they run one after another.
pub struct ReservoirBatch {
    members: Vec<GpuReservoirComputer>,
    device: Option<Stacked>,
}

/// The members' weights and states stacked on the device.
struct Stacked {
    /// Every member's recurrent matrix, in its own format.
    w: DeviceReservoirStack,
    /// `[B * n, 1 + d]`.
    w_in: CudaSlice<f32>,
    /// `[B]`.
    leaks: CudaSlice<f32>,
    /// `[B * n]`: the state the next step starts from.
    x: CudaSlice<f32>,
}

impl ReservoirBatch {
    /// Builds every member as [`GpuReservoirComputer::with_runtime`] would (so each member's
    /// weights are the ones it has alone: on a GPU the members' power iterations run together,
    /// each with the arithmetic it has alone) and stacks them on the device.
    pub fn new(configs: &[super::ReservoirConfig], runtime: Arc<ProductionGpuRuntime>) -> Result<Self> {
        const OP: &str = "ReservoirBatch::new";
        let Some(first) = configs.first() else {
            return Err(bad_input(OP, "at least one configuration".into(), "none".into()));
        };
        if let Some(c) = configs.iter().find(|c| c.size != first.size || c.input_size != first.input_size) {
            return Err(bad_input(
                OP,
                format!("members of one size and input size ({} x {})", first.size, first.input_size),
                format!("{} x {}", c.size, c.input_size),
            ));
        }
        if !runtime.is_gpu() {
            let members = configs
                .iter()
                .map(|c| GpuReservoirComputer::with_runtime(c.clone(), runtime.clone()))
                .collect::<Result<Vec<_>>>()?;
            return Ok(Self { members, device: None });
        }
        configs.iter().try_for_each(|c| c.validate())?;
        let (b, n) = (configs.len(), first.size);
        let stacked_len = shape::elements(OP, "stacked states", &[b, n])?;
        let mut drawn = configs.par_iter().map(Weights::draw).collect::<Result<Vec<_>>>()?;
        let g = runtime.gpu()?;
        runtime.context()?.bind_to_thread()?;
        let (kernels, stream) = (g.kernels(), g.stream());
        let rhos = {
            let unscaled = DeviceReservoirStack::upload(stream, &recurrents(&drawn), n)?;
            let mut v = stream.alloc_zeros::<f32>(stacked_len)?;
            let mut wv = stream.alloc_zeros::<f32>(stacked_len)?;
            let seeds: Vec<u64> = configs.iter().map(|c| c.seed).collect();
            weights::spectral_radii(n, &seeds, |host| {
                stream.memcpy_htod(host, &mut v)?;
                neuromorphic::matvec_reservoir_batched(
                    kernels,
                    stream,
                    &unscaled,
                    &v.as_view(),
                    &mut wv.as_view_mut(),
                )?;
                Ok(stream.clone_dtoh(&wv)?)
            })?
        };
        for ((w, rho), c) in drawn.iter_mut().zip(rhos).zip(configs) {
            w.scale_to(rho, c.spectral_radius)?;
        }
        let stacked = Stacked {
            w: DeviceReservoirStack::upload(stream, &recurrents(&drawn), n)?,
            w_in: g.upload(&drawn.iter().flat_map(|w| w.w_in.iter().copied()).collect::<Vec<_>>())?,
            leaks: g.upload(&configs.iter().map(|c| c.leak_rate).collect::<Vec<_>>())?,
            x: stream.alloc_zeros(stacked_len)?,
        };
        let members = configs
            .iter()
            .zip(drawn)
            .map(|(c, w)| GpuReservoirComputer::from_weights(c.clone(), runtime.clone(), w))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { members, device: Some(stacked) })
    }

    /// The members, in the order of their configurations (each with its readout once fitted).
    pub fn members(&self) -> &[GpuReservoirComputer] {
        &self.members
    }

    /// Zeroes every member's state.
    pub fn reset(&mut self) -> Result<()> {
        for m in &mut self.members {
            m.reset()?;
        }
        if let Some(dev) = &mut self.device {
            let g = self.members[0].gpu()?;
            g.stream().memset_zeros(&mut dev.x)?;
        }
        Ok(())
    }

    /// Every member's states for `inputs` (time-major `[steps, input_size]`): one `[steps, size]`
    /// vector per member.
    pub fn process(&mut self, inputs: &[f32]) -> Result<Vec<Vec<f32>>> {
        let Some(_) = &self.device else {
            return self.members.iter_mut().map(|m| m.process(inputs)).collect();
        };
        let (b, n) = (self.members.len(), self.members[0].config.size);
        let steps = self.members[0].check_inputs("ReservoirBatch::process", inputs)?;
        // Each member's states are gathered step by step: room for all of them up front.
        let states = shape::elements("ReservoirBatch::process", "states", &[steps, n])?;
        let mut out: Vec<Vec<f32>> = (0..b).map(|_| Vec::with_capacity(states)).collect();
        self.run_gpu(inputs, |g, s, _, rows| {
            let host = g.stream().clone_dtoh(&s.slice(..rows * b * n))?;
            for step in host.chunks_exact(b * n) {
                for (member, x) in out.iter_mut().zip(step.chunks_exact(n)) {
                    member.extend_from_slice(x);
                }
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Fits every member's readout on the same `inputs` and `targets` (see
    /// [`GpuReservoirComputer::fit`]; each member its own ridge, all the largest warmup). On a GPU the Gram
    /// matrices of all members are accumulated by one batched f64 GEMM per chunk, and the members' ridge
    /// solves run in parallel on the host.
    pub fn fit(&mut self, inputs: &[f32], targets: &[f32]) -> Result<()> {
        const OP: &str = "ReservoirBatch::fit";
        if self.device.is_none() {
            return self.members.iter_mut().try_for_each(|m| m.fit(inputs, targets));
        }
        let steps = self.members[0].check_inputs(OP, inputs)?;
        let warmup = self.members.iter().map(|m| m.config.warmup).max().unwrap_or(0);
        let o = check_targets(OP, targets, steps, warmup)?;
        let (b, n, d) = (self.members.len(), self.members[0].config.size, self.members[0].config.input_size);
        shape::elements(OP, "Gram matrices", &[b, n, n])?;
        let stream = self.members[0].gpu()?.stream().clone();
        let mut sums = Sums::new(d, n, o, b);
        let mut device = DeviceSums::new(&stream, &sums, CHUNK.min(steps))?;
        self.run_gpu(inputs, |g, s, first, rows| {
            device.add(g, &mut sums, s, inputs, targets, first, rows, warmup)
        })?;
        device.download(&stream, &mut sums)?;
        // The members' solves are independent: in parallel on the host (each one also threaded).
        let (f, ridges) = (self.members[0].config.features(), self.ridges());
        let solutions = ridges
            .par_iter()
            .enumerate()
            .map(|(i, &ridge)| {
                let (gram, cross) = sums.assemble(i);
                ridge::solve(&gram, &cross, f, o, ridge)
            })
            .collect::<Result<Vec<_>>>()?;
        for (m, solution) in self.members.iter_mut().zip(solutions) {
            m.set_readout(&solution, o)?;
        }
        Ok(())
    }

    fn ridges(&self) -> Vec<f64> {
        self.members.iter().map(|m| m.config.ridge).collect()
    }

    /// Every member's readout outputs for `inputs`, run from the current states: one
    /// `[steps, outputs]` vector per member.
    pub fn predict(&mut self, inputs: &[f32]) -> Result<Vec<Vec<f32>>> {
        const OP: &str = "ReservoirBatch::predict";
        if self.device.is_none() {
            return self.members.iter_mut().map(|m| m.predict(inputs)).collect();
        }
        let readouts: Vec<Readout> =
            self.members.iter().map(|m| m.fitted(OP).cloned()).collect::<Result<Vec<_>>>()?;
        let o = readouts[0].outputs;
        if let Some(r) = readouts.iter().find(|r| r.outputs != o) {
            return Err(bad_input(
                OP,
                format!("readouts of one output size ({o})"),
                format!("{}", r.outputs),
            ));
        }
        let (b, n, d) = (self.members.len(), self.members[0].config.size, self.members[0].config.input_size);
        let bn = b * n;
        let stacked: Vec<f32> = readouts.iter().flat_map(|r| r.w_out.iter().copied()).collect();
        let w_out = self.members[0].gpu()?.upload(&stacked)?;
        let mut out = vec![Vec::new(); b];
        self.run_gpu(inputs, |g, s, first, rows| {
            // The state part on the device for every member at once, the input part on the host.
            let mut y = g.stream().alloc_zeros::<f32>(b * rows * o)?;
            let gm = state_part_gemm(rows, o, n, d, b);
            g.gemm(&gm, &s.slice(..rows * bn), &w_out.slice(1 + d..), &mut y.as_view_mut())?;
            let mut y = g.download(&y)?;
            let chunk = &inputs[first * d..(first + rows) * d];
            for ((member, readout), ym) in out.iter_mut().zip(&readouts).zip(y.chunks_exact_mut(rows * o)) {
                add_input_part(readout, d, chunk, ym);
                member.extend_from_slice(ym);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Runs `inputs` on the stacked device weights chunk by chunk, one launch per step for every
    /// member; `sink(g, s, first, rows)` gets the chunk's states `s` (`rows` rows of `[B * n]`,
    /// member-major) from step `first`.
    fn run_gpu(
        &mut self,
        inputs: &[f32],
        mut sink: impl FnMut(&GpuOps, &CudaSlice<f32>, usize, usize) -> Result<()>,
    ) -> Result<()> {
        const OP: &str = "ReservoirBatch";
        let steps = self.members[0].check_inputs(OP, inputs)?;
        let (b, n, d) = (self.members.len(), self.members[0].config.size, self.members[0].config.input_size);
        let (h, bn) = (1 + d, b * n);
        let g = self.members[0].gpu()?;
        let Some(dev) = self.device.as_mut() else {
            return Err(bad_input(OP, "a GPU batch".into(), "the CPU fallback".into()));
        };
        let (kernels, stream) = (g.kernels(), g.stream());
        let rows_max = CHUNK.min(steps);
        let mut s = stream.alloc_zeros::<f32>(rows_max * bn)?;
        let mut heads = stream.alloc_zeros::<f32>(rows_max * h)?;
        let mut host = vec![1.0f32; rows_max * h];
        for (c, chunk) in inputs.chunks(CHUNK * d).enumerate() {
            let rows = chunk.len() / d;
            for (head, u) in host.chunks_exact_mut(h).zip(chunk.chunks_exact(d)) {
                head[1..].copy_from_slice(u);
            }
            stream.memcpy_htod(&host[..rows * h], &mut heads.slice_mut(..rows * h))?;
            for r in 0..rows {
                let head = heads.slice(r * h..(r + 1) * h);
                // Row r from row r - 1: the previous row, or the carried states at a chunk's start.
                let (done, mut rest) = s.split_at_mut(r * bn);
                let mut out = rest.slice_mut(..bn);
                let prev = if r == 0 { dev.x.as_view() } else { done.slice((r - 1) * bn..) };
                neuromorphic::reservoir_update_batched(
                    kernels,
                    stream,
                    &dev.w,
                    &dev.w_in.as_view(),
                    &head,
                    &dev.leaks.as_view(),
                    &prev,
                    &mut out,
                )?;
            }
            stream.memcpy_dtod(&s.slice((rows - 1) * bn..rows * bn), &mut dev.x)?;
            sink(g, &s, c * CHUNK, rows)?;
        }
        for m in &mut self.members {
            m.last_input.copy_from_slice(&inputs[inputs.len() - d..]);
        }
        Ok(())
    }
}

/// The members' recurrent matrices as the stack's operands.
fn recurrents(members: &[Weights]) -> Vec<ReservoirWeights<'_>> {
    members.iter().map(|w| w.w.as_reservoir()).collect()
}
