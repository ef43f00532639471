//! Many independent reservoirs stepped together: a hyper-parameter search runs as batched products
//! (one GEMV for every member's input, one batched GEMM for every member's recurrence per step, one
//! batched f64 GEMM per chunk for every member's Gram matrix) instead of a loop over reservoirs.

use std::sync::Arc;

use super::sums::{add_input_part, state_part_gemm, DeviceSums, Sums};
use super::{bad_input, check_targets, ridge, weights::Recurrent, GpuReservoirComputer, Readout, CHUNK};
use crate::driver::CudaSlice;
use crate::error::Result;
use crate::kernels::gemm::Gemm;
use crate::kernels::gemv;
use crate::kernels::neuromorphic;
use crate::ops::gemv::Gemv;
use crate::ops::shape;
use crate::runtime::{GpuOps, ProductionGpuRuntime};

/// A batch of reservoirs of one size and input size (different seeds, spectral radii, leak rates,
/// scalings, ridges) driven by the same inputs. On a GPU the members are stepped together as batched
/// products on dense stacked weights; on the CPU fallback they run one after another.
pub struct ReservoirBatch {
    members: Vec<GpuReservoirComputer>,
    device: Option<Stacked>,
}

/// The members' weights and states stacked on the device.
struct Stacked {
    /// `[B, n, n]` dense.
    w: CudaSlice<f32>,
    /// `[B * n, 1 + d]`.
    w_in: CudaSlice<f32>,
    /// `[B * n]`.
    x: CudaSlice<f32>,
    drive: CudaSlice<f32>,
    leaks: Vec<f32>,
}

impl ReservoirBatch {
    /// Builds every member as [`GpuReservoirComputer::with_runtime`] would (so each member's
    /// weights are the ones it has alone) and stacks them on the device.
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
        let members = configs
            .iter()
            .map(|c| GpuReservoirComputer::with_runtime(c.clone(), runtime.clone()))
            .collect::<Result<Vec<_>>>()?;
        let device = if runtime.is_gpu() {
            let (b, n) = (members.len(), first.size);
            let stacked_len = shape::elements(OP, "stacked weights", &[b, n, n])?;
            let mut w = Vec::with_capacity(stacked_len);
            let mut w_in = Vec::new();
            for m in &members {
                w.extend(dense(&m.weights.w, n));
                w_in.extend_from_slice(&m.weights.w_in);
            }
            let g = members[0].gpu()?;
            Some(Stacked {
                w: g.upload(&w)?,
                w_in: g.upload(&w_in)?,
                x: g.stream().alloc_zeros(b * n)?,
                drive: g.stream().alloc_zeros(b * n)?,
                leaks: configs.iter().map(|c| c.leak_rate).collect(),
            })
        } else {
            None
        };
        Ok(Self { members, device })
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
        let mut out = vec![Vec::new(); b];
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
    /// matrices of all members are accumulated by one batched f64 GEMM per chunk.
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
        for (i, m) in self.members.iter_mut().enumerate() {
            let (gram, cross) = sums.assemble(i);
            let solution = ridge::solve(&gram, &cross, m.config.features(), o, m.config.ridge)?;
            m.set_readout(&solution, o)?;
        }
        Ok(())
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

    /// Runs `inputs` on the stacked device weights chunk by chunk; `sink(g, s, first, rows)` gets
    /// the chunk's states `s` (`rows` rows of `[B * n]`, member-major) from step `first`.
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
        let uniform_leak = dev.leaks.iter().all(|&l| l == dev.leaks[0]);
        let recurrent = Gemm::new(n, 1, n).scaled(1.0, 1.0).batched(b, n * n, n, n);
        for (c, chunk) in inputs.chunks(CHUNK * d).enumerate() {
            let rows = chunk.len() / d;
            for (head, u) in host.chunks_exact_mut(h).zip(chunk.chunks_exact(d)) {
                head[1..].copy_from_slice(u);
            }
            stream.memcpy_htod(&host[..rows * h], &mut heads.slice_mut(..rows * h))?;
            for r in 0..rows {
                let head = heads.slice(r * h..(r + 1) * h);
                gemv::gemv(
                    kernels,
                    stream,
                    Gemv::dense(bn, h),
                    &dev.w_in.as_view(),
                    &head,
                    &mut dev.drive.as_view_mut(),
                )?;
                g.gemm(&recurrent, &dev.w.as_view(), &dev.x.as_view(), &mut dev.drive.as_view_mut())?;
                if uniform_leak {
                    neuromorphic::leaky_integration(
                        kernels,
                        stream,
                        &mut dev.x.as_view_mut(),
                        &dev.drive.as_view(),
                        dev.leaks[0],
                    )?;
                } else {
                    for (bi, &leak) in dev.leaks.iter().enumerate() {
                        let span = bi * n..(bi + 1) * n;
                        neuromorphic::leaky_integration(
                            kernels,
                            stream,
                            &mut dev.x.slice_mut(span.clone()),
                            &dev.drive.slice(span),
                            leak,
                        )?;
                    }
                }
                stream.memcpy_dtod(&dev.x, &mut s.slice_mut(r * bn..(r + 1) * bn))?;
            }
            sink(g, &s, c * CHUNK, rows)?;
        }
        for m in &mut self.members {
            m.last_input.copy_from_slice(&inputs[inputs.len() - d..]);
        }
        Ok(())
    }
}

/// A recurrent matrix as dense row-major `[n, n]`.
fn dense(w: &Recurrent, n: usize) -> Vec<f32> {
    match w {
        Recurrent::Dense(d) => d.clone(),
        Recurrent::Sparse { row_ptr, col_idx, values } => {
            let mut out = vec![0.0; n * n];
            for (i, span) in row_ptr.windows(2).enumerate() {
                for k in span[0] as usize..span[1] as usize {
                    out[i * n + col_idx[k] as usize] = values[k];
                }
            }
            out
        }
    }
}
