//! [`CudaSlice`], its views [`CudaView`] / [`CudaViewMut`], and the tracked uses and free that
//! order them across streams.

use std::marker::PhantomData;
use std::mem::{size_of, ManuallyDrop};
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use super::pointers::SyncOnDrop;
use super::repr::DeviceRepr;
use crate::driver::context::CudaContext;
use crate::driver::result::{self, DriverError};
use crate::driver::stream::CudaStream;
use crate::driver::sys;
use crate::driver::tracking::{Access, SliceEvents, SyncMode};

/// Frees `ptr`, allocated on `stream`, after the uses `events` recorded on other streams, with
/// `stream`'s context bound whatever error is parked (errors are parked).
pub(crate) fn free_allocation(ptr: sys::CUdeviceptr, stream: &CudaStream, events: Option<&SliceEvents>) {
    stream.ctx.release(|ctx| {
        if let Some(events) = events {
            if ctx.sync_mode(stream) == SyncMode::On {
                events.wait_before(Access::Write, stream);
            }
        }
        if ctx.has_async_alloc {
            // SAFETY: the caller owns the allocation; pending uses are ordered before `stream` above.
            ctx.record_err(unsafe { result::free_async(ptr, stream.cu_stream) });
        } else {
            ctx.record_err(stream.synchronize_tracking());
            // SAFETY: the caller owns the allocation and its stream has drained.
            ctx.record_err(unsafe { result::free_sync(ptr) });
        }
    });
}

/// Starts a tracked use of a slice on `stream`: waits as needed and returns the guard that
/// records the use once it has been submitted.
pub(super) fn begin_use<'a>(
    events: Option<&'a Arc<SliceEvents>>,
    access: Access,
    stream: &'a CudaStream,
) -> SyncOnDrop<'a> {
    let Some(events) = events else {
        return SyncOnDrop::Record(None);
    };
    match stream.ctx.sync_mode(stream) {
        SyncMode::Off => SyncOnDrop::Record(None),
        SyncMode::Capturing => {
            stream.capture.slice(events, access);
            SyncOnDrop::Record(None)
        }
        SyncMode::On => {
            events.wait_before(access, stream);
            SyncOnDrop::Record(events.event(access, stream).map(|e| (e, stream)))
        }
    }
}

/// Device memory holding `len` values of `T`, allocated on (and freed in the order of) a stream.
///
/// Dropping it never panics: it waits (on the device) for pending uses on other streams, frees
/// in stream order, and parks any error on the context.
#[derive(Debug)]
pub struct CudaSlice<T> {
    pub(crate) cu_device_ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) events: Option<Arc<SliceEvents>>,
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) marker: PhantomData<*const T>,
}

// SAFETY: the slice owns device memory, not host `T`s; its handles are thread safe.
unsafe impl<T> Send for CudaSlice<T> {}
// SAFETY: as above; shared access only reads the pointer or goes through thread-safe events.
unsafe impl<T> Sync for CudaSlice<T> {}

impl<T> Drop for CudaSlice<T> {
    fn drop(&mut self) {
        if self.cu_device_ptr == 0 {
            return;
        }
        if let Some(events) = &self.events {
            // Only capture logs and graphs clone a slice's events (while the slice is borrowed,
            // so not concurrently with this drop): a second owner is a graph that may still be
            // launched. It gets the allocation, freed when it drops. A slice dropped while its
            // own stream is capturing is freed in the capture, as before.
            if Arc::strong_count(events) > 1 && self.stream.ctx.sync_mode(&self.stream) != SyncMode::Capturing
            {
                events.defer_free(self.cu_device_ptr, self.stream.clone());
                return;
            }
        }
        free_allocation(self.cu_device_ptr, &self.stream, self.events.as_deref());
    }
}

