//! The high-level runtime: [`ProductionGpuRuntime`] runs each operation with the built-in kernels on
//! a GPU, or with [`cpu`](crate::raw::cpu) when no GPU is usable or the caller asks for the CPU.
//!
//! Operations on host slices return a `Vec`; the same operations on device buffers are on
//! [`GpuOps`] (`runtime.gpu()?`). Shapes are checked before anything runs: a mismatch is
//! [`Error::Shape`], and empty inputs give empty results without a launch. The GPU and CPU results
//! agree to the tolerance each operation states, measured against an f64 reference as
//! `|got - want| / max(1, |want|)` (sums and dot products: relative to the sum of the terms'
//! magnitudes). The host-slice operations are in one file per family, named as in `ops/`.

mod activations;
mod convert;
mod elementwise;
mod gemv;
mod gpu;
mod matmul;
mod neuromorphic;
mod nn;
mod norms;
mod random;
mod reductions;
mod softmax;
mod transpose;

// cudarc's `runtime` module (the CUDA runtime API, feature `runtime`) shares this module's name and is
// not provided: its entry points exist here under cudarc's paths and calling one is a compile error.
#[cfg(feature = "runtime")]
crate::unprovided::unprovided!(@here [crate::runtime::NotProvided], "prism-gpu does not provide cudarc::runtime (the CUDA runtime API, cudart); prism_gpu::runtime is prism-gpu's own runtime" {
    pub mod result {
        pub enum RuntimeError;
        pub mod version {
            pub fn get() -> Result<i32, super::RuntimeError>;
            pub fn get_runtime_version() -> Result<i32, super::RuntimeError>;
            pub fn get_driver_version() -> Result<i32, super::RuntimeError>;
        }
        pub mod device {
            pub fn get_count() -> Result<i32, super::RuntimeError>;
            pub fn set(ordinal) -> Result<(), super::RuntimeError>;
            pub fn get() -> Result<i32, super::RuntimeError>;
        }
    }
});

use std::sync::{Arc, OnceLock};

use crate::driver::{CudaContext, CudaSlice};
use crate::error::{Error, Result};
use crate::ops::activations::Activation;
use crate::ops::{Map, Update};

pub use gpu::{ChannelStats, GpuOps};
#[allow(deprecated)] // the deprecated seed function keeps its path until it is removed
pub use matmul::matrix_multiply;
pub use matmul::sgemm;
pub use nn::RowLosses;
pub use norms::RunningStats;

/// Where a runtime's operations run. The GPU side is boxed: its stream, kernels and workspace are
/// large beside the CPU side's reason.
enum Backend {
    Gpu(Box<GpuOps>),
    Cpu { reason: String },
}

/// GPU-accelerated operations with a CPU fallback that gives the same answers.
///
/// [`initialize`](Self::initialize) takes device 0 when it is usable and the CPU fallback
/// otherwise; [`cpu`](Self::cpu) asks for the CPU (as here, so the example runs anywhere). Host
/// slices go in and a `Vec` comes out; shapes are checked first.
///
/// ```
/// use prism_gpu::ProductionGpuRuntime;
/// # fn main() -> prism_gpu::Result<()> {
/// let rt = ProductionGpuRuntime::cpu(); // or ProductionGpuRuntime::initialize()?
/// assert!(!rt.is_gpu());
/// let sum = rt.add(&[1.0, 2.0, 3.0], &[0.5, 0.5, 0.5])?;
/// assert_eq!(sum, [1.5, 2.5, 3.5]);
/// assert_eq!(rt.relu(&[-1.0, 0.0, 2.0])?, [0.0, 0.0, 2.0]);
/// // Lengths that do not match are an error, not a panic.
/// assert!(rt.add(&[1.0], &[1.0, 2.0]).is_err());
/// # Ok(())
/// # }
/// ```
pub struct ProductionGpuRuntime {
    backend: Backend,
}

impl ProductionGpuRuntime {
    /// Device 0, or the CPU fallback when no GPU is usable (the reason is logged once per process).
    pub fn initialize() -> Result<Self> {
        match Self::with_device(0) {
            Ok(runtime) => Ok(runtime),
            Err(err) => {
                static LOGGED: OnceLock<()> = OnceLock::new();
                LOGGED.get_or_init(|| eprintln!("prism-gpu: no usable GPU ({err}); using the CPU fallback"));
                Ok(Self::cpu_because(err.to_string()))
            }
        }
    }

