//! Launching kernels: [`LaunchConfig`], the [`LaunchArgs`] builder and [`PushKernelArg`].

use std::ffi::{c_uint, c_void};
use std::mem::size_of;
use std::sync::Arc;

use smallvec::SmallVec;

use super::event::CudaEvent;
use super::memory::{CudaSlice, CudaView, CudaViewMut, DeviceRepr};
use super::module::{CudaFunction, Params};
use super::result::{self, DriverError};
use super::stream::CudaStream;
use super::sys;
use super::tracking::{Access, SliceEvents, SyncMode};

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

/// Kernel arguments a launch holds without allocating (more spill to the heap). The two small
/// allocations per launch this saves were ~0.1 us of a ~3.5 us submission on the H100 machine
/// (ours / raw driver loop, three runs each: 0.95x with them, 0.96-0.99x without).
const INLINE_ARGS: usize = 16;

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
    pub(crate) args: SmallVec<[*mut c_void; INLINE_ARGS]>,
    /// The byte size of the value behind each entry of `args`.
    pub(crate) arg_sizes: SmallVec<[usize; INLINE_ARGS]>,
    /// Tracked slices passed as arguments, for cross-stream waits and records.
    pub(crate) tracked: Vec<(&'a Arc<SliceEvents>, Access)>,
    pub(crate) flags: Option<sys::CUevent_flags>,
    /// Set when a buffer of another context than the stream's was pushed: the launch is refused
    /// (`CUDA_ERROR_INVALID_CONTEXT`), as the address means nothing in this context.
    pub(crate) foreign_buffer: bool,
}

impl CudaStream {
    /// Starts a launch of `func` on this stream.
    pub fn launch_builder<'a>(&'a self, func: &'a CudaFunction) -> LaunchArgs<'a> {
        LaunchArgs {
            stream: self,
            func,
            args: SmallVec::new(),
            arg_sizes: SmallVec::new(),
            tracked: Vec::new(),
            flags: None,
            foreign_buffer: false,
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
        owner: &CudaStream,
    ) {
        if !Arc::ptr_eq(&owner.ctx, &self.stream.ctx) && owner.ctx != self.stream.ctx {
            self.foreign_buffer = true;
        }
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

    /// Compares the arguments pushed so far with the kernel's parameter list (a prism-gpu
    /// extension). [`launch`](Self::launch) does the same and returns
    /// `DriverError(CUDA_ERROR_INVALID_VALUE)` on a mismatch; this gives the details.
    ///
    /// The list comes from `cuFuncGetParamInfo` (CUDA 12.4+ drivers), asked once per kernel and
    /// cached; with an older driver nothing is checked. For a kernel loaded from a binary image
    /// (cubin, fatbin) the driver cannot give the parameter count without a failing call, so the
    /// first launch's argument count is trusted to be complete unless the kernel has fewer
    /// parameters; sizes and later launches are checked against it.
    #[doc(alias = "cuFuncGetParamInfo")]
    pub fn check(&self) -> Result<(), ArgumentMismatch> {
        let (func, given) = (self.func, self.arg_sizes.as_slice());
        let Some(params) = func.params(given.len()) else {
            return Ok(());
        };
        match params {
            Params::AtLeast(known) if given.len() > known.len() => {
                // More arguments than the first launch passed: ask about the extra ones.
                let Ok((more, all_exist)) = func.probe_params(known.len(), given.len()) else {
                    return Ok(());
                };
                let sizes = known.iter().chain(&more).copied().collect();
                let params = if all_exist { Params::AtLeast(sizes) } else { Params::Exact(sizes) };
                compare(&func.info.name, &params, given)
            }
            params => compare(&func.info.name, params, given),
        }
    }

    fn submit(&mut self, cfg: LaunchConfig, how: How) -> Result<Option<(CudaEvent, CudaEvent)>, DriverError> {
        // The launch returns cudarc's error type, which has no conversion from ours (one would
        // change type inference in callers' code): the mismatch is an invalid value, and
        // `check()` says which argument.
        let stream = self.stream;
        if self.foreign_buffer || *self.func.module.ctx != *stream.ctx {
            // A buffer or the kernel belongs to another context than the stream.
            return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT));
        }
        self.check().map_err(|_| DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))?;
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
                    stream.capture.slice(events, *access);
                }
            }
        }
        let start = self.flags.map(|f| stream.record_event(Some(f))).transpose()?;
        // The driver entry points take the same arguments.
        type Launch = unsafe fn(
            sys::CUfunction,
            (c_uint, c_uint, c_uint),
            (c_uint, c_uint, c_uint),
            c_uint,
            sys::CUstream,
            &mut [*mut c_void],
        ) -> Result<(), DriverError>;
        let launch: Launch = match how {
            How::Plain => result::launch_kernel,
            How::Cooperative => result::launch_cooperative_kernel,
            How::Dependent => result::launch_kernel_dependent,
        };
        // SAFETY: every entry of `args` points at a value borrowed for `'a`, which outlives this
        // call; the caller of `launch` vouches that they match the kernel's parameters.
        unsafe {
            launch(
                self.func.cu_function,
                cfg.grid_dim,
                cfg.block_dim,
                cfg.shared_mem_bytes,
                stream.cu_stream,
                self.args.as_mut_slice(),
            )
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
    /// Before submitting, the argument sizes are compared with the kernel's parameters (see
    /// [`check`](Self::check)): a wrong count or size returns `CUDA_ERROR_INVALID_VALUE`.
    ///
    /// # Safety
    /// The arguments must match the kernel's parameters in number, order and type; the kernel
    /// must stay within its buffers and may write to any buffer passed, even by `&`.
    #[doc(alias = "cuLaunchKernel")]
    pub unsafe fn launch(
        &mut self,
        cfg: LaunchConfig,
    ) -> Result<Option<(CudaEvent, CudaEvent)>, DriverError> {
        self.submit(cfg, How::Plain)
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
        self.submit(cfg, How::Cooperative)
    }

    /// Submits the kernel as a programmatic dependent of the work before it on the stream (a
    /// prism-gpu extension, for the built-in kernels): it may start before that work is done, which
    /// hides the launch between two kernels.
    ///
    /// # Safety
    /// As for [`launch`](Self::launch); and every thread of the kernel executes
    /// `griddepcontrol.wait` (`prism_await_previous_grid` in cuda/common.cuh) before its first
    /// access to global memory.
    #[doc(alias = "cuLaunchKernelEx")]
    pub(crate) unsafe fn launch_dependent(
        &mut self,
        cfg: LaunchConfig,
    ) -> Result<Option<(CudaEvent, CudaEvent)>, DriverError> {
        self.submit(cfg, How::Dependent)
    }
}

