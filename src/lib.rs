//! # prism-gpu
//!
//! GPU acceleration for Rust on the raw CUDA Driver API, with no link-time CUDA dependency.
//!
//! | layer | module | what it holds |
//! |---|---|---|
//! | bindings | [`sys`] | bindgen output for `cuda.h` / `nvrtc.h` / `nccl.h` and the run-time loader |
//! | probe | [`probe()`] | what the machine offers: driver version, devices, or why nothing is usable |
//! | safe driver API | [`driver`] | cudarc-0.19-compatible contexts, streams, slices, modules, launches, graphs |
//! | runtime compilation | [`nvrtc`] | cudarc-0.19-compatible NVRTC: `compile_ptx`, `Ptx`, `CompileOptions` |
//! | multi-GPU | `nccl` | cudarc-0.19-compatible NCCL over the run-time-loaded `libnccl.so.2` |
//! | kernels | [`kernels`] | the embedded kernel images, their catalogue and typed launchers |
//! | runtime | [`mod@runtime`] | [`ProductionGpuRuntime`]: every operation on GPU or CPU fallback |
//! | benchmarks | [`mod@bench`] | CUDA-event timing, warm-up, medians; rows of ours against an anchor |
//! | self-test | [`selftest`] | every operation on GPU and CPU against f64 references |
//!
//! The driver is opened at run time (`$PRISM_CUDA_DRIVER`, then `libcuda.so.1`, `libcuda.so`), so a
//! machine without CUDA builds, runs, and gets a typed error or the CPU fallback.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

#[cfg(all(feature = "production-gpu", feature = "legacy-gpu"))]
compile_error!(
    "prism-gpu: enable exactly one engine: `production-gpu` (default) or `legacy-gpu` \
     (use `default-features = false, features = [\"legacy-gpu\"]` for the cudarc engine)"
);
#[cfg(not(any(feature = "production-gpu", feature = "legacy-gpu")))]
compile_error!(
    "prism-gpu: enable exactly one engine: `production-gpu` (the default, our own engine) or \
     `legacy-gpu` (the real cudarc 0.19 under the same paths)"
);

pub mod bench;
#[cfg(not(feature = "legacy-gpu"))]
pub mod cublas;
#[cfg(feature = "production-gpu")]
pub mod driver;
pub mod error;
pub mod kernels;
mod legacy;
#[cfg(not(feature = "legacy-gpu"))]
pub mod nccl;
#[cfg(feature = "production-gpu")]
pub mod nvrtc;
mod probe;
pub mod runtime;
pub mod selftest;
pub mod sys;
#[cfg(feature = "legacy-gpu")]
pub use cudarc::nvrtc;

/// The CUDA driver API of the real cudarc 0.19 (`cudarc::driver`), plus the legacy cudarc 0.9–0.13
/// [`CudaDevice`](driver::CudaDevice) / [`LaunchAsync`](driver::LaunchAsync) API under the same paths
/// as with prism-gpu's own engine.
#[cfg(feature = "legacy-gpu")]
pub mod driver {
    pub use crate::legacy::{CudaDevice, LaunchAsync, LaunchParam, SliceDevice};
    pub use cudarc::driver::*;

    /// cudarc 0.9–0.13's raw-pointer traits, which clash with the modern ones of the same names.
    pub mod legacy {
        pub use crate::legacy::ptr::*;
    }
}

pub use error::{Error, Result};
pub use kernels::gemm::{Gemm, Precision};
pub use probe::{probe, probe_driver, DeviceInfo, Probe};
pub use runtime::{get_global_executor, matrix_multiply, relu_inplace, runtime, sgemm, ProductionGpuRuntime};
