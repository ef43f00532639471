//! GEMM on the built-in kernels (`cuda/gemm_simt.cu`, `gemm_mma.cu`, `gemm_sm90.cu`): the
//! problem description ([`Gemm`], [`Precision`]), the dispatcher ([`dispatch`]) and the launcher
//! ([`gemm`]) for row-major matrices on device buffers. No cuBLAS is involved.
//!
//! A GEMM is planned once ([`dispatch::plan`]: a [`plan::Plan`] holding every decision its
//! launches need), then launched by the family's file: `tiled.rs` (small, SIMT, mma.sync: the
//! common argument list), `split.rs` (split-K, skinny, the reduction), `sm90.rs` (TMA + wgmma),
//! `epilogue.rs` (the epilogue pass), `double.rs` (f64). The launch contracts (grids, shared
//! memory, tensor-map encoding) are in notes/gemm.md.

pub mod autotune;
mod copies;
pub mod dispatch;
pub mod double;
mod epilogue;
pub mod plan;
mod sm90;
mod spec;
mod split;
pub mod table;
pub mod tensor_map;
mod tiled;
pub mod tuning;

use std::collections::BTreeMap;
use std::mem::size_of;
use std::sync::{Arc, Mutex};

use crate::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use crate::driver::{CudaFunction, CudaStream, CudaView, CudaViewMut};
use crate::error::{Error, Result};
use crate::kernels::args::{self, CheckedPtr as _, CheckedPtrMut as _};
use crate::kernels::shape;
use crate::kernels::Kernels;

use crate::kernels::workspace::grow;
pub use crate::kernels::workspace::Workspace;
use dispatch::{Device, TmaReady};
pub use epilogue::{Bias, FusedActivation, RawEpilogue};
use plan::{Family, Launch, Plan, SMALL_TILE};
pub use spec::{effective_precision, Element, Gemm, GemmF64, Precision};
use tensor_map::Operand;

/// Threads per block of the SIMT, small, mma.sync, skinny, copy and epilogue kernels.
const BLOCK: u32 = 256;

/// `C = alpha * op(A) * op(B) + beta * C` on device buffers, ordered on `stream`, for every batch
/// entry of `g` (see [`Gemm`] for the layout). Checks the shape first ([`Error::Shape`]); m, n or
/// batch 0 does nothing, k = 0 scales C by beta. The kernel is picked by [`dispatch::plan`];
/// scratch comes from `workspace`.
pub fn gemm<TIn: Element, TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    workspace: &Workspace,
    g: &Gemm,
    a: &CudaView<TIn>,
    b: &CudaView<TIn>,
    c: &mut CudaViewMut<TOut>,
) -> Result<()> {
    gemm_bias_act(kernels, stream, workspace, g, a, b, None, FusedActivation::Identity, c)
}

/// [`gemm`] with the fused epilogue: `C = act(alpha * op(A) * op(B) + beta * C + bias)`, the bias
/// (when given) holding one value per column of C for each batch entry (see [`Bias`]). Checks the
/// bias's length too.
#[allow(clippy::too_many_arguments)] // the GEMM's operands plus the epilogue's two
pub fn gemm_bias_act<TIn: Element, TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    workspace: &Workspace,
    g: &Gemm,
    a: &CudaView<TIn>,
    b: &CudaView<TIn>,
    bias: Option<Bias<'_, TOut>>,
    act: FusedActivation,
    c: &mut CudaViewMut<TOut>,
) -> Result<()> {
    let precision = effective_precision::<TIn, TOut>(g.precision)?;
    g.validate(a.len(), b.len(), c.len())?;
    if let Some(bias) = &bias {
        check_bias(g, bias.stride, bias.values.len())?;
    }
    if g.is_empty() || (g.k == 0 && g.beta == 1.0 && bias.is_none() && act == FusedActivation::Identity) {
        return Ok(());
    }
    // The guards record the reads and the write for other streams when they drop, after the
    // launches below.
    let (pa, _read_a) = a.checked_ptr(stream)?;
    let (pb, _read_b) = b.checked_ptr(stream)?;
    let (pc, _write_c) = c.checked_ptr_mut(stream)?;
    let (bias_ptr, _read_bias) = args::input(bias.map(|b| b.values), stream)?;
    let epilogue =
        RawEpilogue { bias: bias.map(|_| bias_ptr), bias_stride: bias.map_or(0, |b| b.stride), act };
    let call = Call { kernels, stream, workspace, g, precision, operands: [pa, pb, pc], epilogue: &epilogue };
    // SAFETY: `validate` and `check_bias` checked that the views hold every element `g` and the
    // epilogue touch.
    unsafe { run::<TIn, TOut>(&call, None) }
}

