//! cudarc 0.19's `cublas::result` functions on this crate's kernels: one function per cuBLAS
//! call, the same names and signatures, no libcublas. Column-major, as cuBLAS: each product is
//! run as the row-major `Cᵀ = op(B)ᵀ op(A)ᵀ` on the built-in GEMM kernels.
//!
//! A handle is bound to a stream (and so a context) by [`CudaBlas::new`](super::CudaBlas::new);
//! [`create_handle`] alone makes an unbound handle, on which computations return
//! `CUBLAS_STATUS_NOT_INITIALIZED` until [`set_stream`] gives it a stream of a context it knows.

use core::ffi::{c_int, c_longlong, c_void};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use half::{bf16, f16};

use super::plan::{self, ColMajor, Route, Scalar};
use super::sys::{self, cublasStatus_t as Status};
use crate::driver::{self, CudaStream};
use crate::error::Error;
use crate::kernels::asum::{self, AsumElement};
use crate::kernels::gemm::{self, double, Element, Gemm, Precision, Workspace};
use crate::kernels::{grid, launch, Kernels};

/// A cuBLAS status other than success.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CublasError(pub sys::cublasStatus_t);

impl sys::cublasStatus_t {
    /// `Ok` for `CUBLAS_STATUS_SUCCESS`, else the status as an error.
    pub fn result(self) -> Result<(), CublasError> {
        match self {
            sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(()),
            _ => Err(CublasError(self)),
        }
    }
}

impl std::fmt::Display for CublasError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for CublasError {}

fn status(s: Status) -> CublasError {
    CublasError(s)
}

/// This crate's cuBLAS handle (what [`sys::cublasHandle_t`] points at): the stream work is
/// ordered on, the built-in kernels and GEMM scratch of its context, the pointer mode.
#[allow(non_camel_case_types)] // cuBLAS's name for the handle's target
pub struct cublasContext {
    bound: Mutex<Option<Bound>>,
    pointer_mode: AtomicU32,
}

impl std::fmt::Debug for cublasContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("cublasContext").field("pointer_mode", &self.pointer_mode()).finish_non_exhaustive()
    }
}

/// The kernels and GEMM scratch of one context.
struct Engine {
    kernels: Kernels,
    workspace: Workspace,
}

#[derive(Clone)]
struct Bound {
    stream: Arc<CudaStream>,
    engine: Arc<Engine>,
}

impl cublasContext {
    fn pointer_mode(&self) -> sys::cublasPointerMode_t {
        match self.pointer_mode.load(Ordering::Relaxed) {
            1 => sys::cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE,
            _ => sys::cublasPointerMode_t::CUBLAS_POINTER_MODE_HOST,
        }
    }

    fn bound(&self) -> Result<Bound, CublasError> {
        let bound = self.bound.lock().unwrap_or_else(|e| e.into_inner());
        bound.clone().ok_or(status(Status::CUBLAS_STATUS_NOT_INITIALIZED))
    }

    /// Orders this handle's work on `stream`; the kernels are kept while the context stays.
    pub(crate) fn bind(&self, stream: Arc<CudaStream>) -> Result<(), CublasError> {
        let mut bound = self.bound.lock().unwrap_or_else(|e| e.into_inner());
        let engine = match bound.as_ref() {
            Some(b) if Arc::ptr_eq(b.stream.context(), stream.context()) => b.engine.clone(),
            _ => Arc::new(Engine {
                kernels: Kernels::new(stream.context().clone()).map_err(to_status)?,
                workspace: Workspace::default(),
            }),
        };
        *bound = Some(Bound { stream, engine });
        Ok(())
    }
}

/// The handle behind `handle`.
///
/// # Safety
/// `handle` is null or came from [`create_handle`] and was not destroyed.
unsafe fn context<'a>(handle: sys::cublasHandle_t) -> Result<&'a cublasContext, CublasError> {
    // SAFETY: the caller's obligation.
    unsafe { handle.as_ref() }.ok_or(status(Status::CUBLAS_STATUS_NOT_INITIALIZED))
}

/// How an error of the engine reads as a cuBLAS status.
fn to_status(e: Error) -> CublasError {
    status(status_of(e))
}

