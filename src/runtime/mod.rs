//! The high-level runtime: [`ProductionGpuRuntime`] runs each operation with the built-in kernels on
//! a GPU, or with [`cpu`] when no GPU is usable or the caller asks for the CPU.
//!
//! Operations on host slices return a `Vec`; the same operations on device buffers are on
//! [`GpuOps`] (`runtime.gpu()?`). Shapes are checked before anything runs: a mismatch is
//! [`Error::Shape`], and empty inputs give empty results without a launch.

mod gpu;
mod matmul;
mod nn;

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

use half::{bf16, f16};

use crate::cpu;
use crate::driver::{CudaContext, CudaSlice};
use crate::error::{Error, Result};
use crate::kernels::neuromorphic::DeviceReservoir;
use crate::ops::activations::{Activation, Backward};
use crate::ops::convert;
use crate::ops::elementwise::{Axpy, Binary, Fill, Scale};
use crate::ops::gemv::{self, Gemv};
use crate::ops::neuromorphic::{LeakyIntegration, MatvecInput, Patterns, Reservoir, SpikeEncode};
use crate::ops::norms::{self, Nchw, Norm};
use crate::ops::random::{Gaussian, Philox, Uniform};
use crate::ops::reductions::{self, Argmax, Reduce, RowArgmax};
use crate::ops::shape;
use crate::ops::softmax::{self, Softmax};
use crate::ops::transpose::Transpose;
use crate::ops::{Map, Update};

pub use gpu::{ChannelStats, GpuOps};
#[allow(deprecated)] // the deprecated seed function keeps its path until it is removed
pub use matmul::matrix_multiply;
pub use matmul::sgemm;
pub use nn::RowLosses;

/// Where a runtime's operations run.
enum Backend {
    Gpu(GpuOps),
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
        Ok(Self { backend: Backend::Gpu(GpuOps::new(ctx)?) })
    }

    /// Device `ordinal` with the operations on a new stream of their own rather than the default
    /// stream, so that their work can be captured into a CUDA graph.
    pub fn with_device_stream(ordinal: usize) -> Result<Self> {
        let ctx = CudaContext::new(ordinal)?;
        let stream = ctx.new_stream()?;
        Ok(Self { backend: Backend::Gpu(GpuOps::with_stream(stream)?) })
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

    /// `a + b` elementwise; `a` and `b` must have the same length.
    ///
    /// ```
    /// # let rt = prism_gpu::ProductionGpuRuntime::cpu();
    /// assert_eq!(rt.add(&[1.0, -2.0], &[0.25, 2.0])?, [1.25, 0.0]);
    /// # Ok::<(), prism_gpu::Error>(())
    /// ```
    pub fn add(&self, a: &[f32], b: &[f32]) -> Result<Vec<f32>> {
        self.map(Binary::Add, [a, b])
    }
    /// `a - b` elementwise.
    pub fn sub(&self, a: &[f32], b: &[f32]) -> Result<Vec<f32>> {
        self.map(Binary::Sub, [a, b])
    }
    /// `a * b` elementwise.
    pub fn mul(&self, a: &[f32], b: &[f32]) -> Result<Vec<f32>> {
        self.map(Binary::Mul, [a, b])
    }
    /// `a / b` elementwise.
    pub fn div(&self, a: &[f32], b: &[f32]) -> Result<Vec<f32>> {
        self.map(Binary::Div, [a, b])
    }

    /// `alpha * x + y`.
    pub fn axpy(&self, alpha: f32, x: &[f32], y: &[f32]) -> Result<Vec<f32>> {
        self.map(Axpy(alpha), [x, y])
    }

    /// `alpha * x`.
    pub fn scale(&self, alpha: f32, x: &[f32]) -> Result<Vec<f32>> {
        self.map(Scale(alpha), [x])
    }

    /// `n` copies of `value`.
    pub fn fill(&self, n: usize, value: f32) -> Result<Vec<f32>> {
        self.map(Fill { len: n, value }, [])
    }

    /// `n` uniform f32 in (0, 1] from the Philox4x32-10 stream at `at` (see
    /// [`kernels::random`](crate::kernels::random)); the next fill of the stream starts at
    /// `at.after::<f32>(n)`. Bit-identical on GPU and CPU.
    pub fn rand_uniform(&self, n: usize, at: Philox) -> Result<Vec<f32>> {
        self.map(Uniform { len: n, at }, [])
    }

    /// `n` f32 from `N(mean, std^2)` (Box-Muller on the Philox stream at `at`, any `n`); the next
    /// fill starts at `at.after::<f32>(n)`. GPU and CPU agree to 1 ulp.
    pub fn rand_normal(&self, n: usize, mean: f32, std: f32, at: Philox) -> Result<Vec<f32>> {
        self.map(Gaussian { len: n, mean, std, at }, [])
    }
}

