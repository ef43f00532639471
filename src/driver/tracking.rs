//! The cross-stream bookkeeping of a context and its streams, in one place.
//!
//! A context counts its streams and switches, for good, to multi-stream mode when it gets a
//! second one: from then on tracked slices record their uses with events ([`SliceEvents`]) so
//! that other streams can wait for them. It also counts the captures in progress; while a stream
//! captures, tracked uses are not waited for or recorded but noted in the stream's
//! [`CaptureSlot`], and the graph does the waits and records when it is launched.
//! The state is private: the context, its streams, slices and graphs change it only through the
//! methods here.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use smallvec::SmallVec;

use super::event::CudaEvent;
use super::memory::{self, PinnedMemory};
use super::result::DriverError;
use super::stream::CudaStream;
use super::sys;

/// How a use touches a slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// A tracked slice used by captured work, and how.
pub(crate) type Touched = (Arc<SliceEvents>, Access);

/// What a use of a tracked slice on a stream has to do about other streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SyncMode {
    /// Single-stream context, or tracking switched off: nothing.
    Off,
    /// Wait on and record the slice's events.
    On,
    /// The stream is being captured: events recorded outside the capture must not be touched.
    Capturing,
}

/// A context's stream-tracking state.
#[derive(Debug)]
pub(crate) struct Tracking {
    /// Streams created by `CudaContext::new_stream` / `CudaStream::fork` still alive.
    streams: AtomicUsize,
    /// Set for good once the context has had a second stream: from then on slices track their
    /// uses with events. Sticky, so that work recorded on a since-dropped stream is still waited
    /// for.
    multi_stream: AtomicBool,
    /// Whether slices created now track their uses.
    event_tracking: AtomicBool,
    /// Captures begun through `CudaStream::begin_capture` and not yet ended.
    captures: AtomicUsize,
    /// The thread (a [`thread_token`]) whose per-thread default stream the context's tracked
    /// slices have been used on; 0 while none has. A second thread's per-thread stream is a
    /// stream of its own, and switches the context to multi-stream mode.
    per_thread_user: AtomicU64,
}

/// A number for the calling thread, unique for the life of the process (never 0): unlike a
/// thread-local address it is not reused by a later thread, whose per-thread stream is another.
fn thread_token() -> u64 {
    thread_local! {
        static TOKEN: u64 = super::stream::next_id();
    }
    TOKEN.with(|token| *token)
}

impl Default for Tracking {
    fn default() -> Self {
        Self {
            streams: AtomicUsize::new(0),
            multi_stream: AtomicBool::new(false),
            event_tracking: AtomicBool::new(true),
            captures: AtomicUsize::new(0),
            per_thread_user: AtomicU64::new(0),
        }
    }
}

impl Tracking {
    /// Whether the context has ever had a stream besides its default stream.
    pub(crate) fn is_multi_stream(&self) -> bool {
        self.multi_stream.load(Ordering::Acquire)
    }

    /// Whether slices created now track their uses.
    pub(crate) fn is_event_tracking(&self) -> bool {
        self.event_tracking.load(Ordering::Relaxed)
    }

    /// Turns tracking of the slices created from now on on or off.
    pub(crate) fn set_event_tracking(&self, on: bool) {
        self.event_tracking.store(on, Ordering::Relaxed);
    }