/// [`gemm`] on raw device addresses `[A, B, C]` (for the cuBLAS-shaped API, whose callers pass
/// pointers): the same checks of `g` except the operands' lengths, the same kernels.
///
/// # Safety
/// `a`, `b` and `c` must be addresses in live device allocations of `kernels`' context that hold
/// the `g.min_lens()` elements from there on (A and B of `TIn`, C of `TOut`); nothing else may
/// write A or B, or use C, until the work enqueued on `stream` is done.
pub unsafe fn gemm_raw<TIn: Element, TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    workspace: &Workspace,
    g: &Gemm,
    operands: [u64; 3],
) -> Result<()> {
    // SAFETY: the caller's obligations, and no epilogue.
    unsafe {
        gemm_raw_with_epilogue::<TIn, TOut>(kernels, stream, workspace, g, operands, &RawEpilogue::default())
    }
}

/// [`gemm_raw`] with the fused epilogue of [`gemm_bias_act`].
///
/// # Safety
/// As [`gemm_raw`]; a bias address must hold `(batch - 1) * bias_stride + n` elements of `TOut`
/// from there on, not written until the work enqueued on `stream` is done.
pub unsafe fn gemm_raw_with_epilogue<TIn: Element, TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    workspace: &Workspace,
    g: &Gemm,
    operands: [u64; 3],
    epilogue: &RawEpilogue,
) -> Result<()> {
    let precision = effective_precision::<TIn, TOut>(g.precision)?;
    g.validate(usize::MAX, usize::MAX, usize::MAX)?;
    if epilogue.bias.is_some() {
        check_bias(g, epilogue.bias_stride, usize::MAX)?;
    }
    if g.is_empty() || (g.k == 0 && g.beta == 1.0 && !epilogue.is_active()) {
        return Ok(());
    }
    // SAFETY: the caller vouches for the operands.
    unsafe { run::<TIn, TOut>(&Call { kernels, stream, workspace, g, precision, operands, epilogue }, None) }
}

/// [`Error::Shape`] unless a bias of `len` elements, `stride` apart per batch entry, covers the n
/// columns of every entry of `g`.
pub(crate) fn check_bias(g: &Gemm, stride: usize, len: usize) -> Result<()> {
    let need = shape::strided_extent("gemm", "bias", g.batch, stride, 1, 0, g.n)?;
    if len < need {
        return Err(Error::Shape {
            op: "gemm",
            expected: format!("a bias of at least {need} elements ({} x {}, stride {stride})", g.batch, g.n),
            got: format!("{len} elements"),
        });
    }
    Ok(())
}

/// One GEMM as its launches take it: where they go (the kernels, the stream they are ordered on,
/// the workspace they take scratch from) and what they compute (`g` at `precision` on the operands
/// at device addresses `[A, B, C]`, with `epilogue`).
#[derive(Clone, Copy)]
struct Call<'a> {
    kernels: &'a Kernels,
    stream: &'a Arc<CudaStream>,
    workspace: &'a Workspace,
    g: &'a Gemm,
    precision: Precision,
    operands: [u64; 3],
    epilogue: &'a RawEpilogue,
}

