//! The row contract of softmax and the norms: one block per row, the block sized from the row
//! width, and optional dynamic shared memory that keeps rows wider than the registers hold on
//! chip (read once instead of twice).

use crate::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use crate::driver::{CudaFunction, LaunchConfig};
use crate::error::Result;
use crate::kernels::Kernels;

/// Dynamic shared memory a kernel may use without opting in.
const DEFAULT_SHARED_LIMIT: usize = 48 * 1024;
/// Bytes of one vector chunk (a 16-byte load).
const CHUNK_BYTES: usize = 16;

/// How a row kernel holds a row: `lanes` elements per 16-byte chunk, `register_chunks` chunks per
/// thread in registers; the rest of a row goes to dynamic shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowContract {
    /// Elements per 16-byte chunk: 4 for f32, 8 for bf16.
    pub lanes: usize,
    /// Chunks per thread kept in registers (the kernel's `K`).
    pub register_chunks: usize,
}

/// Threads per block for rows of `cols` elements: one per 32 elements, rounded up to whole warps,
/// between 32 and 1024.
pub(crate) fn block(cols: usize) -> u32 {
    (cols.div_ceil(32).next_multiple_of(32)).clamp(32, 1024) as u32
}

/// Dynamic shared memory that keeps a row of `cols` on chip with `block` threads; 0 when the
/// registers suffice or the vector path cannot run (`cols` not a multiple of the lanes).
pub(crate) fn shared_bytes(contract: RowContract, cols: usize, block: u32) -> usize {
    if cols % contract.lanes != 0 {
        return 0;
    }
    let per_thread = (cols / contract.lanes).div_ceil(block as usize);
    CHUNK_BYTES * block as usize * per_thread.saturating_sub(contract.register_chunks)
}

/// The launch of `function` over `rows` rows of `cols` elements under `contract`. Shared memory
/// above 48 KiB is opted into (up to the device's limit less the kernel's static shared memory);
/// a row that would need more than that is streamed from memory twice instead.
pub(crate) fn config(
    kernels: &Kernels,
    function: &CudaFunction,
    contract: RowContract,
    rows: usize,
    cols: usize,
) -> Result<LaunchConfig> {
    let block = block(cols);
    let mut shared = shared_bytes(contract, cols, block);
    if shared > DEFAULT_SHARED_LIMIT {
        let optin = kernels
            .context()
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
        let limit = (optin - function.shared_size_bytes()?).max(0);
        if shared > limit as usize {
            shared = 0;
        } else {
            // The largest allowed value, so that concurrent launches with smaller needs agree.
            function.set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                limit,
            )?;
        }
    }
    Ok(LaunchConfig {
        grid_dim: (rows as u32, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: shared as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const F32: RowContract = RowContract { lanes: 4, register_chunks: 8 };
    const BF16: RowContract = RowContract { lanes: 8, register_chunks: 4 };

    #[test]
    fn blocks_follow_the_row_width() {
        assert_eq!(block(1), 32);
        assert_eq!(block(33), 32);
        assert_eq!(block(1000), 32);
        assert_eq!(block(1025), 64);
        assert_eq!(block(8192), 256);
        assert_eq!(block(65_536), 1024);
        assert_eq!(block(1 << 30), 1024);
    }

    #[test]
    fn shared_memory_only_for_rows_wider_than_the_registers() {
        assert_eq!(shared_bytes(F32, 8192, 256), 0);
        assert_eq!(shared_bytes(BF16, 8192, 256), 0);
        // 65536 f32 over 1024 threads: 16 chunks each, 8 in registers, 8 in shared memory
        assert_eq!(shared_bytes(F32, 65_536, 1024), 16 * 1024 * 8);
        assert_eq!(shared_bytes(RowContract { lanes: 4, register_chunks: 7 }, 65_536, 1024), 16 * 1024 * 9);
        assert_eq!(shared_bytes(F32, 65_537, 1024), 0); // not a whole number of vectors
        assert_eq!(shared_bytes(F32, 4097, 160), 0);
    }
}
