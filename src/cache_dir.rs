//! Where prism-gpu keeps its per-user caches on disk: the NVRTC compilations
//! ([`crate::nvrtc::cache`]) and the GEMM kernels tuned on first use
//! (`kernels::gemm::autotune`), each in a folder of its own.

use std::ffi::OsString;
use std::path::PathBuf;

/// The folder a cache's variable `name` describes, `var` reading the environment: unset, the
/// default `$XDG_CACHE_HOME/prism-gpu/<leaf>` (an absolute `XDG_CACHE_HOME` only, as the XDG spec
/// asks), else `$HOME/.cache/prism-gpu/<leaf>`; `off` or empty, none (the cache is off); else
/// the folder it names.
pub(crate) fn folder(var: impl Fn(&str) -> Option<OsString>, name: &str, leaf: &str) -> Option<PathBuf> {
    let non_empty = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    match var(name) {
        Some(dir) if dir.is_empty() || dir == "off" => None,
        Some(dir) => Some(PathBuf::from(dir)),
        None => non_empty("XDG_CACHE_HOME")
            .filter(|d| d.is_absolute())
            .or_else(|| non_empty("HOME").map(|home| home.join(".cache")))
            .map(|cache| cache.join("prism-gpu").join(leaf)),
    }
}
