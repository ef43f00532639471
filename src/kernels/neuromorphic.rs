//! Typed launchers for `cuda/neuromorphic.cu`: echo-state reservoir matvecs (dense and CSR), leaky
//! integration, rate-based spike encoding with the counter-based generator, sliding-window
//! pattern correlation, spectral-radius estimation by power iteration (a host loop), and the
//! batched step of many reservoirs stacked in one launch ([`DeviceReservoirStack`]).

use std::sync::Arc;

use crate::driver::sys::CUdeviceptr;
use crate::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchConfig};
use crate::error::{Error, Result};
use crate::kernels::args::{CheckedPtr as _, CheckedPtrMut as _};
use crate::kernels::gemv;
use crate::kernels::{args, grid, launch, shape, Kernels};
use crate::spec::gemv::Gemv;

use crate::spec::neuromorphic::{Csr, Patterns, ReservoirWeights};

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
    // SAFETY: w_in holds n_reservoir * n_inputs elements, u n_inputs, out n_reservoir (checked).
    unsafe { launch!(kernels, stream, OP, warp_per_row(n_reservoir), [w_in, u, out, &nr, &ni]) }
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
    let (ni, config) = (args::int(OP, "n", n)?, warp_per_row(n));
    match w {
        // SAFETY: w holds n * n elements (checked), x and out n each.
        DeviceReservoir::Dense(w) => unsafe {
            launch!(kernels, stream, "matvec_reservoir_kernel", config, [w, &x, &out, &ni])
        },
        // SAFETY: the CSR arrays were checked on upload (offsets within the entries, columns below
        // n); x and out hold n each.
        DeviceReservoir::Csr(csr) => unsafe {
            let name = "matvec_reservoir_csr_kernel";
            let (row_ptr, col_idx, values) = (&csr.row_ptr, &csr.col_idx, &csr.values);
            launch!(kernels, stream, name, config, [row_ptr, col_idx, values, &x, &out, &ni])
        },
    }
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
    let config = warp_per_row(n);
    match w {
        // SAFETY: w holds n * n elements, w_in n * n_in, u n_in, x and out n (checked); out is a
        // mutable view, so it cannot overlap the shared view x.
        DeviceReservoir::Dense(w) => unsafe {
            let name = "reservoir_update_kernel";
            launch!(kernels, stream, name, config, [w, w_in, u, x, out, &ni, &n_in, &leak])
        },
        // SAFETY: the CSR arrays were checked on upload (offsets within the entries, columns below
        // n); w_in holds n * n_in, u n_in, x and out n (checked); out cannot overlap x.
        DeviceReservoir::Csr(csr) => unsafe {
            let name = "reservoir_update_csr_kernel";
            let (row_ptr, col_idx, values) = (&csr.row_ptr, &csr.col_idx, &csr.values);
            launch!(
                kernels,
                stream,
                name,
                config,
                [row_ptr, col_idx, values, w_in, u, x, out, &ni, &n_in, &leak]
            )
        },
    }
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
    let count = n as u64;
    let config = grid::elementwise(n, grid::Step::Map);
    // SAFETY: x and drive hold n elements each.
    unsafe { launch!(kernels, stream, OP, config, [x, drive, &leak, &count]) }
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
    let cfg = grid::elementwise(spikes.len(), grid::Step::Scalar);
    let (n, s) = (rates.len() as u64, args::int(OP, "steps", steps)?);
    // SAFETY: reads n rates, writes steps * n spikes (checked).
    unsafe { launch!(kernels, stream, OP, cfg, [rates, spikes, &n, &s, &seed]) }
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
    let config = warp_per_row(dims.p * dims.positions());
    // SAFETY: spikes holds t * n, templates p * w * n, out p * (t - w + 1) elements (checked).
    unsafe { launch!(kernels, stream, OP, config, [spikes, templates, out, &t, &n, &p, &w]) }
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
    let count = n as u64;
    let config = grid::elementwise(n, grid::Step::Scalar);
    // SAFETY: writes the n elements of v.
    unsafe { launch!(kernels, stream, "power_iteration_init_kernel", config, [v, &count, &seed]) }
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
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (NORMALIZE_BLOCK, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: w and v address n elements (the callers' buffers), norm one; v may alias w.
    unsafe { launch!(kernels, stream, "power_iteration_normalize_kernel", cfg, [&w, &v, norm, &n]) }
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

/// The recurrent matrices of `batch` reservoirs of `n` units each, stacked on the device for the
/// one-launch batched step ([`reservoir_update_batched`]) and product
/// ([`matvec_reservoir_batched`]). Each member keeps its format: a dense member's `[n, n]` rows
/// are copied as they are, a sparse member's CSR rows joined into one offset array over all the
/// members; the kernels reduce each row as the single-reservoir kernels do, so a member's results
/// are bit-for-bit those of its own matrix alone. Checked on the host before upload (every member
/// as an `[n, n]` reservoir, every count within the kernels' `int`s).
#[derive(Debug)]
pub struct DeviceReservoirStack {
    dense: CudaSlice<f32>,
    dense_off: CudaSlice<i64>,
    row_ptr: CudaSlice<i32>,
    col_idx: CudaSlice<i32>,
    values: CudaSlice<f32>,
    batch: usize,
    n: usize,
}

/// The host arrays of a [`DeviceReservoirStack`], each non-empty (one unread padding entry where a
/// format has no member), so every upload is a real allocation.
#[derive(Debug, PartialEq)]
struct HostStack {
    /// The dense members' matrices, one after another.
    dense: Vec<f32>,
    /// Per member, the element offset of its matrix in `dense`, or -1 for a CSR member.
    dense_off: Vec<i64>,
    /// `batch * n + 1` offsets into `col_idx` / `values` (a dense member's rows are empty).
    row_ptr: Vec<i32>,
    col_idx: Vec<i32>,
    values: Vec<f32>,
}

/// Stacks `members` (each checked as an `[n, n]` reservoir) for the batched kernels.
fn stack(op: &'static str, members: &[ReservoirWeights<'_>], n: usize) -> Result<HostStack> {
    if members.is_empty() {
        return Err(Error::Shape { op, expected: "at least one reservoir".into(), got: "none".into() });
    }
    // The kernels index rows, offsets and entries with `int`s.
    let rows =
        args::int(op, "batch * n", shape::elements(op, "stacked rows", &[members.len(), n])?)? as usize;
    for w in members {
        w.check(op, n)?;
    }
    let square = shape::elements(op, "a dense member", &[n, n])?;
    let dense_members = members.iter().filter(|w| matches!(w, ReservoirWeights::Dense(_))).count();
    let mut dense =
        Vec::with_capacity(shape::elements(op, "stacked dense matrices", &[dense_members, square])?);
    let mut dense_off = Vec::with_capacity(members.len());
    let mut row_ptr = Vec::with_capacity(rows + 1);
    let (mut col_idx, mut values) = (Vec::new(), Vec::new());
    row_ptr.push(0);
    for w in members {
        match w {
            ReservoirWeights::Dense(d) => {
                dense_off.push(dense.len() as i64);
                dense.extend_from_slice(d);
                row_ptr.extend(std::iter::repeat_n(values.len() as i32, n));
            }
            ReservoirWeights::Csr(c) => {
                dense_off.push(-1);
                let base = values.len();
                let end = base.checked_add(c.values.len()).filter(|&e| i32::try_from(e).is_ok());
                if end.is_none() {
                    return Err(Error::Shape {
                        op,
                        expected: format!(
                            "at most {} stored entries over all members (`int` offsets)",
                            i32::MAX
                        ),
                        got: format!("more than {base} + {}", c.values.len()),
                    });
                }
                // Checked: the offsets run from 0 to the member's entries, and base + entries fits.
                row_ptr.extend(c.row_ptr[1..].iter().map(|&k| base as i32 + k));
                col_idx.extend_from_slice(c.col_idx);
                values.extend_from_slice(c.values);
            }
        }
    }
    if dense.is_empty() {
        dense.push(0.0);
    }
    if values.is_empty() {
        col_idx.push(0);
        values.push(0.0);
    }
    Ok(HostStack { dense, dense_off, row_ptr, col_idx, values })
}

impl DeviceReservoirStack {
    /// Checks `members` as `[n, n]` reservoirs and stacks them on the device, in order.
    pub fn upload(stream: &Arc<CudaStream>, members: &[ReservoirWeights<'_>], n: usize) -> Result<Self> {
        let h = stack("DeviceReservoirStack::upload", members, n)?;
        Ok(Self {
            dense: stream.clone_htod(&h.dense)?,
            dense_off: stream.clone_htod(&h.dense_off)?,
            row_ptr: stream.clone_htod(&h.row_ptr)?,
            col_idx: stream.clone_htod(&h.col_idx)?,
            values: stream.clone_htod(&h.values)?,
            batch: members.len(),
            n,
        })
    }

    /// Members.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Units of each member.
    pub fn n(&self) -> usize {
        self.n
    }
}

/// The launch of the batched kernels: one warp per row, blocks of `WARP_BLOCK / 32` rows, every
/// member's row blocks one after another; and `row_blocks` for the kernel.
fn batched_grid(batch: usize, n: usize) -> (LaunchConfig, i32) {
    let row_blocks = n.div_ceil(WARP_BLOCK / 32);
    // batch * n fits an i32 (checked on upload), so batch * row_blocks <= batch * n does too.
    let cfg = LaunchConfig {
        grid_dim: ((batch * row_blocks) as u32, 1, 1),
        block_dim: (WARP_BLOCK as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    (cfg, row_blocks as i32)
}

/// Checks the operands of a batched step of `batch` reservoirs of `n` units: `w_in`
/// `[batch * n, n_in]`, `leaks` of `batch`, `x` and `out` of `batch * n`.
fn check_batched_step(
    op: &'static str,
    (batch, n): (usize, usize),
    w_in: usize,
    n_in: usize,
    leaks: usize,
    x: usize,
    out: usize,
) -> Result<()> {
    let rows = shape::elements(op, "stacked states", &[batch, n])?;
    args::optional_len(op, "x", Some(x), rows)?;
    args::optional_len(op, "out", Some(out), rows)?;
    args::optional_len(op, "leaks", Some(leaks), batch)?;
    shape::matrix(op, "w_in", w_in, rows, n_in)?;
    args::int(op, "n_inputs", n_in)?;
    Ok(())
}

/// One echo-state step of every member of `w` in one launch, out of place: for member `b`,
/// `out_b = (1 - leaks[b]) * x_b + leaks[b] * tanh(W_in,b u + W_b x_b)` with `x_b` and `out_b`
/// the `b`-th `n` values of `x` and `out` (`batch * n` each), `w_in` `[batch * n, u.len()]` (the
/// members' input weights stacked), `leaks` of `batch`. Bit-for-bit what [`reservoir_update`]
/// gives each member alone.
#[allow(clippy::too_many_arguments)] // the step's operands
pub fn reservoir_update_batched(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    w: &DeviceReservoirStack,
    w_in: &CudaView<f32>,
    u: &CudaView<f32>,
    leaks: &CudaView<f32>,
    x: &CudaView<f32>,
    out: &mut CudaViewMut<f32>,
) -> Result<()> {
    const OP: &str = "reservoir_update_batched_kernel";
    check_batched_step(OP, (w.batch, w.n), w_in.len(), u.len(), leaks.len(), x.len(), out.len())?;
    if w.n == 0 {
        return Ok(());
    }
    let (n, n_in) = (w.n as i32, u.len() as i32); // both checked to fit
    let (cfg, row_blocks) = batched_grid(w.batch, w.n);
    let DeviceReservoirStack { dense, dense_off, row_ptr, col_idx, values, .. } = w;
    // SAFETY: the stack was checked on upload (each dense member n * n at its offset, each CSR
    // member's offsets within the entries and columns below n, batch * n rows); w_in holds
    // batch * n * n_in, u n_in, leaks batch, x and out batch * n (checked); out is a mutable view,
    // so it cannot overlap the shared view x.
    unsafe {
        launch!(
            kernels,
            stream,
            OP,
            cfg,
            [dense, dense_off, row_ptr, col_idx, values, w_in, u, leaks, x, out, &n, &n_in, &row_blocks]
        )
    }
}

/// `out_b = W_b x_b` for every member of `w` in one launch (`x` and `out` of `batch * n`, different
/// buffers): bit-for-bit what [`matvec_reservoir`] gives each member alone.
pub fn matvec_reservoir_batched(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    w: &DeviceReservoirStack,
    x: &CudaView<f32>,
    out: &mut CudaViewMut<f32>,
) -> Result<()> {
    const OP: &str = "matvec_reservoir_batched_kernel";
    let rows = w.batch * w.n; // fits (checked on upload)
    args::optional_len(OP, "x", Some(x.len()), rows)?;
    args::optional_len(OP, "out", Some(out.len()), rows)?;
    if w.n == 0 {
        return Ok(());
    }
    let n = w.n as i32;
    let (cfg, row_blocks) = batched_grid(w.batch, w.n);
    let DeviceReservoirStack { dense, dense_off, row_ptr, col_idx, values, .. } = w;
    // SAFETY: the stack was checked on upload (see reservoir_update_batched); x and out hold
    // batch * n each (checked), out cannot overlap x.
    unsafe {
        launch!(
            kernels,
            stream,
            OP,
            cfg,
            [dense, dense_off, row_ptr, col_idx, values, x, out, &n, &row_blocks]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape_error(r: Result<impl std::fmt::Debug>) -> String {
        match r {
            Err(e @ Error::Shape { .. }) => e.to_string(),
            other => panic!("expected a shape error, got {other:?}"),
        }
    }

    #[test]
    fn a_stack_keeps_each_members_format_and_offsets() {
        let dense = [1.0f32, 2.0, 3.0, 4.0];
        let csr = Csr { row_ptr: &[0, 1, 3], col_idx: &[1, 0, 1], values: &[5.0, 6.0, 7.0] };
        let got = stack(
            "t",
            &[ReservoirWeights::Csr(csr), ReservoirWeights::Dense(&dense), ReservoirWeights::Csr(csr)],
            2,
        )
        .unwrap();
        assert_eq!(
            got,
            HostStack {
                dense: dense.to_vec(),
                dense_off: vec![-1, 0, -1],
                row_ptr: vec![0, 1, 3, 3, 3, 4, 6],
                col_idx: vec![1, 0, 1, 1, 0, 1],
                values: vec![5.0, 6.0, 7.0, 5.0, 6.0, 7.0],
            }
        );
        // One format alone: the other's arrays hold one unread entry.
        let only_dense = stack("t", &[ReservoirWeights::Dense(&dense); 2], 2).unwrap();
        assert_eq!((only_dense.dense_off, only_dense.row_ptr), (vec![0, 4], vec![0; 5]));
        assert_eq!((only_dense.col_idx.len(), only_dense.values.len()), (1, 1));
        assert_eq!(stack("t", &[ReservoirWeights::Csr(csr)], 2).unwrap().dense.len(), 1);
    }

    #[test]
    fn a_stack_refuses_members_that_do_not_fit() {
        let dense = [0.0f32; 4];
        let csr = Csr { row_ptr: &[0, 1, 3], col_idx: &[1, 0, 2], values: &[5.0, 6.0, 7.0] };
        assert!(shape_error(stack("t", &[], 2)).contains("at least one"));
        assert!(shape_error(stack("t", &[ReservoirWeights::Dense(&dense[..3])], 2)).contains("w"));
        assert!(shape_error(stack("t", &[ReservoirWeights::Dense(&dense), ReservoirWeights::Csr(csr)], 2))
            .contains("column"));
        assert!(shape_error(stack("t", &[ReservoirWeights::Dense(&dense)], 1 << 31)).contains("batch * n"));
    }

    #[test]
    fn the_batched_step_checks_every_operand() {
        let ok = |w_in, n_in, leaks, x, out| check_batched_step("t", (3, 5), w_in, n_in, leaks, x, out);
        ok(15 * 4, 4, 3, 15, 15).unwrap();
        assert!(shape_error(ok(15 * 4, 4, 3, 14, 15)).contains("x"));
        assert!(shape_error(ok(15 * 4, 4, 3, 15, 16)).contains("out"));
        assert!(shape_error(ok(15 * 4, 4, 2, 15, 15)).contains("leaks"));
        assert!(shape_error(ok(15 * 4, 3, 3, 15, 15)).contains("w_in"));
        assert!(shape_error(check_batched_step("t", (usize::MAX, 2), 0, 0, 0, 0, 0)).contains("stacked"));
    }
}
