//! Large copies between pageable host memory and the device, staged through page-locked buffers.
//!
//! The driver copies pageable memory through its own small staging area, one thread, one chunk
//! at a time (about 7-12 GB/s on an H100 host). Here a copy of at least [`STAGE_MIN_BYTES`]
//! borrows [`BUFFERS_PER_COPY`] page-locked buffers of [`CHUNK_BYTES`] from its context's
//! [`StagingPool`] and pipelines them: while the DMA engine moves one chunk, rayon's threads copy
//! the next one between the caller's memory and another buffer. Each buffer has an event recorded
//! after the DMA that uses it, and the host waits for that event before touching the buffer again.
//!
//! The semantics are those of the direct calls: the DMAs are ordered on the caller's stream (so
//! cross-stream bookkeeping around them is unchanged); a host-to-device copy returns once the
//! source has been read (the DMA of its last chunks may still be in flight, from buffers the
//! copy no longer needs); a device-to-host copy returns once the data is in the destination.
//!
//! Buffers are allocated lazily, at most [`MAX_BUFFERS`] per context (so that many threads copying
//! at once do not pin unbounded memory): a copy that finds none free, runs on a capturing stream,
//! or cannot allocate them takes the direct path. The pool frees them when the context drops.

use std::sync::{Mutex, MutexGuard};

use rayon::prelude::*;

use super::result::{self, DriverError};
use super::stream::CudaStream;
use super::sys;

/// Copies at least this large are staged.
pub(crate) const STAGE_MIN_BYTES: usize = 8 << 20;
/// The size of one staging buffer (and so of one pipelined chunk).
const CHUNK_BYTES: usize = 8 << 20;
/// Buffers one copy pipelines through.
const BUFFERS_PER_COPY: usize = 4;
/// Most buffers a context keeps (four copies in flight at once: 128 MiB of page-locked memory).
const MAX_BUFFERS: usize = 4 * BUFFERS_PER_COPY;
/// The piece of a chunk one rayon task copies.
const PIECE_BYTES: usize = 512 << 10;

/// One page-locked buffer of [`CHUNK_BYTES`] and the event recorded after the last DMA using it.
#[derive(Debug)]
struct StagingBuffer {
    ptr: *mut u8,
    event: sys::CUevent,
}

impl StagingBuffer {
    /// Allocates a buffer in the current context.
    fn new() -> Result<Self, DriverError> {
        let event = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)?;
        // SAFETY: a plain allocation, freed in `free`.
        match unsafe { result::malloc_host(CHUNK_BYTES, 0) } {
            Ok(ptr) => Ok(StagingBuffer { ptr: ptr.cast(), event }),
            Err(e) => {
                // SAFETY: created above and never recorded.
                let _ = unsafe { result::event::destroy(event) };
                Err(e)
            }
        }
    }

    /// Waits for the last DMA using the buffer.
    fn wait(&self) -> Result<(), DriverError> {
        // SAFETY: the event is alive (an event never recorded counts as complete).
        unsafe { result::event::synchronize(self.event) }
    }

    /// Waits for the buffer's last DMA, then frees it and its event.
    fn free(self) -> Result<(), DriverError> {
        let waited = self.wait();
        // SAFETY: we own both; no DMA uses the buffer any more (or the context is broken, in which
        // case the driver frees it with the context).
        let freed = unsafe { result::free_host(self.ptr.cast()) };
        // SAFETY: as above.
        let destroyed = unsafe { result::event::destroy(self.event) };
        waited.and(freed).and(destroyed)
    }
}

#[derive(Debug, Default)]
struct PoolState {
    free: Vec<StagingBuffer>,
    /// Buffers allocated (or being allocated), free or lent.
    total: usize,
}

/// A context's staging buffers: allocated on demand, lent to one copy at a time.
#[derive(Debug, Default)]
pub(crate) struct StagingPool {
    state: Mutex<PoolState>,
}

// SAFETY: the buffers are owned by the pool and lent to one copy at a time under the mutex;
// the driver's event and memory calls are thread safe.
unsafe impl Send for StagingPool {}
// SAFETY: as above.
unsafe impl Sync for StagingPool {}

