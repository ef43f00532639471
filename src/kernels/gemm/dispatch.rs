//! Which kernel runs a GEMM: decided from the device (compute capability, multiprocessors, whether
//! the sm_90a module loads), the precision, the operands' alignment and the shape. [`plan`] is
//! asked once per GEMM and returns everything the launches need; [`heuristic`] holds the
//! hand-written rules. Pure logic, so the rules are tested without a GPU; notes/gemm.md has the
//! measurements behind them.

use super::plan::{Plan, MAX_SPLITS};
use super::spec::{Gemm, Precision};
use super::table::{self, Choice, Class, Table, Tuned};
use super::BLOCK;
use crate::error::Result;
use crate::kernels::grid::GRID_YZ_MAX;

/// What the dispatcher knows about the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Device {
    /// Compute capability (major, minor).
    pub capability: (i32, i32),
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// Whether the sm_90a (TMA + wgmma) kernels may be used: an sm_90 device whose sm_90a module
    /// has not failed to load.
    pub sm90: bool,
    /// Bytes of shared memory a block may opt into.
    pub shared_optin: u32,
}

impl Device {
    /// Whether the device has the tensor cores the mma.sync kernels use (sm_80+).
    pub(crate) fn tensor_cores(&self) -> bool {
        self.capability.0 >= 8
    }
}

/// Whether each operand, as given, can be read through a TMA tensor map: 16-byte aligned base,
/// leading dimension and batch stride in bytes multiples of 16, and when batched a stride of at
/// least one whole matrix or 0 (one matrix broadcast to every entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TmaReady {
    /// A qualifies.
    pub a: bool,
    /// B qualifies.
    pub b: bool,
}

/// The kernel family (and its options) chosen for one GEMM: what [`heuristic`] picks and a tuning
/// table names; [`Kernel::resolve`] turns it into the [`Plan`] for one shape and device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// `gemm_small_*`: one output per thread, for tiny problems.
    Small,
    /// `gemm_simt_*`: CUDA cores on 128 x 256 tiles (exact fp32, or the 16-bit fallback without
    /// tensor cores).
    Simt,
    /// `gemm_simt64_f32_f32`: exact fp32 on 64 x 128 tiles, for grids that 128 x 256 tiles leave
    /// under about a wave.
    Simt64,
    /// `gemm_simt64x64_f32_f32`: exact fp32 on 64 x 64 tiles, for batches of matrices 64 wide
    /// (attention's values), which 64 x 128 tiles cover half with padding.
    Simt64x64,
    /// `gemm_simt32_f32_f32`: exact fp32 on 32 x 32 tiles (16 blocks per multiprocessor), for
    /// batches of small matrices that the larger tiles cover mostly with padding.
    Simt32,
    /// `gemm_mma_*`: mma.sync tensor cores (sm_80+).
    Mma,
    /// One GEMM whose tiles would leave most multiprocessors idle, split along k: `splits`
    /// partial products on the kernels `on` names into an f32 workspace, summed into C by
    /// `gemm_splitk_reduce_<out>`.
    SplitK {
        /// Slices of k (the last one may be shorter).
        splits: u32,
        /// The kernels of the partial products.
        on: SplitOn,
    },
    /// `gemm_skinny_*`: C's short side at most 16 long; the long operand streamed once, through
    /// the CUDA cores (f32 data) or the tensor cores (16-bit data, `gemm_skinny_tc_*`), k in
    /// `splits` slices (f32 partial products), summed into C by `gemm_splitk_reduce_<out>`.
    Skinny {
        /// The kernel's row count: the short side rounded up to a power of two (f32: 1-16;
        /// 16-bit: 8 or 16).
        rows: u32,
        /// Slices of k, each at most [`skinny_depth`]`(rows, precision)` deep.
        splits: u32,
    },
    /// `gemm_gemv_<wl|wk>_<in>_<out>_c<cols>`: C's short side 1 (f32, bf16 or f16 data, f32
    /// sums): one launch, each block `cols` columns of C over all of k, alpha, beta and the
    /// epilogue in its store (no workspace, no second launch).
    Gemv {
        /// Columns of C's long side per block: 8, 16, 32 or 64 ([`GEMV_COLS`]).
        cols: u32,
    },
    /// `gemm_sm90_*`: TMA + wgmma (sm_90a), tile width `bn`, each operand read as `a` / `b` say.
    Sm90 {
        /// Output tile width: 256, 192 (16-bit only), 128 or 64.
        bn: u32,
        /// How A reaches the kernel.
        a: Feed,
        /// How B reaches the kernel.
        b: Feed,
    },
    /// `gemm_sm90_*` for one product whose tiles fill whole waves of the multiprocessors and part
    /// of one more (both operands read in place): the rows of tiles that fill the whole waves in
    /// one launch, the other rows split along k into `splits` slices on the same kernels (as
    /// `splitk sm90`), so that the last wave's few tiles do not hold the GPU for a tile's time.
    Sm90Tail {
        /// Output tile width: 256, 192 (16-bit only), 128 or 64.
        bn: u32,
        /// Slices of k of the last rows.
        splits: u32,
    },
}

/// The kernels that compute a split-K plan's partial products (f32 out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SplitOn {
    /// `gemm_simt64_f32_f32`: exact fp32 on the CUDA cores.
    Simt64,
    /// `gemm_mma_<in>_f32`: TF32, BF16 or FP16 on mma.sync.
    Mma,
    /// `gemm_sm90_<in>_f32_*_n<bn>`: TF32, BF16 or FP16 on TMA + wgmma, both operands read in
    /// place, the slices as the kernel's batch entries (a product whose few wide tiles would
    /// stream the long operand through a few multiprocessors).
    Sm90 {
        /// Output tile width: 256, 192 (16-bit only), 128 or 64.
        bn: u32,
    },
}

/// How the sm_90a kernels read one operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Feed {
    /// Through a tensor map over the caller's buffer.
    InPlace,
    /// TF32, an MN-major operand the kernels cannot read as stored (both are MN-major, or it does
    /// not qualify for TMA): transposed into a K-major workspace first (A stored k x m becomes
    /// m x k, B stored k x n becomes n x k).
    Transpose,
    /// One matrix whose pitch TMA cannot read (misaligned), or, 16-bit, reads slowly (not a
    /// multiple of 128 bytes): copied into a workspace with a 128-byte pitch first.
    Repitch,
}

/// 16-bit single GEMMs at least this large (m·n·k) copy operands with a slow pitch for TMA ...
const REPITCH_MIN_VOLUME: u128 = 1 << 30;
/// ... when the product's other side is at least this long: copying B (k x n) moves 4·k·n bytes
/// (~2.8 TB/s) and saves ~27% of the product's 2·m·n·k flops (~400 TFLOP/s at the slow pitch),
/// even from m = 1100 on; 2048 keeps a margin (likewise A and n).
const REPITCH_MIN_OTHER_SIDE: usize = 2048;
/// Single GEMMs at least this large (m·n·k) copy an operand TMA cannot read to a 128-byte pitch
/// (rather than run on mma.sync, whose element-wise path ran the sweep's odd shapes at 0.2-0.4x
/// cuBLAS: 209x1113x2443 bf16 0.21x, 179x595x869 0.29x) ...
const UNREADABLE_COPY_MIN_VOLUME: u128 = 1 << 22;
/// ... when the product's other side is at least this long. mma.sync's element-wise loads run
/// them at a fraction of the sm_90 rate (H100, TFLOP/s: 2001^3 unaligned TF32 69, bf16 99;
/// 2048^3 aligned on sm_90: 319, 568), and slower still on narrow products, so the copy pays on
/// these too (H100 `tune`, mma.sync -> sm_90 with A copied: 2927x51x1083 bf16 6.2 -> 13.9, tf32
/// 4.2 -> 11.3; 2375x47x421 bf16 4.2 -> 6.1, tf32 2.8 -> 5.4).
const UNREADABLE_COPY_MIN_OTHER_SIDE: usize = 32;
/// ... and k at least this deep: with a short k the product is bound by C's store, which the copy
/// does not shorten (2881x1717x51 bf16: 0.44x cuBLAS on mma.sync, 0.30x with A copied).
const UNREADABLE_COPY_MIN_DEPTH: usize = 128;
/// Leading dimensions whose byte pitch is a multiple of this are TMA's fast case.
pub const TMA_FAST_PITCH: usize = 128;

/// The column counts of the GEMV kernels' blocks.
pub const GEMV_COLS: [u32; 4] = [8, 16, 32, 64];
/// The GEMV kernels take products of one row at most this many bytes of W per column deep (4096
/// f32, 8192 16-bit elements); deeper ones run in slices of k (H200, `tune`: 1 x 4096 x 4096 f32
/// 1.02x the slices; harness: 1 x 4096 x 11008 60.6 us against 52.7 sliced, notes/gemv/).
const GEMV_MAX_DEPTH_BYTES: usize = 16_384;
/// ... in blocks of the most columns that still give this many blocks per multiprocessor (x 5)
/// and at most [`GEMV_MAX_STEPS`] steps, else 8 columns: wider rows of W per load, enough blocks
/// to keep every multiprocessor reading (H200, `tune`'s best for f32: 1 x 2048 8 columns, 1 x
/// 4096 16, 1 x 11008 32, 1 x 50257 x 768 64).
const GEMV_BLOCKS_PER_SM_X5: usize = 7;
/// A block of `cols` columns walks its k x `cols` slab of W in steps of [`GEMV_STEP_BYTES`]; more
/// steps than this leave it waiting on one load after another (1 x 12288 x 4096 f32: 64 columns,
/// 64 steps, 0.84x the 32-column blocks' 32 steps).
const GEMV_MAX_STEPS: usize = 32;
/// Bytes of W a GEMV block reads per step: 256 threads, 4 loads of 16 bytes each in flight.
const GEMV_STEP_BYTES: usize = 16 * 4 * BLOCK as usize;
/// W read along k: a warp per column (8 columns per block) walks 2048 bytes of k per step, so up
/// to this depth in bytes each warp's loads take at most four steps (candle's qmatmul_F32, 1 x
/// 1024 x 1024 x·Wᵀ, H200: 1.32x cuBLAS in one launch).
const GEMV_WK_MAX_DEPTH_BYTES: usize = 8192;

