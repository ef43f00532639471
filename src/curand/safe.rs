//! The safe layer: [`CudaRng`].

use std::sync::Arc;

use super::result::{self, CurandError};
use super::sys;
use crate::driver::{CudaStream, DevicePtrMut};
use crate::kernels::args::same_context;

/// A random number generator (this crate's Philox4x32-10) filling device buffers on one stream.
/// Keeps the stream (and so its context) alive. Not `Send`, as cudarc's.
///
/// Fills start where the previous one ended, so consecutive fills differ; `set_seed(s)` and
/// `set_offset(0)` replay the stream of seed `s`. The values differ from cuRAND's.
pub struct CudaRng {
    gen: sys::curandGenerator_t,
    stream: Arc<CudaStream>,
}

impl CudaRng {
    /// A generator with `seed` at offset 0 whose fills are ordered on `stream`.
    pub fn new(seed: u64, stream: Arc<CudaStream>) -> Result<Self, CurandError> {
        let gen = result::create_generator()?;
        // Owned from here: dropped (and destroyed) on every early return.
        let mut rng = Self { gen, stream: stream.clone() };
        // SAFETY: `gen` is live while `rng` is.
        unsafe { &*rng.gen }.bind(stream)?;
        rng.set_seed(seed)?;
        Ok(rng)
    }

    /// Orders later fills on `stream`.
    ///
    /// # Safety
    /// Fills on the old and new streams are not ordered against each other: the caller must make
    /// sure they do not race on the same memory.
    pub unsafe fn set_stream(&mut self, stream: Arc<CudaStream>) -> Result<(), CurandError> {
        // SAFETY: the generator is live while `self` is.
        unsafe { &*self.gen }.bind(stream.clone())?;
        self.stream = stream;
        Ok(())
    }

    /// Sets the seed (the offset is kept).
    pub fn set_seed(&mut self, seed: u64) -> Result<(), CurandError> {
        // SAFETY: the generator is live while `self` is.
        unsafe { result::set_seed(self.gen, seed) }
    }

    /// Sets where the next fill starts (in Philox blocks of four 32-bit words).
    pub fn set_offset(&mut self, offset: u64) -> Result<(), CurandError> {
        // SAFETY: the generator is live while `self` is.
        unsafe { result::set_offset(self.gen, offset) }
    }

    /// Fills `dst` uniformly: f32 and f64 in (0, 1], u32 and u64 with every bit random.
    pub fn fill_with_uniform<T, Dst: DevicePtrMut<T>>(&self, dst: &mut Dst) -> Result<(), CurandError>
    where
        sys::curandGenerator_t: result::UniformFill<T>,
    {
        // SAFETY: `ptr` addresses the `num` elements of `dst`, a buffer of this stream's context,
        // held for writing until the fill is enqueued (see `fill`).
        self.fill(dst, |gen, ptr, num| unsafe { result::UniformFill::fill(gen, ptr, num) })
    }

    /// Fills `dst` from `N(mean, std^2)` (any length).
    pub fn fill_with_normal<T, Dst: DevicePtrMut<T>>(
        &self,
        dst: &mut Dst,
        mean: T,
        std: T,
    ) -> Result<(), CurandError>
    where
        sys::curandGenerator_t: result::NormalFill<T>,
    {
        // SAFETY: as in `fill_with_uniform`.
        self.fill(dst, |gen, ptr, num| unsafe { result::NormalFill::fill(gen, ptr, num, mean, std) })
    }

    /// Fills `dst` from `exp(N(mean, std^2))` (any length).
    pub fn fill_with_log_normal<T, Dst: DevicePtrMut<T>>(
        &self,
        dst: &mut Dst,
        mean: T,
        std: T,
    ) -> Result<(), CurandError>
    where
        sys::curandGenerator_t: result::LogNormalFill<T>,
    {
        // SAFETY: as in `fill_with_uniform`.
        self.fill(dst, |gen, ptr, num| unsafe { result::LogNormalFill::fill(gen, ptr, num, mean, std) })
    }

    /// Runs `fill` on the generator, `dst`'s address on this stream and its length, holding `dst`
    /// for writing until the fill is enqueued; a buffer of another context is refused.
    fn fill<T, Dst: DevicePtrMut<T>>(
        &self,
        dst: &mut Dst,
        fill: impl FnOnce(sys::curandGenerator_t, *mut T, usize) -> Result<(), CurandError>,
    ) -> Result<(), CurandError> {
        let num = dst.len();
        same_context(dst.stream(), &self.stream).map_err(result::to_status)?;
        let (ptr, _write) = dst.device_ptr_mut(&self.stream);
        fill(self.gen, ptr as *mut T, num)
    }
}

impl Drop for CudaRng {
    fn drop(&mut self) {
        let gen = std::mem::replace(&mut self.gen, std::ptr::null_mut());
        if !gen.is_null() {
            // SAFETY: created in `new`, destroyed once, here. Cannot fail for a non-null generator.
            let _ = unsafe { result::destroy_generator(gen) };
        }
    }
}
