//! GEMM on the built-in kernels (`cuda/gemm_simt.cu`, `gemm_mma.cu`, `gemm_sm90.cu`): the
//! problem description ([`Gemm`], [`Precision`]), the dispatcher ([`dispatch`]) and the launcher
//! ([`gemm`]) for row-major matrices on device buffers. No cuBLAS is involved.
//!
//! The launch contracts (grids, shared memory, tensor-map encoding) are in notes/gemm.md.

pub mod dispatch;
pub mod double;
mod epilogue;
mod spec;
pub mod tensor_map;

use std::collections::BTreeMap;
use std::mem::size_of;
use std::sync::{Arc, Mutex};

use crate::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use crate::driver::{
    CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchConfig, PushKernelArg,
};
use crate::error::{Error, Result};
use crate::kernels::args::{self, CheckedPtr as _, CheckedPtrMut as _};
use crate::kernels::grid::{self, GRID_YZ_MAX};
use crate::kernels::shape;
use crate::kernels::Kernels;

use dispatch::{Device, Feed, Plan, TmaReady, SIMT64_TILE_M, SIMT_TILE_N, TILE_M, TMA_FAST_PITCH};
pub use epilogue::{Bias, FusedActivation, RawEpilogue};
pub use spec::{effective_precision, Element, Gemm, GemmF64, Precision};
use tensor_map::{Dtype, Operand};

/// Dynamic shared memory of the mma.sync kernels (4-stage cp.async ring).
const MMA_SMEM: u32 = 81_920;
/// Dynamic shared memory of every sm_90a kernel (stages x (128 + BN) x 128 + 1024 bytes).
const SM90_SMEM: u32 = 197_632;
/// Threads per block: 256 for the SIMT / small / mma.sync kernels, 384 for sm_90a.
const BLOCK: u32 = 256;
const SM90_BLOCK: u32 = 384;
/// Rows (and columns) per block of the small kernel.
const SMALL_TILE: usize = 16;
/// Workspace rows are padded to this many f32 (128-byte pitch, TMA's fast case).
const STAGE_PITCH: usize = 32;

/// Device scratch that GEMMs reuse (operands transposed or copied to a new pitch for the sm_90
/// kernels, split-K partial products): it grows to the largest request and is kept, so a GEMM
/// does not allocate. A fresh allocation per call is costly because the stream-ordered pool hands
/// freed memory back to the device at every synchronisation (64 MB per 4096^3 TF32 `tn` call). Thread-safe: a GEMM holds the
/// lock while it enqueues its work, and the buffer's own read/write tracking orders its uses
/// across streams.
#[derive(Default)]
pub struct Workspace(Mutex<Option<CudaSlice<u8>>>);

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
    // SAFETY: `validate` and `check_bias` checked that the views hold every element `g` and the
    // epilogue touch.
    unsafe { run::<TIn, TOut>(kernels, stream, workspace, g, precision, [pa, pb, pc], &epilogue) }
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
    [a, b, c]: [u64; 3],
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
    unsafe { run::<TIn, TOut>(kernels, stream, workspace, g, precision, [a, b, c], epilogue) }
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

