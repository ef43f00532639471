//! The high-level runtime: [`cpu`] holds the CPU implementation of every operation.

pub mod cpu;
