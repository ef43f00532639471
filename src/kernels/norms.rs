//! Typed launchers for `cuda/norms.cu`: layer norm and RMS norm over rows (f32, and bf16 in and
//! out with f32 accumulation), batch norm over NCHW (inference, and the training statistics).

use std::sync::Arc;

use half::bf16;

use crate::driver::sys::CUdeviceptr;
use crate::driver::{CudaStream, CudaView, CudaViewMut, DeviceRepr, LaunchConfig};
use crate::error::Result;
use crate::kernels::args::{CheckedPtr as _, CheckedPtrMut as _};
use crate::kernels::rows::{self, RowContract};
use crate::kernels::workspace::{grow, zeroed_counters, Workspace};
use crate::kernels::{args, grid, launch, shape, Kernels};

use crate::spec::norms::Nchw;
use crate::spec::norms::{check_batch, check_batch_train, check_rows};

/// Values a thread of the batch-norm statistics loads before it folds them (`BN_VALUES` in
/// cuda/norms.cu).
const BN_VALUES: usize = 16;
/// Threads per block of the batch-norm statistics kernels.
const BLOCK: u32 = 256;

/// The element types the row norms take for `x` and `out` (gamma, beta and statistics are f32).
pub trait NormElement: DeviceRepr + Copy {
    /// The layer-norm entry point for this type.
    const LAYER_NORM: &'static str;
    /// The RMS-norm entry point for this type.
    const RMS_NORM: &'static str;
    /// How the layer-norm kernel holds a row.
    const LAYER_NORM_ROWS: RowContract;
    /// How the RMS-norm kernel holds a row.
    const RMS_NORM_ROWS: RowContract;
}

impl NormElement for f32 {
    const LAYER_NORM: &'static str = "prism_layer_norm_f32";
    const RMS_NORM: &'static str = "prism_rms_norm_f32";
    const LAYER_NORM_ROWS: RowContract = RowContract { lanes: 4, register_chunks: 7 };
    const RMS_NORM_ROWS: RowContract = RowContract { lanes: 4, register_chunks: 8 };
}

impl NormElement for bf16 {
    const LAYER_NORM: &'static str = "prism_layer_norm_bf16";
    const RMS_NORM: &'static str = "prism_rms_norm_bf16";
    const LAYER_NORM_ROWS: RowContract = RowContract { lanes: 8, register_chunks: 4 };
    const RMS_NORM_ROWS: RowContract = RowContract { lanes: 8, register_chunks: 4 };
}

/// Layer norm of each row of `x` (`[rows, cols]`): `out = (x - mean) * rsqrt(var + eps) * gamma +
/// beta` with the biased variance; absent gamma/beta mean ones/zeros. Each row's mean and rstd go
/// to `mean`/`rstd` when given (`rows` elements each). `out` may not alias `x` here.
#[allow(clippy::too_many_arguments)] // mirrors the kernel's argument list
pub fn layer_norm<T: NormElement>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    x: &CudaView<T>,
    gamma: Option<&CudaView<f32>>,
    beta: Option<&CudaView<f32>>,
    out: &mut CudaViewMut<T>,
    mean: Option<&mut CudaViewMut<f32>>,
    rstd: Option<&mut CudaViewMut<f32>>,
    rows: usize,
    cols: usize,
    eps: f32,
) -> Result<()> {
    let op = T::LAYER_NORM;
    check_rows(
        op,
        x.len(),
        out.len(),
        &[("gamma", gamma.map(|g| g.len())), ("beta", beta.map(|b| b.len()))],
        &[("mean", mean.as_ref().map(|m| m.len())), ("rstd", rstd.as_ref().map(|r| r.len()))],
        rows,
        cols,
    )?;
    if x.is_empty() {
        return Ok(());
    }
    let (r, c) = (args::int(op, "rows", rows)?, args::int(op, "cols", cols)?);
    let function = kernels.function(op)?;
    let cfg = rows::config(kernels, &function, T::LAYER_NORM_ROWS, rows, cols)?;
    let (xp, _x) = x.checked_ptr(stream)?;
    let (gp, _g) = args::input(gamma, stream)?;
    let (bp, _b) = args::input(beta, stream)?;
    let (op_, _o) = out.checked_ptr_mut(stream)?;
    let (mp, _m) = args::output(mean, stream)?;
    let (sp, _s) = args::output(rstd, stream)?;
    // SAFETY: x and out hold rows * cols elements, gamma/beta cols, mean/rstd rows (checked above)
    // or are null, which the kernel skips.
    unsafe { launch!(stream, &function, cfg, [&xp, &gp, &bp, &op_, &mp, &sp, &r, &c, &eps]) }
}

