//! Device memory ([`CudaSlice`] and its views), page-locked host memory ([`PinnedHostSlice`]),
//! the marker traits, and the allocation and copy methods of [`CudaStream`].
//!
//! # Cross-stream ordering
//! A tracked slice (the default) owns lazily created events: one recorded after its last write,
//! and one per stream that has read it, recorded after that stream's last read. A use on any
//! stream first waits for what it conflicts with (a read waits for the last write; a write, or
//! the free, waits for it and for the last read on every other stream) and then records its own. So work
//! on stream B sees a write made on stream A without the caller synchronising, and a slice is
//! freed only after its pending uses. None of this happens while the context has only its
//! default stream: the events are not even created. While a stream is being captured into a
//! graph, the events are neither waited for nor recorded (that would cross the capture
//! boundary); the graph does the waits and records when it is launched instead.

use std::marker::PhantomData;
use std::mem::{size_of, ManuallyDrop};
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use super::context::CudaContext;
use super::event::CudaEvent;
use super::result::{self, DriverError};
use super::staging;
use super::stream::CudaStream;
use super::sys;
use super::tracking::{Access, SliceEvents, SyncMode};

/// Frees `ptr`, allocated on `stream`, after the uses `events` recorded on other streams, with
/// `stream`'s context bound whatever error is parked (errors are parked).
pub(super) fn free_allocation(ptr: sys::CUdeviceptr, stream: &CudaStream, events: Option<&SliceEvents>) {
    let ctx = &stream.ctx;
    // Bind our own context whatever error is parked; if even that fails, leak the memory rather
    // than free it under another context.
    if let Err(e) = ctx.bind() {
        return ctx.record_err::<()>(Err(e));
    }
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
}

/// Starts a tracked use of a slice on `stream`: waits as needed and returns the guard that
/// records the use once it has been submitted.
fn begin_use<'a>(
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
pub(crate) fn to_range(range: impl RangeBounds<usize>, len: usize) -> Option<(usize, usize)> {
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

    /// Like [`DevicePtr::device_ptr`], with the guard living as long as the view's borrow.
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

    /// Like [`DevicePtrMut::device_ptr_mut`], with the guard living as long as the view's borrow.
    pub fn view_ptr_mut(self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, begin_use(self.events, Access::Write, stream))
    }

    /// Like [`DevicePtr::device_ptr`], with the guard living as long as the view's borrow.
    pub fn view_ptr(self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, begin_use(self.events, Access::Read, stream))
    }
}

/// Types whose all-zero bit pattern is a valid value.
///
/// # Safety
/// Only implement for types where every field may be zero (no references, `NonZero`, enums
/// without a zero discriminant, ...).
pub unsafe trait ValidAsZeroBits {}

/// Types that can live in device memory and be passed to kernels by value.
///
/// # Safety
/// The type must have a layout the kernel agrees on (`#[repr(C)]` for structs) and hold no
/// host pointers or references the device would misread.
pub unsafe trait DeviceRepr {}

macro_rules! marker_impls {
    ($($t:ty),* $(,)?) => {
        $(
            // SAFETY: a plain number: fixed layout, every bit pattern (incl. zero) valid on both sides.
            unsafe impl DeviceRepr for $t {}
            // SAFETY: zero is a valid value of this number type.
            unsafe impl ValidAsZeroBits for $t {}
        )*
    };
}
marker_impls!(bool, i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64);
marker_impls!(half::f16, half::bf16);

// The float8 / float4 crates' types are `#[repr(transparent)]` over one `u8` (checked by the
// `narrow_floats_are_one_byte` test), so they have a byte's layout on host and device.
#[cfg(any(feature = "f8", feature = "f4"))]
macro_rules! byte_float_impls {
    ($($t:ty),* $(,)?) => {
        $(
            // SAFETY: `#[repr(transparent)]` over `u8`: one byte, alignment 1, no pointers; a kernel
            // reads it as the CUDA type of the same width (`__nv_fp8_e4m3`, ...).
            unsafe impl DeviceRepr for $t {}
            // SAFETY: the all-zero byte is a valid value of these types (+0.0, or 2^-127 for `E8M0`).
            unsafe impl ValidAsZeroBits for $t {}
        )*
    };
}
#[cfg(feature = "f8")]
byte_float_impls!(float8::F8E4M3, float8::F8E5M2);
#[cfg(feature = "f4")]
byte_float_impls!(float4::F4E2M1, float4::F4E2M1x2, float4::E8M0);