    /// Counts a new stream and, the first time, switches to multi-stream mode after
    /// `synchronize` (the context's work), so that slices used before need no events.
    pub(crate) fn stream_created(
        &self,
        synchronize: impl FnOnce() -> Result<(), DriverError>,
    ) -> Result<(), DriverError> {
        self.streams.fetch_add(1, Ordering::Relaxed);
        if !self.multi_stream.load(Ordering::Acquire) {
            if self.is_event_tracking() {
                synchronize()?;
            }
            self.multi_stream.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Notes a use of a tracked slice on the calling thread's per-thread default stream. That
    /// stream and the legacy default stream are both blocking streams, which the driver orders
    /// against each other, so one thread's per-thread stream needs no events (cudarc counts it as
    /// no stream at all); the first use from a second thread switches to multi-stream mode after
    /// `synchronize`, as a second stream does. The switch happens even if `synchronize` fails
    /// (its error is returned): later uses are then ordered at least.
    pub(crate) fn per_thread_stream_used(
        &self,
        synchronize: impl FnOnce() -> Result<(), DriverError>,
    ) -> Result<(), DriverError> {
        if self.multi_stream.load(Ordering::Acquire) {
            return Ok(());
        }
        let me = thread_token();
        match self.per_thread_user.compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => Ok(()),
            Err(user) if user == me => Ok(()),
            Err(_) => {
                let synchronized = if self.is_event_tracking() { synchronize() } else { Ok(()) };
                self.multi_stream.store(true, Ordering::Release);
                synchronized
            }
        }
    }

    /// Counts a created stream's destruction (multi-stream mode stays).
    pub(crate) fn stream_dropped(&self) {
        self.streams.fetch_sub(1, Ordering::Relaxed);
    }

    /// Counts a capture begun.
    pub(crate) fn capture_begun(&self) {
        self.captures.fetch_add(1, Ordering::AcqRel);
    }

    /// Counts a capture ended (or one whose beginning failed).
    pub(crate) fn capture_ended(&self) {
        self.captures.fetch_sub(1, Ordering::AcqRel);
    }

    /// Whether `stream` is capturing now (asks the driver only while some capture is begun).
    pub(crate) fn is_capturing(&self, stream: &CudaStream) -> bool {
        self.captures.load(Ordering::Acquire) > 0 && stream.is_capturing_now()
    }

    /// What a tracked use on `stream` must do about other streams.
    pub(crate) fn sync_mode(&self, stream: &CudaStream) -> SyncMode {
        if !self.is_multi_stream() {
            return SyncMode::Off;
        }
        if self.is_capturing(stream) {
            return SyncMode::Capturing;
        }
        SyncMode::On
    }

    /// Multi-stream mode without a second stream, for host-only tests of the tracked paths.
    #[cfg(test)]
    pub(crate) fn force_multi_stream(&self) {
        self.multi_stream.store(true, Ordering::Release);
    }
}

/// A slice's events, created on first use in multi-stream mode: one recorded after the last
/// write, and one per stream that has read the slice, recorded after that stream's last read.
/// Reads on several streams are all waited for by the next write (or the free): a single read
/// event would keep only the last reader's.
#[derive(Debug, Default)]
pub(crate) struct SliceEvents {
    /// `(stream id, event)`: each stream's last read. Entries are boxed and never removed or
    /// replaced while the slice's events live, so a `&CudaEvent` into one stays valid (guards
    /// hold such references); there is one per stream that ever read the slice.
    #[allow(clippy::vec_box)] // the boxes give each event a fixed address (see above)
    reads: Mutex<Vec<Box<(u64, CudaEvent)>>>,
    write: OnceLock<CudaEvent>,
    /// The allocation of a slice dropped while a captured graph (or a capture in progress) still
    /// refers to these events: freed, after the graph's pending uses, when the last of them
    /// drops. This is how a graph owns the buffers it touches.
    deferred: Mutex<Option<(sys::CUdeviceptr, Arc<CudaStream>)>>,
}

impl Drop for SliceEvents {
    fn drop(&mut self) {
        let deferred = self.deferred.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((ptr, stream)) = deferred {
            // The events are still alive here (fields drop after this body).
            memory::free_allocation(ptr, &stream, Some(self));
        }
    }
}

impl SliceEvents {
    /// Hands the slice's allocation (on `stream`) to these events, to free when they drop.
    pub(crate) fn defer_free(&self, ptr: sys::CUdeviceptr, stream: Arc<CudaStream>) {
        *self.deferred.lock().unwrap_or_else(|e| e.into_inner()) = Some((ptr, stream));
    }

    /// The event recording `access` on `stream`, created if need be (a creation error is
    /// parked): the write event, or `stream`'s read event.
    pub(crate) fn event(&self, access: Access, stream: &CudaStream) -> Option<&CudaEvent> {
        let ctx = &stream.ctx;
        if access == Access::Write {
            if let Some(event) = self.write.get() {
                return Some(event);
            }
            return match ctx.new_event_tracking(None) {
                Ok(event) => {
                    // Another thread may have won the race; its event is as good as ours.
                    let _ = self.write.set(event);
                    self.write.get()
                }
                Err(e) => {
                    ctx.record_err::<()>(Err(e));
                    None
                }
            };
        }
        let mut reads = self.reads.lock().unwrap_or_else(|e| e.into_inner());
        let event: *const CudaEvent = match reads.iter().find(|slot| slot.0 == stream.id) {
            Some(slot) => &slot.1,
            None => match ctx.new_event_tracking(None) {
                Ok(event) => {
                    reads.push(Box::new((stream.id, event)));
                    &reads[reads.len() - 1].1
                }
                Err(e) => {
                    ctx.record_err::<()>(Err(e));
                    return None;
                }
            },
        };
        drop(reads);
        // SAFETY: the event lives in a Box that stays in `reads`, unmoved and unreplaced, until
        // `self` drops (entries are only ever added), and it is only used through `&`.
        Some(unsafe { &*event })
    }

    /// The read events of streams other than `stream`.
    fn other_reads(&self, stream: &CudaStream) -> SmallVec<[*const CudaEvent; 4]> {
        let reads = self.reads.lock().unwrap_or_else(|e| e.into_inner());
        reads.iter().filter(|slot| slot.0 != stream.id).map(|slot| &slot.1 as *const CudaEvent).collect()
    }

    /// Makes `stream` wait for the recorded uses that `access` conflicts with: a read waits for
    /// the last write; a write waits for it and for the last read on every other stream.
    pub(crate) fn wait_before(&self, access: Access, stream: &CudaStream) {
        if let Some(write) = self.write.get() {
            stream.ctx.record_err(stream.wait_tracking(write));
        }
        if access == Access::Write {
            for read in self.other_reads(stream) {
                // SAFETY: as in `event`: the boxed events stay in place while `self` lives.
                let read = unsafe { &*read };
                stream.ctx.record_err(stream.wait_tracking(read));
            }
        }
    }