/// Bytes of k each lane of a `wk` GEMV column loads per step: four 16-byte loads in flight.
const GEMV_WK_STEP_LANE_BYTES: usize = 4 * 16;

/// Problems at most this large (m·n·k) go to the small kernel ...
const SMALL_VOLUME: u128 = 1 << 18;
/// ... and so do single products up to this large with k at most [`SMALL_SINGLE_MAX_DEPTH`] (H100
/// `tune`, small against the rules' tiles: 150^3 1.6-2.8x, 300x81x201 1.5-2.1x in every precision;
/// 403x437x65 16-bit 1.17x) ...
const SMALL_SINGLE_VOLUME: u128 = 1 << 23;
/// ... (deeper ones keep the tiles or split).
const SMALL_SINGLE_MAX_DEPTH: u128 = 256;
/// ... and so do those with at most this many outputs (m·n).
const SMALL_OUTPUTS: u128 = 4096;
/// Rows of the 128-row tiles of every tiled kernel.
pub const TILE_M: usize = 128;
/// Columns of the `gemm_simt_*` tiles.
pub const SIMT_TILE_N: usize = 256;
/// Rows of the `gemm_simt64_f32_f32` tiles (128 columns wide).
pub const SIMT64_TILE_M: usize = 64;
/// Rows and columns of the `gemm_simt64x64_f32_f32` tiles.
pub const SIMT64X64_TILE: usize = 64;
/// Rows and columns of the `gemm_simt32_f32_f32` tiles.
pub const SIMT32_TILE: usize = 32;
/// Split-K: blocks of the split kernels resident per multiprocessor (both run two).
const SPLIT_BLOCKS_PER_SM: usize = 2;
/// ... at least this much of k per slice on the CUDA cores (SGEMM, H100: 512^3 0.64x cuBLAS
/// unsplit, 0.94x in two slices; slices of 256 -> 128, TFLOP/s in one run: 512^3 13.6 -> 19.3
/// (2 -> 4 slices), 600^3 10.4 -> 13.0, 700^3 14.4 -> 18.2, 384x384x1024 and 640x640x2048
/// unchanged) ...
const SPLIT_MIN_DEPTH: usize = 128;
/// ... and on mma.sync (256^3 bf16: 6.7 TFLOP/s unsplit on sm_90, 2.9 in two slices of 128).
const SPLIT_MIN_DEPTH_MMA: usize = 256;
/// ... and at most this many slices ...
const SPLIT_MAX: usize = 16;
/// ... except where the output tiles would fill at most an eighth of the multiprocessors and k is
/// at least [`SPLIT_FEW_TILES_MIN_K`] deep: then up to [`SPLIT_MAX_FEW_OUTPUTS`] slices of at
/// least [`SPLIT_FEW_TILES_MIN_DEPTH`] (H100 `tune`, best slices
/// against the 16 these rules gave: 128x128x16384 64 on mma.sync (tf32 2.29x, bf16 1.49x) and on
/// the CUDA cores (f32 2.34x); 256x256x65536 32-64 (1.05-2.27x); 41x185x2913 32-64 (1.32-1.41x)).
const SPLIT_FEW_TILES_MIN_DEPTH: usize = 64;
/// ... (shallower products keep the slices above: 256^3 bf16 ran at 6.7 TFLOP/s unsplit and 2.9
/// in two slices of 128).
const SPLIT_FEW_TILES_MIN_K: usize = 2048;
/// ... and as many slices as keep their partial products within this many bytes (H100 `tune`:
/// 128x1024x8192 16-bit 16 slices 1.26x faster than 33, TF32 1.06x; 256x256x65536 32-64 best).
const SPLIT_FEW_TILES_MAX_PARTIALS: usize = 8 << 20;
/// TF32 / 16-bit on sm_90 with an operand TMA cannot read: k shallower than this is not split but
/// copied for the sm_90 kernels (H100 `tune`, split on mma.sync -> sm_90, A and B copied, TFLOP/s:
/// 179x595x869 bf16 4.2 -> 10.5, tf32 3.2 -> 9.1; 183x103x647 bf16 0.6 -> 1.6), deeper k still
/// splits (41x185x2913 bf16: 64 slices, 2.7).
const SPLIT_UNREADABLE_MAX_DEPTH: usize = 2048;
/// ... or this many for C of at most `SMALL_OUTPUTS` outputs (one tile: its slices fill the
/// multiprocessors and their partial products stay small) ...
const SPLIT_MAX_FEW_OUTPUTS: usize = 64;
/// ... which split (rather than take the small kernel) from this depth on.
const SPLIT_FEW_OUTPUTS_MIN_DEPTH: usize = 4096;
/// 16-bit on sm_90 splits only k at least this deep: shallower products are faster unsplit on the
/// sm_90 kernels (`tune`, split on mma.sync -> sm_90 bn=64, TFLOP/s: H200 64x768x768 bf16 6.4 ->
/// 12.3, 32x3072x768 13.1 -> 19.6), deeper ones split (H100 41x185x2913 bf16 2.5 in 45 slices; at
/// 4096 instead, the H200 sweep ran it on sm_90 at 0.48x cuBLAS; 32x2048x2048, 11% faster on
/// sm_90, has a table entry).
const SPLIT_16BIT_MIN_K: usize = 2048;
/// TF32 on sm_90 splits (on mma.sync) only when the side opposite a transposed operand is at
/// most this long (the copy moves 8/side bytes per flop; it costs as much as the sm_90 product at
/// about 450, by the measured rates).
const SPLIT_TF32_MAX_SIDE: usize = 256;
/// The transpose kernel's tile edge (its grid.y covers rows / 32).
pub(crate) const TRANSPOSE_TILE: usize = 32;

/// The skinny kernels take C's short side up to this long with f32 data multiplied exactly (a
/// 16-row product of 4-byte weights still waits on memory, not on the CUDA cores; H200, same run
/// as cuBLAS: 1x4096x4096 0.09x -> 0.85x, 8x4096x4096 0.77x -> 1.21x, 16x12288x4096 0.56x ->
/// 1.13x) ...
const SKINNY_MAX_F32: usize = 16;
/// ... up to this long for TF32, whose tensor-core kernels pull ahead beyond (4x4096x4096 0.67x ->
/// 0.97x, but 8x12288x4096 0.88x -> 0.75x, 16x4096x4096 0.72x -> 0.53x) ...
const SKINNY_MAX_TF32: usize = 4;
/// ... and up to this long for 16-bit data, on the tensor cores (H100, weights not in L2, against
/// cuBLAS in the same run, notes/skinny-tc: 1-16 x 4096 x 4096 1.03-1.11x k-contiguous weights,
/// 1.00-1.17x long-side-contiguous; 32 rows 0.90x / 0.68x, 64 rows 0.54x / 0.48x, where the
/// tiled kernels are the better choice) ...
const SKINNY_MAX_16BIT: usize = 16;
/// ... or, for any precision, up to this long when C has few enough outputs for the small kernel
/// (which walks all of k per output: 2x768x768 bf16 0.23x -> 1.14x, 4x768x768 0.23x -> 0.77x).
const SKINNY_MAX_ROWS: usize = 16;
/// ... when the long operand holds at least this many elements (else the small kernel's one
/// launch is cheaper than a slice launch and a reduction).
pub const SKINNY_MIN_WEIGHTS: u128 = 1 << 16;
/// Blocks of the skinny kernels the k split aims at per multiprocessor: the CUDA-core kernels
/// (which hold 1-4) ...
pub const SKINNY_BLOCKS_PER_SM: usize = 4;
/// ... and the tensor-core ones, whose blocks each stream more of W, rounded down: 2 of the
/// 64-column `wl` blocks, 3 of the 32-column `wk` ones (H100, notes/skinny-tc and
/// notes/gemm-tune/decode-tc-h100-68320b2.log: `wl` 1-16 x 11008 x 4096 best in one slice,
/// 1.05-1.20x over two; x 4096 x 11008 in four, 1.20-1.26x over five; `wk` x 4096 x 4096 in three,
/// 9% over two).
const SKINNY_TC_BLOCKS_PER_SM: [usize; 2] = [3, 2];
/// At most this many slices of k.
const SKINNY_SPLIT_MAX: usize = 64;

/// Whether the skinny kernels for `precision` run on the tensor cores (`gemm_skinny_tc_*`).
pub fn skinny_on_tensor_cores(precision: Precision) -> bool {
    matches!(precision, Precision::Bf16 | Precision::F16)
}

/// The skinny kernels' row counts at `precision`.
pub fn skinny_rows(precision: Precision) -> &'static [u32] {
    if skinny_on_tensor_cores(precision) {
        &[8, 16]
    } else {
        &[1, 2, 4, 8, 16]
    }
}

/// Every slice of k but the last is a multiple of this many elements: 64 for the CUDA-core
/// kernels' staging, 256 for the tensor-core ones (4 warps along k, 2 steps of 32 each, so the
/// warps of a block share a slice evenly).
pub fn skinny_slice_align(precision: Precision) -> usize {
    if skinny_on_tensor_cores(precision) {
        256
    } else {
        64
    }
}

/// The deepest k slice the skinny kernel of `rows` rows takes: the CUDA-core kernels stage X
/// ([`skinny_staged_depth`]); the tensor-core ones read it from global memory, any depth.
pub fn skinny_depth(rows: u32, precision: Precision) -> usize {
    if skinny_on_tensor_cores(precision) {
        usize::MAX
    } else {
        skinny_staged_depth(rows, size_of::<f32>())
    }
}

/// The deepest k slice the CUDA-core skinny kernel of `rows` rows stages, for sums of
/// `sum_bytes` (4 for f32 data, 8 for f64): `skinny_kc` in cuda/gemm_skinny.cu, 32 KB of X at most.
pub fn skinny_staged_depth(rows: u32, sum_bytes: usize) -> usize {
    let floats = if rows <= 4 { 2048 } else { 8192 / rows as usize };
    floats * size_of::<f32>() / sum_bytes
}

