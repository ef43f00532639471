//! The high-level runtime: [`ProductionGpuRuntime`] runs each operation with the built-in kernels on
//! a GPU, or with [`cpu`] when no GPU is usable or the caller asks for the CPU.
//!
//! Operations on host slices return a `Vec`; the same operations on device buffers are on
//! [`GpuOps`] (`runtime.gpu()?`). Shapes are checked before anything runs: a mismatch is
//! [`Error::Shape`], and empty inputs give empty results without a launch.

pub mod cpu;
mod gpu;
mod matmul;

use std::sync::{Arc, OnceLock};

use crate::driver::CudaContext;
use crate::error::{Error, Result};
use crate::kernels::elementwise::Binary;
use crate::kernels::shape;

pub use gpu::GpuOps;
pub use matmul::{matrix_multiply, sgemm};

/// Where a runtime's operations run.
enum Backend {
    Gpu(GpuOps),
    Cpu { reason: String },
}

/// GPU-accelerated operations with a CPU fallback that gives the same answers.
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

    /// The context, on a GPU.
    pub fn context(&self) -> Result<&Arc<CudaContext>> {
        Ok(self.gpu_for("context")?.kernels().context())
    }

    /// Raw access to any built-in kernel by entry-point name.
    pub fn get_kernel(&self, name: &str) -> Result<crate::driver::CudaFunction> {
        self.gpu_for("get_kernel")?.kernels().function(name)
    }

    /// `a ∘ b` elementwise.
    fn binary(&self, op: Binary, a: &[f32], b: &[f32]) -> Result<Vec<f32>> {
        shape::same_len(op.kernel(), &[("a", a.len()), ("b", b.len())])?;
        if a.is_empty() {
            return Ok(Vec::new());
        }
        match &self.backend {
            Backend::Gpu(gpu) => gpu.host(|g| {
                let (a, b) = (g.upload(a)?, g.upload(b)?);
                g.download(&g.binary(op, &a, &b)?)
            }),
            Backend::Cpu { .. } => Ok(cpu::binary(op, a, b)),
        }
    }

    /// `a + b` elementwise.
    pub fn add(&self, a: &[f32], b: &[f32]) -> Result<Vec<f32>> {
        self.binary(Binary::Add, a, b)
    }
    /// `a - b` elementwise.
    pub fn sub(&self, a: &[f32], b: &[f32]) -> Result<Vec<f32>> {
        self.binary(Binary::Sub, a, b)
    }
    /// `a * b` elementwise.
    pub fn mul(&self, a: &[f32], b: &[f32]) -> Result<Vec<f32>> {
        self.binary(Binary::Mul, a, b)
    }
    /// `a / b` elementwise.
    pub fn div(&self, a: &[f32], b: &[f32]) -> Result<Vec<f32>> {
        self.binary(Binary::Div, a, b)
    }

    /// `alpha * x + y`.
    pub fn axpy(&self, alpha: f32, x: &[f32], y: &[f32]) -> Result<Vec<f32>> {
        shape::same_len("axpy", &[("x", x.len()), ("y", y.len())])?;
        if x.is_empty() {
            return Ok(Vec::new());
        }
        match &self.backend {
            Backend::Gpu(gpu) => gpu.host(|g| {
                let (x, y) = (g.upload(x)?, g.upload(y)?);
                g.download(&g.axpy(alpha, &x, &y)?)
            }),
            Backend::Cpu { .. } => Ok(cpu::axpy(alpha, x, y)),
        }
    }

    /// `alpha * x`.
    pub fn scale(&self, alpha: f32, x: &[f32]) -> Result<Vec<f32>> {
        if x.is_empty() {
            return Ok(Vec::new());
        }
        match &self.backend {
            Backend::Gpu(gpu) => gpu.host(|g| {
                let x = g.upload(x)?;
                g.download(&g.scale(alpha, &x)?)
            }),
            Backend::Cpu { .. } => Ok(cpu::scale(alpha, x)),
        }
    }

    /// `n` copies of `value`.
    pub fn fill(&self, n: usize, value: f32) -> Result<Vec<f32>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        match &self.backend {
            Backend::Gpu(gpu) => gpu.host(|g| g.download(&g.fill(n, value)?)),
            Backend::Cpu { .. } => Ok(vec![value; n]),
        }
    }
}

/// The process-wide runtime, created on first use by [`ProductionGpuRuntime::initialize`].
pub fn runtime() -> &'static ProductionGpuRuntime {
    static RUNTIME: OnceLock<ProductionGpuRuntime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        ProductionGpuRuntime::initialize()
            .unwrap_or_else(|e| ProductionGpuRuntime::cpu_because(e.to_string()))
    })
}
