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
    const PER_BLOCK: usize = 16 / std::mem::size_of::<Self>();
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

/// The element types' entry points: `type: uniform (elements of it per value)`, then the normal
/// and log-normal ones of the float types.
macro_rules! entry_points {
    ($($t:ty: $uniform:literal ($per_value:literal) $(, $normal:literal, $log_normal:literal)?;)+) => {$(
        impl RandomElement for $t {
            const UNIFORM: (&'static str, usize) = ($uniform, $per_value);
        }
        $(impl NormalElement for $t {
            const NORMAL: &'static str = $normal;
            const LOG_NORMAL: &'static str = $log_normal;
        })?
    )+};
}

entry_points! {
    u32: "prism_random_bits" (1);
    // Little-endian: a u64 fill is the u32 fill of twice as many words.
    u64: "prism_random_bits" (2);
    f32: "prism_random_uniform_f32" (1), "prism_random_normal_f32", "prism_random_log_normal_f32";
    f64: "prism_random_uniform_f64" (1), "prism_random_normal_f64", "prism_random_log_normal_f64";
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
