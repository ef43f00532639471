//! Typed launcher for `cuda/asum.cu`: BLAS asum, the sum of `|x[i * incx]|` over n elements, in
//! two deterministic passes (per-block f64 partials, then one block over them).

use std::sync::Arc;

use crate::driver::{CudaStream, DeviceRepr, LaunchConfig};
use crate::error::Result;
use crate::kernels::reductions::partial_blocks;
use crate::kernels::{launch, Kernels};

/// Threads per block of the partial pass.
const PARTIAL_BLOCK: u32 = 256;
/// Threads of the one finalising block.
const FINALIZE_BLOCK: u32 = 1024;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The element types asum reads and writes: `f32` and `f64` (both summed in f64).
pub trait AsumElement: DeviceRepr + Copy + sealed::Sealed {
    /// The name used in kernel entry points.
    const NAME: &'static str;
}
impl AsumElement for f32 {
    const NAME: &'static str = "f32";
}
impl AsumElement for f64 {
    const NAME: &'static str = "f64";
}

/// Writes `sum |x[i * incx]|` for i in `0..n` to the one `T` at device address `out` (0 when n is
/// 0), ordered on `stream`.
///
/// # Safety
/// `x` must address `(n - 1) * incx + 1` elements of `T` (none when n is 0) and `out` one, in live
/// device allocations of `kernels`' context; nothing else may write x or use out until the work
/// enqueued on `stream` is done.
pub unsafe fn asum_raw<T: AsumElement>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    n: usize,
    x: u64,
    incx: usize,
    out: u64,
) -> Result<()> {
    let blocks = partial_blocks(n, kernels.multiprocessors());
    // SAFETY: the partial pass writes one element per block, `blocks` blocks, before the final
    // pass reads them.
    let mut partials = unsafe { stream.alloc::<f64>(blocks) }?;
    let partial = format!("prism_asum_partial_{}", T::NAME);
    let finalize = format!("prism_asum_finalize_{}", T::NAME);
    let (count, stride, parts) = (n as u64, incx as i64, blocks as i32); // blocks <= 8 * SMs
    let cfg = LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (PARTIAL_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: `(x, n, incx, partials)`: reads the n strided elements the caller vouches for, writes
    // `blocks` partials (one per block).
    unsafe { launch!(kernels, stream, &partial, cfg, [&x, &count, &stride, &mut partials]) }?;
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (FINALIZE_BLOCK, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: `(partials, count, out)`: reads the `blocks` partials, writes the one `T` at `out`.
    unsafe { launch!(kernels, stream, &finalize, one, [&partials, &parts, &out]) }
}
