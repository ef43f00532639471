//! Typed launchers for `cuda/activations.cu`: forward and backward passes of the activation
//! functions, out of place or in place.

use std::sync::Arc;

use crate::driver::sys::CUdeviceptr;
use crate::driver::{CudaStream, CudaView, CudaViewMut, LaunchArgs, PushKernelArg};
use crate::error::Result;
use crate::kernels::args::{CheckedPtr as _, CheckedPtrMut as _};
use crate::kernels::{grid, shape, Kernels};

use crate::spec::activations::Activation;

/// Pushes the slope, the one parameter (leaky ReLU only), where the kernels take it: after the
/// buffers, before the count.
fn push_parameter<'a>(act: &'a Activation, args: &mut LaunchArgs<'a>) {
    if let Activation::LeakyRelu(slope) = act {
        args.arg(slope);
    }
}

/// Launches `name(inputs..., out, [slope], n)` over `n` elements.
fn launch(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    act: Activation,
    name: &'static str,
    pointers: &[CUdeviceptr],
    n: usize,
) -> Result<()> {
    let function = kernels.function(name)?;
    let count = n as u64;
    let mut args = stream.launch_builder(&function);
    for p in pointers {
        args.arg(p);
    }
    push_parameter(&act, &mut args);
    args.arg(&count);
    // SAFETY: every pointer addresses n elements (checked by the callers), the kernel reads its
    // inputs and writes its output (which may alias an input) at indices below n.
    unsafe { args.launch(grid::elementwise(n, grid::Step::Map)) }?;
    Ok(())
}

/// `out = f(x)`; both of one length.
pub fn forward(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    act: Activation,
    x: &CudaView<f32>,
    out: &mut CudaViewMut<f32>,
) -> Result<()> {
    let n = shape::same_len(act.kernel(), &[("x", x.len()), ("out", out.len())])?;
    if n == 0 {
        return Ok(());
    }
    let (xp, _read) = x.checked_ptr(stream)?;
    let (op, _write) = out.checked_ptr_mut(stream)?;
    launch(kernels, stream, act, act.kernel(), &[xp, op], n)
}

/// `x = f(x)` in place.
pub fn forward_inplace(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    act: Activation,
    x: &mut CudaViewMut<f32>,
) -> Result<()> {
    let n = x.len();
    if n == 0 {
        return Ok(());
    }
    let (xp, _write) = x.checked_ptr_mut(stream)?;
    launch(kernels, stream, act, act.kernel(), &[xp, xp], n)
}

/// `dx = dy * f'(x)` with `x` the forward input; all three of one length.
pub fn backward(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    act: Activation,
    dy: &CudaView<f32>,
    x: &CudaView<f32>,
    dx: &mut CudaViewMut<f32>,
) -> Result<()> {
    let n = shape::same_len(act.backward_kernel(), &[("dy", dy.len()), ("x", x.len()), ("dx", dx.len())])?;
    if n == 0 {
        return Ok(());
    }
    let (gp, _read_dy) = dy.checked_ptr(stream)?;
    let (xp, _read_x) = x.checked_ptr(stream)?;
    let (dp, _write) = dx.checked_ptr_mut(stream)?;
    launch(kernels, stream, act, act.backward_kernel(), &[gp, xp, dp], n)
}

/// `dy = dy * f'(x)` in place, with `x` the forward input; both of one length.
pub fn backward_inplace(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    act: Activation,
    dy: &mut CudaViewMut<f32>,
    x: &CudaView<f32>,
) -> Result<()> {
    let n = shape::same_len(act.backward_kernel(), &[("dy", dy.len()), ("x", x.len())])?;
    if n == 0 {
        return Ok(());
    }
    let (xp, _read) = x.checked_ptr(stream)?;
    let (gp, _write) = dy.checked_ptr_mut(stream)?;
    launch(kernels, stream, act, act.backward_kernel(), &[gp, xp, gp], n)
}