/// The cuBLAS status of an engine error (shared with the cublaslt module): a shape error is an
/// invalid value, running out of device memory an allocation failure, anything else a failed
/// execution.
pub(crate) fn status_of(e: Error) -> Status {
    match e {
        Error::Shape { .. } => Status::CUBLAS_STATUS_INVALID_VALUE,
        Error::Driver(d) if d.0 == driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
            Status::CUBLAS_STATUS_ALLOC_FAILED
        }
        _ => Status::CUBLAS_STATUS_EXECUTION_FAILED,
    }
}

/// Makes a handle (unbound: see the module documentation).
#[doc(alias = "cublasCreate_v2")]
pub fn create_handle() -> Result<sys::cublasHandle_t, CublasError> {
    let handle = cublasContext { bound: Mutex::new(None), pointer_mode: AtomicU32::new(0) };
    Ok(Box::into_raw(Box::new(handle)))
}

/// Destroys a handle made by [`create_handle`].
///
/// # Safety
/// `handle` must come from [`create_handle`], not be destroyed already, and not be in use.
#[doc(alias = "cublasDestroy_v2")]
pub unsafe fn destroy_handle(handle: sys::cublasHandle_t) -> Result<(), CublasError> {
    if handle.is_null() {
        return Err(status(Status::CUBLAS_STATUS_NOT_INITIALIZED));
    }
    // SAFETY: the caller vouches that the box is live and owned by nobody else now.
    drop(unsafe { Box::from_raw(handle) });
    Ok(())
}

/// Orders the handle's later work on `stream`, a stream of the context the handle is bound to
/// (the null stream is that context's legacy default stream). An unbound handle gives
/// `CUBLAS_STATUS_NOT_INITIALIZED` (bind it with [`CudaBlas::new`](super::CudaBlas::new)).
///
/// # Safety
/// `handle` must be a live handle; `stream` null or a live stream of the handle's context that
/// outlives the work the handle enqueues on it.
#[doc(alias = "cublasSetStream_v2")]
pub unsafe fn set_stream(handle: sys::cublasHandle_t, stream: sys::cudaStream_t) -> Result<(), CublasError> {
    // SAFETY: the caller's obligation.
    let h = unsafe { context(handle) }?;
    let current = h.bound()?;
    if current.stream.cu_stream() == stream {
        return Ok(());
    }
    // SAFETY: the caller vouches that `stream` belongs to this context and outlives its use.
    let wrapped = unsafe { current.stream.context().wrap_borrowed_stream(stream) };
    h.bind(wrapped)
}

/// The stream the handle's work is ordered on (`CUBLAS_STATUS_NOT_INITIALIZED` while unbound).
///
/// # Safety
/// `handle` must be null or a live handle.
pub(crate) unsafe fn get_stream(handle: sys::cublasHandle_t) -> Result<sys::cudaStream_t, CublasError> {
    // SAFETY: the caller's obligation.
    let h = unsafe { context(handle) }?;
    Ok(h.bound()?.stream.cu_stream())
}

/// Sets where scalars live (host by default).
///
/// # Safety
/// `handle` must be a live handle.
#[doc(alias = "cublasSetPointerMode_v2")]
pub unsafe fn set_pointer_mode(
    handle: sys::cublasHandle_t,
    mode: sys::cublasPointerMode_t,
) -> Result<(), CublasError> {
    // SAFETY: the caller's obligation.
    let h = unsafe { context(handle) }?;
    h.pointer_mode.store(mode as u32, Ordering::Relaxed);
    Ok(())
}

/// Where scalars live.
///
/// # Safety
/// `handle` must be a live handle.
#[doc(alias = "cublasGetPointerMode_v2")]
pub unsafe fn get_pointer_mode(handle: sys::cublasHandle_t) -> Result<sys::cublasPointerMode_t, CublasError> {
    // SAFETY: the caller's obligation.
    Ok(unsafe { context(handle) }?.pointer_mode())
}

