//! [`CudaContext`]: one device's context, the root every other object keeps alive.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use super::result::{self, DriverError};
use super::staging::StagingPool;
use super::stream::CudaStream;
use super::sys;
use super::tracking::{SyncMode, Tracking};

/// A CUDA context on one device (the device's primary context unless made otherwise).
///
/// Shared as `Arc<CudaContext>`; every stream, slice, module and event holds a clone, so the
/// context outlives them all. Safe to use from many threads: every fallible call binds the
/// context to the calling thread first ([`CudaContext::bind_to_thread`]).
///
/// Errors that happen where none can be returned (in `Drop`) are parked on the context and
/// returned by the next fallible call ([`CudaContext::check_err`]).
#[derive(Debug)]
pub struct CudaContext {
    pub(crate) cu_device: sys::CUdevice,
    pub(crate) cu_ctx: sys::CUcontext,
    pub(crate) ordinal: usize,
    pub(crate) has_async_alloc: bool,
    pub(crate) is_primary: bool,
    /// The cross-stream bookkeeping: streams, multi-stream mode, event tracking, captures.
    pub(crate) tracking: Tracking,
    pub(crate) error_state: AtomicU32,
    /// Page-locked buffers for large pageable copies, freed when the context drops.
    pub(crate) staging: StagingPool,
    /// Allocations retried after an out-of-memory error (see [`CudaStream::alloc`]).
    pub(crate) alloc_retries: AtomicU64,
    /// Allocations that failed for want of memory after their retry.
    pub(crate) out_of_memory: AtomicU64,
    /// The size in bytes of the last allocation that failed for want of memory.
    pub(crate) last_oom_bytes: AtomicUsize,
    /// For a primary context: its device's reset count when this object was made (see
    /// [`CudaContext::reset_primary`]); a later reset makes this object and its children inert.
    pub(crate) generation: u64,
}

/// Devices whose primary context can be reset (`cu_device` below this).
const RESETTABLE_DEVICES: usize = 64;

/// How often each device's primary context has been reset in this process.
static PRIMARY_RESETS: [AtomicU64; RESETTABLE_DEVICES] = [const { AtomicU64::new(0) }; RESETTABLE_DEVICES];

fn primary_resets(cu_device: sys::CUdevice) -> Option<&'static AtomicU64> {
    usize::try_from(cu_device).ok().and_then(|d| PRIMARY_RESETS.get(d))
}

/// Device-memory statistics of a context ([`CudaContext::memory_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes allocated from the device's stream-ordered pool and not yet freed.
    pub in_use: u64,
    /// Bytes the pool holds from the device (in use, or freed and kept for reuse).
    pub reserved: u64,
    /// The most bytes in use at once since the pool was created.
    pub peak: u64,
    /// Allocations that failed for want of memory and were retried (after waiting for the
    /// context's work and trimming the pool).
    pub allocation_retries: u64,
    /// Allocations that still failed after their retry.
    pub out_of_memory: u64,
    /// The size in bytes of the last allocation that failed for want of memory (0: none did).
    pub last_failed_request: usize,
}

// SAFETY: the raw handles are owned by this object and the driver API is thread safe; the
// mutable state is atomics.
unsafe impl Send for CudaContext {}
// SAFETY: as above; `&CudaContext` only exposes thread-safe driver calls and atomics.
unsafe impl Sync for CudaContext {}

impl Drop for CudaContext {
    fn drop(&mut self) {
        let bound = self.bind();
        let ctx = std::mem::replace(&mut self.cu_ctx, std::ptr::null_mut());
        if ctx.is_null() {
            return;
        }
        if bound.is_ok() {
            // SAFETY: `ctx` is alive and current here; no copy is in flight (copies hold the
            // context).
            self.record_err(unsafe { self.staging.free_all(ctx) });
        }
        // Without this context current the staging buffers are leaked rather than freed
        // elsewhere; releasing or destroying the context itself needs no current context.
        self.record_err(bound);
        if self.is_primary {
            // SAFETY: balances the retain in `new`; no child object is alive (they hold Arcs).
            self.record_err(unsafe { result::primary_ctx::release(self.cu_device) });
        } else {
            // SAFETY: we created this context and nothing refers to it any more.
            self.record_err(unsafe { result::ctx::destroy(ctx) });
        }
    }
}