/// RMS norm of each row of `x` (`[rows, cols]`): `out = x * rsqrt(mean(x^2) + eps) * gamma`; absent
/// gamma means ones. Each row's rstd goes to `rstd` when given (`rows` elements).
#[allow(clippy::too_many_arguments)] // mirrors the kernel's argument list
pub fn rms_norm<T: NormElement>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    x: &CudaView<T>,
    gamma: Option<&CudaView<f32>>,
    out: &mut CudaViewMut<T>,
    rstd: Option<&mut CudaViewMut<f32>>,
    rows: usize,
    cols: usize,
    eps: f32,
) -> Result<()> {
    let op = T::RMS_NORM;
    check_rows(
        op,
        x.len(),
        out.len(),
        &[("gamma", gamma.map(|g| g.len()))],
        &[("rstd", rstd.as_ref().map(|r| r.len()))],
        rows,
        cols,
    )?;
    if x.is_empty() {
        return Ok(());
    }
    let (r, c) = (args::int(op, "rows", rows)?, args::int(op, "cols", cols)?);
    let function = kernels.function(op)?;
    let cfg = rows::config(kernels, &function, T::RMS_NORM_ROWS, rows, cols)?;
    let (xp, _x) = x.checked_ptr(stream)?;
    let (gp, _g) = args::input(gamma, stream)?;
    let (op_, _o) = out.checked_ptr_mut(stream)?;
    let (sp, _s) = args::output(rstd, stream)?;
    // SAFETY: x and out hold rows * cols elements, gamma cols, rstd rows (checked above) or null.
    unsafe { launch!(stream, &function, cfg, [&xp, &gp, &op_, &sp, &r, &c, &eps]) }
}

/// The per-channel operands of batch norm: statistics and optional gamma/beta.
#[derive(Debug, Clone, Copy)]
pub struct Channels<'a, 'b> {
    /// Mean of each channel (`c` elements).
    pub mean: &'a CudaView<'b, f32>,
    /// Variance of each channel (`c` elements).
    pub var: &'a CudaView<'b, f32>,
    /// Scale of each channel; absent means ones.
    pub gamma: Option<&'a CudaView<'b, f32>>,
    /// Shift of each channel; absent means zeros.
    pub beta: Option<&'a CudaView<'b, f32>>,
}

