//! [`Network`]: a [`Sequential`] classifier with an optimiser, trained by [`Network::train`] with
//! shuffled mini-batches, softmax cross-entropy and one fused optimiser launch per step. On a GPU
//! the data, the parameters, the optimiser state and the per-sample losses stay on the device for
//! the whole run; the host reads two sums per epoch.

use std::time::Instant;

use crate::driver::CudaSlice;
use crate::error::{Error, Result};
use crate::kernels::gemm::Precision;
use crate::nn::loss::{check_labels, sum, xent_into, LabelStorage, Labels};
use crate::nn::model::Sequential;
use crate::nn::progress::Progress;
use crate::nn::tensor::{Device, Storage, Tensor, TensorView};
use crate::ops::nn::Optimizer;
use crate::rng::SplitMix64;

/// How [`Network::train`] runs.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainingConfig {
    /// Passes over the data.
    pub epochs: usize,
    /// Samples per step (the last batch of an epoch may be smaller).
    pub batch_size: usize,
    /// The optimiser's learning rate.
    pub learning_rate: f32,
    /// Run on a GPU (else the CPU fallback, always).
    pub use_gpu: bool,
    /// With `use_gpu`: fall back to the CPU when no GPU is usable (else that is an error).
    pub prefer_gpu: bool,
    /// Seeds the batch order (and the dropout masks): the same on GPU and CPU for a seed.
    pub seed: u64,
    /// The update rule.
    pub optimizer: Optimizer,
    /// Shuffle the samples every epoch.
    pub shuffle: bool,
    /// The precision of the dense layers' products.
    pub precision: Precision,
    /// Show a progress bar (with the `progress` feature; ignored without it).
    pub progress: bool,
    /// On a GPU: capture the training step as a CUDA graph once and replay it for every full
    /// batch (the last, smaller batch of an epoch runs eagerly). Not with dropout.
    pub cuda_graph: bool,
}

impl Default for TrainingConfig {
    fn default() -> Self {
        Self {
            epochs: 10,
            batch_size: 128,
            learning_rate: 1e-3,
            use_gpu: true,
            prefer_gpu: true,
            seed: 0,
            optimizer: Optimizer::ADAM,
            shuffle: true,
            precision: Precision::F32,
            progress: false,
            cuda_graph: false,
        }
    }
}

/// One epoch's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct EpochStats {
    /// 1-based epoch number.
    pub epoch: usize,
    /// Mean training loss over the epoch's samples (each measured before its step).
    pub loss: f32,
    /// Training accuracy over the epoch (each sample before its step).
    pub accuracy: f32,
    /// Loss on the test set after the epoch, when one was given.
    pub test_loss: Option<f32>,
    /// Accuracy on the test set after the epoch, when one was given.
    pub test_accuracy: Option<f32>,
    /// Wall time of the epoch's training steps (evaluation excluded).
    pub seconds: f64,
}

/// What [`Network::train`] measured.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    /// What it ran on.
    pub device: String,
    /// One entry per epoch.
    pub epochs: Vec<EpochStats>,
}

/// A classifier: a [`Sequential`] whose outputs are class logits, with optimiser state.
#[derive(Debug)]
pub struct Network {
    model: Sequential,
    state: Option<(Optimizer, Tensor)>,
    step: u64,
    /// The device-side step schedule of captured steps, and the step count it holds.
    sched: Option<(Tensor, u64)>,
}

/// A training step captured into a CUDA graph by [`Network::capture_step`]: it reads the batch
/// and labels it was captured with (write new samples into those buffers between replays) and
/// updates the network's parameters in place. Replay it with [`Network::replay`].
pub struct CapturedStep {
    graph: crate::driver::CudaGraph,
    generation: u64,
    loss: Tensor,
    correct: Tensor,
}

impl CapturedStep {
    /// The loss of each sample of the last replay (or of the eager step of the capture).
    pub fn loss(&self) -> &Tensor {
        &self.loss
    }

    /// 1 for each sample of the last replay whose prediction was right, else 0.
    pub fn correct(&self) -> &Tensor {
        &self.correct
    }
}

