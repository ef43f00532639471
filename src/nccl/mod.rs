//! cudarc 0.19's `nccl` module over the real NCCL (`libnccl.so.2`, opened at run time like the
//! driver): [`Comm`], [`Id`], [`ReduceOp`], [`NcclType`], [`group_start`] / [`group_end`] at the
//! root, [`result`] (one function per NCCL call) and [`sys`] (the generated bindings) beside them,
//! with cudarc's paths and signatures.
//!
//! ```no_run
//! use prism_gpu::driver::CudaContext;
//! use prism_gpu::nccl::{Comm, ReduceOp};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let stream = CudaContext::new(0)?.default_stream();
//! let comms = Comm::from_devices(vec![stream.clone()])?;
//! let x = stream.clone_htod(&[1.0f32, 2.0, 3.0])?;
//! let mut sum = stream.alloc_zeros::<f32>(3)?;
//! comms[0].all_reduce(&x, &mut sum, &ReduceOp::Sum)?;
//! assert_eq!(stream.clone_dtoh(&sum)?, [1.0, 2.0, 3.0]);
//! # Ok(()) }
//! ```
//!
//! Where it differs from cudarc (on purpose):
//! - no NCCL on the machine is an error, never a panic: every call returns
//!   `NcclError(ncclSystemError)`, whose message names every library tried
//!   ([`NcclError::load_error`] gives the loader's typed error);
//! - [`NcclError`] implements `Display` and `std::error::Error`;
//! - the safe [`Comm`] methods check what NCCL cannot: buffers too short for the count NCCL will
//!   read or write, roots and peers outside the world, a missing send buffer on the root of a
//!   broadcast (or receive buffer on the root of a reduce), buffers of another context, and sum,
//!   product or average of `char`s (which can leave invalid `char`s): each is
//!   `ncclInvalidArgument` before anything is enqueued;
//! - [`NcclType`] is sealed (an implementation naming the wrong NCCL type would let NCCL write past
//!   a buffer), and `char` crosses as `ncclUint32` (4 bytes), not cudarc's `ncclUint8`;
//! - dropping a [`Comm`] aborts it as cudarc does, but never panics.

pub mod result;
pub mod safe;
/// The raw NCCL bindings (`nccl.h`), as `cudarc::nccl::sys`.
#[allow(non_snake_case)] // the C library's names
pub mod sys {
    pub use crate::sys::nccl::*;

    use std::ffi::c_char;

    crate::sys::culib_functions!(nccl_library, "NCCL", ncclGetErrorString(ncclResult_t));

    /// `ncclGetLastError` through the process-wide NCCL library: NCCL's message about the last
    /// error on `comm`, or, when no NCCL library (or one without this function) could be loaded,
    /// a static sentence saying so.
    ///
    /// # Safety
    /// `comm` must be null or a live communicator; the returned string is NCCL's (valid until
    /// the next NCCL call on `comm`) or static.
    pub unsafe fn ncclGetLastError(comm: ncclComm_t) -> *const c_char {
        // SAFETY: the caller vouches for `comm`.
        let found = crate::sys::nccl_library().map(|library| unsafe { library.ncclGetLastError(comm) });
        crate::sys::static_text(found, c"no NCCL library is loaded")
    }

    /// `ncclResetDebugInit` through the process-wide NCCL library (NCCL re-reads its debug
    /// settings on the next call); without an NCCL library there is nothing to reset.
    ///
    /// # Safety
    /// None beyond NCCL's own contract for this call (no other NCCL call in flight).
    pub unsafe fn ncclResetDebugInit() {
        if let Ok(library) = crate::sys::nccl_library() {
            // SAFETY: no arguments; the caller upholds NCCL's contract. A library without the
            // function has nothing to reset either.
            let _ = unsafe { library.ncclResetDebugInit() };
        }
    }
}

pub use result::{NcclError, NcclStatus};
pub use safe::*;
