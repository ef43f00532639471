//! The sm_90a kernels (`cuda/gemm_sm90.cu`: TMA + wgmma, warp-specialised, persistent): each
//! operand fed as the plan says (read in place through a tensor map, transposed into a K-major
//! workspace first, or copied to a 128-byte pitch first), the tensor maps encoded, one launch per
//! 65 535 batch entries.

use std::mem::size_of;

use super::copies::{copy_rows, RowCopy};
use super::dispatch::{Device, Feed, TMA_FAST_PITCH};
use super::plan::{layout_char, Sm90, SM90_SMEM};
use super::spec::Gemm;
use super::tensor_map::{Dtype, Operand};
use super::tiled::input_name;
use super::{function_with_smem, grow, Call, Element};
use crate::driver::LaunchConfig;
use crate::error::{Error, Result};
use crate::kernels::args::CheckedPtrMut as _;
use crate::kernels::grid::GRID_YZ_MAX;
use crate::kernels::launch;

/// Threads per block (a producer and two consumer warpgroups).
const SM90_BLOCK: u32 = 384;

/// One operand as an sm_90a kernel reads it: device address, leading dimension, batch stride,
/// stored transposed.
#[derive(Debug, Clone, Copy)]
struct Fed {
    base: u64,
    ld: usize,
    stride: usize,
    trans: bool,
}

/// Runs `g` on the sm_90a kernel the plan names, feeding its operands as the plan says.
///
/// # Safety
/// As [`super::tiled::launch`] for the call's operands; `plan` was resolved for its `g`,
/// `precision` and the operands' TMA readiness on `device`.
pub(super) unsafe fn launch<TIn: Element, TOut: Element>(
    call: &Call<'_>,
    device: &Device,
    plan: &Sm90,
) -> Result<()> {
    let need = plan.workspace();
    let mut scratch = call.workspace.lock();
    // SAFETY: each launch's transposes and copies write every element that its GEMM reads (rows x
    // k of each entry, or the stored matrix) before the GEMM runs; the pitch padding is never read
    // (TMA stops at the matrix edge).
    unsafe { grow(&mut scratch.bytes, call.stream, need) }?;
    // The guard orders the workspace writes after the buffer's earlier uses and records them.
    let (scratch_base, _write_scratch) = match scratch.bytes.as_mut() {
        Some(ws) if need > 0 => {
            let (base, guard) = ws.checked_ptr_mut(call.stream)?;
            (base, Some(guard))
        }
        _ => (0, None),
    };
    let regions = [scratch_base, scratch_base + plan.regions[0] as u64];
    // SAFETY: the caller's obligations; the regions are the plan's, in the workspace grown above
    // and held while the lock is.
    unsafe { launch_in::<TIn, TOut>(call, device, plan, regions, false) }
}