/// How [`LaunchArgs`] submits a kernel.
#[derive(Clone, Copy)]
enum How {
    Plain,
    /// All blocks resident at once.
    Cooperative,
    /// A programmatic dependent of the work before it.
    Dependent,
}

/// Launch arguments that do not match the kernel's parameter list, from [`LaunchArgs::check`]
/// (a prism-gpu extension). `launch` reports it as `DriverError(CUDA_ERROR_INVALID_VALUE)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentMismatch {
    /// The kernel's name.
    pub kernel: String,
    /// The byte size of each of the kernel's parameters, in order (only the first ones when
    /// `complete` is false).
    pub expected: Vec<usize>,
    /// Whether `expected` is the kernel's whole parameter list.
    pub complete: bool,
    /// The byte size of each argument pushed, in order.
    pub given: Vec<usize>,
}

impl ArgumentMismatch {
    /// The first position where the argument size differs from the parameter size, if the
    /// mismatch is not only in the count.
    pub fn first_difference(&self) -> Option<usize> {
        self.expected.iter().zip(&self.given).position(|(e, g)| e != g)
    }
}

fn byte_list(sizes: &[usize]) -> String {
    match sizes {
        [] => "none".to_string(),
        _ => sizes.iter().map(usize::to_string).collect::<Vec<_>>().join(", ") + " bytes",
    }
}

