//! The allocation and copy methods of [`CudaStream`].

use std::marker::PhantomData;
use std::mem::size_of;
use std::sync::Arc;

use super::host::{is_plain_host, HostSlice};
use super::pointers::{DevicePtr, DevicePtrMut, SyncOnDrop};
use super::repr::{DeviceRepr, ValidAsZeroBits};
use super::slice::CudaSlice;
use crate::driver::result::{self, DriverError};
use crate::driver::staging;
use crate::driver::stream::CudaStream;
use crate::driver::sys;
use crate::driver::tracking::{Access, SliceEvents, SyncMode};

impl CudaStream {
    /// Refuses a copy to or from pageable host memory (`guard` is its host side's guard) while
    /// this stream is being captured, with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`: the graph
    /// would record a copy from or into memory (or a reused staging buffer) that the caller may
    /// free or reuse before the graph is launched. Pinned memory is fine (its owner waits).
    /// Asks the driver only for pageable copies, so captures begun outside this crate are seen.
    fn refuse_pageable_in_capture(&self, guard: &SyncOnDrop<'_>) -> Result<(), DriverError> {
        if is_plain_host(guard) && self.is_capturing_now() {
            return Err(DriverError(sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED));
        }
        Ok(())
    }
}

/// New host buffers at least this large are faulted in by several threads before a direct
/// (unstaged) copy into them.
const PREFAULT_BYTES: usize = 64 << 20;

/// Touches every page of a new buffer from several threads. The driver writes a pageable
/// destination page by page from one thread, and for a fresh allocation the page faults
/// (zero-filling each page) dominate: faulting in parallel first makes a large `clone_dtoh`
/// several times faster.
fn prefault<T>(buffer: &mut [std::mem::MaybeUninit<T>]) {
    use rayon::prelude::*;
    const PAGE: usize = 4096;
    let bytes = std::mem::size_of_val(buffer);
    // SAFETY: the same memory viewed as bytes; `MaybeUninit<u8>` has no validity requirement
    // and the exclusive borrow of `buffer` covers it for the lifetime of `raw`.
    let raw = unsafe {
        std::slice::from_raw_parts_mut(buffer.as_mut_ptr().cast::<std::mem::MaybeUninit<u8>>(), bytes)
    };
    raw.par_chunks_mut(256 * PAGE).for_each(|chunk| {
        for page in chunk.chunks_mut(PAGE) {
            page[0].write(0);
        }
    });
}

/// `len * size_of::<T>()`, or `CUDA_ERROR_OUT_OF_MEMORY` when that does not fit in `usize`.
pub(super) fn byte_len<T>(len: usize) -> Result<usize, DriverError> {
    len.checked_mul(size_of::<T>()).ok_or(DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY))
}

impl CudaStream {
    fn wrap_allocation<T>(self: &Arc<Self>, cu_device_ptr: sys::CUdeviceptr, len: usize) -> CudaSlice<T> {
        let events = self.ctx.is_event_tracking().then(|| Arc::new(SliceEvents::default()));
        CudaSlice { cu_device_ptr, len, events, stream: self.clone(), marker: PhantomData }
    }

    /// An empty slice (no device allocation).
    pub fn null<T>(self: &Arc<Self>) -> Result<CudaSlice<T>, DriverError> {
        self.ctx.bind_to_thread()?;
        Ok(self.wrap_allocation(0, 0))
    }

    /// Allocates `len` values of `T` in this stream's order (`cuMemAllocAsync` where supported).
    ///
    /// # Safety
    /// The memory is uninitialised: write it before reading it as `T`.
    #[doc(alias = "cuMemAllocAsync")]
    #[doc(alias = "cuMemAlloc")]
    pub unsafe fn alloc<T: DeviceRepr>(self: &Arc<Self>, len: usize) -> Result<CudaSlice<T>, DriverError> {
        self.ctx.bind_to_thread()?;
        let bytes = byte_len::<T>(len)?;
        if bytes == 0 {
            return Ok(self.wrap_allocation(0, len));
        }
        let malloc = || {
            if self.ctx.has_async_alloc {
                // SAFETY: the stream is alive; the memory is handed to a CudaSlice that frees it.
                unsafe { result::malloc_async(self.cu_stream, bytes) }
            } else {
                // SAFETY: as above.
                unsafe { result::malloc_sync(bytes) }
            }
        };
        const OOM: sys::CUresult = sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY;
        let ptr = match malloc() {
            // Freed memory may still be pending on streams or kept by the pool: reclaim it and
            // retry once (not while capturing, where waiting would invalidate the capture).
            Err(DriverError(OOM)) if !self.is_capturing_now() => {
                self.ctx.reclaim_for_retry()?;
                malloc().inspect_err(|e| {
                    if e.0 == OOM {
                        self.ctx.note_out_of_memory(bytes);
                    }
                })?
            }
            other => other?,
        };
        let slice = self.wrap_allocation(ptr, len);
        if let Some(events) = &slice.events {
            if self.ctx.has_async_alloc && self.ctx.sync_mode(self) == SyncMode::On {
                // The allocation is itself stream-ordered: other streams must wait for it.
                events.record_after(Access::Write, self);
            }
        }
        Ok(slice)
    }

