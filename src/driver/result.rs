//! Thin wrappers over the driver entry points: one function per call, returning
//! `Result<_, DriverError>` instead of a raw [`sys::CUresult`].
//!
//! Most functions stay `unsafe`: the driver cannot check that handles are alive or that host
//! buffers outlive asynchronous work. The grouping follows cudarc (`stream::create`,
//! `event::record`, ...), so code written against `cudarc::driver::result` keeps compiling.

use std::ffi::{c_char, c_int, c_uchar, c_uint, c_void, CStr};
use std::mem::MaybeUninit;

use super::sys;

/// A driver call that did not return `CUDA_SUCCESS`.
///
/// `Debug` and `Display` print `DriverError(CUDA_ERROR_X, "message")`, with the name and message
/// from `cuGetErrorName` / `cuGetErrorString`. Without a loaded driver the name comes from the
/// bindings and the message from a short table of our own, so formatting never fails.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DriverError(pub sys::CUresult);

impl sys::CUresult {
    /// `Ok(())` for `CUDA_SUCCESS`, otherwise the code wrapped in a [`DriverError`].
    #[inline]
    pub fn result(self) -> Result<(), DriverError> {
        if self == sys::CUresult::CUDA_SUCCESS {
            Ok(())
        } else {
            Err(DriverError(self))
        }
    }
}

impl DriverError {
    /// The driver's name for this code (`"CUDA_ERROR_OUT_OF_MEMORY"`).
    ///
    /// Fails when no driver is loaded or the driver does not know the code.
    #[doc(alias = "cuGetErrorName")]
    pub fn error_name(&self) -> Result<&CStr, DriverError> {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: `text` is a valid out-pointer; the driver stores a pointer to a static string.
        unsafe { sys::cuGetErrorName(self.0, &mut text) }.result()?;
        if text.is_null() {
            return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE));
        }
        // SAFETY: on success the driver returned a NUL-terminated string with static lifetime.
        Ok(unsafe { CStr::from_ptr(text) })
    }

    /// The driver's description of this code (`"out of memory"`).
    ///
    /// Fails when no driver is loaded or the driver does not know the code.
    #[doc(alias = "cuGetErrorString")]
    pub fn error_string(&self) -> Result<&CStr, DriverError> {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: `text` is a valid out-pointer; the driver stores a pointer to a static string.
        unsafe { sys::cuGetErrorString(self.0, &mut text) }.result()?;
        if text.is_null() {
            return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE));
        }
        // SAFETY: on success the driver returned a NUL-terminated string with static lifetime.
        Ok(unsafe { CStr::from_ptr(text) })
    }

    /// The code's name: the driver's, else the bindings'.
    fn display_name(&self) -> String {
        match self.error_name() {
            Ok(name) => name.to_string_lossy().into_owned(),
            Err(_) => self.0.name().to_owned(),
        }
    }

    /// The code's description: the driver's, else ours.
    fn display_message(&self) -> String {
        if let Ok(text) = self.error_string() {
            return text.to_string_lossy().into_owned();
        }
        if crate::sys::driver_library().is_ok() {
            return "<Failure when calling cuGetErrorString()>".to_owned();
        }
        fallback_message(self.0).to_owned()
    }
}

/// Our own wording, used only when no driver is loaded to describe a code.
fn fallback_message(code: sys::CUresult) -> &'static str {
    use sys::CUresult as R;
    match code {
        R::CUDA_SUCCESS => "no error",
        R::CUDA_ERROR_NO_DEVICE => "no CUDA driver could be loaded, so no device is usable",
        R::CUDA_ERROR_NOT_FOUND => "the loaded CUDA driver lacks this entry point",
        R::CUDA_ERROR_INVALID_VALUE => "an argument is out of range",
        R::CUDA_ERROR_OUT_OF_MEMORY => "out of memory",
        R::CUDA_ERROR_NOT_INITIALIZED => "the driver is not initialised",
        R::CUDA_ERROR_INVALID_DEVICE => "invalid device ordinal",
        R::CUDA_ERROR_INVALID_CONTEXT => "invalid context",
        R::CUDA_ERROR_INVALID_HANDLE => "invalid handle",
        R::CUDA_ERROR_INVALID_PTX => "the PTX could not be compiled for this device",
        R::CUDA_ERROR_INVALID_IMAGE => "the module image is not valid",
        R::CUDA_ERROR_FILE_NOT_FOUND => "file not found",
        R::CUDA_ERROR_NOT_READY => "work is still pending",
        R::CUDA_ERROR_ILLEGAL_ADDRESS => "a kernel accessed an illegal address",
        R::CUDA_ERROR_LAUNCH_FAILED => "the kernel launch failed",
        R::CUDA_ERROR_STREAM_CAPTURE_ISOLATION => "a dependency would cross a stream capture boundary",
        R::CUDA_ERROR_NOT_SUPPORTED => "operation not supported",
        _ => "no CUDA driver is loaded to describe this error",
    }
}

/// Prints a name without quotes inside `debug_tuple`.
struct Bare(String);

impl std::fmt::Debug for Bare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Debug for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("DriverError").field(&Bare(self.display_name())).field(&self.display_message()).finish()
    }
}

impl std::fmt::Display for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for DriverError {}

/// Initialises the driver; every other call needs this first.
#[doc(alias = "cuInit")]
pub fn init() -> Result<(), DriverError> {
    // SAFETY: cuInit has no pointer arguments; 0 is the only valid flag value.
    unsafe { sys::cuInit(0) }.result()
}

pub mod device {
    //! Devices (`cuDevice*`).
    use super::*;

    /// The device with this ordinal.
    #[doc(alias = "cuDeviceGet")]
    pub fn get(ordinal: c_int) -> Result<sys::CUdevice, DriverError> {
        let mut dev = MaybeUninit::uninit();
        // SAFETY: valid out-pointer; initialised on success.
        unsafe {
            sys::cuDeviceGet(dev.as_mut_ptr(), ordinal).result()?;
            Ok(dev.assume_init())
        }
    }

    /// The number of devices.
    #[doc(alias = "cuDeviceGetCount")]
    pub fn get_count() -> Result<c_int, DriverError> {
        let mut count = 0;
        // SAFETY: valid out-pointer.
        unsafe { sys::cuDeviceGetCount(&mut count) }.result()?;
        Ok(count)
    }

    /// Total device memory in bytes.
    ///
    /// # Safety
    /// `dev` must come from [`get`].
    #[doc(alias = "cuDeviceTotalMem_v2")]
    pub unsafe fn total_mem(dev: sys::CUdevice) -> Result<usize, DriverError> {
        let mut bytes = 0;
        // SAFETY: valid out-pointer; the caller vouches for `dev`.
        unsafe { sys::cuDeviceTotalMem_v2(&mut bytes, dev) }.result()?;
        Ok(bytes)
    }

