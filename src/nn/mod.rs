//! Neural networks on the runtime: [`Tensor`]s on a GPU (or the host, with the CPU fallback),
//! layers with explicit forward and backward passes ([`Sequential`]: dense layers, activations,
//! dropout), fused losses ([`softmax_cross_entropy`], [`mse`]), fused optimisers
//! ([`Optimizer`](crate::ops::nn::Optimizer): SGD with momentum, Adam, AdamW, one launch over all parameters), training
//! ([`Network::train`]), data-parallel over several GPUs with the `nccl` feature (`DataParallel`);
//! with the `nn-io` feature, weights in safetensors
//! (`Sequential::save_safetensors`) and MNIST-format data (`idx`, gzip too).
//!
//! Built on the public [`ProductionGpuRuntime`](crate::ProductionGpuRuntime) API only. The same
//! seed gives the same initial weights, batch order and dropout masks on GPU and CPU.
//!
//! The activation and optimiser types have one path each, with their operations:
//! [`ops::activations::Activation`](crate::ops::activations::Activation) and
//! [`ops::nn::Optimizer`](crate::ops::nn::Optimizer).
//!
//! ```
//! use prism_gpu::nn::{Device, Network, Sequential, TrainingConfig};
//! # fn main() -> prism_gpu::Result<()> {
//! // Two classes: is x0 + x1 > 1?
//! let data: Vec<f32> = (0..256).flat_map(|i| [(i % 16) as f32 / 15.0, (i / 16) as f32 / 15.0]).collect();
//! let labels: Vec<u32> = data.chunks(2).map(|p| u32::from(p[0] + p[1] > 1.0)).collect();
//! let model = Sequential::builder(2).linear(16).relu().linear(2).build(&Device::cpu(), 7)?;
//! let mut net = Network::new(model);
//! let config = TrainingConfig { epochs: 30, batch_size: 32, learning_rate: 1e-2, use_gpu: false, ..Default::default() };
//! let history = net.train(&data, &labels, &config)?;
//! assert!(history.epochs.last().unwrap().loss < history.epochs[0].loss);
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "nn-io")]
pub mod idx;
mod loss;
mod model;
#[cfg(all(feature = "nccl", not(feature = "legacy-gpu")))]
mod parallel;
mod progress;
mod tensor;
mod train;
#[cfg(feature = "nn-io")]
mod weights;

pub use loss::{mse, softmax_cross_entropy, Labels, LossOutput};
pub use model::{Layer, Linear, Sequential, SequentialBuilder};
#[cfg(all(feature = "nccl", not(feature = "legacy-gpu")))]
pub use parallel::DataParallel;
pub use tensor::{Device, Tensor, TensorView};
pub use train::{batch_order, CapturedStep, EpochStats, History, Network, TrainingConfig};
#[cfg(feature = "nn-io")]
pub use weights::WeightsError;
