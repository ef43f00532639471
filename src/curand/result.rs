//! cudarc 0.19's `curand::result` functions on this crate's Philox kernel: one function per
//! cuRAND call, the same names and signatures, no libcurand.
//!
//! A generator is bound to a stream (and so a context) by [`CudaRng::new`](super::CudaRng::new);
//! [`create_generator`] alone makes an unbound generator, on which fills return
//! `CURAND_STATUS_NOT_INITIALIZED` until it is bound.

use std::sync::{Arc, Mutex};

use super::sys::{self, curandRngType_t as RngType, curandStatus_t as Status};
use crate::driver::{sys::CUdeviceptr, CudaStream};
use crate::error::Error;
use crate::kernels::random;
use crate::kernels::Kernels;
use crate::spec::random::{Normal, NormalElement, Philox, RandomElement};

/// A cuRAND status other than success.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CurandError(pub sys::curandStatus_t);

impl sys::curandStatus_t {
    /// `Ok` for `CURAND_STATUS_SUCCESS`, else the status as an error.
    pub fn result(self) -> Result<(), CurandError> {
        match self {
            Status::CURAND_STATUS_SUCCESS => Ok(()),
            _ => Err(CurandError(self)),
        }
    }
}

impl std::fmt::Display for CurandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for CurandError {}

/// This crate's generator (what [`sys::curandGenerator_t`] points at): the Philox position of
/// the next fill and the stream fills are ordered on.
#[allow(non_camel_case_types)] // cuRAND's name for the generator's target
pub struct curandGenerator_st {
    state: Mutex<State>,
}

struct State {
    at: Philox,
    bound: Option<Bound>,
}

#[derive(Clone)]
struct Bound {
    stream: Arc<CudaStream>,
    kernels: Arc<Kernels>,
}

impl std::fmt::Debug for curandGenerator_st {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("curandGenerator_st").field("at", &self.lock().at).finish_non_exhaustive()
    }
}

impl curandGenerator_st {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Orders later fills on `stream`; the kernels are kept while the context stays.
    pub(crate) fn bind(&self, stream: Arc<CudaStream>) -> Result<(), CurandError> {
        let mut state = self.lock();
        let kernels = match state.bound.as_ref() {
            Some(b) if Arc::ptr_eq(b.stream.context(), stream.context()) => b.kernels.clone(),
            _ => Arc::new(Kernels::new(stream.context().clone()).map_err(to_status)?),
        };
        state.bound = Some(Bound { stream, kernels });
        Ok(())
    }

    /// Runs `fill` at the current position on the bound stream and advances to where it ends.
    fn fill(
        &self,
        fill: impl FnOnce(&Kernels, &Arc<CudaStream>, Philox) -> crate::Result<Philox>,
    ) -> Result<(), CurandError> {
        let mut state = self.lock();
        let bound = state.bound.clone().ok_or(CurandError(Status::CURAND_STATUS_NOT_INITIALIZED))?;
        state.at = fill(&bound.kernels, &bound.stream, state.at).map_err(to_status)?;
        Ok(())
    }
}

/// How an error of the engine reads as a cuRAND status.
pub(crate) fn to_status(e: Error) -> CurandError {
    CurandError(match e {
        Error::Shape { .. } => Status::CURAND_STATUS_OUT_OF_RANGE,
        Error::ModuleLoad { .. } | Error::UnknownKernel(_) => Status::CURAND_STATUS_INITIALIZATION_FAILED,
        _ => Status::CURAND_STATUS_LAUNCH_FAILURE,
    })
}

/// The generator behind `generator`.
///
/// # Safety
/// `generator` is null or came from [`create_generator`] and was not destroyed.
unsafe fn generator<'a>(generator: sys::curandGenerator_t) -> Result<&'a curandGenerator_st, CurandError> {
    // SAFETY: the caller's obligation.
    unsafe { generator.as_ref() }.ok_or(CurandError(Status::CURAND_STATUS_NOT_INITIALIZED))
}

/// Makes an (unbound) generator of the default pseudo-random type: this crate's Philox.
#[doc(alias = "curandCreateGenerator")]
pub fn create_generator() -> Result<sys::curandGenerator_t, CurandError> {
    create_generator_kind(RngType::CURAND_RNG_PSEUDO_DEFAULT)
}

/// Makes an (unbound) generator. Every pseudo-random `kind` gives this crate's Philox4x32-10;
/// quasi-random and test kinds are `CURAND_STATUS_TYPE_ERROR`.
#[doc(alias = "curandCreateGenerator")]
pub fn create_generator_kind(kind: sys::curandRngType_t) -> Result<sys::curandGenerator_t, CurandError> {
    match kind {
        RngType::CURAND_RNG_PSEUDO_DEFAULT
        | RngType::CURAND_RNG_PSEUDO_XORWOW
        | RngType::CURAND_RNG_PSEUDO_MRG32K3A
        | RngType::CURAND_RNG_PSEUDO_MTGP32
        | RngType::CURAND_RNG_PSEUDO_MT19937
        | RngType::CURAND_RNG_PSEUDO_PHILOX4_32_10 => {}
        _ => return Err(CurandError(Status::CURAND_STATUS_TYPE_ERROR)),
    }
    let generator = curandGenerator_st { state: Mutex::new(State { at: Philox::default(), bound: None }) };
    Ok(Box::into_raw(Box::new(generator)))
}