    /// One attribute of a device.
    ///
    /// # Safety
    /// `dev` must come from [`get`].
    #[doc(alias = "cuDeviceGetAttribute")]
    pub unsafe fn get_attribute(
        dev: sys::CUdevice,
        attrib: sys::CUdevice_attribute,
    ) -> Result<i32, DriverError> {
        let mut value = 0;
        // SAFETY: valid out-pointer; the caller vouches for `dev`.
        unsafe { sys::cuDeviceGetAttribute(&mut value, attrib, dev) }.result()?;
        Ok(value)
    }

    /// The device's marketing name.
    #[doc(alias = "cuDeviceGetName")]
    pub fn get_name(dev: sys::CUdevice) -> Result<String, DriverError> {
        let mut buf = [0u8; 256];
        // SAFETY: the buffer is writable for its whole length, which we pass.
        unsafe { sys::cuDeviceGetName(buf.as_mut_ptr().cast(), buf.len() as c_int, dev) }.result()?;
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
    }

    /// The device's UUID.
    #[doc(alias = "cuDeviceGetUuid_v2")]
    pub fn get_uuid(dev: sys::CUdevice) -> Result<sys::CUuuid, DriverError> {
        let mut uuid = MaybeUninit::uninit();
        // SAFETY: valid out-pointer; initialised on success.
        unsafe {
            sys::cuDeviceGetUuid_v2(uuid.as_mut_ptr(), dev).result()?;
            Ok(uuid.assume_init())
        }
    }

    /// The device's default memory pool (the one `cuMemAllocAsync` uses until another is set).
    ///
    /// # Safety
    /// `dev` must come from [`get`].
    #[doc(alias = "cuDeviceGetDefaultMemPool")]
    pub unsafe fn get_default_mem_pool(dev: sys::CUdevice) -> Result<sys::CUmemoryPool, DriverError> {
        // SAFETY: the caller vouches for `dev`.
        unsafe { super::mem_pool::default_pool(dev) }
    }

    /// The device's current memory pool.
    ///
    /// # Safety
    /// `dev` must come from [`get`].
    #[doc(alias = "cuDeviceGetMemPool")]
    pub unsafe fn get_mem_pool(dev: sys::CUdevice) -> Result<sys::CUmemoryPool, DriverError> {
        let mut pool = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the caller vouches for `dev`.
        unsafe { sys::cuDeviceGetMemPool(&mut pool, dev) }.result()?;
        Ok(pool)
    }

    /// Makes `pool` the device's current memory pool.
    ///
    /// # Safety
    /// `dev` must come from [`get`] and `pool` must be a live pool of that device.
    #[doc(alias = "cuDeviceSetMemPool")]
    pub unsafe fn set_mem_pool(dev: sys::CUdevice, pool: sys::CUmemoryPool) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for `dev` and `pool`.
        unsafe { sys::cuDeviceSetMemPool(dev, pool) }.result()
    }
}

pub mod primary_ctx {
    //! Primary contexts (`cuDevicePrimaryCtx*`).
    use super::*;

    /// Retains the device's primary context; pair with [`release`].
    ///
    /// # Safety
    /// `dev` must come from [`super::device::get`].
    #[doc(alias = "cuDevicePrimaryCtxRetain")]
    pub unsafe fn retain(dev: sys::CUdevice) -> Result<sys::CUcontext, DriverError> {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the caller vouches for `dev`.
        unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, dev) }.result()?;
        Ok(ctx)
    }

    /// Releases one reference to the device's primary context.
    ///
    /// # Safety
    /// Must balance an earlier [`retain`] of the same device.
    #[doc(alias = "cuDevicePrimaryCtxRelease_v2")]
    pub unsafe fn release(dev: sys::CUdevice) -> Result<(), DriverError> {
        // SAFETY: the caller balances a retain.
        unsafe { sys::cuDevicePrimaryCtxRelease_v2(dev) }.result()
    }

    /// Destroys every allocation and all state of the device's primary context (the way out of a
    /// sticky kernel fault); the context is set up afresh on its next use.
    ///
    /// # Safety
    /// `dev` must come from [`super::device::get`]; every handle made in the old state (memory,
    /// modules, streams, events) is dangling afterwards and must not be used.
    #[doc(alias = "cuDevicePrimaryCtxReset_v2")]
    pub unsafe fn reset(dev: sys::CUdevice) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for `dev` and drops the old handles.
        unsafe { sys::cuDevicePrimaryCtxReset_v2(dev) }.result()
    }
}

pub mod mem_pool {
    //! Stream-ordered memory pools (`cuMemPool*`).
    use super::*;

    /// The device's default pool, which `cuMemAllocAsync` allocates from.
    ///
    /// # Safety
    /// `dev` must come from [`super::device::get`].
    #[doc(alias = "cuDeviceGetDefaultMemPool")]
    pub unsafe fn default_pool(dev: sys::CUdevice) -> Result<sys::CUmemoryPool, DriverError> {
        let mut pool = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the caller vouches for `dev`.
        unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, dev) }.result()?;
        Ok(pool)
    }

    /// Gives the pool's unused memory back to the device until it holds at most `keep` bytes
    /// (memory still allocated is kept).
    ///
    /// # Safety
    /// `pool` must be a live pool.
    #[doc(alias = "cuMemPoolTrimTo")]
    pub unsafe fn trim_to(pool: sys::CUmemoryPool, keep: usize) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for `pool`.
        unsafe { sys::cuMemPoolTrimTo(pool, keep) }.result()
    }

    /// A byte-count attribute of the pool (`*_MEM_CURRENT`, `*_MEM_HIGH`: 64-bit values).
    ///
    /// # Safety
    /// `pool` must be a live pool and `attr` one whose value is a `cuuint64_t`.
    #[doc(alias = "cuMemPoolGetAttribute")]
    pub unsafe fn get_u64(
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
    ) -> Result<u64, DriverError> {
        let mut value = 0u64;
        // SAFETY: `value` is a valid u64 out-pointer, as the attribute needs (caller's contract).
        unsafe { sys::cuMemPoolGetAttribute(pool, attr, (&mut value as *mut u64).cast()) }.result()?;
        Ok(value)
    }

    /// Creates a memory pool.
    ///
    /// # Safety
    /// `pool_props` must point at valid pool properties.
    #[doc(alias = "cuMemPoolCreate")]
    pub unsafe fn create(pool_props: *const sys::CUmemPoolProps) -> Result<sys::CUmemoryPool, DriverError> {
        let mut pool = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the caller vouches for `pool_props`.
        unsafe { sys::cuMemPoolCreate(&mut pool, pool_props) }.result()?;
        Ok(pool)
    }

    /// Destroys a memory pool.
    ///
    /// # Safety
    /// `pool` must be a live pool made by [`create`], destroyed once, not any device's current
    /// pool, with no allocation of it in use.
    #[doc(alias = "cuMemPoolDestroy")]
    pub unsafe fn destroy(pool: sys::CUmemoryPool) -> Result<(), DriverError> {
        // SAFETY: the caller owns `pool`.
        unsafe { sys::cuMemPoolDestroy(pool) }.result()
    }

    /// Reads an attribute of the pool into `value`.
    ///
    /// # Safety
    /// `pool` must be live and `value` must point at writable memory of the attribute's type.
    #[doc(alias = "cuMemPoolGetAttribute")]
    pub unsafe fn get_attribute(
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
        value: *mut c_void,
    ) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for `pool` and `value`.
        unsafe { sys::cuMemPoolGetAttribute(pool, attr, value) }.result()
    }

    /// Sets an attribute of the pool from `value`.
    ///
    /// # Safety
    /// `pool` must be live and `value` must point at a value of the attribute's type.
    #[doc(alias = "cuMemPoolSetAttribute")]
    pub unsafe fn set_attribute(
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
        value: *mut c_void,
    ) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for `pool` and `value`.
        unsafe { sys::cuMemPoolSetAttribute(pool, attr, value) }.result()
    }

    /// Allocates `num_bytes` from `pool` in stream order.
    ///
    /// # Safety
    /// `pool` and `stream` must be live; the memory is uninitialised.
    #[doc(alias = "cuMemAllocFromPoolAsync")]
    pub unsafe fn alloc_async(
        pool: sys::CUmemoryPool,
        num_bytes: usize,
        stream: sys::CUstream,
    ) -> Result<sys::CUdeviceptr, DriverError> {
        let mut ptr = 0;
        // SAFETY: valid out-pointer; the caller vouches for `pool` and `stream`.
        unsafe { sys::cuMemAllocFromPoolAsync(&mut ptr, num_bytes, pool, stream) }.result()?;
        Ok(ptr)
    }
}