// SAFETY: an array of device-representable values is laid out the same on host and device.
unsafe impl<T: DeviceRepr, const N: usize> DeviceRepr for [T; N] {}
// SAFETY: an array of zeroable values is zeroable.
unsafe impl<T: ValidAsZeroBits, const N: usize> ValidAsZeroBits for [T; N] {}

macro_rules! zero_tuples {
    ($($name:ident)+) => {
        // SAFETY: a tuple whose fields are all zeroable is zeroable (padding bytes are not read).
        unsafe impl<$($name: ValidAsZeroBits),+> ValidAsZeroBits for ($($name,)+) {}
    };
}
zero_tuples!(A);
zero_tuples!(A B);
zero_tuples!(A B C);
zero_tuples!(A B C D);
zero_tuples!(A B C D E);
zero_tuples!(A B C D E F);
zero_tuples!(A B C D E F G);
zero_tuples!(A B C D E F G H);
zero_tuples!(A B C D E F G H I);
zero_tuples!(A B C D E F G H I J);
zero_tuples!(A B C D E F G H I J K);
zero_tuples!(A B C D E F G H I J K L);

/// What [`CudaSlice`], [`CudaView`] and [`CudaViewMut`] have in common.
pub trait DeviceSlice<T> {
    /// Number of elements.
    fn len(&self) -> usize;
    /// Number of bytes.
    fn num_bytes(&self) -> usize {
        self.len() * size_of::<T>()
    }
    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The stream the underlying slice was allocated on.
    fn stream(&self) -> &Arc<CudaStream>;
}

impl<T> DeviceSlice<T> for CudaSlice<T> {
    fn len(&self) -> usize {
        self.len
    }
    fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}

impl<T> DeviceSlice<T> for CudaView<'_, T> {
    fn len(&self) -> usize {
        self.len
    }
    fn stream(&self) -> &Arc<CudaStream> {
        self.stream
    }
}

impl<T> DeviceSlice<T> for CudaViewMut<'_, T> {
    fn len(&self) -> usize {
        self.len
    }
    fn stream(&self) -> &Arc<CudaStream> {
        self.stream
    }
}

/// A guard returned with a device or host pointer: dropping it after the work using the pointer
/// has been submitted records that use (or synchronises the stream).
#[derive(Debug)]
#[must_use]
pub enum SyncOnDrop<'a> {
    /// Records the stream's work into the event on drop.
    Record(Option<(&'a CudaEvent, &'a CudaStream)>),
    /// Synchronises the stream on drop.
    Sync(Option<&'a CudaStream>),
}

impl<'a> SyncOnDrop<'a> {
    /// A guard that records `stream`'s work into `event` (if any) on drop.
    pub fn record_event(event: &'a Option<CudaEvent>, stream: &'a CudaStream) -> Self {
        SyncOnDrop::Record(event.as_ref().map(|e| (e, stream)))
    }

    /// A guard that synchronises `stream` on drop.
    pub fn sync_stream(stream: &'a CudaStream) -> Self {
        SyncOnDrop::Sync(Some(stream))
    }
}

impl Drop for SyncOnDrop<'_> {
    fn drop(&mut self) {
        match self {
            SyncOnDrop::Record(target) => {
                if let Some((event, stream)) = target.take() {
                    stream.ctx.record_err(event.record_tracking(stream));
                }
            }
            SyncOnDrop::Sync(target) => {
                if let Some(stream) = target.take() {
                    stream.ctx.record_err(stream.synchronize_tracking());
                }
            }
        }
    }
}

/// Device memory that can be read: [`CudaSlice`], [`CudaView`], [`CudaViewMut`].
pub trait DevicePtr<T>: DeviceSlice<T> {
    /// The address, for reading on `stream`. `stream` first waits for the last write on another
    /// stream; drop the guard after the read has been submitted, so later writers wait for it.
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>);
}

impl<T> DevicePtr<T> for CudaSlice<T> {
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.cu_device_ptr, begin_use(self.events.as_ref(), Access::Read, stream))
    }
}

