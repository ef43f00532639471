//! Typed launcher for `cuda/transpose.cu`: the transpose of a dense row-major f32 matrix.

use std::sync::Arc;

use crate::driver::{CudaStream, CudaView, CudaViewMut, LaunchConfig};
use crate::error::Result;
use crate::kernels::{args, grid, launch, shape, Kernels};

/// Rows and columns of the tile one block moves through shared memory.
const TILE_ROWS: usize = 64;
const TILE_COLS: usize = 32;

/// The launch for a `[rows, cols]` matrix: a block of 32 x 8 threads per 64 x 32 tile.
pub(crate) fn config(rows: usize, cols: usize) -> LaunchConfig {
    LaunchConfig {
        // At most GRID_YZ_MAX blocks along y; the kernel loops over further row tiles.
        grid_dim: (
            cols.div_ceil(TILE_COLS) as u32,
            rows.div_ceil(TILE_ROWS).min(grid::GRID_YZ_MAX) as u32,
            1,
        ),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    }
}

/// `out[c, r] = x[r, c]`: `out` (`[cols, rows]`) is the transpose of `x` (`[rows, cols]`). `out`
/// must be a different buffer (the borrow rules see to it).
pub fn transpose(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    x: &CudaView<f32>,
    out: &mut CudaViewMut<f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    const OP: &str = "prism_transpose_f32";
    shape::matrix(OP, "x", x.len(), rows, cols)?;
    shape::matrix(OP, "out", out.len(), cols, rows)?;
    if x.is_empty() {
        return Ok(());
    }
    let (r, c) = (args::int(OP, "rows", rows)?, args::int(OP, "cols", cols)?);
    // SAFETY: reads rows * cols elements of x and writes as many of out (checked above).
    unsafe { launch!(kernels, stream, OP, config(rows, cols), [x, out, &r, &c]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_cover_the_matrix() {
        let c = config(33, 65);
        assert_eq!((c.grid_dim, c.block_dim), ((3, 1, 1), (32, 8, 1)));
        assert_eq!(config(65, 64).grid_dim, (2, 2, 1));
        assert_eq!(config(10_000_000, 1).grid_dim, (1, 65_535, 1));
    }
}