pub mod ctx {
    //! The current context (`cuCtx*`).
    use super::*;

    /// Creates a non-primary context.
    ///
    /// # Safety
    /// `dev` must come from [`super::device::get`]; `params` must be null or valid.
    #[doc(alias = "cuCtxCreate_v4")]
    pub unsafe fn create_v4(
        params: *mut sys::CUctxCreateParams,
        flags: c_uint,
        dev: sys::CUdevice,
    ) -> Result<sys::CUcontext, DriverError> {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the caller vouches for the rest.
        unsafe { sys::cuCtxCreate_v4(&mut ctx, params, flags, dev) }.result()?;
        Ok(ctx)
    }

    /// Destroys a non-primary context.
    ///
    /// # Safety
    /// `ctx` must come from [`create_v4`] and not be used afterwards.
    #[doc(alias = "cuCtxDestroy_v2")]
    pub unsafe fn destroy(ctx: sys::CUcontext) -> Result<(), DriverError> {
        // SAFETY: the caller owns `ctx`.
        unsafe { sys::cuCtxDestroy_v2(ctx) }.result()
    }

    /// Binds `ctx` to the calling thread.
    ///
    /// # Safety
    /// `ctx` must be a live context (or null to unbind).
    #[doc(alias = "cuCtxSetCurrent")]
    pub unsafe fn set_current(ctx: sys::CUcontext) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for `ctx`.
        unsafe { sys::cuCtxSetCurrent(ctx) }.result()
    }

    /// The context bound to the calling thread, if any.
    #[doc(alias = "cuCtxGetCurrent")]
    pub fn get_current() -> Result<Option<sys::CUcontext>, DriverError> {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        unsafe { sys::cuCtxGetCurrent(&mut ctx) }.result()?;
        Ok((!ctx.is_null()).then_some(ctx))
    }

    /// The device of the context bound to the calling thread.
    #[doc(alias = "cuCtxGetDevice")]
    pub fn get_device() -> Result<sys::CUdevice, DriverError> {
        let mut dev = 0;
        // SAFETY: valid out-pointer.
        unsafe { sys::cuCtxGetDevice(&mut dev) }.result()?;
        Ok(dev)
    }

    /// Sets the current context's flags.
    #[doc(alias = "cuCtxSetFlags")]
    pub fn set_flags(flags: sys::CUctx_flags) -> Result<(), DriverError> {
        // SAFETY: plain value argument.
        unsafe { sys::cuCtxSetFlags(flags as u32) }.result()
    }

    /// Waits for all work in the current context.
    #[doc(alias = "cuCtxSynchronize")]
    pub fn synchronize() -> Result<(), DriverError> {
        // SAFETY: no arguments.
        unsafe { sys::cuCtxSynchronize() }.result()
    }

    /// Reads a context limit.
    #[doc(alias = "cuCtxGetLimit")]
    pub fn get_limit(limit: sys::CUlimit) -> Result<usize, DriverError> {
        let mut value = 0;
        // SAFETY: valid out-pointer.
        unsafe { sys::cuCtxGetLimit(&mut value, limit) }.result()?;
        Ok(value)
    }

    /// Sets a context limit.
    #[doc(alias = "cuCtxSetLimit")]
    pub fn set_limit(limit: sys::CUlimit, value: usize) -> Result<(), DriverError> {
        // SAFETY: plain value arguments.
        unsafe { sys::cuCtxSetLimit(limit, value) }.result()
    }

    /// Reads the L1/shared memory preference.
    #[doc(alias = "cuCtxGetCacheConfig")]
    pub fn get_cache_config() -> Result<sys::CUfunc_cache, DriverError> {
        let mut config = sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_NONE;
        // SAFETY: valid out-pointer to a repr(transparent) u32.
        unsafe { sys::cuCtxGetCacheConfig(&mut config) }.result()?;
        Ok(config)
    }

    /// Sets the L1/shared memory preference.
    #[doc(alias = "cuCtxSetCacheConfig")]
    pub fn set_cache_config(config: sys::CUfunc_cache) -> Result<(), DriverError> {
        // SAFETY: plain value argument.
        unsafe { sys::cuCtxSetCacheConfig(config) }.result()
    }
}

pub mod stream {
    //! Streams (`cuStream*`).
    use super::*;

