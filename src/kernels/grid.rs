//! Launch shapes shared by the launchers.

use crate::driver::LaunchConfig;

/// Threads per block of the grid-stride (elementwise) kernels.
pub const ELEMENTWISE_BLOCK: u32 = 256;
/// Largest grid.x of a launch.
const GRID_X_MAX: u64 = (1 << 31) - 1;
/// Largest grid.y or grid.z of a launch.
pub const GRID_YZ_MAX: usize = 65_535;

/// How many elements one thread of a 1-D grid-stride kernel handles per step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The maps of `cuda/kit.cuh` (`map1`, `map2`): `kMapU` = 4 vectors of 4 f32.
    Map,
    /// One vector of 4 elements.
    Vector,
    /// One element.
    Scalar,
}

impl Step {
    fn elements(self) -> u64 {
        match self {
            Step::Map => 16,
            Step::Vector => 4,
            Step::Scalar => 1,
        }
    }
}

/// A 1-D launch over `n` elements with one step per thread: a single pass, so no block loops.
/// On the H100 a grid-stride relu over 2^28 f32 ran at 0.95x the device-to-device copy with the
/// grid capped at 16 blocks per multiprocessor (two waves of resident blocks, each looping) and
/// at 0.995x with one block per 4096 elements; cache hints changed nothing.
pub(crate) fn elementwise(n: usize, step: Step) -> LaunchConfig {
    let per_block = ELEMENTWISE_BLOCK as u64 * step.elements();
    let blocks = (n as u64).div_ceil(per_block).clamp(1, GRID_X_MAX) as u32;
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (ELEMENTWISE_BLOCK, 1, 1), shared_mem_bytes: 0 }
}

/// A 1-D launch of an ALU-bound grid-stride kernel over `n` steps: one step per thread up to
/// `STRIDED_BLOCKS_PER_SM` blocks per multiprocessor, beyond which threads loop. Philox normals
/// (2^28 f32, H100, notes/philox-normal) ran at 1779 GB/s with a thread per step and 2081 GB/s
/// capped at 32 blocks per multiprocessor (16: 2074, 8: 2041), the uniform fill at 2980 and
/// 3069 GB/s: the block's fixed cost (the key schedule, the first loads of the constants) is
/// paid fewer times.
pub(crate) fn strided(n: usize, multiprocessors: u32) -> LaunchConfig {
    let mut config = elementwise(n, Step::Scalar);
    config.grid_dim.0 = config.grid_dim.0.min(multiprocessors.max(1).saturating_mul(STRIDED_BLOCKS_PER_SM));
    config
}

/// Blocks per multiprocessor of [`strided`].
const STRIDED_BLOCKS_PER_SM: u32 = 32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_grids_stop_at_their_cap() {
        assert_eq!(strided(1000, 132).grid_dim, (4, 1, 1));
        assert_eq!(strided(1 << 26, 132).grid_dim, (132 * 32, 1, 1));
        assert_eq!(strided(1 << 26, 0).grid_dim, (32, 1, 1));
    }

    #[test]
    fn elementwise_grid_covers_each_element_once() {
        assert_eq!(elementwise(1, Step::Map).grid_dim, (1, 1, 1));
        assert_eq!(elementwise(0, Step::Scalar).grid_dim, (1, 1, 1));
        assert_eq!(elementwise(4096, Step::Map).grid_dim, (1, 1, 1));
        assert_eq!(elementwise(4097, Step::Map).grid_dim, (2, 1, 1));
        assert_eq!(elementwise(1025, Step::Vector).grid_dim, (2, 1, 1));
        assert_eq!(elementwise(257, Step::Scalar).grid_dim, (2, 1, 1));
        assert_eq!(elementwise(1 << 28, Step::Map).grid_dim, (1 << 16, 1, 1));
        assert_eq!(elementwise(1 << 28, Step::Map).block_dim, (256, 1, 1));
        assert_eq!(elementwise(usize::MAX, Step::Scalar).grid_dim.0 as u64, GRID_X_MAX);
    }
}
