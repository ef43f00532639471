//! The safe layer: [`CudaBlas`] and the traits.

use core::ffi::{c_int, c_longlong};
use std::sync::Arc;

use half::{bf16, f16};

use super::result::{self, CublasError};
use super::sys;
use crate::driver::{CudaStream, DevicePtr, DevicePtrMut};

/// A cuBLAS handle on this crate's kernels, ordered on one stream. Keeps the stream (and so its
/// context) alive.
#[derive(Debug)]
pub struct CudaBlas {
    handle: sys::cublasHandle_t,
    stream: Arc<CudaStream>,
}

// SAFETY: the handle is this crate's own `cublasContext`, whose state is behind a mutex and an
// atomic; nothing in it is tied to a thread.
unsafe impl Send for CudaBlas {}
// SAFETY: as above; `&self` methods only read the handle's synchronised state.
unsafe impl Sync for CudaBlas {}

impl CudaBlas {
    /// A handle whose work is ordered on `stream`.
    pub fn new(stream: Arc<CudaStream>) -> Result<Self, CublasError> {
        let handle = result::create_handle()?;
        // SAFETY: just created, owned here.
        let context = unsafe { &*handle };
        if let Err(e) = context.bind(stream.clone()) {
            // SAFETY: created above and not shared.
            unsafe { result::destroy_handle(handle) }?;
            return Err(e);
        }
        Ok(Self { handle, stream })
    }

    /// The handle, for the [`result`] functions.
    pub fn handle(&self) -> &sys::cublasHandle_t {
        &self.handle
    }

    /// Orders later work on `stream`.
    ///
    /// # Safety
    /// Work of this handle on the old and new streams is not ordered against each other: the
    /// caller must make sure they do not race on the same memory.
    pub unsafe fn set_stream(&mut self, stream: Arc<CudaStream>) -> Result<(), CublasError> {
        // SAFETY: the handle is live while `self` is.
        unsafe { &*self.handle }.bind(stream.clone())?;
        self.stream = stream;
        Ok(())
    }

    /// Sets where scalars live (`CUBLAS_POINTER_MODE_HOST` by default).
    pub fn set_pointer_mode(&self, pointer_mode: sys::cublasPointerMode_t) -> Result<(), CublasError> {
        // SAFETY: the handle is live while `self` is.
        unsafe { result::set_pointer_mode(self.handle, pointer_mode) }
    }

    /// Where scalars live.
    pub fn get_pointer_mode(&self) -> Result<sys::cublasPointerMode_t, CublasError> {
        // SAFETY: the handle is live while `self` is.
        unsafe { result::get_pointer_mode(self.handle) }
    }
}

impl Drop for CudaBlas {
    fn drop(&mut self) {
        let handle = std::mem::replace(&mut self.handle, std::ptr::null_mut());
        if !handle.is_null() {
            // SAFETY: created in `new`, destroyed once, here. Cannot fail for a non-null handle.
            let _ = unsafe { result::destroy_handle(handle) };
        }
    }
}

/// One GEMM, column-major: `C[m x n] = alpha op(A) op(B) + beta C`.
#[derive(Debug, Copy, Clone)]
pub struct GemmConfig<T> {
    /// op(A).
    pub transa: sys::cublasOperation_t,
    /// op(B).
    pub transb: sys::cublasOperation_t,
    /// Rows of op(A) and C.
    pub m: c_int,
    /// Columns of op(B) and C.
    pub n: c_int,
    /// Columns of op(A), rows of op(B).
    pub k: c_int,
    /// Scale of the product.
    pub alpha: T,
    /// Leading dimension of A.
    pub lda: c_int,
    /// Leading dimension of B.
    pub ldb: c_int,
    /// Scale of the old C (0: C is not read).
    pub beta: T,
    /// Leading dimension of C.
    pub ldc: c_int,
}

/// A strided batch of GEMMs.
#[derive(Debug, Copy, Clone)]
pub struct StridedBatchedConfig<T> {
    /// Each entry's GEMM.
    pub gemm: GemmConfig<T>,
    /// Number of entries.
    pub batch_size: c_int,
    /// Elements between A matrices (0: one A for all).
    pub stride_a: c_longlong,
    /// Elements between B matrices (0: one B for all).
    pub stride_b: c_longlong,
    /// Elements between C matrices.
    pub stride_c: c_longlong,
}