    /// Which kind of stream to create.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum StreamKind {
        /// Synchronises with the legacy default stream.
        Default,
        /// Runs concurrently with the legacy default stream.
        NonBlocking,
    }

    impl StreamKind {
        fn flags(self) -> c_uint {
            match self {
                StreamKind::Default => sys::CUstream_flags::CU_STREAM_DEFAULT as u32,
                StreamKind::NonBlocking => sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32,
            }
        }
    }

    /// The legacy default stream (a null handle).
    pub fn null() -> sys::CUstream {
        std::ptr::null_mut()
    }

    /// Creates a stream in the current context.
    #[doc(alias = "cuStreamCreate")]
    pub fn create(kind: StreamKind) -> Result<sys::CUstream, DriverError> {
        let mut stream = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        unsafe { sys::cuStreamCreate(&mut stream, kind.flags()) }.result()?;
        Ok(stream)
    }

    /// Creates a stream with a priority (lower numbers run first).
    #[doc(alias = "cuStreamCreateWithPriority")]
    pub fn create_with_priority(kind: StreamKind, priority: i32) -> Result<sys::CUstream, DriverError> {
        let mut stream = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        unsafe { sys::cuStreamCreateWithPriority(&mut stream, kind.flags(), priority) }.result()?;
        Ok(stream)
    }

    /// `(least, greatest)` stream priority of the current context.
    #[doc(alias = "cuCtxGetStreamPriorityRange")]
    pub fn get_priority_range() -> Result<(i32, i32), DriverError> {
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: valid out-pointers.
        unsafe { sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest) }.result()?;
        Ok((least, greatest))
    }

    /// Blocks until the stream's work is done.
    ///
    /// # Safety
    /// `stream` must be live (or a special handle).
    #[doc(alias = "cuStreamSynchronize")]
    pub unsafe fn synchronize(stream: sys::CUstream) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for `stream`.
        unsafe { sys::cuStreamSynchronize(stream) }.result()
    }

    /// Destroys a stream (pending work still completes).
    ///
    /// # Safety
    /// `stream` must come from [`create`] and not be used afterwards.
    #[doc(alias = "cuStreamDestroy_v2")]
    pub unsafe fn destroy(stream: sys::CUstream) -> Result<(), DriverError> {
        // SAFETY: the caller owns `stream`.
        unsafe { sys::cuStreamDestroy_v2(stream) }.result()
    }

    /// Makes later work on `stream` wait for `event`.
    ///
    /// # Safety
    /// Both handles must be live.
    #[doc(alias = "cuStreamWaitEvent")]
    pub unsafe fn wait_event(
        stream: sys::CUstream,
        event: sys::CUevent,
        flags: sys::CUevent_wait_flags,
    ) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for both handles.
        unsafe { sys::cuStreamWaitEvent(stream, event, flags as u32) }.result()
    }

    /// Runs a host function in stream order.
    ///
    /// # Safety
    /// `func` must be sound to call with `arg` on a driver thread, and make no CUDA calls.
    #[doc(alias = "cuLaunchHostFunc")]
    pub unsafe fn launch_host_function(
        stream: sys::CUstream,
        func: unsafe extern "C" fn(*mut c_void),
        arg: *mut c_void,
    ) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for `func` and `arg`.
        unsafe { sys::cuLaunchHostFunc(stream, Some(func), arg) }.result()
    }

    /// Starts capturing `stream` into a graph.
    ///
    /// # Safety
    /// `stream` must be a live, non-default stream.
    #[doc(alias = "cuStreamBeginCapture_v2")]
    pub unsafe fn begin_capture(
        stream: sys::CUstream,
        mode: sys::CUstreamCaptureMode,
    ) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for `stream`.
        unsafe { sys::cuStreamBeginCapture_v2(stream, mode) }.result()
    }

    /// Ends a capture and returns the graph (null when nothing was captured).
    ///
    /// # Safety
    /// `stream` must be live and capturing.
    #[doc(alias = "cuStreamEndCapture")]
    pub unsafe fn end_capture(stream: sys::CUstream) -> Result<sys::CUgraph, DriverError> {
        let mut graph = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the caller vouches for `stream`.
        unsafe { sys::cuStreamEndCapture(stream, &mut graph) }.result()?;
        Ok(graph)
    }

    /// Whether `stream` is capturing.
    ///
    /// # Safety
    /// `stream` must be live.
    #[doc(alias = "cuStreamIsCapturing")]
    pub unsafe fn is_capturing(stream: sys::CUstream) -> Result<sys::CUstreamCaptureStatus, DriverError> {
        let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: valid out-pointer; the caller vouches for `stream`.
        unsafe { sys::cuStreamIsCapturing(stream, &mut status) }.result()?;
        Ok(status)
    }

    /// Attaches managed memory to `stream` (who may access it: `flags`), in stream order.
    ///
    /// # Safety
    /// `stream` must be live and `dptr..dptr+num_bytes` managed memory (or `num_bytes` 0 for the
    /// whole allocation at `dptr`).
    #[doc(alias = "cuStreamAttachMemAsync")]
    pub unsafe fn attach_mem_async(
        stream: sys::CUstream,
        dptr: sys::CUdeviceptr,
        num_bytes: usize,
        flags: sys::CUmemAttach_flags,
    ) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for the stream and the range.
        unsafe { sys::cuStreamAttachMemAsync(stream, dptr, num_bytes, flags as c_uint) }.result()
    }
}

/// Allocates device memory in stream order.
///
/// # Safety
/// `stream` must be live; the memory is uninitialised.
#[doc(alias = "cuMemAllocAsync")]
pub unsafe fn malloc_async(stream: sys::CUstream, num_bytes: usize) -> Result<sys::CUdeviceptr, DriverError> {
    let mut ptr = 0;
    // SAFETY: valid out-pointer; the caller vouches for `stream`.
    unsafe { sys::cuMemAllocAsync(&mut ptr, num_bytes, stream) }.result()?;
    Ok(ptr)
}

/// Allocates device memory.
///
/// # Safety
/// The memory is uninitialised.
#[doc(alias = "cuMemAlloc_v2")]
pub unsafe fn malloc_sync(num_bytes: usize) -> Result<sys::CUdeviceptr, DriverError> {
    let mut ptr = 0;
    // SAFETY: valid out-pointer.
    unsafe { sys::cuMemAlloc_v2(&mut ptr, num_bytes) }.result()?;
    Ok(ptr)
}

/// Allocates page-locked host memory.
///
/// # Safety
/// The memory is uninitialised; free it with [`free_host`].
#[doc(alias = "cuMemHostAlloc")]
pub unsafe fn malloc_host(num_bytes: usize, flags: c_uint) -> Result<*mut c_void, DriverError> {
    let mut ptr = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    unsafe { sys::cuMemHostAlloc(&mut ptr, num_bytes, flags) }.result()?;
    Ok(ptr)
}

/// Frees page-locked host memory.
///
/// # Safety
/// `ptr` must come from [`malloc_host`], be unused by pending work, and not be used again.
#[doc(alias = "cuMemFreeHost")]
pub unsafe fn free_host(ptr: *mut c_void) -> Result<(), DriverError> {
    // SAFETY: the caller owns `ptr`.
    unsafe { sys::cuMemFreeHost(ptr) }.result()
}

/// Frees device memory in stream order.
///
/// # Safety
/// `dptr` must be a live allocation, freed once; work using it must be ordered before `stream`.
#[doc(alias = "cuMemFreeAsync")]
pub unsafe fn free_async(dptr: sys::CUdeviceptr, stream: sys::CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller owns `dptr`.
    unsafe { sys::cuMemFreeAsync(dptr, stream) }.result()
}

/// Frees device memory.
///
/// # Safety
/// `dptr` must be a live allocation, freed once, with no pending work using it.
#[doc(alias = "cuMemFree_v2")]
pub unsafe fn free_sync(dptr: sys::CUdeviceptr) -> Result<(), DriverError> {
    // SAFETY: the caller owns `dptr`.
    unsafe { sys::cuMemFree_v2(dptr) }.result()
}

/// Sets `num_bytes` bytes to `value` in stream order.
///
/// # Safety
/// `dptr..dptr+num_bytes` must be live device memory.
#[doc(alias = "cuMemsetD8Async")]
pub unsafe fn memset_d8_async(
    dptr: sys::CUdeviceptr,
    value: c_uchar,
    num_bytes: usize,
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the range and the stream.
    unsafe { sys::cuMemsetD8Async(dptr, value, num_bytes, stream) }.result()
}

