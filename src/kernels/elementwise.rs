//! Typed launchers for `cuda/elementwise.cu`: f32 arithmetic over equal-length vectors.

use std::sync::Arc;

use crate::driver::{CudaStream, CudaView, CudaViewMut, LaunchConfig};
use crate::error::Result;
use crate::kernels::args::CheckedPtrMut as _;
use crate::kernels::{grid, launch, shape, Kernels};

use crate::spec::elementwise::Binary;

/// `out = a ∘ b` elementwise; all three of one length.
pub fn binary(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    op: Binary,
    a: &CudaView<f32>,
    b: &CudaView<f32>,
    out: &mut CudaViewMut<f32>,
) -> Result<()> {
    let n = shape::same_len(op.kernel(), &[("a", a.len()), ("b", b.len()), ("out", out.len())])?;
    let count = n as u64;
    // SAFETY: the kernel reads `n` elements of a and b and writes `n` of out; all three hold `n`.
    unsafe { launch!(kernels, stream, op.kernel(), map(n), [a, b, out, &count]) }
}

/// `out = alpha * x + y`; all three of one length.
pub(crate) fn axpy(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    alpha: f32,
    x: &CudaView<f32>,
    y: &CudaView<f32>,
    out: &mut CudaViewMut<f32>,
) -> Result<()> {
    let n = shape::same_len("axpy", &[("x", x.len()), ("y", y.len()), ("out", out.len())])?;
    let count = n as u64;
    // SAFETY: reads n elements of x and y, writes n of out; all hold n.
    unsafe { launch!(kernels, stream, "prism_axpy_f32", map(n), [&alpha, x, y, out, &count]) }
}

/// `out = alpha * x`; both of one length.
pub(crate) fn scale(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    alpha: f32,
    x: &CudaView<f32>,
    out: &mut CudaViewMut<f32>,
) -> Result<()> {
    let n = shape::same_len("scale", &[("x", x.len()), ("out", out.len())])?;
    let count = n as u64;
    // SAFETY: reads n elements of x, writes n of out; both hold n.
    unsafe { launch!(kernels, stream, "prism_scale_f32", map(n), [&alpha, x, out, &count]) }
}

/// `x *= alpha` in place.
pub(crate) fn scale_inplace(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    alpha: f32,
    x: &mut CudaViewMut<f32>,
) -> Result<()> {
    let n = x.len();
    if n == 0 {
        return Ok(());
    }
    let count = n as u64;
    // The kernel allows its output to alias its input, so the one buffer is passed as both; the
    // guard records the write for other streams when it drops after the launch.
    let (ptr, _write) = x.checked_ptr_mut(stream)?;
    // SAFETY: reads and writes the n elements `x` holds, in place, which the kernel supports.
    unsafe { launch!(kernels, stream, "prism_scale_f32", map(n), [&alpha, &ptr, &ptr, &count]) }
}

/// Sets every element of `out` to `value`.
pub(crate) fn fill(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    out: &mut CudaViewMut<f32>,
    value: f32,
) -> Result<()> {
    let n = out.len();
    if n == 0 {
        return Ok(());
    }
    let count = n as u64;
    let config = grid::elementwise(n, grid::Step::Vector);
    // SAFETY: writes n elements of out, which holds n.
    unsafe { launch!(kernels, stream, "prism_fill_f32", config, [out, &value, &count]) }
}

/// The launch of the map kernels over `n` elements.
fn map(n: usize) -> LaunchConfig {
    grid::elementwise(n, grid::Step::Map)
}