impl std::fmt::Debug for CapturedStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapturedStep").finish_non_exhaustive()
    }
}

/// A data set placed on a device for training or evaluation.
pub(super) struct Placed {
    x: Tensor,
    y: Labels,
    pub(super) n: usize,
}

impl Network {
    /// A network around `model` (its last layer's outputs are the classes).
    pub fn new(model: Sequential) -> Self {
        Self { model, state: None, step: 0, sched: None }
    }

    /// The model.
    pub fn model(&self) -> &Sequential {
        &self.model
    }

    /// The model, for changes.
    pub fn model_mut(&mut self) -> &mut Sequential {
        &mut self.model
    }

    /// Optimiser steps taken.
    pub fn steps(&self) -> u64 {
        self.step
    }

    /// Trains on `data` (`[n, inputs]` row-major) with `labels` (`n`, each below the model's
    /// outputs) as `config` says. Errors, before anything runs: empty data, a length that is not a
    /// whole number of samples, a label count that differs, a label out of range, a non-finite
    /// value in the data, a zero batch size, a learning rate that is not finite and positive.
    pub fn train(&mut self, data: &[f32], labels: &[u32], config: &TrainingConfig) -> Result<History> {
        self.train_with_test(data, labels, None, config)
    }

    /// [`train`](Self::train), evaluating on `test` (data, labels) after every epoch.
    pub fn train_with_test(
        &mut self,
        data: &[f32],
        labels: &[u32],
        test: Option<(&[f32], &[u32])>,
        config: &TrainingConfig,
    ) -> Result<History> {
        const OP: &str = "Network::train";
        let (train_host, test_host) = self.check_inputs(OP, data, labels, test, config)?;
        let device = pick_device(config, self.model.device())?;
        self.place(&device)?;
        self.model.set_precision(config.precision);
        let train = self.placed(data, train_host)?;
        let test = test_host.map(|(d, y)| self.placed(d, y)).transpose()?;
        let mut rng = SplitMix64::new(config.seed);
        let mut history = History { device: device.describe(), epochs: Vec::with_capacity(config.epochs) };
        let mut losses = Tensor::zeros(&device, &[train.n])?;
        let mut correct = Tensor::zeros(&device, &[train.n])?;
        let progress = Progress::new(config.progress, config.epochs, train.n);
        let graphed = config.cuda_graph && device.is_gpu();
        if graphed && self.model.has_dropout() {
            return Err(Error::Shape {
                op: OP,
                expected: "no dropout with cuda_graph".into(),
                got: "a model with dropout".into(),
            });
        }
        let mut graph: Option<GraphRun> = None;
        for epoch in 1..=config.epochs {
            let order = batch_order(train.n, config.shuffle, &mut rng);
            let start = Instant::now();
            let index = IndexBuffer::new(&device, order)?;
            for first in (0..train.n).step_by(config.batch_size) {
                let rows = config.batch_size.min(train.n - first);
                if graphed && rows == config.batch_size {
                    let run = match graph.as_mut() {
                        Some(run) => {
                            gather_into(&device, &train, &index, first, &mut run.x, &mut run.y)?;
                            self.replay(&run.step)?;
                            run
                        }
                        None => {
                            let (x, y) = gather(&device, &train, &index, first, rows)?;
                            let step =
                                self.capture_step(&x.view(), &y, config.optimizer, config.learning_rate)?;
                            graph.insert(GraphRun { step, x, y })
                        }
                    };
                    copy_rows(&device, run.step.loss(), &mut losses, first)?;
                    copy_rows(&device, run.step.correct(), &mut correct, first)?;
                    progress.step(rows);
                    continue;
                }
                self.forward_backward(&train, &index, first, rows, rows, &mut losses, &mut correct)?;
                self.optimizer_step(config.optimizer, config.learning_rate)?;
                progress.step(rows);
            }
            let loss = sum(&device, &losses)? / train.n as f32;
            let accuracy = sum(&device, &correct)? / train.n as f32;
            let seconds = start.elapsed().as_secs_f64();
            let stats = EpochStats { epoch, loss, accuracy, test_loss: None, test_accuracy: None, seconds };
            self.end_epoch(stats, test.as_ref(), config.batch_size, &progress, &mut history)?;
        }
        progress.finish();
        Ok(history)
    }