/// [`launch`] with the workspace regions of A's and B's copies at device addresses `regions`
/// (unused by operands read in place; the caller holds the workspace); `behind_ours`: a kernel of
/// the same GEMM comes right before it on the stream.
///
/// # Safety
/// As [`launch`]; `regions` hold `plan.regions` bytes each, for nothing else until the work
/// enqueued on the call's stream is done.
pub(super) unsafe fn launch_in<TIn: Element, TOut: Element>(
    call: &Call<'_>,
    device: &Device,
    plan: &Sm90,
    regions: [u64; 2],
    behind_ours: bool,
) -> Result<()> {
    // The launch is a dependent only behind a kernel of the same GEMM (the operands' copies or
    // transposes, earlier slices or batch chunks). As the first kernel of a GEMM it would also
    // overlap whatever comes before it, which changed single launches by -13% to +22% (H200,
    // 2x12288x4096 16-bit 6.97 -> 6.10 TFLOP/s, 16x3072x768 14.0 -> 16.6), for reasons not
    // understood.
    let behind_ours = behind_ours || plan.feeds.iter().any(|f| *f != Feed::InPlace);
    // SAFETY: the caller's obligations, the regions included.
    let read = unsafe { repitch_operands(call, plan, regions) }?;
    let call = Call { g: &read.g, operands: [read.a, read.b, call.operands[2]], ..*call };
    let plan = &read.plan;
    let Call { kernels, stream, g, precision, operands: [pa, pb, pc], epilogue, .. } = call;
    let [feed_a, feed_b] = plan.feeds;
    let es = plan.dtype.size();
    let io = format!("{}_{}", input_name::<TIn>(precision), TOut::NAME);
    let Entry { name, a_box_rows, tiles } =
        Entry::of(plan, g, &io, epilogue.is_active(), device.multiprocessors);
    let function = function_with_smem(kernels, &name, SM90_SMEM)?;
    let staging = feed_a == Feed::Transpose || feed_b == Feed::Transpose;
    let transpose = if staging { Some(kernels.function("gemm_transpose_f32")?) } else { None };
    let tile_cols = plan.tile.1;
    let (m, n, k, ldc, stride_c) = (g.m as i32, g.n as i32, g.k as i32, g.ldc as i32, g.stride_c as i64);
    let staged_ld = plan.staged_ld;

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
                // A repitched operand is read in place from its copy by now (`repitch_operands`).
                Feed::InPlace | Feed::Repitch => {
                    Ok::<_, Error>(Fed { base: at(base, stride), ld, stride, trans })
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
                    // `entries <= most` such matrices at pitch `staged_ld >= k` (sized by the
                    // plan); the plan transposes only where k / 32 fits grid.y.
                    unsafe {
                        launch!(
                            stream,
                            transpose,
                            cfg,
                            [&depth, &cols, &input, &ld_in, &stride_in, &ws, &ld_out, &stride_out]
                        )
                    }?;
                    Ok(Fed { base: ws, ld: staged_ld, stride: staged_stride, trans: !trans })
                }
            }
        };
        let a = operand(pa, g.lda, g.stride_a, g.trans_a, feed_a, g.a_dims(), regions[0])?;
        let b = operand(pb, g.ldb, g.stride_b, g.trans_b, feed_b, g.b_dims(), regions[1])?;

        let map = |o: Fed, rows: usize, cols: usize, box_cols: u32, box_rows: u32| {
            Operand {
                base: o.base,
                dtype: plan.dtype,
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
        let (mn_box, bk) = ((TMA_FAST_PITCH as u64 / es) as u32, plan.bk);
        let map_a =
            if a.trans { map(a, g.k, g.m, mn_box, bk)? } else { map(a, g.m, g.k, bk, a_box_rows as u32)? };
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
        // SAFETY: `(tmA, tmB, m, n, k, alpha, beta, C, ldc, strideC)`, then `(bias, biasStride,
        // act)` for the `_fused` entry, as the sm_90a entries take them. The maps cover exactly the
        // validated operands (or the workspace regions, kept while the lock is held) of entries
        // z0..z0+entries; C and the bias are advanced to entry z0 and hold every m x n block and
        // bias vector of them (validated, checked). Every entry waits for the work before it
        // (`prism_await_previous_grid`) before it touches memory, so it may launch as a dependent,
        // its launch hidden behind the copies or the chunk before it.
        unsafe {
            launch!(
                @dependent(behind_ours || z0 > 0) stream,
                &function,
                cfg,
                [&map_a, &map_b, &m, &n, &k, &g.alpha, &g.beta, &c, &ldc, &stride_c],
                [&bias, &bias_stride, &act] if epilogue.is_active(),
            )
        }?;
    }
    Ok(())
}

/// A GEMM as the sm_90a kernel reads it once [`repitch_operands`] has copied the operands that
/// its plan repitches.
pub(super) struct Repitched {
    /// The GEMM, with the copies' leading dimensions.
    pub g: Gemm,
    /// Device address of A or its copy.
    pub a: u64,
    /// Device address of B or its copy.
    pub b: u64,
    /// The plan, reading the copies in place.
    pub plan: Sm90,
}

