//! The traits copies and launches take device memory through: [`DeviceSlice`], [`DevicePtr`],
//! [`DevicePtrMut`], and the [`SyncOnDrop`] guard that records a use once it is submitted.

use std::mem::size_of;
use std::sync::Arc;

use super::slice::{begin_use, CudaSlice, CudaView, CudaViewMut};
use crate::driver::event::CudaEvent;
use crate::driver::stream::CudaStream;
use crate::driver::sys;
use crate::driver::tracking::Access;

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