    /// Ends an epoch of training: the model's figures on `test` when given (in batches of
    /// `batch_size`) join the epoch's `stats`, which are shown and kept in `history`.
    pub(super) fn end_epoch(
        &mut self,
        mut stats: EpochStats,
        test: Option<&Placed>,
        batch_size: usize,
        progress: &Progress,
        history: &mut History,
    ) -> Result<()> {
        if let Some(t) = test {
            let (loss, accuracy) = self.evaluate_placed(t, batch_size.max(1))?;
            (stats.test_loss, stats.test_accuracy) = (Some(loss), Some(accuracy));
        }
        progress.epoch_done(&stats);
        history.epochs.push(stats);
        Ok(())
    }

    /// Mean loss and accuracy of the model on `data` and `labels` (checked as for
    /// [`train`](Self::train)), in batches of `batch_size`, on the model's device.
    pub fn evaluate(&mut self, data: &[f32], labels: &[u32], batch_size: usize) -> Result<(f32, f32)> {
        let y = self.check_data("Network::evaluate", data, labels)?;
        let placed = self.placed(data, y)?;
        self.evaluate_placed(&placed, batch_size.max(1))
    }

    /// The class (first maximum of the logits) of each sample of `data` (`[n, inputs]`).
    pub fn predict(&mut self, data: &[f32]) -> Result<Vec<u32>> {
        let inputs = self.model.inputs();
        if data.len() % inputs != 0 {
            return Err(Error::Shape {
                op: "Network::predict",
                expected: format!("whole samples of {inputs} values"),
                got: format!("{} values", data.len()),
            });
        }
        let n = data.len() / inputs;
        let x = Tensor::from_vec(self.model.device(), data.to_vec(), &[n, inputs])?;
        let logits = self.model.forward(&x.view(), false)?.to_vec()?;
        let classes = self.model.outputs();
        Ok(logits
            .chunks_exact(classes)
            .map(|row| {
                row.iter()
                    .enumerate()
                    .fold((0, f32::NEG_INFINITY), |b, (i, &v)| if v > b.1 { (i, v) } else { b })
                    .0 as u32
            })
            .collect())
    }

    /// Forward and backward on the samples `order[first..first + rows]` of `set` (the epoch's order
    /// in `index`): their losses and correctness go to `losses` and `correct` at `first`, and the
    /// gradient of their summed loss divided by `grad_rows` to the model's gradient buffer (the
    /// batch's mean loss when `grad_rows` is `rows`). Queued on the device, no waiting.
    #[allow(clippy::too_many_arguments)] // one batch of one epoch, all of it needed
    pub(super) fn forward_backward(
        &mut self,
        set: &Placed,
        index: &IndexBuffer,
        first: usize,
        rows: usize,
        grad_rows: usize,
        losses: &mut Tensor,
        correct: &mut Tensor,
    ) -> Result<()> {
        let device = self.model.device().clone();
        let (xb, yb) = gather(&device, set, index, first, rows)?;
        let logits = self.model.forward(&xb.view(), true)?;
        let grad = xent_into(
            &device,
            &logits,
            &yb,
            0..rows,
            losses.range_mut(first..first + rows),
            correct.range_mut(first..first + rows),
            Some(grad_rows),
        )?
        .expect("asked for");
        self.model.backward(&xb.view(), grad)
    }

    /// One training step on a batch already on the model's device: forward, cross-entropy,
    /// backward and the optimiser, all queued on the device without waiting for it.
    pub fn train_step(
        &mut self,
        x: &TensorView<'_>,
        labels: &Labels,
        optimizer: Optimizer,
        lr: f32,
    ) -> Result<()> {
        self.step_body(x, labels, optimizer, lr, false, None)
    }

