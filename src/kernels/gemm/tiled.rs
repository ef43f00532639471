//! The kernels that share the common argument list (notes/gemm.md): `gemm_small_*` (one output per
//! thread, 16 x 16 tiles), `gemm_simt_*` / `gemm_simt64_f32_f32` / `gemm_simt64x64_f32_f32` /
//! `gemm_simt32_f32_f32` (CUDA cores) and `gemm_mma_*` (mma.sync tensor cores), launched over the
//! whole problem in batches and row blocks within the grid's limits. Split-K runs them on slices
//! of k ([`super::split`]).

use std::mem::size_of;
use std::sync::Arc;

use super::plan::Family;
use super::{function_with_smem, Element, Gemm, Precision, RawEpilogue};
use crate::driver::{CudaFunction, CudaStream, DeviceRepr, LaunchConfig};
use crate::error::Result;
use crate::kernels::{launch, Kernels};

/// The entry point of `family` for these element types at `precision`.
pub(super) fn entry<TIn: Element, TOut: Element>(family: Family, precision: Precision) -> String {
    match family {
        Family::Small => format!("gemm_small_{}_{}", TIn::NAME, TOut::NAME),
        Family::Simt => format!("gemm_simt_{}_{}", TIn::NAME, TOut::NAME),
        Family::Simt64 => format!("gemm_simt64_{}_{}", TIn::NAME, TOut::NAME),
        Family::Simt64x64 => format!("gemm_simt64x64_{}_{}", TIn::NAME, TOut::NAME),
        Family::Simt32 => format!("gemm_simt32_{}_{}", TIn::NAME, TOut::NAME),
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
/// it): batches of at most 65 535 (grid.z) and row blocks within grid.y's limit. `padded`: A or B
/// is a copy whose rows are padded to whole 16-byte groups inside the workspace
/// ([`super::copies::PaddedF32`]), which the family's `_padded` entry reads.
///
/// # Safety
/// `g` has passed `validate` and the addresses hold what it describes (as for
/// [`super::gemm_raw_with_epilogue`]); the plan that chose `family` was resolved for `g` and
/// `precision`; with `padded`, the operands are as [`super::copies::Padded`] describes them.
#[allow(clippy::too_many_arguments)] // the GEMM's operands, its family, the epilogue and the padding
pub(super) unsafe fn launch<TIn: Element, TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    family: Family,
    precision: Precision,
    g: &Gemm,
    operands: [u64; 3],
    padded: [bool; 2],
    epilogue: &RawEpilogue,
) -> Result<()> {
    let mut name = entry::<TIn, TOut>(family, precision);
    if padded.contains(&true) {
        name.push_str("_padded");
    }
    debug_assert!(family.fuses_epilogue() || !epilogue.is_active(), "{name} stores plainly");
    let function = function_with_smem(kernels, &name, family.smem())?;
    let kernel = CommonKernel {
        function: &function,
        tile: family.tile(),
        threads: family.threads(),
        smem: family.smem(),
        flags: true,
    };
    let sizes = [size_of::<TIn>(), size_of::<TOut>()];
    // SAFETY: the entry exists for these types at this precision (the plan was resolved for them)
    // and takes the common list with the transpose flags, the epilogue's three only for the family
    // that fuses it; the operands are the caller's obligations.
    unsafe {
        launch_common(
            stream,
            &kernel,
            g,
            (g.alpha, g.beta),
            operands,
            sizes,
            family.fuses_epilogue().then_some(epilogue),
        )
    }
}

/// A kernel that takes the common argument list (notes/gemm.md): `(m, n, k, alpha, A, lda,
/// strideA, [transA], B, ldb, strideB, [transB], beta, C, ldc, strideC, [bias, biasStride, act])`.
pub(super) struct CommonKernel<'f> {
    /// The entry point.
    pub function: &'f CudaFunction,
    /// Its output tile, rows and columns (one block each).
    pub tile: (usize, usize),
    /// Threads per block.
    pub threads: u32,
    /// Its dynamic shared memory.
    pub smem: u32,
    /// Whether it takes the transpose flags (kernels with the layout in their name do not).
    pub flags: bool,
}

/// Launches `kernel` over `g` with the scales `(alpha, beta)` in the kernel's type, whose operands
/// are at device addresses `[A, B, C]` of elements `[input, output]` bytes long: batches of at most
/// 65 535 (grid.z) and row blocks within grid.y's limit, with the epilogue's three arguments when
/// it is given (for a kernel that takes them).
///
/// # Safety
/// `kernel` takes the common list with these scales (and the epilogue's arguments exactly when
/// `epilogue` is given); `g` has passed `validate` and the addresses hold what it describes, the
/// epilogue's bias its every entry.
pub(super) unsafe fn launch_common<S: DeviceRepr>(
    stream: &Arc<CudaStream>,
    kernel: &CommonKernel<'_>,
    g: &Gemm,
    (alpha, beta): (S, S),
    [pa, pb, pc]: [u64; 3],
    [es_in, es_out]: [usize; 2],
    epilogue: Option<&RawEpilogue>,
) -> Result<()> {
    let (tile_rows, tile_cols) = kernel.tile;
    let (n, k, lda, ldb, ldc) = (g.n as i32, g.k as i32, g.lda as i32, g.ldb as i32, g.ldc as i32);
    let (stride_a, stride_b, stride_c) = (g.stride_a as i64, g.stride_b as i64, g.stride_c as i64);
    let (trans_a, trans_b) = (i32::from(g.trans_a), i32::from(g.trans_b));
    for chunk in g.launch_chunks(tile_rows) {
        let a = pa + (chunk.a * es_in) as u64;
        let b = pb + (chunk.b * es_in) as u64;
        let c = pc + (chunk.c * es_out) as u64;
        let (bias, bias_stride, act) = epilogue.map_or((0, 0, 0), |e| e.args_from(chunk.z0, es_out));
        let m = chunk.rows as i32;
        let cfg = LaunchConfig {
            grid_dim: (
                g.n.div_ceil(tile_cols) as u32,
                chunk.rows.div_ceil(tile_rows) as u32,
                chunk.entries as u32,
            ),
            block_dim: (kernel.threads, 1, 1),
            shared_mem_bytes: kernel.smem,
        };
        // SAFETY: the argument list is the kernel's (the caller's obligation). `validate` checked
        // that A, B and C hold every element the `batch x m x n x k` problem touches with these
        // leading dimensions and strides (and the bias its entries); this launch covers the
        // chunk's batch entries and rows of that problem, with A, B, C and the bias advanced to
        // them.
        unsafe {
            launch!(
                stream,
                kernel.function,
                cfg,
                [&m, &n, &k, &alpha, &a, &lda, &stride_a],
                [&trans_a] if kernel.flags,
                [&b, &ldb, &stride_b],
                [&trans_b] if kernel.flags,
                [&beta, &c, &ldc, &stride_c],
                [&bias, &bias_stride, &act] if epilogue.is_some(),
            )
        }?;
    }
    Ok(())
}