/// Copies the operands that `plan` repitches (single GEMMs only) to a 128-byte pitch in the
/// workspace `regions` (A's, B's), both in one launch, and returns what the kernel then reads.
///
/// # Safety
/// As [`launch_in`].
pub(super) unsafe fn repitch_operands(call: &Call<'_>, plan: &Sm90, regions: [u64; 2]) -> Result<Repitched> {
    let Call { kernels, stream, g, operands: [pa, pb, _], .. } = *call;
    let es = plan.dtype.size() as usize;
    let mut read = Repitched { g: *g, a: pa, b: pb, plan: *plan };
    let mut copies = Vec::with_capacity(2);
    if plan.feeds[0] == Feed::Repitch {
        let ((rows, cols), pitch) = (g.a_dims(), plan.repitched_ld(g.a_dims().1));
        copies.push(RowCopy::new((regions[0], pitch * es), (pa, g.lda * es), cols * es, rows));
        (read.a, read.g.lda, read.g.stride_a, read.plan.feeds[0]) =
            (regions[0], pitch, rows * pitch, Feed::InPlace);
    }
    if plan.feeds[1] == Feed::Repitch {
        let ((rows, cols), pitch) = (g.b_dims(), plan.repitched_ld(g.b_dims().1));
        copies.push(RowCopy::new((regions[1], pitch * es), (pb, g.ldb * es), cols * es, rows));
        (read.b, read.g.ldb, read.g.stride_b, read.plan.feeds[1]) =
            (regions[1], pitch, rows * pitch, Feed::InPlace);
    }
    if let Some((&first, second)) = copies.split_first() {
        // SAFETY: each copy moves a validated stored matrix (batch 1: plans repitch single GEMMs
        // only) into its operand's own workspace region, which the plan sized for the matrix's rows
        // at the new pitch; the regions overlap neither each other nor the caller's buffers.
        unsafe { copy_rows(kernels, stream, first, second.first().copied()) }?;
    }
    Ok(read)
}

/// The sm_90a entry a launch of `plan` runs, the height of K-major A's box and the tiles per batch
/// entry.
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    /// `gemm_sm90_<io>_<ta><tb>_n<bn>[_short][_fused]`.
    name: String,
    /// Rows of A's box when A is read K-major: the tile's, or for `_short` m rounded up to 8, at
    /// most 64.
    a_box_rows: usize,
    /// Output tiles of one batch entry (64 rows high for `_short`).
    tiles: usize,
}

impl Entry {
    /// The entry for `g`, `io` (`<in>_<out>`), with the epilogue when `fused`, on a device of
    /// `multiprocessors`. The `_short` entries tile C 64 rows high (the first consumer's; A loaded
    /// only as far as C has rows, rounded up to 8; the second consumer idle): for C of at most 64
    /// rows, and for a single product whose 64-row tiles all run at once, where the 128-row ones
    /// leave half the multiprocessors or more idle; tiles wider than 64 (whose 128 rows the two
    /// consumers share better) only while they fill at most half a wave. H200 `tune`, bf16, each
    /// plan with and without: 161x1817x159 1.21x, 121x1885x505 1.19x, 700^3 1.12x, 512x1024x1024
    /// 1.09x; 768x768x3072 (144 short tiles: two waves) 0.93x, 1000^3 128 wide (128 short tiles)
    /// 0.92x. TF32 `nn` and `tt` read one operand through registers and have none.
    fn of(plan: &Sm90, g: &Gemm, io: &str, fused: bool, multiprocessors: u32) -> Entry {
        let (ta, tb) = plan.read_transposed;
        let through_registers = plan.dtype == Dtype::F32 && ta == tb;
        let short_tiles = g.m.div_ceil(64) * g.n.div_ceil(plan.tile.1);
        let room = if plan.bn == 64 { multiprocessors } else { multiprocessors / 2 };
        let fills = g.batch == 1 && short_tiles <= room as usize;
        let short = !through_registers && (g.m <= 64 || fills);
        let name = format!(
            "gemm_sm90_{io}_{}{}_n{}{}{}",
            layout_char(ta),
            layout_char(tb),
            plan.bn,
            if short { "_short" } else { "" },
            if fused { "_fused" } else { "" }
        );
        let (a_box_rows, tiles) =
            if short { ((g.m.div_ceil(8) * 8).min(64), short_tiles) } else { (plan.tile.0, plan.tiles) };
        Entry { name, a_box_rows, tiles }
    }
}

#[cfg(test)]
mod tests {
    use super::{Entry, Gemm, Sm90};
    use crate::kernels::gemm::dispatch::Feed;
    use crate::kernels::gemm::tensor_map::Dtype;