    /// Device `ordinal`; an error when it is not usable.
    pub fn with_device(ordinal: usize) -> Result<Self> {
        let ctx = CudaContext::new(ordinal)?;
        Ok(Self { backend: Backend::Gpu(Box::new(GpuOps::new(ctx)?)) })
    }

    /// Device `ordinal` with the operations on a new stream of their own rather than the default
    /// stream, so that their work can be captured into a CUDA graph.
    pub fn with_device_stream(ordinal: usize) -> Result<Self> {
        let ctx = CudaContext::new(ordinal)?;
        let stream = ctx.new_stream()?;
        Ok(Self { backend: Backend::Gpu(Box::new(GpuOps::with_stream(stream)?)) })
    }

    /// The CPU fallback, by choice.
    pub fn cpu() -> Self {
        Self::cpu_because("the CPU was asked for".into())
    }

    fn cpu_because(reason: String) -> Self {
        Self { backend: Backend::Cpu { reason } }
    }

    /// `true` when operations run on a GPU.
    pub fn is_gpu(&self) -> bool {
        matches!(self.backend, Backend::Gpu(_))
    }

    /// What the operations run on, for people: the device's name, or why the CPU is used.
    pub fn describe(&self) -> String {
        match &self.backend {
            Backend::Gpu(gpu) => {
                let ctx = gpu.kernels().context();
                format!(
                    "GPU {} ({})",
                    ctx.ordinal(),
                    ctx.name().unwrap_or_else(|e| format!("name unknown: {e}"))
                )
            }
            Backend::Cpu { reason } => format!("CPU fallback ({reason})"),
        }
    }

    /// The device-buffer operations, or [`Error::NoGpu`] on the CPU fallback.
    pub fn gpu(&self) -> Result<&GpuOps> {
        self.gpu_for("gpu")
    }

    fn gpu_for(&self, op: &'static str) -> Result<&GpuOps> {
        match &self.backend {
            Backend::Gpu(gpu) => Ok(gpu),
            Backend::Cpu { reason } => Err(Error::NoGpu { op, reason: reason.clone() }),
        }
    }

    /// Device-memory statistics (in use, reserved, peak, allocation retries, out-of-memory
    /// failures), on a GPU. Our engine only (cudarc keeps no such account).
    #[cfg(not(feature = "legacy-gpu"))]
    pub fn memory_stats(&self) -> Result<crate::driver::MemoryStats> {
        Ok(self.gpu_for("memory_stats")?.kernels().context().memory_stats()?)
    }

    /// After a kernel fault ([`Error::ContextFaulted`]): resets the device's primary context,
    /// which destroys everything in it, and starts afresh (the kernels load again on first use).
    /// Where the driver refuses the device after the reset (CUDA documents an illegal address as
    /// leaving the whole process unusable for CUDA; the H100 behaves so), the runtime continues on
    /// the CPU fallback. Returns what it did, for the log; on a healthy runtime it does nothing and
    /// says so.
    /// Buffers and other handles made before the reset become inert: their calls fail with
    /// `CUDA_ERROR_CONTEXT_IS_DESTROYED` and dropping them frees nothing.
    ///
    /// Our engine only (it relies on contexts made before the reset turning inert).
    ///
    /// # Safety
    /// No other thread may be inside a call on this device's primary context (through any
    /// runtime or context object) while this runs, and buffers made before it must not be
    /// handed to the driver API's copies with a stream made after it (the runtime's own entry
    /// points refuse them); see [`CudaContext::reset_primary`].
    #[cfg(not(feature = "legacy-gpu"))]
    pub unsafe fn recover(&mut self) -> Result<String> {
        let Backend::Gpu(gpu) = &self.backend else {
            return Ok(format!("{}: no fault to recover from", self.describe()));
        };
        let Some(first) = gpu.fault() else {
            return Ok(format!("{}: no fault to recover from", self.describe()));
        };
        let ctx = gpu.kernels().context().clone();
        let ordinal = ctx.ordinal();
        // Our handles go first (their frees fail quietly in the faulted context).
        self.backend = Backend::Cpu { reason: format!("recovering device {ordinal}") };
        // SAFETY: the caller guarantees no call is in flight on this primary context; handles made
        // before become inert (reset_primary marks them stale).
        unsafe { ctx.reset_primary() }?;
        drop(ctx);
        let fault = crate::error::result_name(first);
        let said = match Self::with_device(ordinal) {
            Ok(fresh) => {
                self.backend = fresh.backend;
                format!(
                    "prism-gpu: reset the primary context of device {ordinal} after a kernel fault ({fault}); kernels reload on first use"
                )
            }
            // CUDA documents some faults (an illegal address among them) as leaving the whole
            // process inconsistent: the device cannot be used again until the process restarts.
            Err(e) => {
                let reason = format!(
                    "device {ordinal} cannot be reopened in this process after a kernel fault ({fault}; after the reset: {e}); restart the process to use the GPU again"
                );
                let said = format!("prism-gpu: reset the primary context of device {ordinal}, but {reason}; continuing on the CPU fallback");
                self.backend = Backend::Cpu { reason };
                said
            }
        };
        eprintln!("{said}");
        Ok(said)
    }

