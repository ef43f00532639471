//! A GEMM's [`Plan`]: the [`Kernel`] chosen for it (by the heuristic in [`super::dispatch`], a
//! tuning table or a caller) resolved against the shape and the device into everything its launches
//! need: the family, the tile, the layout as the kernel reads it, how each operand is fed, the
//! slices of k and the workspace. [`Kernel::resolve`] is also the validity check: a kernel the
//! device cannot run, or one that cannot compute this shape, is an [`Error::Shape`] naming why.
//! Pure logic, tested without a GPU.

use std::fmt;

use super::dispatch::{
    skinny_depth, skinny_long_contiguous, skinny_on_tensor_cores, skinny_rows, skinny_slice_align,
    skinny_tile, sm90_tile, Device, Feed, Kernel, SplitOn, TmaReady, GEMV_COLS, SIMT32_TILE, SIMT64X64_TILE,
    SIMT64_TILE_M, SIMT_TILE_N, TILE_M, TMA_FAST_PITCH, TRANSPOSE_TILE,
};
use super::spec::{Gemm, Precision};
use super::tensor_map::Dtype;
use crate::error::{Error, Result};
use crate::kernels::grid::GRID_YZ_MAX;
use crate::kernels::shape;

/// Dynamic shared memory of the mma.sync kernels (4-stage cp.async ring).
pub(crate) const MMA_SMEM: u32 = 81_920;
/// Dynamic shared memory of every sm_90a kernel (stages x (128 + BN) x 128 + 1024 bytes).
pub(crate) const SM90_SMEM: u32 = 197_632;
/// Rows (and columns) per block of the small kernel.
pub(crate) const SMALL_TILE: usize = 16;
/// Workspace rows of transposed TF32 operands are padded to this many f32 (128-byte pitch).
const STAGE_PITCH: usize = 32;
/// Split-K slices start a multiple of this many elements apart along k (keeps 16-byte alignment).
const SPLIT_SLICE_ALIGN: usize = 32;
/// The most slices of k a split-K plan may ask for (a skinny plan: grid.y's limit). The slices are
/// batch entries on grid.z; their partial products take `slices x m x n` f32 of workspace.
pub(crate) const MAX_SPLITS: u32 = 256;
/// The sm_90a tile widths (192: BF16 and FP16 only).
pub(crate) const SM90_WIDTHS: [u32; 4] = [256, 192, 128, 64];

/// The kernel families that share the common argument list (notes/gemm.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `gemm_small_*`.
    Small,
    /// `gemm_simt_*`.
    Simt,
    /// `gemm_simt64_f32_f32` (f32 data only).
    Simt64,
    /// `gemm_simt64x64_f32_f32` (f32 data only).
    Simt64x64,
    /// `gemm_simt32_f32_f32` (f32 data only).
    Simt32,
    /// `gemm_mma_*` (tensor cores, sm_80+).
    Mma,
}

impl Family {
    /// Whether the kernels apply the epilogue in their stores (and take its arguments). The
    /// others store plainly and the epilogue follows as a pass over C: compiled into their stores
    /// it cost the plain GEMM registers and speed (cuda/gemm_common.cuh).
    pub fn fuses_epilogue(self) -> bool {
        self == Family::Small
    }

    /// (rows, columns) of C per block.
    pub fn tile(self) -> (usize, usize) {
        match self {
            Family::Small => (SMALL_TILE, SMALL_TILE),
            Family::Simt => (TILE_M, SIMT_TILE_N),
            Family::Simt64 => (SIMT64_TILE_M, TILE_M),
            Family::Simt64x64 => (SIMT64X64_TILE, SIMT64X64_TILE),
            Family::Simt32 => (SIMT32_TILE, SIMT32_TILE),
            Family::Mma => (TILE_M, TILE_M),
        }
    }

    /// Threads per block.
    pub fn threads(self) -> u32 {
        match self {
            Family::Simt64x64 => 128,
            Family::Simt32 => 64,
            _ => 256,
        }
    }

    /// Dynamic shared memory per block.
    pub fn smem(self) -> u32 {
        match self {
            Family::Mma => MMA_SMEM,
            _ => 0,
        }
    }
}

/// Everything the launches of one GEMM need, decided once: the chosen [`Kernel`] and what follows
/// from it for this shape on this device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// The kernel (family and options) as chosen.
    pub kernel: Kernel,
    /// How it is launched.
    pub launch: Launch,
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kernel.fmt(f)
    }
}

/// The launches of a [`Plan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch {
    /// One kernel of a [`Family`] over the whole problem (batches and rows chunked to the grid's
    /// limits).
    Tiled(Family),
    /// Batch 1, k in slices: f32 partial products into the workspace, summed into C by
    /// `gemm_splitk_reduce_<out>`.
    SplitK(SplitK),
    /// Batch 1, C's short side at most 16: `gemm_skinny_*` slices, then the reduction.
    Skinny(Skinny),
    /// Batch 1, C's short side 1: `gemm_gemv_<wl|wk>_<in>_<out>_c<cols>`.
    Gemv(Gemv),
    /// The sm_90a TMA + wgmma kernels.
    Sm90(Sm90),
    /// The sm_90a kernels over whole waves of tiles, then split-K over the other rows.
    Sm90Tail(Sm90Tail),
}

/// A split-K launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitK {
    /// The kernels of the partial products (f32 out).
    pub partials: Partials,
    /// Depth of every slice but the last (a multiple of 32).
    pub depth: usize,
    /// Slices: `k / depth` full ones, then the rest (if any).
    pub parts: usize,
    /// Workspace bytes: the sm_90a plan's operand copies (its regions, first), then the partial
    /// products.
    pub workspace: usize,
}

