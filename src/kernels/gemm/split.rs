//! The launches that slice k: split-K (one GEMM whose tiles leave most multiprocessors idle, run as
//! f32 partial products on a tiled family's or the sm_90a kernels) and the skinny kernels (C's
//! short side at most 16: the long operand streamed once), both summed into C by
//! `gemm_splitk_reduce_<out>` with the epilogue; and the one-launch GEMV beside them (C's short side
//! 1, k not sliced).

use std::mem::size_of;

use std::sync::Arc;

use super::dispatch::Device;
use super::plan::{Gemv, Partials, Skinny, SplitK};
use super::{grow, sm90, tiled, Call, Element, Gemm, RawEpilogue, Workspace, BLOCK};
use crate::driver::{CudaStream, DeviceRepr, LaunchConfig};
use crate::error::{Error, Result};
use crate::kernels::args::CheckedPtrMut as _;
use crate::kernels::grid;
use crate::kernels::workspace::{zeroed_counters, COUNTERS};
use crate::kernels::{launch, Kernels};

/// Runs a batch-1 `g` as `plan.parts` f32 partial products over slices of k (packed m x n matrices
/// in `workspace`, through the kernels' batch dimension; the last, shorter slice by its own
/// launch), then `gemm_splitk_reduce_<out>` writes `C = epilogue(alpha * sum + beta * C)` summing
/// in slice order. (Finishing in the slices' own launches, as the skinny kernels do, was slower
/// here: each tile's last slice reads the others' sums alone; see notes/gemm-splitk-finish.)
///
/// # Safety
/// As [`tiled::launch`] for the call's operands; `plan` was resolved for its `g` and `precision`
/// on `device`.
pub(super) unsafe fn split_k<TIn: Element, TOut: Element>(
    call: &Call<'_>,
    device: &Device,
    plan: &SplitK,
) -> Result<()> {
    let Call { kernels, stream, workspace, precision, .. } = *call;
    let [pa, pb, _] = call.operands;
    // The CUDA-core kernels' f32 copies (not in the plan's workspace: they depend on the
    // operands' addresses), in front of the plan's.
    let padded = match plan.partials {
        Partials::Tiled(family) => super::padded_f32::<TIn>(family, call.g, [pa, pb]),
        Partials::Sm90(_) => None,
    };
    let padded_bytes = padded.map_or(0, |p| p.bytes(call.g));
    let needed = plan.workspace.checked_add(padded_bytes).ok_or_else(|| Error::Shape {
        op: "gemm",
        expected: "a workspace that fits in usize".into(),
        got: format!("{} + {padded_bytes} bytes", plan.workspace),
    })?;
    let mut scratch = workspace.lock();
    // SAFETY: the copies are written before the slices read them, and the partial launches write
    // every element of the `parts` m x n matrices before the reduction reads them.
    unsafe { grow(&mut scratch.bytes, stream, needed) }?;
    let (base, _write_workspace) = scratch.bytes.as_mut().expect("grown above").checked_ptr_mut(stream)?;
    // The operand copies first (the sm_90a plan's regions, each a multiple of 128 bytes; the f32
    // copies, multiples of 16), then the partial products.
    let (g, [pa, pb], partial_kernels, copies, rows_padded) = match (plan.partials, padded) {
        (Partials::Sm90(sm90), _) => {
            let regions = [base, base + sm90.regions[0] as u64];
            // SAFETY: the regions are the plan's, at the start of the workspace grown above for
            // them and the partial products, held while the lock is.
            let read = unsafe { sm90::repitch_operands(call, &sm90, regions) }?;
            (read.g, [read.a, read.b], Partials::Sm90(read.plan), sm90.workspace(), [false; 2])
        }
        (tiled, Some(padded)) => {
            // SAFETY: `g` was validated for these f32 operands; the copies go to the start of the
            // workspace grown above for them and the partial products, held while the lock is.
            let read = unsafe { padded.copy(kernels, stream, call.g, [pa, pb], base) }?;
            (read.g, read.operands, tiled, padded_bytes, read.padded)
        }
        (tiled, None) => (*call.g, [pa, pb], tiled, 0, [false; 2]),
    };
    let partials = base + copies as u64;

    let none = RawEpilogue::default();
    // One launch of the partial products of `slices` (batch entries) into `at`'s third address.
    // Both arms: `slices` are batch entries of `g`'s operands (entry z `depth` further along k),
    // inside the validated operands, written to the workspace grown above for `parts` packed m x n
    // f32 products.
    let run = |slices: &Gemm, at: [u64; 3], behind_ours: bool| match partial_kernels {
        // SAFETY: as said above the match.
        Partials::Tiled(family) => unsafe {
            tiled::launch::<TIn, f32>(kernels, stream, family, precision, slices, at, rows_padded, &none)
        },
        Partials::Sm90(sm90) => {
            let call = Call { g: slices, operands: at, epilogue: &none, ..*call };
            // SAFETY: as said above the match; the plan reads both operands in place (the caller's
            // or their copies: no workspace regions), resolved for `g`, whose m, n, layout and
            // operands the slices share.
            unsafe { sm90::launch_in::<TIn, f32>(&call, device, &sm90, [0, 0], behind_ours) }
        }
    };
    let slices = KSlices::of(&g, plan.depth);
    // Each sm_90a launch after the operands' copies or the full slices is a dependent of them.
    let copied = copies > 0;
    if let Some(full) = &slices.full {
        run(full, [pa, pb, partials], copied)?;
    }
    if let Some((last, at)) = slices.last_at([pa, pb, partials], [size_of::<TIn>(), size_of::<f32>()]) {
        // The last, shorter slice of k, after the full ones, into the last partial product.
        run(&last, at, copied || slices.full.is_some())?;
    }
    // SAFETY: the launches above write all `parts` partial products; C and the bias are the
    // caller's (validated, checked).
    unsafe { reduce_partials::<TOut>(call, plan.parts, partials) }
}

