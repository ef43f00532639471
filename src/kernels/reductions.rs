//! Typed launchers for `cuda/reductions.cu`: sum, mean, max and argmax of a whole tensor (two
//! deterministic passes: per-block partials, then one block over them) and of each matrix row.
//! Max and argmax ignore NaN; argmax gives the first index of the maximum.

use std::sync::Arc;

use crate::driver::{CudaStream, CudaView, CudaViewMut, DeviceRepr, LaunchConfig};
use crate::error::{Error, Result};
use crate::kernels::{args, launch, Kernels};

use crate::spec::reductions::{check_rows, Reduce};

/// Threads per block of the partial kernels.
const PARTIAL_BLOCK: u32 = 256;
/// Threads of the one finalising block.
const FINALIZE_BLOCK: u32 = 1024;
/// Elements per partial block before another block is worth launching.
const ELEMENTS_PER_BLOCK: usize = 4096;
/// Partial blocks per multiprocessor at most.
const BLOCKS_PER_SM: usize = 8;

/// The number of partial blocks (and partials) for `n` elements: fixed for a given `n` and
/// device, so the result is deterministic.
pub(crate) fn partial_blocks(n: usize, multiprocessors: u32) -> usize {
    n.div_ceil(ELEMENTS_PER_BLOCK).clamp(1, BLOCKS_PER_SM * multiprocessors as usize)
}