/// Reads one scalar of type `T` at `ptr`: host memory, or in device pointer mode device memory
/// (copied in stream order, then the stream is synchronised: a device-mode call blocks).
///
/// # Safety
/// `ptr` is a readable `T` in the memory the mode says.
unsafe fn read_scalar<T: Copy + Default>(
    h: &cublasContext,
    stream: &CudaStream,
    ptr: *const T,
) -> Result<T, CublasError> {
    if ptr.is_null() {
        return Err(status(Status::CUBLAS_STATUS_INVALID_VALUE));
    }
    match h.pointer_mode() {
        // SAFETY: the caller vouches for a readable host `T` (perhaps unaligned).
        sys::cublasPointerMode_t::CUBLAS_POINTER_MODE_HOST => Ok(unsafe { ptr.read_unaligned() }),
        sys::cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE => {
            let mut v = [T::default()];
            // SAFETY: the caller vouches for a device `T` at `ptr`; `v` lives until the
            // synchronisation below.
            unsafe { driver::result::memcpy_dtoh_async(&mut v, ptr as u64, stream.cu_stream()) }
                .map_err(|e| to_status(e.into()))?;
            stream.synchronize().map_err(|e| to_status(e.into()))?;
            Ok(v[0])
        }
    }
}

/// alpha and beta, read as `scalar` says, widened to f64 (exact for every scalar type).
///
/// # Safety
/// As [`read_scalar`] for both pointers.
unsafe fn scales(
    h: &cublasContext,
    stream: &CudaStream,
    scalar: Scalar,
    alpha: *const c_void,
    beta: *const c_void,
) -> Result<(f64, f64), CublasError> {
    // SAFETY: the caller's obligation, for the type `scalar` names.
    unsafe {
        Ok(match scalar {
            Scalar::F64 => {
                (read_scalar(h, stream, alpha.cast::<f64>())?, read_scalar(h, stream, beta.cast::<f64>())?)
            }
            Scalar::F32 => (
                read_scalar(h, stream, alpha.cast::<f32>())?.into(),
                read_scalar(h, stream, beta.cast::<f32>())?.into(),
            ),
            Scalar::F16 => (
                read_scalar(h, stream, alpha.cast::<f16>())?.to_f64(),
                read_scalar(h, stream, beta.cast::<f16>())?.to_f64(),
            ),
        })
    }
}

/// Every cuBLAS GEMM: checks, routing, scalars, then the row-major problem on the kernels.
///
/// # Safety
/// `handle` live; `a`, `b`, `c` device memory of the types given holding every element the
/// column-major problem touches; `alpha`, `beta` readable as the pointer mode says.
#[allow(clippy::too_many_arguments)] // cuBLAS's own argument list
unsafe fn gemm_any(
    handle: sys::cublasHandle_t,
    cfg: ColMajor,
    alpha: *const c_void,
    a: *const c_void,
    b: *const c_void,
    beta: *const c_void,
    c: *mut c_void,
    types: (sys::cudaDataType, sys::cudaDataType),
    compute: sys::cublasComputeType_t,
) -> Result<(), CublasError> {
    // SAFETY: the caller's obligation.
    let h = unsafe { context(handle) }?;
    let (route, scalar) = plan::route(types.0, types.0, types.1, compute).map_err(status)?;
    // Argument checks before anything is read.
    let Some(_) = cfg.to_row_major(1.0, 0.0, Precision::F32).map_err(status)? else {
        return Ok(());
    };
    let bound = h.bound()?;
    // SAFETY: the caller vouches for the scalars.
    let (alpha, beta) = unsafe { scales(h, &bound.stream, scalar, alpha, beta) }?;
    // Row-major A is cuBLAS's B and the other way round.
    let ptrs = [b as u64, a as u64, c as u64];
    let (kernels, stream, ws) = (&bound.engine.kernels, &bound.stream, &bound.engine.workspace);
    let precision = match route {
        Route::F32(p) | Route::F32Rounded(p) => p,
        Route::F16 { .. } => Precision::F16,
        Route::Bf16 { .. } => Precision::Bf16,
        // f64 scales are kept unrounded beside the layout; the precision field is not used.
        Route::F64 => Precision::F32,
    };
    // The f32 routes' scalars are f32 or f16 values, so narrowing them back is exact.
    let g = cfg
        .to_row_major(alpha as f32, beta as f32, precision)
        .map_err(status)?
        .expect("not empty (checked above)");
    // SAFETY: for every arm, the caller vouches that the operands hold the column-major problem's
    // elements, which are exactly the row-major problem's (`to_row_major`), of these types.
    let done = unsafe {
        match route {
            Route::F32(_) => gemm::gemm_raw::<f32, f32>(kernels, stream, ws, &g, ptrs),
            Route::F32Rounded(p) => rounded(kernels, stream, ws, &g, p, ptrs),
            Route::F16 { out_f32: true } => gemm::gemm_raw::<f16, f32>(kernels, stream, ws, &g, ptrs),
            Route::F16 { out_f32: false } => gemm::gemm_raw::<f16, f16>(kernels, stream, ws, &g, ptrs),
            Route::Bf16 { out_f32: true } => gemm::gemm_raw::<bf16, f32>(kernels, stream, ws, &g, ptrs),
            Route::Bf16 { out_f32: false } => gemm::gemm_raw::<bf16, bf16>(kernels, stream, ws, &g, ptrs),
            Route::F64 => double::gemm_f64_raw(kernels, stream, ws, &g.with_f64_scales(alpha, beta), ptrs),
        }
    };
    done.map_err(to_status)
}