/// GEMM for one element type.
pub trait Gemm<T> {
    /// `C = alpha op(A) op(B) + beta C`, column-major.
    ///
    /// # Safety
    /// The operands must hold every element the configuration touches.
    unsafe fn gemm<A: DevicePtr<T>, B: DevicePtr<T>, C: DevicePtrMut<T>>(
        &self,
        cfg: GemmConfig<T>,
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<(), CublasError>;

    /// A strided batch of GEMMs.
    ///
    /// # Safety
    /// The operands must hold every element of every batch entry.
    unsafe fn gemm_strided_batched<A: DevicePtr<T>, B: DevicePtr<T>, C: DevicePtrMut<T>>(
        &self,
        cfg: StridedBatchedConfig<T>,
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<(), CublasError>;
}

/// The GEMM of one element type through [`result`]: `$single` and `$batched` take the handle and
/// cuBLAS's argument list; alpha and beta are converted by `$scale`.
macro_rules! impl_gemm {
    ($t:ty, $s:ty, $scale:expr, |$h:ident, $cfg:ident, $alpha:ident, $beta:ident, $a:ident, $b:ident, $c:ident| $single:expr, |$bcfg:ident| $batched:expr) => {
        impl Gemm<$t> for CudaBlas {
            unsafe fn gemm<A: DevicePtr<$t>, B: DevicePtr<$t>, C: DevicePtrMut<$t>>(
                &self,
                $cfg: GemmConfig<$t>,
                a: &A,
                b: &B,
                c: &mut C,
            ) -> Result<(), CublasError> {
                let scale: fn($t) -> $s = $scale;
                let ($alpha, $beta) = (scale($cfg.alpha), scale($cfg.beta));
                let ($a, _read_a) = a.device_ptr(&self.stream);
                let ($b, _read_b) = b.device_ptr(&self.stream);
                let ($c, _write_c) = c.device_ptr_mut(&self.stream);
                let $h = self.handle;
                // SAFETY: the caller vouches for the operands; the scalars are host values and
                // the pointer mode is the caller's to keep at HOST for these calls, as in cudarc.
                unsafe { $single }
            }

            unsafe fn gemm_strided_batched<A: DevicePtr<$t>, B: DevicePtr<$t>, C: DevicePtrMut<$t>>(
                &self,
                $bcfg: StridedBatchedConfig<$t>,
                a: &A,
                b: &B,
                c: &mut C,
            ) -> Result<(), CublasError> {
                let $cfg = $bcfg.gemm;
                let scale: fn($t) -> $s = $scale;
                let ($alpha, $beta) = (scale($cfg.alpha), scale($cfg.beta));
                let ($a, _read_a) = a.device_ptr(&self.stream);
                let ($b, _read_b) = b.device_ptr(&self.stream);
                let ($c, _write_c) = c.device_ptr_mut(&self.stream);
                let $h = self.handle;
                // SAFETY: as in `gemm`.
                unsafe { $batched }
            }
        }
    };
}

impl_gemm!(
    f32,
    f32,
    |x| x,
    |h, cfg, alpha, beta, a, b, c| result::sgemm(
        h,
        cfg.transa,
        cfg.transb,
        cfg.m,
        cfg.n,
        cfg.k,
        &alpha,
        a as *const f32,
        cfg.lda,
        b as *const f32,
        cfg.ldb,
        &beta,
        c as *mut f32,
        cfg.ldc
    ),
    |bcfg| result::sgemm_strided_batched(
        h,
        cfg.transa,
        cfg.transb,
        cfg.m,
        cfg.n,
        cfg.k,
        &alpha,
        a as *const f32,
        cfg.lda,
        bcfg.stride_a,
        b as *const f32,
        cfg.ldb,
        bcfg.stride_b,
        &beta,
        c as *mut f32,
        cfg.ldc,
        bcfg.stride_c,
        bcfg.batch_size
    )
);

impl_gemm!(
    f64,
    f64,
    |x| x,
    |h, cfg, alpha, beta, a, b, c| result::dgemm(
        h,
        cfg.transa,
        cfg.transb,
        cfg.m,
        cfg.n,
        cfg.k,
        &alpha,
        a as *const f64,
        cfg.lda,
        b as *const f64,
        cfg.ldb,
        &beta,
        c as *mut f64,
        cfg.ldc
    ),
    |bcfg| result::dgemm_strided_batched(
        h,
        cfg.transa,
        cfg.transb,
        cfg.m,
        cfg.n,
        cfg.k,
        &alpha,
        a as *const f64,
        cfg.lda,
        bcfg.stride_a,
        b as *const f64,
        cfg.ldb,
        bcfg.stride_b,
        &beta,
        c as *mut f64,
        cfg.ldc,
        bcfg.stride_c,
        bcfg.batch_size
    )
);

/// The 16-bit types as cudarc runs them: `GemmEx` with f32 scalars and `COMPUTE_32F`.
macro_rules! impl_gemm_16 {
    ($t:ty, $ty:ident) => {
        impl_gemm!(
            $t,
            f32,
            |x| x.to_f32(),
            |h, cfg, alpha, beta, a, b, c| result::gemm_ex(
                h,
                cfg.transa,
                cfg.transb,
                cfg.m,
                cfg.n,
                cfg.k,
                (&alpha as *const f32).cast(),
                a as *const _,
                sys::cudaDataType::$ty,
                cfg.lda,
                b as *const _,
                sys::cudaDataType::$ty,
                cfg.ldb,
                (&beta as *const f32).cast(),
                c as *mut _,
                sys::cudaDataType::$ty,
                cfg.ldc,
                sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT
            ),
            |bcfg| result::gemm_strided_batched_ex(
                h,
                cfg.transa,
                cfg.transb,
                cfg.m,
                cfg.n,
                cfg.k,
                (&alpha as *const f32).cast(),
                a as *const _,
                sys::cudaDataType::$ty,
                cfg.lda,
                bcfg.stride_a,
                b as *const _,
                sys::cudaDataType::$ty,
                cfg.ldb,
                bcfg.stride_b,
                (&beta as *const f32).cast(),
                c as *mut _,
                sys::cudaDataType::$ty,
                cfg.ldc,
                bcfg.stride_c,
                bcfg.batch_size,
                sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT
            )
        );
    };
}
impl_gemm_16!(f16, CUDA_R_16F);
impl_gemm_16!(bf16, CUDA_R_16BF);

/// One matrix-vector product, column-major: `y = alpha op(A) x + beta y`, A m x n.
#[derive(Debug, Copy, Clone)]
pub struct GemvConfig<T> {
    /// op(A).
    pub trans: sys::cublasOperation_t,
    /// Rows of A.
    pub m: c_int,
    /// Columns of A.
    pub n: c_int,
    /// Scale of the product.
    pub alpha: T,
    /// Leading dimension of A.
    pub lda: c_int,
    /// Elements between x's elements.
    pub incx: c_int,
    /// Scale of the old y (0: y is not read).
    pub beta: T,
    /// Elements between y's elements.
    pub incy: c_int,
}

/// Matrix-vector product for one element type.
pub trait Gemv<T> {
    /// `y = alpha op(A) x + beta y`.
    ///
    /// # Safety
    /// The operands must hold every element the configuration touches.
    unsafe fn gemv<A: DevicePtr<T>, X: DevicePtr<T>, Y: DevicePtrMut<T>>(
        &self,
        cfg: GemvConfig<T>,
        a: &A,
        x: &X,
        y: &mut Y,
    ) -> Result<(), CublasError>;
}

macro_rules! impl_gemv {
    ($t:ty, $f:path) => {
        impl Gemv<$t> for CudaBlas {
            unsafe fn gemv<A: DevicePtr<$t>, X: DevicePtr<$t>, Y: DevicePtrMut<$t>>(
                &self,
                cfg: GemvConfig<$t>,
                a: &A,
                x: &X,
                y: &mut Y,
            ) -> Result<(), CublasError> {
                let (a, _read_a) = a.device_ptr(&self.stream);
                let (x, _read_x) = x.device_ptr(&self.stream);
                let (y, _write_y) = y.device_ptr_mut(&self.stream);
                // SAFETY: the caller vouches for the operands; alpha and beta are host values.
                unsafe {
                    $f(
                        self.handle,
                        cfg.trans,
                        cfg.m,
                        cfg.n,
                        &cfg.alpha,
                        a as *const $t,
                        cfg.lda,
                        x as *const $t,
                        cfg.incx,
                        &cfg.beta,
                        y as *mut $t,
                        cfg.incy,
                    )
                }
            }
        }
    };
}
impl_gemv!(f32, result::sgemv);
impl_gemv!(f64, result::dgemv);

/// Sum of absolute values: `n` elements `incx` apart.
#[derive(Debug, Copy, Clone)]
pub struct AsumConfig {
    /// Number of elements.
    pub n: c_int,
    /// Elements between consecutive elements.
    pub incx: c_int,
}

/// Sum of absolute values for one element type.
pub trait Asum<T> {
    /// `result = sum |x[i * incx]|`.
    ///
    /// # Safety
    /// `x` must hold the elements the configuration touches; in device pointer mode `result`
    /// must be device memory.
    unsafe fn asum<X: DevicePtr<T>>(&self, cfg: AsumConfig, x: &X, result: &mut T)
        -> Result<(), CublasError>;
}

macro_rules! impl_asum {
    ($t:ty, $f:path) => {
        impl Asum<$t> for CudaBlas {
            unsafe fn asum<X: DevicePtr<$t>>(
                &self,
                cfg: AsumConfig,
                x: &X,
                result: &mut $t,
            ) -> Result<(), CublasError> {
                let (x, _read_x) = x.device_ptr(&self.stream);
                // SAFETY: the caller vouches for x and for `result` in the handle's pointer mode.
                unsafe { $f(self.handle, cfg.n, x as *const $t, cfg.incx, result as *mut $t) }
            }
        }
    };
}
impl_asum!(f32, result::sasum);
impl_asum!(f64, result::dasum);
