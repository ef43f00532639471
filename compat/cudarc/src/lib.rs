//! prism-gpu under the name `cudarc`, for `[patch.crates-io]`: every public item of prism-gpu
//! (`driver`, `nvrtc`, `types`, and the modules its features turn on) at the same path as in cudarc.
pub use prism_gpu::*;
