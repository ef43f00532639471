//! Typed launchers for `cuda/softmax.cu`: softmax and log-softmax over the rows of a row-major
//! matrix, numerically stable (the row maximum is subtracted first).

use std::sync::Arc;

use crate::driver::sys::CUdeviceptr;
use crate::driver::{CudaStream, CudaView, CudaViewMut};
use crate::error::Result;
use crate::kernels::args::{CheckedPtr as _, CheckedPtrMut as _};
use crate::kernels::rows::{self, RowContract};
use crate::kernels::{args, launch, shape, Kernels};

use crate::spec::softmax::Softmax;

/// Rows held in registers up to 32 floats per thread; the rest in shared memory.
const CONTRACT: RowContract = RowContract { lanes: 4, register_chunks: 8 };

fn launch(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    kind: Softmax,
    x: CUdeviceptr,
    out: CUdeviceptr,
    rows: usize,
    cols: usize,
) -> Result<()> {
    let (r, c) = (args::int(kind.kernel(), "rows", rows)?, args::int(kind.kernel(), "cols", cols)?);
    let function = kernels.function(kind.kernel())?;
    let cfg = rows::config(kernels, &function, CONTRACT, rows, cols)?;
    // SAFETY: x and out address rows * cols elements (checked by the callers); the kernel reads
    // row blockIdx.x of x and writes the same row of out, which may alias x.
    unsafe { launch!(stream, &function, cfg, [&x, &out, &r, &c]) }
}

/// `out` = softmax (or log-softmax) of each row of `x` (`[rows, cols]`); `out` as long as `x`.
pub fn rows(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    kind: Softmax,
    x: &CudaView<f32>,
    out: &mut CudaViewMut<f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    shape::matrix(kind.kernel(), "x", x.len(), rows, cols)?;
    shape::same_len(kind.kernel(), &[("x", x.len()), ("out", out.len())])?;
    if x.is_empty() {
        return Ok(());
    }
    let (xp, _read) = x.checked_ptr(stream)?;
    let (op, _write) = out.checked_ptr_mut(stream)?;
    launch(kernels, stream, kind, xp, op, rows, cols)
}

/// Softmax (or log-softmax) of each row of `x` (`[rows, cols]`) in place.
pub fn rows_inplace(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    kind: Softmax,
    x: &mut CudaViewMut<f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    shape::matrix(kind.kernel(), "x", x.len(), rows, cols)?;
    if x.is_empty() {
        return Ok(());
    }
    let (xp, _write) = x.checked_ptr_mut(stream)?;
    launch(kernels, stream, kind, xp, xp, rows, cols)
}