    /// Forward, cross-entropy, backward and the optimiser on a batch; the per-row loss and
    /// correctness go to `stats` when given (else to scratch), the step count to the device's
    /// schedule when `scheduled` (a step being captured).
    fn step_body(
        &mut self,
        x: &TensorView<'_>,
        labels: &Labels,
        optimizer: Optimizer,
        lr: f32,
        scheduled: bool,
        stats: Option<(&mut Tensor, &mut Tensor)>,
    ) -> Result<()> {
        let device = self.model.device().clone();
        let logits = self.model.forward(x, true)?;
        let rows = logits.shape()[0];
        let (mut own_loss, mut own_correct);
        let (loss, correct) = match stats {
            Some(s) => s,
            None => {
                own_loss = Tensor::scratch(&device, &[rows])?;
                own_correct = Tensor::scratch(&device, &[rows])?;
                (&mut own_loss, &mut own_correct)
            }
        };
        let grad = xent_into(
            &device,
            &logits,
            labels,
            0..rows,
            loss.range_mut(0..rows),
            correct.range_mut(0..rows),
            Some(rows),
        )?
        .expect("asked for");
        self.model.backward(x, grad)?;
        if scheduled {
            self.scheduled_optimizer_step(optimizer, lr)
        } else {
            self.optimizer_step(optimizer, lr)
        }
    }