impl std::fmt::Display for ArgumentMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at_least = if self.complete { "" } else { "at least " };
        write!(
            f,
            "kernel `{}` takes {at_least}{} parameters ({}), but the launch passes {} arguments ({})",
            self.kernel,
            self.expected.len(),
            byte_list(&self.expected),
            self.given.len(),
            byte_list(&self.given),
        )?;
        if let Some(i) = self.first_difference() {
            write!(
                f,
                ": argument {i} is {} bytes where the parameter is {}",
                self.given[i], self.expected[i]
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for ArgumentMismatch {}

/// Checks `given` argument sizes against a kernel's known parameters.
fn compare(kernel: &str, params: &Params, given: &[usize]) -> Result<(), ArgumentMismatch> {
    let (expected, complete) = match params {
        Params::Unknown => return Ok(()),
        Params::Exact(sizes) => (sizes, true),
        Params::AtLeast(sizes) => (sizes, false),
    };
    let fits = if complete {
        given == expected.as_slice()
    } else {
        given.get(..expected.len()) == Some(expected.as_slice())
    };
    if fits {
        return Ok(());
    }
    Err(ArgumentMismatch {
        kernel: kernel.to_string(),
        expected: expected.clone(),
        complete,
        given: given.to_vec(),
    })
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
        self.push_slice(&arg.cu_device_ptr, arg.events.as_ref(), Access::Read, &arg.stream);
        self
    }
}

// SAFETY: as above.
unsafe impl<'a, 'b: 'a, T> PushKernelArg<&'b mut CudaSlice<T>> for LaunchArgs<'a> {
    #[inline(always)]
    fn arg(&mut self, arg: &'b mut CudaSlice<T>) -> &mut Self {
        let arg: &'b CudaSlice<T> = arg;
        self.push_slice(&arg.cu_device_ptr, arg.events.as_ref(), Access::Write, &arg.stream);
        self
    }
}

// SAFETY: pushes one pointer to the view's device address, borrowed for longer than the builder.
unsafe impl<'a, 'b: 'a, 'c: 'b, T> PushKernelArg<&'b CudaView<'c, T>> for LaunchArgs<'a> {
    #[inline(always)]
    fn arg(&mut self, arg: &'b CudaView<'c, T>) -> &mut Self {
        self.push_slice(&arg.ptr, arg.events, Access::Read, arg.stream);
        self
    }
}

// SAFETY: as above.
unsafe impl<'a, 'b: 'a, 'c: 'b, T> PushKernelArg<&'b mut CudaViewMut<'c, T>> for LaunchArgs<'a> {
    #[inline(always)]
    fn arg(&mut self, arg: &'b mut CudaViewMut<'c, T>) -> &mut Self {
        let arg: &'b CudaViewMut<'c, T> = arg;
        self.push_slice(&arg.ptr, arg.events, Access::Write, arg.stream);
        self
    }
}

#[cfg(test)]
mod tests {
    use std::marker::PhantomData;
    use std::mem::ManuallyDrop;
    use std::sync::atomic::AtomicU32;
    use std::sync::Arc;

    use std::sync::OnceLock;

    use super::*;
    use crate::driver::module::KernelInfo;
    use crate::driver::{CudaContext, CudaModule};

    /// Host-only stand-ins (null handles): never dropped, so no driver call is made.
    fn fakes() -> (ManuallyDrop<Arc<CudaStream>>, ManuallyDrop<CudaFunction>) {
        fakes_in(0)
    }

    /// [`fakes`] in a context whose (never used) handle is `ctx_id`: different ids are different
    /// contexts.
    fn fakes_in(ctx_id: usize) -> (ManuallyDrop<Arc<CudaStream>>, ManuallyDrop<CudaFunction>) {
        let ctx = Arc::new(CudaContext {
            cu_device: 0,
            cu_ctx: std::ptr::without_provenance_mut(ctx_id),
            ordinal: 0,
            has_async_alloc: false,
            is_primary: true,
            tracking: Default::default(),
            error_state: AtomicU32::new(0),
            staging: Default::default(),
            alloc_retries: Default::default(),
            out_of_memory: Default::default(),
            last_oom_bytes: Default::default(),
            generation: 0,
        });
        let stream = Arc::new(CudaStream {
            cu_stream: std::ptr::null_mut(),
            ctx: ctx.clone(),
            owned: false,
            capture: Default::default(),
            id: crate::driver::stream::next_id(),
        });
        let module = Arc::new(CudaModule {
            globals: Default::default(),
            functions: Default::default(),
            cu_module: std::ptr::null_mut(),
            ctx,
            ptx_param_counts: Default::default(),
        });
        let info = Arc::new(KernelInfo { name: "fake".into(), params: OnceLock::new() });
        let func = CudaFunction { cu_function: std::ptr::null_mut(), module, info };
        (ManuallyDrop::new(stream), ManuallyDrop::new(func))
    }

    #[repr(C)]
    struct Meta {
        a: u32,
        b: f64,
        dims: [u16; 3],
    }
    // SAFETY: repr(C) plain numbers.
    unsafe impl DeviceRepr for Meta {}

