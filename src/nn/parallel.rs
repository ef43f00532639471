//! [`DataParallel`]: data-parallel training over the GPUs of one host through NCCL.

use std::time::Instant;

use crate::error::{Error, Result};
use crate::nccl::{group_end, group_start, Comm, ReduceOp};
use crate::nn::loss::sum;
use crate::nn::model::Sequential;
use crate::nn::progress::Progress;
use crate::nn::tensor::{Device, Tensor};
use crate::nn::train::{batch_order, IndexBuffer, Placed};
use crate::nn::{EpochStats, History, Network, TrainingConfig};
use crate::rng::SplitMix64;

/// Replicas of a model on the GPUs of one host, trained data-parallel. One [`Network`] replica per
/// GPU takes its share of every global batch; after the backward passes the replicas' gradients
/// are summed through NCCL (one all-reduce over the flat gradient buffer), and each replica takes
/// the same optimiser step, so the replicas stay identical and the run follows one GPU training
/// with the same global batch up to the order of floating-point sums (a single replica trains bit
/// for bit as [`Network::train`]).
///
/// A step of a global batch of `rows` samples gives replica `r` the `r`-th of `world` consecutive
/// runs of its rows (the first `rows % world` replicas one row more than the others), and each
/// replica scales its loss gradient by `1 / rows` (not by its own row count): the all-reduced sum
/// is then exactly the gradient of the global batch's mean loss, also when the shards differ in
/// size. With equal shards this is the usual "sum, then divide by the world size".
///
/// Each replica holds the whole data set on its GPU. Dropout masks are drawn per replica, from a
/// stream of its own. Not `Send`: the communicators belong to the thread that made them, which
/// drives every replica.
///
/// NCCL reads its settings from the environment when the communicators are made: on machines
/// whose GPUs must not use NVLink multicast, set `NCCL_NVLS_ENABLE=0` before calling
/// [`DataParallel::new`].
///
/// ```no_run
/// use prism_gpu::driver::CudaContext;
/// use prism_gpu::nn::{DataParallel, Device, Sequential, TrainingConfig};
/// # fn main() -> prism_gpu::Result<()> {
/// // Two classes: is x0 + x1 > 1?
/// let data: Vec<f32> = (0..4096).flat_map(|i| [(i % 64) as f32 / 63.0, (i / 64) as f32 / 63.0]).collect();
/// let labels: Vec<u32> = data.chunks(2).map(|p| u32::from(p[0] + p[1] > 1.0)).collect();
/// let model = Sequential::builder(2).linear(16).relu().linear(2).build(&Device::cpu(), 7)?;
/// let gpus: Vec<usize> = (0..CudaContext::device_count()? as usize).collect();
/// let mut parallel = DataParallel::new(&model, &gpus)?;
/// let config = TrainingConfig { epochs: 5, batch_size: 256, learning_rate: 1e-2, ..Default::default() };
/// let history = parallel.train(&data, &labels, None, &config)?;
/// assert!(history.epochs.last().unwrap().loss < history.epochs[0].loss);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct DataParallel {
    // Dropped first: the communicators go before the gradient buffers they reduce.
    comms: Vec<Comm>,
    replicas: Vec<Network>,
}

impl DataParallel {
    /// Replicas of `model` (its parameters, copied) on GPUs `ordinals`, with one NCCL communicator
    /// each (`ncclCommInitAll`, from this thread). Errors: no ordinal or one listed twice, a GPU
    /// that is not usable, NCCL missing or failing.
    pub fn new(model: &Sequential, ordinals: &[usize]) -> Result<Self> {
        const OP: &str = "DataParallel::new";
        let mut sorted = ordinals.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        if ordinals.is_empty() || sorted.len() != ordinals.len() {
            return Err(Error::Shape {
                op: OP,
                expected: "at least one GPU ordinal, none twice".into(),
                got: format!("{ordinals:?}"),
            });
        }
        let mut replicas = Vec::with_capacity(ordinals.len());
        let mut streams = Vec::with_capacity(ordinals.len());
        for (r, &ordinal) in ordinals.iter().enumerate() {
            let device = Device::gpu(ordinal)?;
            streams.push(device.gpu_ops()?.stream().clone());
            replicas.push(Network::new(model.replica(&device, r)?));
        }
        let comms = Comm::from_devices(streams)?;
        Ok(Self { comms, replicas })
    }

    /// The number of replicas (GPUs).
    pub fn world_size(&self) -> usize {
        self.replicas.len()
    }

    /// The replicas, in the order of the ordinals given to [`new`](Self::new). After training they
    /// hold the same parameters.
    pub fn replicas(&self) -> &[Network] {
        &self.replicas
    }

    /// Mean loss and accuracy on `data` and `labels`, on the first replica (as
    /// [`Network::evaluate`]).
    pub fn evaluate(&mut self, data: &[f32], labels: &[u32], batch_size: usize) -> Result<(f32, f32)> {
        self.replicas[0].evaluate(data, labels, batch_size)
    }

