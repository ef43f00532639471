//! The safe layer: [`CudaBlasLT`], [`MatmulConfig`], [`Matmul`].

use core::ffi::c_int;
use std::sync::Arc;

use half::{bf16, f16};

use super::logger;
use super::result::CublasError;
use super::sys::{self, cublasComputeType_t, cublasStatus_t as Status, cudaDataType_t};
use crate::cublas::plan::ColMajor;
use crate::cublas::sys::cublasOperation_t as Op;
use crate::driver::{CudaStream, DevicePtr, DevicePtrMut, DriverError};
use crate::kernels::args::{self, CheckedPtr as _, CheckedPtrMut as _};
use crate::kernels::gemm::{self, Element, FusedActivation, Precision, RawEpilogue};
use crate::kernels::Kernels;

/// A cuBLASLt handle on this crate's kernels, ordered on one stream. Keeps the stream (and so
/// its context) alive.
#[derive(Debug)]
pub struct CudaBlasLT {
    handle: sys::cublasLtHandle_t,
    workspace: Workspace,
    stream: Arc<CudaStream>,
}

// SAFETY: the handle is this crate's own `cublasLtContext`, whose kernels cache is behind
// mutexes; nothing in it is tied to a thread.
unsafe impl Send for CudaBlasLT {}
// SAFETY: as above; `&self` methods only use the synchronised caches.
unsafe impl Sync for CudaBlasLT {}

impl CudaBlasLT {
    /// A handle whose work is ordered on `stream`.
    pub fn new(stream: Arc<CudaStream>) -> Result<Self, CublasError> {
        logger::log(logger::API, "cublasLtCreate", || format!("device={}", stream.context().ordinal()));
        let kernels = Kernels::new(stream.context().clone()).map_err(|e| {
            let e = CublasError::from(e);
            logger::log(logger::ERROR, "cublasLtCreate", || {
                format!("loading the built-in kernels failed: {e}")
            });
            e
        })?;
        let handle = Box::into_raw(Box::new(sys::cublasLtContext { kernels }));
        Ok(Self { handle, workspace: Workspace::default(), stream })
    }

    fn kernels(&self) -> &Kernels {
        // SAFETY: created in `new`, freed only in `drop`.
        unsafe { &(*self.handle).kernels }
    }
}

impl Drop for CudaBlasLT {
    fn drop(&mut self) {
        let handle = std::mem::replace(&mut self.handle, std::ptr::null_mut());
        if !handle.is_null() {
            logger::log(logger::API, "cublasLtDestroy", || format!("lightHandle={handle:p}"));
            // SAFETY: made by `Box::into_raw` in `new`, freed once, here.
            drop(unsafe { Box::from_raw(handle) });
        }
    }
}

/// The GEMM scratch of a handle (operands re-laid out for the tensor-core kernels, split-K
/// partial products). It grows to the largest request and is kept, instead of cuBLASLt's fixed
/// 32 MiB (Hopper) or 4 MiB buffer, which the built-in kernels do not need.
#[derive(Default)]
pub struct Workspace {
    scratch: gemm::Workspace,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace").finish_non_exhaustive()
    }
}

impl Workspace {
    /// An empty workspace for `stream`'s device (it allocates on first use).
    pub fn new(stream: Arc<CudaStream>) -> Result<Self, DriverError> {
        stream.context().bind_to_thread()?;
        Ok(Self::default())
    }
}

/// The activation fused into [`Matmul::matmul`]'s store.
#[derive(Debug, Clone)]
pub enum Activation {
    /// `max(x, 0)`.
    Relu,
    /// GELU, tanh form (as cuBLASLt's `CUBLASLT_EPILOGUE_GELU`).
    Gelu,
}

/// What [`Matmul`] needs of a handle.
pub trait MatmulShared {
    /// The handle.
    fn handle(&self) -> &sys::cublasLtHandle_t;
    /// Its GEMM scratch.
    fn workspace(&self) -> &Workspace;
    /// The stream its work is ordered on.
    fn stream(&self) -> &Arc<CudaStream>;
}

impl MatmulShared for CudaBlasLT {
    fn handle(&self) -> &sys::cublasLtHandle_t {
        &self.handle
    }
    fn workspace(&self) -> &Workspace {
        &self.workspace
    }
    fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}