    /// The context, on a GPU.
    pub fn context(&self) -> Result<&Arc<CudaContext>> {
        Ok(self.gpu_for("context")?.kernels().context())
    }

    /// Raw access to any built-in kernel by entry-point name.
    pub fn get_kernel(&self, name: &str) -> Result<crate::driver::CudaFunction> {
        self.gpu_for("get_kernel")?.kernels().function(name)
    }

    /// The host-slice path of every [`Map`] operation: checks; then upload → launch → download on
    /// a GPU, or the CPU body. An empty output is returned without a launch.
    fn map<const N: usize, M: Map<N>>(&self, op: M, inputs: [&[M::In]; N]) -> Result<Vec<M::Out>> {
        let len = op.check(inputs.map(<[M::In]>::len))?;
        if len == 0 {
            return Ok(Vec::new());
        }
        match &self.backend {
            Backend::Gpu(gpu) => gpu.host(|g| g.download(&g.map(op, g.upload_all(inputs)?.each_ref())?)),
            Backend::Cpu { .. } => op.cpu(inputs, len),
        }
    }

    /// The host-slice path of every [`Update`] operation: checks; then upload → launch → download
    /// into `x` on a GPU, or the CPU body. Nothing runs when `x` is empty.
    fn update<const N: usize, U: Update<N>>(
        &self,
        op: U,
        x: &mut [U::Elem],
        inputs: [&[U::In]; N],
    ) -> Result<()> {
        op.check(x.len(), inputs.map(<[U::In]>::len))?;
        if x.is_empty() {
            return Ok(());
        }
        match &self.backend {
            Backend::Gpu(gpu) => gpu.host(|g| {
                let mut d = g.upload(x)?;
                g.update(op, &mut d, g.upload_all(inputs)?.each_ref())?;
                Ok(g.stream().memcpy_dtoh(&d, x)?)
            }),
            Backend::Cpu { .. } => {
                op.cpu(x, inputs);
                Ok(())
            }
        }
    }

    /// Runs `gpu` on the device (binding the context to this thread) or `cpu` on the fallback.
    fn dispatch<T>(&self, gpu: impl FnOnce(&GpuOps) -> Result<T>, cpu: impl FnOnce() -> T) -> Result<T> {
        match &self.backend {
            Backend::Gpu(ops) => ops.host(gpu),
            Backend::Cpu { .. } => Ok(cpu()),
        }
    }
}

/// A device copy of an optional operand.
fn upload_opt(g: &GpuOps, v: Option<&[f32]>) -> Result<Option<CudaSlice<f32>>> {
    v.map(|v| g.upload(v)).transpose()
}

/// The process-wide runtime under the seed executor's name (see [`runtime`]).
pub fn get_global_executor() -> &'static ProductionGpuRuntime {
    runtime()
}

/// ReLU in place on the process-wide runtime (the seed executor's entry point).
pub fn relu_inplace(data: &mut [f32]) -> Result<()> {
    runtime().activation_inplace(Activation::Relu, data)
}

/// The process-wide runtime, created on first use by [`ProductionGpuRuntime::initialize`].
pub fn runtime() -> &'static ProductionGpuRuntime {
    static RUNTIME: OnceLock<ProductionGpuRuntime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        ProductionGpuRuntime::initialize()
            .unwrap_or_else(|e| ProductionGpuRuntime::cpu_because(e.to_string()))
    })
}
