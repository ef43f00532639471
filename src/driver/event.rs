//! [`CudaEvent`]: a point in a stream's work that other streams or the host can wait for.

use std::sync::Arc;

use super::context::CudaContext;
use super::result::{self, DriverError};
use super::stream::CudaStream;
use super::sys;

/// A CUDA event. Create with [`CudaContext::new_event`] or [`CudaStream::record_event`].
#[derive(Debug)]
pub struct CudaEvent {
    pub(crate) cu_event: sys::CUevent,
    pub(crate) ctx: Arc<CudaContext>,
}

// SAFETY: the handle is owned by this object; event calls are thread safe in the driver.
unsafe impl Send for CudaEvent {}
// SAFETY: as above.
unsafe impl Sync for CudaEvent {}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        self.ctx.release(|ctx| {
            // SAFETY: we own the event and its context is current; destroying one with pending
            // work is allowed.
            ctx.record_err(unsafe { result::event::destroy(self.cu_event) });
        });
    }
}

impl CudaContext {
    /// Creates an event; `None` means `CU_EVENT_DISABLE_TIMING` (the cheapest kind).
    #[doc(alias = "cuEventCreate")]
    pub fn new_event(self: &Arc<Self>, flags: Option<sys::CUevent_flags>) -> Result<CudaEvent, DriverError> {
        self.check_err()?;
        self.new_event_tracking(flags)
    }

    /// [`new_event`](Self::new_event) for the crate's own bookkeeping: binds this context
    /// whatever error is parked.
    pub(crate) fn new_event_tracking(
        self: &Arc<Self>,
        flags: Option<sys::CUevent_flags>,
    ) -> Result<CudaEvent, DriverError> {
        let flags = flags.unwrap_or(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
        self.bind()?;
        let cu_event = result::event::create(flags)?;
        Ok(CudaEvent { cu_event, ctx: self.clone() })
    }
}

impl CudaEvent {
    /// The raw handle (owned by this object: do not destroy it).
    pub fn cu_event(&self) -> sys::CUevent {
        self.cu_event
    }

    /// The context the event belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Records the work submitted to `stream` so far. Earlier [`CudaStream::wait`]s are unaffected.
    #[doc(alias = "cuEventRecord")]
    pub fn record(&self, stream: &CudaStream) -> Result<(), DriverError> {
        if self.ctx != stream.ctx {
            return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT));
        }
        self.ctx.bind_to_thread()?;
        // SAFETY: both handles are alive and belong to the same context.
        unsafe { result::event::record(self.cu_event, stream.cu_stream) }
    }

    /// [`record`](Self::record) for the crate's own bookkeeping: binds the context whatever
    /// error is parked, so ordering is kept after an error too.
    pub(crate) fn record_tracking(&self, stream: &CudaStream) -> Result<(), DriverError> {
        if self.ctx != stream.ctx {
            return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT));
        }
        self.ctx.bind()?;
        // SAFETY: both handles are alive and belong to the same context, which is current.
        unsafe { result::event::record(self.cu_event, stream.cu_stream) }
    }

    /// [`synchronize`](Self::synchronize) for `Drop` paths: binds the context whatever error is
    /// parked.
    pub(crate) fn synchronize_tracking(&self) -> Result<(), DriverError> {
        self.ctx.bind()?;
        // SAFETY: the event is alive.
        unsafe { result::event::synchronize(self.cu_event) }
    }

    /// Waits for the recorded work (blocks the thread only with `CU_EVENT_BLOCKING_SYNC`).
    #[doc(alias = "cuEventSynchronize")]
    pub fn synchronize(&self) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: the event is alive.
        unsafe { result::event::synchronize(self.cu_event) }
    }

    /// Milliseconds from `self` to `end`, waiting for both. Both need timing enabled.
    #[doc(alias = "cuEventElapsedTime")]
    pub fn elapsed_ms(&self, end: &Self) -> Result<f32, DriverError> {
        if self.ctx != end.ctx {
            return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT));
        }
        self.synchronize()?;
        end.synchronize()?;
        // SAFETY: both events are alive.
        unsafe { result::event::elapsed(self.cu_event, end.cu_event) }
    }

    /// Whether the recorded work is done; `false` on any error too (see [`try_is_complete`](Self::try_is_complete)).
    #[doc(alias = "cuEventQuery")]
    pub fn is_complete(&self) -> bool {
        // SAFETY: the event is alive.
        unsafe { result::event::query(self.cu_event) }.is_ok()
    }

    /// `Ok(false)` only while work is pending (`CUDA_ERROR_NOT_READY`); other errors are returned.
    #[doc(alias = "cuEventQuery")]
    pub fn try_is_complete(&self) -> Result<bool, DriverError> {
        // SAFETY: the event is alive.
        match unsafe { result::event::query(self.cu_event) } {
            Ok(()) => Ok(true),
            Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_READY)) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
