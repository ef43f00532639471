//! [`Ptx`], [`CompileOptions`], [`compile_ptx`] and [`CompileError`].

use std::ffi::{c_char, CString};
use std::path::PathBuf;

use super::cache::NvrtcCache;
use super::result::{self, NvrtcError};
use super::sys;

/// Device code to load with [`CudaContext::load_module`](crate::driver::CudaContext::load_module):
/// NVRTC output, PTX text, a file (PTX, cubin or fatbin), or a binary image (cubin or fatbin).
#[derive(Debug, Clone)]
pub struct Ptx(pub(crate) PtxKind);

#[derive(Debug, Clone)]
pub(crate) enum PtxKind {
    /// NUL-terminated PTX from [`compile_ptx`].
    Image(Vec<c_char>),
    /// PTX text.
    Src(String),
    /// A PTX, cubin or fatbin file.
    File(PathBuf),
    /// A cubin or fatbin image.
    Binary(Vec<u8>),
}

impl Ptx {
    /// A PTX, cubin or fatbin file, read when the module is loaded.
    pub fn from_file<P: Into<PathBuf>>(path: P) -> Self {
        Ptx(PtxKind::File(path.into()))
    }

    /// PTX text.
    pub fn from_src<S: Into<String>>(src: S) -> Self {
        Ptx(PtxKind::Src(src.into()))
    }

    /// A cubin or fatbin image (for example one embedded with `include_bytes!`).
    pub fn from_binary(data: Vec<u8>) -> Self {
        Ptx(PtxKind::Binary(data))
    }

    /// The PTX text.
    ///
    /// # Panics
    /// For a binary image, and for a file that cannot be read as text.
    pub fn to_src(&self) -> String {
        match &self.0 {
            PtxKind::Image(chars) => {
                let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
                String::from_utf8(bytes).expect("NVRTC produced PTX that is not UTF-8")
            }
            PtxKind::Src(src) => src.clone(),
            PtxKind::File(path) => std::fs::read_to_string(path).expect("unable to read the PTX file"),
            PtxKind::Binary(_) => panic!("Ptx::to_src: a binary image (cubin/fatbin) has no PTX text"),
        }
    }

    /// The bytes of NVRTC output (with its terminating NUL); `None` for the other kinds.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match &self.0 {
            PtxKind::Image(chars) => {
                // SAFETY: `c_char` and `u8` have the same size and alignment, and every bit
                // pattern is valid for both; the borrow of `self` keeps the buffer alive.
                Some(unsafe { std::slice::from_raw_parts(chars.as_ptr().cast(), chars.len()) })
            }
            _ => None,
        }
    }
}

impl<S: Into<String>> From<S> for Ptx {
    fn from(value: S) -> Self {
        Ptx::from_src(value)
    }
}

/// Options for [`compile_ptx_with_opts`]. Each `Some` field becomes one NVRTC option; `None`
/// fields are left out; `options` are passed last, verbatim.
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq)]
pub struct CompileOptions {
    /// `--ftz=<bool>`: flush denormals to zero.
    pub ftz: Option<bool>,
    /// `--prec-sqrt=<bool>`: IEEE-rounded square root.
    pub prec_sqrt: Option<bool>,
    /// `--prec-div=<bool>`: IEEE-rounded division.
    pub prec_div: Option<bool>,
    /// `--fmad=<bool>`: contract multiply-adds.
    pub fmad: Option<bool>,
    /// Further options, passed verbatim after the others.
    pub options: Vec<String>,
    /// `Some(true)` emits `--fmad=true`, exactly as cudarc 0.19 does (add `--use_fast_math` to
    /// `options` for NVRTC's fast-math mode).
    pub use_fast_math: Option<bool>,
    /// `--maxrregcount=<n>`.
    pub maxrregcount: Option<usize>,
    /// `--include-path=<path>`, one per entry.
    pub include_paths: Vec<String>,
    /// `--gpu-architecture=<arch>` (e.g. `"compute_80"`, `"sm_90"`).
    pub arch: Option<&'static str>,
    /// The program's name in NVRTC's messages.
    pub name: Option<String>,
}

impl CompileOptions {
    /// The option strings passed to NVRTC, in cudarc's order. (Public in prism-gpu.)
    pub fn build(self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(v) = self.ftz {
            out.push(format!("--ftz={v}"));
        }
        if let Some(v) = self.prec_sqrt {
            out.push(format!("--prec-sqrt={v}"));
        }
        if let Some(v) = self.prec_div {
            out.push(format!("--prec-div={v}"));
        }
        if let Some(v) = self.fmad {
            out.push(format!("--fmad={v}"));
        }
        if self.use_fast_math == Some(true) {
            out.push("--fmad=true".to_owned());
        }
        if let Some(n) = self.maxrregcount {
            out.push(format!("--maxrregcount={n}"));
        }
        for path in self.include_paths {
            out.push(format!("--include-path={path}"));
        }
        if let Some(arch) = self.arch {
            out.push(format!("--gpu-architecture={arch}"));
        }
        out.extend(self.options);
        out
    }
}