/// Running statistics on the host that a batch-norm training step updates:
/// `r = (1 - momentum) * r + momentum * stat`, with the unbiased variance for `var`.
#[derive(Debug)]
pub struct RunningStats<'a> {
    /// Running mean (`c` elements).
    pub mean: &'a mut [f32],
    /// Running variance (`c` elements).
    pub var: &'a mut [f32],
    /// The weight of the new statistics.
    pub momentum: f32,
}

/// The operations beyond GEMM and the elementwise arithmetic, on host slices. Each checks its
/// shapes first ([`Error::Shape`]); empty inputs give empty outputs without a launch. The GPU and
/// CPU results agree to the tolerance each operation states, measured against an f64 reference
/// as `|got - want| / max(1, |want|)` (sums and dot products: relative to the sum of the terms'
/// magnitudes).
impl ProductionGpuRuntime {
    /// Runs `gpu` on the device (binding the context to this thread) or `cpu` on the fallback.
    fn dispatch<T>(&self, gpu: impl FnOnce(&GpuOps) -> Result<T>, cpu: impl FnOnce() -> T) -> Result<T> {
        match &self.backend {
            Backend::Gpu(ops) => ops.host(gpu),
            Backend::Cpu { .. } => Ok(cpu()),
        }
    }

    // -----------------------------------------------------------------------------------------
    // conversions: round to nearest even; GPU and CPU bit-identical.

    /// `x` as f16 (round to nearest even; beyond ±65504 infinity). Bit-identical on GPU and CPU.
    pub fn f32_to_f16(&self, x: &[f32]) -> Result<Vec<f16>> {
        self.map(convert::F32_TO_F16, [x])
    }

    /// `x` as f32 (exact).
    pub fn f16_to_f32(&self, x: &[f16]) -> Result<Vec<f32>> {
        self.map(convert::F16_TO_F32, [x])
    }

    /// `x` as bf16 (round to nearest even). Bit-identical on GPU and CPU.
    pub fn f32_to_bf16(&self, x: &[f32]) -> Result<Vec<bf16>> {
        self.map(convert::F32_TO_BF16, [x])
    }

    /// `x` as f32 (exact).
    pub fn bf16_to_f32(&self, x: &[bf16]) -> Result<Vec<f32>> {
        self.map(convert::BF16_TO_F32, [x])
    }

    /// `x` as f64 (exact).
    pub fn f32_to_f64(&self, x: &[f32]) -> Result<Vec<f64>> {
        self.map(convert::F32_TO_F64, [x])
    }

    // -----------------------------------------------------------------------------------------
    // activations

    /// `f(x)` elementwise. ReLU and leaky ReLU are exact; sigmoid, tanh and GELU use the device's
    /// `expf`/`tanhf` on the GPU and Rust's on the CPU: within 2e-6 of the f64 reference.
    pub fn activation(&self, act: Activation, x: &[f32]) -> Result<Vec<f32>> {
        self.map(act, [x])
    }