impl PartialEq for CudaContext {
    fn eq(&self, other: &Self) -> bool {
        // A primary context reset in between makes the same handle a different context.
        self.cu_device == other.cu_device
            && self.cu_ctx == other.cu_ctx
            && self.ordinal == other.ordinal
            && self.generation == other.generation
    }
}
impl Eq for CudaContext {}

impl CudaContext {
    fn wrap(ordinal: usize, cu_device: sys::CUdevice, cu_ctx: sys::CUcontext, is_primary: bool) -> Arc<Self> {
        Arc::new(CudaContext {
            cu_device,
            cu_ctx,
            ordinal,
            has_async_alloc: false,
            is_primary,
            tracking: Tracking::default(),
            error_state: AtomicU32::new(0),
            staging: StagingPool::default(),
            alloc_retries: AtomicU64::new(0),
            out_of_memory: AtomicU64::new(0),
            last_oom_bytes: AtomicUsize::new(0),
            generation: primary_resets(cu_device).map_or(0, |r| r.load(Ordering::Acquire)),
        })
    }

    fn finish(mut ctx: Arc<Self>) -> Result<Arc<Self>, DriverError> {
        // SAFETY: `cu_device` came from cuDeviceGet.
        let pools = unsafe {
            result::device::get_attribute(
                ctx.cu_device,
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
            )
        }?;
        if let Some(inner) = Arc::get_mut(&mut ctx) {
            inner.has_async_alloc = pools > 0;
        }
        ctx.bind_to_thread()?;
        Ok(ctx)
    }

    /// Retains the primary context of device `ordinal`.
    ///
    /// Returns an error (never panics) when no driver can be loaded or there is no such device.
    #[doc(alias = "cuDevicePrimaryCtxRetain")]
    pub fn new(ordinal: usize) -> Result<Arc<Self>, DriverError> {
        result::init()?;
        let index =
            i32::try_from(ordinal).map_err(|_| DriverError(sys::CUresult::CUDA_ERROR_INVALID_DEVICE))?;
        let cu_device = result::device::get(index)?;
        // SAFETY: `cu_device` came from cuDeviceGet; released in Drop.
        let cu_ctx = unsafe { result::primary_ctx::retain(cu_device) }?;
        Self::finish(Self::wrap(ordinal, cu_device, cu_ctx, true))
    }

    /// Creates a new non-primary context on device `ordinal` with `flags` (`CUctx_flags` bits).
    #[doc(alias = "cuCtxCreate_v4")]
    pub fn new_non_primary(ordinal: usize, flags: u32) -> Result<Arc<Self>, DriverError> {
        result::init()?;
        let index =
            i32::try_from(ordinal).map_err(|_| DriverError(sys::CUresult::CUDA_ERROR_INVALID_DEVICE))?;
        let cu_device = result::device::get(index)?;
        // SAFETY: `cu_device` came from cuDeviceGet; null parameters are allowed; destroyed in Drop.
        let cu_ctx = unsafe { result::ctx::create_v4(std::ptr::null_mut(), flags, cu_device) }?;
        Self::finish(Self::wrap(ordinal, cu_device, cu_ctx, false))
    }

    /// Wraps an existing context, which this object then destroys on drop.
    ///
    /// # Safety
    /// `cu_ctx` must be a live non-primary context of `cu_device`, owned by nobody else.
    pub unsafe fn from_raw_context(
        ordinal: usize,
        cu_device: sys::CUdevice,
        cu_ctx: sys::CUcontext,
    ) -> Result<Arc<Self>, DriverError> {
        Self::finish(Self::wrap(ordinal, cu_device, cu_ctx, false))
    }

    /// Whether this is the device's primary context.
    pub fn is_primary(&self) -> bool {
        self.is_primary
    }

    /// Whether the device supports stream-ordered allocation (`cuMemAllocAsync`), which slices use.
    pub fn has_async_alloc(&self) -> bool {
        self.has_async_alloc
    }

