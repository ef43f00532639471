//! Kernel arguments: sizes checked against the kernels' `int` parameters, and optional buffers
//! passed as null pointers.

use std::sync::Arc;

use crate::driver::{
    sys::{self, CUdeviceptr},
    CudaContext, CudaStream, CudaViewMut, DevicePtr, DevicePtrMut, DriverError, SyncOnDrop,
};
use crate::error::{Error, Result};
// The launchers check their optional operands with the same check as the operations' definitions.
pub(crate) use crate::spec::shape::optional_len;

/// `Ok` when `buffer_stream` (the stream a buffer was allocated on) belongs to the context of
/// `stream`; a buffer of another context is refused with `CUDA_ERROR_INVALID_CONTEXT` (its
/// address means nothing there, and its tracking events could not be waited on).
pub(crate) fn same_context(buffer_stream: &CudaStream, stream: &CudaStream) -> Result<()> {
    let (ours, theirs): (&Arc<CudaContext>, &Arc<CudaContext>) = (stream.context(), buffer_stream.context());
    if Arc::ptr_eq(ours, theirs) || ours == theirs {
        Ok(())
    } else {
        Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT).into())
    }
}

/// A buffer's address for a launch on `stream`, after checking that it belongs to `stream`'s
/// context (`same_context`). Every launcher takes its buffers' addresses through this.
pub trait CheckedPtr<T>: DevicePtr<T> {
    /// [`DevicePtr::device_ptr`], or an error for a buffer of another context.
    fn checked_ptr<'a>(&'a self, stream: &'a CudaStream) -> Result<(CUdeviceptr, SyncOnDrop<'a>)> {
        same_context(self.stream(), stream)?;
        Ok(self.device_ptr(stream))
    }
}
impl<T, S: DevicePtr<T> + ?Sized> CheckedPtr<T> for S {}

/// The writable counterpart of [`CheckedPtr`].
pub trait CheckedPtrMut<T>: DevicePtrMut<T> {
    /// [`DevicePtrMut::device_ptr_mut`], or an error for a buffer of another context.
    fn checked_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> Result<(CUdeviceptr, SyncOnDrop<'a>)> {
        same_context(self.stream(), stream)?;
        Ok(self.device_ptr_mut(stream))
    }
}
impl<T, S: DevicePtrMut<T> + ?Sized> CheckedPtrMut<T> for S {}

/// The null device pointer the kernels read as "absent" (gamma, beta, statistics outputs).
pub const NULL: CUdeviceptr = 0;

/// `value` as the `int` a kernel takes, or [`Error::Shape`] naming `name` when it does not fit.
pub(crate) fn int(op: &'static str, name: &str, value: usize) -> Result<i32> {
    i32::try_from(value).map_err(|_| Error::Shape {
        op,
        expected: format!("`{name}` at most {} (the kernel takes an `int`)", i32::MAX),
        got: value.to_string(),
    })
}

/// The address of an optional input (null when absent) and the guard to drop after the launch.
pub(crate) fn input<'a, T, V: CheckedPtr<T> + ?Sized>(
    view: Option<&'a V>,
    stream: &'a CudaStream,
) -> Result<(CUdeviceptr, Option<SyncOnDrop<'a>>)> {
    optional(view.map(|v| v.checked_ptr(stream)))
}

/// The address of an optional output (null when absent) and the guard to drop after the launch.
pub(crate) fn output<'a, T>(
    view: Option<&'a mut CudaViewMut<'_, T>>,
    stream: &'a CudaStream,
) -> Result<(CUdeviceptr, Option<SyncOnDrop<'a>>)> {
    optional(view.map(|v| v.checked_ptr_mut(stream)))
}

/// The address and guard of a present operand, or the null address with no guard.
fn optional(
    ptr: Option<Result<(CUdeviceptr, SyncOnDrop<'_>)>>,
) -> Result<(CUdeviceptr, Option<SyncOnDrop<'_>>)> {
    match ptr.transpose()? {
        Some((ptr, guard)) => Ok((ptr, Some(guard))),
        None => Ok((NULL, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_beyond_int_are_shape_errors() {
        assert_eq!(int("softmax", "cols", 7).unwrap(), 7);
        let err = int("softmax", "cols", 1 << 31).unwrap_err().to_string();
        assert_eq!(
            err,
            "softmax: expected `cols` at most 2147483647 (the kernel takes an `int`), got 2147483648"
        );
    }
}