    fn plan(dtype: Dtype, read_transposed: (bool, bool), bn: u32) -> Sm90 {
        Sm90 {
            bn,
            feeds: [Feed::InPlace; 2],
            read_transposed,
            tile: (128, bn as usize),
            tiles: 1,
            dtype,
            bk: 64,
            staged_ld: 0,
            regions: [0; 2],
        }
    }

    #[test]
    fn short_entries_for_short_products_and_single_products_whose_64_row_tiles_fill_a_wave() {
        const SMS: u32 = 132;
        // (entry name, A's box rows, tiles) of an m x n x 512 product (`batch` entries).
        let entry = |p: &Sm90, (m, n, batch): (usize, usize, usize), io, fused| {
            let g = Gemm::new(m, n, 512).batched(batch, m * 512, 512 * n, m * n);
            let plan = Sm90 { tiles: m.div_ceil(p.tile.0) * n.div_ceil(p.tile.1), ..*p };
            let Entry { name, a_box_rows, tiles } = Entry::of(&plan, &g, io, fused, SMS);
            (name, a_box_rows, tiles)
        };
        let bf16_nn = plan(Dtype::Bf16, (false, false), 128);
        let wide = 1 << 20;
        assert_eq!(
            entry(&bf16_nn, (64, wide, 1), "bf16_bf16", false),
            ("gemm_sm90_bf16_bf16_nn_n128_short".into(), 64, 8192)
        );
        assert_eq!(
            entry(&bf16_nn, (13, 300, 1), "bf16_f32", true),
            ("gemm_sm90_bf16_f32_nn_n128_short_fused".into(), 16, 3)
        );
        assert_eq!(entry(&bf16_nn, (1, wide, 1), "bf16_bf16", false).1, 8);
        assert_eq!(
            entry(&bf16_nn, (65, wide, 1), "bf16_bf16", false),
            ("gemm_sm90_bf16_bf16_nn_n128".into(), 128, 8192)
        );
        // Taller C: 64-row tiles where all of them run at once, as one product.
        let bf16_64 = plan(Dtype::Bf16, (false, false), 64);
        assert_eq!(
            entry(&bf16_64, (512, 1024, 1), "bf16_bf16", false),
            ("gemm_sm90_bf16_bf16_nn_n64_short".into(), 64, 128)
        );
        assert_eq!(
            entry(&bf16_64, (768, 768, 1), "bf16_bf16", false),
            ("gemm_sm90_bf16_bf16_nn_n64".into(), 128, 72)
        );
        assert_eq!(
            entry(&bf16_64, (100, 256, 2), "bf16_bf16", false),
            ("gemm_sm90_bf16_bf16_nn_n64".into(), 128, 4)
        );
        // Wider tiles up to half a wave: 1000 x 1000 is 128 short tiles 128 wide, 64 at 256.
        assert_eq!(entry(&bf16_nn, (1000, 1000, 1), "bf16_bf16", false).1, 128);
        let bf16_256 = plan(Dtype::Bf16, (false, false), 256);
        assert_eq!(entry(&bf16_256, (1000, 1000, 1), "bf16_bf16", false).2, 64);
        let f16_tn = plan(Dtype::F16, (true, false), 64);
        assert_eq!(entry(&f16_tn, (5, 64, 1), "f16_f16", false).0, "gemm_sm90_f16_f16_tn_n64_short");
        // TF32: `nt` reads both operands from shared memory; `nn` and `tt` one through registers.
        let tf32_nt = plan(Dtype::F32, (false, true), 256);
        assert_eq!(
            entry(&tf32_nt, (16, 256, 1), "tf32_f32", false),
            ("gemm_sm90_tf32_f32_nt_n256_short".into(), 16, 1)
        );
        for layout in [(false, false), (true, true)] {
            let tf32 = Sm90 { tile: (64, 128), ..plan(Dtype::F32, layout, 64) };
            let (name, rows, _) = entry(&tf32, (16, 256, 1), "tf32_f32", false);
            assert!(!name.contains("short") && rows == 64, "{name} {rows}");
        }
    }
}