/// Whether the skinny kernels read C's long side contiguously from the long operand (`wl`),
/// rather than along k (`wk`): B not transposed when m is the short side, A transposed when n is.
pub fn skinny_long_contiguous(g: &Gemm) -> bool {
    if g.m <= g.n {
        !g.trans_b
    } else {
        g.trans_a
    }
}

/// Columns of C's long side per block of the skinny kernels. CUDA cores: 32 lanes of 16 bytes of
/// f32 (`wl`), or 8 warps of 4 (`wk`). Tensor cores: 1 warp of 64 (`wl`) or 2 of 16 (`wk`).
pub fn skinny_tile(g: &Gemm, precision: Precision) -> usize {
    match (skinny_on_tensor_cores(precision), skinny_long_contiguous(g)) {
        (false, long_contiguous) => skinny_cuda_core_tile(long_contiguous, size_of::<f32>()),
        (true, true) => 64,
        (true, false) => 32,
    }
}

/// Columns of C's long side per block of the CUDA-core skinny kernels with `element_bytes` data:
/// 32 lanes of 16 bytes (`wl`), or 8 warps of 4 (`wk`).
pub fn skinny_cuda_core_tile(long_contiguous: bool, element_bytes: usize) -> usize {
    if long_contiguous {
        32 * 16 / element_bytes
    } else {
        32
    }
}

/// The GEMV plan for `g` (batched or not) when C's short side is 1 and W is shallow enough for
/// one launch ([`GEMV_MAX_DEPTH_BYTES`], [`GEMV_WK_MAX_DEPTH_BYTES`]) and large enough to be worth
/// it ([`SKINNY_MIN_WEIGHTS`] over the batch). 16-bit W along C's long side of one product stays
/// on the tensor-core skinny kernels: the GEMV ran bf16 1 x 4096 x 4096 at 0.63x cuBLAS on an H100
/// (0.85x H200), below their 0.75x; those kernels take no batch.
fn gemv(g: &Gemm, element_bytes: usize, tensor_cores: bool, sms: usize) -> Option<Kernel> {
    let long = g.m.max(g.n);
    if g.m.min(g.n) != 1 || (g.batch as u128 * long as u128 * g.k as u128) < SKINNY_MIN_WEIGHTS {
        return None;
    }
    let depth_bytes = g.k * element_bytes;
    let cols = match skinny_long_contiguous(g) {
        true if depth_bytes <= GEMV_MAX_DEPTH_BYTES && (!tensor_cores || g.batch > 1) => {
            let fills = |&&cols: &&u32| {
                let steps = (depth_bytes * cols as usize).div_ceil(GEMV_STEP_BYTES);
                5 * g.batch * long.div_ceil(cols as usize) >= GEMV_BLOCKS_PER_SM_X5 * sms
                    && steps <= GEMV_MAX_STEPS
            };
            GEMV_COLS.iter().rev().find(fills)
        }
        // A column's BLOCK / cols lanes walk k with four 16-byte loads each in flight: the most
        // columns whose lanes cover all of k in one such step, else a warp per column (H100,
        // `tune`: 256 entries of 1 x 130 x 64 f32 scores 2.1x faster in 64-column blocks than in
        // 16, whose lanes load once each).
        false if depth_bytes <= GEMV_WK_MAX_DEPTH_BYTES => GEMV_COLS
            .iter()
            .rev()
            .find(|&&cols| (BLOCK / cols) as usize * GEMV_WK_STEP_LANE_BYTES >= depth_bytes),
        _ => return None,
    };
    Some(Kernel::Gemv { cols: *cols.unwrap_or(&8) })
}

/// The skinny plan for `g` whose short side suits the skinny kernels: the GEMV for one row, else
/// (one product) enough slices of k for `SKINNY_BLOCKS_PER_SM` (`SKINNY_TC_BLOCKS_PER_SM`) blocks
/// per multiprocessor, as long as the partial products (8 bytes per output and slice, written and
/// read back) stay within a quarter of the long operand's bytes, and never fewer than the staged
/// depth needs.
fn skinny(g: &Gemm, precision: Precision, device: &Device) -> Option<Kernel> {
    let (short, long) = (g.m.min(g.n), g.m.max(g.n));
    let (max, element_bytes) = match precision {
        Precision::Bf16 | Precision::F16 => (SKINNY_MAX_16BIT, 2),
        Precision::Tf32 => (SKINNY_MAX_TF32, 4),
        Precision::F32 => (SKINNY_MAX_F32, 4),
    };
    let few_outputs = (g.m * g.n) as u128 <= SMALL_OUTPUTS && short <= SKINNY_MAX_ROWS;
    let tensor_cores = skinny_on_tensor_cores(precision);
    let sms = device.multiprocessors as usize;
    if let Some(plan) = gemv(g, element_bytes, tensor_cores, sms) {
        return Some(plan);
    }
    if g.batch != 1
        || (short > max && !few_outputs)
        || (long as u128 * g.k as u128) < SKINNY_MIN_WEIGHTS
        || (tensor_cores && !device.tensor_cores())
    {
        return None;
    }
    let rows = *skinny_rows(precision).iter().find(|&&r| r as usize >= short)?;
    let blocks = long.div_ceil(skinny_tile(g, precision));
    let wanted = if tensor_cores {
        (SKINNY_TC_BLOCKS_PER_SM[usize::from(skinny_long_contiguous(g))] * sms / blocks).max(1)
    } else {
        (SKINNY_BLOCKS_PER_SM * sms).div_ceil(blocks)
    };
    let depth = (skinny_depth(rows, precision), skinny_slice_align(precision));
    let splits = skinny_slices(g, rows, element_bytes, wanted, depth)?;
    Some(Kernel::Skinny { rows, splits })
}

/// Slices of k for a skinny product `g` of `rows` rows with `element_bytes` data when `wanted`
/// slices would fill the multiprocessors: no more than keep the partial products (8 bytes per
/// output and slice, written and read back) within a quarter of the long operand's bytes, or
/// than `SKINNY_SPLIT_MAX`, or than slices `align` deep; never fewer than slices `deepest` deep
/// need. `None` when those are more than grid.y holds.
pub fn skinny_slices(
    g: &Gemm,
    rows: u32,
    element_bytes: usize,
    wanted: usize,
    (deepest, align): (usize, usize),
) -> Option<u32> {
    // Per column of C's long side: k elements of W, `rows` outputs per slice.
    let traffic = slices_within_partials_budget(g.k * element_bytes, rows as usize);
    let needed = g.k.div_ceil(deepest);
    if needed > GRID_YZ_MAX {
        return None; // the slices are grid.y
    }
    Some(wanted.min(traffic).min(SKINNY_SPLIT_MAX).min(g.k / align).max(needed).max(1) as u32)
}

/// The plan for a validated, non-empty `g` (k >= 1) at `precision` (already resolved for the
/// element types): the kernel of the device's tuning table for this shape or its nearest tuned
/// class ([`super::table`]) when the device can run it for `g`, else the [`heuristic`]'s, resolved
/// for this shape and device. Asked once per GEMM; the launches read everything from the plan.
pub fn plan(g: &Gemm, precision: Precision, device: &Device, tma: TmaReady) -> Result<Plan> {
    plan_with(table::for_device(device), g, precision, device, tma)
}

/// [`plan`] with `table` as the tuning table.
pub fn plan_with(
    table: &Table,
    g: &Gemm,
    precision: Precision,
    device: &Device,
    tma: TmaReady,
) -> Result<Plan> {
    let tuned = table.nearest(&Class::of(g, Tuned::Gemm(precision))).and_then(|entry| match entry.choice {
        Choice::Kernel(kernel) => tuned_plan(kernel, g, precision, device, tma),
        Choice::F64(_) => None,
    });
    match tuned {
        Some(plan) => Ok(plan),
        None => heuristic(g, precision, device, tma).resolve(g, precision, device, tma),
    }
}

/// A tuned `kernel` (measured on a neighbouring shape) fitted to `g`'s operands: an sm_90 operand
/// the entry copies to a new pitch (its shape's operand was unreadable for TMA) is fed as the rules
/// would feed it where TMA can read it here (H200 sweep: bf16 600^3 took 700^3's copies of both
/// operands, 0.55x cuBLAS, where the rules read both in place at 1.02x; H100 `tune`: TF32 256^3
/// took 257^3's, 2.4 TFLOP/s against 5.3).
fn fitted(kernel: Kernel, g: &Gemm, precision: Precision, device: &Device, tma: TmaReady) -> Kernel {
    let Kernel::Sm90 { bn, a, b } = kernel else { return kernel };
    let (rules_a, rules_b) = match heuristic(g, precision, device, tma) {
        Kernel::Sm90 { a, b, .. } => (a, b),
        _ => (Feed::InPlace, Feed::InPlace),
    };
    let fit =
        |feed: Feed, ready: bool, rules: Feed| if feed == Feed::Repitch && ready { rules } else { feed };
    Kernel::Sm90 { bn, a: fit(a, tma.a, rules_a), b: fit(b, tma.b, rules_b) }
}

/// The plan of a tuned `kernel` (a table entry's or one tuned on first use, measured on this shape
/// or a neighbour) for `g`: fitted to its operands (an operand copy it no longer needs dropped),
/// then resolved; `None` where the device
/// cannot run it for `g` (the rules decide then).
pub fn tuned_plan(
    kernel: Kernel,
    g: &Gemm,
    precision: Precision,
    device: &Device,
    tma: TmaReady,
) -> Option<Plan> {
    fitted(kernel, g, precision, device, tma).resolve(g, precision, device, tma).ok()
}

