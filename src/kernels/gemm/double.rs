//! Double-precision GEMM on `cuda/gemm_f64.cu` (and `gemm_f64_sm90.cu`'s build of its tensor-core
//! kernels, which sm_90 and newer run): FP64 tensor cores (DMMA through mma.sync, sm_80+)
//! in 128 x 64 tiles for products that fill waves of them, 64 x 64, 32 x 64 and 32 x 32 tiles and
//! k cut into slices for those that do not (small, skinny and deep products), a SIMT kernel for
//! tiny ones, devices
//! without FP64 tensor cores and leading dimensions the DMMA copies cannot address; and for
//! decode-like products (C's short side a few elements long) the skinny kernels of
//! `cuda/gemm_skinny.cu` in f64, which stream the long operand once. The layout rules are
//! [`Gemm`]'s; the scales are [`GemmF64`]'s f64 `alpha` and `beta`.

use std::fmt;
use std::mem::size_of;
use std::sync::Arc;

use super::dispatch::{
    skinny_cuda_core_tile, skinny_long_contiguous, skinny_slices, skinny_staged_depth, Device,
    SKINNY_BLOCKS_PER_SM, SKINNY_MIN_WEIGHTS,
};
use super::plan::{cut_k, layout_char, Skinny};
use super::split::{stream_weights, Finish, KSlices};
use super::table::{self, Choice, Class, Tuned};
use super::tiled::{launch_common, CommonKernel};
use super::tuning::SPLITS;
use super::{device, function_with_smem, grow, Gemm, GemmF64, Workspace, BLOCK};
use crate::driver::{CudaStream, CudaView, CudaViewMut};
use crate::error::{Error, Result};
use crate::kernels::args::{CheckedPtr as _, CheckedPtrMut as _};
use crate::kernels::grid::GRID_YZ_MAX;
use crate::kernels::{grid, launch, Kernels};
use crate::spec::shape;

/// One DMMA kernel family of `cuda/gemm_f64_dmma.cuh` (a `DmTile` there) and what the rules' cost model
/// knows of it.
struct DmmaTile {
    /// Rows of C per block ...
    rows: u32,
    /// ... and columns: plans and the tuning table name the tile by both ([`TileName`]).
    cols: u32,
    /// Entry points `<family>_<kernel>_<layout>` ([`dmma_entry`]).
    kernel: &'static str,
    /// Threads per block.
    threads: u32,
    /// Dynamic shared memory: a ring of stages of two operand tiles.
    smem: u32,
    /// Blocks one wave holds per multiprocessor.
    blocks_per_sm: usize,
    /// Speed against the 128-tile's on products that fill its waves (smaller tiles read more of the
    /// operands per flop), fitted with the slicing costs to `prism-gpu tune` of the sweep's shapes on
    /// an H100 (notes/dgemm-small/fit.py).
    speed: f64,
}

/// The DMMA kernels address the operands' tiles with 32-bit offsets of up to 127 rows: leading
/// dimensions of A and B must stay below this.
const DMMA_MAX_LD: usize = 1 << 24;

/// The DMMA tiles, largest first.
const DMMA: [DmmaTile; 4] = [
    DmmaTile {
        rows: 128,
        cols: 64,
        kernel: "dmma",
        threads: 128,
        smem: 92_160,
        blocks_per_sm: 2,
        speed: 1.0,
    },
    DmmaTile {
        rows: 64,
        cols: 64,
        kernel: "dmma64",
        threads: 128,
        smem: 61_440,
        blocks_per_sm: 2,
        speed: 0.95,
    },
    DmmaTile {
        rows: 32,
        cols: 64,
        kernel: "dmma32",
        threads: 128,
        smem: 61_440,
        blocks_per_sm: 3,
        speed: 0.85,
    },
    DmmaTile {
        rows: 32,
        cols: 32,
        kernel: "dmma32x32",
        threads: 128,
        smem: 40_960,
        blocks_per_sm: 4,
        speed: 0.7,
    },
];

/// The DMMA kernels' output tiles, (rows, columns): 128 x 64, 64 x 64, 32 x 64 and 32 x 32.
pub const DMMA_TILES: [(u32, u32); DMMA.len()] = {
    let mut tiles = [(0, 0); DMMA.len()];
    let mut i = 0;
    while i < DMMA.len() {
        tiles[i] = DMMA[i].shape();
        i += 1;
    }
    tiles
};

/// The entry point of DMMA tile `t` in `layout` (`nn`, `nt`, `tn` or `tt`) for a device of
/// compute capability `capability`. sm_90 and newer take `cuda/gemm_f64_sm90.cu`'s build of the
/// kernels, which is sm_90 code (mma.m16n8k16 / m16n8k4 .f64) in its SASS and its PTX; `cuda/gemm_f64.cu`'s
/// PTX is compute_80's (eight m8n8k4 per k16 step), and where the driver compiles that (a build
/// without nvcc embeds it; a GPU newer than the fatbin's SASS) an H100 ran the DGEMM at half speed.
fn dmma_entry(t: &DmmaTile, layout: &str, capability: (i32, i32)) -> String {
    let family = if capability >= (9, 0) { "gemm_f64_sm90" } else { "gemm_f64" };
    format!("{family}_{}_{layout}", t.kernel)
}

/// The DMMA tile of `shape` (rows, columns), if there is one.
fn dmma_tile(shape: (u32, u32)) -> Option<&'static DmmaTile> {
    DMMA.iter().find(|t| t.shape() == shape)
}

impl DmmaTile {
    /// The tile as plans name it: (rows, columns).
    const fn shape(&self) -> (u32, u32) {
        (self.rows, self.cols)
    }
}

