//! Typed launchers for `cuda/nn.cu`: a dense layer's bias (add, gradient), the fused losses
//! (softmax cross-entropy and MSE: per-row loss and gradient in one launch), dropout, row gathers
//! and the optimiser steps ([`Optimizer`]), one launch over every parameter.

use std::sync::Arc;

use crate::driver::sys::CUdeviceptr;
use crate::driver::{CudaStream, CudaView, CudaViewMut, LaunchConfig, PushKernelArg};
use crate::error::{Error, Result};
use crate::kernels::args::{self, CheckedPtr as _, CheckedPtrMut as _};
use crate::kernels::{grid, launch, shape, Kernels};

/// Rows per block of the one-warp-per-row loss kernels (256 threads).
const ROWS_PER_BLOCK: usize = 8;

use crate::spec::nn::{check_dropout_rate, Optimizer};

/// One block of 256 threads for every 8 rows.
fn rows_config(rows: usize) -> LaunchConfig {
    let blocks = rows.div_ceil(ROWS_PER_BLOCK).max(1) as u32;
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }
}

/// `y[r, c] += bias[c]` for `y` `[rows, cols]`.
pub(crate) fn bias_add(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    y: &mut CudaViewMut<f32>,
    bias: &CudaView<f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    const OP: &str = "prism_bias_add_f32";
    shape::matrix(OP, "y", y.len(), rows, cols)?;
    args::optional_len(OP, "bias", Some(bias.len()), cols)?;
    let n = y.len();
    if n == 0 {
        return Ok(());
    }
    let (r, c) = (args::int(OP, "rows", rows)?, args::int(OP, "cols", cols)?);
    let (bp, _read) = bias.checked_ptr(stream)?;
    let (yp, _write) = y.checked_ptr_mut(stream)?;
    // SAFETY: y holds rows * cols elements and bias cols (checked above); the kernel touches no others.
    unsafe { launch!(kernels, stream, OP, scalar(n), [&yp, &bp, &r, &c]) }
}

