//! The crate's error type.

use crate::sys::driver::CUresult;
use crate::sys::LoadError;

/// Everything that can go wrong in prism-gpu above the cudarc-shaped `driver` layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A CUDA library or one of its entry points could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A raw driver call failed.
    #[error("{call} failed: {}", result_name(*.result))]
    DriverCall {
        /// The driver function that failed.
        call: &'static str,
        /// What it returned.
        result: CUresult,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The constant's name of a driver result, or its number when these bindings do not know it.
pub fn result_name(result: CUresult) -> String {
    result.name().map_or_else(|| format!("CUresult({})", result.0), str::to_string)
}

/// Turns a driver result into `Ok(())` or [`Error::DriverCall`] naming `call`.
pub(crate) fn check(call: &'static str, result: CUresult) -> Result<()> {
    if result == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::DriverCall { call, result })
    }
}
