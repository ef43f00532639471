//! Launching kernels: [`LaunchConfig`], the [`LaunchArgs`] builder and [`PushKernelArg`].

use std::ffi::c_void;
use std::mem::size_of;
use std::sync::Arc;

use super::context::SyncMode;
use super::event::CudaEvent;
use super::memory::{Access, CudaSlice, CudaView, CudaViewMut, DeviceRepr, SliceEvents};
use super::module::CudaFunction;
use super::result::{self, DriverError};
use super::stream::CudaStream;
use super::sys;

/// Grid and block shape and dynamic shared memory of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid, `(x, y, z)`.
    pub grid_dim: (u32, u32, u32),
    /// Threads in a block, `(x, y, z)`.
    pub block_dim: (u32, u32, u32),
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// One thread per element: blocks of 1024 threads, `ceil(n / 1024)` blocks, no shared memory.
    pub fn for_num_elems(n: u32) -> Self {
        const THREADS: u32 = 1024;
        LaunchConfig {
            grid_dim: (n.div_ceil(THREADS), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }
}

/// A kernel launch being put together: create with [`CudaStream::launch_builder`], add the
/// arguments in order with [`PushKernelArg::arg`], submit with [`LaunchArgs::launch`].
///
/// Every argument is borrowed for the builder's lifetime, so the values the driver reads stay
/// alive until the launch call returns. The size of each argument is recorded as it is pushed.
#[derive(Debug)]
pub struct LaunchArgs<'a> {
    pub(crate) stream: &'a CudaStream,
    pub(crate) func: &'a CudaFunction,
    /// One pointer per kernel parameter, each to a value borrowed for `'a`.
    pub(crate) args: Vec<*mut c_void>,
    /// The byte size of the value behind each entry of `args`.
    pub(crate) arg_sizes: Vec<usize>,
    /// Tracked slices passed as arguments, for cross-stream waits and records.
    pub(crate) tracked: Vec<(&'a Arc<SliceEvents>, Access)>,
    pub(crate) flags: Option<sys::CUevent_flags>,
}

impl CudaStream {
    /// Starts a launch of `func` on this stream.
    pub fn launch_builder<'a>(&'a self, func: &'a CudaFunction) -> LaunchArgs<'a> {
        LaunchArgs {
            stream: self,
            func,
            args: Vec::new(),
            arg_sizes: Vec::new(),
            tracked: Vec::new(),
            flags: None,
        }
    }
}

/// Adding one kernel argument to a [`LaunchArgs`]. Implemented for `&T` with `T: DeviceRepr`
/// (scalars and `#[repr(C)]` structs, passed by value to the kernel) and for `&CudaSlice<T>`,
/// `&mut CudaSlice<T>`, `&CudaView<T>`, `&mut CudaViewMut<T>` (passed as device pointers).
///
/// # Safety
/// An implementation must push exactly one pointer, to a value that lives for the builder's
/// lifetime and has the layout the kernel expects.
pub unsafe trait PushKernelArg<T> {
    /// Appends `arg` as the next kernel parameter.
    fn arg(&mut self, arg: T) -> &mut Self;
}

impl<'a> LaunchArgs<'a> {
    fn push_raw<T>(&mut self, value: &'a T) {
        self.args.push(value as *const T as *mut c_void);
        self.arg_sizes.push(size_of::<T>());
    }

    fn push_slice(
        &mut self,
        ptr: &'a sys::CUdeviceptr,
        events: Option<&'a Arc<SliceEvents>>,
        access: Access,
    ) {
        self.push_raw(ptr);
        if let Some(events) = events {
            if self.stream.ctx.is_managing_stream_synchronization() {
                self.tracked.push((events, access));
            }
        }
    }

    /// The byte size of each argument pushed so far (a prism-gpu extension, for checking
    /// against the kernel's parameter list).
    pub fn arg_sizes(&self) -> &[usize] {
        &self.arg_sizes
    }

    /// Makes [`launch`](Self::launch) return events recorded just before and after the kernel.
    pub fn record_kernel_launch(&mut self, flags: sys::CUevent_flags) -> &mut Self {
        self.flags = Some(flags);
        self
    }

    fn submit(
        &mut self,
        cfg: LaunchConfig,
        cooperative: bool,
    ) -> Result<Option<(CudaEvent, CudaEvent)>, DriverError> {
        let stream = self.stream;
        stream.ctx.bind_to_thread()?;
        let mode = if self.tracked.is_empty() { SyncMode::Off } else { stream.ctx.sync_mode(stream) };
        match mode {
            SyncMode::Off => {}
            SyncMode::On => {
                for (events, access) in &self.tracked {
                    events.wait_before(*access, stream);
                }
            }
            SyncMode::Capturing => {
                for (events, access) in &self.tracked {
                    stream.log_capture(events, *access);
                }
            }
        }
        let start = self.flags.map(|f| stream.record_event(Some(f))).transpose()?;
        // SAFETY: every entry of `args` points at a value borrowed for `'a`, which outlives this
        // call; the caller of `launch` vouches that they match the kernel's parameters.
        unsafe {
            if cooperative {
                result::launch_cooperative_kernel(
                    self.func.cu_function,
                    cfg.grid_dim,
                    cfg.block_dim,
                    cfg.shared_mem_bytes,
                    stream.cu_stream,
                    &mut self.args,
                )
            } else {
                result::launch_kernel(
                    self.func.cu_function,
                    cfg.grid_dim,
                    cfg.block_dim,
                    cfg.shared_mem_bytes,
                    stream.cu_stream,
                    &mut self.args,
                )
            }
        }?;
        let end = self.flags.map(|f| stream.record_event(Some(f))).transpose()?;
        if mode == SyncMode::On {
            for (events, access) in &self.tracked {
                events.record_after(*access, stream);
            }
        }
        Ok(start.zip(end))
    }

    /// Submits the kernel. With [`record_kernel_launch`](Self::record_kernel_launch), returns
    /// events recorded around it.
    ///
    /// Slices passed as arguments are ordered against their uses on other streams, and are not
    /// freed before the kernel is done with them.
    ///
    /// # Safety
    /// The arguments must match the kernel's parameters in number, order and type; the kernel
    /// must stay within its buffers and may write to any buffer passed, even by `&`.
    #[doc(alias = "cuLaunchKernel")]
    pub unsafe fn launch(
        &mut self,
        cfg: LaunchConfig,
    ) -> Result<Option<(CudaEvent, CudaEvent)>, DriverError> {
        self.submit(cfg, false)
    }

    /// Submits the kernel as a cooperative launch (all blocks resident at once).
    ///
    /// # Safety
    /// As for [`launch`](Self::launch).
    #[doc(alias = "cuLaunchCooperativeKernel")]
    pub unsafe fn launch_cooperative(
        &mut self,
        cfg: LaunchConfig,
    ) -> Result<Option<(CudaEvent, CudaEvent)>, DriverError> {
        self.submit(cfg, true)
    }
}

// SAFETY: pushes one pointer to a `DeviceRepr` value borrowed for longer than the builder.
unsafe impl<'a, 'b: 'a, T: DeviceRepr> PushKernelArg<&'b T> for LaunchArgs<'a> {
    #[inline(always)]
    fn arg(&mut self, arg: &'b T) -> &mut Self {
        self.push_raw(arg);
        self
    }
}