/// Output tile of the SIMT kernel (one output per thread).
const SIMT_TILE: usize = 16;
/// Products with less work (m·n·k) than this run on the SIMT kernel: a launch or two of it costs
/// less than a tensor-core tile that is mostly empty.
const DMMA_MIN_VOLUME: u128 = 1 << 18;
/// Slices of k are at least this deep (four k-steps: the rules' cost model charges each slice's
/// partial product and launches; a tune of the sweep's shapes picked 64-deep slices on 41 x 185 x
/// 2913) ...
const MIN_SLICE_DEPTH: usize = 64;
/// ... start a multiple of this many elements apart (keeps the operands' 16-byte alignment) ...
const SLICE_ALIGN: usize = 32;
/// ... number at most this many ...
pub const MAX_SPLITS: u32 = 256;
/// ... and their partial products take at most this many bytes.
const MAX_PARTIALS: usize = 64 << 20;
/// The rules' cost model: the f64 flops one multiprocessor's tensor cores do per microsecond (an
/// H100's 60 TFLOP/s over its 132) ...
const DMMA_FLOP_PER_SM_US: f64 = 455_000.0;
/// ... and what slicing k costs: this many k-elements' worth of time per partial product written
/// and read back (the partial sums' traffic against the products' work), plus this many
/// microseconds per launch beyond the first (the reduction; a shorter last slice's own launch).
/// Fitted with the tiles' speeds to `prism-gpu tune` of the sweep's 105 shapes on an H100
/// (notes/dgemm-small/fit.py: the rules' choices 0.96x the best candidate's speed, geometric mean).
const SPLIT_DEPTH_COST: f64 = 200.0;
const SPLIT_LAUNCH_US: f64 = 8.0;
/// The f64 skinny kernels' row counts (`gemm_skinny_<wl|wk>_f64_s<rows>`) ...
const SKINNY_ROWS: [u32; 5] = [1, 2, 4, 8, 16];
/// ... whose slices of k start a multiple of this many elements apart (X is staged in steps of
/// 64) ...
const SKINNY_SLICE_ALIGN: usize = 64;
/// ... and which the rules take when C's short side is at most this long, `[wk, wl]` (the long
/// operand read along k, or along C's long side). `prism-gpu tune` on an H200 against the 64-tile
/// with sliced k (notes/dgemm/tune-decode-h200.log): along C's long side the skinny kernels win up
/// to 4 rows and lose at 8 on 4096-wide weights (1.16-1.54x slower); along k they win at 1 row and
/// lose at 4 (1.23x), so 2 is the cut there. Narrower weights keep the skinny kernels longer (8 x
/// 768 x 768): the table holds those.
const SKINNY_MAX_SHORT: [usize; 2] = [2, 4];

/// The kernel chosen for one f64 GEMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlanF64 {
    /// `gemm_f64_simt`: CUDA cores, 16 x 16 tiles.
    Simt,
    /// `gemm_skinny_<wl|wk>_f64_s<rows>`: C's short side at most `rows` (one of 1, 2, 4, 8, 16),
    /// the long operand streamed once in `splits` slices of k (batch-1 products only), each
    /// column tile's last block summing the slices in order.
    Skinny {
        /// The kernel's row count.
        rows: u32,
        /// Slices of k asked for.
        splits: u32,
    },
    /// `gemm_f64[_sm90]_dmma{,64,32,32x32}_<layout>`: FP64 tensor cores, blocks of `tile` (rows,
    /// columns: one of [`DMMA_TILES`]), k cut into `splits` slices (1: not cut; more: batch-1
    /// products only, the slices' partial products summed in order by `gemm_f64_splitk_reduce`).
    Dmma {
        /// Rows and columns of C per block.
        tile: (u32, u32),
        /// Slices of k asked for (fewer when k is short: see [`PlanF64::slices`]).
        splits: u32,
    },
}

/// How a [`PlanF64::Dmma`] cuts k for one GEMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slices {
    /// Depth of every slice but the last (all of k when not cut).
    pub depth: usize,
    /// Slices: `k / depth` full ones, then the rest (if any).
    pub parts: usize,
    /// Workspace bytes (the partial products; 0 when not cut).
    pub workspace: usize,
}

/// The most slices worth asking for `g`: each at least [`MIN_SLICE_DEPTH`] deep, their partial
/// products within [`MAX_PARTIALS`]; 1 for batched products.
fn max_splits(g: &Gemm) -> u32 {
    if g.batch != 1 {
        return 1;
    }
    let outputs = (g.m as u128 * g.n as u128).max(1);
    let by_memory = MAX_PARTIALS as u128 / (outputs * size_of::<f64>() as u128);
    let by_depth = (g.k / MIN_SLICE_DEPTH) as u128;
    by_memory.min(by_depth).clamp(1, u128::from(MAX_SPLITS)) as u32
}

/// Picks the kernel for `g` on `device`: the tile and slicing of k for which the cost model
/// (`estimated_us`) expects the shortest time, the SIMT kernel for tiny products and devices
/// without FP64 tensor cores.
pub fn plan(g: &Gemm, device: &Device) -> PlanF64 {
    let volume = g.m as u128 * g.n as u128 * g.k as u128;
    let mut best = (f64::INFINITY, PlanF64::Simt);
    if volume < DMMA_MIN_VOLUME {
        return best.1;
    }
    if let Some(plan) = skinny(g, device) {
        return plan;
    }
    let sms = device.multiprocessors.max(1) as usize;
    for t in &DMMA {
        if (PlanF64::Dmma { tile: t.shape(), splits: 1 }).check(g, device).is_err() {
            continue;
        }
        let slots = t.blocks_per_sm * sms;
        for splits in split_choices(g, tiles(g, t).max(1), slots) {
            let plan = PlanF64::Dmma { tile: t.shape(), splits };
            let us = estimated_us(g, plan, sms);
            if us < best.0 {
                best = (us, plan);
            }
        }
    }
    best.1
}