/// One (optionally strided-batched) matmul, column-major:
/// `C[m x n] = act(alpha op(A) op(B) + beta C + bias)`.
#[derive(Debug, Copy, Clone)]
pub struct MatmulConfig {
    /// A is stored k x m (op(A) = Aᵀ).
    pub transa: bool,
    /// B is stored n x k.
    pub transb: bool,
    /// C transposed: not supported (`CUBLAS_STATUS_NOT_SUPPORTED`), as in cuBLASLt.
    pub transc: bool,
    /// Rows of op(A) and C.
    pub m: u64,
    /// Columns of op(B) and C.
    pub n: u64,
    /// Columns of op(A), rows of op(B).
    pub k: u64,
    /// Scale of the product.
    pub alpha: f32,
    /// Leading dimension of A.
    pub lda: i64,
    /// Leading dimension of B.
    pub ldb: i64,
    /// Scale of the old C (0: C is not read).
    pub beta: f32,
    /// Leading dimension of C.
    pub ldc: i64,
    /// Elements between A matrices (`None`: one A for every entry).
    pub stride_a: Option<i64>,
    /// Elements between B matrices (`None`: one B for every entry).
    pub stride_b: Option<i64>,
    /// Elements between C matrices (needed when `batch_size > 1`).
    pub stride_c: Option<i64>,
    /// Elements between bias vectors (`None`: one bias for every entry).
    pub stride_bias: Option<i64>,
    /// Entries (`None`: 1).
    pub batch_size: Option<c_int>,
}

/// Matrix multiplication with elements of type `T` (f32, f16, bf16).
pub trait Matmul<T>: MatmulShared {
    /// The cuBLASLt data type of `T`.
    fn matrix_type() -> sys::cudaDataType;

    /// The compute type cudarc asks for: `COMPUTE_32F_FAST_TF32` for f32, `COMPUTE_32F` for the
    /// 16-bit types.
    fn compute_type() -> sys::cublasComputeType_t;

    /// `C = act(alpha op(A) op(B) + beta C + bias)`, column-major, on the built-in kernels, with
    /// the bias and activation fused into the GEMM's store (a second pass over C only when
    /// `beta != 0`). f32 runs TF32 products; f16 and bf16 accumulate in f32.
    ///
    /// Differences from cuBLASLt: `transc` is refused (`CUBLAS_STATUS_NOT_SUPPORTED`), as
    /// cuBLASLt does; sizes beyond `i32::MAX` and negative strides are refused; with `beta != 0`
    /// and an epilogue, `alpha op(A) op(B) + beta C` is rounded to `T` before the bias and
    /// activation.
    ///
    /// # Safety
    /// `a`, `b`, `c` (and `bias`) must hold every element the configuration touches; nothing
    /// else may write them until the stream's work is done.
    unsafe fn matmul<I: DevicePtr<T>, O: DevicePtrMut<T>>(
        &self,
        cfg: MatmulConfig,
        a: &I,
        b: &I,
        c: &mut O,
        bias: Option<&I>,
        act: Option<&Activation>,
    ) -> Result<(), CublasError>;
}

