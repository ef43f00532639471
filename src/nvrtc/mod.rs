//! Run-time compilation of CUDA C++ with NVRTC, with the paths, names and behaviour of
//! cudarc 0.19's `cudarc::nvrtc`. NVRTC is loaded when first used; when it cannot be,
//! compiling returns an error (never a panic).

pub mod cache;
mod compile;
pub mod result;

/// cudarc's `nvrtc::safe`: the safe API under cudarc's names (the same items as at the module
/// root, where cudarc also re-exports them).
pub mod safe {
    pub use super::{compile_ptx, compile_ptx_with_opts, CompileError, CompileOptions, Ptx};
}

/// The raw NVRTC bindings (`nvrtc.h`), as `cudarc::nvrtc::sys`.
#[allow(non_snake_case)] // the C library's names
pub mod sys {
    pub use crate::sys::nvrtc::*;

    use std::ffi::c_char;

    /// Whether the NVRTC library could be loaded (by this crate's loader, which
    /// [`crate::sys::nvrtc_library`] gives with the reason when it could not).
    ///
    /// # Safety
    /// None beyond the signature: `unsafe` as in cudarc (loading runs the library's
    /// initialisers, which this crate's loader does once, for every caller).
    pub unsafe fn is_culib_present() -> bool {
        crate::sys::nvrtc_library().is_ok()
    }

    /// `nvrtcGetErrorString` through the process-wide NVRTC library: NVRTC's description of
    /// `result`, or, when no NVRTC library (or one without this function) could be loaded, a
    /// sentence saying so. A static C string either way.
    ///
    /// # Safety
    /// None beyond the signature: the returned string is static.
    pub unsafe fn nvrtcGetErrorString(result: nvrtcResult) -> *const c_char {
        // SAFETY: no pointer argument; NVRTC returns a static string.
        let found = crate::sys::nvrtc_library().map(|library| unsafe { library.nvrtcGetErrorString(result) });
        crate::sys::static_text(found, c"no NVRTC library is loaded to describe this code")
    }
}

pub(crate) use compile::PtxKind;
pub use compile::{compile_ptx, compile_ptx_with_opts, CompileError, CompileOptions, Ptx};
pub use result::NvrtcError;