/// The kernels of a split-K plan's partial products: a tiled family's, or the sm_90a kernel's
/// (each operand read in place, or from one copy at a 128-byte pitch that every slice reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partials {
    /// One of the common argument list's families.
    Tiled(Family),
    /// TMA + wgmma.
    Sm90(Sm90),
}

/// A skinny launch: X (the short side's operand) staged or read in place, W (the long one)
/// streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skinny {
    /// The kernel's row count (a power of two, at least C's short side).
    pub rows: u32,
    /// Depth of every slice but the last (a multiple of [`skinny_slice_align`], at most
    /// [`skinny_depth`]).
    pub depth: usize,
    /// Slices of k (grid.y).
    pub parts: usize,
    /// W read along C's long side (`wl`) rather than along k (`wk`).
    pub long_contiguous: bool,
    /// The tensor-core kernels (`gemm_skinny_tc_*`, 16-bit data).
    pub tensor_cores: bool,
    /// Columns of C's long side per block (grid.x covers the long side with them).
    pub block_cols: usize,
    /// Workspace bytes (the partial products).
    pub workspace: usize,
}

/// A GEMV launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gemv {
    /// Columns of C's long side per block.
    pub cols: u32,
    /// W read along C's long side (`wl`) rather than along k (`wk`).
    pub long_contiguous: bool,
}

/// An sm_90a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sm90 {
    /// Tile width (256, 192 (16-bit only), 128 or 64).
    pub bn: u32,
    /// How A and B reach the kernel.
    pub feeds: [Feed; 2],
    /// Whether the kernel reads A, B transposed (after any transpose into the workspace): the
    /// entry's `<ta><tb>`.
    pub read_transposed: (bool, bool),
    /// (rows, columns) of C per tile.
    pub tile: (usize, usize),
    /// Tiles per batch entry.
    pub tiles: usize,
    /// The tensor maps' element type.
    pub dtype: Dtype,
    /// The k-step (box depth) of the tensor maps.
    pub bk: u32,
    /// Leading dimension of a transposed operand in the workspace.
    pub staged_ld: usize,
    /// Bytes of the workspace regions of A (rounded to 128 bytes) and B.
    pub regions: [usize; 2],
}

/// An sm_90a launch over C's first rows (whole waves of tiles), then split-K on the sm_90a kernels
/// over the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sm90Tail {
    /// The first launch, over C's first `head_rows` rows (both operands in place).
    pub head: Sm90,
    /// Rows of the first launch: a multiple of the tile's.
    pub head_rows: usize,
    /// The split-K launch over the other rows.
    pub tail: SplitK,
}

impl Sm90 {
    /// The workspace's whole size.
    pub fn workspace(&self) -> usize {
        self.regions[0] + self.regions[1]
    }

    /// Leading dimension of an operand of `cols` columns copied to a 128-byte pitch.
    pub fn repitched_ld(&self, cols: usize) -> usize {
        cols.next_multiple_of(TMA_FAST_PITCH / self.dtype.size() as usize)
    }
}

impl Plan {
    /// Workspace bytes the launches need.
    pub fn workspace(&self) -> usize {
        match self.launch {
            Launch::Tiled(_) => 0,
            Launch::SplitK(s) => s.workspace,
            Launch::Skinny(s) => s.workspace,
            Launch::Gemv(_) => 0,
            Launch::Sm90(s) => s.workspace(),
            Launch::Sm90Tail(s) => s.head.workspace().max(s.tail.workspace),
        }
    }
}