/// The launches of a validated, non-empty `g` at `precision` on `[A, B, C]`, then `epilogue`:
/// fused into the stores where C is not read (beta == 0) and the kernels that run take it, else
/// one more pass over C.
///
/// # Safety
/// As [`gemm_raw_with_epilogue`]; `g` has passed `validate`.
unsafe fn run<TIn: Element, TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    workspace: &Workspace,
    g: &Gemm,
    precision: Precision,
    operands: [u64; 3],
    epilogue: &RawEpilogue,
) -> Result<()> {
    let fusable = g.beta == 0.0;
    let offered = if fusable { *epilogue } else { RawEpilogue::default() };
    // SAFETY: the caller's obligations; the epilogue offered is fusable (beta == 0, or none).
    let fused =
        unsafe { run_fused::<TIn, TOut>(kernels, stream, workspace, g, precision, operands, &offered) }?;
    if epilogue.is_active() && !(fusable && fused) {
        // SAFETY: C holds the validated m x n blocks of every entry; the bias was checked.
        unsafe { epilogue_pass::<TOut>(kernels, stream, g, operands[2], epilogue) }?;
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
    unsafe { epilogue_pass::<T>(kernels, stream, &g, pc, &epilogue) }
}

/// `C = epilogue(C)` on the m x n block of every batch entry (`gemm_epilogue_<out>`).
///
/// # Safety
/// `c` holds the validated C of `g`; the epilogue's bias covers every entry.
unsafe fn epilogue_pass<TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    g: &Gemm,
    c: u64,
    epilogue: &RawEpilogue,
) -> Result<()> {
    let function = kernels.function(&format!("gemm_epilogue_{}", TOut::NAME))?;
    let (m, n, ldc, stride_c) = (g.m as i32, g.n as i32, g.ldc as i32, g.stride_c as i64);
    let blocks = (g.m * g.n).div_ceil(BLOCK as usize).min(kernels.multiprocessors() as usize * 8);
    for z0 in (0..g.batch).step_by(GRID_YZ_MAX) {
        let entries = (g.batch - z0).min(GRID_YZ_MAX);
        let c = c + (z0 * g.stride_c * size_of::<TOut>()) as u64;
        let (bias, bias_stride, act) = epilogue.args_from(z0, size_of::<TOut>());
        let cfg = LaunchConfig {
            grid_dim: (blocks as u32, 1, entries as u32),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: `(m, n, C, ldc, strideC, bias, biasStride, act)`: C advanced to entry z0 holds
        // the m x n blocks of entries z0..z0+entries (validated), the bias theirs (checked).
        unsafe {
            stream
                .launch_builder(&function)
                .arg(&m)
                .arg(&n)
                .arg(&c)
                .arg(&ldc)
                .arg(&stride_c)
                .arg(&bias)
                .arg(&bias_stride)
                .arg(&act)
                .launch(cfg)?;
        }
    }
    Ok(())
}

/// The GEMM's launches, with `epilogue` (inactive, or with beta == 0) in their stores where the
/// kernels that run fuse it: `true` when they did (for an inactive one, whatever ran).
///
/// # Safety
/// As [`run`].
unsafe fn run_fused<TIn: Element, TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    workspace: &Workspace,
    g: &Gemm,
    precision: Precision,
    [pa, pb, pc]: [u64; 3],
    epilogue: &RawEpilogue,
) -> Result<bool> {
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
        let small = Family::Small.entry::<TIn, TOut>(precision);
        launch_common::<TIn, TOut>(
            kernels,
            stream,
            &small,
            Family::Small,
            &scale_only,
            [pz, pz, pc],
            epilogue,
        )?;
        return Ok(true);
    }

    let mut device = device(kernels)?;
    let es = size_of::<TIn>() as u64;
    let (rows_a, rows_b) = (g.a_dims().0 as u64, g.b_dims().0 as u64);
    let (batch, lda, ldb) = (g.batch as u64, g.lda as u64, g.ldb as u64);
    let tma = TmaReady {
        a: Operand::tma_ready(pa, es, rows_a, lda, batch, g.stride_a as u64),
        b: Operand::tma_ready(pb, es, rows_b, ldb, batch, g.stride_b as u64),
    };
    loop {
        let plan = dispatch::plan(g, precision, &device, tma);
        let family = match plan {
            Plan::Small => Family::Small,
            Plan::Simt => Family::Simt,
            Plan::Simt64 => Family::Simt64,
            Plan::Mma => Family::Mma,
            Plan::Skinny { rows, splits } => {
                // SAFETY: the caller's obligations.
                unsafe {
                    skinny::<TIn, TOut>(kernels, stream, workspace, g, [pa, pb, pc], rows, splits, epilogue)
                }?;
                return Ok(true);
            }
            Plan::SplitK { splits, mma } => {
                let family = if mma { Family::Mma } else { Family::Simt64 };
                let parts = SplitK { g, precision, family, splits: splits as usize };
                parts.run::<TIn, TOut>(kernels, stream, workspace, [pa, pb, pc], epilogue)?;
                return Ok(true);
            }
            Plan::Sm90 { bn, a: feed_a, b: feed_b } => {
                match sm90::<TIn, TOut>(
                    kernels,
                    stream,
                    workspace,
                    &device,
                    g,
                    precision,
                    [pa, pb, pc],
                    bn,
                    feed_a,
                    feed_b,
                    epilogue,
                ) {
                    Err(Error::ModuleLoad { family: "gemm_sm90", .. }) => {
                        // Not loadable here (driver or image): remember, and use mma.sync.
                        device.sm90 = false;
                        sm90_failed(kernels.context().ordinal());
                        continue;
                    }
                    result => return result.map(|()| true),
                }
            }
        };
        let name = family.entry::<TIn, TOut>(precision);
        let fused = family.fuses_epilogue();
        let stored = if fused { *epilogue } else { RawEpilogue::default() };
        launch_common::<TIn, TOut>(kernels, stream, &name, family, g, [pa, pb, pc], &stored)?;
        return Ok(fused);
    }
}