/// Copies `src` to device memory in stream order.
///
/// # Safety
/// `dst` must hold `size_of_val(src)` bytes; `src` must stay alive and unmoved until the copy
/// is done (pageable memory is staged before the call returns, pinned memory is not).
#[doc(alias = "cuMemcpyHtoDAsync_v2")]
pub unsafe fn memcpy_htod_async<T>(
    dst: sys::CUdeviceptr,
    src: &[T],
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for both ranges.
    unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.as_ptr().cast(), std::mem::size_of_val(src), stream) }
        .result()
}

/// Copies device memory into `dst` in stream order.
///
/// # Safety
/// `src` must hold `size_of_val(dst)` bytes; `dst` must stay alive, unmoved and unread until the
/// copy is done (pageable destinations are written before the call returns).
#[doc(alias = "cuMemcpyDtoHAsync_v2")]
pub unsafe fn memcpy_dtoh_async<T>(
    dst: &mut [T],
    src: sys::CUdeviceptr,
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for both ranges.
    unsafe { sys::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast(), src, std::mem::size_of_val(dst), stream) }
        .result()
}

/// Copies device memory to device memory in stream order.
///
/// # Safety
/// Both ranges must be live device memory of `num_bytes` bytes.
#[doc(alias = "cuMemcpyDtoDAsync_v2")]
pub unsafe fn memcpy_dtod_async(
    dst: sys::CUdeviceptr,
    src: sys::CUdeviceptr,
    num_bytes: usize,
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for both ranges.
    unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, num_bytes, stream) }.result()
}

/// Copies device memory between contexts in stream order.
///
/// # Safety
/// Both ranges must be live device memory of `num_bytes` bytes in their contexts.
#[doc(alias = "cuMemcpyPeerAsync")]
pub unsafe fn memcpy_peer_async(
    dst_ctx: sys::CUcontext,
    dst: sys::CUdeviceptr,
    src_ctx: sys::CUcontext,
    src: sys::CUdeviceptr,
    num_bytes: usize,
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for both ranges and contexts.
    unsafe { sys::cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, num_bytes, stream) }.result()
}

/// `(free, total)` device memory in bytes for the current context.
#[doc(alias = "cuMemGetInfo_v2")]
pub fn mem_get_info() -> Result<(usize, usize), DriverError> {
    let (mut free, mut total) = (0, 0);
    // SAFETY: valid out-pointers.
    unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) }.result()?;
    Ok((free, total))
}

/// Allocates managed (unified) memory, reachable from the host and every device.
///
/// # Safety
/// The memory is uninitialised; free it with [`free_sync`] or [`memory_free`].
#[doc(alias = "cuMemAllocManaged")]
pub unsafe fn malloc_managed(
    num_bytes: usize,
    flags: sys::CUmemAttach_flags,
) -> Result<sys::CUdeviceptr, DriverError> {
    let mut ptr = 0;
    // SAFETY: valid out-pointer.
    unsafe { sys::cuMemAllocManaged(&mut ptr, num_bytes, flags as c_uint) }.result()?;
    Ok(ptr)
}

/// Advises the driver how managed memory will be used.
///
/// # Safety
/// `dptr..dptr+num_bytes` must be managed memory.
#[doc(alias = "cuMemAdvise_v2")]
pub unsafe fn mem_advise(
    dptr: sys::CUdeviceptr,
    num_bytes: usize,
    advice: sys::CUmem_advise,
    location: sys::CUmemLocation,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the range.
    unsafe { sys::cuMemAdvise_v2(dptr, num_bytes, advice, location) }.result()
}

/// Migrates managed memory to `location` in stream order.
///
/// # Safety
/// `dptr..dptr+num_bytes` must be managed memory and `stream` live.
#[doc(alias = "cuMemPrefetchAsync_v2")]
pub unsafe fn mem_prefetch_async(
    dptr: sys::CUdeviceptr,
    num_bytes: usize,
    location: sys::CUmemLocation,
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the range and the stream; 0 is the only valid flag value.
    unsafe { sys::cuMemPrefetchAsync_v2(dptr, num_bytes, location, 0, stream) }.result()
}

/// Frees device memory (the same call as [`free_sync`], under cudarc's other name).
///
/// # Safety
/// `device_ptr` must be a live allocation, freed once, with no pending work using it.
#[doc(alias = "cuMemFree_v2")]
pub unsafe fn memory_free(device_ptr: sys::CUdeviceptr) -> Result<(), DriverError> {
    // SAFETY: forwarded; the caller owns `device_ptr`.
    unsafe { free_sync(device_ptr) }
}

/// Sets `num_bytes` bytes to `value`, synchronously with respect to the host.
///
/// # Safety
/// `dptr..dptr+num_bytes` must be live device memory.
#[doc(alias = "cuMemsetD8_v2")]
pub unsafe fn memset_d8_sync(
    dptr: sys::CUdeviceptr,
    value: c_uchar,
    num_bytes: usize,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the range.
    unsafe { sys::cuMemsetD8_v2(dptr, value, num_bytes) }.result()
}

/// Copies `src` to device memory; returns when the copy is done.
///
/// # Safety
/// `dst` must hold `size_of_val(src)` bytes of live device memory.
#[doc(alias = "cuMemcpyHtoD_v2")]
pub unsafe fn memcpy_htod_sync<T>(dst: sys::CUdeviceptr, src: &[T]) -> Result<(), DriverError> {
    // SAFETY: `src` is a live host slice; the caller vouches for `dst`.
    unsafe { sys::cuMemcpyHtoD_v2(dst, src.as_ptr().cast(), std::mem::size_of_val(src)) }.result()
}

/// Copies device memory into `dst`; returns when the copy is done.
///
/// # Safety
/// `src` must hold `size_of_val(dst)` bytes of live device memory, whose bytes are valid values
/// of `T`.
#[doc(alias = "cuMemcpyDtoH_v2")]
pub unsafe fn memcpy_dtoh_sync<T>(dst: &mut [T], src: sys::CUdeviceptr) -> Result<(), DriverError> {
    // SAFETY: `dst` is a live, exclusive host slice; the caller vouches for `src`.
    unsafe { sys::cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), src, std::mem::size_of_val(dst)) }.result()
}

/// Copies device memory to device memory, synchronously with respect to the host.
///
/// # Safety
/// Both ranges must be live device memory of `num_bytes` bytes.
#[doc(alias = "cuMemcpyDtoD_v2")]
pub unsafe fn memcpy_dtod_sync(
    dst: sys::CUdeviceptr,
    src: sys::CUdeviceptr,
    num_bytes: usize,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for both ranges.
    unsafe { sys::cuMemcpyDtoD_v2(dst, src, num_bytes) }.result()
}

pub mod external_memory {
    //! Memory shared with another API (Vulkan, another process) through an operating-system
    //! handle (`cuImportExternalMemory`).
    use super::*;

