//! The CUDA driver API with the paths, names and behaviour of cudarc 0.19's `cudarc::driver`,
//! on prism-gpu's own run-time-loaded bindings.
//!
//! ```no_run
//! use prism_gpu::driver::{CudaContext, LaunchConfig, PushKernelArg};
//! use prism_gpu::nvrtc::compile_ptx;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! let ptx = compile_ptx(r#"extern "C" __global__ void twice(float *x, unsigned n) {
//!     unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//!     if (i < n) x[i] *= 2.0f;
//! }"#)?;
//! let f = ctx.load_module(ptx)?.load_function("twice")?;
//! let mut x = stream.clone_htod(&[1.0f32, 2.0, 3.0])?;
//! let n = 3u32;
//! unsafe { stream.launch_builder(&f).arg(&mut x).arg(&n).launch(LaunchConfig::for_num_elems(n)) }?;
//! assert_eq!(stream.clone_dtoh(&x)?, [2.0, 4.0, 6.0]);
//! # Ok(()) }
//! ```
//!
//! Where it differs from cudarc (on purpose):
//! - no panics without a driver: [`CudaContext::new`] returns an error;
//! - slices create and record their cross-stream events only once the context has a second
//!   stream, so single-stream code pays nothing for them;
//! - graph capture of buffers written before the capture works without switching event tracking
//!   off (see [`CudaGraph`]);
//! - a module that fails to load can report the JIT log
//!   ([`CudaContext::load_module_with_log`]).

mod context;
mod event;
mod graph;
mod launch;
mod memory;
mod module;
pub mod result;
mod staging;
mod stream;
mod tracking;

/// cudarc's `driver::safe`: the safe API under cudarc's names (the same items as at the module
/// root, where cudarc also re-exports them).
pub mod safe {
    pub use super::{
        CudaContext, CudaEvent, CudaFunction, CudaGraph, CudaModule, CudaSlice, CudaStream, CudaView,
        CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr, DeviceSlice, DriverError, HostSlice, LaunchArgs,
        LaunchConfig, PinnedHostSlice, PushKernelArg, SyncOnDrop, ValidAsZeroBits,
    };
}

/// The raw driver bindings (`cuda.h`), as `cudarc::driver::sys`.
pub mod sys {
    pub use crate::sys::driver::*;

    /// Whether the driver library (`libcuda`) could be loaded (by this crate's loader, which
    /// [`crate::sys::driver_library`] gives with the reason when it could not).
    ///
    /// # Safety
    /// None beyond the signature: `unsafe` as in cudarc (loading runs the library's
    /// initialisers, which this crate's loader does once, for every caller).
    pub unsafe fn is_culib_present() -> bool {
        crate::sys::driver_library().is_ok()
    }
}

pub use context::{CudaContext, MemoryStats};
pub use event::CudaEvent;
pub use graph::CudaGraph;
pub use launch::{ArgumentMismatch, LaunchArgs, LaunchConfig, PushKernelArg};
pub use memory::{
    CudaSlice, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr, DeviceSlice, HostSlice,
    PinnedHostSlice, SyncOnDrop, ValidAsZeroBits,
};
pub use module::{CudaFunction, CudaModule, ModuleLoadError};
pub use result::DriverError;
pub use stream::CudaStream;

// cudarc 0.9–0.13's `CudaDevice` API (`crate::cuda_device_api`), written over the modern one (it
// serves both engines).
pub use crate::cuda_device_api::{CudaDevice, LaunchAsync, LaunchParam};

/// The `CudaDevice` API's raw-pointer traits (cudarc 0.9–0.13), which clash with the modern ones of
/// the same names. The module's name is the public path users already write; elsewhere "legacy"
/// means only the `legacy-gpu` engine.
pub mod legacy {
    pub use crate::cuda_device_api::ptr::*;
}