/// The launches of a validated, non-empty `call.g`, then its epilogue: fused into the stores where
/// C is not read (beta == 0) and the kernels that run take it, else one more pass over C.
/// `kernel`: the caller's choice instead of the dispatcher's.
///
/// # Safety
/// As [`gemm_raw_with_epilogue`] for the call's operands; `g` has passed `validate`.
unsafe fn run<TIn: Element, TOut: Element>(call: &Call<'_>, kernel: Option<dispatch::Kernel>) -> Result<()> {
    // A batch with B broadcast whose entries stack, with one bias for all, runs as one product.
    let one_bias = call.epilogue.bias.is_none() || call.epilogue.bias_stride == 0;
    if let Some(one) = (kernel.is_none() && one_bias).then(|| call.g.stacked()).flatten() {
        // SAFETY: the same elements of the same operands as the batch (`Gemm::stacked`).
        return unsafe { run::<TIn, TOut>(&Call { g: &one, ..*call }, None) };
    }
    let Call { kernels, stream, g, operands, epilogue, .. } = *call;
    let fusable = g.beta == 0.0;
    let offered = if fusable { *epilogue } else { RawEpilogue::default() };
    // SAFETY: the caller's obligations; the epilogue offered is fusable (beta == 0, or none).
    let fused = unsafe { run_fused::<TIn, TOut>(&Call { epilogue: &offered, ..*call }, kernel) }?;
    if epilogue.is_active() && !(fusable && fused) {
        // SAFETY: C holds the validated m x n blocks of every entry; the bias was checked.
        unsafe { epilogue::pass::<TOut>(kernels, stream, g, operands[2], epilogue) }?;
    }
    Ok(())
}

/// `c = act(c + bias)` on a packed row-major `rows x cols` matrix on the device, `bias` holding
/// one value per column: the GEMM epilogue as a pass of its own (for a product that could not
/// fuse it). Ordered on `stream`; [`Error::Shape`] when `c` or `bias` is short.
pub fn bias_act<T: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    c: &mut CudaViewMut<T>,
    (rows, cols): (usize, usize),
    bias: Option<&CudaView<T>>,
    act: FusedActivation,
) -> Result<()> {
    shape::matrix("bias_act", "c", c.len(), rows, cols)?;
    let g = Gemm::new(rows, cols, 0);
    g.validate(0, 0, c.len())?;
    if let Some(bias) = bias {
        check_bias(&g, 0, bias.len())?;
    }
    if g.is_empty() {
        return Ok(());
    }
    let (pc, _write_c) = c.checked_ptr_mut(stream)?;
    let (bias_ptr, _read_bias) = args::input(bias, stream)?;
    let epilogue = RawEpilogue { bias: bias.map(|_| bias_ptr), bias_stride: 0, act };
    // SAFETY: c holds the rows x cols matrix and the bias its cols values (both checked).
    unsafe { epilogue::pass::<T>(kernels, stream, &g, pc, &epilogue) }
}

/// The GEMM's launches, with `epilogue` (inactive, or with beta == 0) in their stores where the
/// kernels that run fuse it: `true` when they did (for an inactive one, whatever ran). The plan is
/// [`dispatch::plan`]'s, asked once, or `kernel` resolved for this GEMM when the caller chose one.
///
/// # Safety
/// As [`run`].
unsafe fn run_fused<TIn: Element, TOut: Element>(
    call: &Call<'_>,
    kernel: Option<dispatch::Kernel>,
) -> Result<bool> {
    let Call { kernels, stream, g, precision, operands: [pa, pb, pc], epilogue, .. } = *call;
    if g.k == 0 {
        // C = beta * C: a k = 1 product of zeros (alpha 0), read through zero strides.
        let zeros = stream.clone_htod(&[TIn::from_f32(0.0); SMALL_TILE])?;
        let (pz, _read_z) = zeros.checked_ptr(stream)?;
        // Leading dimensions 0 with A as stored and B transposed: every read is element 0.
        let scale_only = Gemm {
            k: 1,
            trans_a: false,
            trans_b: true,
            alpha: 0.0,
            lda: 0,
            ldb: 0,
            stride_a: 0,
            stride_b: 0,
            ..*g
        };
        // SAFETY: A and B are the SMALL_TILE zeros read at element 0 only (leading dimensions and
        // strides 0); C is the caller's validated C.
        unsafe {
            tiled::launch::<TIn, TOut>(
                kernels,
                stream,
                Family::Small,
                precision,
                &scale_only,
                [pz, pz, pc],
                [false; 2],
                epilogue,
            )
        }?;
        return Ok(true);
    }

    let mut device = device(kernels)?;
    let tma = tma_ready::<TIn>(g, pa, pb);
    let tuned = match kernel {
        Some(_) => None,
        // SAFETY: the caller's obligations, for this validated GEMM with k >= 1.
        None => unsafe { autotune::kernel::<TIn, TOut>(call, &device, tma) },
    };
    loop {
        let plan = match (kernel, tuned.and_then(|k| dispatch::tuned_plan(k, g, precision, &device, tma))) {
            (Some(kernel), _) => kernel.resolve(g, precision, &device, tma)?,
            (None, Some(plan)) => plan,
            (None, None) => dispatch::plan(g, precision, &device, tma)?,
        };
        // SAFETY: the caller's obligations; the plan was resolved for `g`, `precision`, `device`
        // and these operands.
        match unsafe { execute::<TIn, TOut>(call, &device, &plan) } {
            Err(Error::ModuleLoad { family: "gemm_sm90", .. }) if kernel.is_none() => {
                // Not loadable here (driver or image): remember, and plan again without it.
                device.sm90 = false;
                sm90_failed(kernels.context().ordinal());
            }
            result => return result,
        }
    }
}