impl<T> CudaSlice<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Number of bytes.
    pub fn num_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> usize {
        self.stream.ctx.ordinal
    }

    /// The context the memory belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.stream.ctx
    }

    /// The stream the memory was allocated on and will be freed on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Frees now and returns the error, if any, instead of parking it on the context.
    pub fn close(self) -> Result<(), DriverError> {
        let ctx = self.stream.ctx.clone();
        ctx.check_err()?;
        drop(self);
        ctx.check_err()
    }

    /// Gives up ownership of the allocation (after pending uses elsewhere); the caller frees it.
    pub fn leak(self) -> sys::CUdeviceptr {
        let mut this = ManuallyDrop::new(self);
        if let Some(events) = &this.events {
            if this.stream.ctx.sync_mode(&this.stream) == SyncMode::On {
                events.wait_before(Access::Write, &this.stream);
            }
        }
        // SAFETY: each field is moved out exactly once and `this` is never dropped.
        let (events, stream) = unsafe { (std::ptr::read(&this.events), std::ptr::read(&this.stream)) };
        drop(events);
        drop(stream);
        std::mem::take(&mut this.cu_device_ptr)
    }

    /// The whole slice as a view.
    pub fn as_view(&self) -> CudaView<'_, T> {
        CudaView {
            ptr: self.cu_device_ptr,
            len: self.len,
            events: self.events.as_ref(),
            stream: &self.stream,
            marker: PhantomData,
        }
    }

    /// The whole slice as a mutable view.
    pub fn as_view_mut(&mut self) -> CudaViewMut<'_, T> {
        CudaViewMut {
            ptr: self.cu_device_ptr,
            len: self.len,
            events: self.events.as_ref(),
            stream: &self.stream,
            marker: PhantomData,
        }
    }

    /// A view of `bounds`; panics when out of range.
    pub fn slice(&self, bounds: impl RangeBounds<usize>) -> CudaView<'_, T> {
        self.try_slice(bounds).expect("CudaSlice::slice: range out of bounds")
    }

    /// A view of `bounds`, or `None` when out of range.
    pub fn try_slice(&self, bounds: impl RangeBounds<usize>) -> Option<CudaView<'_, T>> {
        self.as_view().try_slice(bounds)
    }

    /// A mutable view of `bounds`; panics when out of range.
    pub fn slice_mut(&mut self, bounds: impl RangeBounds<usize>) -> CudaViewMut<'_, T> {
        self.try_slice_mut(bounds).expect("CudaSlice::slice_mut: range out of bounds")
    }

    /// A mutable view of `bounds`, or `None` when out of range.
    pub fn try_slice_mut(&mut self, bounds: impl RangeBounds<usize>) -> Option<CudaViewMut<'_, T>> {
        let (start, end) = to_range(bounds, self.len)?;
        Some(CudaViewMut {
            ptr: offset::<T>(self.cu_device_ptr, start),
            len: end - start,
            events: self.events.as_ref(),
            stream: &self.stream,
            marker: PhantomData,
        })
    }

    /// Views the memory as `len` values of `S`, or `None` if they do not fit.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`.
    pub unsafe fn transmute<S>(&self, len: usize) -> Option<CudaView<'_, S>> {
        // SAFETY: forwarded to the caller.
        unsafe { self.as_view().transmute(len) }
    }

    /// Views the memory mutably as `len` values of `S`, or `None` if they do not fit.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`, and values written as `S` valid as `T`.
    pub unsafe fn transmute_mut<S>(&mut self, len: usize) -> Option<CudaViewMut<'_, S>> {
        fits::<T, S>(self.len, len).then_some(CudaViewMut {
            ptr: self.cu_device_ptr,
            len,
            events: self.events.as_ref(),
            stream: &self.stream,
            marker: PhantomData,
        })
    }

    /// Two views, `[0, mid)` and `[mid, len)`; panics if `mid > len`.
    pub fn split_at(&self, mid: usize) -> (CudaView<'_, T>, CudaView<'_, T>) {
        self.try_split_at(mid).expect("CudaSlice::split_at: mid > len")
    }

    /// Two views, `[0, mid)` and `[mid, len)`, or `None` if `mid > len`.
    pub fn try_split_at(&self, mid: usize) -> Option<(CudaView<'_, T>, CudaView<'_, T>)> {
        self.as_view().try_split_at(mid)
    }

    /// Two disjoint mutable views, `[0, mid)` and `[mid, len)`; panics if `mid > len`.
    pub fn split_at_mut(&mut self, mid: usize) -> (CudaViewMut<'_, T>, CudaViewMut<'_, T>) {
        self.try_split_at_mut(mid).expect("CudaSlice::split_at_mut: mid > len")
    }

    /// Two disjoint mutable views, or `None` if `mid > len`.
    pub fn try_split_at_mut(&mut self, mid: usize) -> Option<(CudaViewMut<'_, T>, CudaViewMut<'_, T>)> {
        split_mut(self.cu_device_ptr, self.len, self.events.as_ref(), &self.stream, mid)
    }
}

impl<T: DeviceRepr> CudaSlice<T> {
    /// A new allocation on the same stream with a copy of the contents.
    pub fn try_clone(&self) -> Result<Self, DriverError> {
        self.stream.clone_dtod(self)
    }
}

impl<T: DeviceRepr> Clone for CudaSlice<T> {
    /// Panics if the allocation or copy fails; use [`CudaSlice::try_clone`] to get the error.
    fn clone(&self) -> Self {
        self.try_clone().expect("CudaSlice::clone failed")
    }
}

