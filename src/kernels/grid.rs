//! Launch shapes shared by the launchers.

use crate::driver::LaunchConfig;

/// Threads per block of the grid-stride (elementwise) kernels.
pub const ELEMENTWISE_BLOCK: u32 = 256;
/// Elements one thread handles per grid-stride step (16-byte vectors of f32).
const ELEMENTS_PER_THREAD: u64 = 4;
/// Resident blocks per multiprocessor worth launching for a grid-stride loop.
const BLOCKS_PER_SM: u32 = 16;
/// Largest grid.y or grid.z of a launch.
pub const GRID_YZ_MAX: usize = 65_535;

/// A 1-D grid-stride launch over `n` elements: enough blocks to fill the device, never more than
/// the elements need.
pub fn elementwise(n: usize, multiprocessors: u32) -> LaunchConfig {
    let per_block = ELEMENTWISE_BLOCK as u64 * ELEMENTS_PER_THREAD;
    let needed = (n as u64).div_ceil(per_block).max(1);
    let blocks = needed.min(u64::from(multiprocessors) * u64::from(BLOCKS_PER_SM)) as u32;
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (ELEMENTWISE_BLOCK, 1, 1), shared_mem_bytes: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elementwise_grid_covers_small_inputs_and_caps_large_ones() {
        assert_eq!(elementwise(1, 132).grid_dim, (1, 1, 1));
        assert_eq!(elementwise(1024, 132).grid_dim, (1, 1, 1));
        assert_eq!(elementwise(1025, 132).grid_dim, (2, 1, 1));
        assert_eq!(elementwise(1 << 28, 132).grid_dim, (132 * 16, 1, 1));
        assert_eq!(elementwise(1 << 28, 132).block_dim, (256, 1, 1));
    }
}