/// Runs a batch-1 `g` on `gemm_skinny_<wl|wk>_<in>_s<rows>` ([`stream_weights`]) with the call's
/// f32 scales and epilogue; with more tiles than [`COUNTERS`], [`reduce_partials`] finishes.
///
/// # Safety
/// As [`tiled::launch`] for the call's operands; `plan` was resolved for its `g`.
pub(super) unsafe fn skinny<TIn: Element, TOut: Element>(call: &Call<'_>, plan: &Skinny) -> Result<()> {
    let Call { kernels, stream, workspace, g, operands, epilogue, .. } = *call;
    let (bias, _, act) = epilogue.args_from(0, size_of::<TOut>());
    let out = match TOut::NAME {
        "bf16" => 1,
        "f16" => 2,
        _ => 0,
    };
    let finish = Finish { alpha: g.alpha, beta: g.beta, bias, out, act };
    // SAFETY: the caller's obligations; the reduction reads the partial products the slice
    // launch wrote.
    unsafe {
        stream_weights(kernels, stream, workspace, g, operands, plan, TIn::NAME, finish, |partials| {
            reduce_partials::<TOut>(call, plan.parts, partials)
        })
    }
}

/// How the skinny kernels' finishing blocks write C: the scales (`S`: f32, or f64 for f64 data)
/// and the epilogue (`bias` 0 for none; `out` C's type, 0 f32 or f64, 1 bf16, 2 f16).
pub(super) struct Finish<S> {
    pub alpha: S,
    pub beta: S,
    pub bias: u64,
    pub out: i32,
    pub act: i32,
}

