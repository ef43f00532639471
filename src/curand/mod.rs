//! cudarc 0.19's `curand` module on this crate's own Philox4x32-10 kernel (`cuda/random.cu`):
//! [`CudaRng`] at the root, [`result`] and [`sys`] beside it, with cudarc's paths and
//! signatures. No libcurand is loaded.
//!
//! Every generator type is this crate's Philox4x32-10 (quasi-random types are refused with
//! `CURAND_STATUS_TYPE_ERROR`), so the values differ from cuRAND's; what callers rely on holds:
//! the same seed gives the same numbers, consecutive fills differ (the offset advances by the
//! Philox blocks a fill consumed), `set_seed` + `set_offset(0)` replays, uniform floats lie in
//! (0, 1]. Normal and log-normal fills of odd length work (cuRAND refuses them). The CPU fallback
//! `cpu::random` computes the same numbers (uniform and bits exactly).

pub mod result;
pub mod safe;
#[allow(missing_docs)] // cuRAND's own names, documented by NVIDIA
pub mod sys;

pub use result::CurandError;
pub use safe::*;
