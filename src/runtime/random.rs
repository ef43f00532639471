//! Philox4x32-10 random fills on host slices.

use super::ProductionGpuRuntime;
use crate::error::Result;
use crate::ops::random::{Gaussian, Philox, Uniform};

impl ProductionGpuRuntime {
    /// `n` uniform f32 in (0, 1] from the Philox4x32-10 stream at `at` (see
    /// [`kernels::random`](crate::raw::kernels::random)); the next fill of the stream starts at
    /// `at.after::<f32>(n)`. Bit-identical on GPU and CPU.
    pub fn rand_uniform(&self, n: usize, at: Philox) -> Result<Vec<f32>> {
        self.map(Uniform { len: n, at }, [])
    }

    /// `n` f32 from `N(mean, std^2)` (Box-Muller on the Philox stream at `at`, any `n`); the next
    /// fill starts at `at.after::<f32>(n)`. GPU and CPU agree to 1 ulp.
    pub fn rand_normal(&self, n: usize, mean: f32, std: f32, at: Philox) -> Result<Vec<f32>> {
        self.map(Gaussian { len: n, mean, std, at }, [])
    }
}