/// f32 operands multiplied at 16 bits (`CUBLAS_COMPUTE_32F_FAST_16BF` / `_16F`): the spans of A
/// and B that the problem reads are rounded into new 16-bit buffers (same layout), then the
/// 16-bit kernels write f32 C.
///
/// # Safety
/// As [`gemm::gemm_raw`] for f32 operands.
unsafe fn rounded(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    ws: &Workspace,
    g: &Gemm,
    precision: Precision,
    [pa, pb, pc]: [u64; 3],
) -> crate::error::Result<()> {
    let (na, nb, _) = g.min_lens()?;
    match precision {
        Precision::Bf16 => {
            let (a, b) = (
                // SAFETY: A and B hold their spans (the caller's obligation).
                unsafe { to16::<bf16>(kernels, stream, "prism_f32_to_bf16", pa, na)? },
                // SAFETY: as above.
                unsafe { to16::<bf16>(kernels, stream, "prism_f32_to_bf16", pb, nb)? },
            );
            let (ra, _ga) = driver::DevicePtr::device_ptr(&a, stream);
            let (rb, _gb) = driver::DevicePtr::device_ptr(&b, stream);
            // SAFETY: the rounded copies hold A's and B's spans in their layout; C as vouched.
            unsafe { gemm::gemm_raw::<bf16, f32>(kernels, stream, ws, g, [ra, rb, pc]) }
        }
        _ => {
            let (a, b) = (
                // SAFETY: A and B hold their spans (the caller's obligation).
                unsafe { to16::<f16>(kernels, stream, "prism_f32_to_f16", pa, na)? },
                // SAFETY: as above.
                unsafe { to16::<f16>(kernels, stream, "prism_f32_to_f16", pb, nb)? },
            );
            let (ra, _ga) = driver::DevicePtr::device_ptr(&a, stream);
            let (rb, _gb) = driver::DevicePtr::device_ptr(&b, stream);
            // SAFETY: as above.
            unsafe { gemm::gemm_raw::<f16, f32>(kernels, stream, ws, g, [ra, rb, pc]) }
        }
    }
}

/// A new buffer of `len` 16-bit values: the f32s at device address `src` rounded by `kernel`.
///
/// # Safety
/// `src` must hold `len` f32s in live device memory of `kernels`' context.
unsafe fn to16<T: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    kernel: &str,
    src: u64,
    len: usize,
) -> crate::error::Result<driver::CudaSlice<T>> {
    // SAFETY: every element is written by the conversion below before anything reads it.
    let mut out = unsafe { stream.alloc::<T>(len.max(1)) }?;
    if len > 0 {
        let (dst, _write) = driver::DevicePtrMut::device_ptr_mut(&mut out, stream);
        let count = len as u64;
        // SAFETY: `(x, out, n)`: reads the `len` f32s at `src` (the caller vouches for them),
        // writes the `len` elements of `out`.
        unsafe {
            launch!(kernels, stream, kernel, grid::elementwise(len, grid::Step::Vector), [&src, &dst, &count])
        }?;
    }
    Ok(out)
}