    /// Imports memory exported as an opaque file descriptor. On success the driver owns `fd`.
    ///
    /// # Safety
    /// `fd` must be a file descriptor of exported device memory of at least `size` bytes.
    #[cfg(unix)]
    #[doc(alias = "cuImportExternalMemory")]
    pub unsafe fn import_external_memory_opaque_fd(
        fd: std::os::fd::RawFd,
        size: u64,
    ) -> Result<sys::CUexternalMemory, DriverError> {
        let mut memory = std::ptr::null_mut();
        let desc = sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC {
            type_: sys::CUexternalMemoryHandleType::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD,
            handle: sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC_st__bindgen_ty_1 { fd },
            size,
            flags: 0,
            reserved: [0; 16],
        };
        // SAFETY: valid out-pointer and descriptor; the caller vouches for `fd` and `size`.
        unsafe { sys::cuImportExternalMemory(&mut memory, &desc) }.result()?;
        Ok(memory)
    }

    /// Releases imported memory (buffers mapped from it must be freed first).
    ///
    /// # Safety
    /// `external_memory` must come from an import, be destroyed once, and have no mapped
    /// buffer in use.
    #[doc(alias = "cuDestroyExternalMemory")]
    pub unsafe fn destroy_external_memory(external_memory: sys::CUexternalMemory) -> Result<(), DriverError> {
        // SAFETY: the caller owns `external_memory`.
        unsafe { sys::cuDestroyExternalMemory(external_memory) }.result()
    }

    /// Maps `size` bytes at `offset` of imported memory as a device pointer (free it with
    /// [`super::free_sync`]).
    ///
    /// # Safety
    /// `external_memory` must be live and `offset..offset+size` inside it.
    #[doc(alias = "cuExternalMemoryGetMappedBuffer")]
    pub unsafe fn get_mapped_buffer(
        external_memory: sys::CUexternalMemory,
        offset: u64,
        size: u64,
    ) -> Result<sys::CUdeviceptr, DriverError> {
        let mut ptr = 0;
        let desc = sys::CUDA_EXTERNAL_MEMORY_BUFFER_DESC { offset, size, flags: 0, reserved: [0; 16] };
        // SAFETY: valid out-pointer and descriptor; the caller vouches for the memory.
        unsafe { sys::cuExternalMemoryGetMappedBuffer(&mut ptr, external_memory, &desc) }.result()?;
        Ok(ptr)
    }
}

pub mod module {
    //! Modules (`cuModule*`).
    use super::*;
    use std::ffi::CString;

    /// Loads a module from an image (NUL-terminated PTX, cubin or fatbin).
    ///
    /// # Safety
    /// `image` must point to a complete image.
    #[doc(alias = "cuModuleLoadData")]
    pub unsafe fn load_data(image: *const c_void) -> Result<sys::CUmodule, DriverError> {
        let mut module = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the caller vouches for `image`.
        unsafe { sys::cuModuleLoadData(&mut module, image) }.result()?;
        Ok(module)
    }

    /// Loads a module from an image and returns the JIT's info and error logs beside the result.
    ///
    /// The logs are what the driver wrote into `log_capacity`-byte buffers (NUL-trimmed).
    ///
    /// # Safety
    /// `image` must point to a complete image.
    #[doc(alias = "cuModuleLoadDataEx")]
    pub unsafe fn load_data_with_logs(
        image: *const c_void,
        log_capacity: usize,
    ) -> (Result<sys::CUmodule, DriverError>, String, String) {
        let mut info = vec![0u8; log_capacity.max(1)];
        let mut error = vec![0u8; log_capacity.max(1)];
        let mut options = [
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            sys::CUjit_option::CU_JIT_LOG_VERBOSE,
        ];
        // Sizes and flags travel as pointer-sized integers in the value array, as cuda.h specifies.
        let mut values: [*mut c_void; 5] = [
            info.as_mut_ptr().cast(),
            info.len() as *mut c_void,
            error.as_mut_ptr().cast(),
            error.len() as *mut c_void,
            std::ptr::null_mut::<c_void>().wrapping_add(1),
        ];
        let mut module = std::ptr::null_mut();
        // SAFETY: the option and value arrays have the same length and outlive the call; the log
        // buffers are writable for the sizes given; the caller vouches for `image`.
        let code = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                image,
                options.len() as c_uint,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        let text = |buf: &[u8]| {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            String::from_utf8_lossy(&buf[..end]).trim_end().to_owned()
        };
        (code.result().map(|()| module), text(&info), text(&error))
    }

    /// Loads a module from a file.
    #[doc(alias = "cuModuleLoad")]
    pub fn load(fname: CString) -> Result<sys::CUmodule, DriverError> {
        let mut module = std::ptr::null_mut();
        // SAFETY: valid out-pointer and NUL-terminated path.
        unsafe { sys::cuModuleLoad(&mut module, fname.as_ptr()) }.result()?;
        Ok(module)
    }

    /// Looks up a kernel by name.
    ///
    /// # Safety
    /// `module` must be loaded.
    #[doc(alias = "cuModuleGetFunction")]
    pub unsafe fn get_function(module: sys::CUmodule, name: CString) -> Result<sys::CUfunction, DriverError> {
        let mut func = std::ptr::null_mut();
        // SAFETY: valid out-pointer, NUL-terminated name; the caller vouches for `module`.
        unsafe { sys::cuModuleGetFunction(&mut func, module, name.as_ptr()) }.result()?;
        Ok(func)
    }

    /// Looks up a global (`__device__` / `__constant__`) by name: `(address, bytes)`.
    ///
    /// # Safety
    /// `module` must be loaded.
    #[doc(alias = "cuModuleGetGlobal_v2")]
    pub unsafe fn get_global(
        module: sys::CUmodule,
        name: CString,
    ) -> Result<(sys::CUdeviceptr, usize), DriverError> {
        let (mut ptr, mut bytes) = (0, 0);
        // SAFETY: valid out-pointers, NUL-terminated name; the caller vouches for `module`.
        unsafe { sys::cuModuleGetGlobal_v2(&mut ptr, &mut bytes, module, name.as_ptr()) }.result()?;
        Ok((ptr, bytes))
    }

    /// Unloads a module.
    ///
    /// # Safety
    /// `module` must be loaded, and none of its functions used afterwards.
    #[doc(alias = "cuModuleUnload")]
    pub unsafe fn unload(module: sys::CUmodule) -> Result<(), DriverError> {
        // SAFETY: the caller owns `module`.
        unsafe { sys::cuModuleUnload(module) }.result()
    }
}

pub mod function {
    //! Kernel attributes (`cuFunc*`).
    use super::*;

    /// Reads a function attribute.
    ///
    /// # Safety
    /// `f` must belong to a loaded module.
    #[doc(alias = "cuFuncGetAttribute")]
    pub unsafe fn get_function_attribute(
        f: sys::CUfunction,
        attribute: sys::CUfunction_attribute,
    ) -> Result<i32, DriverError> {
        let mut value = 0;
        // SAFETY: valid out-pointer; the caller vouches for `f`.
        unsafe { sys::cuFuncGetAttribute(&mut value, attribute, f) }.result()?;
        Ok(value)
    }