impl<T> DevicePtr<T> for CudaView<'_, T> {
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, begin_use(self.events, Access::Read, stream))
    }
}

impl<T> DevicePtr<T> for CudaViewMut<'_, T> {
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, begin_use(self.events, Access::Read, stream))
    }
}

/// Device memory that can be written: [`CudaSlice`], [`CudaViewMut`].
pub trait DevicePtrMut<T>: DeviceSlice<T> {
    /// The address, for writing on `stream`. `stream` first waits for the last read and write on
    /// other streams; drop the guard after the write has been submitted.
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>);
}

impl<T> DevicePtrMut<T> for CudaSlice<T> {
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.cu_device_ptr, begin_use(self.events.as_ref(), Access::Write, stream))
    }
}

impl<T> DevicePtrMut<T> for CudaViewMut<'_, T> {
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, begin_use(self.events, Access::Write, stream))
    }
}

/// Host memory a copy can use: `[T]`, `[T; N]`, `Vec<T>`, [`PinnedHostSlice<T>`].
pub trait HostSlice<T> {
    /// Number of elements.
    fn len(&self) -> usize;
    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The memory, for a copy on `stream`, and the guard to drop after submitting it.
    ///
    /// # Safety
    /// Use the slice only for work on `stream`.
    unsafe fn stream_synced_slice<'a>(&'a self, stream: &'a CudaStream) -> (&'a [T], SyncOnDrop<'a>);

    /// The memory, writable, for a copy on `stream`, and the guard to drop after submitting it.
    ///
    /// # Safety
    /// Use the slice only for work on `stream`.
    unsafe fn stream_synced_mut_slice<'a>(
        &'a mut self,
        stream: &'a CudaStream,
    ) -> (&'a mut [T], SyncOnDrop<'a>);
}

impl<T, const N: usize> HostSlice<T> for [T; N] {
    fn len(&self) -> usize {
        N
    }
    unsafe fn stream_synced_slice<'a>(&'a self, _stream: &'a CudaStream) -> (&'a [T], SyncOnDrop<'a>) {
        (self, SyncOnDrop::Sync(None))
    }
    unsafe fn stream_synced_mut_slice<'a>(
        &'a mut self,
        _stream: &'a CudaStream,
    ) -> (&'a mut [T], SyncOnDrop<'a>) {
        (self, SyncOnDrop::Sync(None))
    }
}

impl<T> HostSlice<T> for [T] {
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
    unsafe fn stream_synced_slice<'a>(&'a self, _stream: &'a CudaStream) -> (&'a [T], SyncOnDrop<'a>) {
        (self, SyncOnDrop::Sync(None))
    }
    unsafe fn stream_synced_mut_slice<'a>(
        &'a mut self,
        _stream: &'a CudaStream,
    ) -> (&'a mut [T], SyncOnDrop<'a>) {
        (self, SyncOnDrop::Sync(None))
    }
}

impl<T> HostSlice<T> for Vec<T> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
    unsafe fn stream_synced_slice<'a>(&'a self, _stream: &'a CudaStream) -> (&'a [T], SyncOnDrop<'a>) {
        (self, SyncOnDrop::Sync(None))
    }
    unsafe fn stream_synced_mut_slice<'a>(
        &'a mut self,
        _stream: &'a CudaStream,
    ) -> (&'a mut [T], SyncOnDrop<'a>) {
        (self, SyncOnDrop::Sync(None))
    }
}

/// Page-locked host memory, allocated with [`CudaContext::alloc_pinned`]. Copies to and from it
/// are truly asynchronous; an event records the last one, and the accessors wait for it.
///
/// It owns its values like a `Vec<T>`: `Send` when `T: Send`, `Sync` when `T: Sync`.
/// ```
/// fn shareable<T: Send + Sync>() {}
/// shareable::<prism_gpu::driver::PinnedHostSlice<f32>>();
/// ```
/// ```compile_fail,E0277
/// fn sendable<T: Send>() {}
/// sendable::<prism_gpu::driver::PinnedHostSlice<std::rc::Rc<u8>>>();
/// ```
/// ```compile_fail,E0277
/// fn shareable<T: Sync>() {}
/// shareable::<prism_gpu::driver::PinnedHostSlice<std::cell::Cell<u8>>>();
/// ```
#[derive(Debug)]
pub struct PinnedHostSlice<T> {
    pub(crate) ptr: *mut T,
    pub(crate) len: usize,
    /// The allocation and its last-copy event, shared with the graphs whose captured copies
    /// use it, so that it outlives them.
    pub(crate) memory: Arc<PinnedMemory>,
}