use sys::cublasComputeType_t::{
    CUBLAS_COMPUTE_16F as C16, CUBLAS_COMPUTE_32F as C32, CUBLAS_COMPUTE_64F as C64,
};
const F32: (sys::cudaDataType, sys::cudaDataType) =
    (sys::cudaDataType::CUDA_R_32F, sys::cudaDataType::CUDA_R_32F);
const F64: (sys::cudaDataType, sys::cudaDataType) =
    (sys::cudaDataType::CUDA_R_64F, sys::cudaDataType::CUDA_R_64F);
const F16: (sys::cudaDataType, sys::cudaDataType) =
    (sys::cudaDataType::CUDA_R_16F, sys::cudaDataType::CUDA_R_16F);

/// Single precision GEMM (exact fp32 products), column-major.
///
/// # Safety
/// - `handle` a live handle bound to a stream; `a`, `b`, `c` device pointers of its context that
///   hold every element the problem touches with these leading dimensions;
/// - `alpha`, `beta` not null, in host memory (default) or device memory (device pointer mode).
#[doc(alias = "cublasSgemm_v2")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemm(
    handle: sys::cublasHandle_t,
    transa: sys::cublasOperation_t,
    transb: sys::cublasOperation_t,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const f32,
    a: *const f32,
    lda: c_int,
    b: *const f32,
    ldb: c_int,
    beta: *const f32,
    c: *mut f32,
    ldc: c_int,
) -> Result<(), CublasError> {
    let cfg = ColMajor::single(transa, transb, m, n, k, lda, ldb, ldc);
    // SAFETY: forwarded from the caller.
    unsafe { gemm_any(handle, cfg, alpha.cast(), a.cast(), b.cast(), beta.cast(), c.cast(), F32, C32) }
}

/// Double precision GEMM, column-major: f64 scalars, products and accumulation (FP64 tensor
/// cores on sm_80+).
///
/// # Safety
/// As [`sgemm`], with f64 operands and scalars.
#[doc(alias = "cublasDgemm_v2")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn dgemm(
    handle: sys::cublasHandle_t,
    transa: sys::cublasOperation_t,
    transb: sys::cublasOperation_t,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const f64,
    a: *const f64,
    lda: c_int,
    b: *const f64,
    ldb: c_int,
    beta: *const f64,
    c: *mut f64,
    ldc: c_int,
) -> Result<(), CublasError> {
    let cfg = ColMajor::single(transa, transb, m, n, k, lda, ldb, ldc);
    // SAFETY: forwarded from the caller.
    unsafe { gemm_any(handle, cfg, alpha.cast(), a.cast(), b.cast(), beta.cast(), c.cast(), F64, C64) }
}

/// Half precision GEMM (f16 operands and scalars; this crate accumulates in f32).
///
/// # Safety
/// As [`sgemm`], with f16 operands and scalars.
#[doc(alias = "cublasHgemm")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn hgemm(
    handle: sys::cublasHandle_t,
    transa: sys::cublasOperation_t,
    transb: sys::cublasOperation_t,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const f16,
    a: *const f16,
    lda: c_int,
    b: *const f16,
    ldb: c_int,
    beta: *const f16,
    c: *mut f16,
    ldc: c_int,
) -> Result<(), CublasError> {
    let cfg = ColMajor::single(transa, transb, m, n, k, lda, ldb, ldc);
    // SAFETY: forwarded from the caller.
    unsafe { gemm_any(handle, cfg, alpha.cast(), a.cast(), b.cast(), beta.cast(), c.cast(), F16, C16) }
}

/// The strided-batch description.
#[allow(clippy::too_many_arguments)]
fn batched(
    transa: sys::cublasOperation_t,
    transb: sys::cublasOperation_t,
    m: c_int,
    n: c_int,
    k: c_int,
    (lda, stride_a): (c_int, c_longlong),
    (ldb, stride_b): (c_int, c_longlong),
    (ldc, stride_c): (c_int, c_longlong),
    batch: c_int,
) -> ColMajor {
    ColMajor { transa, transb, m, n, k, lda, ldb, ldc, stride_a, stride_b, stride_c, batch }
}