    /// Captures one training step on `x` and `labels` (on a GPU device made by
    /// [`Device::gpu_for_graphs`]) into a CUDA graph; it reads those buffers at every replay and
    /// writes each sample's loss and correctness to [`CapturedStep::loss`] and
    /// [`CapturedStep::correct`]. One step runs eagerly first (it loads the
    /// kernels and sizes the optimiser state, as PyTorch's warm-up does), so the model has taken a
    /// step when this returns; each [`replay`](Self::replay) then takes another. Errors: the CPU
    /// fallback, a device on the default stream (which cannot be captured), and dropout (its masks
    /// would be frozen into the graph).
    pub fn capture_step(
        &mut self,
        x: &TensorView<'_>,
        labels: &Labels,
        optimizer: Optimizer,
        lr: f32,
    ) -> Result<CapturedStep> {
        use crate::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
        const OP: &str = "Network::capture_step";
        let device = self.model.device().clone();
        let stream = device.gpu_ops()?.stream().clone();
        if !device.for_graphs() {
            return Err(Error::Shape {
                op: OP,
                expected: "a device from Device::gpu_for_graphs".into(),
                got: "a device on the default stream, which cannot be captured".into(),
            });
        }
        if self.model.has_dropout() {
            return Err(Error::Shape {
                op: OP,
                expected: "a model without dropout".into(),
                got: "dropout, whose masks a graph would freeze".into(),
            });
        }
        let rows = x.matrix(OP, self.model.inputs())?;
        let mut loss = Tensor::scratch(&device, &[rows])?;
        let mut correct = Tensor::scratch(&device, &[rows])?;
        self.step_body(x, labels, optimizer, lr, false, Some((&mut loss, &mut correct)))?;
        self.model.clear_saved();
        let sched = Tensor::from_vec(
            &device,
            vec![self.step as f32, 0.0, 0.0, 0.0],
            &[crate::kernels::nn::SCHEDULE_LEN],
        )?;
        self.sched = Some((sched, self.step));
        stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        let body = self.step_body(x, labels, optimizer, lr, true, Some((&mut loss, &mut correct)));
        let graph =
            stream.end_capture(CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
        body?;
        let graph = graph?.ok_or_else(|| Error::Shape {
            op: OP,
            expected: "captured work".into(),
            got: "an empty graph".into(),
        })?;
        Ok(CapturedStep { graph, generation: self.model.generation(), loss, correct })
    }

    /// Runs a captured step once more (queued on the device, no waiting).
    pub fn replay(&mut self, step: &CapturedStep) -> Result<()> {
        if step.generation != self.model.generation() {
            return Err(Error::Shape {
                op: "Network::replay",
                expected: "the parameters the step was captured with".into(),
                got: "parameters replaced since (set_params, to_device): capture again".into(),
            });
        }
        let (sched, at) = self.sched.as_mut().ok_or_else(|| Error::Shape {
            op: "Network::replay",
            expected: "a captured step".into(),
            got: "none".into(),
        })?;
        if *at != self.step {
            // Eager steps ran since the capture: the device's step count catches up first.
            let ops = self.model.device().gpu_ops()?;
            let buf = sched.gpu_mut().ok_or_else(|| Error::Shape {
                op: "Network::replay",
                expected: "a GPU".into(),
                got: "the host".into(),
            })?;
            ops.stream().memcpy_htod(&[self.step as f32], &mut buf.slice_mut(0..1))?;
        }
        step.graph.launch()?;
        self.step += 1;
        *at = self.step;
        Ok(())
    }

    /// Moves the model (and optimiser state) to `device` unless it is there already.
    pub fn place(&mut self, device: &Device) -> Result<()> {
        let current = self.model.device();
        if current.is_gpu() != device.is_gpu() || current.for_graphs() != device.for_graphs() {
            self.model.to_device(device)?;
            if let Some((opt, state)) = self.state.take() {
                let n = state.len();
                self.state = Some((opt, Tensor::from_vec(device, state.to_vec()?, &[n])?));
            }
        }
        Ok(())
    }

    pub(super) fn optimizer_step(&mut self, opt: Optimizer, lr: f32) -> Result<()> {
        let device = self.model.device().clone();
        let n = self.model.params().len();
        if !matches!(&self.state, Some((o, s)) if std::mem::discriminant(o) == std::mem::discriminant(&opt) && s.len() == opt.state_len(n).unwrap_or(0))
        {
            self.state = Some((opt, Tensor::zeros(&device, &[opt.state_len(n)?])?));
            self.step = 0;
        }
        self.step += 1;
        let t = self.step;
        let (_, state) = self.state.as_mut().expect("set above");
        let (params, grads) = self.model.params_and_grads();
        match (&mut params.data, &grads.data, &mut state.data) {
            (Storage::Gpu(p), Storage::Gpu(g), Storage::Gpu(s)) => device.gpu_ops()?.optimizer_step(
                opt,
                lr,
                t,
                &mut p.as_view_mut(),
                &g.as_view(),
                &mut s.as_view_mut(),
            ),
            (Storage::Host(p), Storage::Host(g), Storage::Host(s)) => {
                device.runtime().optimizer_step(opt, lr, t, p, g, s)
            }
            _ => Err(Error::Shape {
                op: "optimizer step",
                expected: "state on the model's device".into(),
                got: "mixed".into(),
            }),
        }
    }

    /// The optimiser step with the step count on the device (for a captured graph).
    fn scheduled_optimizer_step(&mut self, opt: Optimizer, lr: f32) -> Result<()> {
        let device = self.model.device().clone();
        let missing = || Error::Shape {
            op: "Network::capture_step",
            expected: "optimiser state and schedule on the GPU".into(),
            got: "none".into(),
        };
        let (_, state) = self.state.as_mut().ok_or_else(missing)?;
        let (sched, _) = self.sched.as_mut().ok_or_else(missing)?;
        let (params, grads) = self.model.params_and_grads();
        match (&mut params.data, &grads.data, &mut state.data, &mut sched.data) {
            (Storage::Gpu(p), Storage::Gpu(g), Storage::Gpu(s), Storage::Gpu(t)) => {
                device.gpu_ops()?.optimizer_step_scheduled(
                    opt,
                    lr,
                    &mut p.as_view_mut(),
                    &g.as_view(),
                    &mut s.as_view_mut(),
                    &mut t.as_view_mut(),
                )
            }
            _ => Err(missing()),
        }
    }

    /// [`check_config`], then [`check_data`](Self::check_data) of the training set and of `test`:
    /// the labels of each as `i32`.
    #[allow(clippy::type_complexity)] // the two sets' labels, the test set's with its data
    pub(super) fn check_inputs<'t>(
        &self,
        op: &'static str,
        data: &[f32],
        labels: &[u32],
        test: Option<(&'t [f32], &[u32])>,
        config: &TrainingConfig,
    ) -> Result<(Vec<i32>, Option<(&'t [f32], Vec<i32>)>)> {
        check_config(op, config)?;
        let train = self.check_data(op, data, labels)?;
        let test = test.map(|(d, l)| self.check_data(op, d, l).map(|y| (d, y))).transpose()?;
        Ok((train, test))
    }

    fn check_data(&self, op: &'static str, data: &[f32], labels: &[u32]) -> Result<Vec<i32>> {
        let inputs = self.model.inputs();
        if data.is_empty() || data.len() % inputs != 0 || data.len() / inputs != labels.len() {
            return Err(Error::Shape {
                op,
                expected: format!("n > 0 samples of {inputs} values and n labels"),
                got: format!("{} values and {} labels", data.len(), labels.len()),
            });
        }
        if let Some(i) = data.iter().position(|v| !v.is_finite()) {
            return Err(Error::Shape {
                op,
                expected: "finite data".into(),
                got: format!("{} at index {i}", data[i]),
            });
        }
        check_labels(op, labels, self.model.outputs())
    }

    pub(super) fn placed(&self, data: &[f32], labels: Vec<i32>) -> Result<Placed> {
        let device = self.model.device();
        let n = labels.len();
        Ok(Placed {
            x: Tensor::from_vec(device, data.to_vec(), &[n, self.model.inputs()])?,
            y: Labels::placed(device, labels)?,
            n,
        })
    }

    pub(super) fn evaluate_placed(&mut self, set: &Placed, batch_size: usize) -> Result<(f32, f32)> {
        let device = self.model.device().clone();
        let mut losses = Tensor::zeros(&device, &[set.n])?;
        let mut correct = Tensor::zeros(&device, &[set.n])?;
        for first in (0..set.n).step_by(batch_size) {
            let rows = batch_size.min(set.n - first);
            let logits = self.model.forward(&set.x.rows(first, rows)?, false)?;
            xent_into(
                &device,
                &logits,
                &set.y,
                first..first + rows,
                losses.range_mut(first..first + rows),
                correct.range_mut(first..first + rows),
                None,
            )?;
        }
        Ok((sum(&device, &losses)? / set.n as f32, sum(&device, &correct)? / set.n as f32))
    }
}

/// A batch size above 0 and a finite learning rate above 0, else an error naming `op`.
fn check_config(op: &'static str, config: &TrainingConfig) -> Result<()> {
    if config.batch_size == 0 || !(config.learning_rate.is_finite() && config.learning_rate > 0.0) {
        return Err(Error::Shape {
            op,
            expected: "a batch size > 0 and a finite learning rate > 0".into(),
            got: format!("batch size {}, learning rate {}", config.batch_size, config.learning_rate),
        });
    }
    Ok(())
}

/// The device `config` asks for (reusing `current` when it is that kind).
fn pick_device(config: &TrainingConfig, current: &Device) -> Result<Device> {
    if !config.use_gpu {
        return Ok(if current.is_gpu() { Device::cpu() } else { current.clone() });
    }
    if current.is_gpu() && (current.for_graphs() || !config.cuda_graph) {
        return Ok(current.clone());
    }
    let gpu = if config.cuda_graph { Device::gpu_for_graphs(0) } else { Device::gpu(0) };
    match gpu {
        Ok(d) => Ok(d),
        Err(e) if config.prefer_gpu => {
            let _ = e;
            Ok(Device::auto())
        }
        Err(e) => Err(e),
    }
}

/// The sample order of one epoch: a Fisher-Yates shuffle driven by `rng`, or `0..n`.
pub fn batch_order(n: usize, shuffle: bool, rng: &mut SplitMix64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    if shuffle {
        for i in (1..n).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
    }
    order
}

/// An epoch's sample order where the gathers read it.
pub(super) enum IndexBuffer {
    Host(Vec<u32>),
    Gpu(CudaSlice<u32>),
}

impl IndexBuffer {
    pub(super) fn new(device: &Device, order: Vec<u32>) -> Result<Self> {
        Ok(if device.is_gpu() { Self::Gpu(device.gpu_ops()?.upload(&order)?) } else { Self::Host(order) })
    }
}

/// A captured step and the batch buffers it reads.
struct GraphRun {
    step: CapturedStep,
    x: Tensor,
    y: Labels,
}

/// Copies all of `src` to `dst` from element `at` on (device to device, or on the host).
fn copy_rows(device: &Device, src: &Tensor, dst: &mut Tensor, at: usize) -> Result<()> {
    let end = at + src.len();
    match (&src.data, dst.range_mut(at..end)) {
        (Storage::Gpu(s), crate::nn::tensor::BufMut::Gpu(mut d)) => {
            Ok(device.gpu_ops()?.stream().memcpy_dtod(s, &mut d)?)
        }
        (Storage::Host(s), crate::nn::tensor::BufMut::Host(d)) => {
            d.copy_from_slice(s);
            Ok(())
        }
        _ => Err(Error::Shape { op: "Network::train", expected: "one device".into(), got: "mixed".into() }),
    }
}

/// Gathers the batch `order[first..first + x.rows]` into the device buffers `x` and `y`.
fn gather_into(
    device: &Device,
    set: &Placed,
    index: &IndexBuffer,
    first: usize,
    x: &mut Tensor,
    y: &mut Labels,
) -> Result<()> {
    let cols = set.x.shape()[1];
    let rows = x.shape()[0];
    match (&set.x.data, &set.y.data, index, &mut x.data, &mut y.data) {
        (
            Storage::Gpu(sx),
            LabelStorage::Gpu(sy),
            IndexBuffer::Gpu(idx),
            Storage::Gpu(xb),
            LabelStorage::Gpu(yb),
        ) => {
            let ops = device.gpu_ops()?;
            let at = idx.slice(first..first + rows);
            ops.gather_rows(&sx.as_view(), &at, &mut xb.as_view_mut(), cols)?;
            ops.gather_rows(&sy.as_view(), &at, &mut yb.as_view_mut(), 1)
        }
        _ => Err(Error::Shape {
            op: "Network::train",
            expected: "data on the GPU".into(),
            got: "the host".into(),
        }),
    }
}

/// The batch of samples `order[first..first + rows]`: inputs and labels, on the device.
fn gather(
    device: &Device,
    set: &Placed,
    index: &IndexBuffer,
    first: usize,
    rows: usize,
) -> Result<(Tensor, Labels)> {
    let cols = set.x.shape()[1];
    match (&set.x.data, &set.y.data, index) {
        (Storage::Gpu(x), LabelStorage::Gpu(y), IndexBuffer::Gpu(idx)) => {
            let ops = device.gpu_ops()?;
            let at = idx.slice(first..first + rows);
            // SAFETY: the gathers below write every element of both buffers.
            let (mut xb, mut yb) =
                unsafe { (ops.stream().alloc::<f32>(rows * cols)?, ops.stream().alloc::<i32>(rows)?) };
            ops.gather_rows(&x.as_view(), &at, &mut xb.as_view_mut(), cols)?;
            ops.gather_rows(&y.as_view(), &at, &mut yb.as_view_mut(), 1)?;
            Ok((
                Tensor::from_storage(Storage::Gpu(xb), vec![rows, cols]),
                Labels { data: LabelStorage::Gpu(yb) },
            ))
        }
        (Storage::Host(x), LabelStorage::Host(y), IndexBuffer::Host(idx)) => {
            let rt = device.runtime();
            let at = &idx[first..first + rows];
            let xb = rt.gather_rows(x, at, cols)?;
            let yb = rt.gather_rows(y, at, 1)?;
            Ok((
                Tensor::from_storage(Storage::Host(xb), vec![rows, cols]),
                Labels { data: LabelStorage::Host(yb) },
            ))
        }
        _ => Err(Error::Shape {
            op: "Network::train",
            expected: "data on the model's device".into(),
            got: "mixed".into(),
        }),
    }
}