/// The hand-written rules: the kernel for `g` at `precision` (already resolved for the element
/// types).
pub fn heuristic(g: &Gemm, precision: Precision, device: &Device, tma: TmaReady) -> Kernel {
    let (m, n, k) = (g.m as u128, g.n as u128, g.k as u128);
    if let Some(plan) = skinny(g, precision, device) {
        return plan;
    }
    let small = m * n <= SMALL_OUTPUTS
        || m * n * k <= SMALL_VOLUME
        || (g.batch == 1 && k <= SMALL_SINGLE_MAX_DEPTH && m * n * k <= SMALL_SINGLE_VOLUME);
    // The small kernel walks all of k for each output: a deep one is split instead where it can be
    // (64x64x131072, H200: 0.17 TFLOP/s against cuBLAS's 21).
    let deep_few_outputs = m * n <= SMALL_OUTPUTS && g.k >= SPLIT_FEW_OUTPUTS_MIN_DEPTH;
    if small && !deep_few_outputs {
        return Kernel::Small;
    }
    let tensor_cores = device.tensor_cores();
    if let Some(plan) = sm90_split(g, precision, device, tma) {
        return plan;
    }
    if let Some(plan) = split_k(g, precision, device, tma) {
        return plan;
    }
    if small {
        return Kernel::Small;
    }
    match precision {
        Precision::F32 => exact_f32_tiles(g, device.multiprocessors),
        _ if !tensor_cores => Kernel::Simt,
        Precision::Bf16 | Precision::F16 if device.sm90 => {
            // A large single product copies an operand TMA cannot read to a 128-byte pitch (else
            // mma.sync), and an MN-major one whose pitch TMA reads slowly (3000x5000x2000 bf16 NN,
            // B's pitch 10000 bytes: 0.156 ms in the kernel, 0.114 with B padded, 0.014 for the
            // copy; A's 4000-byte pitch costs 0.010 ms, about what its copy would, 0.009).
            let large = g.batch == 1 && m * n * k >= REPITCH_MIN_VOLUME;
            let feed = |ready: bool, ld: usize, mn_major: bool, other_side: usize| {
                let slow = mn_major && (ld * 2) % TMA_FAST_PITCH != 0;
                if !ready {
                    copy_unreadable(g, other_side).then_some(Feed::Repitch)
                } else if slow && large && other_side >= REPITCH_MIN_OTHER_SIDE {
                    Some(Feed::Repitch)
                } else {
                    Some(Feed::InPlace)
                }
            };
            match (feed(tma.a, g.lda, g.trans_a, g.n), feed(tma.b, g.ldb, !g.trans_b, g.m)) {
                (Some(a), Some(b)) => {
                    Kernel::Sm90 { bn: tile_width(g, precision, false, device.multiprocessors), a, b }
                }
                _ => Kernel::Mma,
            }
        }
        Precision::Tf32 if device.sm90 => {
            // wgmma reads TF32 from shared memory K-major only; the `nn` and `tt` kernels take one
            // MN-major operand (B if both are) through registers instead. Any other MN-major
            // operand is transposed into an aligned workspace, which the transpose grid must
            // cover. A K-major operand TMA cannot read is copied to a 128-byte pitch in large
            // single products, else the product runs on mma.sync.
            let (mn_a, mn_b) = (g.trans_a, !g.trans_b);
            let registers_b = mn_b && tma.b;
            let registers_a = mn_a && tma.a && !registers_b;
            let (stage_a, stage_b) = (mn_a && !registers_a, mn_b && !registers_b);
            let feed = |mn_major: bool, stage: bool, ready: bool, other_side: usize| match () {
                _ if stage => Some(Feed::Transpose),
                _ if mn_major || ready => Some(Feed::InPlace),
                _ => copy_unreadable(g, other_side).then_some(Feed::Repitch),
            };
            let transposable = g.k <= GRID_YZ_MAX * TRANSPOSE_TILE;
            match (feed(mn_a, stage_a, tma.a, g.n), feed(mn_b, stage_b, tma.b, g.m)) {
                (Some(a), Some(b)) if transposable || !(stage_a || stage_b) => {
                    let bn = tile_width(g, precision, registers_b, device.multiprocessors);
                    Kernel::Sm90 { bn, a, b }
                }
                _ => Kernel::Mma,
            }
        }
        _ => Kernel::Mma,
    }
}

/// Whether an operand TMA cannot read is worth copying to a 128-byte pitch for the sm_90 kernels,
/// `other_side` being the product's side it does not span.
fn copy_unreadable(g: &Gemm, other_side: usize) -> bool {
    let volume = g.m as u128 * g.n as u128 * g.k as u128;
    g.batch == 1
        && volume >= UNREADABLE_COPY_MIN_VOLUME
        && other_side >= UNREADABLE_COPY_MIN_OTHER_SIDE
        && g.k >= UNREADABLE_COPY_MIN_DEPTH
}

/// Exact fp32: the CUDA-core tiles that finish first, counting whole waves of blocks. Per wave,
/// each multiprocessor computes 32768 outputs of the 128 x 256 tiles (one block), 16384 of the
/// 64 x 128 tiles (two) or of the 32 x 32 tiles (sixteen), at relative speeds 1.1, 1.0 and 0.7
/// (H200, 1000 x 144 x 144 x 32: 20 TFLOP/s of padded work on 32 x 32 tiles against 26 on
/// 64 x 128). 2048^2: 1 wave of large tiles against 2 of 64 x 128; 1024^2: 1 against
/// 1, 64 x 128; 1000 x 144 x 144 x 32: 12 waves of 32 x 32 against 23 of 64 x 128
/// (notes/batched-sgemm/).
fn exact_f32_tiles(g: &Gemm, multiprocessors: u32) -> Kernel {
    let sms = u128::from(multiprocessors);
    // (kernel, tile rows, tile columns, blocks per multiprocessor, time per output: 77 / speed)
    let options = [
        (Kernel::Simt, TILE_M, SIMT_TILE_N, 1, 70),
        (Kernel::Simt64, SIMT64_TILE_M, TILE_M, 2, 77),
        (Kernel::Simt32, SIMT32_TILE, SIMT32_TILE, 16, 110),
    ];
    let cost = |&(_, rows, cols, blocks, time): &(Kernel, usize, usize, u128, u128)| {
        let tiles = (g.m.div_ceil(rows) * g.n.div_ceil(cols) * g.batch) as u128;
        tiles.div_ceil(blocks * sms) * blocks * (rows * cols) as u128 * time
    };
    // The first of equal costs: larger tiles on a tie.
    match options.iter().min_by_key(|o| cost(o)).map_or(Kernel::Simt64, |o| o.0) {
        // Batches of matrices at most 64 wide, which 64 x 128 tiles cover half with padding: 64 x 64
        // tiles (H100, 32 x 512 x 64 x 512: 36.7 us against 57.8, notes/simt-tiles/).
        Kernel::Simt64 if g.batch > 1 && g.n <= SIMT64X64_TILE => Kernel::Simt64x64,
        chosen => chosen,
    }
}

/// Split-K for one GEMM (exact fp32 on the CUDA cores, or TF32 / BF16 / FP16 on mma.sync) whose
/// output tiles fill at most half of the multiprocessors: enough slices of k to fill them twice
/// over, each at least `SPLIT_MIN_DEPTH` (mma.sync: `SPLIT_MIN_DEPTH_MMA`) deep (64x8192x8192: 64
/// tiles, 4 slices), or, for tiles filling at most an eighth of them and k of 2048 or more, at least
/// `SPLIT_FEW_TILES_MIN_DEPTH` deep. Not where the sm_90 kernels do better: 16-bit k under 2048, or
/// an operand TMA cannot read that they would copy (k under 2048).
fn split_k(g: &Gemm, precision: Precision, device: &Device, tma: TmaReady) -> Option<Kernel> {
    let copied_instead = || {
        let unreadable = (!tma.a && copy_unreadable(g, g.n)) || (!tma.b && copy_unreadable(g, g.m));
        unreadable && g.k < SPLIT_UNREADABLE_MAX_DEPTH
    };
    let mma = match precision {
        Precision::F32 => false,
        // sm_90's TF32 `tn` transposes A first; that copy outweighs the product when n is
        // small (measured on the mirror case, B copied, 64x8192x8192 NN: 0.34x cuBLAS with the
        // copy, 0.72x split on mma.sync; 1024^3: 1.40x vs 0.56x). Without a copy the sm_90
        // kernels beat the split even on few tiles (NN, B through registers: 64x8192x8192 1.18x
        // vs 0.67x split, 256x4096x1024 1.41-1.48x vs 0.54-0.56x, 200x3000x2000 0.92-1.03x vs
        // 0.40-0.42x).
        // Like 16-bit (below), TF32 also splits outputs of at most an eighth of a wave of the sm_90
        // kernel's narrowest tiles (41x185x2913: 1-2 tiles, 0.07x cuBLAS on mma.sync unsplit).
        Precision::Tf32 if device.sm90 => {
            let copy_dominates = g.trans_a && !g.trans_b && g.n <= SPLIT_TF32_MAX_SIDE;
            if (!copy_dominates && g.m * g.n > eighth_wave(device)) || copied_instead() {
                return None;
            }
            true
        }
        // 16-bit on sm_90: only outputs of at most an eighth of a wave of the sm_90 kernel's
        // narrowest tiles, where most multiprocessors would idle or most of each tile be empty.
        // Those products are bound by reading the long operand, which mma.sync slices do with every
        // multiprocessor (TFLOP/s unsplit -> split, bf16: 32x4096x16384 44 -> 66, 128x1024x8192
        // 72 -> 80, 256x256x8192 38 -> 48, 64x2048x8192 65 -> 70; but 512x512x2048 99 -> 49).
        Precision::Bf16 | Precision::F16 if device.sm90 => {
            if g.m * g.n > eighth_wave(device) || g.k < SPLIT_16BIT_MIN_K || copied_instead() {
                return None;
            }
            true
        }
        _ if device.tensor_cores() => true,
        _ => return None,
    };
    if g.batch != 1 {
        return None;
    }
    let (tile_rows, on) = if mma { (TILE_M, SplitOn::Mma) } else { (SIMT64_TILE_M, SplitOn::Simt64) };
    let tiles = g.m.div_ceil(tile_rows) * g.n.div_ceil(TILE_M);
    let sms = device.multiprocessors as usize;
    if tiles * 2 > sms {
        return None;
    }
    let few_tiles = tiles * 8 <= sms && g.k >= SPLIT_FEW_TILES_MIN_K;
    let min_depth = match () {
        _ if few_tiles => SPLIT_FEW_TILES_MIN_DEPTH,
        _ if mma => SPLIT_MIN_DEPTH_MMA,
        _ => SPLIT_MIN_DEPTH,
    };
    let most = match () {
        _ if (g.m * g.n) as u128 <= SMALL_OUTPUTS => SPLIT_MAX_FEW_OUTPUTS,
        _ if few_tiles => SPLIT_MAX_FEW_OUTPUTS.min(SPLIT_FEW_TILES_MAX_PARTIALS / (g.m * g.n * 4)),
        _ => SPLIT_MAX,
    };
    let splits = (SPLIT_BLOCKS_PER_SM * sms / tiles).min(g.k / min_depth).min(most);
    (splits >= 2).then_some(Kernel::SplitK { splits: splits as u32, on })
}

