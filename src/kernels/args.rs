//! Kernel arguments: sizes checked against the kernels' `int` parameters, and optional buffers
//! passed as null pointers.

use crate::driver::{
    sys::CUdeviceptr, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, SyncOnDrop,
};
use crate::error::{Error, Result};

/// The null device pointer the kernels read as "absent" (gamma, beta, statistics outputs).
pub const NULL: CUdeviceptr = 0;

/// `value` as the `int` a kernel takes, or [`Error::Shape`] naming `name` when it does not fit.
pub fn int(op: &'static str, name: &str, value: usize) -> Result<i32> {
    i32::try_from(value).map_err(|_| Error::Shape {
        op,
        expected: format!("`{name}` at most {} (the kernel takes an `int`)", i32::MAX),
        got: value.to_string(),
    })
}

/// The address of an optional input (null when absent) and the guard to drop after the launch.
pub fn input<'a, T>(
    view: Option<&'a CudaView<'_, T>>,
    stream: &'a CudaStream,
) -> (CUdeviceptr, Option<SyncOnDrop<'a>>) {
    match view {
        Some(v) => {
            let (ptr, guard) = v.device_ptr(stream);
            (ptr, Some(guard))
        }
        None => (NULL, None),
    }
}

/// The address of an optional output (null when absent) and the guard to drop after the launch.
pub fn output<'a, T>(
    view: Option<&'a mut CudaViewMut<'_, T>>,
    stream: &'a CudaStream,
) -> (CUdeviceptr, Option<SyncOnDrop<'a>>) {
    match view {
        Some(v) => {
            let (ptr, guard) = v.device_ptr_mut(stream);
            (ptr, Some(guard))
        }
        None => (NULL, None),
    }
}

/// Checks that an optional per-column (or per-channel) operand has `len` elements.
pub fn optional_len(op: &'static str, name: &str, len: Option<usize>, expected: usize) -> Result<()> {
    match len {
        Some(got) if got != expected => Err(Error::Shape {
            op,
            expected: format!("`{name}` of {expected} elements"),
            got: format!("{got} elements"),
        }),
        _ => Ok(()),
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
        assert!(optional_len("layer_norm", "gamma", None, 3).is_ok());
        assert!(optional_len("layer_norm", "gamma", Some(3), 3).is_ok());
        let err = optional_len("layer_norm", "gamma", Some(2), 3).unwrap_err().to_string();
        assert_eq!(err, "layer_norm: expected `gamma` of 3 elements, got 2 elements");
    }
}
