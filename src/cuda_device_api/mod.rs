//! The cudarc 0.9–0.13 `CudaDevice` API (not to be confused with the `legacy-gpu` engine, the real
//! cudarc 0.19, which it serves as well): [`CudaDevice`] and [`LaunchAsync`], re-exported from
//! [`crate::driver`] so that code written for those cudarc versions compiles unchanged.
//!
//! Everything here is written over the modern, cudarc-0.19-shaped API (`CudaContext`,
//! `CudaStream`, `launch_builder`), so it works the same on both engines: ours (the default)
//! and the real cudarc 0.19 (`legacy-gpu`).
//!
//! ```no_run
//! use prism_gpu::driver::{CudaDevice, LaunchAsync, LaunchConfig};
//! use prism_gpu::nvrtc::compile_ptx;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dev = CudaDevice::new(0)?;
//! let ptx = compile_ptx(r#"extern "C" __global__ void scale(float *x, float a, unsigned n) {
//!     unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//!     if (i < n) x[i] *= a;
//! }"#)?;
//! dev.load_ptx(ptx, "demo", &["scale"])?;
//! let scale = dev.get_func("demo", "scale").expect("loaded above");
//! let mut x = dev.htod_copy(vec![1.0f32, 2.0, 3.0])?;
//! unsafe { scale.launch(LaunchConfig::for_num_elems(3), (&mut x, 2.0f32, 3u32)) }?;
//! assert_eq!(dev.dtoh_sync_copy(&x)?, [2.0, 4.0, 6.0]);
//! # Ok(()) }
//! ```
//!
//! Where it differs from cudarc 0.13:
//! - `fork_default_stream` returns the modern [`CudaStream`](crate::driver::CudaStream) by value;
//! - the raw-pointer `DevicePtr` / `DevicePtrMut` traits live in `driver::legacy` (the modern traits
//!   of the same names take their place in `driver`) and return the address by value;
//! - a `#[repr(C)]` struct passed by value needs `unsafe impl LaunchParam` (see [`LaunchParam`]);
//! - copies into a too-short destination return `CUDA_ERROR_INVALID_VALUE` instead of panicking.

mod device;
mod launch;
pub mod ptr;

pub use device::CudaDevice;
#[cfg(feature = "legacy-gpu")]
pub use device::SliceDevice;
pub use launch::{LaunchAsync, LaunchParam};