impl Kernel {
    /// This kernel's plan for a validated, non-empty `g` (k >= 1) at `precision` (resolved for the
    /// element types) on `device`, whose operands TMA can read as `tma` says; [`Error::Shape`]
    /// naming the reason when the device cannot run it or it cannot compute `g`.
    pub fn resolve(self, g: &Gemm, precision: Precision, device: &Device, tma: TmaReady) -> Result<Plan> {
        let invalid = |expected: String| {
            Err(Error::Shape {
                op: "gemm plan",
                expected,
                got: format!(
                    "`{self}` for {precision:?} {}{} {}x{}x{} batch {} on sm_{}{}",
                    layout_char(g.trans_a),
                    layout_char(g.trans_b),
                    g.m,
                    g.n,
                    g.k,
                    g.batch,
                    device.capability.0,
                    device.capability.1
                ),
            })
        };
        let family = |family: Family| -> std::result::Result<Family, String> {
            match family {
                Family::Simt64 | Family::Simt64x64 | Family::Simt32
                    if !matches!(precision, Precision::F32 | Precision::Tf32) =>
                {
                    let name = match family {
                        Family::Simt64 => "simt64",
                        Family::Simt64x64 => "simt64x64",
                        _ => "simt32",
                    };
                    Err(format!("f32 data for {name}"))
                }
                Family::Mma if precision == Precision::F32 => {
                    Err("TF32, BF16 or FP16 for mma (it multiplies on the tensor cores)".into())
                }
                Family::Mma if !device.tensor_cores() => Err("tensor cores (sm_80+) for mma".into()),
                Family::Mma if device.shared_optin < MMA_SMEM => {
                    Err(format!("{MMA_SMEM} bytes of shared memory per block for mma"))
                }
                _ => Ok(family),
            }
        };
        let bytes = |what: &[usize]| shape::elements("gemm", "workspace", what);
        let launch = match self {
            Kernel::Small => Launch::Tiled(Family::Small),
            Kernel::Simt => Launch::Tiled(Family::Simt),
            Kernel::Simt64 | Kernel::Simt64x64 | Kernel::Simt32 | Kernel::Mma => {
                let f = match self {
                    Kernel::Simt64 => Family::Simt64,
                    Kernel::Simt64x64 => Family::Simt64x64,
                    Kernel::Simt32 => Family::Simt32,
                    _ => Family::Mma,
                };
                match family(f) {
                    Ok(f) => Launch::Tiled(f),
                    Err(why) => return invalid(why),
                }
            }
            Kernel::SplitK { splits, on } => {
                if g.batch != 1 {
                    return invalid("one product (batch 1) for split-K".into());
                }
                if !(2..=MAX_SPLITS).contains(&splits) {
                    return invalid(format!("2 to {MAX_SPLITS} slices"));
                }
                let partials = match on {
                    SplitOn::Simt64 => family(Family::Simt64).map(Partials::Tiled),
                    SplitOn::Mma => family(Family::Mma).map(Partials::Tiled),
                    // The slices are views of the operands, so TMA reads them as it reads the whole
                    // (cut_k's 32-element depths keep their starts aligned): the caller's in place,
                    // or, where TMA cannot read one, its copy at a 128-byte pitch made once for all
                    // slices.
                    SplitOn::Sm90 { bn } => {
                        let feed = |ready: bool| if ready { Feed::InPlace } else { Feed::Repitch };
                        sm90(g, precision, device, tma, bn, [feed(tma.a), feed(tma.b)])?.map(Partials::Sm90)
                    }
                };
                let partials = match partials {
                    Ok(p) => p,
                    Err(why) => return invalid(why),
                };
                let (depth, parts) = cut_k(g.k, splits as usize, SPLIT_SLICE_ALIGN);
                let products = bytes(&[parts, g.m, g.n, size_of::<f32>()])?;
                let copies = match partials {
                    Partials::Sm90(s) => s.workspace(),
                    Partials::Tiled(_) => 0,
                };
                let Some(workspace) = copies.checked_add(products) else {
                    return Err(Error::Shape {
                        op: "gemm",
                        expected: "a workspace that fits in usize".into(),
                        got: format!("{copies} + {products} bytes"),
                    });
                };
                Launch::SplitK(SplitK { partials, depth, parts, workspace })
            }
            Kernel::Skinny { rows, splits } => {
                let short = g.m.min(g.n);
                if g.batch != 1 {
                    return invalid("one product (batch 1) for skinny".into());
                }
                let tensor_cores = skinny_on_tensor_cores(precision);
                if tensor_cores && !device.tensor_cores() {
                    return invalid("tensor cores (sm_80+) for 16-bit skinny".into());
                }
                let valid_rows = skinny_rows(precision);
                if !valid_rows.contains(&rows) || short > rows as usize {
                    return invalid(format!("rows of {valid_rows:?}, at least C's short side ({short})"));
                }
                if !(1..=GRID_YZ_MAX as u32).contains(&splits) {
                    return invalid(format!("1 to {GRID_YZ_MAX} slices"));
                }
                let deepest = skinny_depth(rows, precision);
                let (depth, parts) = cut_k(g.k, splits as usize, skinny_slice_align(precision));
                if depth > deepest {
                    let needed = g.k.div_ceil(deepest);
                    return invalid(format!("at least {needed} slices (at most {deepest} deep)"));
                }
                let workspace = bytes(&[parts, g.m, g.n, size_of::<f32>()])?;
                let long_contiguous = skinny_long_contiguous(g);
                let block_cols = skinny_tile(g, precision);
                Launch::Skinny(Skinny {
                    rows,
                    depth,
                    parts,
                    long_contiguous,
                    tensor_cores,
                    block_cols,
                    workspace,
                })
            }
            Kernel::Gemv { cols } => {
                if !GEMV_COLS.contains(&cols) {
                    return invalid(format!("columns per block of {GEMV_COLS:?} for gemv"));
                }
                if g.m.min(g.n) != 1 {
                    return invalid("one row or column of C for gemv".into());
                }
                Launch::Gemv(Gemv { cols, long_contiguous: skinny_long_contiguous(g) })
            }
            Kernel::Sm90 { bn, a, b } => match sm90(g, precision, device, tma, bn, [a, b]) {
                Ok(Ok(plan)) => Launch::Sm90(plan),
                Ok(Err(why)) => return invalid(why),
                Err(e) => return Err(e),
            },
            Kernel::Sm90Tail { bn, splits } => {
                if g.batch != 1 {
                    return invalid("one product (batch 1) for sm90 tail".into());
                }
                let in_place = |g: &Gemm| sm90(g, precision, device, tma, bn, [Feed::InPlace; 2]);
                let whole = match in_place(g)? {
                    Ok(plan) => plan,
                    Err(why) => return invalid(why),
                };
                let head_rows = whole_wave_rows(g, &whole, device.multiprocessors);
                if head_rows == 0 || head_rows >= g.m {
                    return invalid(
                        "tiles that fill whole waves (in whole rows of tiles) and part of one more".into(),
                    );
                }
                let (first, rest, _) = g.split_rows(head_rows);
                let head = match in_place(&first)? {
                    Ok(plan) => plan,
                    Err(why) => return invalid(why),
                };
                let split = Kernel::SplitK { splits, on: SplitOn::Sm90 { bn } };
                let tail = match split.resolve(&rest, precision, device, tma)?.launch {
                    Launch::SplitK(tail) => tail,
                    _ => unreachable!("split-K resolves to a split-K launch"),
                };
                Launch::Sm90Tail(Sm90Tail { head, head_rows, tail })
            }
        };
        Ok(Plan { kernel: self, launch })
    }
}

/// The rows of C (a multiple of the tile's) whose tiles fill whole waves of `multiprocessors`
/// blocks under `plan` (one block per multiprocessor): 0 when the tiles fill less than one wave or
/// exactly whole waves.
fn whole_wave_rows(g: &Gemm, plan: &Sm90, multiprocessors: u32) -> usize {
    let (tile_rows, tile_cols) = plan.tile;
    let (wave, per_row) = (multiprocessors.max(1) as usize, g.n.div_ceil(tile_cols));
    if plan.tiles % wave == 0 {
        return 0;
    }
    plan.tiles / wave * wave / per_row * tile_rows
}

