//! The fused epilogue of the GEMM kernels (cuBLASLt's `BIAS`, `RELU`, `GELU` and their `_BIAS`
//! forms): `C = act(alpha * op(A) * op(B) + beta * C + bias)`, applied in the GEMM's store rather
//! than in a second pass over C.
//!
//! The bias holds one value per column of the row-major C (per row of cuBLAS's column-major C)
//! in C's element type; batch entry z reads it from `z * stride`. With `beta == 0` (the usual
//! case) the kernels apply the epilogue to the accumulators before their store; with `beta != 0`
//! C must be read first, so the GEMM runs plain and `gemm_epilogue_<type>` makes one more pass.

use std::mem::size_of;
use std::sync::Arc;

use super::{Element, Gemm, BLOCK};
use crate::driver::{CudaStream, CudaView, LaunchConfig};
use crate::error::Result;
use crate::kernels::grid::GRID_YZ_MAX;
use crate::kernels::{launch, Kernels};
use crate::spec::activations::Activation;

/// The activation applied after the bias.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FusedActivation {
    /// None: the bias alone (or nothing).
    #[default]
    Identity,
    /// `max(x, 0)` (NaN gives 0, as the ReLU kernel).
    Relu,
    /// GELU, tanh form: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, as cuBLASLt and the
    /// GELU kernel.
    Gelu,
}

impl FusedActivation {
    /// The kernels' `act` argument (`EPI_*` in cuda/gemm_common.cuh).
    pub(crate) fn code(self) -> i32 {
        match self {
            FusedActivation::Identity => 0,
            FusedActivation::Relu => 1,
            FusedActivation::Gelu => 2,
        }
    }

    /// The same function as an [`Activation`] (for the CPU fallback), `None` for the identity.
    pub fn as_activation(self) -> Option<Activation> {
        match self {
            FusedActivation::Identity => None,
            FusedActivation::Relu => Some(Activation::Relu),
            FusedActivation::Gelu => Some(Activation::Gelu),
        }
    }
}

/// A bias on the device: `values[z * stride + j]` is added to column j of batch entry z.
#[derive(Debug, Clone, Copy)]
pub struct Bias<'v, T> {
    /// The values (at least `(batch - 1) * stride + n` of them).
    pub values: &'v CudaView<'v, T>,
    /// Elements between the bias vectors of consecutive batch entries (0: one for all).
    pub stride: usize,
}

/// The epilogue on a raw device address (for [`super::gemm_raw_with_epilogue`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RawEpilogue {
    /// Device address of the bias (C's element type), if any.
    pub bias: Option<u64>,
    /// Elements between the bias vectors of consecutive batch entries.
    pub bias_stride: usize,
    /// The activation.
    pub act: FusedActivation,
}

impl RawEpilogue {
    /// `true` when the store does more than `alpha * acc + beta * C`.
    pub(crate) fn is_active(&self) -> bool {
        self.bias.is_some() || self.act != FusedActivation::Identity
    }

    /// The kernels' trailing arguments `(bias, biasStride, act)` for batch entries from `z0` on
    /// (`elem` bytes per bias element).
    pub(crate) fn args_from(&self, z0: usize, elem: usize) -> (u64, i64, i32) {
        match self.bias {
            Some(base) => {
                (base + (z0 * self.bias_stride * elem) as u64, self.bias_stride as i64, self.act.code())
            }
            None => (0, 0, self.act.code()),
        }
    }
}

/// `C = epilogue(C)` on the m x n block of every batch entry (`gemm_epilogue_<out>`).
///
/// # Safety
/// `c` holds the validated C of `g`; the epilogue's bias covers every entry.
pub(super) unsafe fn pass<TOut: Element>(
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
        unsafe { launch!(stream, &function, cfg, [&m, &n, &c, &ldc, &stride_c, &bias, &bias_stride, &act]) }?;
    }
    Ok(())
}