/// The kernel families that share the common argument list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Small,
    Simt,
    /// Exact fp32 only (the dispatcher picks it for f32 data at `Precision::F32`).
    Simt64,
    Mma,
}

impl Family {
    /// The entry point for these element types at `precision`.
    fn entry<TIn: Element, TOut: Element>(self, precision: Precision) -> String {
        match self {
            Family::Small => format!("gemm_small_{}_{}", TIn::NAME, TOut::NAME),
            Family::Simt => format!("gemm_simt_{}_{}", TIn::NAME, TOut::NAME),
            Family::Simt64 => format!("gemm_simt64_{}_{}", TIn::NAME, TOut::NAME),
            Family::Mma => format!("gemm_mma_{}_{}", input_name::<TIn>(precision), TOut::NAME),
        }
    }

    /// Whether the kernels apply the epilogue in their stores (and take its arguments). The
    /// others store plainly and the epilogue follows as a pass over C: compiled into their stores
    /// it cost the plain GEMM registers and speed (cuda/gemm_common.cuh).
    fn fuses_epilogue(self) -> bool {
        self == Family::Small
    }

    /// (rows per block, columns per block, dynamic shared memory).
    fn tile_and_smem(self) -> (usize, usize, u32) {
        match self {
            Family::Small => (SMALL_TILE, SMALL_TILE, 0),
            Family::Simt => (TILE_M, SIMT_TILE_N, 0),
            Family::Simt64 => (SIMT64_TILE_M, TILE_M, 0),
            Family::Mma => (TILE_M, TILE_M, MMA_SMEM),
        }
    }
}

/// The tensor-core input name: `tf32` for f32 data.
fn input_name<TIn: Element>(precision: Precision) -> &'static str {
    if precision == Precision::Tf32 {
        "tf32"
    } else {
        TIn::NAME
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

/// Launches a SIMT / small / mma.sync kernel over `g`, whose operands are at device addresses
/// `[A, B, C]`, with `epilogue` in its stores (inactive unless the family fuses it): batches of at
/// most 65 535 (grid.z) and row blocks within grid.y's limit.
fn launch_common<TIn: Element, TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    name: &str,
    family: Family,
    g: &Gemm,
    [pa, pb, pc]: [u64; 3],
    epilogue: &RawEpilogue,
) -> Result<()> {
    debug_assert!(family.fuses_epilogue() || !epilogue.is_active(), "{name} stores plainly");
    let (tile_rows, tile_cols, smem) = family.tile_and_smem();
    let function = function_with_smem(kernels, name, smem)?;
    let (es_in, es_out) = (size_of::<TIn>(), size_of::<TOut>());
    let rows_per_launch = GRID_YZ_MAX * tile_rows;
    let (n, k, lda, ldb, ldc) = (g.n as i32, g.k as i32, g.lda as i32, g.ldb as i32, g.ldc as i32);
    let (stride_a, stride_b, stride_c) = (g.stride_a as i64, g.stride_b as i64, g.stride_c as i64);
    let (trans_a, trans_b) = (i32::from(g.trans_a), i32::from(g.trans_b));
    for z0 in (0..g.batch).step_by(GRID_YZ_MAX) {
        let entries = (g.batch - z0).min(GRID_YZ_MAX);
        for r0 in (0..g.m).step_by(rows_per_launch) {
            let rows = (g.m - r0).min(rows_per_launch);
            let a_offset = z0 * g.stride_a + r0 * if g.trans_a { 1 } else { g.lda };
            let a = pa + (a_offset * es_in) as u64;
            let b = pb + (z0 * g.stride_b * es_in) as u64;
            let c = pc + ((z0 * g.stride_c + r0 * g.ldc) * es_out) as u64;
            let (bias, bias_stride, act) = epilogue.args_from(z0, es_out);
            let m = rows as i32;
            let cfg = LaunchConfig {
                grid_dim: (g.n.div_ceil(tile_cols) as u32, rows.div_ceil(tile_rows) as u32, entries as u32),
                block_dim: (BLOCK, 1, 1),
                shared_mem_bytes: smem,
            };
            let mut launch = stream.launch_builder(&function);
            launch
                .arg(&m)
                .arg(&n)
                .arg(&k)
                .arg(&g.alpha)
                .arg(&a)
                .arg(&lda)
                .arg(&stride_a)
                .arg(&trans_a)
                .arg(&b)
                .arg(&ldb)
                .arg(&stride_b)
                .arg(&trans_b)
                .arg(&g.beta)
                .arg(&c)
                .arg(&ldc)
                .arg(&stride_c);
            if family.fuses_epilogue() {
                launch.arg(&bias).arg(&bias_stride).arg(&act);
            }
            // SAFETY: the argument list matches the family's signature (notes/gemm.md), the
            // epilogue's three only for the family that fuses it. `validate` checked that A, B and
            // C hold every element the `batch x m x n x k` problem touches with these leading
            // dimensions and strides (and the bias its entries); this launch covers batch entries
            // z0..z0+entries and rows r0..r0+rows of that problem, with A, C and the bias advanced
            // to them.
            unsafe { launch.launch(cfg) }?;
        }
    }
    Ok(())
}

