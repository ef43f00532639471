//! Typed launchers for `cuda/neuromorphic.cu`: echo-state reservoir matvecs (dense and CSR), leaky
//! integration, rate-based spike encoding with the counter-based generator, sliding-window
//! pattern correlation, and spectral-radius estimation by power iteration (a host loop).

use std::sync::Arc;

use crate::driver::sys::CUdeviceptr;
use crate::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchConfig, PushKernelArg};
use crate::error::{Error, Result};
use crate::kernels::args::{CheckedPtr as _, CheckedPtrMut as _};
use crate::kernels::gemv;
use crate::kernels::{args, grid, shape, Kernels};
use crate::spec::gemv::Gemv;

use crate::spec::neuromorphic::{Csr, Patterns};

/// Threads per block of the warp-per-row kernels.
const WARP_BLOCK: usize = 256;
/// Threads of the one normalising block of the power iteration.
const NORMALIZE_BLOCK: u32 = 1024;

/// One warp per row (or output), 8 warps per block.
fn warp_per_row(rows: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (rows.div_ceil(WARP_BLOCK / 32) as u32, 1, 1),
        block_dim: (WARP_BLOCK as u32, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// A CSR matrix on the device, checked on the host before upload (see [`Csr::check`]).
#[derive(Debug)]
pub struct DeviceCsr {
    row_ptr: CudaSlice<i32>,
    col_idx: CudaSlice<i32>,
    values: CudaSlice<f32>,
    rows: usize,
    cols: usize,
}

impl DeviceCsr {
    /// Checks `csr` as a `[rows, cols]` matrix and copies it to the device.
    pub fn upload(stream: &Arc<CudaStream>, csr: Csr<'_>, rows: usize, cols: usize) -> Result<Self> {
        csr.check("DeviceCsr::upload", rows, cols)?;
        Ok(Self {
            row_ptr: stream.clone_htod(csr.row_ptr)?,
            col_idx: stream.clone_htod(csr.col_idx)?,
            values: stream.clone_htod(csr.values)?,
            rows,
            cols,
        })
    }

    /// Rows of the matrix.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns of the matrix.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }
}

/// A reservoir matrix on the device: dense row-major `[n, n]`, or sparse.
#[derive(Debug)]
pub enum DeviceReservoir<'a> {
    /// Dense row-major `[n, n]`.
    Dense(CudaView<'a, f32>),
    /// Compressed sparse rows, `[n, n]`.
    Csr(&'a DeviceCsr),
}

impl DeviceReservoir<'_> {
    /// Checks that this is an `[n, n]` reservoir.
    pub fn check(&self, op: &'static str, n: usize) -> Result<()> {
        match self {
            DeviceReservoir::Dense(w) => shape::matrix(op, "w", w.len(), n, n),
            DeviceReservoir::Csr(csr) if csr.rows == n && csr.cols == n => Ok(()),
            DeviceReservoir::Csr(csr) => Err(Error::Shape {
                op,
                expected: format!("a {n} x {n} reservoir"),
                got: format!("a {} x {} CSR matrix", csr.rows, csr.cols),
            }),
        }
    }
}

/// `out = W_in u`: `w_in` row-major `[n_reservoir, n_inputs]`, `u` of `n_inputs`, `out` of `n_reservoir`.
pub fn matvec_input(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    w_in: &CudaView<f32>,
    u: &CudaView<f32>,
    out: &mut CudaViewMut<f32>,
    n_reservoir: usize,
    n_inputs: usize,
) -> Result<()> {
    const OP: &str = "matvec_input_kernel";
    shape::matrix(OP, "w_in", w_in.len(), n_reservoir, n_inputs)?;
    args::optional_len(OP, "u", Some(u.len()), n_inputs)?;
    args::optional_len(OP, "out", Some(out.len()), n_reservoir)?;
    if n_reservoir == 0 {
        return Ok(());
    }
    let (nr, ni) = (args::int(OP, "n_reservoir", n_reservoir)?, args::int(OP, "n_inputs", n_inputs)?);
    let function = kernels.function(OP)?;
    // SAFETY: w_in holds n_reservoir * n_inputs elements, u n_inputs, out n_reservoir (checked).
    unsafe {
        stream
            .launch_builder(&function)
            .arg(w_in)
            .arg(u)
            .arg(out)
            .arg(&nr)
            .arg(&ni)
            .launch(warp_per_row(n_reservoir))
    }?;
    Ok(())
}

/// `out = W x` for an `[n, n]` reservoir, `n = x.len()`; `out` of `n`, a different buffer from `x`.
pub fn matvec_reservoir(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    w: &DeviceReservoir,
    x: &CudaView<f32>,
    out: &mut CudaViewMut<f32>,
) -> Result<()> {
    let n = x.len();
    args::optional_len("matvec_reservoir", "out", Some(out.len()), n)?;
    let (xp, _x) = x.checked_ptr(stream)?;
    let (op, _o) = out.checked_ptr_mut(stream)?;
    reservoir_launch(kernels, stream, w, xp, op, n)
}

/// `out = W x` on raw addresses of `n` elements each (checked by the callers).
fn reservoir_launch(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    w: &DeviceReservoir,
    x: CUdeviceptr,
    out: CUdeviceptr,
    n: usize,
) -> Result<()> {
    const OP: &str = "matvec_reservoir";
    w.check(OP, n)?;
    if n == 0 {
        return Ok(());
    }
    let ni = args::int(OP, "n", n)?;
    match w {
        DeviceReservoir::Dense(w) => {
            let function = kernels.function("matvec_reservoir_kernel")?;
            // SAFETY: w holds n * n elements (checked), x and out n each.
            unsafe {
                stream.launch_builder(&function).arg(w).arg(&x).arg(&out).arg(&ni).launch(warp_per_row(n))
            }?;
        }
        DeviceReservoir::Csr(csr) => {
            let function = kernels.function("matvec_reservoir_csr_kernel")?;
            // SAFETY: the CSR arrays were checked on upload (offsets within the entries, columns
            // below n); x and out hold n each.
            unsafe {
                stream
                    .launch_builder(&function)
                    .arg(&csr.row_ptr)
                    .arg(&csr.col_idx)
                    .arg(&csr.values)
                    .arg(&x)
                    .arg(&out)
                    .arg(&ni)
                    .launch(warp_per_row(n))
            }?;
        }
    }
    Ok(())
}

/// One echo-state step out of place in one launch: `out = (1 - leak) * x + leak * tanh(W_in u + W x)`,
/// `w_in` row-major `[n, u.len()]`, `w` `[n, n]` dense or CSR, `x` and `out` of `n = x.len()`.
#[allow(clippy::too_many_arguments)] // the step's operands
pub fn reservoir_update(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    w_in: &CudaView<f32>,
    w: &DeviceReservoir,
    u: &CudaView<f32>,
    x: &CudaView<f32>,
    out: &mut CudaViewMut<f32>,
    leak: f32,
) -> Result<()> {
    const OP: &str = "reservoir_update";
    let n = shape::same_len(OP, &[("x", x.len()), ("out", out.len())])?;
    shape::matrix(OP, "w_in", w_in.len(), n, u.len())?;
    w.check(OP, n)?;
    if n == 0 {
        return Ok(());
    }
    let (ni, n_in) = (args::int(OP, "n", n)?, args::int(OP, "n_inputs", u.len())?);
    match w {
        DeviceReservoir::Dense(w) => {
            let function = kernels.function("reservoir_update_kernel")?;
            // SAFETY: w holds n * n elements, w_in n * n_in, u n_in, x and out n (checked); out is
            // a mutable view, so it cannot overlap the shared view x.
            unsafe {
                stream
                    .launch_builder(&function)
                    .arg(w)
                    .arg(w_in)
                    .arg(u)
                    .arg(x)
                    .arg(out)
                    .arg(&ni)
                    .arg(&n_in)
                    .arg(&leak)
                    .launch(warp_per_row(n))
            }?;
        }
        DeviceReservoir::Csr(csr) => {
            let function = kernels.function("reservoir_update_csr_kernel")?;
            // SAFETY: the CSR arrays were checked on upload (offsets within the entries, columns
            // below n); w_in holds n * n_in, u n_in, x and out n (checked); out cannot overlap x.
            unsafe {
                stream
                    .launch_builder(&function)
                    .arg(&csr.row_ptr)
                    .arg(&csr.col_idx)
                    .arg(&csr.values)
                    .arg(w_in)
                    .arg(u)
                    .arg(x)
                    .arg(out)
                    .arg(&ni)
                    .arg(&n_in)
                    .arg(&leak)
                    .launch(warp_per_row(n))
            }?;
        }
    }
    Ok(())
}

/// `x = (1 - leak) * x + leak * tanh(drive)` in place; both of one length.
pub fn leaky_integration(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    x: &mut CudaViewMut<f32>,
    drive: &CudaView<f32>,
    leak: f32,
) -> Result<()> {
    const OP: &str = "leaky_integration_kernel";
    let n = shape::same_len(OP, &[("x", x.len()), ("drive", drive.len())])?;
    if n == 0 {
        return Ok(());
    }
    let function = kernels.function(OP)?;
    let count = n as u64;
    // SAFETY: x and drive hold n elements each.
    unsafe {
        stream
            .launch_builder(&function)
            .arg(x)
            .arg(drive)
            .arg(&leak)
            .arg(&count)
            .launch(grid::elementwise(n, grid::Step::Map))
    }?;
    Ok(())
}

/// Rate-based spikes: `spikes[t * n + i] = 1` when `uniform01(seed, i, t) < rates[i]`, else 0, for
/// `t < steps` (time-major `[steps, n]`, `n = rates.len()`). Bit-identical to the CPU fallback.
pub fn spike_encode(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    rates: &CudaView<f32>,
    spikes: &mut CudaViewMut<f32>,
    steps: usize,
    seed: u64,
) -> Result<()> {
    const OP: &str = "spike_encode_kernel";
    shape::matrix(OP, "spikes", spikes.len(), steps, rates.len())?;
    if spikes.is_empty() {
        return Ok(());
    }
    let function = kernels.function(OP)?;
    let cfg = grid::elementwise(spikes.len(), grid::Step::Scalar);
    let (n, s) = (rates.len() as u64, args::int(OP, "steps", steps)?);
    // SAFETY: reads n rates, writes steps * n spikes (checked).
    unsafe {
        stream.launch_builder(&function).arg(rates).arg(spikes).arg(&n).arg(&s).arg(&seed).launch(cfg)
    }?;
    Ok(())
}

/// `out[k * (t - w + 1) + s]` = the sum over the window of `spikes[s + j, i] * templates[k, j, i]`.
pub fn pattern_correlation(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    spikes: &CudaView<f32>,
    templates: &CudaView<f32>,
    out: &mut CudaViewMut<f32>,
    dims: Patterns,
) -> Result<()> {
    const OP: &str = "pattern_correlation_kernel";
    let len = dims.check(OP, spikes.len(), templates.len())?;
    args::optional_len(OP, "out", Some(out.len()), len)?;
    if len == 0 {
        return Ok(());
    }
    // The kernel also forms w * n and p * (t - w + 1) as `int`s.
    args::int(OP, "w * n", shape::elements(OP, "a template", &[dims.w, dims.n])?)?;
    args::int(OP, "p * (t - w + 1)", out.len())?;
    let (t, n) = (args::int(OP, "t", dims.t)?, args::int(OP, "n", dims.n)?);
    let (p, w) = (args::int(OP, "p", dims.p)?, args::int(OP, "w", dims.w)?);
    let function = kernels.function(OP)?;
    // SAFETY: spikes holds t * n, templates p * w * n, out p * (t - w + 1) elements (checked).
    unsafe {
        stream
            .launch_builder(&function)
            .arg(spikes)
            .arg(templates)
            .arg(out)
            .arg(&t)
            .arg(&n)
            .arg(&p)
            .arg(&w)
            .launch(warp_per_row(dims.p * dims.positions()))
    }?;
    Ok(())
}

/// `v[i] = 2 * uniform01(seed, i, 0) - 1`: the power iteration's start vector, uniform in `[-1, 1)`
/// (bit-identical to the CPU fallback; also a quick way to fill a buffer with random numbers).
pub fn power_iteration_init(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    v: &mut CudaViewMut<f32>,
    seed: u64,
) -> Result<()> {
    let n = v.len();
    if n == 0 {
        return Ok(());
    }
    let function = kernels.function("power_iteration_init_kernel")?;
    let count = n as u64;
    // SAFETY: writes the n elements of v.
    unsafe {
        stream
            .launch_builder(&function)
            .arg(v)
            .arg(&count)
            .arg(&seed)
            .launch(grid::elementwise(n, grid::Step::Scalar))
    }?;
    Ok(())
}

/// `norm[0] = ||w||` and `v = w / ||w||` (raw addresses of `n` elements; `v` may be `w`).
fn normalize(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    w: CUdeviceptr,
    v: CUdeviceptr,
    norm: &mut CudaSlice<f32>,
    n: i32,
) -> Result<()> {
    let function = kernels.function("power_iteration_normalize_kernel")?;
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (NORMALIZE_BLOCK, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: w and v address n elements (the callers' buffers), norm one; v may alias w.
    unsafe { stream.launch_builder(&function).arg(&w).arg(&v).arg(norm).arg(&n).launch(cfg) }?;
    Ok(())
}

/// Spectral-radius estimate of an `[n, n]` reservoir by `iters` steps of power iteration from the
/// seeded start vector: `v = init / ||init||`, then `iters` times `w = W v`, `v = w / ||w||`; the
/// last `||w||` is the estimate (the start vector's norm when `iters == 0`). Waits for the result.
pub fn spectral_radius(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    w: &DeviceReservoir,
    n: usize,
    iters: usize,
    seed: u64,
) -> Result<f32> {
    const OP: &str = "spectral_radius";
    w.check(OP, n)?;
    if n == 0 {
        return Ok(0.0);
    }
    let ni = args::int(OP, "n", n)?;
    // SAFETY: both vectors are written (init, then each matvec) before they are read.
    let (mut v, mut t) = unsafe { (stream.alloc::<f32>(n)?, stream.alloc::<f32>(n)?) };
    let mut norm = stream.alloc_zeros::<f32>(1)?;
    power_iteration_init(kernels, stream, &mut v.as_view_mut(), seed)?;
    {
        let (vp, _v) = v.checked_ptr_mut(stream)?;
        normalize(kernels, stream, vp, vp, &mut norm, ni)?;
    }
    for _ in 0..iters {
        let (vp, _v) = v.checked_ptr_mut(stream)?;
        let (tp, _t) = t.checked_ptr_mut(stream)?;
        reservoir_launch(kernels, stream, w, vp, tp, n)?;
        normalize(kernels, stream, tp, vp, &mut norm, ni)?;
    }
    Ok(stream.clone_dtoh(&norm)?[0])
}

/// One echo-state step on device buffers: `x = (1 - leak) * x + leak * tanh(W_in u + W x)`, with
/// `w_in` `[n, n_inputs]`, `w` `[n, n]`, `u` of `n_inputs`, `x` of `n`; `drive` (`n` elements) is
/// scratch. Three launches: `drive = W x`, `drive += W_in u`, the leaky update.
#[allow(clippy::too_many_arguments)] // the step's operands
pub fn reservoir_step(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    w_in: &CudaView<f32>,
    w: &DeviceReservoir,
    u: &CudaView<f32>,
    x: &mut CudaViewMut<f32>,
    drive: &mut CudaViewMut<f32>,
    leak: f32,
) -> Result<()> {
    const OP: &str = "reservoir_step";
    let n = x.len();
    shape::same_len(OP, &[("x", n), ("drive", drive.len())])?;
    shape::matrix(OP, "w_in", w_in.len(), n, u.len())?;
    w.check(OP, n)?;
    if n == 0 {
        return Ok(());
    }
    matvec_reservoir(kernels, stream, w, &x.as_view(), drive)?;
    let input = Gemv { m: n, n: u.len(), lda: u.len().max(1), alpha: 1.0, beta: 1.0 };
    gemv::gemv(kernels, stream, input, w_in, u, drive)?;
    leaky_integration(kernels, stream, x, &drive.as_view(), leak)
}