    /// `x = f(x)` in place (tolerances as [`activation`](Self::activation)).
    pub fn activation_inplace(&self, act: Activation, x: &mut [f32]) -> Result<()> {
        self.update(act, x, [])
    }

    /// `dy * f'(x)` elementwise, `x` the forward input (tolerances as [`activation`](Self::activation)).
    pub fn activation_backward(&self, act: Activation, dy: &[f32], x: &[f32]) -> Result<Vec<f32>> {
        self.map(Backward(act), [dy, x])
    }

    /// `max(x, 0)` (exact).
    ///
    /// ```
    /// # let rt = prism_gpu::ProductionGpuRuntime::cpu();
    /// assert_eq!(rt.relu(&[-3.0, 0.5, 2.0])?, [0.0, 0.5, 2.0]);
    /// # Ok::<(), prism_gpu::Error>(())
    /// ```
    pub fn relu(&self, x: &[f32]) -> Result<Vec<f32>> {
        self.activation(Activation::Relu, x)
    }
    /// `x > 0 ? x : slope * x` (exact).
    pub fn leaky_relu(&self, x: &[f32], slope: f32) -> Result<Vec<f32>> {
        self.activation(Activation::LeakyRelu(slope), x)
    }
    /// `1 / (1 + exp(-x))` (within 2e-6).
    pub fn sigmoid(&self, x: &[f32]) -> Result<Vec<f32>> {
        self.activation(Activation::Sigmoid, x)
    }
    /// `tanh(x)` (within 2e-6).
    pub fn tanh(&self, x: &[f32]) -> Result<Vec<f32>> {
        self.activation(Activation::Tanh, x)
    }
    /// GELU, tanh form (within 2e-6).
    pub fn gelu(&self, x: &[f32]) -> Result<Vec<f32>> {
        self.activation(Activation::Gelu, x)
    }

    // -----------------------------------------------------------------------------------------
    // softmax

    fn softmax(&self, kind: Softmax, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.map(softmax::Rows { kind, rows, cols }, [x])
    }

    /// Softmax of each row of `x` (`[rows, cols]`), the maximum subtracted first. Within 1e-5 of
    /// the f64 reference on GPU and CPU (the GPU sums in f32, the CPU in f64).
    ///
    /// ```
    /// # let rt = prism_gpu::ProductionGpuRuntime::cpu();
    /// // Two rows of three; the second is the first shifted, which softmax ignores.
    /// let p = rt.softmax_rows(&[1.0, 2.0, 3.0, 101.0, 102.0, 103.0], 2, 3)?;
    /// assert!((p[0] + p[1] + p[2] - 1.0).abs() < 1e-6);
    /// assert!(p[..3].iter().zip(&p[3..]).all(|(a, b)| (a - b).abs() < 1e-6));
    /// # Ok::<(), prism_gpu::Error>(())
    /// ```
    pub fn softmax_rows(&self, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.softmax(Softmax::Softmax, x, rows, cols)
    }

    /// Log-softmax of each row of `x` (`[rows, cols]`). Within 1e-5 (relative to max(1, |y|)).
    pub fn log_softmax_rows(&self, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.softmax(Softmax::LogSoftmax, x, rows, cols)
    }

    // -----------------------------------------------------------------------------------------
    // norms

