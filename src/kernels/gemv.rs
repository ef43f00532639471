//! Typed launchers for `cuda/gemv.cu`: `y = alpha * A x + beta * y` and `y = alpha * Aᵀ x + beta *
//! y` in f32, `A` row-major `[m, n]` with leading dimension `lda >= n`. With `beta == 0`, `y` is
//! not read (BLAS convention), so it may hold anything, NaN included.

use std::sync::Arc;

use crate::driver::{CudaStream, CudaView, CudaViewMut, LaunchConfig};
use crate::error::Result;
use crate::kernels::{args, grid, launch, Kernels};

/// Warps (rows) per block of the row-per-warp kernel.
const ROWS_PER_BLOCK: usize = 8;
/// Columns one block of the transposed kernel covers (32 lanes x 4).
const COLUMNS_PER_BLOCK: usize = 128;
/// Fewest rows worth a split of the transposed kernel.
const MIN_ROWS_PER_SPLIT: usize = 64;

use crate::spec::gemv::Gemv;

/// The dimensions as the kernels' `int`s.
fn ints(dims: &Gemv, op: &'static str) -> Result<(i32, i32, i32)> {
    Ok((args::int(op, "m", dims.m)?, args::int(op, "n", dims.n)?, args::int(op, "lda", dims.lda)?))
}

/// `y = alpha * A x + beta * y`: `x` of `n`, `y` of `m`.
pub fn gemv(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    dims: Gemv,
    a: &CudaView<f32>,
    x: &CudaView<f32>,
    y: &mut CudaViewMut<f32>,
) -> Result<()> {
    const OP: &str = "prism_gemv_f32";
    dims.check(OP, a.len(), x.len(), y.len(), false)?;
    if dims.m == 0 {
        return Ok(());
    }
    let (m, n, lda) = ints(&dims, OP)?;
    let cfg = LaunchConfig {
        grid_dim: (dims.m.div_ceil(ROWS_PER_BLOCK) as u32, 1, 1),
        block_dim: (32 * ROWS_PER_BLOCK as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: A holds (m - 1) * lda + n elements, x n, y m (checked above); y is read only when
    // beta != 0.
    unsafe { launch!(kernels, stream, OP, cfg, [a, x, y, &m, &n, &lda, &dims.alpha, &dims.beta]) }
}

/// Row splits of the transposed kernel for `[m, n]`: `(splits, rows_per_split)`, enough blocks to
/// fill the device, each split at least 64 rows.
pub(crate) fn transposed_splits(m: usize, n: usize, multiprocessors: u32) -> (usize, usize) {
    let strips = n.div_ceil(COLUMNS_PER_BLOCK).max(1);
    let wanted = (8 * multiprocessors as usize).div_ceil(strips);
    let splits = wanted.clamp(1, m.div_ceil(MIN_ROWS_PER_SPLIT).max(1));
    let rows_per_split = m.div_ceil(splits).max(1);
    (m.div_ceil(rows_per_split).max(1), rows_per_split)
}

/// `y = alpha * Aᵀ x + beta * y`: `x` of `m`, `y` of `n`. Deterministic (fixed split order).
pub fn gemv_t(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    dims: Gemv,
    a: &CudaView<f32>,
    x: &CudaView<f32>,
    y: &mut CudaViewMut<f32>,
) -> Result<()> {
    const OP: &str = "prism_gemv_t_f32";
    dims.check(OP, a.len(), x.len(), y.len(), true)?;
    if dims.n == 0 {
        return Ok(());
    }
    let (m, n, lda) = ints(&dims, OP)?;
    let (splits, rows_per_split) = transposed_splits(dims.m, dims.n, kernels.multiprocessors());
    const FINALIZE: &str = "prism_gemv_t_finalize_f32";
    let finalize_cfg = grid::elementwise(dims.n, grid::Step::Scalar);
    if dims.m == 0 {
        // No rows: y = beta * y (or zeros), with no partials to add.
        let none = 0i32;
        // SAFETY: splits = 0, so the partial pointer is not read; y holds n elements.
        return unsafe {
            launch!(
                kernels,
                stream,
                FINALIZE,
                finalize_cfg,
                [&args::NULL, y, &n, &none, &dims.alpha, &dims.beta]
            )
        };
    }
    // SAFETY: every (split, column) pair is written by the partial kernel before it is read.
    let mut partials = unsafe { stream.alloc::<f32>(splits * dims.n) }?;
    let (splits_i, rps) = (splits as i32, rows_per_split as i32);
    let cfg = LaunchConfig {
        grid_dim: (dims.n.div_ceil(COLUMNS_PER_BLOCK) as u32, splits as u32, 1),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: A holds (m - 1) * lda + n elements and x m (checked above); partials holds splits * n.
    unsafe {
        launch!(kernels, stream, "prism_gemv_t_partial_f32", cfg, [a, x, &mut partials, &m, &n, &lda, &rps])
    }?;
    // SAFETY: reads splits * n partials, writes n elements of y (reads them when beta != 0).
    unsafe {
        launch!(
            kernels,
            stream,
            FINALIZE,
            finalize_cfg,
            [&partials, y, &n, &splits_i, &dims.alpha, &dims.beta]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked() {
        let d = Gemv { m: 3, n: 4, lda: 5, alpha: 1.0, beta: 0.0 };
        assert!(d.check("gemv", 14, 4, 3, false).is_ok());
        assert!(d.check("gemv", 13, 4, 3, false).is_err());
        assert!(d.check("gemv", 14, 3, 4, true).is_ok());
        assert!(d.check("gemv", 14, 4, 4, false).is_err());
        let err = Gemv { lda: 3, ..d }.check("gemv", 100, 4, 3, false).unwrap_err().to_string();
        assert_eq!(err, "gemv: expected lda >= max(n, 1) = 4, got lda = 3");
        assert!(Gemv::dense(0, 5).check("gemv", 0, 5, 0, false).is_ok());
    }

    #[test]
    fn transposed_splits_cover_every_row() {
        for (m, n) in [(1, 1), (63, 5), (1000, 257), (16_384, 16_384), (100_000, 3)] {
            let (s, rps) = transposed_splits(m, n, 132);
            assert!(s * rps >= m && (s - 1) * rps < m, "{m} {n}: {s} x {rps}");
            assert!(s <= 65_535);
        }
        assert_eq!(transposed_splits(16_384, 16_384, 132), (9, 1821));
    }
}