    /// Records `access` as the latest of its kind on `stream`.
    pub(crate) fn record_after(&self, access: Access, stream: &CudaStream) {
        if let Some(event) = self.event(access, stream) {
            stream.ctx.record_err(event.record_tracking(stream));
        }
    }
}

/// What the work captured on a stream uses, for the graph it becomes.
#[derive(Debug, Default)]
pub(crate) struct CaptureLog {
    /// Tracked slices and how they were used (one entry per use).
    slices: Vec<Touched>,
    /// Page-locked memory that captured copies read or write (one entry each).
    pinned: Vec<Arc<PinnedMemory>>,
}

impl CaptureLog {
    /// The slices the captured work touched, one entry each (a write if any use wrote it), and
    /// the page-locked memory its copies used.
    pub(crate) fn into_parts(self) -> (Vec<Touched>, Vec<Arc<PinnedMemory>>) {
        (merge(self.slices), self.pinned)
    }
}

/// A stream's capture log: present while the stream captures a graph.
#[derive(Debug, Default)]
pub(crate) struct CaptureSlot(Mutex<Option<CaptureLog>>);

impl CaptureSlot {
    /// Starts an empty log (a capture has begun).
    pub(crate) fn begin(&self) {
        if let Ok(mut log) = self.0.lock() {
            *log = Some(CaptureLog::default());
        }
    }

    /// The log of the capture that ends, if one was begun.
    pub(crate) fn take(&self) -> Option<CaptureLog> {
        self.0.lock().ok().and_then(|mut log| log.take())
    }

    /// Notes a tracked slice used by captured work.
    pub(crate) fn slice(&self, events: &Arc<SliceEvents>, access: Access) {
        if let Ok(mut log) = self.0.lock() {
            if let Some(log) = log.as_mut() {
                log.slices.push((events.clone(), access));
            }
        }
    }

    /// Notes page-locked memory used by a captured copy.
    pub(crate) fn pinned(&self, memory: &Arc<PinnedMemory>) {
        if let Ok(mut log) = self.0.lock() {
            if let Some(log) = log.as_mut() {
                if !log.pinned.iter().any(|m| Arc::ptr_eq(m, memory)) {
                    log.pinned.push(memory.clone());
                }
            }
        }
    }
}

/// One entry per slice, a write if any captured use wrote it.
fn merge(log: Vec<Touched>) -> Vec<Touched> {
    let mut seen: HashMap<*const SliceEvents, usize> = HashMap::new();
    let mut out: Vec<Touched> = Vec::new();
    for (events, access) in log {
        match seen.get(&Arc::as_ptr(&events)) {
            Some(&i) => {
                if access == Access::Write {
                    out[i].1 = Access::Write;
                }
            }
            None => {
                seen.insert(Arc::as_ptr(&events), out.len());
                out.push((events, access));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_threads_per_thread_stream_stays_single_stream_and_a_second_thread_switches() {
        let tracking = Tracking::default();
        let synchronized = AtomicUsize::new(0);
        let sync = || {
            synchronized.fetch_add(1, Ordering::Relaxed);
            Ok(())
        };
        for _ in 0..3 {
            tracking.per_thread_stream_used(sync).unwrap();
        }
        assert!(
            !tracking.is_multi_stream(),
            "one thread's per-thread stream is ordered with the default stream"
        );
        assert_eq!(synchronized.load(Ordering::Relaxed), 0);
        std::thread::scope(|s| {
            s.spawn(|| tracking.per_thread_stream_used(sync).unwrap());
        });
        assert!(tracking.is_multi_stream(), "a second thread's per-thread stream is another stream");
        assert_eq!(synchronized.load(Ordering::Relaxed), 1, "the switch waits for the work before it");
        tracking.per_thread_stream_used(sync).unwrap();
        assert_eq!(synchronized.load(Ordering::Relaxed), 1, "the switch happens once");
    }

    #[test]
    fn a_failed_synchronize_is_returned_and_the_switch_still_happens() {
        let tracking = Tracking::default();
        tracking.per_thread_stream_used(|| Ok(())).unwrap();
        let failing = || Err(DriverError(sys::CUresult::CUDA_ERROR_LAUNCH_FAILED));
        std::thread::scope(|s| {
            let e = s.spawn(|| tracking.per_thread_stream_used(failing)).join().unwrap();
            assert_eq!(e, Err(DriverError(sys::CUresult::CUDA_ERROR_LAUNCH_FAILED)));
        });
        assert!(tracking.is_multi_stream(), "later uses are ordered even after a failed wait");
    }

    #[test]
    fn thread_tokens_differ_between_threads_and_are_never_zero() {
        let here = thread_token();
        assert_ne!(here, 0);
        assert_eq!(here, thread_token());
        let there = std::thread::spawn(thread_token).join().unwrap();
        assert_ne!(here, there);
    }
}
