//! Matrix-vector products on host slices.

use super::ProductionGpuRuntime;
use crate::error::Result;
use crate::ops::gemv::{self, Gemv};
use crate::ops::shape;
use crate::ops::Update;

impl ProductionGpuRuntime {
    fn gemv_any(&self, op: gemv::Product, a: &[f32], x: &[f32], y: &[f32]) -> Result<Vec<f32>> {
        let (out_len, inner) = op.out_and_inner();
        let unread = op.dims.beta == 0.0;
        op.check(if unread && y.is_empty() { out_len } else { y.len() }, [a.len(), x.len()])?;
        let mut out = if unread { shape::zeroed(op.name(), "y", out_len)? } else { y.to_vec() };
        if inner == 0 {
            // Nothing to multiply: beta * y (or zeros), without a launch.
            op.cpu(&mut out, [a, x]);
        } else {
            self.update(op, &mut out, [a, x])?;
        }
        Ok(out)
    }

    /// `alpha * A x + beta * y`, `A` row-major `[m, n]` with leading dimension `lda`, `x` of `n`,
    /// `y` of `m` (may be empty when `beta == 0`; not read then). GPU: f32 dot products; within
    /// 1e-5 of the f64 reference relative to `sum |alpha a_ij x_j| + |beta y_i|`.
    pub fn gemv(&self, dims: Gemv, a: &[f32], x: &[f32], y: &[f32]) -> Result<Vec<f32>> {
        self.gemv_any(gemv::Product { dims, transposed: false }, a, x, y)
    }

    /// `alpha * Aᵀ x + beta * y`, `x` of `m`, `y` of `n`; deterministic; tolerance as [`gemv`](Self::gemv).
    pub fn gemv_t(&self, dims: Gemv, a: &[f32], x: &[f32], y: &[f32]) -> Result<Vec<f32>> {
        self.gemv_any(gemv::Product { dims, transposed: true }, a, x, y)
    }
}