/// The skinny plan for a batch-1 `g` whose short side is at most [`SKINNY_MAX_SHORT`] and whose
/// long operand is big enough to be worth streaming: the fewest rows that hold the short side, and
/// the slices of k the f32 skinny kernels would take for 8-byte elements.
fn skinny(g: &Gemm, device: &Device) -> Option<PlanF64> {
    let (short, long) = (g.m.min(g.n), g.m.max(g.n));
    let long_contiguous = skinny_long_contiguous(g);
    if g.batch != 1
        || short > SKINNY_MAX_SHORT[usize::from(long_contiguous)]
        || (long as u128 * g.k as u128) < SKINNY_MIN_WEIGHTS
    {
        return None;
    }
    let rows = *SKINNY_ROWS.iter().find(|&&r| r as usize >= short)?;
    let blocks = long.div_ceil(skinny_cuda_core_tile(long_contiguous, size_of::<f64>()));
    let wanted = (SKINNY_BLOCKS_PER_SM * device.multiprocessors as usize).div_ceil(blocks);
    let depth = (skinny_staged_depth(rows, size_of::<f64>()), SKINNY_SLICE_ALIGN);
    let splits = skinny_slices(g, rows, size_of::<f64>(), wanted, depth)?;
    let plan = PlanF64::Skinny { rows, splits };
    plan.check(g, device).is_ok().then_some(plan)
}

/// The slice counts worth scoring for `tiles` blocks of `g` when a wave holds `slots`: up to 16,
/// then only those that end a wave (or two) just full, where the waves' fill peaks (past two
/// waves' worth of blocks, more slices only add partial products), and those that cut k into
/// equal slices (which spare the shorter last slice's launch). Scoring every count in between
/// finds no better cut (`the_short_list_of_slices_finds_the_best_cut`) for far more host time.
fn split_choices(g: &Gemm, tiles: usize, slots: usize) -> impl Iterator<Item = u32> {
    let most = (2 * slots).div_ceil(tiles).min(max_splits(g) as usize).max(1);
    let wave_ends = [1, 2].map(|waves| (waves * slots / tiles).clamp(1, most));
    // Equal slices a multiple of SLICE_ALIGN deep: the counts that divide k / SLICE_ALIGN.
    let steps = if g.k % SLICE_ALIGN == 0 { g.k / SLICE_ALIGN } else { 0 };
    let even = (1..=steps.isqrt()).filter(move |d| steps % d == 0).flat_map(move |d| [d, steps / d]);
    let long = wave_ends.into_iter().chain(even).filter(move |&s| s > 16 && s <= most);
    (1..=most.min(16)).chain(long).map(|s| s as u32)
}

/// Tiles of `t` covering one batch entry's C, times the batch.
fn tiles(g: &Gemm, t: &DmmaTile) -> usize {
    g.m.div_ceil(t.rows as usize).saturating_mul(g.n.div_ceil(t.cols as usize)).saturating_mul(g.batch)
}

/// The cost model's time for a DMMA `plan` of `g` on `sms` multiprocessors: the product's flops
/// at [`DMMA_FLOP_PER_SM_US`] times the tile's speed, the share of its tiles' outputs inside C and
/// how full the waves of blocks are (a wave holds `blocks_per_sm` of them per multiprocessor), plus
/// the cost of slicing k.
fn estimated_us(g: &Gemm, plan: PlanF64, sms: usize) -> f64 {
    let (PlanF64::Dmma { tile, .. }, Some(cut)) = (plan, plan.slices(g)) else { return f64::INFINITY };
    let Some(kind) = dmma_tile(tile) else { return f64::INFINITY };
    let (tiles, slots) = (tiles(g, kind), kind.blocks_per_sm * sms);
    let outputs = g.m as f64 * g.n as f64 * g.batch as f64;
    let inside = outputs / (tiles as f64 * f64::from(kind.rows * kind.cols));
    let blocks = tiles * cut.parts;
    let fill = blocks as f64 / (blocks.div_ceil(slots) * slots) as f64;
    let rate = DMMA_FLOP_PER_SM_US * sms as f64 * inside * fill * kind.speed;
    let us = 2.0 * outputs * g.k as f64 / rate;
    if cut.parts == 1 {
        return us;
    }
    let launches = if cut.depth * cut.parts == g.k { 1.0 } else { 2.0 };
    us * (1.0 + (cut.parts + 1) as f64 * SPLIT_DEPTH_COST / g.k as f64) + launches * SPLIT_LAUNCH_US
}

/// The kernels worth timing for `g` on `device` (`prism-gpu tune`): [`plan`]'s first, then the
/// SIMT kernel, both tiles unsliced, and where a tile makes less than two waves of two blocks per
/// multiprocessor, that tile with k in 2 to [`MAX_SPLITS`] slices; for C's short side at most 16,
/// the skinny kernels of the two smallest row counts that hold it, k in 1 to 64 slices (each
/// distinct cut once).
pub fn candidates(g: &Gemm, device: &Device) -> Vec<PlanF64> {
    let mut all = vec![plan(g, device), PlanF64::Simt];
    let short = g.m.min(g.n);
    for &rows in SKINNY_ROWS.iter().filter(|&&r| r as usize >= short).take(2) {
        all.extend(SPLITS.into_iter().filter(|&s| s <= 64).map(|splits| PlanF64::Skinny { rows, splits }));
    }
    let sms = device.multiprocessors as usize;
    for t in &DMMA {
        let tile = t.shape();
        all.push(PlanF64::Dmma { tile, splits: 1 });
        if tiles(g, t) < 4 * sms {
            let sliced = SPLITS.into_iter().filter(|&s| (2..=max_splits(g)).contains(&s));
            all.extend(sliced.map(|splits| PlanF64::Dmma { tile, splits }));
        }
    }
    let mut cuts = Vec::new();
    all.retain(|p| {
        let cut = (p.kernel_key(), p.slices(g).map(|s| s.parts));
        p.check(g, device).is_ok() && !cuts.contains(&cut) && {
            cuts.push(cut);
            true
        }
    });
    all
}

