//! Which kernel runs a GEMM: decided from the device (compute capability, multiprocessors, whether
//! the sm_90a module loads), the precision, the operands' alignment and the shape. Pure logic, so
//! the rules are tested without a GPU; notes/gemm.md has the measurements behind them.

use super::spec::{Gemm, Precision};

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
}

/// Whether each operand, as given, can be read through a TMA tensor map: 16-byte aligned base,
/// leading dimension and batch stride in bytes multiples of 16, stride nonzero and at least one
/// whole matrix when batched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TmaReady {
    /// A qualifies.
    pub a: bool,
    /// B qualifies.
    pub b: bool,
}

/// The kernel family (and its options) chosen for one GEMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// `gemm_small_*`: one output per thread, for tiny problems.
    Small,
    /// `gemm_simt_*`: CUDA cores on 128 x 256 tiles (exact fp32, or the 16-bit fallback without
    /// tensor cores).
    Simt,
    /// `gemm_simt64_f32_f32`: exact fp32 on 64 x 128 tiles, for grids that 128 x 256 tiles leave
    /// under about a wave.
    Simt64,
    /// `gemm_mma_*`: mma.sync tensor cores (sm_80+).
    Mma,
    /// `gemm_sm90_*`: TMA + wgmma (sm_90a), tile width `bn`. For TF32, `stage_a` / `stage_b`
    /// transpose that operand into a K-major workspace first (the TF32 kernel is `nt` only).
    Sm90 {
        /// Output tile width: 256, 128 or 64.
        bn: u32,
        /// Transpose A (stored k x m) into an m x k workspace first.
        stage_a: bool,
        /// Transpose B (stored k x n) into an n x k workspace first.
        stage_b: bool,
    },
}

/// Problems at most this large (m·n·k) go to the small kernel.
const SMALL_VOLUME: u128 = 1 << 18;
/// ... and so do those with at most this many outputs (m·n).
const SMALL_OUTPUTS: u128 = 4096;
/// Rows of the 128-row tiles of every tiled kernel.
pub const TILE_M: usize = 128;
/// Columns of the `gemm_simt_*` tiles.
pub const SIMT_TILE_N: usize = 256;
/// Largest grid.y / grid.z of a launch.
pub const GRID_YZ_MAX: usize = 65_535;
/// The transpose kernel's tile edge (its grid.y covers rows / 32).
const TRANSPOSE_TILE: usize = 32;

/// Picks the kernel for `g` at `precision` (already resolved for the element types).
pub fn plan(g: &Gemm, precision: Precision, device: &Device, tma: TmaReady) -> Plan {
    let (m, n, k) = (g.m as u128, g.n as u128, g.k as u128);
    if m * n <= SMALL_OUTPUTS || m * n * k <= SMALL_VOLUME {
        return Plan::Small;
    }
    let tensor_cores = device.capability.0 >= 8;
    match precision {
        Precision::F32 => {
            // The 128 x 256 tiles (one block per multiprocessor) need about a wave of them: 2048^2
            // (128 tiles on 132 SMs) runs 1.1x faster on them than on 64 x 128 tiles, 1024^2 (32
            // tiles) 3x slower (notes/gemm.md).
            let tiles = g.m.div_ceil(TILE_M) as u128 * g.n.div_ceil(SIMT_TILE_N) as u128 * g.batch as u128;
            if tiles * 10 >= u128::from(device.multiprocessors) * 9 {
                Plan::Simt
            } else {
                Plan::Simt64
            }
        }
        _ if !tensor_cores => Plan::Simt,
        Precision::Bf16 | Precision::F16 if device.sm90 && tma.a && tma.b => {
            Plan::Sm90 { bn: tile_width(g, device.multiprocessors), stage_a: false, stage_b: false }
        }
        Precision::Tf32 if device.sm90 => {
            // K-major operands are read in place (and must qualify for TMA); MN-major ones are
            // transposed into an aligned workspace, which the transpose grid must cover.
            let (stage_a, stage_b) = (g.trans_a, !g.trans_b);
            let in_place_ok = (stage_a || tma.a) && (stage_b || tma.b);
            let transposable = g.k <= GRID_YZ_MAX * TRANSPOSE_TILE;
            if in_place_ok && (transposable || !(stage_a || stage_b)) {
                Plan::Sm90 { bn: tile_width(g, device.multiprocessors), stage_a, stage_b }
            } else {
                Plan::Mma
            }
        }
        _ => Plan::Mma,
    }
}