/// Makes the locked workspace hold at least `bytes` (none when 0), freeing a smaller buffer first
/// (ordered after its uses) so both are never held at once.
///
/// # Safety
/// A new buffer is uninitialised: the caller must write every byte it reads.
unsafe fn grow(scratch: &mut Option<CudaSlice<u8>>, stream: &Arc<CudaStream>, bytes: usize) -> Result<()> {
    if bytes > 0 && scratch.as_ref().is_none_or(|ws| ws.len() < bytes) {
        *scratch = None;
        // SAFETY: the caller's obligation (above).
        *scratch = Some(unsafe { stream.alloc::<u8>(bytes) }?);
    }
    Ok(())
}

/// Copies `rows` rows of `width` bytes from device address `src` (rows `src_pitch` bytes apart)
/// to `dst` (rows `dst_pitch` bytes apart) with `gemm_copy_rows`, ordered on `stream` (2.8 TB/s
/// on an H100 where cuMemcpy2DAsync moved these pitches at 1.5).
///
/// # Safety
/// Both blocks must lie in live device allocations, width and pitches must be even, and nothing
/// else may use the destination until the copy is done.
unsafe fn copy_rows(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    (dst, dst_pitch): (u64, usize),
    (src, src_pitch): (u64, usize),
    width: usize,
    rows: usize,
) -> Result<()> {
    let function = kernels.function("gemm_copy_rows")?;
    let blocks = rows.min(kernels.multiprocessors() as usize * 16);
    let cfg = LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
    let (rows, width) = (rows as i64, width as i64);
    let (src_pitch, dst_pitch) = (src_pitch as i64, dst_pitch as i64);
    // SAFETY: `(rows, width, src, src_pitch, dst, dst_pitch)` as the kernel takes them; the caller
    // vouches for both blocks.
    unsafe {
        stream
            .launch_builder(&function)
            .arg(&rows)
            .arg(&width)
            .arg(&src)
            .arg(&src_pitch)
            .arg(&dst)
            .arg(&dst_pitch)
            .launch(cfg)
    }?;
    Ok(())
}

/// One GEMM (batch 1) run as f32 partial products over slices of k, then summed.
struct SplitK<'a> {
    g: &'a Gemm,
    precision: Precision,
    /// The kernels of the partial products (f32 out).
    family: Family,
    /// Slices asked for.
    splits: usize,
}