impl PlanF64 {
    /// The kernel a plan runs, whatever its slices: the family and its tile or rows.
    fn kernel_key(self) -> (u8, u32, u32) {
        match self {
            PlanF64::Simt => (0, 0, 0),
            PlanF64::Dmma { tile, .. } => (1, tile.0, tile.1),
            PlanF64::Skinny { rows, .. } => (2, rows, 0),
        }
    }

    /// How this plan cuts k for `g` (`None` for SIMT): DMMA slices a multiple of 32 deep, skinny
    /// ones (when `g` suits them) of 64.
    pub fn slices(self, g: &Gemm) -> Option<Slices> {
        if let PlanF64::Skinny { rows, splits } = self {
            let s = skinny_launch(g, rows, splits).ok()?;
            return Some(Slices { depth: s.depth, parts: s.parts, workspace: s.workspace });
        }
        let PlanF64::Dmma { splits, .. } = self else { return None };
        let splits = (splits as usize).clamp(1, g.k.max(1));
        if splits == 1 {
            return Some(Slices { depth: g.k, parts: 1, workspace: 0 });
        }
        let (depth, parts) = cut_k(g.k, splits, SLICE_ALIGN);
        let workspace = if parts > 1 { parts * g.m * g.n * size_of::<f64>() } else { 0 };
        Some(Slices { depth: if parts > 1 { depth } else { g.k }, parts, workspace })
    }

    /// [`Error::Shape`] naming why `device` cannot run this kernel for `g`.
    pub fn check(self, g: &Gemm, device: &Device) -> Result<()> {
        let (tile, splits) = match self {
            PlanF64::Simt => return Ok(()),
            PlanF64::Skinny { rows, splits } => {
                return skinny_launch(g, rows, splits).map(|_| ()).map_err(|why| refusal(g, device, why))
            }
            PlanF64::Dmma { tile, splits } => (tile, splits),
        };
        let (capability, optin) = (device.capability, device.shared_optin);
        let outputs_fit = g.m.checked_mul(g.n).and_then(|o| o.checked_mul(MAX_SPLITS as usize * 8)).is_some();
        let why = match dmma_tile(tile) {
            None => format!("a dmma tile of {DMMA_TILES:?}, not {tile:?}"),
            Some(_) if capability.0 < 8 => "FP64 tensor cores (sm_80+) for dmma".to_string(),
            Some(t) if optin < t.smem => {
                format!("{} bytes of shared memory per block for dmma tile={}", t.smem, TileName(tile))
            }
            Some(_) if g.k == 0 => "k >= 1 for dmma".to_string(),
            Some(_) if g.lda.max(g.ldb) >= DMMA_MAX_LD => {
                format!("leading dimensions of A and B below {DMMA_MAX_LD} for dmma")
            }
            Some(_) if splits == 0 || splits > MAX_SPLITS => {
                format!("1 to {MAX_SPLITS} slices of k, not {splits}")
            }
            Some(_) if splits > 1 && g.batch != 1 => {
                format!("one product (batch 1) for {splits} slices of k")
            }
            Some(_) if splits > 1 && !outputs_fit => {
                "partial products that fit the address space".to_string()
            }
            Some(_) => return Ok(()),
        };
        Err(refusal(g, device, why))
    }
}

/// [`Error::Shape`]: `device` cannot run a plan for `g`, because it needs `why`.
fn refusal(g: &Gemm, device: &Device, why: String) -> Error {
    let (major, minor) = device.capability;
    Error::Shape {
        op: "gemm plan",
        expected: why,
        got: format!("{}x{}x{} on sm_{major}{minor}", g.m, g.n, g.k),
    }
}

/// The skinny launch of `rows` rows and `splits` slices of k for `g`, or what it needs that `g`
/// does not give.
fn skinny_launch(g: &Gemm, rows: u32, splits: u32) -> std::result::Result<Skinny, String> {
    let short = g.m.min(g.n);
    if g.batch != 1 {
        return Err("one product (batch 1) for skinny".into());
    }
    if g.k == 0 {
        return Err("k >= 1 for skinny".into());
    }
    if !SKINNY_ROWS.contains(&rows) || short > rows as usize {
        return Err(format!("rows of {SKINNY_ROWS:?}, at least C's short side ({short})"));
    }
    if splits == 0 || splits as usize > GRID_YZ_MAX {
        return Err(format!("1 to {GRID_YZ_MAX} slices of k"));
    }
    let deepest = skinny_staged_depth(rows, size_of::<f64>());
    let (depth, parts) = cut_k(g.k, splits as usize, SKINNY_SLICE_ALIGN);
    if depth > deepest {
        return Err(format!("at least {} slices (at most {deepest} deep)", g.k.div_ceil(deepest)));
    }
    let workspace = shape::elements("gemm plan", "workspace", &[parts, g.m, g.n, size_of::<f64>()])
        .map_err(|_| "partial products that fit the address space")?;
    let long_contiguous = skinny_long_contiguous(g);
    Ok(Skinny {
        rows,
        depth,
        parts,
        long_contiguous,
        tensor_cores: false,
        block_cols: skinny_cuda_core_tile(long_contiguous, size_of::<f64>()),
        workspace,
    })
}

/// A DMMA tile as plans and the table name it: its rows where it is 64 columns wide (`128`, `64`,
/// `32`), else `<rows>x<columns>` (`32x32`).
struct TileName((u32, u32));

impl fmt::Display for TileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            (rows, 64) => write!(f, "{rows}"),
            (rows, cols) => write!(f, "{rows}x{cols}"),
        }
    }
}

impl std::str::FromStr for TileName {
    type Err = ();

    fn from_str(text: &str) -> std::result::Result<Self, ()> {
        let (rows, cols) = text.split_once('x').unwrap_or((text, "64"));
        let tile = (rows.parse().map_err(|_| ())?, cols.parse().map_err(|_| ())?);
        DMMA_TILES.contains(&tile).then_some(TileName(tile)).ok_or(())
    }
}