    /// Sets a function attribute.
    ///
    /// # Safety
    /// `f` must belong to a loaded module.
    #[doc(alias = "cuFuncSetAttribute")]
    pub unsafe fn set_function_attribute(
        f: sys::CUfunction,
        attribute: sys::CUfunction_attribute,
        value: i32,
    ) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for `f`.
        unsafe { sys::cuFuncSetAttribute(f, attribute, value) }.result()
    }

    /// Sets a function's L1/shared memory preference.
    ///
    /// # Safety
    /// `f` must belong to a loaded module.
    #[doc(alias = "cuFuncSetCacheConfig")]
    pub unsafe fn set_function_cache_config(
        f: sys::CUfunction,
        config: sys::CUfunc_cache,
    ) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for `f`.
        unsafe { sys::cuFuncSetCacheConfig(f, config) }.result()
    }

    /// Offset and size of parameter `index`, or `Err(CUDA_ERROR_INVALID_VALUE)` past the last one.
    ///
    /// # Safety
    /// `f` must belong to a loaded module.
    #[doc(alias = "cuFuncGetParamInfo")]
    pub unsafe fn get_param_info(f: sys::CUfunction, index: usize) -> Result<(usize, usize), DriverError> {
        let (mut offset, mut size) = (0, 0);
        // SAFETY: valid out-pointers; the caller vouches for `f`.
        unsafe { sys::cuFuncGetParamInfo(f, index, &mut offset, &mut size) }.result()?;
        Ok((offset, size))
    }
}

pub mod occupancy {
    //! Occupancy calculations (`cuOccupancy*`).
    use super::*;

    /// Dynamic shared memory available per block for `num_blocks` blocks of `block_size` threads.
    ///
    /// # Safety
    /// `f` must belong to a loaded module.
    #[doc(alias = "cuOccupancyAvailableDynamicSMemPerBlock")]
    pub unsafe fn available_dynamic_shared_mem_per_block(
        f: sys::CUfunction,
        num_blocks: c_int,
        block_size: c_int,
    ) -> Result<usize, DriverError> {
        let mut bytes = 0;
        // SAFETY: valid out-pointer; the caller vouches for `f`.
        unsafe { sys::cuOccupancyAvailableDynamicSMemPerBlock(&mut bytes, f, num_blocks, block_size) }
            .result()?;
        Ok(bytes)
    }

    /// Resident blocks per multiprocessor.
    ///
    /// # Safety
    /// `f` must belong to a loaded module.
    #[doc(alias = "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags")]
    pub unsafe fn max_active_block_per_multiprocessor_with_flags(
        f: sys::CUfunction,
        block_size: c_int,
        dynamic_smem_size: usize,
        flags: c_uint,
    ) -> Result<i32, DriverError> {
        let mut blocks = 0;
        // SAFETY: valid out-pointer; the caller vouches for `f`.
        unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
                &mut blocks,
                f,
                block_size,
                dynamic_smem_size,
                flags,
            )
        }
        .result()?;
        Ok(blocks)
    }

    /// `(min_grid_size, block_size)` that maximises occupancy.
    ///
    /// # Safety
    /// `f` must belong to a loaded module; `smem_fn`, if any, must be sound to call.
    #[doc(alias = "cuOccupancyMaxPotentialBlockSizeWithFlags")]
    pub unsafe fn max_potential_block_size_with_flags(
        f: sys::CUfunction,
        smem_fn: sys::CUoccupancyB2DSize,
        dynamic_smem_size: usize,
        block_size_limit: c_int,
        flags: c_uint,
    ) -> Result<(i32, i32), DriverError> {
        let (mut grid, mut block) = (0, 0);
        // SAFETY: valid out-pointers; the caller vouches for `f` and `smem_fn`.
        unsafe {
            sys::cuOccupancyMaxPotentialBlockSizeWithFlags(
                &mut grid,
                &mut block,
                f,
                smem_fn,
                dynamic_smem_size,
                block_size_limit,
                flags,
            )
        }
        .result()?;
        Ok((grid, block))
    }

    /// Resident blocks per multiprocessor (default flags).
    ///
    /// # Safety
    /// `f` must belong to a loaded module.
    #[doc(alias = "cuOccupancyMaxActiveBlocksPerMultiprocessor")]
    pub unsafe fn max_active_block_per_multiprocessor(
        f: sys::CUfunction,
        block_size: c_int,
        dynamic_smem_size: usize,
    ) -> Result<i32, DriverError> {
        let mut blocks = 0;
        // SAFETY: valid out-pointer; the caller vouches for `f`.
        unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut blocks, f, block_size, dynamic_smem_size)
        }
        .result()?;
        Ok(blocks)
    }

    /// `(min_grid_size, block_size)` that maximises occupancy (default flags).
    ///
    /// # Safety
    /// `f` must belong to a loaded module; `block_size_to_dynamic_smem_size`, if any, must be
    /// sound to call.
    #[doc(alias = "cuOccupancyMaxPotentialBlockSize")]
    pub unsafe fn max_potential_block_size(
        f: sys::CUfunction,
        block_size_to_dynamic_smem_size: sys::CUoccupancyB2DSize,
        dynamic_smem_size: usize,
        block_size_limit: c_int,
    ) -> Result<(i32, i32), DriverError> {
        let (mut grid, mut block) = (0, 0);
        // SAFETY: valid out-pointers; the caller vouches for `f` and the callback.
        unsafe {
            sys::cuOccupancyMaxPotentialBlockSize(
                &mut grid,
                &mut block,
                f,
                block_size_to_dynamic_smem_size,
                dynamic_smem_size,
                block_size_limit,
            )
        }
        .result()?;
        Ok((grid, block))
    }
}

pub mod event {
    //! Events (`cuEvent*`).
    use super::*;

    /// Creates an event.
    #[doc(alias = "cuEventCreate")]
    pub fn create(flags: sys::CUevent_flags) -> Result<sys::CUevent, DriverError> {
        let mut event = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        unsafe { sys::cuEventCreate(&mut event, flags as u32) }.result()?;
        Ok(event)
    }

