//! The `prism-gpu` command line's library: the benchmark harness ([`mod@bench`]: CUDA-event timing,
//! warm-up, medians, rows of ours against an anchor measured in the same run, Markdown, JSON and SVG
//! output) shared by the binary and `cargo bench`, and the self-test ([`selftest`]: every runtime
//! operation on the GPU and the CPU fallback against f64 references). It uses prism-gpu's public API
//! only, like any user.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

pub mod bench;
pub mod selftest;