/// The copies of f32 operands worth making before `family`'s kernels read them
/// ([`copies::PaddedF32`]); never for 16-bit data, whose CUDA-core path converts as it loads.
fn padded_f32<TIn: Element>(family: Family, g: &Gemm, operands: [u64; 2]) -> Option<copies::PaddedF32> {
    (TIn::NAME == "f32").then(|| copies::PaddedF32::of(family, g, operands)).flatten()
}

/// Whether TMA can read A and B of `g` at device addresses `pa`, `pb` as given.
fn tma_ready<TIn: Element>(g: &Gemm, pa: u64, pb: u64) -> TmaReady {
    let es = size_of::<TIn>() as u64;
    let (rows_a, rows_b) = (g.a_dims().0 as u64, g.b_dims().0 as u64);
    let (batch, lda, ldb) = (g.batch as u64, g.lda as u64, g.ldb as u64);
    TmaReady {
        a: Operand::tma_ready(pa, es, rows_a, lda, batch, g.stride_a as u64),
        b: Operand::tma_ready(pb, es, rows_b, ldb, batch, g.stride_b as u64),
    }
}

/// The launches of `plan`: `true` when the epilogue was fused into them.
///
/// # Safety
/// As [`run`]; `plan` was resolved for the call's `g`, `precision` and operands on `device`.
unsafe fn execute<TIn: Element, TOut: Element>(
    call: &Call<'_>,
    device: &Device,
    plan: &Plan,
) -> Result<bool> {
    let Call { kernels, stream, g, precision, operands, epilogue, .. } = *call;
    match &plan.launch {
        Launch::Tiled(family) => {
            let fused = family.fuses_epilogue();
            let stored = if fused { *epilogue } else { RawEpilogue::default() };
            let [pa, pb, pc] = operands;
            let Some(copies) = padded_f32::<TIn>(*family, g, [pa, pb]) else {
                // SAFETY: the caller's obligations, with the plan resolved for this GEMM.
                unsafe {
                    tiled::launch::<TIn, TOut>(
                        kernels, stream, *family, precision, g, operands, [false; 2], &stored,
                    )
                }?;
                return Ok(fused);
            };
            let mut scratch = call.workspace.lock();
            // SAFETY: the copies write every byte the kernel reads of their regions.
            unsafe { grow(&mut scratch.bytes, stream, copies.bytes(g)) }?;
            let (base, _write_workspace) =
                scratch.bytes.as_mut().expect("grown above").checked_ptr_mut(stream)?;
            // SAFETY: `g` was validated for these f32 operands; the workspace grown above for the
            // copies is held until the kernel that reads them is enqueued.
            let read = unsafe { copies.copy(kernels, stream, g, [pa, pb], base) }?;
            let at = [read.operands[0], read.operands[1], pc];
            // SAFETY: the caller's obligations, with the plan resolved for this GEMM, whose copies
            // (same elements, a new pitch, rows padded inside the workspace) the kernel reads.
            unsafe {
                tiled::launch::<TIn, TOut>(
                    kernels,
                    stream,
                    *family,
                    precision,
                    &read.g,
                    at,
                    read.padded,
                    &stored,
                )
            }?;
            Ok(fused)
        }
        Launch::SplitK(split) => {
            // SAFETY: the caller's obligations, with the plan resolved for this GEMM.
            unsafe { split::split_k::<TIn, TOut>(call, device, split) }?;
            Ok(true)
        }
        Launch::Skinny(skinny) => {
            // SAFETY: the caller's obligations, with the plan resolved for this GEMM.
            unsafe { split::skinny::<TIn, TOut>(call, skinny) }?;
            Ok(true)
        }
        Launch::Gemv(gemv) => {
            // SAFETY: the caller's obligations, with the plan resolved for this GEMM.
            unsafe { split::gemv::<TIn, TOut>(call, gemv) }?;
            Ok(true)
        }
        Launch::Sm90(sm90) => {
            // SAFETY: the caller's obligations, with the plan resolved for this GEMM.
            unsafe { sm90::launch::<TIn, TOut>(call, device, sm90) }?;
            Ok(true)
        }
        Launch::Sm90Tail(plan) => {
            let (head, rest, [skip_a, skip_c]) = g.split_rows(plan.head_rows);
            let [pa, pb, pc] = operands;
            let first = Call { g: &head, ..*call };
            // SAFETY: the caller's obligations; the head is `g`'s first rows (same operands), and
            // the plan was resolved for it.
            unsafe { sm90::launch::<TIn, TOut>(&first, device, &plan.head) }?;
            let (a, c) = (pa + (skip_a * size_of::<TIn>()) as u64, pc + (skip_c * size_of::<TOut>()) as u64);
            let last = Call { g: &rest, operands: [a, pb, c], ..*call };
            // SAFETY: the caller's obligations; the rest is `g`'s other rows, from A's and C's
            // element offsets of its first row, and the plan was resolved for it.
            unsafe { split::split_k::<TIn, TOut>(&last, device, &plan.tail) }?;
            Ok(true)
        }
    }
}