    /// The host-slice path of the row norms: checks; then upload → launch → download on a GPU,
    /// or the CPU body: `(out, mean, rstd)`, the statistics when `stats` (RMS norm: no mean). An
    /// empty `x` gives empty results without a launch.
    fn row_norm<T: norms::Element>(
        &self,
        op: norms::Rows,
        x: &[T],
        gamma: Option<&[f32]>,
        beta: Option<&[f32]>,
        stats: bool,
    ) -> Result<(Vec<T>, Vec<f32>, Vec<f32>)> {
        op.check(x.len(), gamma.map(<[f32]>::len), beta.map(<[f32]>::len))?;
        if x.is_empty() {
            return Ok(Default::default());
        }
        self.dispatch(
            |g| {
                let (gamma, beta) = (upload_opt(g, gamma)?, upload_opt(g, beta)?);
                let (y, mean, rstd) = g.row_norm(op, &g.upload(x)?, gamma.as_ref(), beta.as_ref(), stats)?;
                let stat = |s: &CudaSlice<f32>| if s.is_empty() { Ok(Vec::new()) } else { g.download(s) };
                Ok((g.download(&y)?, stat(&mean)?, stat(&rstd)?))
            },
            || T::cpu(op, x, gamma, beta),
        )
    }

    /// Layer norm of each row with each row's mean and rstd: `(out, mean, rstd)`; see
    /// [`layer_norm`](Self::layer_norm).
    pub fn layer_norm_with_stats(
        &self,
        x: &[f32],
        rows: usize,
        cols: usize,
        gamma: Option<&[f32]>,
        beta: Option<&[f32]>,
        eps: f32,
    ) -> Result<(Vec<f32>, Vec<f32>, Vec<f32>)> {
        self.row_norm(norms::Rows::new(Norm::Layer, "layer_norm", rows, cols, eps), x, gamma, beta, true)
    }

    /// Layer norm of each row of `x` (`[rows, cols]`): `(x - mean) * rsqrt(var + eps) * gamma +
    /// beta` (biased variance; absent gamma/beta: ones/zeros). Within 1e-5 of the f64 reference,
    /// relative to `max(|y|, 0.1 * max|x| * rstd * max|gamma|)`: the GPU's f32 statistics lose
    /// digits to cancellation in rows whose spread is small against their values.
    pub fn layer_norm(
        &self,
        x: &[f32],
        rows: usize,
        cols: usize,
        gamma: Option<&[f32]>,
        beta: Option<&[f32]>,
        eps: f32,
    ) -> Result<Vec<f32>> {
        let op = norms::Rows::new(Norm::Layer, "layer_norm", rows, cols, eps);
        Ok(self.row_norm(op, x, gamma, beta, false)?.0)
    }

    /// RMS norm of each row with each row's rstd: `(out, rstd)`; see [`rms_norm`](Self::rms_norm).
    pub fn rms_norm_with_stats(
        &self,
        x: &[f32],
        rows: usize,
        cols: usize,
        gamma: Option<&[f32]>,
        eps: f32,
    ) -> Result<(Vec<f32>, Vec<f32>)> {
        let op = norms::Rows::new(Norm::Rms, "rms_norm", rows, cols, eps);
        let (y, _, rstd) = self.row_norm(op, x, gamma, None, true)?;
        Ok((y, rstd))
    }

    /// RMS norm of each row of `x` (`[rows, cols]`): `x * rsqrt(mean(x^2) + eps) * gamma` (absent
    /// gamma: ones). Within 1e-5 of the f64 reference.
    pub fn rms_norm(
        &self,
        x: &[f32],
        rows: usize,
        cols: usize,
        gamma: Option<&[f32]>,
        eps: f32,
    ) -> Result<Vec<f32>> {
        let op = norms::Rows::new(Norm::Rms, "rms_norm", rows, cols, eps);
        Ok(self.row_norm(op, x, gamma, None, false)?.0)
    }

    /// Layer norm of bf16 rows, f32 accumulation and f32 gamma/beta, output rounded to bf16: within
    /// 8e-3 (two bf16 roundings) of the f64 reference on the bf16 inputs.
    pub fn layer_norm_bf16(
        &self,
        x: &[bf16],
        rows: usize,
        cols: usize,
        gamma: Option<&[f32]>,
        beta: Option<&[f32]>,
        eps: f32,
    ) -> Result<Vec<bf16>> {
        let op = norms::Rows::new(Norm::Layer, "layer_norm_bf16", rows, cols, eps);
        Ok(self.row_norm(op, x, gamma, beta, false)?.0)
    }