/// `db[c] = sum_r dy[r, c]` for `dy` `[rows, cols]` (deterministic; `rows == 0` gives zeros).
pub(crate) fn bias_grad(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    dy: &CudaView<f32>,
    db: &mut CudaViewMut<f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    const OP: &str = "prism_bias_grad_f32";
    shape::matrix(OP, "dy", dy.len(), rows, cols)?;
    args::optional_len(OP, "db", Some(db.len()), cols)?;
    if cols == 0 {
        return Ok(());
    }
    let (r, c) = (args::int(OP, "rows", rows)?, args::int(OP, "cols", cols)?);
    let (gp, _read) = dy.checked_ptr(stream)?;
    let (dp, _write) = db.checked_ptr_mut(stream)?;
    let cfg = LaunchConfig {
        grid_dim: (cols.div_ceil(32) as u32, 1, 1),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: dy holds rows * cols elements and db cols (checked above); the kernel reads dy at
    // r * cols + c and writes db at c for r < rows, c < cols.
    unsafe { launch!(kernels, stream, OP, cfg, [&gp, &dp, &r, &c]) }
}

/// Per-row outputs of a fused loss: the loss of each row, and (cross-entropy) 1 where the row's
/// first maximum is at its label, else 0.
pub struct LossRows<'a, 'b> {
    /// `loss[r]`, `rows` elements.
    pub loss: &'a mut CudaViewMut<'b, f32>,
    /// The gradient with respect to the input, `[rows, cols]`; not computed when absent.
    pub grad: Option<&'a mut CudaViewMut<'b, f32>>,
    /// Scale of the gradient (`1 / rows` for a mean over the batch).
    pub grad_scale: f32,
}

/// Softmax cross-entropy of each row of `logits` (`[rows, cols]`) against `labels` (`rows`;
/// a label outside `0..cols` gives NaN): per-row loss, correctness and the optional gradient.
#[allow(clippy::too_many_arguments)] // the kernel's operands, each named
pub(crate) fn softmax_xent(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    logits: &CudaView<f32>,
    labels: &CudaView<i32>,
    out: LossRows<'_, '_>,
    correct: &mut CudaViewMut<f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    const OP: &str = "prism_softmax_xent_f32";
    shape::matrix(OP, "logits", logits.len(), rows, cols)?;
    shape::same_len(OP, &[("labels", labels.len()), ("loss", out.loss.len()), ("correct", correct.len())])?;
    args::optional_len(OP, "labels", Some(labels.len()), rows)?;
    args::optional_len(OP, "grad", out.grad.as_ref().map(|g| g.len()), logits.len())?;
    if rows == 0 {
        return Ok(());
    }
    if cols == 0 {
        return Err(Error::Shape { op: OP, expected: "at least one class".into(), got: "0 columns".into() });
    }
    let (r, c) = (args::int(OP, "rows", rows)?, args::int(OP, "cols", cols)?);
    let (xp, _x) = logits.checked_ptr(stream)?;
    let (lp, _l) = labels.checked_ptr(stream)?;
    let (gp, _g) = args::output(out.grad, stream)?;
    let (op, _o) = out.loss.checked_ptr_mut(stream)?;
    let (cp, _c) = correct.checked_ptr_mut(stream)?;
    let config = rows_config(rows);
    // SAFETY: logits (and grad, when given) hold rows * cols elements, labels, loss and correct
    // rows (checked above); the kernel reads a row's logits only at a label inside 0..cols.
    unsafe { launch!(kernels, stream, OP, config, [&xp, &lp, &gp, &op, &cp, &out.grad_scale, &r, &c]) }
}

/// Mean squared error of each row of `pred` against `target` (both `[rows, cols]`): `loss[r] =
/// sum_c (pred - target)^2 / cols` and the optional gradient `2 (pred - target) grad_scale`.
#[allow(clippy::too_many_arguments)] // the kernel's operands, each named
pub(crate) fn mse(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    pred: &CudaView<f32>,
    target: &CudaView<f32>,
    out: LossRows<'_, '_>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    const OP: &str = "prism_mse_f32";
    shape::matrix(OP, "pred", pred.len(), rows, cols)?;
    shape::matrix(OP, "target", target.len(), rows, cols)?;
    args::optional_len(OP, "loss", Some(out.loss.len()), rows)?;
    args::optional_len(OP, "grad", out.grad.as_ref().map(|g| g.len()), pred.len())?;
    if rows == 0 {
        return Ok(());
    }
    if cols == 0 {
        return Err(Error::Shape { op: OP, expected: "at least one column".into(), got: "0 columns".into() });
    }
    let (r, c) = (args::int(OP, "rows", rows)?, args::int(OP, "cols", cols)?);
    let (pp, _p) = pred.checked_ptr(stream)?;
    let (tp, _t) = target.checked_ptr(stream)?;
    let (gp, _g) = args::output(out.grad, stream)?;
    let (op, _o) = out.loss.checked_ptr_mut(stream)?;
    let config = rows_config(rows);
    // SAFETY: pred, target (and grad) hold rows * cols elements and loss rows (checked above).
    unsafe { launch!(kernels, stream, OP, config, [&pp, &tp, &gp, &op, &out.grad_scale, &r, &c]) }
}

/// Inverted dropout: `y = u > p ? x / (1 - p) : 0` with uniforms `u` in (0, 1]; `p` in `[0, 1)`.
/// The backward pass is the same call on `dy` with the same `u`.
pub(crate) fn dropout(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    x: &CudaView<f32>,
    u: &CudaView<f32>,
    y: &mut CudaViewMut<f32>,
    p: f32,
) -> Result<()> {
    const OP: &str = "prism_dropout_f32";
    let n = shape::same_len(OP, &[("x", x.len()), ("u", u.len()), ("y", y.len())])?;
    check_dropout_rate(OP, p)?;
    if n == 0 {
        return Ok(());
    }
    let (scale, count) = (1.0 / (1.0 - p), n as u64);
    let (xp, _x) = x.checked_ptr(stream)?;
    let (up, _u) = u.checked_ptr(stream)?;
    let (yp, _y) = y.checked_ptr_mut(stream)?;
    // SAFETY: x, u and y hold n elements (checked above); the kernel touches indices below n.
    unsafe { launch!(kernels, stream, OP, scalar(n), [&xp, &up, &yp, &p, &scale, &count]) }
}

/// An element type that rows can be gathered of.
pub trait GatherElement: crate::driver::DeviceRepr {
    /// The gather kernel of this type.
    const GATHER: &'static str;
}
impl GatherElement for f32 {
    const GATHER: &'static str = "prism_gather_rows_f32";
}
impl GatherElement for i32 {
    const GATHER: &'static str = "prism_gather_rows_i32";
}

/// `dst[r, :] = src[index[r], :]` for `src` `[src_rows, cols]`, `dst` `[index.len(), cols]`; an
/// index out of range gives a row of zeros.
pub(crate) fn gather_rows<T: GatherElement>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    src: &CudaView<T>,
    index: &CudaView<u32>,
    dst: &mut CudaViewMut<T>,
    cols: usize,
) -> Result<()> {
    let op = T::GATHER;
    let rows = index.len();
    shape::matrix(op, "dst", dst.len(), rows, cols)?;
    if cols == 0 || src.len() % cols != 0 {
        return Err(Error::Shape {
            op,
            expected: format!("`src` of whole rows of {cols} > 0 elements"),
            got: format!("{} elements", src.len()),
        });
    }
    if rows == 0 {
        return Ok(());
    }
    let n = dst.len();
    let (sr, r, c) = (
        args::int(op, "src rows", src.len() / cols)?,
        args::int(op, "rows", rows)?,
        args::int(op, "cols", cols)?,
    );
    let (sp, _s) = src.checked_ptr(stream)?;
    let (ip, _i) = index.checked_ptr(stream)?;
    let (dp, _d) = dst.checked_ptr_mut(stream)?;
    // SAFETY: dst holds rows * cols elements and index rows; the kernel reads src only at rows
    // below src_rows (its own check), each of cols elements.
    unsafe { launch!(kernels, stream, op, scalar(n), [&sp, &ip, &dp, &sr, &r, &c]) }
}