/// The table's name: `simt`, `dmma` (tile 128 x 64, k whole) or `dmma tile=T splits=S`.
impl fmt::Display for PlanF64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PlanF64::Simt => f.write_str("simt"),
            PlanF64::Dmma { tile: (128, 64), splits: 1 } => f.write_str("dmma"),
            PlanF64::Dmma { tile, splits } => write!(f, "dmma tile={} splits={splits}", TileName(tile)),
            PlanF64::Skinny { rows, splits } => write!(f, "skinny rows={rows} splits={splits}"),
        }
    }
}

impl std::str::FromStr for PlanF64 {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let mut words = text.split_whitespace();
        let skinny = match words.next() {
            Some("simt") if words.clone().next().is_none() => return Ok(PlanF64::Simt),
            Some("dmma") => false,
            Some("skinny") => true,
            _ => {
                return Err(format!(
                    "unknown f64 kernel `{}` (simt, dmma [tile=128|64|32|32x32] [splits=S], skinny rows=R [splits=S])",
                    text.trim()
                ))
            }
        };
        let (mut tile, mut rows, mut splits) = ((128, 64), None, 1);
        let wrong_tile = || format!("expected tile=128|64|32|32x32 or splits=1..{MAX_SPLITS}");
        for word in words {
            let (key, value) =
                word.split_once('=').ok_or_else(|| format!("expected key=value, found `{word}`"))?;
            if key == "tile" && !skinny {
                tile = value.parse::<TileName>().map_err(|()| format!("`{word}`: {}", wrong_tile()))?.0;
                continue;
            }
            let value: u32 = value.parse().map_err(|_| format!("`{word}`: expected a whole number"))?;
            match key {
                "rows" if skinny && SKINNY_ROWS.contains(&value) => rows = Some(value),
                "splits" if (1..=MAX_SPLITS).contains(&value) => splits = value,
                _ if skinny => {
                    return Err(format!("`{word}`: expected rows=1|2|4|8|16 or splits=1..{MAX_SPLITS}"))
                }
                _ => return Err(format!("`{word}`: {}", wrong_tile())),
            }
        }
        match (skinny, rows) {
            (false, _) => Ok(PlanF64::Dmma { tile, splits }),
            (true, Some(rows)) => Ok(PlanF64::Skinny { rows, splits }),
            (true, None) => Err(format!("`{}`: skinny needs rows=R", text.trim())),
        }
    }
}

/// The kernel for `g` on `device`: the tuning table's for this shape or its nearest tuned class
/// when the device can run it, else [`plan`]'s.
pub(super) fn tuned(g: &Gemm, device: &Device) -> PlanF64 {
    let entry = table::for_device(device).nearest(&Class::of(g, Tuned::F64));
    match entry.map(|e| e.choice) {
        Some(Choice::F64(p)) if p.check(g, device).is_ok() => p,
        _ => plan(g, device),
    }
}

/// `C = alpha * op(A) * op(B) + beta * C` in f64 on device buffers, ordered on `stream`, for every
/// batch entry of `g.layout` (see [`Gemm`]); scratch (sliced k's partial products) comes from
/// `workspace`. Checks the shape first ([`Error::Shape`]); m, n or batch 0 does nothing, k = 0
/// scales C by beta (beta 0 writes zeros without reading C).
pub fn gemm_f64(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    workspace: &Workspace,
    g: &GemmF64,
    a: &CudaView<f64>,
    b: &CudaView<f64>,
    c: &mut CudaViewMut<f64>,
) -> Result<()> {
    g.layout.validate(a.len(), b.len(), c.len())?;
    if nothing_to_do(g) {
        return Ok(());
    }
    let (pa, _read_a) = a.checked_ptr(stream)?;
    let (pb, _read_b) = b.checked_ptr(stream)?;
    let (pc, _write_c) = c.checked_ptr_mut(stream)?;
    // SAFETY: `validate` checked that the three views hold every element `g` touches.
    unsafe { run(kernels, stream, workspace, g, [pa, pb, pc], None) }
}

/// [`gemm_f64`] on raw device addresses `[A, B, C]` (for the cuBLAS-shaped API): the same checks
/// of the layout except the operands' lengths, the same kernels.
///
/// # Safety
/// `a`, `b` and `c` must be addresses in live device allocations of `kernels`' context that hold
/// the `g.layout.min_lens()` f64 elements from there on; nothing else may write A or B, or use C,
/// until the work enqueued on `stream` is done.
pub unsafe fn gemm_f64_raw(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    workspace: &Workspace,
    g: &GemmF64,
    ptrs: [u64; 3],
) -> Result<()> {
    g.layout.validate(usize::MAX, usize::MAX, usize::MAX)?;
    if nothing_to_do(g) {
        return Ok(());
    }
    // SAFETY: the caller vouches for the operands.
    unsafe { run(kernels, stream, workspace, g, ptrs, None) }
}

/// Nothing to compute or write: an empty product, or k = 0 with C kept as it is.
fn nothing_to_do(g: &GemmF64) -> bool {
    g.layout.is_empty() || (g.layout.k == 0 && g.beta == 1.0)
}

