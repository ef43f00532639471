//! Finding and opening the CUDA driver, NVRTC and NCCL libraries at run time.
//!
//! The driver is searched for as `$PRISM_CUDA_DRIVER` (a path) first, then `libcuda.so.1` and
//! `libcuda.so`; NVRTC as `$PRISM_NVRTC_LIBRARY`, then `libnvrtc.so.13`, `libnvrtc.so.12` and
//! `libnvrtc.so`; NCCL as `$PRISM_NCCL_LIBRARY`, then `libnccl.so.2` and `libnccl.so`. The first
//! library that opens wins and stays loaded for the life of the process.

use std::ops::Deref;
use std::sync::OnceLock;

use super::driver::DriverFunctions;
use super::nccl::NcclFunctions;
use super::nvrtc::NvrtcFunctions;

/// Environment variable naming the driver library to load before the usual names.
pub const DRIVER_ENV: &str = "PRISM_CUDA_DRIVER";
/// Environment variable naming the NVRTC library to load before the usual names.
pub const NVRTC_ENV: &str = "PRISM_NVRTC_LIBRARY";
/// Environment variable naming the NCCL library to load before the usual names.
pub const NCCL_ENV: &str = "PRISM_NCCL_LIBRARY";

#[cfg(unix)]
const DRIVER_NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];
#[cfg(windows)]
const DRIVER_NAMES: &[&str] = &["nvcuda.dll"];
#[cfg(unix)]
const NVRTC_NAMES: &[&str] = &["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];
#[cfg(windows)]
const NVRTC_NAMES: &[&str] = &["nvrtc64_130_0.dll", "nvrtc64_120_0.dll"];
/// NCCL's names (NCCL ships for Linux only; elsewhere only the override can name a library).
pub const NCCL_NAMES: &[&str] = &["libnccl.so.2", "libnccl.so"];

/// Why a CUDA library or one of its entry points is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// No candidate library could be opened.
    #[error("{library} not found; tried {}", describe_attempts(.tried))]
    LibraryNotFound {
        /// Which library was looked for ("the CUDA driver", "NVRTC").
        library: &'static str,
        /// Every name or path tried, in order, with the loader's reason for refusing it.
        tried: Vec<Attempt>,
    },
    /// The loaded library does not export this entry point (it is older than the bindings).
    #[error("the loaded CUDA library has no entry point `{0}` (library too old?)")]
    MissingSymbol(&'static str),
}

/// One library name or path the loader tried, and why it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The name or path passed to the dynamic loader.
    pub name: String,
    /// The dynamic loader's message.
    pub reason: String,
}

fn describe_attempts(tried: &[Attempt]) -> String {
    tried.iter().map(|a| format!("`{}` ({})", a.name, a.reason)).collect::<Vec<_>>().join(", ")
}

/// The names to try for a library: the environment override first, then the usual names.
pub fn candidates(env_var: &str, names: &[&str]) -> Vec<String> {
    let from_env = std::env::var_os(env_var).filter(|v| !v.is_empty());
    from_env
        .map(|v| v.to_string_lossy().into_owned())
        .into_iter()
        .chain(names.iter().map(|n| n.to_string()))
        .collect()
}

/// Opens the first of `candidates` that the dynamic loader accepts.
///
/// # Safety
/// Opening a library runs its initialisers (ELF constructors, `DllMain`), which may do anything, and
/// on some platforms it is not thread-safe with respect to other loader calls (see
/// [`libloading::Library::new`]). The caller must make sure every name in `candidates` that can be
/// opened is a library whose initialisers are sound to run in this process.
///
/// ```compile_fail,E0133
/// let _ = prism_gpu::sys::loader::open_first("libm", &["libm.so.6".to_string()]);
/// ```
pub unsafe fn open_first(
    library: &'static str,
    candidates: &[String],
) -> Result<libloading::Library, LoadError> {
    let mut tried = Vec::with_capacity(candidates.len());
    for name in candidates {
        // SAFETY: the caller guarantees that any of `candidates` the loader opens has initialisers
        // that are sound to run here (this function's contract).
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => return Ok(lib),
            Err(e) => tried.push(Attempt { name: name.clone(), reason: e.to_string() }),
        }
    }
    Err(LoadError::LibraryNotFound { library, tried })
}

/// Looks up `symbol` (NUL-terminated) in `library` as a function pointer of type `T`.
///
/// # Safety
/// `T` must be the C signature the library gives `symbol`, and `library` must stay loaded for as
/// long as the returned pointer is used.
pub unsafe fn resolve<T: Copy>(library: &libloading::Library, symbol: &[u8]) -> Option<T> {
    // SAFETY: the caller guarantees `T` matches the symbol; we copy the pointer out and the caller
    // keeps the library loaded.
    unsafe { library.get::<T>(symbol).ok().map(|s| *s) }
}

/// A loaded library with its table of entry points; derefs to the table.
pub struct Loaded<F> {
    functions: F,
    // Keeps the code behind `functions` mapped; declared last so it is dropped last.
    _library: libloading::Library,
}

impl<F> Deref for Loaded<F> {
    type Target = F;
    fn deref(&self) -> &F {
        &self.functions
    }
}

/// The CUDA driver library and its entry points.
pub type Driver = Loaded<DriverFunctions>;
/// The NVRTC library and its entry points.
pub type Nvrtc = Loaded<NvrtcFunctions>;
/// The NCCL library and its entry points.
pub type Nccl = Loaded<NcclFunctions>;