    /// The number of CUDA devices.
    #[doc(alias = "cuDeviceGetCount")]
    pub fn device_count() -> Result<i32, DriverError> {
        result::init()?;
        result::device::get_count()
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The device's name.
    #[doc(alias = "cuDeviceGetName")]
    pub fn name(&self) -> Result<String, DriverError> {
        self.check_err()?;
        result::device::get_name(self.cu_device)
    }

    /// The device's UUID.
    #[doc(alias = "cuDeviceGetUuid")]
    pub fn uuid(&self) -> Result<sys::CUuuid, DriverError> {
        self.check_err()?;
        result::device::get_uuid(self.cu_device)
    }

    /// `(major, minor)` compute capability.
    pub fn compute_capability(&self) -> Result<(i32, i32), DriverError> {
        self.check_err()?;
        let major = self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        Ok((major, minor))
    }

    /// Total device memory in bytes.
    #[doc(alias = "cuDeviceTotalMem")]
    pub fn total_mem(&self) -> Result<usize, DriverError> {
        self.check_err()?;
        // SAFETY: `cu_device` came from cuDeviceGet.
        unsafe { result::device::total_mem(self.cu_device) }
    }

    /// `(free, total)` device memory in bytes.
    #[doc(alias = "cuMemGetInfo")]
    pub fn mem_get_info(&self) -> Result<(usize, usize), DriverError> {
        self.bind_to_thread()?;
        result::mem_get_info()
    }

    /// Whether the device's primary context was reset after this object was made.
    pub fn is_stale(&self) -> bool {
        self.is_primary
            && primary_resets(self.cu_device).is_some_and(|r| r.load(Ordering::Acquire) != self.generation)
    }

    /// Resets the device's primary context (`cuDevicePrimaryCtxReset`): every allocation,
    /// module, stream and event in it is destroyed, which is the one way out of a sticky kernel
    /// fault. Every `CudaContext` object of this primary context made before the reset (this one
    /// included) becomes inert: its calls, and its children's, fail with
    /// `CUDA_ERROR_CONTEXT_IS_DESTROYED` and their drops free nothing. Make a new context with
    /// [`CudaContext::new`] afterwards.
    ///
    /// Not in cudarc: an addition for recovering from faults.
    ///
    /// # Safety
    /// No other thread may be inside a call on a handle of this device's primary context while
    /// the reset runs (a launch racing the reset could use memory the reset hands out again), and
    /// no buffer made before the reset may be passed to a stream made after it: the built-in
    /// launchers and the runtime refuse such buffers (the contexts no longer compare equal), but
    /// the driver API's copies and raw launches do not check which context a buffer is of.
    #[doc(alias = "cuDevicePrimaryCtxReset")]
    pub unsafe fn reset_primary(&self) -> Result<(), DriverError> {
        let resets = match primary_resets(self.cu_device) {
            Some(r) if self.is_primary => r,
            _ => return Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_SUPPORTED)),
        };
        // Mark every existing object stale first, so nothing frees into the fresh state.
        resets.fetch_add(1, Ordering::AcqRel);
        // SAFETY: `cu_device` came from cuDeviceGet; the old handles are inert (stale above) and
        // the caller guarantees no call is in flight.
        unsafe { result::primary_ctx::reset(self.cu_device) }
    }

    /// Allocation statistics: the device's stream-ordered pool (in use, reserved, peak; zeros
    /// where the device has no pools) and this context's retry and out-of-memory counts.
    ///
    /// Not in cudarc: an addition for running out of memory with a clear account.
    #[doc(alias = "cuMemPoolGetAttribute")]
    pub fn memory_stats(&self) -> Result<MemoryStats, DriverError> {
        self.bind_to_thread()?;
        let mut stats = MemoryStats {
            allocation_retries: self.alloc_retries.load(Ordering::Relaxed),
            out_of_memory: self.out_of_memory.load(Ordering::Relaxed),
            last_failed_request: self.last_oom_bytes.load(Ordering::Relaxed),
            ..MemoryStats::default()
        };
        if self.has_async_alloc {
            use sys::CUmemPool_attribute as A;
            // SAFETY: `cu_device` came from cuDeviceGet; the default pool lives as long as the
            // device, and these attributes are 64-bit byte counts.
            unsafe {
                let pool = result::mem_pool::default_pool(self.cu_device)?;
                stats.in_use = result::mem_pool::get_u64(pool, A::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?;
                stats.reserved = result::mem_pool::get_u64(pool, A::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?;
                stats.peak = result::mem_pool::get_u64(pool, A::CU_MEMPOOL_ATTR_USED_MEM_HIGH)?;
            }
        }
        Ok(stats)
    }

    /// Makes room before an allocation's one retry: waits for the context's work (so frees
    /// enqueued on streams have happened) and trims the device's pool to what is in use.
    /// Counts the retry. Not called while a stream captures (waiting would break the capture).
    pub(crate) fn reclaim_for_retry(&self) -> Result<(), DriverError> {
        self.alloc_retries.fetch_add(1, Ordering::Relaxed);
        result::ctx::synchronize()?;
        if self.has_async_alloc {
            // SAFETY: `cu_device` came from cuDeviceGet; its default pool lives as long as it.
            unsafe { result::mem_pool::trim_to(result::mem_pool::default_pool(self.cu_device)?, 0) }?;
        }
        Ok(())
    }

    /// Counts an allocation of `bytes` that failed for want of memory after its retry.
    pub(crate) fn note_out_of_memory(&self, bytes: usize) {
        self.out_of_memory.fetch_add(1, Ordering::Relaxed);
        self.last_oom_bytes.store(bytes, Ordering::Relaxed);
    }

    /// The raw device handle (owned by this context).
    pub fn cu_device(&self) -> sys::CUdevice {
        self.cu_device
    }

    /// The raw context handle (owned by this context: do not release or destroy it).
    pub fn cu_ctx(&self) -> sys::CUcontext {
        self.cu_ctx
    }

    /// Makes this the calling thread's current context (first returning any parked error, as
    /// cudarc does: a parked error is returned and the context is then *not* bound).
    #[doc(alias = "cuCtxSetCurrent")]
    pub fn bind_to_thread(&self) -> Result<(), DriverError> {
        self.check_err()?;
        self.bind()
    }

    /// Makes this the calling thread's current context, whatever error is parked (the parked
    /// error stays parked). Used by `Drop` impls and the tracking that must run even after an
    /// error: they free or order work in this context, never in whatever context the thread has.
    pub(crate) fn bind(&self) -> Result<(), DriverError> {
        if self.is_stale() {
            // The primary context was reset after this object was made: its handles are gone.
            return Err(DriverError(sys::CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED));
        }
        if result::ctx::get_current()? != Some(self.cu_ctx) {
            // SAFETY: `cu_ctx` is alive for as long as `self`.
            unsafe { result::ctx::set_current(self.cu_ctx) }?;
        }
        Ok(())
    }

    /// One device attribute.
    #[doc(alias = "cuDeviceGetAttribute")]
    pub fn attribute(&self, attrib: sys::CUdevice_attribute) -> Result<i32, DriverError> {
        self.check_err()?;
        // SAFETY: `cu_device` came from cuDeviceGet.
        unsafe { result::device::get_attribute(self.cu_device, attrib) }
    }

    /// Waits for all work in this context.
    #[doc(alias = "cuCtxSynchronize")]
    pub fn synchronize(&self) -> Result<(), DriverError> {
        self.bind_to_thread()?;
        result::ctx::synchronize()
    }

    /// Makes synchronising calls block the thread instead of spinning.
    pub fn set_blocking_synchronize(&self) -> Result<(), DriverError> {
        self.set_flags(sys::CUctx_flags::CU_CTX_SCHED_BLOCKING_SYNC)
    }

    /// Sets the context's flags.
    #[doc(alias = "cuCtxSetFlags")]
    pub fn set_flags(&self, flags: sys::CUctx_flags) -> Result<(), DriverError> {
        self.bind_to_thread()?;
        result::ctx::set_flags(flags)
    }

    /// Reads a context limit.
    #[doc(alias = "cuCtxGetLimit")]
    pub fn get_limit(&self, limit: sys::CUlimit) -> Result<usize, DriverError> {
        self.bind_to_thread()?;
        result::ctx::get_limit(limit)
    }

    /// Sets a context limit.
    #[doc(alias = "cuCtxSetLimit")]
    pub fn set_limit(&self, limit: sys::CUlimit, value: usize) -> Result<(), DriverError> {
        self.bind_to_thread()?;
        result::ctx::set_limit(limit, value)
    }

    /// Reads the L1/shared memory preference.
    #[doc(alias = "cuCtxGetCacheConfig")]
    pub fn get_cache_config(&self) -> Result<sys::CUfunc_cache, DriverError> {
        self.bind_to_thread()?;
        result::ctx::get_cache_config()
    }

    /// Sets the L1/shared memory preference.
    #[doc(alias = "cuCtxSetCacheConfig")]
    pub fn set_cache_config(&self, config: sys::CUfunc_cache) -> Result<(), DriverError> {
        self.bind_to_thread()?;
        result::ctx::set_cache_config(config)
    }

    /// Whether this context has ever had a stream besides its default stream. From then on
    /// slices record their reads and writes with events so other streams can wait for them.
    pub fn is_in_multi_stream_mode(&self) -> bool {
        self.tracking.is_multi_stream()
    }

    /// Whether slices created now will track their uses (the default).
    pub fn is_event_tracking(&self) -> bool {
        self.tracking.is_event_tracking()
    }

    /// Both [`is_in_multi_stream_mode`](Self::is_in_multi_stream_mode) and
    /// [`is_event_tracking`](Self::is_event_tracking).
    pub fn is_managing_stream_synchronization(&self) -> bool {
        self.is_in_multi_stream_mode() && self.is_event_tracking()
    }

    /// Slices created after this call track their uses again.
    ///
    /// # Safety
    /// Slices created while tracking was off stay untracked: their cross-stream ordering
    /// remains the caller's job.
    pub unsafe fn enable_event_tracking(&self) {
        self.tracking.set_event_tracking(true);
    }

    /// Slices created after this call do not track their uses.
    ///
    /// Not needed for graph capture: captured work skips the tracking events by itself.
    ///
    /// # Safety
    /// The caller must order every cross-stream use of such slices (including their allocation
    /// and their free) itself.
    pub unsafe fn disable_event_tracking(&self) {
        self.tracking.set_event_tracking(false);
    }

    /// Returns, and clears, the error parked by a call that could not return one (a `Drop`).
    pub fn check_err(&self) -> Result<(), DriverError> {
        // A plain load first: every launch asks, and an error is rare.
        if self.error_state.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        match self.error_state.swap(0, Ordering::Relaxed) {
            0 => Ok(()),
            code => {
                Err(DriverError(sys::CUresult::from_raw(code).unwrap_or(sys::CUresult::CUDA_ERROR_UNKNOWN)))
            }
        }
    }

    /// Runs `release` (a `Drop` freeing something of this context) with this context bound
    /// whatever error is parked. When even binding fails, parks that error and skips `release`:
    /// the resource leaks rather than be freed under another context.
    pub(crate) fn release(&self, release: impl FnOnce(&Self)) {
        match self.bind() {
            Ok(()) => release(self),
            Err(e) => self.record_err::<()>(Err(e)),
        }
    }

    /// Parks `result`'s error, if any, for the next [`check_err`](Self::check_err).
    pub fn record_err<T>(&self, result: Result<T, DriverError>) {
        if let Err(err) = result {
            self.error_state.store(err.0 as u32, Ordering::Relaxed);
        }
    }

    /// Counts a new stream and, the first time, switches to multi-stream mode. The switch waits
    /// for the context's work, so slices used before it need no events.
    pub(crate) fn enter_multi_stream(&self) -> Result<(), DriverError> {
        self.tracking.stream_created(|| self.synchronize())
    }

    /// What a tracked use on `stream` must do about other streams. A use on the per-thread
    /// default stream from a second thread switches to multi-stream mode first (an error doing so
    /// is parked, see [`CudaContext::check_err`]).
    pub(crate) fn sync_mode(&self, stream: &CudaStream) -> SyncMode {
        if stream.is_per_thread() {
            // The wait binds whatever error is parked: it runs on drop paths too.
            let synchronize = || self.bind().and_then(|()| result::ctx::synchronize());
            self.record_err(self.tracking.per_thread_stream_used(synchronize));
        }
        self.tracking.sync_mode(stream)
    }
}