    /// RMS norm of bf16 rows, f32 accumulation and f32 gamma, output rounded to bf16: within 8e-3.
    pub fn rms_norm_bf16(
        &self,
        x: &[bf16],
        rows: usize,
        cols: usize,
        gamma: Option<&[f32]>,
        eps: f32,
    ) -> Result<Vec<bf16>> {
        let op = norms::Rows::new(Norm::Rms, "rms_norm_bf16", rows, cols, eps);
        Ok(self.row_norm(op, x, gamma, None, false)?.0)
    }

    /// Batch norm of NCHW `x` (`nchw = (n, c, H * W)`) with given statistics (inference):
    /// `(x - mean[c]) * gamma[c] * rsqrt(var[c] + eps) + beta[c]`. Within 1e-5.
    #[allow(clippy::too_many_arguments)] // the operation's operands
    pub fn batch_norm(
        &self,
        x: &[f32],
        nchw: Nchw,
        mean: &[f32],
        var: &[f32],
        gamma: Option<&[f32]>,
        beta: Option<&[f32]>,
        eps: f32,
    ) -> Result<Vec<f32>> {
        let channels = [("mean", Some(mean)), ("var", Some(var)), ("gamma", gamma), ("beta", beta)];
        norms::check_batch(
            "batch_norm",
            x.len(),
            nchw,
            &channels.map(|(name, v)| (name, v.map(<[f32]>::len))),
        )?;
        if x.is_empty() {
            return Ok(Vec::new());
        }
        self.dispatch(
            |g| {
                let (m, v) = (g.upload(mean)?, g.upload(var)?);
                let (gm, bt) = (upload_opt(g, gamma)?, upload_opt(g, beta)?);
                let stats = ChannelStats { mean: &m, var: &v, gamma: gm.as_ref(), beta: bt.as_ref() };
                g.download(&g.batch_norm(&g.upload(x)?, nchw, stats, eps)?)
            },
            || {
                let (n, c, hw) = nchw;
                cpu::batch_norm_apply(x, n, c, hw, mean, var, gamma, beta, eps)
            },
        )
    }