impl Channels<'_, '_> {
    /// The operands' names and lengths, for [`check_batch`].
    pub(crate) fn lens(&self) -> [(&'static str, Option<usize>); 4] {
        [
            ("mean", Some(self.mean.len())),
            ("var", Some(self.var.len())),
            ("gamma", self.gamma.map(|g| g.len())),
            ("beta", self.beta.map(|b| b.len())),
        ]
    }
}

#[allow(clippy::too_many_arguments)] // the kernel's argument list
fn batch_norm_launch(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    x: CUdeviceptr,
    out: CUdeviceptr,
    channels: Channels,
    len: usize,
    (n, c, hw): Nchw,
    eps: f32,
) -> Result<()> {
    const OP: &str = "prism_batch_norm_apply_f32";
    check_batch(OP, len, (n, c, hw), &channels.lens())?;
    if len == 0 {
        return Ok(());
    }
    let (ni, ci, hwi) = (args::int(OP, "n", n)?, args::int(OP, "c", c)?, args::int(OP, "hw", hw)?);
    let (mp, _m) = channels.mean.checked_ptr(stream)?;
    let (vp, _v) = channels.var.checked_ptr(stream)?;
    let (gp, _g) = args::input(channels.gamma, stream)?;
    let (bp, _b) = args::input(channels.beta, stream)?;
    let cfg = grid::elementwise(len, grid::Step::Vector);
    // SAFETY: x and out address n * c * hw elements (checked by the callers and above), the
    // per-channel operands c elements or null; out may alias x.
    unsafe { launch!(kernels, stream, OP, cfg, [&x, &out, &mp, &vp, &gp, &bp, &ni, &ci, &hwi, &eps]) }
}

/// Batch norm with given statistics (inference): `out = (x - mean[c]) * (gamma[c] * rsqrt(var[c] +
/// eps)) + beta[c]` over NCHW `x`; `out` as long as `x`.
pub fn batch_norm(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    x: &CudaView<f32>,
    out: &mut CudaViewMut<f32>,
    channels: Channels,
    shape_: Nchw,
    eps: f32,
) -> Result<()> {
    shape::same_len("prism_batch_norm_apply_f32", &[("x", x.len()), ("out", out.len())])?;
    let len = x.len();
    let (xp, _x) = x.checked_ptr(stream)?;
    let (op, _o) = out.checked_ptr_mut(stream)?;
    batch_norm_launch(kernels, stream, xp, op, channels, len, shape_, eps)
}

/// [`batch_norm`] in place.
pub fn batch_norm_inplace(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    x: &mut CudaViewMut<f32>,
    channels: Channels,
    shape_: Nchw,
    eps: f32,
) -> Result<()> {
    let len = x.len();
    let (xp, _x) = x.checked_ptr_mut(stream)?;
    batch_norm_launch(kernels, stream, xp, xp, channels, len, shape_, eps)
}

/// Running statistics that a training step updates: `r = (1 - momentum) * r + momentum * stat`,
/// with the unbiased variance for `var`.
#[derive(Debug)]
pub struct Running<'a, 'b> {
    /// Running mean (`c` elements).
    pub mean: &'a mut CudaViewMut<'b, f32>,
    /// Running variance (`c` elements).
    pub var: &'a mut CudaViewMut<'b, f32>,
    /// The update's weight of the new statistics.
    pub momentum: f32,
}

/// Training statistics of NCHW `x`: per-channel `mean` and biased `var` over `(n, hw)`, and the
/// running statistics updated when given, in one launch (partial sums and arrival counters in
/// `workspace`). Needs at least one value per channel (`n * hw >= 1`).
#[allow(clippy::too_many_arguments)] // the operation's buffers plus its scratch
pub fn batch_norm_stats(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    workspace: &Workspace,
    x: &CudaView<f32>,
    mean: &mut CudaViewMut<f32>,
    var: &mut CudaViewMut<f32>,
    running: Option<Running>,
    (n, c, hw): Nchw,
) -> Result<()> {
    const OP: &str = "prism_batch_norm_stats_f32";
    let running_lens = running.as_ref().map(|r| (r.mean.len(), r.var.len()));
    let channels = [
        ("mean", Some(mean.len())),
        ("var", Some(var.len())),
        ("running mean", running_lens.map(|(m, _)| m)),
        ("running var", running_lens.map(|(_, v)| v)),
    ];
    check_batch_train(OP, x.len(), (n, c, hw), &channels)?;
    if c == 0 {
        return Ok(());
    }
    let (ni, ci, hwi) = (args::int(OP, "n", n)?, args::int(OP, "c", c)?, args::int(OP, "hw", hw)?);
    let momentum = running.as_ref().map_or(0.0, |r| r.momentum);
    let (rm, rv) = match running {
        Some(r) => (Some(r.mean), Some(r.var)),
        None => (None, None),
    };
    // About three blocks per multiprocessor over all channels, each with at least one sweep
    // (BN_VALUES values a thread) of its channel. Fewer, longer blocks measured faster than more at
    // 32 x 64 x 12544: three per SM beat four by 3-7% on the H100 and the H200, and six or more (a
    // second wave) lost 15-20%.
    let sweeps = n.saturating_mul(hw).div_ceil(BLOCK as usize * BN_VALUES).max(1);
    let slices = (3 * kernels.multiprocessors() as usize).div_ceil(c).clamp(1, sweeps.min(grid::GRID_YZ_MAX));
    let si = slices as i32;
    let part_bytes = shape::elements(OP, "partial sums", &[3, c, slices, size_of::<f64>()])?;
    let mut guard = workspace.lock();
    let scratch = &mut *guard;
    // SAFETY: block (ch, s) writes its (count, mean, M2) triple before it counts itself in; the
    // channel's last block reads the triples after all of them are counted.
    unsafe { grow(&mut scratch.bytes, stream, part_bytes) }?;
    let (pp, _p) = scratch.bytes.as_mut().expect("grown above").checked_ptr_mut(stream)?;
    let (cp, _c) = zeroed_counters(&mut scratch.counters, stream, c)?.checked_ptr_mut(stream)?;
    let (xp, _x) = x.checked_ptr(stream)?;
    let (mp, _m) = mean.checked_ptr_mut(stream)?;
    let (vp, _v) = var.checked_ptr_mut(stream)?;
    let (rmp, _rm) = args::output(rm, stream)?;
    let (rvp, _rv) = args::output(rv, stream)?;
    let cfg = LaunchConfig {
        grid_dim: (c as u32, slices as u32, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: x holds n * c * hw elements (checked above); block (ch, s) writes part's triple
    // ch * slices + s, inside the 3 * c * slices f64 values the workspace was grown to; counters
    // 0..c are zero (zeroed_counters) and each channel's last block sets its own back; that block
    // writes mean[ch], var[ch] and the running statistics' element ch (c each, checked above, or
    // null).
    unsafe {
        launch!(
            kernels,
            stream,
            "prism_batch_norm_partials_f32",
            cfg,
            [&xp, &pp, &cp, &ni, &ci, &hwi, &si, &mp, &vp, &rmp, &rvp, &momentum]
        )
    }
}