impl<T: Clone + Default + DeviceRepr> TryFrom<CudaSlice<T>> for Vec<T> {
    type Error = DriverError;
    fn try_from(value: CudaSlice<T>) -> Result<Self, Self::Error> {
        value.stream.clone_dtoh(&value)
    }
}

fn offset<T>(ptr: sys::CUdeviceptr, elems: usize) -> sys::CUdeviceptr {
    ptr + (elems * size_of::<T>()) as u64
}

fn fits<T, S>(have: usize, want: usize) -> bool {
    match (want.checked_mul(size_of::<S>()), have.checked_mul(size_of::<T>())) {
        (Some(w), Some(h)) => w <= h,
        _ => false,
    }
}

fn split_mut<'a, T>(
    ptr: sys::CUdeviceptr,
    len: usize,
    events: Option<&'a Arc<SliceEvents>>,
    stream: &'a Arc<CudaStream>,
    mid: usize,
) -> Option<(CudaViewMut<'a, T>, CudaViewMut<'a, T>)> {
    (mid <= len).then(|| {
        (
            CudaViewMut { ptr, len: mid, events, stream, marker: PhantomData },
            CudaViewMut { ptr: offset::<T>(ptr, mid), len: len - mid, events, stream, marker: PhantomData },
        )
    })
}

/// `(start, end)` of `range` within `0..len`, or `None` when it does not fit.
fn to_range(range: impl RangeBounds<usize>, len: usize) -> Option<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&n) => n,
        Bound::Excluded(&n) => n.checked_add(1)?,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&n) => n.checked_add(1)?,
        Bound::Excluded(&n) => n,
        Bound::Unbounded => len,
    };
    (start <= end && end <= len).then_some((start, end))
}

/// A borrowed, read-only part of a [`CudaSlice`] (`&[T]` on the device).
#[derive(Debug)]
pub struct CudaView<'a, T> {
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) events: Option<&'a Arc<SliceEvents>>,
    pub(crate) stream: &'a Arc<CudaStream>,
    pub(crate) marker: PhantomData<&'a [T]>,
}

impl<T> Clone for CudaView<'_, T> {
    fn clone(&self) -> Self {
        CudaView {
            ptr: self.ptr,
            len: self.len,
            events: self.events,
            stream: self.stream,
            marker: PhantomData,
        }
    }
}

impl<'a, T> CudaView<'a, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn resize(&self, start: usize, end: usize) -> Self {
        CudaView {
            ptr: offset::<T>(self.ptr, start),
            len: end - start,
            events: self.events,
            stream: self.stream,
            marker: PhantomData,
        }
    }

    /// A sub-view of `bounds`; panics when out of range.
    pub fn slice(&self, bounds: impl RangeBounds<usize>) -> Self {
        self.try_slice(bounds).expect("CudaView::slice: range out of bounds")
    }

    /// A sub-view of `bounds`, or `None` when out of range.
    pub fn try_slice(&self, bounds: impl RangeBounds<usize>) -> Option<Self> {
        to_range(bounds, self.len).map(|(start, end)| self.resize(start, end))
    }

    /// Views the memory as `len` values of `S`, or `None` if they do not fit.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`.
    pub unsafe fn transmute<S>(&self, len: usize) -> Option<CudaView<'a, S>> {
        fits::<T, S>(self.len, len).then_some(CudaView {
            ptr: self.ptr,
            len,
            events: self.events,
            stream: self.stream,
            marker: PhantomData,
        })
    }

    /// Two views, `[0, mid)` and `[mid, len)`; panics if `mid > len`.
    pub fn split_at(&self, mid: usize) -> (Self, Self) {
        self.try_split_at(mid).expect("CudaView::split_at: mid > len")
    }

    /// Two views, or `None` if `mid > len`.
    pub fn try_split_at(&self, mid: usize) -> Option<(Self, Self)> {
        (mid <= self.len).then(|| (self.resize(0, mid), self.resize(mid, self.len)))
    }

    /// Consecutive sub-views of `chunk_size` elements; panics unless `chunk_size` divides the length.
    pub fn chunks_exact(&self, chunk_size: usize) -> impl Iterator<Item = CudaView<'a, T>> + '_ {
        assert!(chunk_size > 0 && self.len % chunk_size == 0, "chunk_size must divide the length");
        (0..self.len / chunk_size).map(move |i| self.resize(i * chunk_size, (i + 1) * chunk_size))
    }

    /// Like [`DevicePtr::device_ptr`](super::DevicePtr::device_ptr), with the guard living as long as the view's borrow.
    pub fn view_ptr(self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, begin_use(self.events, Access::Read, stream))
    }
}