macro_rules! strided_batched {
    ($(#[$doc:meta])* $name:ident, $alias:literal, $t:ty, $types:expr, $compute:expr) => {
        $(#[$doc])*
        ///
        /// Batch entry z uses `a + z * stride_a`, `b + z * stride_b`, `c + z * stride_c`; A and B
        /// strides may be 0 (one matrix for the whole batch).
        ///
        /// # Safety
        /// As [`sgemm`], for every batch entry, with operands and scalars of this function's type.
        #[doc(alias = $alias)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $name(
            handle: sys::cublasHandle_t,
            transa: sys::cublasOperation_t,
            transb: sys::cublasOperation_t,
            m: c_int,
            n: c_int,
            k: c_int,
            alpha: *const $t,
            a: *const $t,
            lda: c_int,
            stride_a: c_longlong,
            b: *const $t,
            ldb: c_int,
            stride_b: c_longlong,
            beta: *const $t,
            c: *mut $t,
            ldc: c_int,
            stride_c: c_longlong,
            batch_size: c_int,
        ) -> Result<(), CublasError> {
            let cfg = batched(transa, transb, m, n, k, (lda, stride_a), (ldb, stride_b), (ldc, stride_c), batch_size);
            // SAFETY: forwarded from the caller.
            unsafe { gemm_any(handle, cfg, alpha.cast(), a.cast(), b.cast(), beta.cast(), c.cast(), $types, $compute) }
        }
    };
}

strided_batched!(
    /// Half precision strided batched GEMM (f16 operands and scalars, f32 accumulation).
    hgemm_strided_batched, "cublasHgemmStridedBatched", f16, F16, C16
);
strided_batched!(
    /// Single precision strided batched GEMM (exact fp32 products).
    sgemm_strided_batched, "cublasSgemmStridedBatched", f32, F32, C32
);
strided_batched!(
    /// Double precision strided batched GEMM (f64 throughout).
    dgemm_strided_batched, "cublasDgemmStridedBatched", f64, F64, C64
);

/// GEMM with the element and compute types as arguments. Supported (else
/// `CUBLAS_STATUS_NOT_SUPPORTED`): f32 with `COMPUTE_32F` (exact), `32F_FAST_TF32` (TF32),
/// `32F_FAST_16BF` / `32F_FAST_16F` (inputs rounded to 16 bits); f16 or bf16 inputs with
/// `COMPUTE_32F` into their own type or f32; f16 with `COMPUTE_16F` (f16 scalars); f64 with
/// `COMPUTE_64F` (f64 scalars). Scalars are f16 for `COMPUTE_16F`, f64 for `COMPUTE_64F`, else f32. `algo` is a hint this crate ignores.
///
/// # Safety
/// As [`sgemm`], with the operands of the types named and scalars of the compute type's.
#[doc(alias = "cublasGemmEx")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_ex(
    handle: sys::cublasHandle_t,
    transa: sys::cublasOperation_t,
    transb: sys::cublasOperation_t,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const c_void,
    a: *const c_void,
    a_type: sys::cudaDataType,
    lda: c_int,
    b: *const c_void,
    b_type: sys::cudaDataType,
    ldb: c_int,
    beta: *const c_void,
    c: *mut c_void,
    c_type: sys::cudaDataType,
    ldc: c_int,
    compute_type: sys::cublasComputeType_t,
    algo: sys::cublasGemmAlgo_t,
) -> Result<(), CublasError> {
    let _ = algo;
    if a_type != b_type {
        return Err(status(Status::CUBLAS_STATUS_NOT_SUPPORTED));
    }
    let cfg = ColMajor::single(transa, transb, m, n, k, lda, ldb, ldc);
    // SAFETY: forwarded from the caller.
    unsafe { gemm_any(handle, cfg, alpha, a, b, beta, c, (a_type, c_type), compute_type) }
}