/// The launches of a validated, non-empty `g` on `[A, B, C]`: batches of at most 65 535 entries
/// (grid.z) and row blocks within grid.y's limit per launch; a sliced k as its slices' partial
/// products in `workspace`, then their sum. `choice`: the caller's kernel (checked for this device
/// and shape) instead of the dispatcher's.
///
/// # Safety
/// As [`gemm_f64_raw`]; `g.layout` has passed `validate`.
pub(super) unsafe fn run(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    workspace: &Workspace,
    g: &GemmF64,
    [pa, pb, pc]: [u64; 3],
    choice: Option<PlanF64>,
) -> Result<()> {
    if let Some(one) = choice.is_none().then(|| g.layout.stacked()).flatten() {
        // A batch with B broadcast whose entries stack runs as one product.
        // SAFETY: the same elements of the same operands as the batch (`Gemm::stacked`).
        return unsafe {
            run(kernels, stream, workspace, &GemmF64 { layout: one, ..*g }, [pa, pb, pc], None)
        };
    }
    let l = &g.layout;
    let device = device(kernels)?;
    let plan = match choice {
        Some(p) => {
            p.check(l, &device)?;
            p
        }
        None => {
            // SAFETY: the caller's obligations for this validated, non-empty GEMM.
            unsafe { super::autotune::plan_f64(kernels, stream, g, [pa, pb, pc], &device) }
                .filter(|p| p.check(l, &device).is_ok())
                .unwrap_or_else(|| tuned(l, &device))
        }
    };
    let sizes = [size_of::<f64>(); 2];
    let tile = match plan {
        PlanF64::Dmma { tile, .. } => tile,
        PlanF64::Skinny { rows, splits } => {
            let launch = skinny_launch(l, rows, splits).map_err(|why| refusal(l, &device, why))?;
            let finish = Finish { alpha: g.alpha, beta: g.beta, bias: 0, out: 0, act: 0 };
            // SAFETY: `launch` was resolved for this validated batch-1 `l` (f64 operands and C,
            // which the caller vouches for); the reduction sums the `parts` f64 partial products
            // the slice launch wrote into C.
            return unsafe {
                stream_weights(
                    kernels,
                    stream,
                    workspace,
                    l,
                    [pa, pb, pc],
                    &launch,
                    "f64",
                    finish,
                    |partials| reduce_slices(kernels, stream, g, launch.parts, partials, pc),
                )
            };
        }
        PlanF64::Simt => {
            let function = kernels.function("gemm_f64_simt")?;
            let kernel = CommonKernel {
                function: &function,
                tile: (SIMT_TILE, SIMT_TILE),
                threads: BLOCK,
                smem: 0,
                flags: true,
            };
            // SAFETY: gemm_f64_simt takes the common list with f64 scales, the transpose flags and
            // no epilogue (cuda/gemm_f64.cu); `validate` checked the operands, which the caller
            // vouches for.
            return unsafe {
                launch_common(stream, &kernel, l, (g.alpha, g.beta), [pa, pb, pc], sizes, None)
            };
        }
    };
    let t = dmma_tile(tile).expect("`check` or the rules chose one of the DMMA tiles");
    let layout = format!("{}{}", layout_char(l.trans_a), layout_char(l.trans_b));
    let name = dmma_entry(t, &layout, device.capability);
    let function = function_with_smem(kernels, &name, t.smem)?;
    let kernel = CommonKernel {
        function: &function,
        tile: (t.rows as usize, t.cols as usize),
        threads: t.threads,
        smem: t.smem,
        flags: false,
    };
    let slices = plan.slices(l).expect("a DMMA plan cuts k");
    if slices.parts == 1 {
        // SAFETY: the DMMA entries take the common list with f64 scales and no epilogue, their
        // layout in the name (cuda/gemm_f64.cu); `validate` checked the operands, which the caller
        // vouches for.
        return unsafe { launch_common(stream, &kernel, l, (g.alpha, g.beta), [pa, pb, pc], sizes, None) };
    }
    let mut scratch = workspace.lock();
    // SAFETY: the slice launches write every element of the `parts` m x n partial products before
    // the reduction reads them.
    unsafe { grow(&mut scratch.bytes, stream, slices.workspace) }?;
    let (partials, _write_partials) = scratch.bytes.as_mut().expect("grown above").checked_ptr_mut(stream)?;
    let cut = KSlices::of(l, slices.depth);
    if let Some(full) = &cut.full {
        // SAFETY: as above, on the full slices: batch entries `depth` deep inside the validated
        // operands, written as packed m x n products into the workspace grown for all of them.
        unsafe { launch_common(stream, &kernel, full, (1.0f64, 0.0f64), [pa, pb, partials], sizes, None) }?;
    }
    if let Some((last, at)) = cut.last_at([pa, pb, partials], sizes) {
        // SAFETY: the last, shorter slice of k, after the full ones, into the last partial product.
        unsafe { launch_common(stream, &kernel, &last, (1.0f64, 0.0f64), at, sizes, None) }?;
    }
    // SAFETY: the slice launches above wrote the `parts` partial products; C is the caller's
    // (validated, batch 1: `check` refuses slices of a batch).
    unsafe { reduce_slices(kernels, stream, g, slices.parts, partials, pc) }
}