/// A borrowed, writable part of a [`CudaSlice`] (`&mut [T]` on the device).
#[derive(Debug)]
pub struct CudaViewMut<'a, T> {
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) events: Option<&'a Arc<SliceEvents>>,
    pub(crate) stream: &'a Arc<CudaStream>,
    pub(crate) marker: PhantomData<&'a mut [T]>,
}

impl<'a, T> CudaViewMut<'a, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A read-only view of the same memory.
    pub fn as_view(&self) -> CudaView<'_, T> {
        CudaView {
            ptr: self.ptr,
            len: self.len,
            events: self.events,
            stream: self.stream,
            marker: PhantomData,
        }
    }

    /// Turns this into a read-only view with the same lifetime.
    pub fn into_view(self) -> CudaView<'a, T> {
        CudaView {
            ptr: self.ptr,
            len: self.len,
            events: self.events,
            stream: self.stream,
            marker: PhantomData,
        }
    }

    /// A read-only sub-view of `bounds`; panics when out of range.
    pub fn slice(&self, bounds: impl RangeBounds<usize>) -> CudaView<'_, T> {
        self.try_slice(bounds).expect("CudaViewMut::slice: range out of bounds")
    }

    /// A read-only sub-view of `bounds`, or `None` when out of range.
    pub fn try_slice(&self, bounds: impl RangeBounds<usize>) -> Option<CudaView<'_, T>> {
        self.as_view().try_slice(bounds)
    }

    /// A mutable sub-view of `bounds`; panics when out of range.
    pub fn slice_mut(&mut self, bounds: impl RangeBounds<usize>) -> CudaViewMut<'_, T> {
        self.try_slice_mut(bounds).expect("CudaViewMut::slice_mut: range out of bounds")
    }

    /// A mutable sub-view of `bounds`, or `None` when out of range.
    pub fn try_slice_mut(&mut self, bounds: impl RangeBounds<usize>) -> Option<CudaViewMut<'_, T>> {
        let (start, end) = to_range(bounds, self.len)?;
        Some(CudaViewMut {
            ptr: offset::<T>(self.ptr, start),
            len: end - start,
            events: self.events,
            stream: self.stream,
            marker: PhantomData,
        })
    }

    /// Views the memory as `len` values of `S`, or `None` if they do not fit.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`.
    pub unsafe fn transmute<S>(&self, len: usize) -> Option<CudaView<'_, S>> {
        fits::<T, S>(self.len, len).then_some(CudaView {
            ptr: self.ptr,
            len,
            events: self.events,
            stream: self.stream,
            marker: PhantomData,
        })
    }

    /// Views the memory mutably as `len` values of `S`, or `None` if they do not fit.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`, and values written as `S` valid as `T`.
    pub unsafe fn transmute_mut<S>(&mut self, len: usize) -> Option<CudaViewMut<'_, S>> {
        fits::<T, S>(self.len, len).then_some(CudaViewMut {
            ptr: self.ptr,
            len,
            events: self.events,
            stream: self.stream,
            marker: PhantomData,
        })
    }

    /// Two disjoint mutable views, `[0, mid)` and `[mid, len)`; panics if `mid > len`.
    pub fn split_at_mut(&mut self, mid: usize) -> (CudaViewMut<'_, T>, CudaViewMut<'_, T>) {
        self.try_split_at_mut(mid).expect("CudaViewMut::split_at_mut: mid > len")
    }

    /// Two disjoint mutable views, or `None` if `mid > len`.
    pub fn try_split_at_mut(&mut self, mid: usize) -> Option<(CudaViewMut<'_, T>, CudaViewMut<'_, T>)> {
        split_mut(self.ptr, self.len, self.events, self.stream, mid)
    }

    /// Consecutive mutable sub-views of `chunk_size` elements; panics unless it divides the length.
    pub fn chunks_exact_mut(self, chunk_size: usize) -> impl Iterator<Item = CudaViewMut<'a, T>> {
        assert!(chunk_size > 0 && self.len % chunk_size == 0, "chunk_size must divide the length");
        let (ptr, events, stream) = (self.ptr, self.events, self.stream);
        (0..self.len / chunk_size).map(move |i| CudaViewMut {
            ptr: offset::<T>(ptr, i * chunk_size),
            len: chunk_size,
            events,
            stream,
            marker: PhantomData,
        })
    }

    /// Like [`DevicePtrMut::device_ptr_mut`](super::DevicePtrMut::device_ptr_mut), with the guard living as long as the view's borrow.
    pub fn view_ptr_mut(self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, begin_use(self.events, Access::Write, stream))
    }

    /// Like [`DevicePtr::device_ptr`](super::DevicePtr::device_ptr), with the guard living as long as the view's borrow.
    pub fn view_ptr(self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, begin_use(self.events, Access::Read, stream))
    }
}
