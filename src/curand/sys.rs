//! The cuRAND types that callers name, with cuRAND's numeric values and cudarc 0.19's names and
//! derives. Plain Rust enums. No cuRAND library is behind them: [`curandGenerator_t`] points at
//! this crate's own generator ([`curandGenerator_st`]).
//!
//! The functions are the cuRAND entry points this crate's Philox generator implements
//! (generators, seed, offset, stream, the uniform, normal and log-normal fills), each forwarding to
//! its `result` function and returning its status. Poisson and quasi-random
//! generation, host generators and orderings are absent; `scripts/cudarc-paths` lists them.
#![allow(non_camel_case_types, non_snake_case)] // cuRAND's own names

use core::ffi::{c_uint, c_ulonglong};

use super::result::{self, generate};

pub use super::result::curandGenerator_st;
pub use crate::driver::sys::CUstream_st;

/// A generator: a pointer to this crate's generator, made by
/// [`create_generator`](super::result::create_generator).
pub type curandGenerator_t = *mut curandGenerator_st;
/// A CUDA stream, as the runtime API names it (the same object as a driver `CUstream`).
pub type cudaStream_t = *mut CUstream_st;
pub use self::curandOrdering as curandOrdering_t;
pub use self::curandRngType as curandRngType_t;
pub use self::curandStatus as curandStatus_t;

/// The status every cuRAND call returns.
#[repr(u32)]
#[derive(Debug, Copy, Clone, Hash, PartialOrd, Ord, PartialEq, Eq)]
pub enum curandStatus {
    CURAND_STATUS_SUCCESS = 0,
    CURAND_STATUS_VERSION_MISMATCH = 100,
    CURAND_STATUS_NOT_INITIALIZED = 101,
    CURAND_STATUS_ALLOCATION_FAILED = 102,
    CURAND_STATUS_TYPE_ERROR = 103,
    CURAND_STATUS_OUT_OF_RANGE = 104,
    CURAND_STATUS_LENGTH_NOT_MULTIPLE = 105,
    CURAND_STATUS_DOUBLE_PRECISION_REQUIRED = 106,
    CURAND_STATUS_LAUNCH_FAILURE = 201,
    CURAND_STATUS_PREEXISTING_FAILURE = 202,
    CURAND_STATUS_INITIALIZATION_FAILED = 203,
    CURAND_STATUS_ARCH_MISMATCH = 204,
    CURAND_STATUS_INTERNAL_ERROR = 999,
}

/// Generator types. Every pseudo-random type runs this crate's Philox4x32-10; quasi-random types
/// are refused.
#[repr(u32)]
#[derive(Debug, Copy, Clone, Hash, PartialOrd, Ord, PartialEq, Eq)]
pub enum curandRngType {
    CURAND_RNG_TEST = 0,
    CURAND_RNG_PSEUDO_DEFAULT = 100,
    CURAND_RNG_PSEUDO_XORWOW = 101,
    CURAND_RNG_PSEUDO_MRG32K3A = 121,
    CURAND_RNG_PSEUDO_MTGP32 = 141,
    CURAND_RNG_PSEUDO_MT19937 = 142,
    CURAND_RNG_PSEUDO_PHILOX4_32_10 = 161,
    CURAND_RNG_QUASI_DEFAULT = 200,
    CURAND_RNG_QUASI_SOBOL32 = 201,
    CURAND_RNG_QUASI_SCRAMBLED_SOBOL32 = 202,
    CURAND_RNG_QUASI_SOBOL64 = 203,
    CURAND_RNG_QUASI_SCRAMBLED_SOBOL64 = 204,
}

/// Result orderings (CUDA 13.0's list). This crate has one ordering: element `i` of a fill is a
/// function of the seed, the offset and `i`.
#[repr(u32)]
#[derive(Debug, Copy, Clone, Hash, PartialOrd, Ord, PartialEq, Eq)]
pub enum curandOrdering {
    CURAND_ORDERING_PSEUDO_BEST = 100,
    CURAND_ORDERING_PSEUDO_DEFAULT = 101,
    CURAND_ORDERING_PSEUDO_SEEDED = 102,
    CURAND_ORDERING_PSEUDO_LEGACY = 103,
    CURAND_ORDERING_PSEUDO_DYNAMIC = 104,
    CURAND_ORDERING_QUASI_DEFAULT = 201,
}

/// The status of a `result` call.
fn code(r: Result<(), result::CurandError>) -> curandStatus_t {
    match r {
        Ok(()) => curandStatus_t::CURAND_STATUS_SUCCESS,
        Err(result::CurandError(status)) => status,
    }
}