    /// Training forward of batch norm over NCHW `x`: normalises with the batch statistics and
    /// returns `(out, mean, var)` (biased variance); updates `running` when given (unbiased
    /// variance). Needs `n * hw >= 1` when `c >= 1`. Within 1e-5 (statistics in f64 on both).
    pub fn batch_norm_train(
        &self,
        x: &[f32],
        nchw: Nchw,
        gamma: Option<&[f32]>,
        beta: Option<&[f32]>,
        eps: f32,
        running: Option<RunningStats<'_>>,
    ) -> Result<(Vec<f32>, Vec<f32>, Vec<f32>)> {
        let running_lens = running.as_ref().map(|r| [r.mean.len(), r.var.len()]);
        let channels = norms::train_lens(gamma.map(<[f32]>::len), beta.map(<[f32]>::len), running_lens);
        norms::check_batch_train("batch_norm_train", x.len(), nchw, &channels)?;
        let (n, c, hw) = nchw;
        if c == 0 {
            return Ok(Default::default());
        }
        match &self.backend {
            Backend::Gpu(ops) => ops.host(|g| {
                let (gm, bt) = (upload_opt(g, gamma)?, upload_opt(g, beta)?);
                let mut dev_running = match &running {
                    Some(r) => Some((g.upload(r.mean)?, g.upload(r.var)?, r.momentum)),
                    None => None,
                };
                let (y, m, v) = g.batch_norm_train(
                    &g.upload(x)?,
                    nchw,
                    gm.as_ref(),
                    bt.as_ref(),
                    eps,
                    dev_running.as_mut().map(|(rm, rv, momentum)| (rm, rv, *momentum)),
                )?;
                if let (Some(r), Some((rm, rv, _))) = (running, &dev_running) {
                    g.stream().memcpy_dtoh(rm, r.mean)?;
                    g.stream().memcpy_dtoh(rv, r.var)?;
                }
                Ok((g.download(&y)?, g.download(&m)?, g.download(&v)?))
            }),
            Backend::Cpu { .. } => {
                let (y, m, v) = cpu::batch_norm_train(x, n, c, hw, gamma, beta, eps);
                if let Some(r) = running {
                    cpu::batch_norm_update_running(r.mean, r.var, &m, &v, n * hw, r.momentum);
                }
                Ok((y, m, v))
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // reductions

    fn reduce(&self, op: Reduce, x: &[f32]) -> Result<f32> {
        if x.is_empty() {
            return Ok(match op {
                Reduce::Sum => 0.0,
                Reduce::Mean => f32::NAN,
                Reduce::Max => f32::NEG_INFINITY,
            });
        }
        Ok(self.map(op, [x])?[0])
    }

    /// Sum of all elements (0 for none): f64 partials on both, deterministic; within 1e-6 of the
    /// f64 reference relative to the sum of magnitudes.
    pub fn sum(&self, x: &[f32]) -> Result<f32> {
        self.reduce(Reduce::Sum, x)
    }

    /// Mean of all elements (NaN for none); as [`sum`](Self::sum).
    pub fn mean(&self, x: &[f32]) -> Result<f32> {
        self.reduce(Reduce::Mean, x)
    }

    /// Maximum, NaN ignored (`-inf` for none or all NaN). Exact.
    pub fn max(&self, x: &[f32]) -> Result<f32> {
        self.reduce(Reduce::Max, x)
    }

    /// Index of the first maximum, NaN skipped (0 when all are NaN). Exact; `x` must not be empty.
    pub fn argmax(&self, x: &[f32]) -> Result<usize> {
        Ok(self.map(Argmax, [x])?[0] as usize)
    }

    fn reduce_rows(&self, op: Reduce, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.map(reductions::Rows { op, rows, cols }, [x])
    }

    /// Sum of each row of `x` (`[rows, cols]`, `cols >= 1`): f32 on the GPU, f64 on the CPU;
    /// within 1e-5 of the f64 reference relative to the row's sum of magnitudes.
    pub fn row_sum(&self, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.reduce_rows(Reduce::Sum, x, rows, cols)
    }

    /// Mean of each row (as [`row_sum`](Self::row_sum)).
    pub fn row_mean(&self, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.reduce_rows(Reduce::Mean, x, rows, cols)
    }

    /// Maximum of each row, NaN ignored. Exact.
    pub fn row_max(&self, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.reduce_rows(Reduce::Max, x, rows, cols)
    }

    /// Column index of the first maximum of each row, NaN skipped (0 for an all-NaN row). Exact.
    pub fn row_argmax(&self, x: &[f32], rows: usize, cols: usize) -> Result<Vec<usize>> {
        // Indices in 0..cols, never negative.
        Ok(self.map(RowArgmax { rows, cols }, [x])?.into_iter().map(|i| i as usize).collect())
    }

    // -----------------------------------------------------------------------------------------
    // GEMV and transpose

    fn gemv_any(&self, op: gemv::Product, a: &[f32], x: &[f32], y: &[f32]) -> Result<Vec<f32>> {
        let (out_len, inner) = op.out_and_inner();
        let unread = op.dims.beta == 0.0;
        op.check(if unread && y.is_empty() { out_len } else { y.len() }, [a.len(), x.len()])?;
        let mut out = if unread { shape::zeroed(op.name(), "y", out_len)? } else { y.to_vec() };
        if inner == 0 {
            // Nothing to multiply: beta * y (or zeros), without a launch.
            op.cpu(&mut out, [a, x]);
        } else {
            self.update(op, &mut out, [a, x])?;
        }
        Ok(out)
    }

    /// `alpha * A x + beta * y`, `A` row-major `[m, n]` with leading dimension `lda`, `x` of `n`,
    /// `y` of `m` (may be empty when `beta == 0`; not read then). GPU: f32 dot products; within
    /// 1e-5 of the f64 reference relative to `sum |alpha a_ij x_j| + |beta y_i|`.
    pub fn gemv(&self, dims: Gemv, a: &[f32], x: &[f32], y: &[f32]) -> Result<Vec<f32>> {
        self.gemv_any(gemv::Product { dims, transposed: false }, a, x, y)
    }

    /// `alpha * Aᵀ x + beta * y`, `x` of `m`, `y` of `n`; deterministic; tolerance as [`gemv`](Self::gemv).
    pub fn gemv_t(&self, dims: Gemv, a: &[f32], x: &[f32], y: &[f32]) -> Result<Vec<f32>> {
        self.gemv_any(gemv::Product { dims, transposed: true }, a, x, y)
    }

    /// The transpose (`[cols, rows]`) of `x` (`[rows, cols]`). Exact.
    pub fn transpose(&self, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.map(Transpose { rows, cols }, [x])
    }

    // -----------------------------------------------------------------------------------------
    // neuromorphic

    /// `W_in u` (`w_in` `[n_reservoir, n_inputs]`); dot-product tolerance as [`gemv`](Self::gemv).
    pub fn matvec_input(
        &self,
        w_in: &[f32],
        u: &[f32],
        n_reservoir: usize,
        n_inputs: usize,
    ) -> Result<Vec<f32>> {
        let op = MatvecInput { n_reservoir, n_inputs };
        if n_inputs == 0 {
            // `w_in` has no columns: zeros, without a launch.
            op.check([w_in.len(), u.len()])?;
            return Ok(vec![0.0; n_reservoir]);
        }
        self.map(op, [w_in, u])
    }

    /// `W x` for an `[n, n]` reservoir (`n = x.len()`), dense or CSR (checked: offsets, columns);
    /// dot-product tolerance as [`gemv`](Self::gemv).
    pub fn matvec_reservoir(&self, w: Reservoir<'_>, x: &[f32]) -> Result<Vec<f32>> {
        w.check("matvec_reservoir", x.len())?;
        if x.is_empty() {
            return Ok(Vec::new());
        }
        self.dispatch(
            |g| {
                with_device_reservoir(g, w, x.len(), |dw| g.download(&g.matvec_reservoir(dw, &g.upload(x)?)?))
            },
            || cpu::reservoir_matvec(w, x),
        )
    }

    /// `x = (1 - leak) * x + leak * tanh(drive)` in place; within 2e-6.
    pub fn leaky_integration(&self, x: &mut [f32], drive: &[f32], leak: f32) -> Result<()> {
        self.update(LeakyIntegration(leak), x, [drive])
    }

    /// Rate-based spikes, time-major `[steps, rates.len()]`: 1 where `uniform01(seed, i, t) <
    /// rates[i]`. GPU and CPU give identical spikes for the same seed.
    pub fn spike_encode(&self, rates: &[f32], steps: usize, seed: u64) -> Result<Vec<f32>> {
        self.map(SpikeEncode { steps, seed }, [rates])
    }

    /// Sliding-window correlation of spike trains (`[t, n]`) with `p` templates (`[w, n]`):
    /// `[p, t - w + 1]`; dot-product tolerance as [`gemv`](Self::gemv).
    pub fn pattern_correlation(&self, spikes: &[f32], templates: &[f32], dims: Patterns) -> Result<Vec<f32>> {
        if dims.n == 0 {
            // Every product is 0: zeros without a launch (an output the host cannot hold is an
            // error, not an abort).
            let len = Map::check(dims, [spikes.len(), templates.len()])?;
            return shape::zeroed("pattern_correlation", "out", len);
        }
        self.map(dims, [spikes, templates])
    }

    /// Spectral-radius estimate of an `[n, n]` reservoir by `iters` power-iteration steps from
    /// the seeded start vector (0 for `n == 0`). GPU and CPU agree to 1e-4 relative once the
    /// iteration has converged.
    pub fn spectral_radius(&self, w: Reservoir<'_>, n: usize, iters: usize, seed: u64) -> Result<f32> {
        w.check("spectral_radius", n)?;
        if n == 0 {
            return Ok(0.0);
        }
        self.dispatch(
            |g| with_device_reservoir(g, w, n, |dw| g.spectral_radius(dw, n, iters, seed)),
            || cpu::reservoir_spectral_radius(w, n, iters, seed),
        )
    }

    /// One echo-state step out of place: the next state `(1 - leak) * x + leak * tanh(W_in u + W x)`,
    /// `w_in` `[n, u.len()]`, `w` `[n, n]` (`n = x.len()`); one fused launch on a GPU. Within 1e-5.
    pub fn reservoir_update(
        &self,
        w_in: &[f32],
        w: Reservoir<'_>,
        u: &[f32],
        x: &[f32],
        leak: f32,
    ) -> Result<Vec<f32>> {
        let n = x.len();
        shape::matrix("reservoir_update", "w_in", w_in.len(), n, u.len())?;
        w.check("reservoir_update", n)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        self.dispatch(
            |g| {
                with_device_reservoir(g, w, n, |dw| {
                    g.download(&g.reservoir_update(
                        &g.upload(w_in)?,
                        dw,
                        &g.upload(u)?,
                        &g.upload(x)?,
                        leak,
                    )?)
                })
            },
            || cpu::reservoir_update(w_in, w, u, x, leak),
        )
    }

    /// One echo-state step in place: `x = (1 - leak) * x + leak * tanh(W_in u + W x)`, `w_in`
    /// `[n, u.len()]`, `w` `[n, n]` (`n = x.len()`). Within 1e-5 (dot products, then tanh).
    pub fn reservoir_step(
        &self,
        w_in: &[f32],
        w: Reservoir<'_>,
        u: &[f32],
        x: &mut [f32],
        leak: f32,
    ) -> Result<()> {
        let n = x.len();
        shape::matrix("reservoir_step", "w_in", w_in.len(), n, u.len())?;
        w.check("reservoir_step", n)?;
        if n == 0 {
            return Ok(());
        }
        match &self.backend {
            Backend::Gpu(ops) => ops.host(|g| {
                with_device_reservoir(g, w, n, |dw| {
                    let mut xd = g.upload(x)?;
                    g.reservoir_step(&g.upload(w_in)?, dw, &g.upload(u)?, &mut xd, leak)?;
                    Ok(g.stream().memcpy_dtoh(&xd, x)?)
                })
            }),
            Backend::Cpu { .. } => {
                cpu::reservoir_step(w_in, w, u, x, leak);
                Ok(())
            }
        }
    }
}

/// A device copy of an optional operand.
fn upload_opt(g: &GpuOps, v: Option<&[f32]>) -> Result<Option<CudaSlice<f32>>> {
    v.map(|v| g.upload(v)).transpose()
}

/// Runs `f` with a device copy of the (checked) reservoir `w` of `n` rows.
fn with_device_reservoir<T>(
    g: &GpuOps,
    w: Reservoir<'_>,
    n: usize,
    f: impl FnOnce(&DeviceReservoir<'_>) -> Result<T>,
) -> Result<T> {
    match w {
        Reservoir::Dense(d) => {
            let dense = g.upload(d)?;
            f(&DeviceReservoir::Dense(dense.as_view()))
        }
        Reservoir::Csr(c) => {
            let csr = g.upload_csr(c, n, n)?;
            f(&DeviceReservoir::Csr(&csr))
        }
    }
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