/// A page-locked allocation and the event recording its last copy; freed, after that copy,
/// when the last of its [`PinnedHostSlice`] and the graphs that captured copies of it drops.
#[derive(Debug)]
pub(crate) struct PinnedMemory {
    ptr: *mut u8,
    bytes: usize,
    pub(crate) event: CudaEvent,
}

// SAFETY: the allocation is owned by this object and only freed by its Drop; the event is
// thread safe. The memory's contents are reached only through `PinnedHostSlice`, whose own
// Send/Sync impls carry the `T` bounds.
unsafe impl Send for PinnedMemory {}
// SAFETY: as above; `&PinnedMemory` gives access to nothing but the event.
unsafe impl Sync for PinnedMemory {}

impl Drop for PinnedMemory {
    fn drop(&mut self) {
        let ctx = &self.event.ctx;
        // Waits for the last copy using this memory whatever error is parked: freeing it with a
        // copy still in flight would let the driver write freed host memory.
        if let Err(e) = self.event.synchronize_tracking() {
            // The copy may still be in flight: leak the memory rather than free it.
            return ctx.record_err::<()>(Err(e));
        }
        if self.bytes > 0 {
            // SAFETY: we own the allocation and the last copy using it has finished.
            ctx.record_err(unsafe { result::free_host(self.ptr.cast()) });
        }
    }
}

// SAFETY: the slice owns its `T`s like a `Vec<T>` (handed out only through `&`/`&mut` borrows
// of `self`), so moving it to another thread moves them: sound exactly when `T: Send`.
unsafe impl<T: Send> Send for PinnedHostSlice<T> {}
// SAFETY: `&PinnedHostSlice<T>` hands out `&[T]` (and `&T` through it) to any thread: sound
// exactly when `T: Sync`, as for `Vec<T>`.
unsafe impl<T: Sync> Sync for PinnedHostSlice<T> {}

impl CudaContext {
    /// Allocates `len` values of page-locked, write-combined host memory.
    ///
    /// # Safety
    /// The memory is uninitialised: write it before reading it as `T`.
    #[doc(alias = "cuMemHostAlloc")]
    pub unsafe fn alloc_pinned<T: DeviceRepr>(
        self: &Arc<Self>,
        len: usize,
    ) -> Result<PinnedHostSlice<T>, DriverError> {
        // SAFETY: forwarded to the caller.
        unsafe { self.alloc_pinned_with_flags(len, sys::CU_MEMHOSTALLOC_WRITECOMBINED) }
    }

    /// Allocates `len` values of page-locked host memory with `CU_MEMHOSTALLOC_*` `flags`.
    ///
    /// # Safety
    /// The memory is uninitialised: write it before reading it as `T`.
    #[doc(alias = "cuMemHostAlloc")]
    pub unsafe fn alloc_pinned_with_flags<T: DeviceRepr>(
        self: &Arc<Self>,
        len: usize,
        flags: u32,
    ) -> Result<PinnedHostSlice<T>, DriverError> {
        self.bind_to_thread()?;
        let bytes = byte_len::<T>(len)?;
        let event = self.new_event(Some(sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC))?;
        let ptr = if bytes == 0 {
            std::ptr::NonNull::<T>::dangling().as_ptr()
        } else {
            // SAFETY: a plain allocation; freed in Drop.
            unsafe { result::malloc_host(bytes, flags) }?.cast::<T>()
        };
        Ok(PinnedHostSlice { ptr, len, memory: Arc::new(PinnedMemory { ptr: ptr.cast(), bytes, event }) })
    }
}

impl<T> PinnedHostSlice<T> {
    fn event(&self) -> &CudaEvent {
        &self.memory.event
    }

