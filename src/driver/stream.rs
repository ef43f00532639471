//! [`CudaStream`]: an ordered queue of device work.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::context::CudaContext;
use super::event::CudaEvent;

use super::result::{self, stream::StreamKind, DriverError};
use super::sys;
use super::tracking::CaptureSlot;

/// The per-thread default stream handle (`CU_STREAM_PER_THREAD`).
const PER_THREAD: usize = 0x2;

/// A stream of work on one context. Work on one stream runs in order, asynchronously to the host.
///
/// Create with [`CudaContext::default_stream`], [`CudaContext::new_stream`] or [`CudaStream::fork`].
#[derive(Debug)]
pub struct CudaStream {
    pub(crate) cu_stream: sys::CUstream,
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) owned: bool,
    /// While this stream captures a graph: the tracked slices the captured work touched, so the
    /// graph can do their cross-stream waits and records when it is launched.
    pub(crate) capture: CaptureSlot,
    /// Unique for the life of the process (unlike the driver's handle, which may be reused
    /// once a stream is destroyed): keys the per-stream read events of tracked slices.
    pub(crate) id: u64,
}

/// A new [`CudaStream::id`].
pub(crate) fn next_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

// SAFETY: the handle is owned by (or borrowed for the life of) this object; stream calls are
// thread safe in the driver; the capture log is behind a mutex.
unsafe impl Send for CudaStream {}
// SAFETY: as above.
unsafe impl Sync for CudaStream {}

impl PartialEq for CudaStream {
    fn eq(&self, other: &Self) -> bool {
        self.cu_stream == other.cu_stream && self.ctx == other.ctx
    }
}
impl Eq for CudaStream {}

impl Drop for CudaStream {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        self.ctx.release(|ctx| {
            let cu_stream = std::mem::replace(&mut self.cu_stream, std::ptr::null_mut());
            if !cu_stream.is_null() {
                ctx.tracking.stream_dropped();
                // SAFETY: we created the stream; pending work still completes after destruction.
                ctx.record_err(unsafe { result::stream::destroy(cu_stream) });
            }
        });
    }
}

impl CudaStream {
    fn wrap(ctx: &Arc<CudaContext>, cu_stream: sys::CUstream, owned: bool) -> Arc<Self> {
        Arc::new(CudaStream {
            cu_stream,
            ctx: ctx.clone(),
            owned,
            capture: CaptureSlot::default(),
            id: next_id(),
        })
    }

    /// Whether this is the per-thread default stream (whose handle means the calling thread's).
    pub(crate) fn is_per_thread(&self) -> bool {
        self.cu_stream as usize == PER_THREAD
    }

    /// Whether the driver says this stream is capturing now (one driver call).
    pub(crate) fn is_capturing_now(&self) -> bool {
        // SAFETY: the stream is alive.
        match unsafe { result::stream::is_capturing(self.cu_stream) } {
            Ok(status) => status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE,
            Err(_) => false,
        }
    }
}

impl CudaContext {
    /// The legacy default stream (the null handle). Using only this stream costs no events.
    pub fn default_stream(self: &Arc<Self>) -> Arc<CudaStream> {
        CudaStream::wrap(self, std::ptr::null_mut(), false)
    }

    /// The per-thread default stream: each thread that uses the returned stream submits to its
    /// own. Used from one thread it is ordered with the default stream (both are blocking
    /// streams) and costs no events; the first tracked use from a second thread switches the
    /// context to multi-stream mode (an error doing so is parked, see [`CudaContext::check_err`]).
    pub fn per_thread_stream(self: &Arc<Self>) -> Arc<CudaStream> {
        CudaStream::wrap(self, PER_THREAD as sys::CUstream, false)
    }

    /// Wraps a stream owned by someone else; dropping the wrapper leaves the stream alone.
    ///
    /// # Safety
    /// `cu_stream` must be a live stream of this context that outlives the wrapper and
    /// everything holding it. Ordering against work its owner submits is the caller's job.
    pub unsafe fn wrap_borrowed_stream(self: &Arc<Self>, cu_stream: sys::CUstream) -> Arc<CudaStream> {
        self.record_err(self.bind_to_thread().and_then(|()| self.enter_multi_stream()));
        CudaStream::wrap(self, cu_stream, false)
    }

    /// Creates a non-blocking stream. The first one switches the context to multi-stream mode
    /// (after waiting for its pending work), in which slices track their uses with events.
    #[doc(alias = "cuStreamCreate")]
    pub fn new_stream(self: &Arc<Self>) -> Result<Arc<CudaStream>, DriverError> {
        self.bind_to_thread()?;
        let cu_stream = result::stream::create(StreamKind::NonBlocking)?;
        let stream = CudaStream::wrap(self, cu_stream, true);
        self.enter_multi_stream()?;
        Ok(stream)
    }

    /// Creates a non-blocking stream with a priority (lower numbers run first).
    #[doc(alias = "cuStreamCreateWithPriority")]
    pub fn new_stream_with_priority(self: &Arc<Self>, priority: i32) -> Result<Arc<CudaStream>, DriverError> {
        self.bind_to_thread()?;
        let cu_stream = result::stream::create_with_priority(StreamKind::NonBlocking, priority)?;
        let stream = CudaStream::wrap(self, cu_stream, true);
        self.enter_multi_stream()?;
        Ok(stream)
    }
}

impl CudaStream {
    /// Creates a new stream that first waits for the work submitted to `self` so far.
    pub fn fork(&self) -> Result<Arc<Self>, DriverError> {
        let stream = self.ctx.new_stream()?;
        stream.join(self)?;
        Ok(stream)
    }

    /// The raw handle (do not destroy it).
    pub fn cu_stream(&self) -> sys::CUstream {
        self.cu_stream
    }

    /// The context the stream belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Waits for all work submitted to this stream.
    #[doc(alias = "cuStreamSynchronize")]
    pub fn synchronize(&self) -> Result<(), DriverError> {
        self.ctx.check_err()?;
        self.synchronize_tracking()
    }

    /// [`synchronize`](Self::synchronize) for `Drop` paths: binds the context whatever error is
    /// parked.
    pub(crate) fn synchronize_tracking(&self) -> Result<(), DriverError> {
        self.ctx.bind()?;
        // SAFETY: the stream is alive.
        unsafe { result::stream::synchronize(self.cu_stream) }
    }

    /// Creates an event and records this stream's work so far into it.
    pub fn record_event(&self, flags: Option<sys::CUevent_flags>) -> Result<CudaEvent, DriverError> {
        let event = self.ctx.new_event(flags)?;
        event.record(self)?;
        Ok(event)
    }

    /// Makes later work on this stream wait for the work recorded in `event`.
    #[doc(alias = "cuStreamWaitEvent")]
    pub fn wait(&self, event: &CudaEvent) -> Result<(), DriverError> {
        self.ctx.check_err()?;
        self.wait_tracking(event)
    }

    /// [`wait`](Self::wait) for the crate's own bookkeeping: binds the context whatever error
    /// is parked, so that ordering is kept after an error too.
    pub(crate) fn wait_tracking(&self, event: &CudaEvent) -> Result<(), DriverError> {
        self.ctx.bind()?;
        // SAFETY: both handles are alive.
        unsafe {
            result::stream::wait_event(
                self.cu_stream,
                event.cu_event,
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        }
    }

    /// Makes later work on this stream wait for the work submitted to `other` so far.
    pub fn join(&self, other: &CudaStream) -> Result<(), DriverError> {
        self.wait(&other.record_event(None)?)
    }
}