    fn fake_slice(stream: &Arc<CudaStream>) -> ManuallyDrop<CudaSlice<f32>> {
        ManuallyDrop::new(CudaSlice {
            cu_device_ptr: 0x1000,
            len: 4,
            events: Some(Arc::new(SliceEvents::default())),
            stream: Arc::clone(stream),
            marker: PhantomData,
        })
    }

    #[test]
    fn buffers_and_kernels_of_another_context_are_refused() {
        use crate::kernels::args::{same_context, CheckedPtr, CheckedPtrMut};
        let (stream, func) = fakes_in(1);
        let (other_stream, other_func) = fakes_in(2);
        let ours = fake_slice(&stream);
        let mut theirs = fake_slice(&other_stream);
        let invalid_context = DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT);
        let cfg = LaunchConfig::for_num_elems(4);

        // The launch builder: refused before any driver call (these handles are not real).
        let mut builder = stream.launch_builder(&func);
        builder.arg(&*ours);
        assert!(!builder.foreign_buffer);
        builder.arg(&*theirs);
        assert!(builder.foreign_buffer);
        // SAFETY: refused before anything is submitted.
        assert_eq!(unsafe { builder.launch(cfg) }.map(|_| ()), Err(invalid_context));
        let view = theirs.slice(1..3);
        let mut builder = stream.launch_builder(&func);
        builder.arg(&view);
        assert!(builder.foreign_buffer);
        let mut view_mut = theirs.slice_mut(0..2);
        let mut builder = stream.launch_builder(&func);
        builder.arg(&mut view_mut);
        assert!(builder.foreign_buffer);
        // A kernel loaded in another context.
        let mut builder = stream.launch_builder(&other_func);
        builder.arg(&*ours);
        // SAFETY: refused before anything is submitted.
        assert_eq!(unsafe { builder.launch(cfg) }.map(|_| ()), Err(invalid_context));

