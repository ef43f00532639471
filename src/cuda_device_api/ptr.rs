//! The `CudaDevice` API's raw-pointer traits (cudarc 0.9–0.13), `driver::legacy::{DevicePtr, DevicePtrMut}`.
//!
//! They clash with the modern traits of the same names (which take a stream and return a guard),
//! so they live here: change `use cudarc::driver::DevicePtr` to `use cudarc::driver::legacy::DevicePtr`.
//! The address comes back as a [`RawDevicePtr`], which dereferences to the `sys::CUdeviceptr`,
//! so `*slice.device_ptr()` still reads it.

use std::ops::Deref;

use crate::driver::{self as modern, sys, CudaSlice, CudaView, CudaViewMut, DeviceSlice};

/// A device address, as the `CudaDevice` API's traits return it; dereferences to [`sys::CUdeviceptr`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RawDevicePtr(pub sys::CUdeviceptr);

impl Deref for RawDevicePtr {
    type Target = sys::CUdeviceptr;
    fn deref(&self) -> &sys::CUdeviceptr {
        &self.0
    }
}

/// Device memory whose address can be read without a stream (cudarc 0.9–0.13).
///
/// The address is taken for a use on the memory's own stream: work on other streams that uses it
/// must be ordered by the caller.
pub trait DevicePtr<T>: DeviceSlice<T> {
    /// The device address.
    fn device_ptr(&self) -> RawDevicePtr;
}

/// Device memory whose address can be taken for writing without a stream (cudarc 0.9–0.13).
pub trait DevicePtrMut<T>: DeviceSlice<T> {
    /// The device address, for writing.
    fn device_ptr_mut(&mut self) -> RawDevicePtr;
}

impl<T> DevicePtr<T> for CudaSlice<T> {
    fn device_ptr(&self) -> RawDevicePtr {
        let (ptr, _record) = modern::DevicePtr::device_ptr(self, self.stream());
        RawDevicePtr(ptr)
    }
}

impl<T> DevicePtr<T> for CudaView<'_, T> {
    fn device_ptr(&self) -> RawDevicePtr {
        let (ptr, _record) = modern::DevicePtr::device_ptr(self, DeviceSlice::stream(self));
        RawDevicePtr(ptr)
    }
}

impl<T> DevicePtr<T> for CudaViewMut<'_, T> {
    fn device_ptr(&self) -> RawDevicePtr {
        let (ptr, _record) = modern::DevicePtr::device_ptr(self, DeviceSlice::stream(self));
        RawDevicePtr(ptr)
    }
}

impl<T> DevicePtrMut<T> for CudaSlice<T> {
    fn device_ptr_mut(&mut self) -> RawDevicePtr {
        let stream = self.stream().clone();
        let (ptr, _record) = modern::DevicePtrMut::device_ptr_mut(self, &stream);
        RawDevicePtr(ptr)
    }
}

impl<T> DevicePtrMut<T> for CudaViewMut<'_, T> {
    fn device_ptr_mut(&mut self) -> RawDevicePtr {
        let stream = DeviceSlice::stream(self).clone();
        let (ptr, _record) = modern::DevicePtrMut::device_ptr_mut(self, &stream);
        RawDevicePtr(ptr)
    }
}