/// Sets the seed (the Philox key); the offset is kept.
///
/// # Safety
/// `generator` must be a live generator.
#[doc(alias = "curandSetPseudoRandomGeneratorSeed")]
pub unsafe fn set_seed(generator: sys::curandGenerator_t, seed: u64) -> Result<(), CurandError> {
    // SAFETY: the caller's obligation.
    unsafe { self::generator(generator) }?.lock().at.seed = seed;
    Ok(())
}

/// Sets the offset: the Philox counter (in blocks of four 32-bit words) where the next fill starts.
///
/// # Safety
/// `generator` must be a live generator.
#[doc(alias = "curandSetGeneratorOffset")]
pub unsafe fn set_offset(generator: sys::curandGenerator_t, offset: u64) -> Result<(), CurandError> {
    // SAFETY: the caller's obligation.
    unsafe { self::generator(generator) }?.lock().at.offset = offset;
    Ok(())
}

/// Orders the generator's later fills on `stream`, a stream of the context the generator is
/// bound to (the null stream is that context's legacy default stream). An unbound generator gives
/// `CURAND_STATUS_NOT_INITIALIZED` (bind it with [`CudaRng::new`](super::CudaRng::new)).
///
/// # Safety
/// `generator` must be a live generator; `stream` null or a live stream of its context that
/// outlives the work the generator enqueues on it.
#[doc(alias = "curandSetStream")]
pub unsafe fn set_stream(
    generator: sys::curandGenerator_t,
    stream: sys::cudaStream_t,
) -> Result<(), CurandError> {
    // SAFETY: the caller's obligation.
    let g = unsafe { self::generator(generator) }?;
    let current = g.lock().bound.clone().ok_or(CurandError(Status::CURAND_STATUS_NOT_INITIALIZED))?;
    if current.stream.cu_stream() == stream {
        return Ok(());
    }
    // SAFETY: the caller vouches that `stream` belongs to this context and outlives its use.
    let wrapped = unsafe { current.stream.context().wrap_borrowed_stream(stream) };
    g.bind(wrapped)
}

/// Destroys a generator made by [`create_generator`].
///
/// # Safety
/// `generator` must come from [`create_generator`], not be destroyed already, and not be in use.
#[doc(alias = "curandDestroyGenerator")]
pub unsafe fn destroy_generator(generator: sys::curandGenerator_t) -> Result<(), CurandError> {
    if generator.is_null() {
        return Err(CurandError(Status::CURAND_STATUS_NOT_INITIALIZED));
    }
    // SAFETY: the caller vouches that the box is live and owned by nobody else now.
    drop(unsafe { Box::from_raw(generator) });
    Ok(())
}

/// A uniform fill of `num` elements at `out`.
///
/// # Safety
/// `gen` is a live generator; `out` is a device address of its context with `num` writable `T`.
unsafe fn uniform<T: RandomElement>(
    gen: sys::curandGenerator_t,
    out: *mut T,
    num: usize,
) -> Result<(), CurandError> {
    // SAFETY: the caller's obligation.
    unsafe { generator(gen) }?.fill(|kernels, stream, at| {
        // SAFETY: the caller vouches for `out` and `num`.
        unsafe { random::uniform_raw::<T>(kernels, stream, out as CUdeviceptr, num, at) }
    })
}

/// A normal or log-normal fill of `num` elements at `out`.
///
/// # Safety
/// As [`uniform`].
unsafe fn normal<T: NormalElement>(
    gen: sys::curandGenerator_t,
    out: *mut T,
    num: usize,
    draw: Normal<T>,
) -> Result<(), CurandError> {
    // SAFETY: the caller's obligation.
    unsafe { generator(gen) }?.fill(|kernels, stream, at| {
        // SAFETY: the caller vouches for `out` and `num`.
        unsafe { random::normal_raw(kernels, stream, out as CUdeviceptr, num, at, draw) }
    })
}

pub mod generate {
    //! The fills, one per cuRAND call. Each starts at the generator's position and advances it
    //! by the Philox blocks it consumed. Normal fills of odd length are allowed.
    //!
    //! # Safety (every function)
    //! `gen` is a live generator bound to a stream; `out` is a device address of that stream's
    //! context, aligned for its type, with `num` elements writable and not in use by other work
    //! until the fill is done.

    use super::{normal, sys, uniform, CurandError, LogNormalFill, Normal, NormalFill, UniformFill};