impl StagingPool {
    fn lock(&self) -> MutexGuard<'_, PoolState> {
        // Nothing panics while the lock is held; a poisoned lock still holds consistent state.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Frees every buffer, making `ctx` current first if there are any. The first error, if any,
    /// is returned after all are freed.
    ///
    /// # Safety
    /// `ctx` must be the live context the pool belongs to, and no copy may be using the pool.
    pub(crate) unsafe fn free_all(&self, ctx: sys::CUcontext) -> Result<(), DriverError> {
        let buffers = {
            let mut state = self.lock();
            state.total = 0;
            std::mem::take(&mut state.free)
        };
        if buffers.is_empty() {
            return Ok(());
        }
        // SAFETY: forwarded to the caller (binding it directly: a parked error must not stop us).
        unsafe { result::ctx::set_current(ctx) }?;
        let mut first = Ok(());
        for buffer in buffers {
            let freed = buffer.free();
            if first.is_ok() {
                first = freed;
            }
        }
        first
    }

    /// [`BUFFERS_PER_COPY`] buffers for one copy on `stream`, each idle, or `None` when the pool
    /// is exhausted or more cannot be allocated.
    fn lend<'a>(&'a self, stream: &CudaStream) -> Result<Option<Lent<'a>>, DriverError> {
        let (mut buffers, missing) = {
            let mut state = self.lock();
            let take = state.free.len().min(BUFFERS_PER_COPY);
            let missing = BUFFERS_PER_COPY - take;
            if state.total + missing > MAX_BUFFERS {
                return Ok(None);
            }
            state.total += missing;
            let at = state.free.len() - take;
            (state.free.split_off(at), missing)
        };
        // Allocate outside the lock (pinning memory is slow). `Lent` gives back whatever it holds.
        let mut lent = Lent { pool: self, buffers: Vec::new(), stream_to_sync: None };
        for _ in 0..missing {
            match StagingBuffer::new() {
                Ok(buffer) => buffers.push(buffer),
                Err(_) => {
                    // Out of page-locked memory (or similar): give back what we have, un-count the
                    // rest, and let the caller copy directly.
                    self.lock().total -= BUFFERS_PER_COPY - buffers.len();
                    lent.buffers = buffers;
                    return Ok(None);
                }
            }
        }
        lent.buffers = buffers;
        // Buffers come back with their last DMA possibly pending (on any stream).
        for buffer in &lent.buffers {
            buffer.wait()?;
        }
        lent.stream_to_sync = Some(stream.cu_stream);
        Ok(Some(lent))
    }
}

/// Buffers lent to one copy; given back to the pool on drop.
struct Lent<'a> {
    pool: &'a StagingPool,
    buffers: Vec<StagingBuffer>,
    /// Set while a copy is being submitted: if it fails midway, the stream is synchronised
    /// before the buffers go back, so that no DMA this copy submitted still uses them unrecorded.
    stream_to_sync: Option<sys::CUstream>,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(stream) = self.stream_to_sync {
            // SAFETY: the stream outlives the copy that lent the buffers. Best effort: an error
            // here means the context is broken, and the copy's own error is returned already.
            let _ = unsafe { result::stream::synchronize(stream) };
        }
        self.pool.lock().free.append(&mut self.buffers);
    }
}

/// A raw address that rayon's tasks may share (each writes a disjoint piece).
#[derive(Clone, Copy)]
struct Addr(*mut u8);
// SAFETY: only used by `copy_bytes`, whose tasks touch disjoint pieces.
unsafe impl Send for Addr {}
// SAFETY: as above.
unsafe impl Sync for Addr {}

impl Addr {
    fn at(self, offset: usize) -> *mut u8 {
        self.0.wrapping_add(offset)
    }
}

/// Copies `len` bytes from `src` to `dst` on rayon's threads, one [`PIECE_BYTES`] piece per task.
///
/// # Safety
/// Both ranges must be valid for `len` bytes, must not overlap, and nothing else may use them
/// during the call. `dst` may be uninitialised.
unsafe fn copy_bytes(dst: *mut u8, src: *const u8, len: usize) {
    let (dst, src) = (Addr(dst), Addr(src.cast_mut()));
    (0..len.div_ceil(PIECE_BYTES)).into_par_iter().for_each(|piece| {
        let start = piece * PIECE_BYTES;
        // SAFETY: `start..start + n` lies within both ranges, and the pieces are disjoint.
        unsafe { std::ptr::copy_nonoverlapping(src.at(start), dst.at(start), PIECE_BYTES.min(len - start)) };
    });
}