/// [`Matmul::matmul`] for element type `T` at `precision`.
///
/// # Safety
/// As [`Matmul::matmul`].
unsafe fn matmul<T: Element, I: DevicePtr<T>, O: DevicePtrMut<T>>(
    handle: &CudaBlasLT,
    cfg: MatmulConfig,
    precision: Precision,
    [a, b]: [&I; 2],
    c: &mut O,
    bias: Option<&I>,
    act: Option<&Activation>,
) -> Result<(), CublasError> {
    let invalid = CublasError(Status::CUBLAS_STATUS_INVALID_VALUE);
    if cfg.transc {
        return Err(CublasError(Status::CUBLAS_STATUS_NOT_SUPPORTED));
    }
    let int = |v: u64| c_int::try_from(v).map_err(|_| invalid);
    let ld = |v: i64| c_int::try_from(v).map_err(|_| invalid);
    let batch = cfg.batch_size.unwrap_or(1);
    let op = |t: bool| if t { Op::CUBLAS_OP_T } else { Op::CUBLAS_OP_N };
    let problem = ColMajor {
        transa: op(cfg.transa),
        transb: op(cfg.transb),
        m: int(cfg.m)?,
        n: int(cfg.n)?,
        k: int(cfg.k)?,
        lda: ld(cfg.lda)?,
        ldb: ld(cfg.ldb)?,
        ldc: ld(cfg.ldc)?,
        stride_a: cfg.stride_a.unwrap_or(0),
        stride_b: cfg.stride_b.unwrap_or(0),
        stride_c: cfg.stride_c.unwrap_or(0),
        batch,
    };
    // The row-major problem is Cᵀ = op(B)ᵀ op(A)ᵀ: operands swapped, and C's rows (cuBLASLt's
    // bias index) are its columns.
    let Some(g) = problem.to_row_major(cfg.alpha, cfg.beta, precision).map_err(CublasError)? else {
        return Ok(());
    };
    let bias_stride = usize::try_from(cfg.stride_bias.unwrap_or(0)).map_err(|_| invalid)?;
    let stream = &handle.stream;
    // Unlike cuBLASLt, the lengths are checked (a short operand is an invalid value, not a
    // fault), and so is the context (a buffer of another device is an error).
    let (need_a, need_b, need_c) = g.min_lens().map_err(|_| invalid)?;
    if b.len() < need_a || a.len() < need_b || c.len() < need_c {
        return Err(invalid);
    }
    if let Some(bias) = bias {
        gemm::check_bias(&g, bias_stride, bias.len()).map_err(|_| invalid)?;
    }
    let (pa, _read_a) = a.checked_ptr(stream)?;
    let (pb, _read_b) = b.checked_ptr(stream)?;
    let (pc, _write_c) = c.checked_ptr_mut(stream)?;
    let (pbias, _read_bias) = args::input(bias, stream)?;
    let epilogue = RawEpilogue {
        bias: bias.map(|_| pbias),
        bias_stride,
        act: match act {
            None => FusedActivation::Identity,
            Some(Activation::Relu) => FusedActivation::Relu,
            Some(Activation::Gelu) => FusedActivation::Gelu,
        },
    };
    // SAFETY: the operand and bias lengths were checked against the problem above (the caller
    // vouches for raw pointers behind `DevicePtr`); the guards order them on `stream`.
    unsafe {
        gemm::gemm_raw_with_epilogue::<T, T>(
            handle.kernels(),
            stream,
            &handle.workspace.scratch,
            &g,
            [pb, pa, pc],
            &epilogue,
        )
    }
    .map_err(CublasError::from)
}

/// Logs a matmul call (API trace) and its parameters (trace).
fn log_matmul(cfg: &MatmulConfig, element: &str, bias: bool, act: Option<&Activation>) {
    logger::log(logger::API, "cublasLtMatmul", || format!("type={element}"));
    logger::log(logger::TRACE, "cublasLtMatmul", || {
        format!(
            "type={element} transa={} transb={} m={} n={} k={} alpha={} lda={} ldb={} beta={} ldc={} \
             stride_a={:?} stride_b={:?} stride_c={:?} stride_bias={:?} batch_size={:?} bias={bias} act={act:?}",
            cfg.transa,
            cfg.transb,
            cfg.m,
            cfg.n,
            cfg.k,
            cfg.alpha,
            cfg.lda,
            cfg.ldb,
            cfg.beta,
            cfg.ldc,
            cfg.stride_a,
            cfg.stride_b,
            cfg.stride_c,
            cfg.stride_bias,
            cfg.batch_size,
        )
    });
}

macro_rules! matmul_impl {
    ($t:ty, $data:ident, $compute:ident, $precision:expr) => {
        impl Matmul<$t> for CudaBlasLT {
            fn matrix_type() -> sys::cudaDataType {
                cudaDataType_t::$data
            }
            fn compute_type() -> sys::cublasComputeType_t {
                cublasComputeType_t::$compute
            }
            unsafe fn matmul<I: DevicePtr<$t>, O: DevicePtrMut<$t>>(
                &self,
                cfg: MatmulConfig,
                a: &I,
                b: &I,
                c: &mut O,
                bias: Option<&I>,
                act: Option<&Activation>,
            ) -> Result<(), CublasError> {
                log_matmul(&cfg, stringify!($t), bias.is_some(), act);
                // SAFETY: the caller's obligations, passed on.
                let result = unsafe { matmul::<$t, I, O>(self, cfg, $precision, [a, b], c, bias, act) };
                if let Err(e) = &result {
                    logger::log(logger::ERROR, "cublasLtMatmul", || format!("{e}"));
                }
                result
            }
        }
    };
}

matmul_impl!(f32, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, Precision::Tf32);
matmul_impl!(f16, CUDA_R_16F, CUBLAS_COMPUTE_32F, Precision::F16);
matmul_impl!(bf16, CUDA_R_16BF, CUBLAS_COMPUTE_32F, Precision::Bf16);