/// Split-K on the sm_90 kernels for a TF32 or 16-bit product (batch 1, both operands read in
/// place, k at least [`SM90_SPLIT_MIN_K`]) whose narrowest sm_90 tiles fill at most half of the
/// multiprocessors: as many slices as fill one wave with the tiles, each at least
/// [`SM90_SPLIT_MIN_DEPTH`] deep, as the kernel's batch entries. Unsplit, such products stream their
/// long operand through a few multiprocessors. H100 `tune` (notes/gemm-tune/), best split against
/// these rules before it, TFLOP/s: bf16 64x4096x4096 70 -> 92 (sm_90 unsplit; cuBLAS 94),
/// 32x4096x4096 39 -> 46 and 64x4096x12288 102 -> 125 (split on mma.sync), 512x1024x4096
/// 176 -> 197, 256x256x65536 135 -> 218; TF32 64x4096x12288 62 -> 77, 512x1024x4096 98 -> 141.
fn sm90_split(g: &Gemm, precision: Precision, device: &Device, tma: TmaReady) -> Option<Kernel> {
    if !device.sm90 || g.batch != 1 || !(tma.a && tma.b) || g.k < SM90_SPLIT_MIN_K {
        return None;
    }
    let b_mn_major = !g.trans_b;
    let bn_side = if bn_spans_rows(precision, b_mn_major) { g.m } else { g.n };
    let bn = if bn_side >= SM90_SPLIT_WIDE_MIN_SIDE { 128 } else { SM90_MIN_BN as u32 };
    let tiles = |bn: u32| {
        let (rows, cols) = sm90_tile(precision, b_mn_major, bn);
        g.m.div_ceil(rows) * g.n.div_ceil(cols)
    };
    // Not where the narrowest tiles unsplit would fill more than half a wave (H100 sweep, bf16
    // 128x8192x8192: 1.03x cuBLAS on 128 of them, 0.87x in two slices of 64 wider ones).
    let sms = device.multiprocessors as usize;
    if tiles(SM90_MIN_BN as u32) * 2 > sms {
        return None;
    }
    let tiles = tiles(bn);
    // 16-bit: the partials' round trip within a quarter of the operands' bytes (H100 `tune`, bf16
    // 128x4096x4096: 139 TFLOP/s in four slices, 8 MiB of partials twice for 34 MiB of operands,
    // against 183 unsplit on 64-wide tiles; 64x4096x4096 fastest in four). Not TF32: its kernels
    // are slower per byte, so the slices' extra multiprocessors pay more (512x1024x4096 ran
    // fastest in 4 slices, where bf16 ran unsplit).
    let most = match precision {
        Precision::Bf16 | Precision::F16 => {
            slices_within_partials_budget((g.m * g.k + g.k * g.n) * 2, g.m * g.n)
        }
        _ => MAX_SPLITS as usize,
    };
    let splits = (sms / tiles).min(g.k / SM90_SPLIT_MIN_DEPTH).min(most).min(MAX_SPLITS as usize);
    let kernel = Kernel::SplitK { splits: splits as u32, on: SplitOn::Sm90 { bn } };
    (splits >= 2 && kernel.resolve(g, precision, device, tma).is_ok()).then_some(kernel)
}

/// sm_90 split-K needs k at least this deep (512x1024x1024 and 64x3072x768 bf16 ran fastest
/// unsplit) ...
const SM90_SPLIT_MIN_K: usize = 2048;
/// ... and slices at least this deep (four k steps of 16-bit, eight of TF32: 128x128x16384 ran
/// fastest in 32-64 slices) ...
const SM90_SPLIT_MIN_DEPTH: usize = 256;
/// ... on tiles 128 wide where that side of C is at least this long, else 64 (TF32 512x768x3072:
/// 101 TFLOP/s 128 wide in four slices, 44 on 64-wide tiles in two; 4096x64x4096: 64 wide).
const SM90_SPLIT_WIDE_MIN_SIDE: usize = 512;

/// The most slices of k whose f32 partial products (8 bytes per output and slice, written and read
/// back) move at most a quarter of `operand_bytes`, for `outputs` outputs per slice (both may count
/// per column of C, as the skinny kernels' do).
fn slices_within_partials_budget(operand_bytes: usize, outputs: usize) -> usize {
    operand_bytes / (4 * 8 * outputs)
}

/// The narrowest sm_90 output tile.
const SM90_MIN_BN: usize = 64;

/// Outputs of an eighth of a wave of the narrowest sm_90 tiles.
fn eighth_wave(device: &Device) -> usize {
    device.multiprocessors as usize * TILE_M * SM90_MIN_BN / 8
}

/// The output tile (rows, columns) of the sm_90 kernel of width `bn`: `TILE_M` x `bn`, except for
/// TF32 with B MN-major as read (`nn`), where B is wgmma's register operand and its 128 columns
/// are the tile's: `bn` x `TILE_M`.
pub fn sm90_tile(precision: Precision, b_mn_major: bool, bn: u32) -> (usize, usize) {
    if bn_spans_rows(precision, b_mn_major) {
        (bn as usize, TILE_M)
    } else {
        (TILE_M, bn as usize)
    }
}

/// Whether the sm_90 tile's width `bn` runs along C's rows (TF32 `nn`) rather than its columns.
fn bn_spans_rows(precision: Precision, b_mn_major: bool) -> bool {
    precision == Precision::Tf32 && b_mn_major
}

/// The sm90 tile width: the widest of 256 and 128 that still gives at least 0.9 tiles per
/// multiprocessor (and is not wider than that side of C needs), else 64; for 16-bit, 192 instead
/// of 256 or 128 where its whole waves take at most 0.9 of their time.
fn tile_width(g: &Gemm, precision: Precision, b_mn_major: bool, multiprocessors: u32) -> u32 {
    let tiles = |bn: u32| {
        let (rows, cols) = sm90_tile(precision, b_mn_major, bn);
        g.m.div_ceil(rows) as u128 * g.n.div_ceil(cols) as u128 * g.batch as u128
    };
    let bn_side = if bn_spans_rows(precision, b_mn_major) { g.m } else { g.n };
    let enough = |bn: u32| tiles(bn) * 10 >= u128::from(multiprocessors) * 9;
    let chosen = [256, 128]
        .into_iter()
        .find(|&bn| bn_side > bn as usize / 2 && enough(bn))
        .unwrap_or(SM90_MIN_BN as u32);
    // Each multiprocessor runs its share of whole waves of tiles, each tile in time
    // width / speed: 256 wide 1.0, 192 0.98, 128 0.85 (H100 `tune`, bf16, 2026-11-27, products
    // of many waves). 4096x768x768: one wave of 192 against two of 128 (1.26x).
    let wave_time =
        |bn: u32, speed: f64| tiles(bn).div_ceil(u128::from(multiprocessors)) as f64 * f64::from(bn) / speed;
    let sixteen_bit = matches!(precision, Precision::Bf16 | Precision::F16);
    let speed = if chosen == 256 { 1.0 } else { 0.85 };
    if sixteen_bit && chosen >= 128 && bn_side > 96 && wave_time(192, 0.98) <= 0.9 * wave_time(chosen, speed)
    {
        return 192;
    }
    chosen
}

/// The devices and operands that the planning's tests share.
#[cfg(test)]
pub(super) mod testing {
    use super::{Device, TmaReady};

    /// An H100 SXM.
    pub const H100: Device =
        Device { capability: (9, 0), multiprocessors: 132, sm90: true, shared_optin: 232_448 };
    /// An A100 SXM.
    pub const A100: Device =
        Device { capability: (8, 0), multiprocessors: 108, sm90: false, shared_optin: 166_912 };
    /// A V100.
    pub const VOLTA: Device =
        Device { capability: (7, 0), multiprocessors: 80, sm90: false, shared_optin: 98_304 };
    /// Both operands readable through TMA.
    pub const ALIGNED: TmaReady = TmaReady { a: true, b: true };
}

#[cfg(test)]
mod tests {
    use super::testing::{A100, ALIGNED, H100};
    use super::*;

    fn sm90(bn: u32, stage_a: bool, stage_b: bool) -> Kernel {
        let feed = |stage| if stage { Feed::Transpose } else { Feed::InPlace };
        Kernel::Sm90 { bn, a: feed(stage_a), b: feed(stage_b) }
    }

    #[test]
    fn tiny_problems_use_the_small_kernel() {
        for p in [Precision::F32, Precision::Tf32, Precision::Bf16] {
            assert_eq!(heuristic(&Gemm::new(1, 1, 1), p, &H100, ALIGNED), Kernel::Small);
            assert_eq!(heuristic(&Gemm::new(64, 64, 4000), p, &H100, ALIGNED), Kernel::Small);
            assert_eq!(heuristic(&Gemm::new(64, 64, 64), p, &H100, ALIGNED), Kernel::Small);
        }
        // Single products up to 2^23 multiply-adds at most 256 deep; not batches of them.
        assert_eq!(heuristic(&Gemm::new(150, 150, 150), Precision::Bf16, &H100, ALIGNED), Kernel::Small);
        let batch = Gemm::new(150, 150, 150).batched(4, 0, 0, 150 * 150);
        assert_ne!(heuristic(&batch, Precision::F32, &H100, ALIGNED), Kernel::Small);
        assert_ne!(heuristic(&Gemm::new(120, 120, 500), Precision::F32, &H100, ALIGNED), Kernel::Small);
        assert_ne!(heuristic(&Gemm::new(300, 300, 100), Precision::F32, &H100, ALIGNED), Kernel::Small);
    }