/// k (at least 1) cut into `splits` slices whose depth is a multiple of `align`: (the depth of
/// every slice but the last, the number of slices), which is fewer than `splits` when rounding the
/// depth up leaves nothing for the last ones.
pub(crate) fn cut_k(k: usize, splits: usize, align: usize) -> (usize, usize) {
    let depth = k.div_ceil(splits).next_multiple_of(align);
    (depth, k.div_ceil(depth))
}

/// `n` or `t` for an operand stored as given or transposed.
pub(crate) fn layout_char(trans: bool) -> char {
    if trans {
        't'
    } else {
        'n'
    }
}

/// The sm_90a launch of tile width `bn` with operands fed as `feeds`, or why it cannot run (the
/// outer error: a workspace whose size overflows).
fn sm90(
    g: &Gemm,
    precision: Precision,
    device: &Device,
    tma: TmaReady,
    bn: u32,
    feeds: [Feed; 2],
) -> Result<std::result::Result<Sm90, String>> {
    let (dtype, bk) = match precision {
        Precision::Bf16 => (Dtype::Bf16, 64),
        Precision::F16 => (Dtype::F16, 64),
        Precision::Tf32 => (Dtype::F32, 32),
        Precision::F32 => return Ok(Err("TF32, BF16 or FP16 for sm90 (exact fp32 has no wgmma)".into())),
    };
    if !device.sm90 {
        return Ok(Err("an sm_90 device whose sm_90a module loads, for sm90".into()));
    }
    if device.shared_optin < SM90_SMEM {
        return Ok(Err(format!("{SM90_SMEM} bytes of shared memory per block for sm90")));
    }
    if !SM90_WIDTHS.contains(&bn) {
        return Ok(Err("bn of 256, 192, 128 or 64".into()));
    }
    if bn == 192 && precision == Precision::Tf32 {
        return Ok(Err("bn of 256, 128 or 64 for TF32 (192 is BF16 and FP16 only)".into()));
    }
    // Whether each operand is MN-major as stored (A stored k x m, B stored k x n).
    let (mn_a, mn_b) = (g.trans_a, !g.trans_b);
    for (name, feed, ready, mn_major) in [("a", feeds[0], tma.a, mn_a), ("b", feeds[1], tma.b, mn_b)] {
        let why = match feed {
            Feed::InPlace if !ready => Some(format!("{name}=inplace only for an operand TMA can read")),
            Feed::Repitch if g.batch != 1 => Some(format!("{name}=repitch only for one product (batch 1)")),
            Feed::Transpose if precision != Precision::Tf32 => {
                Some(format!("{name}=transpose only for TF32"))
            }
            Feed::Transpose if !mn_major => Some(format!(
                "{name}=transpose only for an MN-major operand (a stored k x m, b stored k x n)"
            )),
            Feed::Transpose if g.k > GRID_YZ_MAX * TRANSPOSE_TILE => {
                Some(format!("{name}=transpose only for k <= {}", GRID_YZ_MAX * TRANSPOSE_TILE))
            }
            _ => None,
        };
        if let Some(why) = why {
            return Ok(Err(why));
        }
    }
    // Transposing turns A (stored k x m) into m x k and B (stored k x n) into n x k.
    let read_transposed =
        (g.trans_a && feeds[0] != Feed::Transpose, g.trans_b || feeds[1] == Feed::Transpose);
    if precision == Precision::Tf32 && read_transposed == (true, false) {
        return Ok(Err("TF32 reads at most one MN-major operand (there is no tn kernel)".into()));
    }
    let tile = sm90_tile(precision, !read_transposed.1, bn);
    let tiles = g.m.div_ceil(tile.0) * g.n.div_ceil(tile.1);
    let staged_ld = g.k.next_multiple_of(STAGE_PITCH);
    let es = dtype.size() as usize;
    // The fed operands of one launch (at most GRID_YZ_MAX entries; one when copied to a new
    // pitch), A's then B's, in one workspace; every matrix starts on a 128-byte boundary.
    let most = g.batch.min(GRID_YZ_MAX);
    let region = |feed: Feed, (rows, cols): (usize, usize), k_major_rows: usize| match feed {
        Feed::InPlace => Ok(0),
        Feed::Transpose => {
            shape::elements("gemm", "workspace", &[most, k_major_rows, staged_ld, size_of::<f32>()])
        }
        Feed::Repitch => {
            shape::elements("gemm", "workspace", &[rows, cols.next_multiple_of(TMA_FAST_PITCH / es), es])
        }
    };
    let (bytes_a, bytes_b) = (region(feeds[0], g.a_dims(), g.m)?, region(feeds[1], g.b_dims(), g.n)?);
    let fits = bytes_a
        .checked_next_multiple_of(TMA_FAST_PITCH)
        .and_then(|bytes_a| Some((bytes_a, bytes_a.checked_add(bytes_b)?)));
    let Some((bytes_a, _)) = fits else {
        return Err(Error::Shape {
            op: "gemm",
            expected: "a workspace that fits in usize".into(),
            got: format!("{bytes_a} + {bytes_b} bytes"),
        });
    };
    Ok(Ok(Sm90 {
        bn,
        feeds,
        read_transposed,
        tile,
        tiles,
        dtype,
        bk,
        staged_ld,
        regions: [bytes_a, bytes_b],
    }))
}

impl fmt::Display for Feed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Feed::InPlace => "inplace",
            Feed::Transpose => "transpose",
            Feed::Repitch => "repitch",
        })
    }
}