/// The staging buffers for a copy of `bytes` bytes on `stream`, or `None` for the direct path
/// (a small copy, a capturing stream, no free buffers).
fn lend_for(stream: &CudaStream, bytes: usize) -> Result<Option<Lent<'_>>, DriverError> {
    if bytes < STAGE_MIN_BYTES || stream.is_capturing_now() {
        return Ok(None);
    }
    stream.ctx.staging.lend(stream)
}

/// `(offset, len)` of each chunk of a `bytes`-byte copy.
fn chunks(bytes: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..bytes).step_by(CHUNK_BYTES).map(move |offset| (offset, CHUNK_BYTES.min(bytes - offset)))
}

/// Copies `bytes` bytes from pageable host memory at `src` to `dst` on `stream` through staging
/// buffers. Returns `Ok(false)`, having done nothing, when the copy should go the direct way.
///
/// # Safety
/// `src` must be valid for reading `bytes` bytes during the call, `dst` live device memory of
/// `bytes` bytes in `stream`'s context (bound to this thread), ordered for writing on `stream`.
pub(crate) unsafe fn htod(
    stream: &CudaStream,
    dst: sys::CUdeviceptr,
    src: *const u8,
    bytes: usize,
) -> Result<bool, DriverError> {
    let Some(mut lent) = lend_for(stream, bytes)? else {
        return Ok(false);
    };
    for (i, (offset, len)) in chunks(bytes).enumerate() {
        let buffer = &lent.buffers[i % BUFFERS_PER_COPY];
        if i >= BUFFERS_PER_COPY {
            buffer.wait()?;
        }
        // SAFETY: the source range is the caller's; the buffer holds CHUNK_BYTES >= len bytes
        // and its last DMA has finished.
        unsafe { copy_bytes(buffer.ptr, src.add(offset), len) };
        // SAFETY: page-locked source of `len` bytes, kept alive by the pool until the event
        // recorded next says the DMA is done; `dst + offset` holds `len` bytes.
        unsafe {
            sys::cuMemcpyHtoDAsync_v2(dst + offset as u64, buffer.ptr.cast(), len, stream.cu_stream)
                .result()?;
            result::event::record(buffer.event, stream.cu_stream)?;
        }
    }
    lent.stream_to_sync = None;
    Ok(true)
}

/// Copies `bytes` bytes from `src` on `stream` into pageable host memory at `dst` through staging
/// buffers, returning once all of it is there. Returns `Ok(false)`, having done nothing, when the
/// copy should go the direct way.
///
/// # Safety
/// `dst` must be valid for writing `bytes` bytes (it may be uninitialised) and unused by anything
/// else during the call, `src` live device memory of `bytes` bytes in `stream`'s context (bound to
/// this thread), ordered for reading on `stream`.
pub(crate) unsafe fn dtoh(
    stream: &CudaStream,
    dst: *mut u8,
    src: sys::CUdeviceptr,
    bytes: usize,
) -> Result<bool, DriverError> {
    let Some(mut lent) = lend_for(stream, bytes)? else {
        return Ok(false);
    };
    let all: Vec<(usize, usize)> = chunks(bytes).collect();
    let submit = |buffer: &StagingBuffer, (offset, len): (usize, usize)| -> Result<(), DriverError> {
        // SAFETY: the buffer holds CHUNK_BYTES >= len bytes and is idle (waited for before);
        // `src + offset` holds `len` bytes. The event recorded next says when the data is there.
        unsafe {
            sys::cuMemcpyDtoHAsync_v2(buffer.ptr.cast(), src + offset as u64, len, stream.cu_stream)
                .result()?;
            result::event::record(buffer.event, stream.cu_stream)
        }
    };
    for (buffer, &chunk) in lent.buffers.iter().zip(&all) {
        submit(buffer, chunk)?;
    }
    for (i, &(offset, len)) in all.iter().enumerate() {
        let buffer = &lent.buffers[i % BUFFERS_PER_COPY];
        buffer.wait()?;
        // SAFETY: the chunk's DMA into the buffer has finished; the destination range is the
        // caller's.
        unsafe { copy_bytes(dst.add(offset), buffer.ptr, len) };
        if let Some(&next) = all.get(i + BUFFERS_PER_COPY) {
            submit(buffer, next)?;
        }
    }
    lent.stream_to_sync = None;
    Ok(true)
}