        // The built-in launchers' address check.
        assert!(same_context(&stream, &stream).is_ok());
        assert!(matches!(
            same_context(&other_stream, &stream),
            Err(crate::Error::Driver(e)) if e == invalid_context
        ));
        assert!(ours.checked_ptr(&stream).is_ok());
        assert!(theirs.checked_ptr(&stream).is_err());
        assert!(theirs.checked_ptr_mut(&stream).is_err());
        assert!(theirs.slice(0..1).checked_ptr(&stream).is_err());
    }

    #[test]
    fn args_point_at_the_pushed_values_and_record_their_sizes() {
        let (stream, func) = fakes();
        let slice: ManuallyDrop<CudaSlice<f32>> = ManuallyDrop::new(CudaSlice {
            cu_device_ptr: 0x0dea_dbee_f000,
            len: 7,
            events: Some(Arc::new(SliceEvents::default())),
            stream: Arc::clone(&stream),
            marker: PhantomData,
        });
        let (a, b, c, d, e) = (7u8, -3i16, 2.5f32, 1.0e300f64, half::f16::from_f32(1.5));
        let meta = Meta { a: 9, b: -0.25, dims: [1, 2, 3] };
        let view = slice.slice(2..5);
        let mut builder = stream.launch_builder(&func);
        builder.arg(&a).arg(&b).arg(&c).arg(&d).arg(&e).arg(&meta).arg(&*slice).arg(&view);
        assert_eq!(builder.arg_sizes(), &[1, 2, 4, 8, 2, size_of::<Meta>(), 8, 8]);
        assert_eq!(builder.args.len(), 8);
        // SAFETY: each pointer was taken from a value still borrowed by the builder.
        unsafe {
            assert_eq!(*(builder.args[0] as *const u8), 7);
            assert_eq!(*(builder.args[1] as *const i16), -3);
            assert_eq!(*(builder.args[2] as *const f32), 2.5);
            assert_eq!(*(builder.args[3] as *const f64), 1.0e300);
            assert_eq!(*(builder.args[4] as *const half::f16), half::f16::from_f32(1.5));
            let m = &*(builder.args[5] as *const Meta);
            assert_eq!((m.a, m.b, m.dims), (9, -0.25, [1, 2, 3]));
            assert_eq!(*(builder.args[6] as *const u64), 0x0dea_dbee_f000);
            assert_eq!(*(builder.args[7] as *const u64), 0x0dea_dbee_f000 + 2 * 4);
        }
        // Single-stream context: nothing is tracked, so a launch would do no event work.
        assert!(builder.tracked.is_empty());
    }

    #[test]
    fn multi_stream_context_tracks_slice_arguments() {
        let (stream, func) = fakes();
        stream.ctx.tracking.force_multi_stream();
        let mut slice: ManuallyDrop<CudaSlice<u32>> = ManuallyDrop::new(CudaSlice {
            cu_device_ptr: 0x1000,
            len: 4,
            events: Some(Arc::new(SliceEvents::default())),
            stream: Arc::clone(&stream),
            marker: PhantomData,
        });
        let other: ManuallyDrop<CudaSlice<u32>> = ManuallyDrop::new(CudaSlice {
            cu_device_ptr: 0x2000,
            len: 4,
            events: None,
            stream: Arc::clone(&stream),
            marker: PhantomData,
        });
        let mut builder = stream.launch_builder(&func);
        builder.arg(&mut *slice).arg(&*other).arg(&3u32);
        assert_eq!(builder.tracked.len(), 1, "untracked slices and scalars add no events");
        assert_eq!(builder.tracked[0].1, Access::Write);
    }

    fn mismatch(expected: &[usize], complete: bool, given: &[usize]) -> ArgumentMismatch {
        let params =
            if complete { Params::Exact(expected.to_vec()) } else { Params::AtLeast(expected.to_vec()) };
        compare("saxpy", &params, given).expect_err("a mismatch")
    }

    #[test]
    fn matching_arguments_pass() {
        assert_eq!(compare("k", &Params::Exact(vec![8, 4, 2]), &[8, 4, 2]), Ok(()));
        assert_eq!(compare("k", &Params::Exact(vec![]), &[]), Ok(()));
        assert_eq!(compare("k", &Params::AtLeast(vec![8, 4]), &[8, 4]), Ok(()));
        assert_eq!(compare("k", &Params::AtLeast(vec![8]), &[8, 4]), Ok(()), "the rest is unknown");
        assert_eq!(compare("k", &Params::Unknown, &[1, 2, 3]), Ok(()), "no parameter info: no check");
    }

    #[test]
    fn too_few_and_too_many_arguments_name_both_lists() {
        let e = mismatch(&[8, 8, 4], true, &[8, 8]);
        assert_eq!((e.kernel.as_str(), e.first_difference()), ("saxpy", None));
        assert_eq!(
            e.to_string(),
            "kernel `saxpy` takes 3 parameters (8, 8, 4 bytes), but the launch passes 2 arguments (8, 8 bytes)"
        );
        let e = mismatch(&[8], true, &[8, 4]);
        assert_eq!(
            e.to_string(),
            "kernel `saxpy` takes 1 parameters (8 bytes), but the launch passes 2 arguments (8, 4 bytes)"
        );
        let e = mismatch(&[8, 4], false, &[8]);
        assert!(e.to_string().starts_with("kernel `saxpy` takes at least 2 parameters (8, 4 bytes)"), "{e}");
        let e = mismatch(&[4], true, &[]);
        assert!(e.to_string().ends_with("passes 0 arguments (none)"), "{e}");
    }

    #[test]
    fn a_wrong_size_names_the_position() {
        let e = mismatch(&[8, 4, 4], true, &[8, 8, 4]);
        assert_eq!(e.first_difference(), Some(1));
        assert!(e.to_string().ends_with(": argument 1 is 8 bytes where the parameter is 4"), "{e}");
        let e = mismatch(&[8, 2], false, &[8, 4, 4]);
        assert_eq!(e.first_difference(), Some(1));
    }

    #[test]
    fn check_uses_the_cached_parameter_list() {
        let (stream, func) = fakes();
        func.info.params.set(Params::Exact(vec![8, 4])).unwrap();
        let (ptr, n, wide) = (0u64, 3u32, 3u64);
        let mut ok = stream.launch_builder(&func);
        ok.arg(&ptr).arg(&n);
        assert_eq!(ok.check(), Ok(()));
        let mut bad = stream.launch_builder(&func);
        bad.arg(&ptr).arg(&wide);
        let e = bad.check().expect_err("u64 where the kernel takes 4 bytes");
        assert_eq!(
            (e.kernel.as_str(), e.expected.as_slice(), e.given.as_slice()),
            ("fake", &[8, 4][..], &[8, 8][..])
        );
        // The check runs before anything reaches the driver (the fake handles are null).
        // SAFETY: the launch is refused before any driver call.
        let refused = unsafe { bad.launch(LaunchConfig::for_num_elems(1)) };
        assert!(matches!(refused, Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))));
    }
}