/// `gemm_f64_splitk_reduce`: `C = alpha * sum + beta * C` for batch-1 `g`, summing the `parts`
/// packed m x n f64 partial products at device address `partials` in order.
///
/// # Safety
/// `partials` must hold the `parts` products (written, in stream order, before this launch) and
/// `pc` C's validated m x n block with `g`'s ldc.
unsafe fn reduce_slices(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    g: &GemmF64,
    parts: usize,
    partials: u64,
    pc: u64,
) -> Result<()> {
    let l = &g.layout;
    let (m, n, parts, ldc) = (l.m as i32, l.n as i32, parts as i32, l.ldc as i32);
    let cfg = grid::elementwise(l.m * l.n, grid::Step::Scalar);
    // SAFETY: `(m, n, splits, part, alpha, beta, C, ldc)`: reads the `parts` packed m x n partial
    // products, writes C's m x n block: the caller's obligations.
    unsafe {
        launch!(
            kernels,
            stream,
            "gemm_f64_splitk_reduce",
            cfg,
            [&m, &n, &parts, &partials, &g.alpha, &g.beta, &pc, &ldc]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::dispatch::testing::H100;
    use super::*;

    #[test]
    fn the_rules_choose_what_the_tuner_measured_best() {
        let dmma = |rows, splits| PlanF64::Dmma { tile: (rows, 64), splits };
        let small = |splits| PlanF64::Dmma { tile: (32, 32), splits };
        // `prism-gpu tune --precisions f64 --shapes <the sweep's>` on an H100 with the four tiles
        // (notes/dgemm-small/tune-sweep-h100.log): the best of every candidate for these shapes
        // (30 of its 105 shapes agree; notes/dgemm-small/fit.py measures the rest).
        for ((m, n, k), best) in [
            ((8, 3072, 768), dmma(32, 8)),
            ((16, 3072, 768), dmma(32, 8)),
            ((64, 4096, 4096), dmma(64, 4)),
            ((4096, 64, 4096), dmma(64, 4)),
            ((512, 4096, 4096), dmma(128, 1)),
            ((8192, 8192, 64), dmma(128, 1)),
            ((600, 600, 600), small(1)),
            ((179, 595, 869), small(1)),
            ((161, 1817, 159), small(1)),
            ((1000, 1000, 1000), dmma(64, 1)),
            ((3072, 3072, 3072), dmma(64, 1)),
            ((533, 1091, 1883), dmma(32, 1)),
        ] {
            assert_eq!(plan(&Gemm::new(m, n, k), &H100), best, "{m}x{n}x{k}");
        }
        // Full waves of 128-tiles, and the 32 equal slices the tuner found best.
        assert_eq!(plan(&Gemm::new(4096, 4096, 4096), &H100), dmma(128, 1));
        assert_eq!(plan(&Gemm::new(256, 256, 65_536), &H100), dmma(128, 32));
        // Batches are not sliced.
        let batched = plan(&Gemm::new(256, 256, 4096).batched(3, 0, 0, 0), &H100);
        assert!(matches!(batched, PlanF64::Dmma { splits: 1, .. }), "{batched}");
        // Tiny: SIMT.
        assert_eq!(plan(&Gemm::new(64, 64, 63), &H100), PlanF64::Simt);
        // A block of 64 KB holds the 64-tile's 61440 bytes, not the 128-tile's 92160 (sm_86 and
        // sm_89 hold both); Volta has no FP64 tensor cores; k = 0 has nothing to multiply.
        let ada = Device { capability: (8, 9), shared_optin: 101_376, ..H100 };
        let small = Device { capability: (8, 9), shared_optin: 65_536, ..H100 };
        let volta = Device { capability: (7, 0), shared_optin: 98_304, ..H100 };
        assert_eq!(plan(&Gemm::new(4096, 4096, 4096), &ada), dmma(128, 1));
        assert_eq!(plan(&Gemm::new(4096, 4096, 4096), &small), dmma(64, 1));
        assert_eq!(plan(&Gemm::new(4096, 4096, 4096), &volta), PlanF64::Simt);
        assert_eq!(plan(&Gemm::new(4096, 4096, 0), &H100), PlanF64::Simt);
        assert!(dmma(128, 1).check(&Gemm::new(4096, 4096, 4096), &small).is_err());
        assert!(dmma(64, 4).check(&Gemm::new(64, 64, 4096).batched(2, 0, 0, 0), &H100).is_err());
        assert!(dmma(96, 1).check(&Gemm::new(64, 64, 64), &H100).is_err());
        // Leading dimensions past the copies' 32-bit offsets: SIMT.
        let wide = Gemm::new(200, 700, 2).leading_dims(2, 1 << 24, 700);
        assert!(dmma(64, 1).check(&wide, &H100).is_err());
        assert_eq!(plan(&wide, &H100), PlanF64::Simt);
    }

    #[test]
    fn decode_products_stream_the_weights() {
        let skinny = |rows, splits| PlanF64::Skinny { rows, splits };
        // C's short side up to 4 (weights along its long side) or 2 (along k), either side: the
        // fewest rows that hold it, slices that fill the multiprocessors four blocks deep (x 4096 x
        // 4096: 64 blocks of 64 columns along the long side, 128 of 32 along k).
        let plan_of = |g: Gemm| plan(&g, &H100);
        assert_eq!(plan_of(Gemm::new(1, 4096, 4096)), skinny(1, 9));
        assert_eq!(plan_of(Gemm::new(3, 4096, 4096)), skinny(4, 9));
        assert_eq!(plan_of(Gemm::new(4096, 4, 4096).transposed(true, false)), skinny(4, 9));
        assert_eq!(plan_of(Gemm::new(2, 4096, 4096).transposed(false, true)), skinny(2, 5));
        // Wider, batched or small: the tiles.
        assert!(matches!(plan_of(Gemm::new(5, 4096, 4096)), PlanF64::Dmma { .. }));
        assert!(matches!(plan_of(Gemm::new(3, 4096, 4096).transposed(false, true)), PlanF64::Dmma { .. }));
        assert!(matches!(plan_of(Gemm::new(1, 4096, 4096).batched(2, 0, 0, 0)), PlanF64::Dmma { .. }));
        assert_eq!(plan_of(Gemm::new(1, 200, 200)), PlanF64::Simt);
        // What the kernels hold: rows for the short side, X's staged depth per slice, one product.
        let g = Gemm::new(3, 1000, 5000);
        assert!(skinny(2, 8).check(&g, &H100).is_err());
        assert!(skinny(4, 2).check(&g, &H100).is_err()); // 2560 deep, past 1024
        assert!(skinny(4, 5).check(&g, &H100).is_ok());
        assert!(skinny(4, 5).check(&g.batched(2, 0, 0, 0), &H100).is_err());
        assert!(skinny(4, 1).check(&Gemm::new(3, 1000, 0), &H100).is_err());
        let s = skinny(4, 5).slices(&g).unwrap();
        assert_eq!((s.depth, s.parts, s.workspace), (1024, 5, 5 * 3 * 1000 * 8));
    }

    #[test]
    fn the_short_list_of_slices_finds_the_best_cut() {
        // Against scoring every slice count up to two waves' worth, on random shapes. The short
        // list misses some counts that cut k into equal slices (which the model spares the
        // shorter last slice's launch): within 5% of the best estimate, and most often the best.
        let mut rng = crate::rng::SplitMix64::new(0x5eed_0f64);
        let sms = H100.multiprocessors as usize;
        let (mut sliced, mut missed) = (0, 0);
        for _ in 0..20_000 {
            // Log-uniform sides, so that small outputs with deep k (the sliced ones) are common.
            let side = |rng: &mut crate::rng::SplitMix64, max: f64| {
                (max.ln() * (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64).exp() as usize
            };
            let g = Gemm::new(side(&mut rng, 3000.0), side(&mut rng, 3000.0), side(&mut rng, 300_000.0));
            sliced += usize::from(plan(&g, &H100).slices(&g).is_some_and(|s| s.parts > 1));
            let cut = |p: PlanF64| (p.kernel_key(), p.slices(&g).map(|s| s.parts));
            let mut best = (f64::INFINITY, PlanF64::Simt);
            for t in &DMMA {
                let slots = t.blocks_per_sm * sms;
                let most = (2 * slots).div_ceil(tiles(&g, t).max(1)).min(max_splits(&g) as usize);
                for splits in 1..=most.max(1) as u32 {
                    let us = estimated_us(&g, PlanF64::Dmma { tile: t.shape(), splits }, sms);
                    if us < best.0 {
                        best = (us, PlanF64::Dmma { tile: t.shape(), splits });
                    }
                }
            }
            let chosen = plan(&g, &H100);
            if !matches!(chosen, PlanF64::Dmma { .. }) {
                continue;
            }
            let us = estimated_us(&g, chosen, sms);
            assert!(us <= 1.05 * best.0, "{g:?}: {chosen} ({us} us) against {} ({} us)", best.1, best.0);
            missed += usize::from(cut(chosen) != cut(best.1) && us > best.0);
        }
        assert!(sliced > 2_000, "only {sliced} sliced plans among the shapes");
        assert!(missed * 20 < sliced, "{missed} of {sliced} sliced plans short of the best estimate");
    }

    #[test]
    fn every_dmma_tile_names_kernels_that_exist() {
        // The entry points a plan launches, in every layout, before and from sm_90 (the catalogue
        // lists what cuda/gemm_f64.cu and gemm_f64_sm90.cu define; gemm_f64_dmma.cuh's
        // static_asserts pin the shared-memory sizes).
        for (capability, want) in [
            ((8, 0), "gemm_f64"),
            ((8, 9), "gemm_f64"),
            ((9, 0), "gemm_f64_sm90"),
            ((10, 0), "gemm_f64_sm90"),
        ] {
            for t in &DMMA {
                for layout in ["nn", "nt", "tn", "tt"] {
                    let name = dmma_entry(t, layout, capability);
                    let family = crate::kernels::catalogue::family_of(&name).map(|f| f.name);
                    assert_eq!(family, Some(want), "{name}");
                }
            }
        }
        assert_eq!(DMMA_TILES, [(128, 64), (64, 64), (32, 64), (32, 32)]);
    }

    #[test]
    fn slices_cover_k_in_aligned_steps() {
        for (k, splits, depth, parts) in
            [(4096, 5, 832, 5), (1000, 3, 352, 3), (100, 8, 32, 4), (31, 4, 31, 1)]
        {
            let s = PlanF64::Dmma { tile: (64, 64), splits }.slices(&Gemm::new(10, 20, k)).unwrap();
            assert_eq!((s.depth, s.parts), (depth, parts), "k {k} in {splits}");
            assert!(s.depth * (s.parts - 1) < k && s.depth * s.parts >= k);
            assert_eq!(s.workspace, if parts > 1 { parts * 200 * 8 } else { 0 });
        }
    }

    #[test]
    fn names_round_trip_and_candidates_are_distinct() {
        for text in [
            "simt",
            "dmma",
            "dmma tile=64 splits=1",
            "dmma tile=128 splits=12",
            "dmma tile=64 splits=256",
            "dmma tile=32 splits=3",
            "dmma tile=32x32 splits=8",
            "skinny rows=4 splits=9",
        ] {
            let plan: PlanF64 = text.parse().unwrap();
            assert_eq!(plan.to_string(), text);
        }
        assert_eq!(
            "dmma splits=1 tile=128".parse::<PlanF64>().unwrap(),
            PlanF64::Dmma { tile: (128, 64), splits: 1 }
        );
        for bad in [
            "dmma tile=96",
            "dmma tile=64x32",
            "dmma tile=32x",
            "dmma tile=x32",
            "dmma splits=0",
            "dmma splits=257",
            "simt tile=64",
            "dgemm",
            "dmma tile",
            "skinny splits=4",
            "skinny rows=3 splits=4",
            "dmma rows=4",
            "skinny tile=64 rows=4",
        ] {
            assert!(bad.parse::<PlanF64>().is_err(), "{bad}");
        }
        let g = Gemm::new(16, 4096, 4096);
        let all = candidates(&g, &H100);
        assert_eq!(all[0], plan(&g, &H100));
        assert!(all.contains(&PlanF64::Simt) && all.contains(&PlanF64::Dmma { tile: (128, 64), splits: 1 }));
        assert!(all.len() > 10, "{all:?}");
        let cuts: std::collections::HashSet<_> =
            all.iter().map(|p| (p.kernel_key(), p.slices(&g).map(|s| s.parts))).collect();
        assert_eq!(cuts.len(), all.len());
        // A full wave of 128-tiles: no slices offered.
        assert!(candidates(&Gemm::new(4096, 4096, 4096), &H100)
            .iter()
            .all(|p| p.slices(&Gemm::new(4096, 4096, 4096)).is_none_or(|s| s.parts == 1)));
    }
}