/// The kernel as the tuning table writes it: `small`, `simt`, `simt64`, `simt32`, `mma`,
/// `splitk simt64|mma|sm90 bn=B splits=S`, `skinny rows=R splits=S`, `gemv cols=C`, `sm90 bn=B a=FEED b=FEED`,
/// `sm90 bn=B tail splits=S`.
impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kernel::Small => f.write_str("small"),
            Kernel::Simt => f.write_str("simt"),
            Kernel::Simt64 => f.write_str("simt64"),
            Kernel::Simt64x64 => f.write_str("simt64x64"),
            Kernel::Simt32 => f.write_str("simt32"),
            Kernel::Mma => f.write_str("mma"),
            Kernel::SplitK { splits, on } => write!(f, "splitk {on} splits={splits}"),
            Kernel::Skinny { rows, splits } => write!(f, "skinny rows={rows} splits={splits}"),
            Kernel::Gemv { cols } => write!(f, "gemv cols={cols}"),
            Kernel::Sm90 { bn, a, b } => write!(f, "sm90 bn={bn} a={a} b={b}"),
            Kernel::Sm90Tail { bn, splits } => write!(f, "sm90 bn={bn} tail splits={splits}"),
        }
    }
}

/// `simt64`, `mma` or `sm90 bn=B`.
impl fmt::Display for SplitOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SplitOn::Simt64 => f.write_str("simt64"),
            SplitOn::Mma => f.write_str("mma"),
            SplitOn::Sm90 { bn } => write!(f, "sm90 bn={bn}"),
        }
    }
}

impl std::str::FromStr for Kernel {
    type Err = String;

    /// Reads what [`Display`](fmt::Display) writes (words separated by spaces, options in the
    /// order shown).
    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let number = |word: &str, key: &str| -> std::result::Result<u32, String> {
            word.strip_prefix(key)
                .and_then(|v| v.strip_prefix('='))
                .ok_or_else(|| format!("expected `{key}=N`, found `{word}`"))?
                .parse()
                .map_err(|_| format!("`{word}`: not a number"))
        };
        let feed = |word: &str, key: &str| -> std::result::Result<Feed, String> {
            match word.strip_prefix(key).and_then(|v| v.strip_prefix('=')) {
                Some("inplace") => Ok(Feed::InPlace),
                Some("transpose") => Ok(Feed::Transpose),
                Some("repitch") => Ok(Feed::Repitch),
                _ => Err(format!("expected `{key}=inplace|transpose|repitch`, found `{word}`")),
            }
        };
        let kernel = match words.as_slice() {
            ["small"] => Kernel::Small,
            ["simt"] => Kernel::Simt,
            ["simt64"] => Kernel::Simt64,
            ["simt64x64"] => Kernel::Simt64x64,
            ["simt32"] => Kernel::Simt32,
            ["mma"] => Kernel::Mma,
            ["splitk", "mma", splits] => Kernel::SplitK { splits: number(splits, "splits")?, on: SplitOn::Mma },
            ["splitk", "simt64", splits] => {
                Kernel::SplitK { splits: number(splits, "splits")?, on: SplitOn::Simt64 }
            }
            ["splitk", "sm90", bn, splits] => {
                Kernel::SplitK { splits: number(splits, "splits")?, on: SplitOn::Sm90 { bn: number(bn, "bn")? } }
            }
            ["splitk", other, ..] => {
                return Err(format!("split-K runs on `mma`, `simt64` or `sm90 bn=B`, not `{other}`"))
            }
            ["skinny", rows, splits] => {
                Kernel::Skinny { rows: number(rows, "rows")?, splits: number(splits, "splits")? }
            }
            ["gemv", cols] => Kernel::Gemv { cols: number(cols, "cols")? },
            ["sm90", bn, "tail", splits] => {
                Kernel::Sm90Tail { bn: number(bn, "bn")?, splits: number(splits, "splits")? }
            }
            ["sm90", bn, a, b] => Kernel::Sm90 { bn: number(bn, "bn")?, a: feed(a, "a")?, b: feed(b, "b")? },
            _ => {
                return Err(format!(
                    "unknown kernel `{text}` (small, simt, simt64, simt32, mma, splitk mma|simt64|sm90 bn=B splits=S, \
                     skinny rows=R splits=S, gemv cols=C, sm90 bn=B a=FEED b=FEED, sm90 bn=B tail splits=S)"
                ))
            }
        };
        kernel.check_options()?;
        Ok(kernel)
    }
}

impl Kernel {
    /// The kernels that take no options (the tiled families).
    pub const WITHOUT_OPTIONS: [Kernel; 6] =
        [Kernel::Small, Kernel::Simt, Kernel::Simt64, Kernel::Simt64x64, Kernel::Simt32, Kernel::Mma];