/// The partial blocks for `n` elements and their launch.
fn partial_grid(n: usize, kernels: &Kernels) -> (usize, LaunchConfig) {
    let blocks = partial_blocks(n, kernels.multiprocessors());
    let cfg = LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (PARTIAL_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    (blocks, cfg)
}

fn one_block(threads: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: (1, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 }
}

/// Scratch for the partials, written entirely by the partial kernel.
fn partials<T: DeviceRepr>(stream: &Arc<CudaStream>, count: usize) -> Result<crate::driver::CudaSlice<T>> {
    // SAFETY: the partial kernel writes one element per block, `count` blocks, before the
    // finalising kernel reads them.
    Ok(unsafe { stream.alloc::<T>(count) }?)
}

fn check_scalar<T>(op: &'static str, out: &CudaViewMut<T>) -> Result<()> {
    args::optional_len(op, "out", Some(out.len()), 1)
}

/// `out[0]` = sum, mean or maximum of `x` (`out` holds one element). An empty `x` gives 0, NaN and
/// `-inf` respectively.
pub fn reduce(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    op: Reduce,
    x: &CudaView<f32>,
    out: &mut CudaViewMut<f32>,
) -> Result<()> {
    let name = match op {
        Reduce::Sum => "sum",
        Reduce::Mean => "mean",
        Reduce::Max => "max",
    };
    check_scalar(name, out)?;
    let n = x.len();
    let (blocks, cfg) = partial_grid(n, kernels);
    let (count, blocks_i) = (n as u64, blocks as i32); // at most 8 * SMs
    let finish = one_block(FINALIZE_BLOCK);
    match op {
        Reduce::Sum | Reduce::Mean => {
            let mut parts = partials::<f64>(stream, blocks)?;
            let scale = if op == Reduce::Mean { (1.0 / n as f64) as f32 } else { 1.0 };
            // SAFETY: reads n elements of x, writes `blocks` partials (one per block).
            unsafe { launch!(kernels, stream, "prism_sum_partial_f32", cfg, [x, &mut parts, &count]) }?;
            // SAFETY: reads the `blocks` partials, writes out[0]; out holds one element.
            unsafe {
                launch!(kernels, stream, "prism_sum_finalize_f32", finish, [&parts, &blocks_i, out, &scale])
            }
        }
        Reduce::Max => {
            let mut parts = partials::<f32>(stream, blocks)?;
            // SAFETY: reads n elements of x, writes `blocks` partials.
            unsafe { launch!(kernels, stream, "prism_max_partial_f32", cfg, [x, &mut parts, &count]) }?;
            // SAFETY: reads the partials, writes out[0].
            unsafe { launch!(kernels, stream, "prism_max_finalize_f32", finish, [&parts, &blocks_i, out]) }
        }
    }
}

/// `index[0]` = the first index of the maximum of `x` (NaN skipped; 0 when every element is NaN),
/// and `value[0]` its value when given. `x` must not be empty.
pub fn argmax(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    x: &CudaView<f32>,
    index: &mut CudaViewMut<u64>,
    value: Option<&mut CudaViewMut<f32>>,
) -> Result<()> {
    const OP: &str = "argmax";
    check_scalar(OP, index)?;
    if let Some(v) = &value {
        check_scalar(OP, v)?;
    }
    let n = x.len();
    if n == 0 {
        return Err(Error::Shape {
            op: OP,
            expected: "at least one element".into(),
            got: "0 elements".into(),
        });
    }
    let (blocks, cfg) = partial_grid(n, kernels);
    let (count, blocks_i) = (n as u64, blocks as i32);
    let mut values = partials::<f32>(stream, blocks)?;
    let mut indices = partials::<u64>(stream, blocks)?;
    // SAFETY: reads n elements of x, writes `blocks` values and indices.
    unsafe {
        launch!(kernels, stream, "prism_argmax_partial_f32", cfg, [x, &mut values, &mut indices, &count])
    }?;
    let (vp, _v) = args::output(value, stream)?;
    let finish = one_block(FINALIZE_BLOCK);
    // SAFETY: reads the partials, writes index[0] and value[0] (or skips the null value).
    unsafe {
        launch!(
            kernels,
            stream,
            "prism_argmax_finalize_f32",
            finish,
            [&values, &indices, &blocks_i, index, &vp]
        )
    }
}

/// Threads per block for per-row reductions of `cols`: one per 16 elements, whole warps, 32 to 512.
pub(crate) fn row_block(cols: usize) -> u32 {
    cols.div_ceil(16).next_multiple_of(32).clamp(32, 512) as u32
}

fn row_config(rows: usize, cols: usize) -> LaunchConfig {
    LaunchConfig { grid_dim: (rows as u32, 1, 1), block_dim: (row_block(cols), 1, 1), shared_mem_bytes: 0 }
}

/// `out[r]` = sum, mean or maximum of row `r` of `x` (`[rows, cols]`, `cols >= 1`).
pub fn rows(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    op: Reduce,
    x: &CudaView<f32>,
    out: &mut CudaViewMut<f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    per_row(kernels, stream, op.row_kernel(), x, out, rows, cols)
}

/// `out[r]` = the first column index of the maximum of row `r` (NaN skipped; 0 for an all-NaN row).
pub fn row_argmax(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    x: &CudaView<f32>,
    out: &mut CudaViewMut<i32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    per_row(kernels, stream, "prism_row_argmax_f32", x, out, rows, cols)
}

/// `out[r]` = the kernel `name`'s reduction of row `r` of `x` (`[rows, cols]`), one block a row.
fn per_row<T>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    name: &'static str,
    x: &CudaView<f32>,
    out: &mut CudaViewMut<T>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    check_rows(name, x.len(), out.len(), rows, cols)?;
    if rows == 0 {
        return Ok(());
    }
    let (r, c) = (args::int(name, "rows", rows)?, args::int(name, "cols", cols)?);
    // SAFETY: reads rows * cols elements of x, writes rows of out (checked above).
    unsafe { launch!(kernels, stream, name, row_config(rows, cols), [x, out, &r, &c]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_shapes() {
        assert_eq!(partial_blocks(0, 132), 1);
        assert_eq!(partial_blocks(4097, 132), 2);
        assert_eq!(partial_blocks(1 << 28, 132), 1056);
        assert_eq!(row_block(1), 32);
        assert_eq!(row_block(1000), 64);
        assert_eq!(row_block(8192), 512);
        assert_eq!(row_block(65_536), 512);
    }
}