    /// The uniform fills, each with its [`UniformFill`] impl.
    macro_rules! uniform_fills {
        ($($(#[$doc:meta])* $f:ident: $t:ty;)+) => {$(
            $(#[$doc])*
            ///
            /// # Safety
            /// See the module documentation.
            pub unsafe fn $f(
                gen: sys::curandGenerator_t,
                out: *mut $t,
                num: usize,
            ) -> Result<(), CurandError> {
                // SAFETY: the caller's obligation.
                unsafe { uniform(gen, out, num) }
            }

            impl UniformFill<$t> for sys::curandGenerator_t {
                unsafe fn fill(self, out: *mut $t, num: usize) -> Result<(), CurandError> {
                    // SAFETY: the caller's obligation.
                    unsafe { $f(self, out, num) }
                }
            }
        )+};
    }

    /// The normal and log-normal fills (`Normal`'s variant), each with its [`NormalFill`] or
    /// [`LogNormalFill`] impl.
    macro_rules! normal_fills {
        ($($(#[$doc:meta])* $f:ident: $t:ty, $draw:ident, $fill:ident;)+) => {$(
            $(#[$doc])*
            ///
            /// # Safety
            /// See the module documentation.
            pub unsafe fn $f(
                gen: sys::curandGenerator_t,
                out: *mut $t,
                num: usize,
                mean: $t,
                std: $t,
            ) -> Result<(), CurandError> {
                // SAFETY: the caller's obligation.
                unsafe { normal(gen, out, num, Normal::$draw { mean, std }) }
            }

            impl $fill<$t> for sys::curandGenerator_t {
                unsafe fn fill(self, o: *mut $t, n: usize, m: $t, s: $t) -> Result<(), CurandError> {
                    // SAFETY: the caller's obligation.
                    unsafe { $f(self, o, n, m, s) }
                }
            }
        )+};
    }

    uniform_fills! {
        /// `num` f32 uniform in (0, 1].
        #[doc(alias = "curandGenerateUniform")]
        uniform_f32: f32;
        /// `num` f64 uniform in (0, 1].
        #[doc(alias = "curandGenerateUniformDouble")]
        uniform_f64: f64;
        /// `num` u32 with every bit random.
        #[doc(alias = "curandGenerate")]
        uniform_u32: u32;
        /// `num` u64 with every bit random.
        #[doc(alias = "curandGenerateLongLong")]
        uniform_u64: u64;
    }

    normal_fills! {
        /// `num` f32 from `N(mean, std^2)`.
        #[doc(alias = "curandGenerateNormal")]
        normal_f32: f32, Normal, NormalFill;
        /// `num` f64 from `N(mean, std^2)`.
        #[doc(alias = "curandGenerateNormalDouble")]
        normal_f64: f64, Normal, NormalFill;
        /// `num` f32 from `exp(N(mean, std^2))`.
        #[doc(alias = "curandGenerateLogNormal")]
        log_normal_f32: f32, LogNormal, LogNormalFill;
        /// `num` f64 from `exp(N(mean, std^2))`.
        #[doc(alias = "curandGenerateLogNormalDouble")]
        log_normal_f64: f64, LogNormal, LogNormalFill;
    }
}

/// Fill with uniformly distributed numbers of type `T`.
pub trait UniformFill<T> {
    /// # Safety
    /// As the [`generate`] functions.
    unsafe fn fill(self, out: *mut T, num: usize) -> Result<(), CurandError>;
}

/// Fill with normally distributed numbers of type `T`.
pub trait NormalFill<T> {
    /// # Safety
    /// As the [`generate`] functions.
    unsafe fn fill(self, o: *mut T, n: usize, m: T, s: T) -> Result<(), CurandError>;
}

/// Fill with log-normally distributed numbers of type `T`.
pub trait LogNormalFill<T> {
    /// # Safety
    /// As the [`generate`] functions.
    unsafe fn fill(self, o: *mut T, n: usize, m: T, s: T) -> Result<(), CurandError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generators_are_philox_or_refused() {
        for kind in [RngType::CURAND_RNG_PSEUDO_DEFAULT, RngType::CURAND_RNG_PSEUDO_PHILOX4_32_10] {
            let g = create_generator_kind(kind).unwrap();
            // SAFETY: just created; destroyed once.
            unsafe {
                set_seed(g, 42).unwrap();
                set_offset(g, 7).unwrap();
                assert_eq!(generator(g).unwrap().lock().at, Philox { seed: 42, offset: 7 });
                // Unbound: fills and set_stream are refused, nothing is launched.
                let unbound = Err(CurandError(Status::CURAND_STATUS_NOT_INITIALIZED));
                assert_eq!(generate::uniform_f32(g, std::ptr::null_mut(), 4), unbound);
                assert_eq!(set_stream(g, std::ptr::null_mut()), unbound);
                destroy_generator(g).unwrap();
            }
        }
        let refused = Err(CurandError(Status::CURAND_STATUS_TYPE_ERROR));
        assert_eq!(create_generator_kind(RngType::CURAND_RNG_QUASI_SOBOL32).map(|_| ()), refused);
        assert_eq!(create_generator_kind(RngType::CURAND_RNG_TEST).map(|_| ()), refused);
        // SAFETY: null is refused before any access.
        assert!(unsafe { destroy_generator(std::ptr::null_mut()) }.is_err());
        assert_eq!(
            CurandError(Status::CURAND_STATUS_TYPE_ERROR).to_string(),
            "CurandError(CURAND_STATUS_TYPE_ERROR)"
        );
        assert!(Status::CURAND_STATUS_SUCCESS.result().is_ok());
    }
}
