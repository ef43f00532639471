//! The kernels that share the common argument list (notes/gemm.md): `gemm_small_*` (one output per
//! thread, 16 x 16 tiles), `gemm_simt_*` / `gemm_simt64_f32_f32` (CUDA cores) and `gemm_mma_*`
//! (mma.sync tensor cores), launched over the whole problem in batches and row blocks within the
//! grid's limits. Split-K runs them on slices of k ([`super::split`]).

use std::mem::size_of;
use std::sync::Arc;

use super::plan::Family;
use super::{function_with_smem, Element, Gemm, Precision, RawEpilogue, BLOCK};
use crate::driver::{CudaStream, LaunchConfig, PushKernelArg};
use crate::error::Result;
use crate::kernels::Kernels;

/// The entry point of `family` for these element types at `precision`.
pub(super) fn entry<TIn: Element, TOut: Element>(family: Family, precision: Precision) -> String {
    match family {
        Family::Small => format!("gemm_small_{}_{}", TIn::NAME, TOut::NAME),
        Family::Simt => format!("gemm_simt_{}_{}", TIn::NAME, TOut::NAME),
        Family::Simt64 => format!("gemm_simt64_{}_{}", TIn::NAME, TOut::NAME),
        Family::Mma => format!("gemm_mma_{}_{}", input_name::<TIn>(precision), TOut::NAME),
    }
}

/// The tensor-core input name: `tf32` for f32 data.
pub(super) fn input_name<TIn: Element>(precision: Precision) -> &'static str {
    if precision == Precision::Tf32 {
        "tf32"
    } else {
        TIn::NAME
    }
}

/// Launches `family`'s kernel for `TIn` -> `TOut` at `precision` over `g`, whose operands are at
/// device addresses `[A, B, C]`, with `epilogue` in its stores (inactive unless the family fuses
/// it): batches of at most 65 535 (grid.z) and row blocks within grid.y's limit.
///
/// # Safety
/// `g` has passed `validate` and the addresses hold what it describes (as for
/// [`super::gemm_raw_with_epilogue`]); the plan that chose `family` was resolved for `g` and
/// `precision`.
#[allow(clippy::too_many_arguments)] // the GEMM's operands, its family and the epilogue
pub(super) unsafe fn launch<TIn: Element, TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    family: Family,
    precision: Precision,
    g: &Gemm,
    [pa, pb, pc]: [u64; 3],
    epilogue: &RawEpilogue,
) -> Result<()> {
    let name = entry::<TIn, TOut>(family, precision);
    debug_assert!(family.fuses_epilogue() || !epilogue.is_active(), "{name} stores plainly");
    let ((tile_rows, tile_cols), smem) = (family.tile(), family.smem());
    let function = function_with_smem(kernels, &name, smem)?;
    let (es_in, es_out) = (size_of::<TIn>(), size_of::<TOut>());
    let (n, k, lda, ldb, ldc) = (g.n as i32, g.k as i32, g.lda as i32, g.ldb as i32, g.ldc as i32);
    let (stride_a, stride_b, stride_c) = (g.stride_a as i64, g.stride_b as i64, g.stride_c as i64);
    let (trans_a, trans_b) = (i32::from(g.trans_a), i32::from(g.trans_b));
    for chunk in g.launch_chunks(tile_rows) {
        let a = pa + (chunk.a * es_in) as u64;
        let b = pb + (chunk.b * es_in) as u64;
        let c = pc + (chunk.c * es_out) as u64;
        let (bias, bias_stride, act) = epilogue.args_from(chunk.z0, es_out);
        let m = chunk.rows as i32;
        let cfg = LaunchConfig {
            grid_dim: (
                g.n.div_ceil(tile_cols) as u32,
                chunk.rows.div_ceil(tile_rows) as u32,
                chunk.entries as u32,
            ),
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
        // epilogue's three only for the family that fuses it; the entry exists for these types
        // at this precision (the plan was resolved for them). `validate` checked that A, B and
        // C hold every element the `batch x m x n x k` problem touches with these leading
        // dimensions and strides (and the bias its entries); this launch covers the
        // chunk's batch entries and rows of that problem, with A, B, C and the bias advanced to
        // them.
        unsafe { launch.launch(cfg) }?;
    }
    Ok(())
}