/// Strided batched [`gemm_ex`].
///
/// # Safety
/// As [`gemm_ex`], for every batch entry.
#[doc(alias = "cublasGemmStridedBatchedEx")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_strided_batched_ex(
    handle: sys::cublasHandle_t,
    transa: sys::cublasOperation_t,
    transb: sys::cublasOperation_t,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const c_void,
    a: *const c_void,
    a_type: sys::cudaDataType,
    lda: c_int,
    stride_a: c_longlong,
    b: *const c_void,
    b_type: sys::cudaDataType,
    ldb: c_int,
    stride_b: c_longlong,
    beta: *const c_void,
    c: *mut c_void,
    c_type: sys::cudaDataType,
    ldc: c_int,
    stride_c: c_longlong,
    batch_count: c_int,
    compute_type: sys::cublasComputeType_t,
    algo: sys::cublasGemmAlgo_t,
) -> Result<(), CublasError> {
    let _ = algo;
    if a_type != b_type {
        return Err(status(Status::CUBLAS_STATUS_NOT_SUPPORTED));
    }
    let cfg =
        batched(transa, transb, m, n, k, (lda, stride_a), (ldb, stride_b), (ldc, stride_c), batch_count);
    // SAFETY: forwarded from the caller.
    unsafe { gemm_any(handle, cfg, alpha, a, b, beta, c, (a_type, c_type), compute_type) }
}

/// Single precision matrix-vector product `y = alpha op(A) x + beta y` (A column-major m x n),
/// run on the GEMM kernels as a one-row product. Negative increments are
/// `CUBLAS_STATUS_NOT_SUPPORTED`.
///
/// # Safety
/// `handle` live and bound; `a`, `x`, `y` device pointers holding the elements the product
/// touches with these dimensions and increments; `alpha`, `beta` as in [`sgemm`].
#[doc(alias = "cublasSgemv_v2")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemv(
    handle: sys::cublasHandle_t,
    trans: sys::cublasOperation_t,
    m: c_int,
    n: c_int,
    alpha: *const f32,
    a: *const f32,
    lda: c_int,
    x: *const f32,
    incx: c_int,
    beta: *const f32,
    y: *mut f32,
    incy: c_int,
) -> Result<(), CublasError> {
    let Some(cfg) = plan::gemv_as_gemm(trans, m, n, lda, incx, incy).map_err(status)? else {
        return Ok(());
    };
    // SAFETY: forwarded from the caller: x is the one-row A, A the B, y the one-row C.
    unsafe { gemm_any(handle, cfg, alpha.cast(), x.cast(), a.cast(), beta.cast(), y.cast(), F32, C32) }
}

/// Double precision matrix-vector product `y = alpha op(A) x + beta y`, run on the f64 GEMM
/// kernels as a one-row product. Negative increments are `CUBLAS_STATUS_NOT_SUPPORTED`.
///
/// # Safety
/// As [`sgemv`], with f64 operands and scalars.
#[doc(alias = "cublasDgemv_v2")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn dgemv(
    handle: sys::cublasHandle_t,
    trans: sys::cublasOperation_t,
    m: c_int,
    n: c_int,
    alpha: *const f64,
    a: *const f64,
    lda: c_int,
    x: *const f64,
    incx: c_int,
    beta: *const f64,
    y: *mut f64,
    incy: c_int,
) -> Result<(), CublasError> {
    let Some(cfg) = plan::gemv_as_gemm(trans, m, n, lda, incx, incy).map_err(status)? else {
        return Ok(());
    };
    // SAFETY: forwarded from the caller.
    unsafe { gemm_any(handle, cfg, alpha.cast(), x.cast(), a.cast(), beta.cast(), y.cast(), F64, C64) }
}

/// Sum of absolute values, single precision: `sum |x[i * incx]|` for i in `0..n` (accumulated in
/// f64), 0 when n or incx is not positive, as cuBLAS. In host pointer mode the call waits for the
/// result; in device pointer mode it is written to device memory in stream order.
///
/// # Safety
/// `handle` live; `x` holds `n` elements `incx` apart; `result` writable (host memory, or device
/// memory in device pointer mode).
#[doc(alias = "cublasSasum_v2")]
pub unsafe fn sasum(
    handle: sys::cublasHandle_t,
    n: c_int,
    x: *const f32,
    incx: c_int,
    result: *mut f32,
) -> Result<(), CublasError> {
    // SAFETY: forwarded from the caller.
    unsafe { asum_any(handle, n, x, incx, result) }
}

