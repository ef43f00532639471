//! [`LaunchAsync`]: cudarc 0.9–0.13's way of launching a kernel with a tuple of arguments.

use std::ffi::c_void;

use super::device::CudaDevice;
use crate::driver::{
    result, sys, CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr, DriverError,
    LaunchArgs, LaunchConfig, PushKernelArg,
};

/// One element of a [`LaunchAsync`] argument tuple: `&CudaSlice<T>`, `&mut CudaSlice<T>`,
/// `&CudaView<T>`, `&mut CudaViewMut<T>`, or a number, `f16`, `bf16` or array of them by value.
///
/// A `#[repr(C)]` struct passed by value implements it by pushing a reference to itself:
///
/// ```
/// use prism_gpu::driver::{DeviceRepr, LaunchArgs, LaunchParam, PushKernelArg};
///
/// #[repr(C)]
/// struct Affine { scale: f32, shift: f32 }
/// // SAFETY: two f32s, laid out as the kernel's struct.
/// unsafe impl DeviceRepr for Affine {}
/// // SAFETY: pushes exactly one pointer, to `self`.
/// unsafe impl LaunchParam for Affine {
///     fn push_to<'b>(&'b mut self, args: &mut LaunchArgs<'b>) {
///         args.arg(&*self);
///     }
/// }
/// ```
///
/// # Safety
/// `push_to` must push exactly one argument, borrowed from `self`.
pub unsafe trait LaunchParam {
    /// Pushes this argument onto `args`.
    fn push_to<'b>(&'b mut self, args: &mut LaunchArgs<'b>);
}

macro_rules! by_value {
    ($($t:ty),* $(,)?) => {
        $(
            // SAFETY: pushes one pointer to the value, which the tuple keeps alive for the launch.
            unsafe impl LaunchParam for $t {
                #[inline(always)]
                fn push_to<'b>(&'b mut self, args: &mut LaunchArgs<'b>) {
                    args.arg(&*self);
                }
            }
        )*
    };
}
by_value!(
    bool,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    f32,
    f64,
    half::f16,
    half::bf16
);

// SAFETY: pushes one pointer to the array, which the tuple keeps alive for the launch.
unsafe impl<T: DeviceRepr, const N: usize> LaunchParam for [T; N] {
    #[inline(always)]
    fn push_to<'b>(&'b mut self, args: &mut LaunchArgs<'b>) {
        args.arg(&*self);
    }
}

// SAFETY: pushes the slice's device address (a read).
unsafe impl<T> LaunchParam for &CudaSlice<T> {
    #[inline(always)]
    fn push_to<'b>(&'b mut self, args: &mut LaunchArgs<'b>) {
        args.arg(&**self);
    }
}

// SAFETY: pushes the slice's device address (a write).
unsafe impl<T> LaunchParam for &mut CudaSlice<T> {
    #[inline(always)]
    fn push_to<'b>(&'b mut self, args: &mut LaunchArgs<'b>) {
        args.arg(&mut **self);
    }
}

// SAFETY: pushes the view's device address (a read).
unsafe impl<T> LaunchParam for &CudaView<'_, T> {
    #[inline(always)]
    fn push_to<'b>(&'b mut self, args: &mut LaunchArgs<'b>) {
        args.arg(&**self);
    }
}

// SAFETY: pushes the view's device address (a write).
unsafe impl<T> LaunchParam for &mut CudaViewMut<'_, T> {
    #[inline(always)]
    fn push_to<'b>(&'b mut self, args: &mut LaunchArgs<'b>) {
        args.arg(&mut **self);
    }
}

/// Launching a [`CudaFunction`] with its arguments as one value (cudarc 0.9–0.13): a tuple of up
/// to 32 [`LaunchParam`]s, or `&mut [*mut c_void]` (one pointer per parameter).
///
/// [`launch`](Self::launch) and [`launch_cooperative`](Self::launch_cooperative) use the stream of
/// the [`CudaDevice`] that loaded the kernel ([`CudaDevice::load_ptx`]); a kernel loaded otherwise
/// gets `CUDA_ERROR_INVALID_HANDLE` and can go through [`launch_on_stream`](Self::launch_on_stream).
///
/// # Safety
/// Implementations must pass `params` to the kernel as its parameters, in order.
pub unsafe trait LaunchAsync<Params> {
    /// Launches on the stream of the device that loaded the kernel.
    ///
    /// # Safety
    /// The arguments must match the kernel's parameters in number, order and type; the kernel
    /// must stay within its buffers and may write to any buffer passed, even by `&`.
    unsafe fn launch(self, cfg: LaunchConfig, params: Params) -> Result<(), DriverError>;