impl SplitK<'_> {
    /// Slices start a multiple of this many elements apart along k (keeps 16-byte alignment).
    const SLICE_ALIGN: usize = 32;

    /// The partial products go to packed m x n f32 matrices in `workspace`, one per slice
    /// (through the family's batch dimension; the last, shorter slice by its own launch), then
    /// `gemm_splitk_reduce_<out>` writes `C = alpha * sum + beta * C` summing in slice order.
    fn run<TIn: Element, TOut: Element>(
        &self,
        kernels: &Kernels,
        stream: &Arc<CudaStream>,
        workspace: &Workspace,
        [pa, pb, pc]: [u64; 3],
        epilogue: &RawEpilogue,
    ) -> Result<()> {
        let g = self.g;
        let depth = g.k.div_ceil(self.splits).next_multiple_of(Self::SLICE_ALIGN);
        let (full, rest) = (g.k / depth, g.k % depth);
        let parts = full + usize::from(rest > 0);
        let outputs = g.m * g.n;
        let mut scratch = workspace.0.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the partial launches write every element of the `parts` m x n matrices before
        // the reduction reads them.
        unsafe { grow(&mut scratch, stream, parts * outputs * size_of::<f32>()) }?;
        let (partials, _write_partials) = scratch.as_mut().expect("grown above").checked_ptr_mut(stream)?;

        // The next slice of k is `depth` columns further along A stored m x k, rows along k x m.
        let step_a = if g.trans_a { depth * g.lda } else { depth };
        let step_b = if g.trans_b { depth } else { depth * g.ldb };
        let slices = Gemm {
            k: depth,
            batch: full,
            alpha: 1.0,
            beta: 0.0,
            ldc: g.n,
            stride_a: step_a,
            stride_b: step_b,
            stride_c: outputs,
            ..*g
        };
        let name = self.family.entry::<TIn, f32>(self.precision);
        let none = RawEpilogue::default();
        let es = size_of::<TIn>() as u64;
        if full > 0 {
            launch_common::<TIn, f32>(
                kernels,
                stream,
                &name,
                self.family,
                &slices,
                [pa, pb, partials],
                &none,
            )?;
        }
        if rest > 0 {
            let last = Gemm { k: rest, batch: 1, ..slices };
            let at = [
                pa + (full * step_a) as u64 * es,
                pb + (full * step_b) as u64 * es,
                partials + (full * outputs * size_of::<f32>()) as u64,
            ];
            launch_common::<TIn, f32>(kernels, stream, &name, self.family, &last, at, &none)?;
        }

        // SAFETY: the launches above write all `parts` partial products; C and the bias are the
        // caller's (validated, checked).
        unsafe { reduce_partials::<TOut>(kernels, stream, g, parts, partials, pc, epilogue) }
    }
}

/// `gemm_splitk_reduce_<out>`: `C = epilogue(alpha * sum + beta * C)` of a batch-1 `g` from `parts`
/// packed m x n f32 partial products at device address `partials`, summed in order.
///
/// # Safety
/// `partials` must hold the `parts` products (written, in stream order, before this launch) and
/// `c` the validated m x n block of C; the epilogue's bias its n values.
unsafe fn reduce_partials<TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    g: &Gemm,
    parts: usize,
    partials: u64,
    c: u64,
    epilogue: &RawEpilogue,
) -> Result<()> {
    let reduce = kernels.function(&format!("gemm_splitk_reduce_{}", TOut::NAME))?;
    let (m, n, parts, ldc) = (g.m as i32, g.n as i32, parts as i32, g.ldc as i32);
    let (bias, _, act) = epilogue.args_from(0, size_of::<TOut>());
    // One output per thread per step, blocks of 256 (the kernel's own block size).
    let cfg = grid::elementwise(g.m * g.n, grid::Step::Scalar);
    // SAFETY: `(m, n, splits, part, alpha, beta, C, ldc, bias, act)`: reads the `parts` packed
    // m x n partial products, writes C's m x n block (batch 1), reads n bias values: the caller's
    // obligations.
    unsafe {
        stream
            .launch_builder(&reduce)
            .arg(&m)
            .arg(&n)
            .arg(&parts)
            .arg(&partials)
            .arg(&g.alpha)
            .arg(&g.beta)
            .arg(&c)
            .arg(&ldc)
            .arg(&bias)
            .arg(&act)
            .launch(cfg)?;
    }
    Ok(())
}

