//! Philox4x32-10 random fills (`cuda/random.cu`): where a fill starts, the element types, and the
//! uniform and normal fills of the runtime.
//!
//! A fill of `n` elements at [`Philox`] `{ seed, offset }` computes block `b` (four 32-bit words)
//! as Philox4x32-10 with key `seed` and 128-bit counter `offset + b`, for the blocks `0..n /
//! PER_BLOCK` (rounded up); element `i` depends only on `(seed, offset, i)`. How the words become
//! values is documented in `cuda/random.cu`; `cpu::random` computes the same numbers.
//! The values differ from cuRAND's Philox generator (another counter layout and conversions).

use crate::cpu;
use crate::kernels::random as launch;
use crate::ops::{map, shape};

pub use crate::spec::random::{Normal, NormalElement, Philox, RandomElement};

/// `len` uniform f32 in (0, 1] from the stream at `at`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Uniform {
    pub len: usize,
    pub at: Philox,
}

/// `len` f32 from `N(mean, std^2)` (Box-Muller) on the stream at `at`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Gaussian {
    pub len: usize,
    pub mean: f32,
    pub std: f32,
    pub at: Philox,
}

map! {
    impl Map<0> for Uniform: In = f32, Out = f32 {
        check(self, []) { Ok(self.len) }
        launch(self, gpu, [], out) { launch::uniform(gpu.kernels, gpu.stream, out, self.at).map(drop) }
        cpu(self, [], len) {
            let mut out = shape::zeroed("rand_uniform", "out", len)?;
            cpu::random::uniform_f32(&mut out, self.at);
            Ok(out)
        }
    }

    impl Map<0> for Gaussian: In = f32, Out = f32 {
        check(self, []) { Ok(self.len) }
        launch(self, gpu, [], out) {
            let draw = Normal::Normal { mean: self.mean, std: self.std };
            launch::normal(gpu.kernels, gpu.stream, out, self.at, draw).map(drop)
        }
        cpu(self, [], len) {
            let mut out = shape::zeroed("rand_normal", "out", len)?;
            cpu::random::normal_f32(&mut out, self.at, self.mean, self.std, false);
            Ok(out)
        }
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