    /// Allocates `len` zeroed values of `T`.
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
        self: &Arc<Self>,
        len: usize,
    ) -> Result<CudaSlice<T>, DriverError> {
        // SAFETY: the memory is zeroed below before anyone can read it.
        let mut dst = unsafe { self.alloc(len) }?;
        self.memset_zeros(&mut dst)?;
        Ok(dst)
    }

    /// Sets every byte of `dst` to zero.
    #[doc(alias = "cuMemsetD8Async")]
    pub fn memset_zeros<T: DeviceRepr + ValidAsZeroBits, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()?;
        let num_bytes = dst.num_bytes();
        let (ptr, _record) = dst.device_ptr_mut(self);
        if num_bytes == 0 {
            return Ok(());
        }
        // SAFETY: `ptr` addresses `num_bytes` bytes of live device memory.
        unsafe { result::memset_d8_async(ptr, 0, num_bytes, self.cu_stream) }
    }

    /// Copies host memory into a new slice.
    #[deprecated = "Use clone_htod"]
    pub fn memcpy_stod<T: DeviceRepr, Src: HostSlice<T> + ?Sized>(
        self: &Arc<Self>,
        src: &Src,
    ) -> Result<CudaSlice<T>, DriverError> {
        self.clone_htod(src)
    }

    /// Copies host memory (`[T]`, `Vec<T>`, `[T; N]`, [`PinnedHostSlice`](super::PinnedHostSlice)) into a new slice.
    pub fn clone_htod<T: DeviceRepr, Src: HostSlice<T> + ?Sized>(
        self: &Arc<Self>,
        src: &Src,
    ) -> Result<CudaSlice<T>, DriverError> {
        // SAFETY: every element is written by the copy below before anyone can read it.
        let mut dst = unsafe { self.alloc(src.len()) }?;
        self.memcpy_htod(src, &mut dst)?;
        Ok(dst)
    }

    /// Copies host memory into `dst`. Panics if `dst` is shorter than `src`.
    #[doc(alias = "cuMemcpyHtoDAsync")]
    pub fn memcpy_htod<T: DeviceRepr, Src: HostSlice<T> + ?Sized, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        src: &Src,
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        assert!(dst.len() >= src.len(), "memcpy_htod: destination shorter than source");
        self.ctx.bind_to_thread()?;
        // SAFETY: the host slice is used only for this copy on `self`.
        let (src, record_src) = unsafe { src.stream_synced_slice(self) };
        if src.is_empty() {
            return Ok(());
        }
        self.refuse_pageable_in_capture(&record_src)?;
        let (dst, _record_dst) = dst.device_ptr_mut(self);
        // Plain host memory (its guard does nothing) is pageable: large copies are staged.
        if is_plain_host(&record_src) {
            // SAFETY: `src` is readable for its length during the call; `dst` holds at least as
            // many bytes and was ordered for writing on `self` above.
            if unsafe { staging::htod(self, dst, src.as_ptr().cast(), std::mem::size_of_val(src)) }? {
                return Ok(());
            }
        }
        // SAFETY: `dst` holds at least `src.len()` values; pageable sources are staged before the
        // call returns, pinned ones are kept alive by their owner's event until the copy is done.
        unsafe { result::memcpy_htod_async(dst, src, self.cu_stream) }
    }

    /// Copies device memory into a new `Vec`.
    #[deprecated = "Use clone_dtoh"]
    pub fn memcpy_dtov<T: DeviceRepr, Src: DevicePtr<T>>(
        self: &Arc<Self>,
        src: &Src,
    ) -> Result<Vec<T>, DriverError> {
        self.clone_dtoh(src)
    }

    /// Copies device memory into a new `Vec` (returns once the data is there).
    #[doc(alias = "cuMemcpyDtoHAsync")]
    pub fn clone_dtoh<T: DeviceRepr, Src: DevicePtr<T>>(
        self: &Arc<Self>,
        src: &Src,
    ) -> Result<Vec<T>, DriverError> {
        self.ctx.bind_to_thread()?;
        let len = src.len();
        let bytes = byte_len::<T>(len)?;
        if bytes > 0 {
            self.refuse_pageable_in_capture(&SyncOnDrop::Sync(None))?;
        }
        let mut dst: Vec<T> = Vec::with_capacity(len);
        {
            let (ptr, _record_src) = src.device_ptr(self);
            // SAFETY: the Vec's buffer has room for `len` values and nothing else uses it.
            let staged = bytes > 0 && unsafe { staging::dtoh(self, dst.as_mut_ptr().cast(), ptr, bytes) }?;
            if bytes > 0 && !staged {
                if bytes >= PREFAULT_BYTES {
                    prefault(&mut dst.spare_capacity_mut()[..len]);
                }
                // SAFETY: the Vec's buffer has room for `len` values; it is pageable memory, so
                // the copy has finished when the call returns.
                unsafe {
                    sys::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast(), ptr, bytes, self.cu_stream)
                        .result()?;
                }
            }
        }
        // SAFETY: the copy above initialised all `len` values.
        unsafe { dst.set_len(len) };
        Ok(dst)
    }

    /// Copies device memory into host memory. Panics if `dst` is shorter than `src`.
    #[doc(alias = "cuMemcpyDtoHAsync")]
    pub fn memcpy_dtoh<T: DeviceRepr, Src: DevicePtr<T>, Dst: HostSlice<T> + ?Sized>(
        self: &Arc<Self>,
        src: &Src,
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        assert!(dst.len() >= src.len(), "memcpy_dtoh: destination shorter than source");
        self.ctx.bind_to_thread()?;
        let n = src.len();
        // SAFETY: the host slice is used only for this copy on `self`.
        let (dst, record_dst) = unsafe { dst.stream_synced_mut_slice(self) };
        if n == 0 || size_of::<T>() == 0 {
            return Ok(());
        }
        self.refuse_pageable_in_capture(&record_dst)?;
        let (src, _record_src) = src.device_ptr(self);
        // Plain host memory (its guard does nothing) is pageable: large copies are staged.
        if is_plain_host(&record_dst) {
            let dst = &mut dst[..n];
            // SAFETY: `dst` is writable for its length and used by nothing else during the call;
            // `src` holds as many bytes and was ordered for reading on `self` above.
            if unsafe { staging::dtoh(self, dst.as_mut_ptr().cast(), src, std::mem::size_of_val(dst)) }? {
                return Ok(());
            }
        }
        // SAFETY: `src` holds `n` values and `dst[..n]` has room for them; pageable destinations
        // are written before the call returns, pinned ones are guarded by their event.
        unsafe { result::memcpy_dtoh_async(&mut dst[..n], src, self.cu_stream) }
    }

    /// Copies device memory into device memory (across contexts too). Panics if `dst` is shorter.
    #[doc(alias = "cuMemcpyDtoDAsync")]
    pub fn memcpy_dtod<T, Src: DevicePtr<T>, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        src: &Src,
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        assert!(dst.len() >= src.len(), "memcpy_dtod: destination shorter than source");
        self.ctx.bind_to_thread()?;
        let num_bytes = src.num_bytes();
        let src_ctx = src.stream().context().clone();
        if src_ctx == self.ctx {
            let (src_ptr, _record_src) = src.device_ptr(self);
            let (dst_ptr, _record_dst) = dst.device_ptr_mut(self);
            if num_bytes == 0 {
                return Ok(());
            }
            // SAFETY: both ranges hold `num_bytes` bytes of live device memory.
            unsafe { result::memcpy_dtod_async(dst_ptr, src_ptr, num_bytes, self.cu_stream) }
        } else {
            // Events cannot be recorded on another context's stream: record the read on the
            // source's own stream, and make this stream wait for everything on that stream.
            let (src_ptr, _record_src) = src.device_ptr(src.stream());
            let (dst_ptr, _record_dst) = dst.device_ptr_mut(self);
            self.wait(&src.stream().record_event(None)?)?;
            if num_bytes == 0 {
                return Ok(());
            }
            // SAFETY: both ranges hold `num_bytes` bytes of live device memory in their contexts.
            unsafe {
                result::memcpy_peer_async(
                    self.ctx.cu_ctx,
                    dst_ptr,
                    src_ctx.cu_ctx,
                    src_ptr,
                    num_bytes,
                    self.cu_stream,
                )
            }
        }
    }

    /// Copies device memory into a new slice.
    pub fn clone_dtod<T: DeviceRepr, Src: DevicePtr<T>>(
        self: &Arc<Self>,
        src: &Src,
    ) -> Result<CudaSlice<T>, DriverError> {
        // SAFETY: every element is written by the copy below before anyone can read it.
        let mut dst = unsafe { self.alloc(src.len()) }?;
        self.memcpy_dtod(src, &mut dst)?;
        Ok(dst)
    }

    /// Takes ownership of an existing allocation (for example one from [`CudaSlice::leak`]).
    ///
    /// # Safety
    /// `cu_device_ptr` must be a live allocation of at least `len * size_of::<T>()` bytes in this
    /// context, owned by nobody else, and freeable in this stream's order; its bytes must be
    /// valid `T`s before they are read.
    pub unsafe fn upgrade_device_ptr<T>(
        self: &Arc<Self>,
        cu_device_ptr: sys::CUdeviceptr,
        len: usize,
    ) -> CudaSlice<T> {
        self.wrap_allocation(cu_device_ptr, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefault_writes_the_first_byte_of_every_page_and_nothing_past_the_end() {
        let len = 3 * 4096 + 5;
        let mut buffer: Vec<u8> = Vec::with_capacity(len + 7);
        buffer.spare_capacity_mut().iter_mut().for_each(|b| {
            b.write(0xAB);
        });
        prefault(&mut buffer.spare_capacity_mut()[..len]);
        // SAFETY: every byte of the capacity was written above.
        unsafe { buffer.set_len(len + 7) };
        for (i, &b) in buffer.iter().enumerate() {
            let want = if i < len && i % 4096 == 0 { 0 } else { 0xAB };
            assert_eq!(b, want, "byte {i}");
        }
    }
}