    /// Whether the options name a kernel that exists (whatever the shape and device).
    pub(crate) fn check_options(self) -> std::result::Result<(), String> {
        match self {
            Kernel::SplitK { splits, .. } | Kernel::Sm90Tail { splits, .. }
                if !(2..=MAX_SPLITS).contains(&splits) =>
            {
                Err(format!("split-K takes 2 to {MAX_SPLITS} slices, not {splits}"))
            }
            // The CUDA-core kernels' row counts include the tensor-core ones.
            Kernel::Skinny { rows, .. } if !skinny_rows(Precision::F32).contains(&rows) => {
                Err(format!("skinny kernels have 1, 2, 4, 8 or 16 rows, not {rows}"))
            }
            Kernel::Skinny { splits, .. } if !(1..=GRID_YZ_MAX as u32).contains(&splits) => {
                Err(format!("skinny takes 1 to {GRID_YZ_MAX} slices, not {splits}"))
            }
            Kernel::Gemv { cols } if !GEMV_COLS.contains(&cols) => {
                Err(format!("gemv blocks take 8, 16, 32 or 64 columns, not {cols}"))
            }
            Kernel::Sm90 { bn, .. }
            | Kernel::Sm90Tail { bn, .. }
            | Kernel::SplitK { on: SplitOn::Sm90 { bn }, .. }
                if !SM90_WIDTHS.contains(&bn) =>
            {
                Err(format!("sm90 tiles are 256, 192, 128 or 64 wide, not {bn}"))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::dispatch::testing::{A100, ALIGNED, H100, VOLTA};
    use super::super::dispatch::{heuristic, plan_with};
    use super::*;

    /// The launch the rules plan for `g` on `device` with aligned operands (no tuning table).
    fn launch(g: Gemm, precision: Precision, device: &Device) -> Launch {
        let p = plan_with(&super::super::table::Table::default(), &g, precision, device, ALIGNED).unwrap();
        assert_eq!(p.kernel, heuristic(&g, precision, device, ALIGNED), "the plan carries the choice");
        p.launch
    }

    #[test]
    fn plans_of_representative_shapes_are_pinned() {
        use Precision::{Bf16, Tf32, F16, F32};
        assert_eq!(launch(Gemm::new(8, 8, 8), F32, &H100), Launch::Tiled(Family::Small));
        assert_eq!(launch(Gemm::new(4096, 4096, 4096), F32, &H100), Launch::Tiled(Family::Simt));
        assert_eq!(launch(Gemm::new(1024, 1024, 512), F32, &H100), Launch::Tiled(Family::Simt64));
        assert_eq!(launch(Gemm::new(4096, 4096, 4096), Bf16, &A100), Launch::Tiled(Family::Mma));
        assert_eq!(launch(Gemm::new(4096, 4096, 4096), F16, &VOLTA), Launch::Tiled(Family::Simt));
        // Split-K: 64x8192x8192 f32, 4 slices of 2048 on simt64; 32x4096x16384 bf16 on an A100, 6 of
        // 2752 (5 of them, then 2624) on mma.sync.
        let split = |family, depth, parts, m: usize, n: usize| {
            Launch::SplitK(SplitK {
                partials: Partials::Tiled(family),
                depth,
                parts,
                workspace: parts * m * n * 4,
            })
        };
        assert_eq!(launch(Gemm::new(64, 8192, 8192), F32, &H100), split(Family::Simt64, 2048, 4, 64, 8192));
        assert_eq!(launch(Gemm::new(32, 4096, 16384), Bf16, &A100), split(Family::Mma, 2752, 6, 32, 4096));
        // On sm_90 the sm_90 kernels take the slices: 32 tiles of 128 x 128, 4 slices of 4096.
        assert!(matches!(
            launch(Gemm::new(32, 4096, 16384), Bf16, &H100),
            Launch::SplitK(SplitK {
                partials: Partials::Sm90(Sm90 { bn: 128, tiles: 32, .. }),
                depth: 4096,
                parts: 4,
                ..
            })
        ));
        // 41x185x2913 TF32 tn (2 tiles; no in-place sm_90 kernel): 31 slices of 96 (the last 33).
        let tn = Gemm::new(41, 185, 2913).transposed(true, false);
        assert_eq!(launch(tn, Tf32, &H100), split(Family::Mma, 96, 31, 41, 185));
        // Skinny: decode bf16 x W for two tokens on the tensor cores (4 slices of 1024, 8 rows), W
        // read along n;
        // x W^T in f32 on the CUDA cores and in f16 on the tensor cores.
        // (rows, depth, parts, long_contiguous, tensor_cores, block_cols, workspace bytes)
        let skinny = |g: Gemm, p| match launch(g, p, &H100) {
            Launch::Skinny(s) => {
                (s.rows, s.depth, s.parts, s.long_contiguous, s.tensor_cores, s.block_cols, s.workspace)
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(skinny(Gemm::new(2, 4096, 4096), Bf16), (8, 1024, 4, true, true, 64, 4 * 2 * 4096 * 4));
        let xwt = Gemm::new(3, 4096, 4096).transposed(false, true);
        assert_eq!(skinny(xwt, F32), (4, 832, 5, false, false, 32, 5 * 3 * 4096 * 4));
        assert_eq!(skinny(xwt, F16), (8, 1536, 3, false, true, 32, 3 * 3 * 4096 * 4));
        // sm_90: 16-bit in place, and TF32 tn with A transposed into the workspace (nn kernel,
        // 256-row tiles along m).
        let sm90 = |bn, feeds, read_transposed, tile, tiles, dtype, bk, staged_ld, regions| {
            Launch::Sm90(Sm90 { bn, feeds, read_transposed, tile, tiles, dtype, bk, staged_ld, regions })
        };
        let inplace = [Feed::InPlace, Feed::InPlace];
        assert_eq!(
            launch(Gemm::new(4096, 4096, 4096), Bf16, &H100),
            sm90(256, inplace, (false, false), (128, 256), 512, Dtype::Bf16, 64, 4096, [0, 0])
        );
        assert_eq!(
            launch(Gemm::new(2048, 2048, 2048).transposed(true, false), Tf32, &H100),
            sm90(
                256,
                [Feed::Transpose, Feed::InPlace],
                (false, false),
                (256, 128),
                128,
                Dtype::F32,
                32,
                2048,
                [2048 * 2048 * 4, 0]
            )
        );
        // B repitched (3000x5000x2000 bf16 NN: B's 10000-byte pitch) to 5056 columns.
        assert_eq!(
            launch(Gemm::new(3000, 5000, 2000), Bf16, &H100),
            sm90(
                256,
                [Feed::InPlace, Feed::Repitch],
                (false, false),
                (128, 256),
                24 * 20,
                Dtype::Bf16,
                64,
                2016,
                [0, 2000 * 5056 * 2]
            )
        );
    }

    #[test]
    fn every_heuristic_choice_resolves() {
        let sides = [1, 2, 3, 16, 17, 64, 100, 257, 1000, 4096, 12288, 100_000];
        let tmas = [ALIGNED, TmaReady { a: false, b: true }, TmaReady { a: true, b: false }];
        let shapes: Vec<(usize, usize, usize)> =
            sides.iter().flat_map(|&m| sides.iter().flat_map(move |&n| sides.map(|k| (m, n, k)))).collect();
        for device in [H100, A100, VOLTA] {
            for p in [Precision::F32, Precision::Tf32, Precision::Bf16, Precision::F16] {
                for &(m, n, k) in &shapes {
                    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                        for batch in [1, 3] {
                            let g = Gemm::new(m, n, k).transposed(ta, tb);
                            let g = if batch > 1 { g.batched(batch, m * k, k * n, m * n) } else { g };
                            for tma in tmas {
                                let kernel = heuristic(&g, p, &device, tma);
                                if let Err(e) = kernel.resolve(&g, p, &device, tma) {
                                    panic!("{kernel} for {g:?} at {p:?}: {e}");
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn kernels_that_cannot_run_are_errors_naming_why() {
        let err = |kernel: Kernel, g: Gemm, p: Precision, device: &Device, tma: TmaReady| {
            kernel.resolve(&g, p, device, tma).unwrap_err().to_string()
        };
        let g = Gemm::new(1024, 1024, 1024);
        let sm90 = |bn, a, b| Kernel::Sm90 { bn, a, b };
        let e = err(sm90(128, Feed::InPlace, Feed::InPlace), g, Precision::Bf16, &A100, ALIGNED);
        assert!(e.contains("sm_90 device") && e.contains("sm_80"), "{e}");
        let e = err(sm90(128, Feed::InPlace, Feed::InPlace), g, Precision::F32, &H100, ALIGNED);
        assert!(e.contains("exact fp32"), "{e}");
        let unaligned = TmaReady { a: true, b: false };
        let e = err(sm90(128, Feed::InPlace, Feed::InPlace), g, Precision::F16, &H100, unaligned);
        assert!(e.contains("b=inplace only for an operand TMA can read"), "{e}");
        let batched = g.batched(2, 1 << 20, 1 << 20, 1 << 20);
        let e = err(sm90(128, Feed::InPlace, Feed::Repitch), batched, Precision::F16, &H100, ALIGNED);
        assert!(e.contains("b=repitch only for one product"), "{e}");
        let e = err(sm90(128, Feed::InPlace, Feed::Transpose), g, Precision::Bf16, &H100, ALIGNED);
        assert!(e.contains("only for TF32"), "{e}");
        // TF32: B stored n x k is K-major already; tn (both MN-major as read) has no kernel.
        let nt = g.transposed(false, true);
        let e = err(sm90(128, Feed::InPlace, Feed::Transpose), nt, Precision::Tf32, &H100, ALIGNED);
        assert!(e.contains("only for an MN-major operand"), "{e}");
        let tn = g.transposed(true, false);
        let e = err(sm90(128, Feed::InPlace, Feed::InPlace), tn, Precision::Tf32, &H100, ALIGNED);
        assert!(e.contains("no tn kernel"), "{e}");
        assert!(sm90(128, Feed::Transpose, Feed::InPlace)
            .resolve(&tn, Precision::Tf32, &H100, ALIGNED)
            .is_ok());
        // 192-wide tiles: 16-bit only.
        let e = err(sm90(192, Feed::InPlace, Feed::InPlace), nt, Precision::Tf32, &H100, ALIGNED);
        assert!(e.contains("192 is BF16 and FP16 only"), "{e}");
        assert!(sm90(192, Feed::InPlace, Feed::InPlace).resolve(&nt, Precision::F16, &H100, ALIGNED).is_ok());
        // mma: tensor cores and not exact fp32; simt64: f32 data.
        assert!(err(Kernel::Mma, g, Precision::Bf16, &VOLTA, ALIGNED).contains("tensor cores"));
        assert!(err(Kernel::Mma, g, Precision::F32, &H100, ALIGNED).contains("TF32, BF16 or FP16"));
        assert!(err(Kernel::Simt64, g, Precision::Bf16, &H100, ALIGNED).contains("f32 data"));
        // Split-K and skinny: one product; skinny rows cover the short side, slices its depth.
        let split = Kernel::SplitK { splits: 4, on: SplitOn::Mma };
        assert!(err(split, batched, Precision::Bf16, &H100, ALIGNED).contains("batch 1"));
        // On sm_90: what its kernel needs, each operand read in place or, where TMA cannot read it,
        // copied once to a 128-byte pitch (B of 1024 x 1024 16-bit elements: 2 MiB before the 16
        // MiB of partial products).
        let split = Kernel::SplitK { splits: 4, on: SplitOn::Sm90 { bn: 128 } };
        assert!(err(split, batched, Precision::Bf16, &H100, ALIGNED).contains("batch 1"));
        assert!(err(split, g, Precision::Bf16, &A100, ALIGNED).contains("sm_90 device"));
        assert!(err(split, tn, Precision::Tf32, &H100, ALIGNED).contains("no tn kernel"));
        let Ok(Plan { launch: Launch::SplitK(copied), .. }) =
            split.resolve(&g, Precision::F16, &H100, unaligned)
        else {
            panic!("{split} runs 1024^3 f16 with B unreadable by TMA on an H100");
        };
        let Partials::Sm90(sm90) = copied.partials else { panic!("{copied:?}") };
        assert_eq!((sm90.feeds, sm90.regions), ([Feed::InPlace, Feed::Repitch], [0, 1 << 21]));
        assert_eq!(copied.workspace, (1 << 21) + 4 * 1024 * 1024 * 4);
        let decode = Gemm::new(64, 4096, 4096);
        let Ok(Plan { launch: Launch::SplitK(plan), .. }) =
            split.resolve(&decode, Precision::Bf16, &H100, ALIGNED)
        else {
            panic!("{split} runs 64x4096x4096 bf16 on an H100");
        };
        let Partials::Sm90(sm90) = plan.partials else { panic!("{plan:?}") };
        assert_eq!((plan.depth, plan.parts, plan.workspace), (1024, 4, 4 * 64 * 4096 * 4));
        assert_eq!((sm90.tile, sm90.tiles, sm90.workspace()), ((128, 128), 32, 0));
        let skinny = |rows, splits| Kernel::Skinny { rows, splits };
        let decode = Gemm::new(2, 4096, 4096);
        assert!(err(skinny(1, 4), decode, Precision::F32, &H100, ALIGNED).contains("short side (2)"));
        assert!(err(skinny(2, 1), decode, Precision::F32, &H100, ALIGNED).contains("at least 2 slices"));
        assert!(skinny(2, 2).resolve(&decode, Precision::F32, &H100, ALIGNED).is_ok());
        // gemv: one row or column, any data, batched or not.
        let gemv = Kernel::Gemv { cols: 8 };
        let row = Gemm::new(1, 4096, 4096);
        assert!(gemv.resolve(&row, Precision::F32, &H100, ALIGNED).is_ok());
        assert!(gemv.resolve(&row.batched(3, 4096, 0, 4096), Precision::F32, &H100, ALIGNED).is_ok());
        assert!(gemv.resolve(&row, Precision::Bf16, &H100, ALIGNED).is_ok());
        assert!(err(gemv, decode, Precision::F32, &H100, ALIGNED).contains("one row or column"));
        assert!(gemv.resolve(&row.transposed(false, true), Precision::F32, &H100, ALIGNED).is_ok());
        assert!(
            err(Kernel::Gemv { cols: 12 }, row, Precision::F32, &H100, ALIGNED).contains("[8, 16, 32, 64]")
        );
        // sm90 tail: whole waves of tiles in whole rows, then the other rows split along k.
        let tail = Kernel::Sm90Tail { bn: 128, splits: 11 };
        let square = Gemm::new(1536, 1536, 1536);
        let Ok(Plan { launch: Launch::Sm90Tail(plan), .. }) =
            tail.resolve(&square, Precision::Bf16, &H100, ALIGNED)
        else {
            panic!("{tail} runs 1536^3 bf16 on an H100");
        };
        // 12 x 12 tiles of 128 x 128 on 132 multiprocessors: 11 rows of tiles fill one wave; the
        // last row's k in 11 slices rounds to 10 of 160 (32-aligned depths).
        assert_eq!((plan.head_rows, plan.head.tiles, plan.tail.parts, plan.tail.depth), (1408, 132, 10, 160));
        assert_eq!(plan.tail.workspace, 10 * 128 * 1536 * 4);
        assert!(
            err(tail, g, Precision::Bf16, &H100, ALIGNED).contains("part of one more"),
            "64 tiles: no wave"
        );
        let exact = Gemm::new(1408, 1536, 1536);
        assert!(
            err(tail, exact, Precision::Bf16, &H100, ALIGNED).contains("part of one more"),
            "one whole wave"
        );
        assert!(err(tail, square, Precision::Bf16, &A100, ALIGNED).contains("sm_90 device"));
        assert!(err(tail, square.batched(2, 0, 0, 1536 * 1536), Precision::Bf16, &H100, ALIGNED)
            .contains("batch 1"));
        assert!(err(tail, square, Precision::F16, &H100, unaligned).contains("b=inplace only"));
        // Anything runs Small and Simt.
        for device in [H100, A100, VOLTA] {
            for p in [Precision::F32, Precision::Tf32, Precision::Bf16, Precision::F16] {
                assert!(Kernel::Small.resolve(&g, p, &device, ALIGNED).is_ok());
                assert!(Kernel::Simt.resolve(&g, p, &device, ALIGNED).is_ok());
            }
        }
    }

    #[test]
    fn kernels_read_back_what_they_write() {
        let with_options = [
            Kernel::SplitK { splits: 4, on: SplitOn::Mma },
            Kernel::SplitK { splits: 64, on: SplitOn::Simt64 },
            Kernel::SplitK { splits: 6, on: SplitOn::Sm90 { bn: 128 } },
            Kernel::Skinny { rows: 16, splits: 196 },
            Kernel::Gemv { cols: 32 },
            Kernel::Sm90 { bn: 128, a: Feed::Transpose, b: Feed::Repitch },
            Kernel::Sm90Tail { bn: 256, splits: 12 },
        ];
        for kernel in Kernel::WITHOUT_OPTIONS.into_iter().chain(with_options) {
            assert_eq!(kernel.to_string().parse::<Kernel>(), Ok(kernel), "{kernel}");
        }
        assert_eq!(
            "sm90 bn=64 a=inplace b=inplace".parse(),
            Ok(Kernel::Sm90 { bn: 64, a: Feed::InPlace, b: Feed::InPlace })
        );
        for (bad, why) in [
            ("sm90 bn=96 a=inplace b=inplace", "256, 192, 128 or 64"),
            ("sm90 bn=64 a=copy b=inplace", "a=inplace|transpose|repitch"),
            ("splitk simt splits=4", "`mma`, `simt64` or `sm90 bn=B`"),
            ("splitk sm90 bn=32 splits=4", "256, 192, 128 or 64"),
            ("splitk sm90 splits=4", "`sm90 bn=B`, not `sm90`"),
            ("splitk mma splits=1", "2 to 256"),
            ("splitk mma splits=257", "2 to 256"),
            ("skinny rows=3 splits=2", "1, 2, 4, 8 or 16"),
            ("skinny rows=4 splits=x", "not a number"),
            ("gemv cols=12", "8, 16, 32 or 64"),
            ("sm90 bn=32 tail splits=4", "256, 192, 128 or 64"),
            ("sm90 bn=128 tail splits=1", "2 to 256"),
            ("cublas", "unknown kernel"),
        ] {
            let e = bad.parse::<Kernel>().unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