/// Runs a batch-1 `g` on `gemm_skinny_<wl|wk>_<input>_s<rows>` (`gemm_skinny_tc_*` for
/// `plan.tensor_cores`): C = op(A) op(B) as X (the short side's operand, staged) times W (the
/// long one, streamed): X = op(A), W = op(B) when m is the short side, else X = op(B)^T,
/// W = op(A)^T. Each of the `plan.parts` slices of k writes an m x n partial product (of `S`) to
/// the workspace, and the last block of each column tile sums its slices into C ([`SkinnyFinish`]);
/// with more tiles than [`COUNTERS`], `reduce(partials)` does in a second launch.
///
/// # Safety
/// As [`tiled::launch`] for `[A, B, C]` (of `input`'s elements, C of the type `finish.out` names);
/// `plan` was resolved for `g` with partial products of `S`; `reduce` sums `plan.parts` of them
/// into C.
#[allow(clippy::too_many_arguments)] // the operands, the plan and how C is finished
pub(super) unsafe fn stream_weights<S: Copy>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    workspace: &Workspace,
    g: &Gemm,
    [pa, pb, pc]: [u64; 3],
    plan: &Skinny,
    input: &str,
    finish: Finish<S>,
    reduce: impl FnOnce(u64) -> Result<()>,
) -> Result<()>
where
    SkinnyFinish<S>: DeviceRepr,
{
    let ShortLong { x, x_strides, w, w_pitch, out_strides: p_strides, short, long, .. } =
        ShortLong::of(g, [pa, pb], g.n);
    let layout = if plan.long_contiguous { "wl" } else { "wk" };
    let cores = if plan.tensor_cores { "tc_" } else { "" };
    let function = kernels.function(&format!("gemm_skinny_{cores}{layout}_{input}_s{}", plan.rows))?;
    let mut guard = workspace.lock();
    let scratch = &mut *guard;
    // SAFETY: the slice launch writes every element of the `parts` m x n partial products
    // before anything reads them (its own finishing blocks, or the reduction).
    unsafe { grow(&mut scratch.bytes, stream, plan.workspace) }?;
    let (partials, _write_partials) = scratch.bytes.as_mut().expect("grown above").checked_ptr_mut(stream)?;
    let tiles = long.div_ceil(plan.block_cols);
    let (counters, _write_counters) = if tiles <= COUNTERS {
        let (at, guard) = zeroed_counters(&mut scratch.counters, stream, tiles)?.checked_ptr_mut(stream)?;
        (at, Some(guard))
    } else {
        (0, None)
    };
    let Finish { alpha, beta, bias, out, act } = finish;
    let finish = SkinnyFinish {
        counters,
        c: pc,
        bias,
        ldc: g.ldc as i64,
        alpha,
        beta,
        splits: plan.parts as i32,
        tile: plan.block_cols as i32,
        m: g.m as i32,
        n: g.n as i32,
        out,
        act,
    };
    let cfg = LaunchConfig {
        grid_dim: (tiles as u32, plan.parts as u32, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let (short, long, k, depth) = (short as i32, long as i32, g.k as i32, plan.depth as i32);
    let (xs, xk, w_pitch) = (x_strides.0 as i64, x_strides.1 as i64, w_pitch as i64);
    let (ps, pl) = (p_strides.0 as i64, p_strides.1 as i64);
    // SAFETY: `(rows, L, k, kc, X, xs, xk, W, wld, part, ps, pl, fin)` as the skinny entries take
    // them; the plan holds the short side within the kernel's rows and each slice within its
    // staged depth (the tensor-core kernels stage nothing). X and W are A and B (or B and A), which
    // the caller's `validate` checked hold every element of op(A) and op(B) with these leading
    // dimensions; the kernel reads X's `short` x k and W's k x `long` elements through exactly
    // those strides, and writes `parts` packed m x n blocks of `S` into the workspace grown to hold
    // them above. With counters (`tiles` of them, zero: allocated zeroed, and each product's
    // finishing blocks zero theirs again), block x's finish writes C's elements of its tile's
    // columns (C validated with ldc, of the type `out` names) and reads the epilogue's bias (the
    // caller's obligation).
    unsafe {
        launch!(
            stream,
            &function,
            cfg,
            [&short, &long, &k, &depth, &x, &xs, &xk, &w, &w_pitch, &partials, &ps, &pl, &finish]
        )
    }?;
    if counters != 0 {
        return Ok(());
    }
    reduce(partials)
}

/// The skinny entries' last argument (`SkinnyFinish<S>` in cuda/gemm_skinny.cu, the same layout):
/// how each column tile's last block finishes the product, or `counters` 0 when a reduction
/// kernel does.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(super) struct SkinnyFinish<S> {
    counters: u64,
    c: u64,
    bias: u64,
    ldc: i64,
    alpha: S,
    beta: S,
    splits: i32,
    tile: i32,
    m: i32,
    n: i32,
    out: i32,
    act: i32,
}

// SAFETY: numbers in the CUDA struct's layout (four 8-byte fields, the two f32 scales, then six
// 4-byte ones: no padding on either side); every bit pattern is a valid value.
unsafe impl DeviceRepr for SkinnyFinish<f32> {}
// SAFETY: as above with f64 scales (four 8-byte fields, two f64, six 4-byte ones: 72 bytes, no
// padding on either side).
unsafe impl DeviceRepr for SkinnyFinish<f64> {}

/// Runs `g`, whose short side is 1, on `gemm_gemv_<wl|wk>_<in>_<out>_c<cols>` (f32 sums): one
/// launch per 65 535 batch entries (grid.z) writes `C = epilogue(alpha * x·W + beta * C)`.
///
/// # Safety
/// As [`tiled::launch`] for the call's operands; `plan` was resolved for its `g` and `precision`.
pub(super) unsafe fn gemv<TIn: Element, TOut: Element>(call: &Call<'_>, plan: &Gemv) -> Result<()> {
    let Call { kernels, stream, g, operands: [pa, pb, pc], epilogue, .. } = *call;
    let ShortLong { x, x_strides, w, w_pitch, out_strides, long, batch_strides: [xb, wb], .. } =
        ShortLong::of(g, [pa, pb], g.ldc);
    let layout = if plan.long_contiguous { "wl" } else { "wk" };
    let name = format!("gemm_gemv_{layout}_{}_{}_c{}", TIn::NAME, TOut::NAME, plan.cols);
    let (es_in, es_out) = (size_of::<TIn>(), size_of::<TOut>());
    let (k, n) = (g.k as i32, g.n as i32);
    let (xk, w_pitch, cl) = (x_strides.1 as i64, w_pitch as i64, out_strides.1 as i64);
    let (xb_arg, wb_arg, cb_arg) = (xb as i64, wb as i64, g.stride_c as i64);
    // C's long side runs along its columns when m is the short side.
    let l_cols = i32::from(g.m <= g.n);
    for z0 in (0..g.batch).step_by(grid::GRID_YZ_MAX) {
        let cfg = LaunchConfig {
            grid_dim: (
                long.div_ceil(plan.cols as usize) as u32,
                1,
                (g.batch - z0).min(grid::GRID_YZ_MAX) as u32,
            ),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let (x, w, c) = (
            x + (z0 * xb * es_in) as u64,
            w + (z0 * wb * es_in) as u64,
            pc + (z0 * g.stride_c * es_out) as u64,
        );
        let (bias, bias_stride, act) = epilogue.args_from(z0, es_out);
        let l = long as i32;
        // SAFETY: `(L, k, X, xk, xb, W, wld, wb, alpha, beta, C, cl, cb, l_cols, n, bias,
        // bias_stride, act)` as the entry takes them: X and W of TIn, C and the bias of TOut (the
        // entry is named for both). X and W are A and B (or B and A), which `validate` checked
        // hold every element of op(A) and op(B) of every batch entry with these leading
        // dimensions and batch strides; advanced to entry z0, block z of this launch reads entry
        // z0 + z's k elements of X and k x L (or L x k) of W through exactly those strides and
        // writes its C's L elements `cl` apart (one row or column, validated with ldc and
        // strideC), reading them only when beta != 0; the bias is the epilogue's n values of
        // each entry (the caller's obligation).
        unsafe {
            launch!(
                kernels,
                stream,
                &name,
                cfg,
                [&l, &k, &x, &xk, &xb_arg, &w, &w_pitch, &wb_arg, &g.alpha, &g.beta],
                [&c, &cl, &cb_arg, &l_cols, &n, &bias, &bias_stride, &act]
            )
        }?;
    }
    Ok(())
}

/// A product whose short side is at most 16, seen as X (the short side's operand) times W (the
/// long one): X = op(A), W = op(B) when m is the short side, else X = op(B)^T, W = op(A)^T.
struct ShortLong {
    /// X's device address.
    x: u64,
    /// X's element strides along the short side and along k.
    x_strides: (usize, usize),
    /// W's device address.
    w: u64,
    /// W's pitch (its leading dimension).
    w_pitch: usize,
    /// The output's element strides along (short, long), for rows `out_pitch` apart.
    out_strides: (usize, usize),
    /// C's short side.
    short: usize,
    /// C's long side.
    long: usize,
    /// Elements between consecutive batch entries of X and of W.
    batch_strides: [usize; 2],
}

impl ShortLong {
    /// `g` with A and B at `[pa, pb]`, written to rows `out_pitch` elements apart.
    fn of(g: &Gemm, [pa, pb]: [u64; 2], out_pitch: usize) -> ShortLong {
        if g.m <= g.n {
            let x_strides = if g.trans_a { (1, g.lda) } else { (g.lda, 1) };
            let out_strides = (out_pitch, 1);
            let batch_strides = [g.stride_a, g.stride_b];
            ShortLong {
                x: pa,
                x_strides,
                w: pb,
                w_pitch: g.ldb,
                out_strides,
                short: g.m,
                long: g.n,
                batch_strides,
            }
        } else {
            let x_strides = if g.trans_b { (g.ldb, 1) } else { (1, g.ldb) };
            let out_strides = (1, out_pitch);
            let batch_strides = [g.stride_b, g.stride_a];
            ShortLong {
                x: pb,
                x_strides,
                w: pa,
                w_pitch: g.lda,
                out_strides,
                short: g.n,
                long: g.m,
                batch_strides,
            }
        }
    }
}

/// `gemm_splitk_reduce_<out>`: `C = epilogue(alpha * sum + beta * C)` of the call's batch-1 `g`
/// from `parts` packed m x n f32 partial products at device address `partials`, summed in a fixed
/// order (each lane's slices in order, then the lanes' sums in order).
///
/// # Safety
/// `partials` must hold the `parts` products (written, in stream order, before this launch) and
/// the call's C the validated m x n block; the epilogue's bias its n values.
unsafe fn reduce_partials<TOut: Element>(call: &Call<'_>, parts: usize, partials: u64) -> Result<()> {
    let Call { kernels, stream, g, operands: [_, _, c], epilogue, .. } = *call;
    let name = format!("gemm_splitk_reduce_{}", TOut::NAME);
    let lanes = reduce_lanes(g.m * g.n, parts, kernels.multiprocessors());
    let (m, n, parts, ldc, lanes_arg) = (g.m as i32, g.n as i32, parts as i32, g.ldc as i32, lanes as i32);
    let (bias, _, act) = epilogue.args_from(0, size_of::<TOut>());
    // One thread per four outputs, or `lanes` threads (warps of 32 outputs) per output; blocks of
    // 256 (the kernel's own).
    let cfg = if lanes == 1 {
        grid::elementwise(g.m * g.n, grid::Step::Vector)
    } else {
        grid::elementwise((g.m * g.n).saturating_mul(lanes), grid::Step::Scalar)
    };
    // SAFETY: `(m, n, splits, lanes, part, alpha, beta, C, ldc, bias, act)` with lanes 1, 2, 4 or
    // 8: reads the `parts` packed m x n partial products, writes C's m x n block (batch
    // 1), reads n bias values: the caller's obligations.
    unsafe {
        launch!(
            kernels,
            stream,
            &name,
            cfg,
            [&m, &n, &parts, &lanes_arg, &partials, &g.alpha, &g.beta, &c, &ldc, &bias, &act]
        )
    }
}

/// Threads that sum each output of the split-K reduction: one (which then takes four outputs) for
/// fewer than 32 slices or outputs that fill a quarter of every multiprocessor's 2048 threads, else
/// 8 (the warps of a block). On the H200 (gated, TFLOP/s, four outputs per thread against 8 warps
/// per output): sgemm 64 x 768 x 768 in 16 slices 7.9 against 6.0; TF32 128 x 128 x 16384 in 64
/// slices 41.5 against 50.8, bf16 64 x 64 x 131072 in 132 slices 51 against 74.
fn reduce_lanes(outputs: usize, slices: usize, multiprocessors: u32) -> usize {
    if slices < 32 || outputs >= multiprocessors as usize * 2048 / 4 {
        1
    } else {
        8
    }
}

/// The slices of k of a batch-1 GEMM `g`, `depth` deep (a multiple of 32 keeps every slice's start
/// as aligned as the operands): the full slices as one batched GEMM writing packed m x n partial
/// products (alpha 1, beta 0), and the last, shorter slice as a GEMM of its own with its element
/// offsets into A, B and the partial products.
pub(super) struct KSlices {
    /// `k / depth` slices as batch entries (none when k < depth).
    pub full: Option<Gemm>,
    /// The rest of k and where it starts: `[A, B, partials]` in elements (none when depth divides k).
    last: Option<(Gemm, [usize; 3])>,
}

impl KSlices {
    /// Cuts `g` (batch 1, validated) into slices `depth` deep.
    pub fn of(g: &Gemm, depth: usize) -> KSlices {
        let (full, rest) = (g.k / depth, g.k % depth);
        let outputs = g.m * g.n;
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
        KSlices {
            full: (full > 0).then_some(slices),
            last: (rest > 0).then(|| {
                (Gemm { k: rest, batch: 1, ..slices }, [full * step_a, full * step_b, full * outputs])
            }),
        }
    }

    /// The last slice with its operands' device addresses, given `[A, B, partials]`'s whose
    /// elements are `[input, partial]` bytes long.
    pub fn last_at(&self, [a, b, p]: [u64; 3], [es_in, es_part]: [usize; 2]) -> Option<(Gemm, [u64; 3])> {
        self.last.map(|(g, [oa, ob, op])| {
            (g, [a + (oa * es_in) as u64, b + (ob * es_in) as u64, p + (op * es_part) as u64])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::reduce_lanes;

    #[test]
    fn the_reduction_spreads_few_outputs_over_more_lanes() {
        // 132 multiprocessors: 270336 threads fill them.
        assert_eq!(reduce_lanes(64 * 4096, 64, 132), 1, "a quarter of them");
        assert_eq!(reduce_lanes(64 * 768, 16, 132), 1, "under 32 slices");
        assert_eq!(reduce_lanes(128 * 128, 64, 132), 8);
        assert_eq!(reduce_lanes(64 * 64, 132, 132), 8);
        assert_eq!(reduce_lanes(256 * 256, 32, 132), 8);
        assert_eq!(reduce_lanes(256 * 512, 64, 132), 1);
        assert_eq!(reduce_lanes(1, 256, 132), 8);
    }
}
