//! Philox4x32-10 random fills (`cuda/random.cu`): where a fill starts and the element types.

use crate::driver::DeviceRepr;

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