    #[test]
    fn deep_products_of_few_outputs_split_k() {
        // One tile, 4096 deep or more: slices of at least 64, up to 64.
        let g = Gemm::new(64, 64, 8192);
        assert_eq!(
            heuristic(&g, Precision::F32, &H100, ALIGNED),
            Kernel::SplitK { splits: 64, on: SplitOn::Simt64 }
        );
        // On mma.sync where the sm_90 kernels cannot read both operands in place; there, slices
        // of at least 256 (up to a wave of them: 64x64x131072 in 132, which cut_k makes 128 of
        // 1024).
        let b_unreadable = TmaReady { a: true, b: false };
        // In place on sm_90: TF32 in 32 slices of 256; bf16 in 16, whose partials' round trip
        // (2 MiB) is a quarter of the operands' bytes.
        for (p, sm90_splits) in [(Precision::Tf32, 32), (Precision::Bf16, 16)] {
            assert_eq!(
                heuristic(&g, p, &H100, b_unreadable),
                Kernel::SplitK { splits: 64, on: SplitOn::Mma }
            );
            assert_eq!(heuristic(&g, p, &A100, ALIGNED), Kernel::SplitK { splits: 64, on: SplitOn::Mma });
            let sm90 = Kernel::SplitK { splits: sm90_splits, on: SplitOn::Sm90 { bn: 64 } };
            assert_eq!(heuristic(&g, p, &H100, ALIGNED), sm90);
        }
        let deepest = Gemm::new(64, 64, 131_072);
        assert_eq!(
            heuristic(&deepest, Precision::F16, &H100, b_unreadable),
            Kernel::SplitK { splits: 64, on: SplitOn::Mma }
        );
        assert_eq!(
            heuristic(&deepest, Precision::F16, &H100, ALIGNED),
            Kernel::SplitK { splits: 132, on: SplitOn::Sm90 { bn: 64 } }
        );
        // TF32 on sm_90: at least 2048 deep, on the sm_90 kernels (64 x 128 tiles, B through
        // registers); `tn` (no in-place kernel) on mma.sync, outputs of up to an eighth of a wave of
        // 128 x 64 tiles (135168).
        let tf32 = |g: Gemm| heuristic(&g, Precision::Tf32, &H100, ALIGNED);
        let sm90_split = |bn, splits| Kernel::SplitK { splits, on: SplitOn::Sm90 { bn } };
        assert_eq!(tf32(Gemm::new(41, 185, 2913)), sm90_split(64, 11));
        assert_eq!(tf32(Gemm::new(128, 1024, 8192)), sm90_split(64, 8));
        assert_eq!(tf32(Gemm::new(128, 1280, 8192)), sm90_split(64, 6));
        let tn = |m, n, k| tf32(Gemm::new(m, n, k).transposed(true, false));
        assert_eq!(tn(41, 185, 2913), Kernel::SplitK { splits: 45, on: SplitOn::Mma });
        assert_eq!(tn(128, 1024, 8192), Kernel::SplitK { splits: 16, on: SplitOn::Mma });
        // Fewer than 2048 deep: on mma.sync, slices of at least 256.
        assert_eq!(tf32(Gemm::new(41, 185, 2000)), Kernel::SplitK { splits: 7, on: SplitOn::Mma });
        // Batched: the small kernel (the split takes one product).
        let batched = Gemm::new(64, 64, 8192).batched(2, 0, 0, 64 * 64);
        assert_eq!(heuristic(&batched, Precision::F32, &H100, ALIGNED), Kernel::Small);
    }

    #[test]
    fn exact_f32_always_uses_the_cuda_cores() {
        assert_eq!(heuristic(&Gemm::new(4096, 4096, 4096), Precision::F32, &H100, ALIGNED), Kernel::Simt);
        assert_eq!(heuristic(&Gemm::new(4096, 4096, 4096), Precision::F32, &A100, ALIGNED), Kernel::Simt);
    }

    #[test]
    fn exact_f32_tiles_follow_whole_waves() {
        let f32 = |m, n| heuristic(&Gemm::new(m, n, 512), Precision::F32, &H100, ALIGNED);
        assert_eq!(f32(1024, 1024), Kernel::Simt64); // 32 large tiles (1 wave) vs 128 small (1)
        assert_eq!(f32(2048, 2048), Kernel::Simt); // 128 (1) vs 512 (2)
        assert_eq!(f32(1921, 2000), Kernel::Simt); // 128 (1) vs 496 (2): tests/gemm_gpu.rs's shape
        assert_eq!(f32(1000, 5000), Kernel::Simt64); // 160 (2) vs 640 (3)
        assert_eq!(f32(2100, 2100), Kernel::Simt64); // 153 (2) vs 561 (3)
        assert_eq!(f32(3000, 5000), Kernel::Simt); // 480 (4) vs 1880 (8)
        assert_eq!(f32(8192, 8192), Kernel::Simt); // 2048 (16) vs 8192 (32)
        let batched = Gemm::new(1024, 1024, 512).batched(4, 0, 0, 1 << 20);
        assert_eq!(heuristic(&batched, Precision::F32, &H100, ALIGNED), Kernel::Simt);
        // 128 (1) vs 512 (2)
    }

    #[test]
    fn one_row_products_of_modest_depth_take_the_gemv_kernel() {
        let on = |g: Gemm, p| heuristic(&g, p, &H100, ALIGNED);
        let gemv = |cols| Kernel::Gemv { cols };
        // The most columns per block that still give 1.4 blocks per SM (185 on 132 SMs) in at
        // most 32 steps along k.
        assert_eq!(on(Gemm::new(1, 2048, 2048), Precision::F32), gemv(8)); // candle's matmul_gemv
        assert_eq!(on(Gemm::new(1, 3072, 768), Precision::Tf32), gemv(16));
        assert_eq!(on(Gemm::new(1, 4096, 4096), Precision::F32), gemv(16));
        assert_eq!(on(Gemm::new(1, 11008, 2048), Precision::F32), gemv(32));
        assert_eq!(on(Gemm::new(1, 12288, 4096), Precision::F32), gemv(32)); // 64 columns: 64 steps
        assert_eq!(on(Gemm::new(1, 50257, 768), Precision::F32), gemv(64));
        assert_eq!(on(Gemm::new(1, 768, 768), Precision::F32), gemv(8));
        // One column, A read along m (stored k x m).
        assert_eq!(on(Gemm::new(4096, 1, 1024).transposed(true, false), Precision::F32), gemv(16));
        // W read along k (x·Wᵀ: candle's qmatmul_F32).
        assert_eq!(on(Gemm::new(1, 1024, 1024).transposed(false, true), Precision::F32), gemv(8));
        // 16-bit x·Wᵀ: the same bytes of W per column (one token through a 1B Llama: 1.02-2.24x
        // cuBLAS); 16-bit x·W stays on the tensor cores.
        assert_eq!(on(Gemm::new(1, 2048, 2048).transposed(false, true), Precision::Bf16), gemv(8));
        assert!(matches!(on(Gemm::new(1, 4096, 4096), Precision::F16), Kernel::Skinny { .. }));
        // Deeper: the skinny kernels.
        assert!(matches!(on(Gemm::new(1, 2048, 8192), Precision::F32), Kernel::Skinny { .. }));
        let deep_wk = Gemm::new(1, 2048, 4096).transposed(false, true);
        assert!(matches!(on(deep_wk, Precision::F32), Kernel::Skinny { .. }));
        assert!(matches!(on(deep_wk, Precision::Bf16), Kernel::Gemv { .. })); // 8 KiB per column
        let deeper_wk = Gemm::new(1, 2048, 8192).transposed(false, true);
        assert!(matches!(on(deeper_wk, Precision::Bf16), Kernel::Skinny { .. }));
    }

    #[test]
    fn batches_of_one_row_products_take_the_gemv_kernel() {
        let on = |g: Gemm, p| heuristic(&g, p, &H100, ALIGNED);
        let gemv = |cols| Kernel::Gemv { cols };
        // One decode step's attention in a Llama (8 sequences x 32 heads, 130 cached tokens, head
        // dimension 64, f32): the scores q·Kᵀ (K read along k, 64 columns of 64-deep k per block)
        // and the weighted values (V read along n: a 64-column block per entry, 256 blocks).
        let scores = Gemm::new(1, 130, 64).transposed(false, true).batched(256, 64, 130 * 64, 130);
        assert_eq!(on(scores, Precision::F32), gemv(64));
        // Deeper rows take narrower blocks: 130 f32 (520 bytes) in 16 columns of 16 lanes.
        let deeper = Gemm::new(1, 64, 130).transposed(false, true).batched(256, 130, 130 * 64, 64);
        assert_eq!(on(deeper, Precision::F32), gemv(16));
        let values = Gemm::new(1, 64, 130).batched(256, 130, 130 * 64, 64);
        assert_eq!(on(values, Precision::F32), gemv(64));
        // 16-bit batches too (the tensor-core skinny kernels take one product only), and one column.
        assert_eq!(on(values, Precision::Bf16), gemv(64));
        let column = Gemm::new(130, 1, 64).batched(256, 130 * 64, 64, 130);
        assert!(matches!(on(column, Precision::F32), Kernel::Gemv { .. }));
        // Too few weights over the whole batch, or too deep: not the GEMV.
        assert!(!matches!(
            on(Gemm::new(1, 64, 64).batched(4, 64, 4096, 64), Precision::F32),
            Kernel::Gemv { .. }
        ));
        let deep = Gemm::new(1, 512, 8192).transposed(false, true).batched(8, 8192, 512 * 8192, 512);
        assert!(!matches!(on(deep, Precision::F32), Kernel::Gemv { .. }));
    }