/// Sum of absolute values, double precision (as [`sasum`]).
///
/// # Safety
/// As [`sasum`], for f64.
#[doc(alias = "cublasDasum_v2")]
pub unsafe fn dasum(
    handle: sys::cublasHandle_t,
    n: c_int,
    x: *const f64,
    incx: c_int,
    result: *mut f64,
) -> Result<(), CublasError> {
    // SAFETY: forwarded from the caller.
    unsafe { asum_any(handle, n, x, incx, result) }
}

/// # Safety
/// As [`sasum`].
unsafe fn asum_any<T: AsumElement + Default>(
    handle: sys::cublasHandle_t,
    n: c_int,
    x: *const T,
    incx: c_int,
    result: *mut T,
) -> Result<(), CublasError> {
    // SAFETY: the caller's obligation.
    let h = unsafe { context(handle) }?;
    if result.is_null() {
        return Err(status(Status::CUBLAS_STATUS_INVALID_VALUE));
    }
    let bound = h.bound()?;
    let (kernels, stream) = (&bound.engine.kernels, &bound.stream);
    // cuBLAS sums nothing for these and returns 0.
    let n = if n > 0 && incx > 0 { n as usize } else { 0 };
    let incx = incx.max(1) as usize;
    let run = |out: u64| {
        // SAFETY: the caller vouches for n elements of x, incx apart; `out` is one writable `T`
        // on the device (the caller's in device mode, a fresh one otherwise).
        unsafe { asum::asum_raw::<T>(kernels, stream, n, x as u64, incx, out) }.map_err(to_status)
    };
    match h.pointer_mode() {
        sys::cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE => run(result as u64),
        sys::cublasPointerMode_t::CUBLAS_POINTER_MODE_HOST => {
            // SAFETY: written by the finalising kernel before the copy below reads it.
            let mut out = unsafe { stream.alloc::<T>(1) }.map_err(|e| to_status(e.into()))?;
            let (pout, guard) = driver::DevicePtrMut::device_ptr_mut(&mut out, stream);
            run(pout)?;
            drop(guard);
            let mut v = [T::default()];
            stream.memcpy_dtoh(&out, &mut v).map_err(|e| to_status(e.into()))?;
            // SAFETY: the caller vouches for a writable host `T` at `result` (perhaps unaligned).
            unsafe { result.write_unaligned(v[0]) };
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_display_their_status_and_are_std_errors() {
        let e = CublasError(Status::CUBLAS_STATUS_NOT_SUPPORTED);
        assert_eq!(e.to_string(), "CublasError(CUBLAS_STATUS_NOT_SUPPORTED)");
        let boxed: Box<dyn std::error::Error> = Box::new(e);
        assert!(boxed.to_string().contains("NOT_SUPPORTED"));
        assert_eq!(Status::CUBLAS_STATUS_SUCCESS.result(), Ok(()));
        assert_eq!(Status::CUBLAS_STATUS_INVALID_VALUE as u32, 7);
    }

    #[test]
    fn unbound_and_null_handles_are_not_initialized() {
        let h = create_handle().unwrap();
        let (one, zero) = (1.0f32, 0.0f32);
        let p = std::ptr::null_mut::<f32>();
        let op = sys::cublasOperation_t::CUBLAS_OP_N;
        // SAFETY: a live, unbound handle: the call stops before touching the (null) operands.
        let r = unsafe { sgemm(h, op, op, 2, 2, 2, &one, p, 2, p, 2, &zero, p, 2) };
        assert_eq!(r, Err(CublasError(Status::CUBLAS_STATUS_NOT_INITIALIZED)));
        // SAFETY: as above; negative m is refused before anything else.
        let r = unsafe { sgemm(h, op, op, -1, 2, 2, &one, p, 2, p, 2, &zero, p, 2) };
        assert_eq!(r, Err(CublasError(Status::CUBLAS_STATUS_INVALID_VALUE)));
        // SAFETY: a null handle is detected.
        let r = unsafe { sgemm(std::ptr::null_mut(), op, op, 2, 2, 2, &one, p, 2, p, 2, &zero, p, 2) };
        assert_eq!(r, Err(CublasError(Status::CUBLAS_STATUS_NOT_INITIALIZED)));
        // SAFETY: created above, destroyed once.
        unsafe { destroy_handle(h) }.unwrap();
    }
}
