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
//! | random numbers | `curand` | cudarc-0.19-compatible cuRAND API on a built-in Philox4x32-10 kernel |
//! | multi-GPU | `nccl` | cudarc-0.19-compatible NCCL over the run-time-loaded `libnccl.so.2` |
//! | operations | [`ops`] | each operation defined once: operand types, checks, GPU launch, CPU body |
//! | kernels | [`raw::kernels`] | the embedded kernel images, their catalogue and typed launchers |
//! | CPU fallback | [`raw::cpu`] | every operation's CPU body, the same arithmetic as its kernel |
//! | runtime | [`mod@runtime`] | [`ProductionGpuRuntime`]: every operation on GPU or CPU fallback |
//! | neural networks | [`nn`] | tensors, dense layers, fused losses and optimisers, training, IDX data |
//! | reservoir computing | [`reservoir`] | echo state networks on the runtime: run, ridge readout, free run |
//! | test data | [`rng`] | a seedable generator for inputs, examples and seeded initialisation |
//!
//! The command line (`prism-gpu info | selftest | bench | cache`), the benchmark harness and the
//! self-test are the workspace's `prism-gpu-cli` crate, so this library pulls in no plotting or JSON
//! crates.
//!
//! The driver is opened at run time (`$PRISM_CUDA_DRIVER`, then `libcuda.so.1`, `libcuda.so`), so a
//! machine without CUDA builds, runs, and gets a typed error or the CPU fallback.
//!
//! ## Quick start
//! The runtime: device 0 when a GPU is usable, else the CPU fallback, with the same answers.
//! ```
//! use prism_gpu::ProductionGpuRuntime;
//! # fn main() -> prism_gpu::Result<()> {
//! let rt = ProductionGpuRuntime::initialize()?;
//! println!("running on {}", rt.describe());
//! let c = rt.matmul(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], 2, 2, 2)?; // (m, n, k)
//! assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
//! let y = rt.relu(&rt.add(&c, &[-20.0; 4])?)?;
//! assert_eq!(y, [0.0, 2.0, 23.0, 30.0]);
//! # Ok(())
//! # }
//! ```
//! The cudarc API, as cudarc code writes it (`cudarc::` becomes `prism_gpu::`, or keep `cudarc::`
//! with `cudarc = { package = "prism-gpu", ... }`); this needs a GPU, so it is only compiled here:
//! ```no_run
//! use prism_gpu::driver::{CudaContext, LaunchConfig, PushKernelArg};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let ptx = prism_gpu::nvrtc::compile_ptx(
//!     r#"extern "C" __global__ void twice(float *x, unsigned n) {
//!         unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//!         if (i < n) x[i] *= 2.0f;
//!     }"#,
//! )?;
//! let twice = ctx.load_module(ptx)?.load_function("twice")?;
//! let mut x = stream.clone_htod(&[1.0f32, 2.0, 3.0])?;
//! let n = 3u32;
//! let mut launch = stream.launch_builder(&twice);
//! launch.arg(&mut x).arg(&n);
//! // SAFETY: `twice(float*, unsigned)` with a buffer of n floats.
//! unsafe { launch.launch(LaunchConfig::for_num_elems(n)) }?;
//! assert_eq!(stream.clone_dtoh(&x)?, [2.0, 4.0, 6.0]);
//! # Ok(())
//! # }
//! ```
//! `examples/` has runnable programs: `test_gpu_kernel` (vector add, matmul and ReLU through the
//! runtime and through the cudarc API with NVRTC, in GFLOP/s), `simple_gpu_demo`,
//! `reservoir_benchmarks`, `real_gpu_neural_network` (feature `nn-io`).
//!
//! ## Cargo features
//! Every feature name of cudarc 0.19.10 exists, and the default set is cudarc's (`std cublas cublaslt
//! curand driver runtime nvrtc fallback-dynamic-loading`), so a cudarc dependency line keeps building
//! when only its source changes (`cudarc = { package = "prism-gpu", ... }`).
//! - Engine: prism-gpu's own unless `legacy-gpu` is named (the real cudarc 0.19 under the same paths).
//!   `production-gpu` is accepted and changes nothing; naming it with `legacy-gpu` is an error.
//! - Always compiled, whatever the features: [`driver`] and [`nvrtc`] (the runtime needs both).
//! - Element types: `f16` is a no-op (`half` is always a dependency); `f8` adds the `float8` types
//!   and `f4` the `float4` types to `DeviceRepr`, `ValidAsZeroBits` and [`types::CudaTypeName`].
//! - Library modules: `cublas` turns on `cublas` (cudarc's cuBLAS API on our own GEMM kernels; no
//!   libcublas is loaded), `curand` turns on `curand` (cudarc's cuRAND API on our Philox kernel; no
//!   libcurand), `nccl` (and `nccl-020xx`) turns on `nccl` (cudarc's NCCL API over the real
//!   `libnccl.so.2`, opened at run time), `cublaslt` turns on `cublaslt` (cudarc's cuBLASLt matmul
//!   on our GEMM kernels, bias and activation fused; no libcublasLt; it implies `cublas`). With
//!   `legacy-gpu` each turns on and re-exports cudarc's module.
//! - Not provided: `cudnn` (and `cudnn-0xxxx`), `cufft`, `cufile`, `cupti`, `cusolver`, `cusolvermg`,
//!   `cusparse`, `cutensor` (and `cutensor-020xx`), `nvtx`, `runtime`: the feature builds, and calling
//!   the module's entry points (`cudnn::Cudnn::new`, `runtime::result::version::get`, ...) is a compile
//!   error saying prism-gpu does not provide it.
//! - No-ops: `std`, `no-std`; CUDA versions (`cuda-11040` ... `cuda-13040`, `fallback-latest`,
//!   `cuda-version-from-build-system`) and library versions (`*-version-from-build-system`), since
//!   every entry point is looked up at run time and the driver says what it supports; linking
//!   (`dynamic-loading`, `dynamic-linking`, `static-linking`, `fallback-dynamic-loading`), since
//!   libraries are always opened at run time.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

