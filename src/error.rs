//! The crate's error type.

use crate::driver::DriverError;
use crate::sys::driver::CUresult;
use crate::sys::LoadError;

/// Everything that can go wrong in prism-gpu above the cudarc-shaped `driver` layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A CUDA library or one of its entry points could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A call through the cudarc-shaped `driver` layer failed.
    #[error("CUDA driver error: {0}")]
    Driver(#[from] DriverError),
    /// A built-in kernel family's image could not be loaded; `log` is the JIT's error log.
    #[error("loading kernel family `{family}` failed: {error}{}", if log.is_empty() { String::new() } else { format!("\n{log}") })]
    ModuleLoad {
        /// The family (`cuda/<family>.cu`).
        family: &'static str,
        /// The driver's error.
        error: DriverError,
        /// The JIT compiler's error log, empty when the driver gave none.
        log: String,
    },
    /// A launch's arguments do not match the kernel's parameters (our engine checks them).
    #[cfg(not(feature = "legacy-gpu"))]
    #[error(transparent)]
    LaunchArguments(#[from] crate::driver::ArgumentMismatch),
    /// No built-in kernel has this name.
    #[error("no built-in kernel is named `{0}`")]
    UnknownKernel(String),
    /// Inputs whose shapes or lengths do not fit the operation.
    #[error("{op}: expected {expected}, got {got}")]
    Shape {
        /// The operation that rejected its inputs.
        op: &'static str,
        /// What it needed.
        expected: String,
        /// What it was given.
        got: String,
    },
    /// The operation works on device buffers but the runtime runs on the CPU.
    #[error("{op} needs a GPU, but this runtime uses the CPU fallback ({reason})")]
    NoGpu {
        /// The operation asked for.
        op: &'static str,
        /// Why no GPU is in use.
        reason: String,
    },
    /// A device allocation failed for want of memory, after waiting for the context's work,
    /// trimming the stream-ordered pool and retrying once.
    #[error(
        "out of device memory: {requested} bytes requested, {free} of {total} bytes free (after \
         trimming the memory pool and retrying once)"
    )]
    OutOfMemory {
        /// The size in bytes of the allocation that failed.
        requested: usize,
        /// Free device memory in bytes when it failed.
        free: usize,
        /// Total device memory in bytes.
        total: usize,
    },
    /// A kernel faulted earlier on this runtime's context (a sticky error: the driver fails every
    /// later call in the context); `ProductionGpuRuntime::recover` resets it.
    #[error(
        "the CUDA context of device {ordinal} is unusable since a kernel faulted with {} (the \
         first fault; every later call fails until ProductionGpuRuntime::recover resets the device)",
        result_name(*.first)
    )]
    ContextFaulted {
        /// The device.
        ordinal: usize,
        /// The first fault's code (`CUDA_ERROR_ILLEGAL_ADDRESS`, ...).
        first: CUresult,
    },
    /// An NCCL call failed (data-parallel training's gradient all-reduce, its communicators).
    #[cfg(all(feature = "nccl", not(feature = "legacy-gpu")))]
    #[error("NCCL error: {0}")]
    Nccl(#[from] crate::nccl::NcclError),
    /// A raw driver call failed.
    #[error("{call} failed: {}", result_name(*.result))]
    DriverCall {
        /// The driver function that failed.
        call: &'static str,
        /// What it returned.
        result: CUresult,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The variant's name of a driver result (`"CUDA_ERROR_OUT_OF_MEMORY"`).
pub fn result_name(result: CUresult) -> &'static str {
    result.name()
}

/// Turns a driver result into `Ok(())` or [`Error::DriverCall`] naming `call`.
pub(crate) fn check(call: &'static str, result: CUresult) -> Result<()> {
    if result == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::DriverCall { call, result })
    }
}