impl Driver {
    /// Opens the first of `candidates` as the CUDA driver (no process-wide caching: see [`driver_library`]).
    ///
    /// # Safety
    /// Opening runs the library's initialisers (see [`open_first`]), and the returned table calls
    /// the library's exported functions with the signatures `cuda.h` gives them. The caller must
    /// make sure the first of `candidates` that opens is a CUDA driver (or an ABI-compatible
    /// implementation) whose initialisers are sound to run, and whose every exported symbol named
    /// like a driver entry point has that entry point's C signature and behaviour. Opening an
    /// unrelated library (say `libm.so.6`) is not an error this function can detect.
    ///
    /// Calling it from safe code does not compile:
    /// ```compile_fail,E0133
    /// let _ = prism_gpu::sys::Driver::open(&["libm.so.6".to_string()]);
    /// ```
    pub unsafe fn open(candidates: &[String]) -> Result<Self, LoadError> {
        // SAFETY: the caller guarantees the candidates' initialisers are sound to run.
        let library = unsafe { open_first("the CUDA driver library (libcuda)", candidates)? };
        // SAFETY: the caller guarantees the library's symbols follow cuda.h; the table is stored
        // beside the library, which outlives it.
        let functions = unsafe { DriverFunctions::load(&library) };
        Ok(Loaded { functions, _library: library })
    }
}

impl Nvrtc {
    /// Opens the first of `candidates` as NVRTC (no process-wide caching: see [`nvrtc_library`]).
    ///
    /// # Safety
    /// As for [`Driver::open`]: the first of `candidates` that opens must be an NVRTC library whose
    /// initialisers are sound to run and whose exported NVRTC entry points have the signatures and
    /// behaviour `nvrtc.h` gives them.
    ///
    /// ```compile_fail,E0133
    /// let _ = prism_gpu::sys::Nvrtc::open(&["libm.so.6".to_string()]);
    /// ```
    pub unsafe fn open(candidates: &[String]) -> Result<Self, LoadError> {
        // SAFETY: the caller guarantees the candidates' initialisers are sound to run.
        let library = unsafe { open_first("the NVRTC library", candidates)? };
        // SAFETY: the caller guarantees nvrtc.h signatures; the library is kept beside the table.
        let functions = unsafe { NvrtcFunctions::load(&library) };
        Ok(Loaded { functions, _library: library })
    }
}

impl Nccl {
    /// Opens the first of `candidates` as NCCL (no process-wide caching: see [`nccl_library`]).
    ///
    /// # Safety
    /// As for [`Driver::open`]: the first of `candidates` that opens must be an NCCL library whose
    /// initialisers are sound to run and whose exported NCCL entry points have the signatures and
    /// behaviour `nccl.h` gives them.
    ///
    /// ```compile_fail,E0133
    /// let _ = prism_gpu::sys::Nccl::open(&["libm.so.6".to_string()]);
    /// ```
    pub unsafe fn open(candidates: &[String]) -> Result<Self, LoadError> {
        // SAFETY: the caller guarantees the candidates' initialisers are sound to run.
        let library = unsafe { open_first("the NCCL library (libnccl)", candidates)? };
        // SAFETY: the caller guarantees nccl.h signatures; the library is kept beside the table.
        let functions = unsafe { NcclFunctions::load(&library) };
        Ok(Loaded { functions, _library: library })
    }
}

/// Each process-wide library: a function that opens it from its well-known names and its
/// environment override (`candidates`) on first use, and gives the same library, or the same
/// error, to every later call.
macro_rules! process_wide {
    ($($(#[$doc:meta])* $name:ident: $library:ty = ($env:expr, $names:expr);)+) => {$(
        $(#[$doc])*
        pub fn $name() -> Result<&'static $library, LoadError> {
            static LIBRARY: OnceLock<Result<$library, LoadError>> = OnceLock::new();
            LIBRARY
                .get_or_init(|| {
                    // SAFETY: the candidates are the library's well-known names and the process
                    // owner's override; a library found under them is trusted to be that library
                    // (see `driver_library`).
                    unsafe { <$library>::open(&candidates($env, $names)) }
                })
                .as_ref()
                .map_err(Clone::clone)
        }
    )+};
}

process_wide! {
    /// The process-wide CUDA driver, opened on first use.
    ///
    /// This is safe to call although [`Driver::open`] is not: it opens only the well-known names of
    /// the system's CUDA driver (`libcuda.so.1`, `libcuda.so`, `nvcuda.dll`) or the path in
    /// `$PRISM_CUDA_DRIVER`. A library installed under the driver's own name is trusted to be the
    /// driver, as every libloading-based binding (cudarc with `dynamic-loading`, ash for
    /// `libvulkan`) trusts it; the environment override is the process owner's configuration, with
    /// the same standing as `LD_LIBRARY_PATH` or `LD_PRELOAD`, which can already substitute any
    /// library the process loads.
    driver_library: Driver = (DRIVER_ENV, DRIVER_NAMES);

    /// The process-wide NVRTC library, opened on first use.
    ///
    /// Safe for the reason [`driver_library`] is: only NVRTC's well-known names and the process
    /// owner's `$PRISM_NVRTC_LIBRARY` override are opened.
    nvrtc_library: Nvrtc = (NVRTC_ENV, NVRTC_NAMES);

    /// The process-wide NCCL library, opened on first use.
    ///
    /// Safe for the reason [`driver_library`] is: only NCCL's well-known names and the process
    /// owner's `$PRISM_NCCL_LIBRARY` override are opened.
    nccl_library: Nccl = (NCCL_ENV, NCCL_NAMES);
}
