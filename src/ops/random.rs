//! Philox4x32-10 random fills (`cuda/random.cu`): where a fill starts, the element types, and the
//! uniform and normal fills of the runtime.
//!
//! A fill of `n` elements at [`Philox`] `{ seed, offset }` computes block `b` (four 32-bit words)
//! as Philox4x32-10 with key `seed` and 128-bit counter `offset + b`, for the blocks `0..n /
//! PER_BLOCK` (rounded up); element `i` depends only on `(seed, offset, i)`. How the words become
//! values is documented in `cuda/random.cu`; `cpu::random` computes the same numbers.
//! The values differ from cuRAND's Philox generator (another counter layout and conversions).

use crate::cpu;
use crate::driver::{CudaViewMut, DeviceRepr};
use crate::error::Result;
use crate::kernels::random as launch;
use crate::ops::{shape, Gpu, Map, Views};

/// Where a fill starts: the key and the first counter of a Philox4x32-10 stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Philox {
    /// The key.
    pub seed: u64,
    /// The counter of the fill's first block (blocks of four 32-bit words).
    pub offset: u64,
}

impl Philox {
    /// The stream `seed` from its start.
    pub fn new(seed: u64) -> Self {
        Self { seed, offset: 0 }
    }

    /// The position after a fill of `n` elements of `T`: the offset advanced by the blocks the
    /// fill consumed (modulo 2^64), so consecutive fills draw fresh numbers.
    pub fn after<T: RandomElement>(self, n: usize) -> Self {
        let blocks = (n as u64).div_ceil(T::PER_BLOCK as u64);
        Self { seed: self.seed, offset: self.offset.wrapping_add(blocks) }
    }
}

/// An element type with uniform fills: f32 and f64 in (0, 1], u32 and u64 raw bits.
pub trait RandomElement: DeviceRepr + Copy {
    /// Elements one Philox block yields (its 16 bytes of output).
    const PER_BLOCK: usize;
    /// The uniform entry point, and how many of its elements one `Self` is.
    const UNIFORM: (&'static str, usize);
}

/// The float types with normal and log-normal fills.
pub trait NormalElement: RandomElement {
    /// The normal entry point.
    const NORMAL: &'static str;
    /// The log-normal entry point.
    const LOG_NORMAL: &'static str;
}

impl RandomElement for u32 {
    const PER_BLOCK: usize = 4;
    const UNIFORM: (&'static str, usize) = ("prism_random_bits", 1);
}
impl RandomElement for u64 {
    const PER_BLOCK: usize = 2;
    // Little-endian: a u64 fill is the u32 fill of twice as many words.
    const UNIFORM: (&'static str, usize) = ("prism_random_bits", 2);
}
impl RandomElement for f32 {
    const PER_BLOCK: usize = 4;
    const UNIFORM: (&'static str, usize) = ("prism_random_uniform_f32", 1);
}
impl RandomElement for f64 {
    const PER_BLOCK: usize = 2;
    const UNIFORM: (&'static str, usize) = ("prism_random_uniform_f64", 1);
}
impl NormalElement for f32 {
    const NORMAL: &'static str = "prism_random_normal_f32";
    const LOG_NORMAL: &'static str = "prism_random_log_normal_f32";
}
impl NormalElement for f64 {
    const NORMAL: &'static str = "prism_random_normal_f64";
    const LOG_NORMAL: &'static str = "prism_random_log_normal_f64";
}

/// What a normal-family fill draws.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Normal<T> {
    /// `N(mean, std^2)`.
    Normal {
        /// Mean.
        mean: T,
        /// Standard deviation.
        std: T,
    },
    /// `exp(N(mean, std^2))`.
    LogNormal {
        /// Mean of the underlying normal.
        mean: T,
        /// Standard deviation of the underlying normal.
        std: T,
    },
}

/// `len` uniform f32 in (0, 1] from the stream at `at`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Uniform {
    pub len: usize,
    pub at: Philox,
}

impl Map<0> for Uniform {
    type In = f32;
    type Out = f32;

    fn check(self, []: [usize; 0]) -> Result<usize> {
        Ok(self.len)
    }

    fn launch(self, gpu: Gpu, []: Views<f32, 0>, out: &mut CudaViewMut<f32>) -> Result<()> {
        launch::uniform(gpu.kernels, gpu.stream, out, self.at).map(drop)
    }

    fn cpu(self, []: [&[f32]; 0], len: usize) -> Result<Vec<f32>> {
        let mut out = shape::zeroed("rand_uniform", "out", len)?;
        cpu::random::uniform_f32(&mut out, self.at);
        Ok(out)
    }
}

/// `len` f32 from `N(mean, std^2)` (Box-Muller) on the stream at `at`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Gaussian {
    pub len: usize,
    pub mean: f32,
    pub std: f32,
    pub at: Philox,
}

impl Map<0> for Gaussian {
    type In = f32;
    type Out = f32;

    fn check(self, []: [usize; 0]) -> Result<usize> {
        Ok(self.len)
    }

    fn launch(self, gpu: Gpu, []: Views<f32, 0>, out: &mut CudaViewMut<f32>) -> Result<()> {
        let draw = Normal::Normal { mean: self.mean, std: self.std };
        launch::normal(gpu.kernels, gpu.stream, out, self.at, draw).map(drop)
    }

    fn cpu(self, []: [&[f32]; 0], len: usize) -> Result<Vec<f32>> {
        let mut out = shape::zeroed("rand_normal", "out", len)?;
        cpu::random::normal_f32(&mut out, self.at, self.mean, self.std, false);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_advances_by_the_blocks_consumed() {
        let at = Philox { seed: 7, offset: 10 };
        assert_eq!(at.after::<f32>(0), at);
        assert_eq!(at.after::<f32>(1).offset, 11);
        assert_eq!(at.after::<f32>(8).offset, 12);
        assert_eq!(at.after::<u32>(9).offset, 13);
        assert_eq!(at.after::<f64>(3).offset, 12);
        assert_eq!(at.after::<u64>(4).offset, 12);
        assert_eq!(Philox { seed: 1, offset: u64::MAX }.after::<f32>(5).offset, 1);
        assert_eq!(at.after::<f32>(5).seed, 7);
    }
}