/// Runs a batch-1 `g` whose short side has at most `rows` (a power of two up to 16) on
/// `gemm_skinny_<wl|wk>_<in>_s<rows>`: C = op(A) op(B) as X (the short side's operand, staged) times
/// W (the long one, streamed): X = op(A), W = op(B) when m is the short side, else X = op(B)^T,
/// W = op(A)^T. Each of the `splits` slices of k writes an m x n f32 partial product to the
/// workspace; [`reduce_partials`] sums them into C with the epilogue.
///
/// # Safety
/// As [`run`]; `g` has passed `validate`.
#[allow(clippy::too_many_arguments)] // one call site; the plan's fields
unsafe fn skinny<TIn: Element, TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    workspace: &Workspace,
    g: &Gemm,
    [pa, pb, pc]: [u64; 3],
    rows: u32,
    splits: u32,
    epilogue: &RawEpilogue,
) -> Result<()> {
    let es = size_of::<TIn>();
    let depth = g.k.div_ceil(splits as usize).next_multiple_of(dispatch::SKINNY_SLICE_ALIGN);
    debug_assert!(depth <= dispatch::skinny_depth(rows), "the plan sizes the slices");
    let parts = g.k.div_ceil(depth);
    let outputs = g.m * g.n;
    // (X, its element strides along the short side and k), (W, its pitch), the partial's strides
    // for (short, long), and the two sides' lengths.
    let (x, x_strides, w, w_pitch, p_strides, short, long) = if g.m <= g.n {
        let x_strides = if g.trans_a { (1, g.lda) } else { (g.lda, 1) };
        (pa, x_strides, pb, g.ldb, (g.n, 1), g.m, g.n)
    } else {
        let x_strides = if g.trans_b { (g.ldb, 1) } else { (1, g.ldb) };
        (pb, x_strides, pa, g.lda, (1, g.n), g.n, g.m)
    };
    let layout = if dispatch::skinny_long_contiguous(g) { "wl" } else { "wk" };
    let function = kernels.function(&format!("gemm_skinny_{layout}_{}_s{rows}", TIn::NAME))?;
    let mut scratch = workspace.0.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: the slice launch writes every element of the `parts` m x n partial products
    // before the reduction reads them.
    unsafe { grow(&mut scratch, stream, parts * outputs * size_of::<f32>()) }?;
    let (partials, _write_partials) = scratch.as_mut().expect("grown above").checked_ptr_mut(stream)?;
    let cfg = LaunchConfig {
        grid_dim: (long.div_ceil(dispatch::skinny_tile(g, es)) as u32, parts as u32, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let (short, long, k, depth) = (short as i32, long as i32, g.k as i32, depth as i32);
    let (xs, xk, w_pitch) = (x_strides.0 as i64, x_strides.1 as i64, w_pitch as i64);
    let (ps, pl) = (p_strides.0 as i64, p_strides.1 as i64);
    // SAFETY: `(rows, L, k, kc, X, xs, xk, W, wld, part, ps, pl)` as the skinny entries take them.
    // X and W are A and B (or B and A), which `validate` checked hold every element of op(A) and
    // op(B) with these leading dimensions; the kernel reads X's `short` x k and W's k x `long`
    // elements through exactly those strides, and writes `parts` packed m x n f32 blocks into the
    // workspace grown to hold them above.
    unsafe {
        stream
            .launch_builder(&function)
            .arg(&short)
            .arg(&long)
            .arg(&k)
            .arg(&depth)
            .arg(&x)
            .arg(&xs)
            .arg(&xk)
            .arg(&w)
            .arg(&w_pitch)
            .arg(&partials)
            .arg(&ps)
            .arg(&pl)
            .launch(cfg)?;
    }
    // SAFETY: the slices above wrote all `parts` partial products; C and the bias are the
    // caller's (validated, checked).
    unsafe { reduce_partials::<TOut>(kernels, stream, g, parts, partials, pc, epilogue) }
}

/// One operand as an sm_90a kernel reads it: device address, leading dimension, batch stride,
/// stored transposed.
#[derive(Debug, Clone, Copy)]
struct Sm90Operand {
    base: u64,
    ld: usize,
    stride: usize,
    trans: bool,
}

/// Runs `g` on the sm_90a kernels with tile width `bn`, each operand fed as `feed_a` / `feed_b`
/// say: read in place, transposed into a K-major workspace first (TF32 reads at most one
/// MN-major operand), or copied into a workspace with a 128-byte pitch first.
#[allow(clippy::too_many_arguments)] // one call site; the arguments are the plan's fields
fn sm90<TIn: Element, TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    workspace: &Workspace,
    device: &Device,
    g: &Gemm,
    precision: Precision,
    [pa, pb, pc]: [u64; 3],
    bn: u32,
    feed_a: Feed,
    feed_b: Feed,
    epilogue: &RawEpilogue,
) -> Result<()> {
    let (dtype, bk) = match precision {
        Precision::Bf16 => (Dtype::Bf16, 64),
        Precision::F16 => (Dtype::F16, 64),
        _ => (Dtype::F32, 32),
    };
    let es = dtype.size();
    let io = format!("{}_{}", input_name::<TIn>(precision), TOut::NAME);
    let layout = |ta: bool, tb: bool| format!("{}{}", if ta { 't' } else { 'n' }, if tb { 't' } else { 'n' });
    // Transposing turns A (stored k x m) into m x k and B (stored k x n) into n x k.
    let (stage_a, stage_b) = (feed_a == Feed::Transpose, feed_b == Feed::Transpose);
    let fused = if epilogue.is_active() { "_fused" } else { "" };
    let layout = layout(g.trans_a && !stage_a, g.trans_b || stage_b);
    let name = format!("gemm_sm90_{io}_{layout}_n{bn}{fused}");
    let function = function_with_smem(kernels, &name, SM90_SMEM)?;
    let transpose = if stage_a || stage_b { Some(kernels.function("gemm_transpose_f32")?) } else { None };
    let (tile_rows, tile_cols) = dispatch::sm90_tile(precision, !(g.trans_b || stage_b), bn);
    let tiles = g.m.div_ceil(tile_rows) * g.n.div_ceil(tile_cols);
    let (m, n, k, ldc, stride_c) = (g.m as i32, g.n as i32, g.k as i32, g.ldc as i32, g.stride_c as i64);
    let staged_ld = g.k.next_multiple_of(STAGE_PITCH);
    let repitched_ld = |cols: usize| cols.next_multiple_of(TMA_FAST_PITCH / es as usize);
    // The fed operands of one launch (at most GRID_YZ_MAX entries; one when copied to a new
    // pitch), A's then B's, in one workspace; every matrix starts on a 128-byte boundary.
    let most = g.batch.min(GRID_YZ_MAX);
    let region = |feed: Feed, (rows, cols): (usize, usize), k_major_rows: usize| match feed {
        Feed::InPlace => Ok(0),
        Feed::Transpose => {
            shape::elements("gemm", "workspace", &[most, k_major_rows, staged_ld, size_of::<f32>()])
        }
        Feed::Repitch => shape::elements("gemm", "workspace", &[rows, repitched_ld(cols), es as usize]),
    };
    let (bytes_a, bytes_b) = (region(feed_a, g.a_dims(), g.m)?, region(feed_b, g.b_dims(), g.n)?);
    let (bytes_a, need) = bytes_a
        .checked_next_multiple_of(TMA_FAST_PITCH)
        .and_then(|bytes_a| Some((bytes_a, bytes_a.checked_add(bytes_b)?)))
        .ok_or_else(|| Error::Shape {
            op: "gemm",
            expected: "a workspace that fits in usize".into(),
            got: format!("{bytes_a} + {bytes_b} bytes"),
        })?;
    let mut scratch = workspace.0.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: each launch's transposes and copies write every element that its GEMM reads (rows x
    // k of each entry, or the stored matrix) before the GEMM runs; the pitch padding is never read
    // (TMA stops at the matrix edge).
    unsafe { grow(&mut scratch, stream, need) }?;
    // The guard orders the workspace writes after the buffer's earlier uses and records them.
    let (scratch_base, _write_scratch) = match scratch.as_mut() {
        Some(ws) if need > 0 => {
            let (base, guard) = ws.checked_ptr_mut(stream)?;
            (base, Some(guard))
        }
        _ => (0, None),
    };
    let regions = [scratch_base, scratch_base + bytes_a as u64];

    for z0 in (0..g.batch).step_by(GRID_YZ_MAX) {
        let entries = (g.batch - z0).min(GRID_YZ_MAX);
        let at = |base: u64, stride: usize| base + (z0 * stride) as u64 * es;
        let operand = |base: u64,
                       ld: usize,
                       stride: usize,
                       trans: bool,
                       feed: Feed,
                       stored: (usize, usize),
                       ws: u64| {
            match feed {
                Feed::InPlace => Ok::<_, Error>(Sm90Operand { base: at(base, stride), ld, stride, trans }),
                Feed::Repitch => {
                    let pitch = repitched_ld(stored.1);
                    let (es, src) = (es as usize, at(base, stride));
                    // SAFETY: copies the validated stored matrix (batch 1: the dispatcher repitches
                    // single GEMMs only) into this operand's workspace region, sized for
                    // `stored.0` rows at `pitch >= stored.1`.
                    unsafe {
                        copy_rows(kernels, stream, (ws, pitch * es), (src, ld * es), stored.1 * es, stored.0)
                    }?;
                    Ok(Sm90Operand { base: ws, ld: pitch, stride: stored.0 * pitch, trans })
                }
                Feed::Transpose => {
                    // Stored k x rows: transpose to rows x k with a 128-byte pitch into the workspace.
                    let rows = stored.1;
                    let transpose = transpose.as_ref().expect("loaded when transposing");
                    let staged_stride = rows * staged_ld;
                    let (cols, depth) = (rows as i32, g.k as i32);
                    let (ld_in, stride_in, ld_out) = (ld as i32, stride as i64, staged_ld as i32);
                    let (input, stride_out) = (at(base, stride), staged_stride as i64);
                    let cfg = LaunchConfig {
                        grid_dim: (rows.div_ceil(32) as u32, g.k.div_ceil(32) as u32, entries as u32),
                        block_dim: (32, 8, 1),
                        shared_mem_bytes: 0,
                    };
                    // SAFETY: `gemm_transpose_f32(rows, cols, in, ld_in, stride_in, out, ld_out,
                    // stride_out)`: reads the validated k x rows operand of each entry, writes
                    // rows x k at `ws`, this operand's workspace region, which holds
                    // `entries <= most` such matrices at pitch `staged_ld >= k` (sized above).
                    unsafe {
                        stream
                            .launch_builder(transpose)
                            .arg(&depth)
                            .arg(&cols)
                            .arg(&input)
                            .arg(&ld_in)
                            .arg(&stride_in)
                            .arg(&ws)
                            .arg(&ld_out)
                            .arg(&stride_out)
                            .launch(cfg)?;
                    }
                    Ok(Sm90Operand { base: ws, ld: staged_ld, stride: staged_stride, trans: !trans })
                }
            }
        };
        let a = operand(pa, g.lda, g.stride_a, g.trans_a, feed_a, g.a_dims(), regions[0])?;
        let b = operand(pb, g.ldb, g.stride_b, g.trans_b, feed_b, g.b_dims(), regions[1])?;

        let map = |o: Sm90Operand, rows: usize, cols: usize, box_cols: u32, box_rows: u32| {
            Operand {
                base: o.base,
                dtype,
                rows: rows as u64,
                cols: cols as u64,
                ld: o.ld as u64,
                batch: entries as u64,
                stride: o.stride as u64,
                box_cols,
                box_rows,
            }
            .encode()
        };
        // Boxes per notes/gemm.md: K-major operands {BK, the tile's side}, MN-major {128 bytes, BK}.
        let mn_box = (TMA_FAST_PITCH as u64 / es) as u32;
        let map_a =
            if a.trans { map(a, g.k, g.m, mn_box, bk)? } else { map(a, g.m, g.k, bk, tile_rows as u32)? };
        let map_b =
            if b.trans { map(b, g.n, g.k, bk, tile_cols as u32)? } else { map(b, g.k, g.n, mn_box, bk)? };
        let c = pc + (z0 * g.stride_c * size_of::<TOut>()) as u64;
        let (bias, bias_stride, act) = epilogue.args_from(z0, size_of::<TOut>());
        let per_entry = (device.multiprocessors as usize / entries).max(1);
        let cfg = LaunchConfig {
            grid_dim: (tiles.min(per_entry) as u32, 1, entries as u32),
            block_dim: (SM90_BLOCK, 1, 1),
            shared_mem_bytes: SM90_SMEM,
        };
        let mut launch = stream.launch_builder(&function);
        launch
            .arg(&map_a)
            .arg(&map_b)
            .arg(&m)
            .arg(&n)
            .arg(&k)
            .arg(&g.alpha)
            .arg(&g.beta)
            .arg(&c)
            .arg(&ldc)
            .arg(&stride_c);
        if epilogue.is_active() {
            launch.arg(&bias).arg(&bias_stride).arg(&act);
        }
        // SAFETY: `(tmA, tmB, m, n, k, alpha, beta, C, ldc, strideC)`, then `(bias, biasStride,
        // act)` for the `_fused` entry, as the sm_90a entries take them. The maps cover exactly the
        // validated operands (or the workspace regions, kept while the lock is held) of entries
        // z0..z0+entries; C and the bias are advanced to entry z0 and hold every m x n block and
        // bias vector of them (validated, checked).
        unsafe { launch.launch(cfg) }?;
    }
    Ok(())
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