    #[test]
    fn batches_of_small_exact_f32_products_take_the_32_tiles() {
        // candle's attention benches, H100 (132 SMs): waves of 32 x 32 tiles against 64 x 128.
        let f32 = |batch, m, n, k| {
            let g = Gemm::new(m, n, k).batched(batch, m * k, k * n, m * n);
            heuristic(&g, Precision::F32, &H100, ALIGNED)
        };
        assert_eq!(f32(1000, 144, 144, 32), Kernel::Simt32); // 12 waves vs 23
        assert_eq!(f32(2904, 144, 144, 32), Kernel::Simt32); // 35 vs 66
        assert_eq!(f32(1000, 144, 32, 144), Kernel::Simt32); // 3 vs 12

        // Matrices 64 wide (a Llama prefill's attention values, 32 heads): 64 x 64 tiles, one wave,
        // where 64 x 128 tiles compute half padding (notes/simt-tiles/).
        assert_eq!(f32(32, 512, 64, 512), Kernel::Simt64x64);

        // Where the larger tiles cover the matrices well enough: ViT's 197 x 197, 128^2 and up.
        assert_eq!(f32(96, 197, 197, 64), Kernel::Simt64); // 3 vs 3
        assert_eq!(f32(256, 128, 128, 64), Kernel::Simt64); // 2 vs 2
        assert_eq!(f32(16, 512, 512, 64), Kernel::Simt); // 1 wave of 128 x 256 tiles, 2 of 64 x 128

        // One small product: the small kernel.
        assert_eq!(f32(1, 144, 144, 32), Kernel::Small);
    }

    #[test]
    fn skinny_deep_f32_gemms_split_k() {
        let split = |splits, mma: bool| Kernel::SplitK {
            splits,
            on: if mma { SplitOn::Mma } else { SplitOn::Simt64 },
        };
        let g = Gemm::new(64, 8192, 8192); // 64 tiles of 64x128 (or 128x128): 4 slices fill 2 x 132
        assert_eq!(heuristic(&g, Precision::F32, &H100, ALIGNED), split(4, false));
        // TF32 on sm_90: 64 tiles of 64 x 128 (B through registers), two slices.
        let tf32_split = Kernel::SplitK { splits: 2, on: SplitOn::Sm90 { bn: 64 } };
        assert_eq!(heuristic(&g, Precision::Tf32, &H100, ALIGNED), tf32_split);
        assert_eq!(heuristic(&Gemm::new(40, 300, 1500), Precision::F32, &H100, ALIGNED), split(11, false));
        assert_eq!(heuristic(&Gemm::new(70, 200, 1100), Precision::Tf32, &A100, ALIGNED), split(4, true));
        assert_eq!(
            heuristic(&Gemm::new(256, 256, 256), Precision::Bf16, &H100, ALIGNED),
            sm90(64, false, false)
        );
        // Too shallow, too many tiles, batched, 16-bit on a wave of sm_90 tiles, or TF32 without
        // tensor cores: no split.
        assert_eq!(heuristic(&Gemm::new(64, 8192, 250), Precision::F32, &H100, ALIGNED), Kernel::Simt64);
        assert_eq!(heuristic(&Gemm::new(512, 512, 512), Precision::F32, &H100, ALIGNED), split(4, false));
        assert_eq!(heuristic(&Gemm::new(1024, 1024, 8192), Precision::F32, &H100, ALIGNED), Kernel::Simt64);
        let batched = Gemm::new(64, 8192, 8192).batched(2, 0, 0, 64 * 8192);
        assert_eq!(heuristic(&batched, Precision::F32, &H100, ALIGNED), Kernel::Simt64);
        // 16-bit: 128 tiles of 128 x 64 nearly fill a wave unsplit (the table holds the H100's
        // measured two slices for this shape).
        assert_eq!(heuristic(&g, Precision::Bf16, &H100, ALIGNED), sm90(64, false, false));
        let volta = Device { capability: (7, 0), multiprocessors: 80, sm90: false, shared_optin: 98_304 };
        assert_eq!(heuristic(&g, Precision::Tf32, &volta, ALIGNED), Kernel::Simt);
        // TF32 on sm_90: split on mma.sync only where n is short and A is transposed first (tn); the
        // other layouts' few tiles split on the sm_90 kernels (64 tiles of 128 x 64: two slices; 128
        // fill most of a wave unsplit).
        let tf32 = |g: Gemm, device: &Device| heuristic(&g, Precision::Tf32, device, ALIGNED);
        let sm90_split = |bn| Kernel::SplitK { splits: 2, on: SplitOn::Sm90 { bn } };
        assert_eq!(tf32(Gemm::new(1024, 1024, 1024), &H100), sm90(64, false, false));
        assert_eq!(tf32(Gemm::new(512, 512, 4096), &A100), split(13, true));
        assert_eq!(tf32(g.transposed(false, true), &H100), sm90(64, false, false));
        assert_eq!(tf32(Gemm::new(8192, 64, 8192).transposed(true, false), &H100), split(4, true));
        assert_eq!(tf32(Gemm::new(8192, 64, 8192).transposed(true, true), &H100), sm90_split(64));
    }

    #[test]
    fn short_sides_stream_the_long_operand() {
        let skinny = |rows, splits| Kernel::Skinny { rows, splits };
        let on = |g: Gemm, p| heuristic(&g, p, &H100, ALIGNED);
        // Decode, x * W (W k x n, long side contiguous: 64-column bf16 tiles on the tensor cores,
        // 64 blocks): 4 slices for 2 blocks per multiprocessor; x * W^T (32-column tiles, 3): 3.
        assert_eq!(on(Gemm::new(1, 4096, 4096), Precision::Bf16), skinny(8, 4));
        assert_eq!(on(Gemm::new(8, 11008, 4096), Precision::Bf16), skinny(8, 1));
        assert_eq!(on(Gemm::new(13, 4096, 4096).transposed(false, true), Precision::F16), skinny(16, 3));
        // x * W^T (W n x k, along k: 32-column tiles, 128 blocks): 5 slices.
        assert_eq!(on(Gemm::new(3, 4096, 4096).transposed(false, true), Precision::F32), skinny(4, 5));
        // The short side is n: W = op(A)^T, read along k unless A is stored transposed (128-column
        // f32 tiles, 32 blocks: 17 slices).
        assert_eq!(on(Gemm::new(4096, 1, 4096), Precision::F32), skinny(1, 5));
        assert_eq!(on(Gemm::new(4096, 3, 4096).transposed(true, false), Precision::Tf32), skinny(4, 17));
        // Few columns: the partial products' traffic caps the slices (4096 x 4 bytes / (32 x 16)).
        assert_eq!(on(Gemm::new(16, 768, 4096), Precision::F32), skinny(16, 32));
        // Deep: at least the staged depth (512 for 16 rows), whatever the traffic.
        assert_eq!(on(Gemm::new(16, 300, 100_000), Precision::F32), skinny(16, 196));
        // Beyond each precision's rows, unless C's outputs are few: other kernels.
        let skinny_plan = |g: Gemm, p| matches!(on(g, p), Kernel::Skinny { .. });
        assert!(skinny_plan(Gemm::new(16, 4096, 4096), Precision::F32));
        assert!(!skinny_plan(Gemm::new(17, 4096, 4096), Precision::F32));
        assert!(skinny_plan(Gemm::new(4, 4096, 4096), Precision::Tf32));
        assert!(!skinny_plan(Gemm::new(5, 4096, 4096), Precision::Tf32));
        assert!(skinny_plan(Gemm::new(16, 4096, 4096), Precision::F16));
        assert!(!skinny_plan(Gemm::new(17, 4096, 4096), Precision::Bf16));
        assert!(skinny_plan(Gemm::new(2, 768, 768), Precision::Bf16));
        // 16-bit skinny needs tensor cores.
        let volta = Device { capability: (7, 0), multiprocessors: 80, sm90: false, shared_optin: 98_304 };
        assert!(!matches!(
            heuristic(&Gemm::new(8, 4096, 4096), Precision::Bf16, &volta, ALIGNED),
            Kernel::Skinny { .. }
        ));
        // Tiny, batched, or too deep for grid.y.
        assert_eq!(on(Gemm::new(4, 4, 4), Precision::F32), Kernel::Small);
        let batched = Gemm::new(1, 4096, 4096).batched(2, 0, 4096 * 4096, 4096);
        assert!(!skinny_plan(batched, Precision::Bf16));
        assert!(!skinny_plan(Gemm::new(16, 64, 1 << 26), Precision::F32));
    }

    #[test]
    fn skinny_deep_sixteen_bit_gemms_split_k_on_mma() {
        let split = |splits| Kernel::SplitK { splits, on: SplitOn::Mma };
        // Operands the sm_90 kernels cannot read in place (else they split, below). 2^17 outputs
        // (16 tiles of 128 x 64 for 132 multiprocessors): 32 mma.sync tiles, 8 slices.
        let g = Gemm::new(32, 4096, 16384);
        let b_unreadable = TmaReady { a: true, b: false };
        assert_eq!(heuristic(&g, Precision::Bf16, &H100, b_unreadable), split(8));
        assert_eq!(heuristic(&g, Precision::F16, &H100, b_unreadable), split(8));
        assert_eq!(heuristic(&g, Precision::Bf16, &A100, ALIGNED), split(6));
        // 8 tiles: as many slices as keep the partial products within 8 MiB.
        let few_tiles = Gemm::new(128, 1024, 8192);
        assert_eq!(heuristic(&few_tiles, Precision::F16, &H100, b_unreadable), split(16));
        // Read in place: on the sm_90 kernels, 128 wide from 1024 columns, a wave of slices.
        let sm90_split = |bn, splits| Kernel::SplitK { splits, on: SplitOn::Sm90 { bn } };
        assert_eq!(heuristic(&g, Precision::Bf16, &H100, ALIGNED), sm90_split(128, 4));
        // The partials' cap: four slices here; two for 128 rows on 4096-wide weights.
        assert_eq!(heuristic(&few_tiles, Precision::F16, &H100, ALIGNED), sm90_split(128, 4));
        assert_eq!(
            heuristic(&Gemm::new(128, 4096, 4096), Precision::Bf16, &H100, ALIGNED),
            sm90_split(128, 2)
        );
        assert_eq!(heuristic(&Gemm::new(4096, 64, 4096), Precision::Bf16, &H100, ALIGNED), sm90_split(64, 4));
        // Shallower than 2048, or tiles past half a wave: unsplit.
        assert_eq!(
            heuristic(&Gemm::new(512, 1024, 1024), Precision::Bf16, &H100, ALIGNED),
            sm90(64, false, false)
        );
        assert_eq!(
            heuristic(&Gemm::new(64, 14336, 4096), Precision::Bf16, &H100, ALIGNED),
            sm90(64, false, false)
        );
        // 512x512x2048: the partials' round trip (2 MiB a slice) would pass a quarter of the
        // operands' 4 MiB, so unsplit (the table holds the H100's measured four slices). Batched: the
        // sm_90 kernel unsplit.
        assert_eq!(
            heuristic(&Gemm::new(512, 512, 2048), Precision::Bf16, &H100, ALIGNED),
            sm90(64, false, false)
        );
        let batched = g.batched(2, 0, 0, 32 * 4096);
        assert_eq!(heuristic(&batched, Precision::Bf16, &H100, ALIGNED), sm90(64, false, false));
    }