/// `name` with at least `smem` bytes of dynamic shared memory allowed. The attribute is set the
/// first time (it belongs to the loaded function, so later calls only read it back).
fn function_with_smem(kernels: &Kernels, name: &str, smem: u32) -> Result<CudaFunction> {
    let function = kernels.function(name)?;
    let attribute = CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
    if smem > 0 && function.get_attribute(attribute)? < smem as i32 {
        function.set_attribute(attribute, smem as i32)?;
    }
    Ok(function)
}

/// What the dispatcher remembers about one device of the process.
#[derive(Debug, Clone, Copy)]
struct DeviceState {
    capability: (i32, i32),
    shared_optin: u32,
    sm90_failed: bool,
}

/// Per device ordinal: read once, updated when the sm_90a module fails to load.
static DEVICES: Mutex<BTreeMap<usize, DeviceState>> = Mutex::new(BTreeMap::new());

/// The dispatcher's view of `kernels`' device; the capability is read once per device.
fn device(kernels: &Kernels) -> Result<Device> {
    let ctx = kernels.context();
    let ordinal = ctx.ordinal();
    let known = DEVICES.lock().unwrap_or_else(|e| e.into_inner()).get(&ordinal).copied();
    let state = match known {
        Some(state) => state,
        None => {
            let optin =
                ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
            let state = DeviceState {
                capability: ctx.compute_capability()?,
                shared_optin: u32::try_from(optin).unwrap_or(0),
                sm90_failed: false,
            };
            *DEVICES.lock().unwrap_or_else(|e| e.into_inner()).entry(ordinal).or_insert(state)
        }
    };
    Ok(Device {
        capability: state.capability,
        multiprocessors: kernels.multiprocessors(),
        sm90: state.capability == (9, 0) && !state.sm90_failed,
        shared_optin: state.shared_optin,
    })
}

/// Records that the sm_90a module does not load on device `ordinal` (so it is not tried again).
fn sm90_failed(ordinal: usize) {
    if let Some(state) = DEVICES.lock().unwrap_or_else(|e| e.into_inner()).get_mut(&ordinal) {
        state.sm90_failed = true;
    }
}
