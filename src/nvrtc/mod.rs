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

    crate::sys::culib_functions!(nvrtc_library, "NVRTC", nvrtcGetErrorString(nvrtcResult));
}

pub(crate) use compile::PtxKind;
pub use compile::{compile_ptx, compile_ptx_with_opts, CompileError, CompileOptions, Ptx};
pub use result::NvrtcError;