/// Why [`compile_ptx`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompileError {
    /// The program could not be created (also: NVRTC could not be loaded, or the source holds a NUL).
    CreationError(NvrtcError),
    /// The compiler rejected the program.
    CompileError {
        /// NVRTC's code.
        nvrtc: NvrtcError,
        /// The options it was given.
        options: Vec<String>,
        /// The compiler's log (the error messages).
        log: CString,
    },
    /// Reading the compiler log failed.
    GetLogError(NvrtcError),
    /// Reading the PTX failed.
    GetPtxError(NvrtcError),
    /// Destroying the program failed.
    DestroyError(NvrtcError),
}

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompileError::CompileError { nvrtc, options, log } => {
                write!(
                    f,
                    "NVRTC compilation failed ({nvrtc}) with options {options:?}:\n{}",
                    log.to_string_lossy()
                )
            }
            CompileError::CreationError(e) => {
                write!(f, "NVRTC could not create the program ({e})")?;
                if let Err(load) = crate::sys::nvrtc_library() {
                    write!(f, ": {load}")?;
                }
                Ok(())
            }
            other => write!(f, "{other:?}"),
        }
    }
}

impl std::error::Error for CompileError {}

/// Compiles CUDA C++ source to PTX with default options.
pub fn compile_ptx<S: AsRef<str>>(src: S) -> Result<Ptx, CompileError> {
    compile_ptx_with_opts(src, CompileOptions::default())
}

/// Compiles CUDA C++ source to PTX with `opts`, through the on-disk cache
/// ([`NvrtcCache::global`]; a prism-gpu extension): a cached result is byte for byte what NVRTC
/// returned for the same source, options, NVRTC version and architecture.
#[doc(alias = "nvrtcCompileProgram")]
pub fn compile_ptx_with_opts<S: AsRef<str>>(src: S, opts: CompileOptions) -> Result<Ptx, CompileError> {
    NvrtcCache::global().compile_ptx_with_opts(src, opts)
}

impl Ptx {
    /// NVRTC output (with its NUL), as [`compile_to_bytes`] returns it.
    pub(super) fn from_nvrtc_bytes(bytes: Vec<u8>) -> Self {
        Ptx(PtxKind::Image(bytes.into_iter().map(|b| b as c_char).collect()))
    }
}

/// Compiles with NVRTC, no cache: the PTX bytes NVRTC returns (with its NUL).
pub(super) fn compile_to_bytes(src: &str, opts: CompileOptions) -> Result<Vec<u8>, CompileError> {
    let invalid_input = CompileError::CreationError(NvrtcError(sys::nvrtcResult::NVRTC_ERROR_INVALID_INPUT));
    let src = CString::new(src).map_err(|_| invalid_input.clone())?;
    let name = match opts.name.as_deref().map(CString::new) {
        None => None,
        Some(Ok(name)) => Some(name),
        Some(Err(_)) => return Err(invalid_input),
    };
    let prog = Program(result::create_program(&src, name.as_deref()).map_err(CompileError::CreationError)?);
    let options = opts.build();
    // SAFETY: `prog` is a live program; `src` and `name` outlive it (dropped after `prog`).
    if let Err(nvrtc) = unsafe { result::compile_program(prog.0, &options) } {
        // SAFETY: as above.
        let raw = unsafe { result::get_program_log(prog.0) }.map_err(CompileError::GetLogError)?;
        let bytes: Vec<u8> = raw.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
        let log = CString::new(bytes).unwrap_or_default();
        return Err(CompileError::CompileError { nvrtc, options, log });
    }
    // SAFETY: as above; the program compiled.
    let image = unsafe { result::get_ptx(prog.0) }.map_err(CompileError::GetPtxError)?;
    prog.destroy().map_err(CompileError::DestroyError)?;
    Ok(image.into_iter().map(|c| c as u8).collect())
}

/// Owns an `nvrtcProgram`; destroys it on drop (ignoring errors: drop never panics).
struct Program(sys::nvrtcProgram);

impl Program {
    fn destroy(mut self) -> Result<(), NvrtcError> {
        let prog = std::mem::replace(&mut self.0, std::ptr::null_mut());
        // SAFETY: we own the program and it is not used again.
        unsafe { result::destroy_program(prog) }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: we own the program and it is not used again.
            let _ = unsafe { result::destroy_program(self.0) };
        }
    }
}