    /// Trains the replicas on `data` (`[n, inputs]` row-major) and `labels` as `config` says, with
    /// `config.batch_size` the global batch, evaluating the first replica on `test` (data, labels)
    /// after every epoch when given. Errors: those of [`Network::train_with_test`], and
    /// `cuda_graph` (steps are not captured here). `use_gpu` and `prefer_gpu` are not read: the
    /// replicas are on their GPUs.
    pub fn train(
        &mut self,
        data: &[f32],
        labels: &[u32],
        test: Option<(&[f32], &[u32])>,
        config: &TrainingConfig,
    ) -> Result<History> {
        const OP: &str = "DataParallel::train";
        let (train_host, test_host) = self.replicas[0].check_inputs(OP, data, labels, test, config)?;
        if config.cuda_graph {
            return Err(Error::Shape {
                op: OP,
                expected: "cuda_graph off (steps are not captured across GPUs)".into(),
                got: "cuda_graph on".into(),
            });
        }
        let mut sets = Vec::with_capacity(self.world_size());
        for replica in &mut self.replicas {
            replica.model_mut().set_precision(config.precision);
            sets.push(replica.placed(data, train_host.clone())?);
        }
        let test = test_host.map(|(d, y)| self.replicas[0].placed(d, y)).transpose()?;
        let n = sets[0].n;
        let world = self.world_size();
        let devices: Vec<Device> = self.replicas.iter().map(|r| r.model().device().clone()).collect();
        let mut losses = devices.iter().map(|d| Tensor::zeros(d, &[n])).collect::<Result<Vec<_>>>()?;
        let mut correct = devices.iter().map(|d| Tensor::zeros(d, &[n])).collect::<Result<Vec<_>>>()?;
        let described: Vec<String> = devices.iter().map(Device::describe).collect();
        let mut history = History {
            device: format!("{world} GPUs, data-parallel: {}", described.join("; ")),
            epochs: Vec::with_capacity(config.epochs),
        };
        let progress = Progress::new(config.progress, config.epochs, n);
        let mut rng = SplitMix64::new(config.seed);
        for epoch in 1..=config.epochs {
            let order = batch_order(n, config.shuffle, &mut rng);
            let start = Instant::now();
            let index =
                devices.iter().map(|d| IndexBuffer::new(d, order.clone())).collect::<Result<Vec<_>>>()?;
            for first in (0..n).step_by(config.batch_size) {
                let rows = config.batch_size.min(n - first);
                self.step(&sets, &index, first, rows, &mut losses, &mut correct, config)?;
                progress.step(rows);
            }
            let (mut loss, mut accuracy) = (0.0, 0.0);
            for (d, (l, c)) in devices.iter().zip(losses.iter().zip(&correct)) {
                loss += sum(d, l)?;
                accuracy += sum(d, c)?;
            }
            let (loss, accuracy) = (loss / n as f32, accuracy / n as f32);
            let seconds = start.elapsed().as_secs_f64();
            let stats = EpochStats { epoch, loss, accuracy, test_loss: None, test_accuracy: None, seconds };
            self.replicas[0].end_epoch(stats, test.as_ref(), config.batch_size, &progress, &mut history)?;
        }
        progress.finish();
        Ok(history)
    }

    /// One global batch, `order[first..first + rows]`: each replica's forward and backward on its
    /// shard, the gradients summed over the replicas, the optimiser step on each.
    #[allow(clippy::too_many_arguments)] // one batch of one epoch, all of it needed
    fn step(
        &mut self,
        sets: &[Placed],
        index: &[IndexBuffer],
        first: usize,
        rows: usize,
        losses: &mut [Tensor],
        correct: &mut [Tensor],
        config: &TrainingConfig,
    ) -> Result<()> {
        let world = self.world_size();
        for (r, replica) in self.replicas.iter_mut().enumerate() {
            let (offset, len) = shard(rows, r, world);
            if len == 0 {
                // Fewer rows than replicas (an epoch's last batch): this one adds nothing.
                replica.model_mut().zero_grads()?;
                continue;
            }
            replica.forward_backward(
                &sets[r],
                &index[r],
                first + offset,
                len,
                rows,
                &mut losses[r],
                &mut correct[r],
            )?;
        }
        self.all_reduce_grads()?;
        for replica in &mut self.replicas {
            replica.optimizer_step(config.optimizer, config.learning_rate)?;
        }
        Ok(())
    }

    /// Sums the replicas' gradient buffers in place, on every replica (one NCCL group: this thread
    /// drives every communicator, which NCCL allows only inside a group).
    fn all_reduce_grads(&mut self) -> Result<()> {
        group_start()?;
        let enqueued = self.replicas.iter_mut().zip(&self.comms).try_for_each(|(replica, comm)| {
            let grads = replica.model_mut().grads_mut().gpu_mut().ok_or_else(|| Error::Shape {
                op: "DataParallel::train",
                expected: "gradients on a GPU".into(),
                got: "gradients on the host".into(),
            })?;
            comm.all_reduce_in_place(grads, &ReduceOp::Sum)?;
            Ok::<_, Error>(())
        });
        // The group is closed whatever happened inside it.
        let ended = group_end();
        enqueued?;
        ended?;
        Ok(())
    }
}

/// Replica `r`'s rows of a batch of `rows` split over `world` replicas, as (offset in the batch,
/// count): the first `rows % world` replicas take one row more than the others.
fn shard(rows: usize, r: usize, world: usize) -> (usize, usize) {
    let (base, extra) = (rows / world, rows % world);
    (r * base + r.min(extra), base + usize::from(r < extra))
}

#[cfg(test)]
mod tests {
    use super::shard;

    #[test]
    fn shards_cover_a_batch_once_in_order() {
        for world in 1..=8 {
            for rows in 0..40 {
                let mut next = 0;
                for r in 0..world {
                    let (offset, len) = shard(rows, r, world);
                    assert_eq!(offset, next, "rows {rows}, world {world}, replica {r}");
                    assert!(len == rows / world || len == rows / world + 1);
                    next += len;
                }
                assert_eq!(next, rows, "rows {rows}, world {world}");
            }
        }
    }
}