/// One optimiser step over all `params` with their `grads` and the rule's `state` (see
/// [`Optimizer::state_len`]); `t` is the 1-based step count (bias correction of Adam and AdamW).
#[allow(clippy::too_many_arguments)] // the kernel's operands, each named
pub(crate) fn optimizer_step(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    opt: Optimizer,
    lr: f32,
    t: u64,
    params: &mut CudaViewMut<f32>,
    grads: &CudaView<f32>,
    state: &mut CudaViewMut<f32>,
) -> Result<()> {
    let op = opt.kernel();
    let n = shape::same_len(op, &[("params", params.len()), ("grads", grads.len())])?;
    args::optional_len(op, "state", Some(state.len()), opt.state_len(n)?)?;
    let (step_size, bc2_sqrt, decay) = opt.adam_scalars(lr, t)?;
    if n == 0 {
        return Ok(());
    }
    let count = n as u64;
    let function = kernels.function(op)?;
    let (pp, _p) = params.checked_ptr_mut(stream)?;
    let (gp, _g) = grads.checked_ptr(stream)?;
    let (sp, _s) = state.checked_ptr_mut(stream)?;
    let vp = second_moment(sp, n);
    let mut launch = stream.launch_builder(&function);
    launch.arg(&pp).arg(&gp).arg(&sp);
    match &opt {
        Optimizer::Sgd { momentum, weight_decay } => {
            launch.arg(&lr).arg(momentum).arg(weight_decay);
        }
        Optimizer::Adam { beta1, beta2, eps, weight_decay } => {
            launch.arg(&vp).arg(beta1).arg(beta2).arg(eps).arg(weight_decay).arg(&step_size).arg(&bc2_sqrt);
        }
        Optimizer::AdamW { beta1, beta2, eps, .. } => {
            launch.arg(&vp).arg(beta1).arg(beta2).arg(eps).arg(&decay).arg(&step_size).arg(&bc2_sqrt);
        }
    }
    launch.arg(&count);
    // SAFETY: params and grads hold n elements, state n (SGD) or 2n (Adam: m at sp, v at sp + n
    // floats), checked above; the kernel touches indices below n of each.
    unsafe { launch.launch(scalar(n)) }?;
    Ok(())
}

