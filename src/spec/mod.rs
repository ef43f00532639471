//! The vocabulary of the operations, below everything that runs them: which activation, reduction
//! or optimiser, the dimensions of a GEMV or a pattern correlation, where a random fill starts, and
//! the shape checks every layer makes before a launch.
//!
//! `kernels` (the GPU launchers) and `cpu` (the CPU fallback) take these types, and `ops` ties them
//! to the launch and the CPU body of each operation; so they live below all three. This module is
//! private: each public type here has one public path, under [`ops`](crate::ops) (the
//! `ops::<family>` module of the same name re-exports it), e.g. [`ops::activations::Activation`].
//!
//! [`ops::activations::Activation`]: crate::ops::activations::Activation

pub mod activations;
pub mod elementwise;
pub mod gemv;
pub mod neuromorphic;
pub mod nn;
pub mod norms;
pub mod random;
pub mod reductions;
pub mod shape;
pub mod softmax;