// SAFETY: pushes one pointer to the slice's device address, borrowed for longer than the builder.
unsafe impl<'a, 'b: 'a, T> PushKernelArg<&'b CudaSlice<T>> for LaunchArgs<'a> {
    #[inline(always)]
    fn arg(&mut self, arg: &'b CudaSlice<T>) -> &mut Self {
        self.push_slice(&arg.cu_device_ptr, arg.events.as_ref(), Access::Read);
        self
    }
}

// SAFETY: as above.
unsafe impl<'a, 'b: 'a, T> PushKernelArg<&'b mut CudaSlice<T>> for LaunchArgs<'a> {
    #[inline(always)]
    fn arg(&mut self, arg: &'b mut CudaSlice<T>) -> &mut Self {
        let arg: &'b CudaSlice<T> = arg;
        self.push_slice(&arg.cu_device_ptr, arg.events.as_ref(), Access::Write);
        self
    }
}

// SAFETY: pushes one pointer to the view's device address, borrowed for longer than the builder.
unsafe impl<'a, 'b: 'a, 'c: 'b, T> PushKernelArg<&'b CudaView<'c, T>> for LaunchArgs<'a> {
    #[inline(always)]
    fn arg(&mut self, arg: &'b CudaView<'c, T>) -> &mut Self {
        self.push_slice(&arg.ptr, arg.events, Access::Read);
        self
    }
}

// SAFETY: as above.
unsafe impl<'a, 'b: 'a, 'c: 'b, T> PushKernelArg<&'b mut CudaViewMut<'c, T>> for LaunchArgs<'a> {
    #[inline(always)]
    fn arg(&mut self, arg: &'b mut CudaViewMut<'c, T>) -> &mut Self {
        let arg: &'b CudaViewMut<'c, T> = arg;
        self.push_slice(&arg.ptr, arg.events, Access::Write);
        self
    }
}