/// The sm90 tile width: the widest of 256 and 128 that still gives at least 0.9 tiles per
/// multiprocessor (and is not wider than n needs), else 64.
fn tile_width(g: &Gemm, multiprocessors: u32) -> u32 {
    let tiles = |bn: usize| g.m.div_ceil(TILE_M) as u128 * g.n.div_ceil(bn) as u128 * g.batch as u128;
    let enough = |bn: usize| tiles(bn) * 10 >= u128::from(multiprocessors) * 9;
    [256, 128].into_iter().find(|&bn| g.n > bn / 2 && enough(bn)).unwrap_or(64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100: Device = Device { capability: (9, 0), multiprocessors: 132, sm90: true };
    const A100: Device = Device { capability: (8, 0), multiprocessors: 108, sm90: false };
    const ALIGNED: TmaReady = TmaReady { a: true, b: true };

    fn sm90(bn: u32, stage_a: bool, stage_b: bool) -> Plan {
        Plan::Sm90 { bn, stage_a, stage_b }
    }

    #[test]
    fn tiny_problems_use_the_small_kernel() {
        for p in [Precision::F32, Precision::Tf32, Precision::Bf16] {
            assert_eq!(plan(&Gemm::new(1, 1, 1), p, &H100, ALIGNED), Plan::Small);
            assert_eq!(plan(&Gemm::new(64, 64, 8192), p, &H100, ALIGNED), Plan::Small);
            assert_eq!(plan(&Gemm::new(64, 64, 64), p, &H100, ALIGNED), Plan::Small);
        }
        assert_ne!(plan(&Gemm::new(65, 65, 65), Precision::F32, &H100, ALIGNED), Plan::Small);
    }

    #[test]
    fn exact_f32_always_uses_the_cuda_cores() {
        assert_eq!(plan(&Gemm::new(4096, 4096, 4096), Precision::F32, &H100, ALIGNED), Plan::Simt);
        assert_eq!(plan(&Gemm::new(4096, 4096, 4096), Precision::F32, &A100, ALIGNED), Plan::Simt);
    }

    #[test]
    fn exact_f32_grids_under_about_a_wave_use_64_row_tiles() {
        let f32 = |g: Gemm| plan(&g, Precision::F32, &H100, ALIGNED);
        assert_eq!(f32(Gemm::new(1024, 1024, 1024)), Plan::Simt64); // 8 x 4 = 32 tiles
        assert_eq!(f32(Gemm::new(64, 8192, 8192)), Plan::Simt64);
        assert_eq!(f32(Gemm::new(1920, 1792, 64)), Plan::Simt64); // 15 x 7 = 105 < 0.9 x 132
        assert_eq!(f32(Gemm::new(1920, 2048, 64)), Plan::Simt); // 15 x 8 = 120
        assert_eq!(f32(Gemm::new(2048, 2048, 2048)), Plan::Simt); // 16 x 8 = 128 tiles
        assert_eq!(f32(Gemm::new(1024, 1024, 1024).batched(4, 0, 0, 1 << 20)), Plan::Simt);
    }

    #[test]
    fn sixteen_bit_on_hopper_uses_tma_when_aligned_else_mma() {
        let g = Gemm::new(4096, 4096, 4096);
        assert_eq!(plan(&g, Precision::Bf16, &H100, ALIGNED), sm90(256, false, false));
        assert_eq!(plan(&g, Precision::F16, &H100, TmaReady { a: true, b: false }), Plan::Mma);
        assert_eq!(plan(&g, Precision::F16, &A100, ALIGNED), Plan::Mma);
        let failed = Device { sm90: false, ..H100 };
        assert_eq!(plan(&g, Precision::Bf16, &failed, ALIGNED), Plan::Mma);
        let volta = Device { capability: (7, 0), multiprocessors: 80, sm90: false };
        assert_eq!(plan(&g, Precision::Bf16, &volta, ALIGNED), Plan::Simt);
    }

    #[test]
    fn tile_width_follows_the_measured_rule() {
        let bf = |m, n, k| plan(&Gemm::new(m, n, k), Precision::Bf16, &H100, ALIGNED);
        assert_eq!(bf(1024, 1024, 1024), sm90(64, false, false)); // 64 tiles of 128x128: too few
        assert_eq!(bf(2048, 2048, 2048), sm90(256, false, false)); // 128 tiles of 128x256
        assert_eq!(bf(64, 8192, 8192), sm90(64, false, false));
        assert_eq!(bf(1000, 1000, 1000), sm90(64, false, false));
        assert_eq!(bf(16384, 100, 1000), sm90(128, false, false)); // n too narrow for 256
        assert_eq!(bf(100_000, 64, 64), sm90(64, false, false));
        let batched = Gemm::new(1024, 1024, 1024).batched(4, 0, 0, 1 << 20);
        assert_eq!(plan(&batched, Precision::Bf16, &H100, ALIGNED), sm90(256, false, false));
    }

    #[test]
    fn tf32_on_hopper_stages_mn_major_operands() {
        let g = Gemm::new(2048, 2048, 2048);
        assert_eq!(plan(&g, Precision::Tf32, &H100, ALIGNED), sm90(256, false, true));
        assert_eq!(
            plan(&g.transposed(false, true), Precision::Tf32, &H100, ALIGNED),
            sm90(256, false, false)
        );
        assert_eq!(plan(&g.transposed(true, false), Precision::Tf32, &H100, ALIGNED), sm90(256, true, true));
        // A staged, B read in place: only B's alignment matters.
        let tt = g.transposed(true, true);
        assert_eq!(plan(&tt, Precision::Tf32, &H100, TmaReady { a: false, b: true }), sm90(256, true, false));
        assert_eq!(plan(&tt, Precision::Tf32, &H100, TmaReady { a: true, b: false }), Plan::Mma);
        assert_eq!(plan(&g, Precision::Tf32, &A100, ALIGNED), Plan::Mma);
        let deep = Gemm::new(128, 128, 3_000_000);
        assert_eq!(plan(&deep, Precision::Tf32, &H100, ALIGNED), Plan::Mma);
    }
}
