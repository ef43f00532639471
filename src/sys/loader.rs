//! Finding and opening the CUDA driver and NVRTC libraries at run time.
//!
//! The driver is searched for as `$PRISM_CUDA_DRIVER` (a path) first, then `libcuda.so.1` and
//! `libcuda.so`; NVRTC as `$PRISM_NVRTC_LIBRARY`, then `libnvrtc.so.13`, `libnvrtc.so.12` and
//! `libnvrtc.so`. The first library that opens wins and stays loaded for the life of the process.

use std::ops::Deref;
use std::sync::OnceLock;

use super::driver::DriverFunctions;
use super::nvrtc::NvrtcFunctions;

/// Environment variable naming the driver library to load before the usual names.
pub const DRIVER_ENV: &str = "PRISM_CUDA_DRIVER";
/// Environment variable naming the NVRTC library to load before the usual names.
pub const NVRTC_ENV: &str = "PRISM_NVRTC_LIBRARY";

#[cfg(unix)]
const DRIVER_NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];
#[cfg(windows)]
const DRIVER_NAMES: &[&str] = &["nvcuda.dll"];
#[cfg(unix)]
const NVRTC_NAMES: &[&str] = &["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];
#[cfg(windows)]
const NVRTC_NAMES: &[&str] = &["nvrtc64_130_0.dll", "nvrtc64_120_0.dll"];

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
    #[error("the loaded CUDA library has no entry point `{0}` (driver too old?)")]
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
pub fn open_first(library: &'static str, candidates: &[String]) -> Result<libloading::Library, LoadError> {
    let mut tried = Vec::with_capacity(candidates.len());
    for name in candidates {
        // SAFETY: opening a CUDA library runs its initialisers, which have no preconditions; the
        // libraries named here are the system's own CUDA libraries or ones the user pointed us to.
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

impl Driver {
    /// Opens the first of `candidates` as the CUDA driver (no process-wide caching: see [`driver`]).
    pub fn open(candidates: &[String]) -> Result<Self, LoadError> {
        let library = open_first("the CUDA driver library (libcuda)", candidates)?;
        // SAFETY: the library was found under a CUDA driver name, so its symbols follow cuda.h;
        // the table is stored beside the library, which outlives it.
        let functions = unsafe { DriverFunctions::load(&library) };
        Ok(Loaded { functions, _library: library })
    }
}

impl Nvrtc {
    /// Opens the first of `candidates` as NVRTC (no process-wide caching: see [`nvrtc`]).
    pub fn open(candidates: &[String]) -> Result<Self, LoadError> {
        let library = open_first("the NVRTC library", candidates)?;
        // SAFETY: as for the driver: NVRTC names, nvrtc.h signatures, library kept beside the table.
        let functions = unsafe { NvrtcFunctions::load(&library) };
        Ok(Loaded { functions, _library: library })
    }
}

/// The process-wide CUDA driver, opened on first use.
pub fn driver() -> Result<&'static Driver, LoadError> {
    static DRIVER: OnceLock<Result<Driver, LoadError>> = OnceLock::new();
    DRIVER.get_or_init(|| Driver::open(&candidates(DRIVER_ENV, DRIVER_NAMES))).as_ref().map_err(Clone::clone)
}

/// The process-wide NVRTC library, opened on first use.
pub fn nvrtc() -> Result<&'static Nvrtc, LoadError> {
    static NVRTC: OnceLock<Result<Nvrtc, LoadError>> = OnceLock::new();
    NVRTC.get_or_init(|| Nvrtc::open(&candidates(NVRTC_ENV, NVRTC_NAMES))).as_ref().map_err(Clone::clone)
}