#[cfg(all(feature = "production-gpu", feature = "legacy-gpu"))]
compile_error!(
    "prism-gpu: `production-gpu` and `legacy-gpu` name two engines: drop `production-gpu` to use the \
     real cudarc 0.19 (`legacy-gpu`), or drop `legacy-gpu` to use prism-gpu's own engine (the default)"
);

mod cache_dir;
pub(crate) mod cpu;
#[cfg(all(feature = "cublas", not(feature = "legacy-gpu")))]
pub mod cublas;
#[cfg(all(feature = "cublaslt", not(feature = "legacy-gpu")))]
pub mod cublaslt;
mod cuda_device_api;
#[cfg(all(feature = "curand", not(feature = "legacy-gpu")))]
pub mod curand;
#[cfg(not(feature = "legacy-gpu"))]
pub mod driver;
pub mod error;
pub(crate) mod kernels;
#[cfg(all(feature = "nccl", not(feature = "legacy-gpu")))]
pub mod nccl;
pub mod nn;
#[cfg(not(feature = "legacy-gpu"))]
pub mod nvrtc;
pub mod ops;
mod probe;
pub mod reservoir;
pub mod rng;
pub mod raw {
    //! The low-level pieces under the runtime: the typed launchers of the built-in kernels and
    //! their catalogue ([`kernels`]), the GEMM planner and tuner ([`kernels::gemm`]: `dispatch`, `plan`,
    //! `tuning`, `Workspace`), and the CPU reference bodies of every operation ([`cpu`]).
    //!
    //! They are public for the `prism-gpu` command line, the tests and expert users who manage
    //! device buffers and launches themselves, and are kept stable enough for that, but they are
    //! not the main API: most code wants [`ProductionGpuRuntime`](crate::ProductionGpuRuntime) (host
    //! slices), [`GpuOps`](crate::runtime::GpuOps) (device buffers), the cudarc API
    //! ([`driver`](crate::driver), [`nvrtc`](crate::nvrtc), ...), [`nn`](crate::nn) or
    //! [`reservoir`](crate::reservoir). A launcher checks its sizes and operands but, unlike the
    //! runtime, has no CPU fallback and no choice of device.

    pub mod kernels {
        //! The built-in kernels: the images embedded at build time, the catalogue of the entry
        //! points each family defines ([`FAMILIES`]), the module cache ([`Kernels`]) and the typed
        //! launchers, one module per family; [`gemm`] holds the GEMM launchers, its planner
        //! (`dispatch`, `plan`) and its tuner (`tuning`, `table`).
        pub use crate::kernels::*;
    }

    pub mod cpu {
        //! The CPU reference bodies of the runtime's operations: the arithmetic of the kernel of the
        //! same name, which the CPU fallback runs and the GPU tests compare against.
        pub use crate::cpu::*;
    }
}
pub mod runtime;
mod spec;
pub mod sys;
#[cfg(feature = "legacy-gpu")]
pub use cudarc::nvrtc;
pub mod types;
mod unprovided;
#[allow(unused_imports)] // with no module feature on, there is nothing to re-export
pub use unprovided::*;

/// cudarc's cuBLAS module (`cudarc::cublas`), with the `legacy-gpu` engine.
#[cfg(all(feature = "legacy-gpu", feature = "cublas"))]
pub use cudarc::cublas;
/// cudarc's cuBLASLt module (`cudarc::cublaslt`), with the `legacy-gpu` engine.
#[cfg(all(feature = "legacy-gpu", feature = "cublaslt"))]
pub use cudarc::cublaslt;
/// cudarc's cuRAND module (`cudarc::curand`), with the `legacy-gpu` engine.
#[cfg(all(feature = "legacy-gpu", feature = "curand"))]
pub use cudarc::curand;
/// cudarc's NCCL module (`cudarc::nccl`), with the `legacy-gpu` engine.
#[cfg(all(feature = "legacy-gpu", feature = "nccl"))]
pub use cudarc::nccl;

/// The CUDA driver API of the real cudarc 0.19 (`cudarc::driver`), plus cudarc 0.9–0.13's
/// [`CudaDevice`](driver::CudaDevice) / [`LaunchAsync`](driver::LaunchAsync) API (the `CudaDevice`
/// API, written over the modern one) under the same paths as with prism-gpu's own engine.
#[cfg(feature = "legacy-gpu")]
pub mod driver {
    pub use crate::cuda_device_api::{CudaDevice, LaunchAsync, LaunchParam, SliceDevice};
    pub use cudarc::driver::*;

    /// The `CudaDevice` API's raw-pointer traits (cudarc 0.9–0.13), which clash with the modern ones
    /// of the same names. The module's name is the public path users already write; elsewhere
    /// "legacy" means only the `legacy-gpu` engine.
    pub mod legacy {
        pub use crate::cuda_device_api::ptr::*;
    }
}

pub use error::{Error, Result};
pub use kernels::gemm::{Gemm, GemmF64, Precision};
pub use probe::{probe, probe_driver, DeviceInfo, Probe};
#[allow(deprecated)] // the deprecated seed function keeps its path until it is removed
pub use runtime::matrix_multiply;
pub use runtime::{get_global_executor, relu_inplace, runtime, sgemm, ProductionGpuRuntime};
