//! Typed launchers for `cuda/reductions.cu`: sum, mean, max and argmax of a whole tensor (two
//! deterministic passes: per-block partials, then one block over them) and of each matrix row.
//! Max and argmax ignore NaN; argmax gives the first index of the maximum.

use std::sync::Arc;

use crate::driver::{CudaStream, CudaView, CudaViewMut, DeviceRepr, LaunchConfig, PushKernelArg};
use crate::error::{Error, Result};
use crate::kernels::{args, Kernels};

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
    let blocks = partial_blocks(n, kernels.multiprocessors());
    let count = n as u64;
    let cfg = LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (PARTIAL_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let blocks_i = blocks as i32; // at most 8 * SMs
    match op {
        Reduce::Sum | Reduce::Mean => {
            let mut parts = partials::<f64>(stream, blocks)?;
            let partial = kernels.function("prism_sum_partial_f32")?;
            let finalize = kernels.function("prism_sum_finalize_f32")?;
            let scale = if op == Reduce::Mean { (1.0 / n as f64) as f32 } else { 1.0 };
            // SAFETY: reads n elements of x, writes `blocks` partials (one per block).
            unsafe { stream.launch_builder(&partial).arg(x).arg(&mut parts).arg(&count).launch(cfg) }?;
            // SAFETY: reads the `blocks` partials, writes out[0]; out holds one element.
            unsafe {
                stream
                    .launch_builder(&finalize)
                    .arg(&parts)
                    .arg(&blocks_i)
                    .arg(out)
                    .arg(&scale)
                    .launch(one_block(FINALIZE_BLOCK))
            }?;
        }
        Reduce::Max => {
            let mut parts = partials::<f32>(stream, blocks)?;
            let partial = kernels.function("prism_max_partial_f32")?;
            let finalize = kernels.function("prism_max_finalize_f32")?;
            // SAFETY: reads n elements of x, writes `blocks` partials.
            unsafe { stream.launch_builder(&partial).arg(x).arg(&mut parts).arg(&count).launch(cfg) }?;
            // SAFETY: reads the partials, writes out[0].
            unsafe {
                stream
                    .launch_builder(&finalize)
                    .arg(&parts)
                    .arg(&blocks_i)
                    .arg(out)
                    .launch(one_block(FINALIZE_BLOCK))
            }?;
        }
    }
    Ok(())
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
    let blocks = partial_blocks(n, kernels.multiprocessors());
    let (count, blocks_i) = (n as u64, blocks as i32);
    let mut values = partials::<f32>(stream, blocks)?;
    let mut indices = partials::<u64>(stream, blocks)?;
    let partial = kernels.function("prism_argmax_partial_f32")?;
    let finalize = kernels.function("prism_argmax_finalize_f32")?;
    let cfg = LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (PARTIAL_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: reads n elements of x, writes `blocks` values and indices.
    unsafe {
        stream.launch_builder(&partial).arg(x).arg(&mut values).arg(&mut indices).arg(&count).launch(cfg)
    }?;
    let (vp, _v) = args::output(value, stream)?;
    // SAFETY: reads the partials, writes index[0] and value[0] (or skips the null value).
    unsafe {
        stream
            .launch_builder(&finalize)
            .arg(&values)
            .arg(&indices)
            .arg(&blocks_i)
            .arg(index)
            .arg(&vp)
            .launch(one_block(FINALIZE_BLOCK))
    }?;
    Ok(())
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
    let name = op.row_kernel();
    check_rows(name, x.len(), out.len(), rows, cols)?;
    if rows == 0 {
        return Ok(());
    }
    let (r, c) = (args::int(name, "rows", rows)?, args::int(name, "cols", cols)?);
    let function = kernels.function(name)?;
    // SAFETY: reads rows * cols elements of x, writes rows of out (checked above).
    unsafe {
        stream.launch_builder(&function).arg(x).arg(out).arg(&r).arg(&c).launch(row_config(rows, cols))
    }?;
    Ok(())
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
    const OP: &str = "prism_row_argmax_f32";
    check_rows(OP, x.len(), out.len(), rows, cols)?;
    if rows == 0 {
        return Ok(());
    }
    let (r, c) = (args::int(OP, "rows", rows)?, args::int(OP, "cols", cols)?);
    let function = kernels.function(OP)?;
    // SAFETY: reads rows * cols elements of x, writes rows of out.
    unsafe {
        stream.launch_builder(&function).arg(x).arg(out).arg(&r).arg(&c).launch(row_config(rows, cols))
    }?;
    Ok(())
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