    /// Records the work submitted so far on `stream` into `event`.
    ///
    /// # Safety
    /// Both handles must be live and belong to the same context.
    #[doc(alias = "cuEventRecord")]
    pub unsafe fn record(event: sys::CUevent, stream: sys::CUstream) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for both handles.
        unsafe { sys::cuEventRecord(event, stream) }.result()
    }

    /// Milliseconds between two completed timing events.
    ///
    /// # Safety
    /// Both events must be live.
    #[doc(alias = "cuEventElapsedTime_v2")]
    pub unsafe fn elapsed(start: sys::CUevent, end: sys::CUevent) -> Result<f32, DriverError> {
        let mut ms = 0.0f32;
        // SAFETY: valid out-pointer; the caller vouches for both events.
        unsafe { sys::cuEventElapsedTime_v2(&mut ms, start, end) }.result()?;
        Ok(ms)
    }

    /// `Ok` when the recorded work is done, `Err(CUDA_ERROR_NOT_READY)` while it is pending.
    ///
    /// # Safety
    /// `event` must be live.
    #[doc(alias = "cuEventQuery")]
    pub unsafe fn query(event: sys::CUevent) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for `event`.
        unsafe { sys::cuEventQuery(event) }.result()
    }

    /// Blocks until the recorded work is done.
    ///
    /// # Safety
    /// `event` must be live.
    #[doc(alias = "cuEventSynchronize")]
    pub unsafe fn synchronize(event: sys::CUevent) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for `event`.
        unsafe { sys::cuEventSynchronize(event) }.result()
    }

    /// Destroys an event (resources go once pending work completes).
    ///
    /// # Safety
    /// `event` must be live and not used afterwards.
    #[doc(alias = "cuEventDestroy_v2")]
    pub unsafe fn destroy(event: sys::CUevent) -> Result<(), DriverError> {
        // SAFETY: the caller owns `event`.
        unsafe { sys::cuEventDestroy_v2(event) }.result()
    }
}

/// Launches a kernel.
///
/// # Safety
/// `f` must be live; `kernel_params` must hold one pointer per kernel parameter, each pointing at
/// a value of that parameter's type, all alive until this returns; the kernel may read and write
/// any memory its arguments reach.
#[doc(alias = "cuLaunchKernel")]
#[inline]
pub unsafe fn launch_kernel(
    f: sys::CUfunction,
    grid_dim: (c_uint, c_uint, c_uint),
    block_dim: (c_uint, c_uint, c_uint),
    shared_mem_bytes: c_uint,
    stream: sys::CUstream,
    kernel_params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the function and the parameter array.
    unsafe {
        sys::cuLaunchKernel(
            f,
            grid_dim.0,
            grid_dim.1,
            grid_dim.2,
            block_dim.0,
            block_dim.1,
            block_dim.2,
            shared_mem_bytes,
            stream,
            kernel_params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
    .result()
}

/// Launches a kernel as a programmatic dependent of the work before it on `stream`
/// (`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`): its blocks may start before that
/// work is done, as soon as the kernel before it lets them (`griddepcontrol.launch_dependents`) or
/// exits. A driver without `cuLaunchKernelEx` gets a plain launch.
///
/// # Safety
/// As for [`launch_kernel`]; and every thread of the kernel executes `griddepcontrol.wait`, which
/// returns once the work before it is done, before its first access to global memory.
#[doc(alias = "cuLaunchKernelEx")]
#[inline]
pub unsafe fn launch_kernel_dependent(
    f: sys::CUfunction,
    grid_dim: (c_uint, c_uint, c_uint),
    block_dim: (c_uint, c_uint, c_uint),
    shared_mem_bytes: c_uint,
    stream: sys::CUstream,
    kernel_params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    // SAFETY: every field of the value union is a plain integer or array of them (all zeros valid).
    let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.programmaticStreamSerializationAllowed = 1;
    let mut attribute = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        pad: [0; 4],
        value,
    };
    let config = sys::CUlaunchConfig {
        gridDimX: grid_dim.0,
        gridDimY: grid_dim.1,
        gridDimZ: grid_dim.2,
        blockDimX: block_dim.0,
        blockDimY: block_dim.1,
        blockDimZ: block_dim.2,
        sharedMemBytes: shared_mem_bytes,
        hStream: stream,
        attrs: &mut attribute,
        numAttrs: 1,
    };
    // SAFETY: `config` and `attribute` live until the call returns; the caller vouches for the
    // function, the parameter array and the kernel's wait.
    match unsafe { sys::cuLaunchKernelEx(&config, f, kernel_params.as_mut_ptr(), std::ptr::null_mut()) } {
        // The loader's answer for a driver without the entry point (older than CUDA 12.0).
        // SAFETY: the caller's obligations cover a plain launch too.
        sys::CUresult::CUDA_ERROR_NOT_FOUND => unsafe {
            launch_kernel(f, grid_dim, block_dim, shared_mem_bytes, stream, kernel_params)
        },
        code => code.result(),
    }
}

/// Launches a cooperative kernel (all blocks resident at once).
///
/// # Safety
/// As for [`launch_kernel`].
#[doc(alias = "cuLaunchCooperativeKernel")]
#[inline]
pub unsafe fn launch_cooperative_kernel(
    f: sys::CUfunction,
    grid_dim: (c_uint, c_uint, c_uint),
    block_dim: (c_uint, c_uint, c_uint),
    shared_mem_bytes: c_uint,
    stream: sys::CUstream,
    kernel_params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the function and the parameter array.
    unsafe {
        sys::cuLaunchCooperativeKernel(
            f,
            grid_dim.0,
            grid_dim.1,
            grid_dim.2,
            block_dim.0,
            block_dim.1,
            block_dim.2,
            shared_mem_bytes,
            stream,
            kernel_params.as_mut_ptr(),
        )
    }
    .result()
}

pub mod graph {
    //! Graphs (`cuGraph*`).
    use super::*;

    /// Instantiates a graph.
    ///
    /// # Safety
    /// `graph` must be live.
    #[doc(alias = "cuGraphInstantiateWithFlags")]
    pub unsafe fn instantiate(
        graph: sys::CUgraph,
        flags: sys::CUgraphInstantiate_flags,
    ) -> Result<sys::CUgraphExec, DriverError> {
        let mut exec = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the caller vouches for `graph`.
        unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, flags as u64) }.result()?;
        Ok(exec)
    }

    /// Destroys an executable graph.
    ///
    /// # Safety
    /// `exec` must be live and not used afterwards.
    #[doc(alias = "cuGraphExecDestroy")]
    pub unsafe fn exec_destroy(exec: sys::CUgraphExec) -> Result<(), DriverError> {
        // SAFETY: the caller owns `exec`.
        unsafe { sys::cuGraphExecDestroy(exec) }.result()
    }

    /// Destroys a graph.
    ///
    /// # Safety
    /// `graph` must be live and not used afterwards.
    #[doc(alias = "cuGraphDestroy")]
    pub unsafe fn destroy(graph: sys::CUgraph) -> Result<(), DriverError> {
        // SAFETY: the caller owns `graph`.
        unsafe { sys::cuGraphDestroy(graph) }.result()
    }

    /// Launches an executable graph on `stream`.
    ///
    /// # Safety
    /// Both handles must be live, and every buffer the graph touches must still be allocated.
    #[doc(alias = "cuGraphLaunch")]
    pub unsafe fn launch(exec: sys::CUgraphExec, stream: sys::CUstream) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for both handles and the graph's buffers.
        unsafe { sys::cuGraphLaunch(exec, stream) }.result()
    }

    /// Uploads an executable graph's resources ahead of its first launch.
    ///
    /// # Safety
    /// Both handles must be live.
    #[doc(alias = "cuGraphUpload")]
    pub unsafe fn upload(exec: sys::CUgraphExec, stream: sys::CUstream) -> Result<(), DriverError> {
        // SAFETY: the caller vouches for both handles.
        unsafe { sys::cuGraphUpload(exec, stream) }.result()
    }
}
