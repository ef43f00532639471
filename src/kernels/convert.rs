//! Typed launchers for `cuda/convert.cu`: f32 to and from f16 / bf16, rounding to nearest even;
//! f32 to f64 (exact, for accumulating f32 data in f64).

use std::sync::Arc;

use half::{bf16, f16};

use crate::driver::{CudaStream, CudaView, CudaViewMut, PushKernelArg};
use crate::error::Result;
use crate::kernels::{grid, shape, Kernels};

/// `out = x` converted element by element by the kernel `name`; both of one length.
fn convert<S, D>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    name: &'static str,
    x: &CudaView<S>,
    out: &mut CudaViewMut<D>,
) -> Result<()> {
    let n = shape::same_len(name, &[("x", x.len()), ("out", out.len())])?;
    if n == 0 {
        return Ok(());
    }
    let function = kernels.function(name)?;
    let count = n as u64;
    // SAFETY: the kernel reads n elements of x and writes n of out; both hold n.
    unsafe {
        stream
            .launch_builder(&function)
            .arg(x)
            .arg(out)
            .arg(&count)
            .launch(grid::elementwise(n, grid::Step::Vector))?;
    }
    Ok(())
}

/// `out = x as f16`, round to nearest even (beyond ±65504: infinity).
pub fn f32_to_f16(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    x: &CudaView<f32>,
    out: &mut CudaViewMut<f16>,
) -> Result<()> {
    convert(kernels, stream, "prism_f32_to_f16", x, out)
}

/// `out = x as f32` (exact).
pub fn f16_to_f32(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    x: &CudaView<f16>,
    out: &mut CudaViewMut<f32>,
) -> Result<()> {
    convert(kernels, stream, "prism_f16_to_f32", x, out)
}

/// `out = x as bf16`, round to nearest even (NaN stays NaN).
pub fn f32_to_bf16(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    x: &CudaView<f32>,
    out: &mut CudaViewMut<bf16>,
) -> Result<()> {
    convert(kernels, stream, "prism_f32_to_bf16", x, out)
}

/// `out = x as f32` (exact).
pub fn bf16_to_f32(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    x: &CudaView<bf16>,
    out: &mut CudaViewMut<f32>,
) -> Result<()> {
    convert(kernels, stream, "prism_bf16_to_f32", x, out)
}

/// `out = x as f64` (exact).
pub(crate) fn f32_to_f64(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    x: &CudaView<f32>,
    out: &mut CudaViewMut<f64>,
) -> Result<()> {
    convert(kernels, stream, "prism_f32_to_f64", x, out)
}