    #[test]
    fn sixteen_bit_on_hopper_uses_tma_when_aligned_else_mma() {
        let g = Gemm::new(4096, 4096, 4096);
        let repitch_b = Kernel::Sm90 { bn: 256, a: Feed::InPlace, b: Feed::Repitch };
        assert_eq!(heuristic(&g, Precision::Bf16, &H100, ALIGNED), sm90(256, false, false));
        assert_eq!(heuristic(&g, Precision::F16, &H100, TmaReady { a: true, b: false }), repitch_b);
        // B unreadable by TMA: copied when the product is large enough and m not too short.
        let b_unreadable = TmaReady { a: true, b: false };
        let repitch_b_64 = Kernel::Sm90 { bn: 64, a: Feed::InPlace, b: Feed::Repitch };
        assert_eq!(
            heuristic(&Gemm::new(1000, 1000, 1000), Precision::F16, &H100, b_unreadable),
            repitch_b_64
        );
        assert_eq!(heuristic(&Gemm::new(120, 120, 280), Precision::F16, &H100, b_unreadable), Kernel::Mma);
        assert_eq!(heuristic(&Gemm::new(20, 8192, 8192), Precision::F16, &H100, b_unreadable), Kernel::Mma);
        assert_eq!(heuristic(&Gemm::new(64, 8192, 8192), Precision::F16, &H100, b_unreadable), repitch_b_64);
        let repitch_b_128 = Kernel::Sm90 { bn: 128, a: Feed::InPlace, b: Feed::Repitch };
        assert_eq!(
            heuristic(&Gemm::new(200, 8192, 8192), Precision::F16, &H100, b_unreadable),
            repitch_b_128
        );
        assert_eq!(heuristic(&g, Precision::F16, &A100, ALIGNED), Kernel::Mma);
        let failed = Device { sm90: false, ..H100 };
        assert_eq!(heuristic(&g, Precision::Bf16, &failed, ALIGNED), Kernel::Mma);
        let volta = Device { capability: (7, 0), multiprocessors: 80, sm90: false, shared_optin: 98_304 };
        assert_eq!(heuristic(&g, Precision::Bf16, &volta, ALIGNED), Kernel::Simt);
    }

    #[test]
    fn large_sixteen_bit_gemms_copy_slow_pitches() {
        let bf = |g: &Gemm, tma| heuristic(g, Precision::Bf16, &H100, tma);
        let repitch = |bn, a, b| Kernel::Sm90 { bn, a, b };
        // NN: B (k x n, MN-major) has a 10000-byte pitch: copied; A (K-major, 4000 bytes) is not.
        let g = Gemm::new(3000, 5000, 2000);
        assert_eq!(bf(&g, ALIGNED), repitch(256, Feed::InPlace, Feed::Repitch));
        let padded = Gemm { lda: 2048, ldb: 5056, ..g };
        assert_eq!(bf(&padded, ALIGNED), sm90(256, false, false));
        // TN / NT: A stored k x m (pitch 6000 bytes) is MN-major, B stored n x k is not.
        let tn = Gemm { lda: 3000, ..g.transposed(true, true) };
        assert_eq!(bf(&tn, ALIGNED), repitch(256, Feed::Repitch, Feed::InPlace));
        // Misaligned for TMA: copied when large, whatever the layout; mma.sync otherwise.
        let unaligned = TmaReady { a: false, b: true };
        assert_eq!(bf(&padded, unaligned), repitch(256, Feed::Repitch, Feed::InPlace));
        assert_eq!(bf(&Gemm::new(120, 120, 280), unaligned), Kernel::Mma);
        assert_eq!(bf(&Gemm::new(2375, 47, 421), unaligned), repitch(64, Feed::Repitch, Feed::InPlace));
        assert_eq!(bf(&Gemm::new(2375, 20, 421), unaligned), Kernel::Mma);
        assert_eq!(bf(&Gemm::new(2881, 1717, 51), unaligned), Kernel::Mma);
        assert_eq!(bf(&Gemm::new(209, 1113, 2443), unaligned), repitch(64, Feed::Repitch, Feed::InPlace));
        // A short other side: the copy would cost more than it saves.
        // (1000 x 5000: two waves of tiles 192 wide or 256 wide.)
        let short_m = Gemm::new(1000, 5000, 3000);
        assert_eq!(bf(&short_m, ALIGNED), sm90(192, false, false));
        // Small or batched: read in place.
        assert_eq!(bf(&Gemm::new(1000, 1000, 1000), ALIGNED), sm90(64, false, false));
        assert_eq!(bf(&g.batched(2, 3000 * 2000, 0, 3000 * 5000), ALIGNED), sm90(256, false, false));
    }

    #[test]
    fn tile_width_follows_the_measured_rule() {
        let bf = |m, n, k| heuristic(&Gemm::new(m, n, k), Precision::Bf16, &H100, ALIGNED);
        assert_eq!(bf(1024, 1024, 1024), sm90(64, false, false)); // 64 tiles of 128x128: too few
        assert_eq!(bf(2048, 2048, 2048), sm90(256, false, false)); // 128 tiles of 128x256
        assert_eq!(bf(64, 8192, 8192), sm90(64, false, false));
        assert_eq!(bf(1000, 1000, 1000), sm90(64, false, false));
        assert_eq!(bf(16384, 128, 1024), sm90(128, false, false)); // n too narrow for 256
        assert_eq!(bf(100_000, 64, 64), sm90(64, false, false));
        let batched = Gemm::new(1024, 1024, 1024).batched(4, 0, 0, 1 << 20);
        assert_eq!(heuristic(&batched, Precision::Bf16, &H100, ALIGNED), sm90(256, false, false));
        // 192 wide where it saves a wave: 4096x768 is 128 tiles (one wave) against 192 of 128 x 128;
        // 3072^2 three waves of 128 x 192 against three of 128 x 256; 1536^2 one against two.
        assert_eq!(bf(4096, 768, 768), sm90(192, false, false));
        assert_eq!(bf(3072, 3072, 3072), sm90(192, false, false));
        assert_eq!(bf(1536, 1536, 1536), sm90(192, false, false));
        // Not where it adds a wave (4096x1024: 128 tiles of 256, 192 of 192), nor for TF32.
        assert_eq!(bf(4096, 1024, 4096), sm90(256, false, false));
        assert_eq!(bf(4096, 4096, 4096), sm90(256, false, false));
        let tf32 =
            heuristic(&Gemm::new(4096, 768, 768).transposed(false, true), Precision::Tf32, &H100, ALIGNED);
        assert_eq!(tf32, sm90(128, false, false));
    }

    #[test]
    fn tf32_on_hopper_transposes_only_what_registers_cannot_take() {
        let g = Gemm::new(2048, 2048, 2048);
        let tf32 = |g: &Gemm, tma: TmaReady| heuristic(g, Precision::Tf32, &H100, tma);
        // nn (B through registers), nt, tt (A through registers): no copy.
        assert_eq!(tf32(&g, ALIGNED), sm90(256, false, false));
        assert_eq!(tf32(&g.transposed(false, true), ALIGNED), sm90(256, false, false));
        let tt = g.transposed(true, true);
        assert_eq!(tf32(&tt, ALIGNED), sm90(256, false, false));
        // tn: both MN-major, A is transposed and B goes through registers.
        let tn = g.transposed(true, false);
        assert_eq!(tf32(&tn, ALIGNED), sm90(256, true, false));
        // An MN-major operand TMA cannot read is transposed; a K-major one must qualify.
        assert_eq!(tf32(&g, TmaReady { a: true, b: false }), sm90(256, false, true));
        assert_eq!(tf32(&tt, TmaReady { a: false, b: true }), sm90(256, true, false));
        // A K-major operand TMA cannot read is copied to a new pitch in large single products.
        let repitch_b = Kernel::Sm90 { bn: 256, a: Feed::InPlace, b: Feed::Repitch };
        assert_eq!(tf32(&tt, TmaReady { a: true, b: false }), repitch_b);
        assert_eq!(
            tf32(&Gemm::new(120, 120, 280).transposed(true, true), TmaReady { a: true, b: false }),
            Kernel::Mma
        );
        assert_eq!(tf32(&tt.batched(2, 0, 0, 2048 * 2048), TmaReady { a: true, b: false }), Kernel::Mma);
        assert_eq!(heuristic(&g, Precision::Tf32, &A100, ALIGNED), Kernel::Mma);
        // Deeper than the transpose grid covers: fine without a copy, not with one.
        let deep = Gemm::new(2048, 2048, 3_000_000);
        assert_eq!(tf32(&deep, ALIGNED), sm90(256, false, false));
        assert_eq!(tf32(&deep.transposed(true, false), ALIGNED), Kernel::Mma);
    }

    #[test]
    fn tf32_nn_tiles_run_along_m() {
        // 300 x 8192: nn tiles (bn x 128) give 2 x 64 tiles of 256 x 128, enough for 132
        // multiprocessors; nt tiles (128 x bn) give only 3 x 32 of 128 x 256, so nt is 128 wide.
        let g = Gemm::new(300, 8192, 1024);
        assert_eq!(sm90_tile(Precision::Tf32, true, 256), (256, TILE_M));
        assert_eq!(sm90_tile(Precision::Bf16, true, 256), (TILE_M, 256));
        assert_eq!(heuristic(&g, Precision::Tf32, &H100, ALIGNED), sm90(256, false, false));
        assert_eq!(
            heuristic(&g.transposed(false, true), Precision::Tf32, &H100, ALIGNED),
            sm90(128, false, false)
        );
    }
}