/// Makes a generator of `rng_type` and writes it to `*generator`, as
/// [`result::create_generator_kind`] (every pseudo-random type is this crate's Philox4x32-10;
/// other types are `CURAND_STATUS_TYPE_ERROR`). The generator is unbound: fills on it are
/// `CURAND_STATUS_NOT_INITIALIZED` until [`CudaRng::new`](super::CudaRng::new) binds one to a
/// stream.
///
/// # Safety
/// `generator` must be null (`CURAND_STATUS_NOT_INITIALIZED`) or writable.
pub unsafe fn curandCreateGenerator(
    generator: *mut curandGenerator_t,
    rng_type: curandRngType_t,
) -> curandStatus_t {
    if generator.is_null() {
        return curandStatus_t::CURAND_STATUS_NOT_INITIALIZED;
    }
    match result::create_generator_kind(rng_type) {
        Ok(g) => {
            // SAFETY: not null, and writable by the caller's contract.
            unsafe { generator.write(g) };
            curandStatus_t::CURAND_STATUS_SUCCESS
        }
        Err(result::CurandError(status)) => status,
    }
}

/// Destroys a generator, as [`result::destroy_generator`].
///
/// # Safety
/// As [`result::destroy_generator`].
pub unsafe fn curandDestroyGenerator(generator: curandGenerator_t) -> curandStatus_t {
    // SAFETY: the caller's obligations, passed on.
    code(unsafe { result::destroy_generator(generator) })
}

/// Sets the seed, as [`result::set_seed`].
///
/// # Safety
/// As [`result::set_seed`].
pub unsafe fn curandSetPseudoRandomGeneratorSeed(
    generator: curandGenerator_t,
    seed: c_ulonglong,
) -> curandStatus_t {
    // SAFETY: the caller's obligations, passed on.
    code(unsafe { result::set_seed(generator, seed) })
}

/// Sets the offset, as [`result::set_offset`].
///
/// # Safety
/// As [`result::set_offset`].
pub unsafe fn curandSetGeneratorOffset(generator: curandGenerator_t, offset: c_ulonglong) -> curandStatus_t {
    // SAFETY: the caller's obligations, passed on.
    code(unsafe { result::set_offset(generator, offset) })
}

/// Orders the generator's later fills on `stream`, as [`result::set_stream`].
///
/// # Safety
/// As [`result::set_stream`].
pub unsafe fn curandSetStream(generator: curandGenerator_t, stream: cudaStream_t) -> curandStatus_t {
    // SAFETY: the caller's obligations, passed on.
    code(unsafe { result::set_stream(generator, stream) })
}

/// A uniform fill of one element type, forwarding to its `generate` function.
macro_rules! uniform_fill {
    ($(#[$doc:meta])* $name:ident => $target:ident, $t:ty) => {
        $(#[$doc])*
        ///
        /// # Safety
        #[doc = concat!("As [`generate::", stringify!($target), "`].")]
        pub unsafe fn $name(generator: curandGenerator_t, outputPtr: *mut $t, num: usize) -> curandStatus_t {
            // SAFETY: the caller's obligations, passed on.
            code(unsafe { generate::$target(generator, outputPtr, num) })
        }
    };
}

uniform_fill!(
    /// `num` u32 with every bit random, as [`generate::uniform_u32`].
    curandGenerate => uniform_u32, c_uint
);
uniform_fill!(
    /// `num` u64 with every bit random, as [`generate::uniform_u64`].
    curandGenerateLongLong => uniform_u64, c_ulonglong
);
uniform_fill!(
    /// `num` f32 uniform in (0, 1], as [`generate::uniform_f32`].
    curandGenerateUniform => uniform_f32, f32
);
uniform_fill!(
    /// `num` f64 uniform in (0, 1], as [`generate::uniform_f64`].
    curandGenerateUniformDouble => uniform_f64, f64
);

/// A normal or log-normal fill of one element type, forwarding to its `generate` function.
macro_rules! normal_fill {
    ($(#[$doc:meta])* $name:ident => $target:ident, $t:ty) => {
        $(#[$doc])*
        ///
        /// # Safety
        #[doc = concat!("As [`generate::", stringify!($target), "`].")]
        pub unsafe fn $name(
            generator: curandGenerator_t,
            outputPtr: *mut $t,
            n: usize,
            mean: $t,
            stddev: $t,
        ) -> curandStatus_t {
            // SAFETY: the caller's obligations, passed on.
            code(unsafe { generate::$target(generator, outputPtr, n, mean, stddev) })
        }
    };
}

normal_fill!(
    /// `n` f32 from `N(mean, stddev^2)`, as [`generate::normal_f32`] (odd `n` included).
    curandGenerateNormal => normal_f32, f32
);
normal_fill!(
    /// `n` f64 from `N(mean, stddev^2)`, as [`generate::normal_f64`] (odd `n` included).
    curandGenerateNormalDouble => normal_f64, f64
);
normal_fill!(
    /// `n` f32 from `exp(N(mean, stddev^2))`, as [`generate::log_normal_f32`].
    curandGenerateLogNormal => log_normal_f32, f32
);
normal_fill!(
    /// `n` f64 from `exp(N(mean, stddev^2))`, as [`generate::log_normal_f64`].
    curandGenerateLogNormalDouble => log_normal_f64, f64
);
