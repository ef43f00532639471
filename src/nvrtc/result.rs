//! Thin wrappers over the NVRTC entry points, returning `Result<_, NvrtcError>`.
//!
//! NVRTC is loaded at run time; when it cannot be, every call fails with
//! `NvrtcError(NVRTC_ERROR_PROGRAM_CREATION_FAILURE)` (the reason is in [`crate::sys::nvrtc_library()`]).

use std::ffi::{c_char, c_int, CStr, CString};

use super::sys;
use crate::sys::Nvrtc;

/// An NVRTC call that did not return `NVRTC_SUCCESS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NvrtcError(pub sys::nvrtcResult);

impl sys::nvrtcResult {
    /// `Ok(())` for `NVRTC_SUCCESS`, otherwise the code wrapped in an [`NvrtcError`].
    pub fn result(self) -> Result<(), NvrtcError> {
        if self == sys::nvrtcResult::NVRTC_SUCCESS {
            Ok(())
        } else {
            Err(NvrtcError(self))
        }
    }
}

impl std::fmt::Display for NvrtcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NvrtcError({})", self.0.name())
    }
}

impl std::error::Error for NvrtcError {}

/// The code reported when NVRTC itself cannot be loaded.
const NOT_LOADED: NvrtcError = NvrtcError(sys::nvrtcResult::NVRTC_ERROR_PROGRAM_CREATION_FAILURE);

fn lib() -> Result<&'static Nvrtc, NvrtcError> {
    crate::sys::nvrtc_library().map_err(|_| NOT_LOADED)
}

/// NVRTC's version, (major, minor). (A prism-gpu extension.)
#[doc(alias = "nvrtcVersion")]
pub fn version() -> Result<(i32, i32), NvrtcError> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two valid out-pointers.
    unsafe { lib()?.nvrtcVersion(&mut major, &mut minor) }.map_err(|_| NOT_LOADED)?.result()?;
    Ok((major, minor))
}

/// Creates a program from CUDA C++ source `src`, optionally named `name`.
#[doc(alias = "nvrtcCreateProgram")]
pub fn create_program(src: &CStr, name: Option<&CStr>) -> Result<sys::nvrtcProgram, NvrtcError> {
    let mut prog = std::ptr::null_mut();
    // SAFETY: valid out-pointer and NUL-terminated strings; no headers are passed.
    let code = unsafe {
        lib()?.nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            name.map_or(std::ptr::null(), CStr::as_ptr),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    }
    .map_err(|_| NOT_LOADED)?;
    code.result()?;
    Ok(prog)
}

/// Compiles `prog` with command-line style `options`.
///
/// # Safety
/// `prog` must come from [`create_program`] and not be destroyed.
#[doc(alias = "nvrtcCompileProgram")]
pub unsafe fn compile_program<O: Clone + Into<Vec<u8>>>(
    prog: sys::nvrtcProgram,
    options: &[O],
) -> Result<(), NvrtcError> {
    let owned: Vec<CString> = options
        .iter()
        .cloned()
        .map(|o| CString::new(o).map_err(|_| NvrtcError(sys::nvrtcResult::NVRTC_ERROR_INVALID_OPTION)))
        .collect::<Result<_, _>>()?;
    let ptrs: Vec<*const c_char> = owned.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: the option strings outlive the call; the caller vouches for `prog`.
    unsafe { lib()?.nvrtcCompileProgram(prog, ptrs.len() as c_int, ptrs.as_ptr()) }
        .map_err(|_| NOT_LOADED)?
        .result()
}

/// Destroys `prog`.
///
/// # Safety
/// `prog` must come from [`create_program`] and not be used afterwards.
#[doc(alias = "nvrtcDestroyProgram")]
pub unsafe fn destroy_program(prog: sys::nvrtcProgram) -> Result<(), NvrtcError> {
    let mut prog = prog;
    // SAFETY: the caller owns `prog`.
    unsafe { lib()?.nvrtcDestroyProgram(&mut prog) }.map_err(|_| NOT_LOADED)?.result()
}

/// The PTX of a compiled program, NUL-terminated.
///
/// # Safety
/// `prog` must come from [`create_program`], be compiled, and not be destroyed.
#[doc(alias = "nvrtcGetPTX")]
pub unsafe fn get_ptx(prog: sys::nvrtcProgram) -> Result<Vec<c_char>, NvrtcError> {
    let lib = lib()?;
    let mut size = 0usize;
    // SAFETY: valid out-pointer; the caller vouches for `prog`.
    unsafe { lib.nvrtcGetPTXSize(prog, &mut size) }.map_err(|_| NOT_LOADED)?.result()?;
    let mut buf: Vec<c_char> = vec![0; size];
    // SAFETY: the buffer has the size NVRTC asked for.
    unsafe { lib.nvrtcGetPTX(prog, buf.as_mut_ptr()) }.map_err(|_| NOT_LOADED)?.result()?;
    Ok(buf)
}

/// The compiler log of a program, NUL-terminated.
///
/// # Safety
/// `prog` must come from [`create_program`] and not be destroyed.
#[doc(alias = "nvrtcGetProgramLog")]
pub unsafe fn get_program_log(prog: sys::nvrtcProgram) -> Result<Vec<c_char>, NvrtcError> {
    let lib = lib()?;
    let mut size = 0usize;
    // SAFETY: valid out-pointer; the caller vouches for `prog`.
    unsafe { lib.nvrtcGetProgramLogSize(prog, &mut size) }.map_err(|_| NOT_LOADED)?.result()?;
    let mut buf: Vec<c_char> = vec![0; size.max(1)];
    // SAFETY: the buffer has at least the size NVRTC asked for.
    unsafe { lib.nvrtcGetProgramLog(prog, buf.as_mut_ptr()) }.map_err(|_| NOT_LOADED)?.result()?;
    Ok(buf)
}