    /// The context the memory was allocated in.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.event().ctx
    }

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

    fn guard<'a>(&'a self, stream: &'a CudaStream) -> SyncOnDrop<'a> {
        let ctx = &stream.ctx;
        if ctx.tracking.is_capturing(stream) {
            // The graph keeps the memory alive and records its launches' copies on its event.
            stream.capture.pinned(&self.memory);
            return SyncOnDrop::Record(None);
        }
        if ctx.is_in_multi_stream_mode() {
            ctx.record_err(stream.wait_tracking(self.event()));
        }
        SyncOnDrop::Record(Some((self.event(), stream)))
    }
}

impl<T: ValidAsZeroBits> PinnedHostSlice<T> {
    /// Waits for pending copies, then gives the address.
    pub fn as_ptr(&self) -> Result<*const T, DriverError> {
        self.event().synchronize()?;
        Ok(self.ptr)
    }

    /// Waits for pending copies, then gives the address.
    pub fn as_mut_ptr(&mut self) -> Result<*mut T, DriverError> {
        self.event().synchronize()?;
        Ok(self.ptr)
    }

    /// Waits for pending copies, then borrows the memory.
    pub fn as_slice(&self) -> Result<&[T], DriverError> {
        self.event().synchronize()?;
        // SAFETY: `ptr` holds `len` values (zeroable, so any bytes the device wrote are valid),
        // no copy is pending, and the borrow of `self` keeps the memory alive.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr, self.len) })
    }

    /// Waits for pending copies, then borrows the memory mutably.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T], DriverError> {
        self.event().synchronize()?;
        // SAFETY: as for `as_slice`, and `&mut self` makes the borrow unique.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) })
    }
}

impl<T> HostSlice<T> for PinnedHostSlice<T> {
    fn len(&self) -> usize {
        self.len
    }
    unsafe fn stream_synced_slice<'a>(&'a self, stream: &'a CudaStream) -> (&'a [T], SyncOnDrop<'a>) {
        let guard = self.guard(stream);
        // SAFETY: `ptr` holds `len` values for as long as `self` is borrowed; the device reads
        // them only after earlier copies (ordered by the guard's wait).
        (unsafe { std::slice::from_raw_parts(self.ptr, self.len) }, guard)
    }
    unsafe fn stream_synced_mut_slice<'a>(
        &'a mut self,
        stream: &'a CudaStream,
    ) -> (&'a mut [T], SyncOnDrop<'a>) {
        let guard = self.guard(stream);
        // SAFETY: as above; the host reads the values only through the synchronising accessors.
        (unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }, guard)
    }
}

/// Whether a [`HostSlice`]'s guard says it is plain (pageable) host memory: the guard of `[T]`,
/// `[T; N]` and `Vec<T>` does nothing, as copies with pageable memory need no later sync.
fn is_plain_host(guard: &SyncOnDrop<'_>) -> bool {
    matches!(guard, SyncOnDrop::Sync(None))
}

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
fn byte_len<T>(len: usize) -> Result<usize, DriverError> {
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

    /// Copies host memory (`[T]`, `Vec<T>`, `[T; N]`, [`PinnedHostSlice`]) into a new slice.
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

    /// The `DeviceRepr` / `ValidAsZeroBits` impls for the narrow float types assume one byte each, and
    /// that the zero byte is the value the type's crate calls zero (or 2^-127 for `E8M0`).
    #[cfg(any(feature = "f8", feature = "f4"))]
    #[test]
    fn narrow_floats_are_one_byte() {
        use std::mem::{align_of, size_of};
        #[cfg(feature = "f8")]
        {
            assert_eq!((size_of::<float8::F8E4M3>(), align_of::<float8::F8E4M3>()), (1, 1));
            assert_eq!((size_of::<float8::F8E5M2>(), align_of::<float8::F8E5M2>()), (1, 1));
            assert_eq!(float8::F8E4M3::from_bits(0).to_f32(), 0.0);
            assert_eq!(float8::F8E5M2::from_bits(0).to_f32(), 0.0);
            assert_eq!(float8::F8E4M3::from_f32(-1.5).to_bits(), 0xBC);
        }
        #[cfg(feature = "f4")]
        {
            assert_eq!(size_of::<float4::F4E2M1>(), 1);
            assert_eq!(size_of::<float4::F4E2M1x2>(), 1);
            assert_eq!(size_of::<float4::E8M0>(), 1);
            assert_eq!(float4::F4E2M1::from_bits(0).to_f64(), 0.0);
        }
    }
}