/// Elements of the device-side schedule of `optimizer_step_scheduled`: `[t, step_size,
/// bc2_sqrt, decay]`, `t` the steps taken so far (start it at 0, or at the host's step count).
pub const SCHEDULE_LEN: usize = 4;

/// [`optimizer_step`] with the step count on the device (`sched`, see [`SCHEDULE_LEN`]), so that
/// a captured CUDA graph replays it correctly: Adam and AdamW advance `sched` in a one-thread
/// launch (`prism_adam_tick_f32`) and read it in the update (`prism_adam_sched_f32`); SGD's
/// scalars do not depend on the step and it runs as [`optimizer_step`].
#[allow(clippy::too_many_arguments)] // the kernel's operands, each named
pub(crate) fn optimizer_step_scheduled(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    opt: Optimizer,
    lr: f32,
    params: &mut CudaViewMut<f32>,
    grads: &CudaView<f32>,
    state: &mut CudaViewMut<f32>,
    sched: &mut CudaViewMut<f32>,
) -> Result<()> {
    const OP: &str = "prism_adam_sched_f32";
    let (beta1, beta2, eps, l2, decoupled) = match opt {
        Optimizer::Sgd { .. } => return optimizer_step(kernels, stream, opt, lr, 1, params, grads, state),
        Optimizer::Adam { beta1, beta2, eps, weight_decay } => (beta1, beta2, eps, weight_decay, 0.0f32),
        Optimizer::AdamW { beta1, beta2, eps, weight_decay } => (beta1, beta2, eps, 0.0f32, weight_decay),
    };
    let n = shape::same_len(OP, &[("params", params.len()), ("grads", grads.len())])?;
    args::optional_len(OP, "state", Some(state.len()), opt.state_len(n)?)?;
    args::optional_len(OP, "sched", Some(sched.len()), SCHEDULE_LEN)?;
    if n == 0 {
        return Ok(());
    }
    let (schedp, _sched) = sched.checked_ptr_mut(stream)?;
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: sched holds SCHEDULE_LEN elements (checked above); one thread writes them.
    unsafe {
        launch!(kernels, stream, "prism_adam_tick_f32", one, [&schedp, &lr, &beta1, &beta2, &decoupled])
    }?;
    let count = n as u64;
    let (pp, _p) = params.checked_ptr_mut(stream)?;
    let (gp, _g) = grads.checked_ptr(stream)?;
    let (sp, _s) = state.checked_ptr_mut(stream)?;
    let vp = second_moment(sp, n);
    // SAFETY: params and grads hold n elements, state 2n (m, then v at sp + n floats), sched
    // SCHEDULE_LEN (all checked above); the kernel touches indices below n and reads sched[1..4].
    unsafe {
        launch!(
            kernels,
            stream,
            OP,
            scalar(n),
            [&pp, &gp, &sp, &vp, &beta1, &beta2, &eps, &l2, &schedp, &count]
        )
    }
}

/// The address of Adam's second moment in `state`: it follows the first, `n` floats from `state`.
fn second_moment(state: CUdeviceptr, n: usize) -> CUdeviceptr {
    state + (n * std::mem::size_of::<f32>()) as CUdeviceptr
}

/// A 1-D launch of one element per thread over `n`.
fn scalar(n: usize) -> LaunchConfig {
    grid::elementwise(n, grid::Step::Scalar)
}