    /// Launches on `stream`.
    ///
    /// # Safety
    /// As for [`launch`](Self::launch).
    unsafe fn launch_on_stream(
        self,
        stream: &CudaStream,
        cfg: LaunchConfig,
        params: Params,
    ) -> Result<(), DriverError>;

    /// Launches cooperatively (all blocks resident at once) on the loading device's stream.
    ///
    /// # Safety
    /// As for [`launch`](Self::launch).
    unsafe fn launch_cooperative(self, cfg: LaunchConfig, params: Params) -> Result<(), DriverError>;
}

/// The stream [`LaunchAsync::launch`] uses for `f`.
fn device_of(f: &CudaFunction) -> Result<std::sync::Arc<CudaDevice>, DriverError> {
    CudaDevice::of_function(f).ok_or(DriverError(sys::CUresult::CUDA_ERROR_INVALID_HANDLE))
}

macro_rules! tuple_impl {
    ($($p:ident $v:ident),+) => {
        // SAFETY: every tuple element pushes exactly one argument, in order.
        unsafe impl<$($p: LaunchParam),+> LaunchAsync<($($p,)+)> for CudaFunction {
            unsafe fn launch(self, cfg: LaunchConfig, params: ($($p,)+)) -> Result<(), DriverError> {
                let device = device_of(&self)?;
                // SAFETY: forwarded to the caller.
                unsafe { self.launch_on_stream(device.stream(), cfg, params) }
            }

            unsafe fn launch_on_stream(
                self,
                stream: &CudaStream,
                cfg: LaunchConfig,
                mut params: ($($p,)+),
            ) -> Result<(), DriverError> {
                let ($($v,)+) = &mut params;
                let mut args = stream.launch_builder(&self);
                $( $v.push_to(&mut args); )+
                // SAFETY: forwarded to the caller.
                unsafe { args.launch(cfg) }.map(drop)
            }

            unsafe fn launch_cooperative(
                self,
                cfg: LaunchConfig,
                mut params: ($($p,)+),
            ) -> Result<(), DriverError> {
                let device = device_of(&self)?;
                let ($($v,)+) = &mut params;
                let mut args = device.stream().launch_builder(&self);
                $( $v.push_to(&mut args); )+
                // SAFETY: forwarded to the caller.
                unsafe { args.launch_cooperative(cfg) }.map(drop)
            }
        }
    };
}

macro_rules! tuple_impls {
    ($p:ident $v:ident $(, $ps:ident $vs:ident)*) => {
        tuple_impl!($p $v $(, $ps $vs)*);
        tuple_impls!($($ps $vs),*);
    };
    () => {};
}

tuple_impls!(
    A0 a0, A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10, A11 a11, A12 a12,
    A13 a13, A14 a14, A15 a15, A16 a16, A17 a17, A18 a18, A19 a19, A20 a20, A21 a21, A22 a22, A23 a23,
    A24 a24, A25 a25, A26 a26, A27 a27, A28 a28, A29 a29, A30 a30, A31 a31
);

/// Launches with a raw parameter array on `stream`.
///
/// # Safety
/// As for [`LaunchAsync::launch`]: one pointer per kernel parameter, each to a live value of its type.
unsafe fn launch_raw(
    f: &CudaFunction,
    stream: &CudaStream,
    cfg: LaunchConfig,
    params: &mut [*mut c_void],
    cooperative: bool,
) -> Result<(), DriverError> {
    stream.context().bind_to_thread()?;
    let (grid, block, smem) = (cfg.grid_dim, cfg.block_dim, cfg.shared_mem_bytes);
    // SAFETY: the function and stream are alive; the caller vouches for the parameters.
    unsafe {
        if cooperative {
            result::launch_cooperative_kernel(f.cu_function(), grid, block, smem, stream.cu_stream(), params)
        } else {
            result::launch_kernel(f.cu_function(), grid, block, smem, stream.cu_stream(), params)
        }
    }
}

// SAFETY: the pointers are passed to the driver as the kernel's parameter array.
unsafe impl LaunchAsync<&mut [*mut c_void]> for CudaFunction {
    unsafe fn launch(self, cfg: LaunchConfig, params: &mut [*mut c_void]) -> Result<(), DriverError> {
        let device = device_of(&self)?;
        // SAFETY: forwarded to the caller.
        unsafe { launch_raw(&self, device.stream(), cfg, params, false) }
    }

    unsafe fn launch_on_stream(
        self,
        stream: &CudaStream,
        cfg: LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<(), DriverError> {
        // SAFETY: forwarded to the caller.
        unsafe { launch_raw(&self, stream, cfg, params, false) }
    }

    unsafe fn launch_cooperative(
        self,
        cfg: LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<(), DriverError> {
        let device = device_of(&self)?;
        // SAFETY: forwarded to the caller.
        unsafe { launch_raw(&self, device.stream(), cfg, params, true) }
    }
}
