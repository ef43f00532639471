//! [`CudaGraph`]: work captured from a stream, replayable with one launch.

use std::sync::Arc;

use super::memory::PinnedMemory;
use super::result::{self, DriverError};
use super::stream::CudaStream;
use super::sys;
use super::tracking::{SyncMode, Touched};

/// An instantiated graph, made by [`CudaStream::begin_capture`] / [`CudaStream::end_capture`] and
/// replayed with [`CudaGraph::launch`] on the stream it was captured from.
///
/// Captured work does not take part in the slices' cross-stream tracking (waiting for events
/// recorded outside the capture would fail with `CUDA_ERROR_STREAM_CAPTURE_ISOLATION`). Instead
/// the graph remembers which tracked slices the captured work used, and each launch waits for
/// their earlier uses on other streams and records its own, like a kernel launch does. So
/// buffers written before the capture and used inside it need no `disable_event_tracking`.
///
/// The graph also owns the tracked device buffers its captured work touched: a
/// [`CudaSlice`](super::CudaSlice) dropped while a graph using it is alive hands its allocation to the graph,
/// which frees it, after its pending launches, when the last such graph drops. Likewise the
/// page-locked memory of a [`PinnedHostSlice`](super::PinnedHostSlice) used by a captured copy
/// stays allocated while the graph lives, and each launch is recorded on it, so its host
/// accessors wait for the replay's copies. Untracked slices (made while
/// [`disable_event_tracking`](super::CudaContext::disable_event_tracking) was in force) are the
/// caller's to keep alive, as that function's contract says.
///
/// Not thread safe (CUDA graphs are not): it is neither `Send` nor `Sync`.
pub struct CudaGraph {
    cu_graph: sys::CUgraph,
    cu_graph_exec: sys::CUgraphExec,
    stream: Arc<CudaStream>,
    touched: Vec<Touched>,
    /// Page-locked memory the captured copies use: kept allocated while the graph lives, and
    /// each launch records its copies on the memory's event, which the host accessors wait for.
    pinned: Vec<Arc<PinnedMemory>>,
}

impl std::fmt::Debug for CudaGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaGraph")
            .field("cu_graph", &self.cu_graph)
            .field("cu_graph_exec", &self.cu_graph_exec)
            .field("tracked_slices", &self.touched.len())
            .finish()
    }
}

impl Drop for CudaGraph {
    fn drop(&mut self) {
        self.stream.ctx.release(|ctx| {
            let exec = std::mem::replace(&mut self.cu_graph_exec, std::ptr::null_mut());
            if !exec.is_null() {
                // SAFETY: we own the executable graph; pending launches keep their resources.
                ctx.record_err(unsafe { result::graph::exec_destroy(exec) });
            }
            let graph = std::mem::replace(&mut self.cu_graph, std::ptr::null_mut());
            if !graph.is_null() {
                // SAFETY: we own the graph.
                ctx.record_err(unsafe { result::graph::destroy(graph) });
            }
        });
    }
}

impl CudaStream {
    /// Starts capturing this stream's work into a graph (not allowed on the default stream).
    #[doc(alias = "cuStreamBeginCapture")]
    pub fn begin_capture(&self, mode: sys::CUstreamCaptureMode) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()?;
        self.ctx.tracking.capture_begun();
        // SAFETY: the stream is alive.
        match unsafe { result::stream::begin_capture(self.cu_stream, mode) } {
            Ok(()) => {
                self.capture.begin();
                Ok(())
            }
            Err(e) => {
                self.ctx.tracking.capture_ended();
                Err(e)
            }
        }
    }

    /// Ends the capture and instantiates the graph with `flags` (an enum without a "no flags"
    /// value, as in cudarc). `Ok(None)` when nothing was captured.
    #[doc(alias = "cuStreamEndCapture")]
    pub fn end_capture(
        self: &Arc<Self>,
        flags: sys::CUgraphInstantiate_flags,
    ) -> Result<Option<CudaGraph>, DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: the stream is alive.
        let ended = unsafe { result::stream::end_capture(self.cu_stream) };
        let log = self.capture.take();
        if log.is_some() {
            self.ctx.tracking.capture_ended();
        }
        let cu_graph = ended?;
        if cu_graph.is_null() {
            return Ok(None);
        }
        // SAFETY: `cu_graph` was just produced by the capture.
        let cu_graph_exec = match unsafe { result::graph::instantiate(cu_graph, flags) } {
            Ok(exec) => exec,
            Err(e) => {
                // SAFETY: we own the graph and nothing else refers to it.
                self.ctx.record_err(unsafe { result::graph::destroy(cu_graph) });
                return Err(e);
            }
        };
        let (touched, pinned) = log.unwrap_or_default().into_parts();
        Ok(Some(CudaGraph { cu_graph, cu_graph_exec, stream: self.clone(), touched, pinned }))
    }

    /// The stream's capture status.
    #[doc(alias = "cuStreamIsCapturing")]
    pub fn capture_status(&self) -> Result<sys::CUstreamCaptureStatus, DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: the stream is alive.
        unsafe { result::stream::is_capturing(self.cu_stream) }
    }
}

impl CudaGraph {
    /// Replays the graph on the stream it was captured from.
    #[doc(alias = "cuGraphLaunch")]
    pub fn launch(&self) -> Result<(), DriverError> {
        let stream = &self.stream;
        stream.ctx.bind_to_thread()?;
        let mode = if self.touched.is_empty() { SyncMode::Off } else { stream.ctx.sync_mode(stream) };
        if mode == SyncMode::On {
            for (events, access) in &self.touched {
                events.wait_before(*access, stream);
            }
        }
        // Page-locked memory: a launch inside another capture hands it to that capture's graph;
        // otherwise the launch is ordered after the memory's earlier copies and recorded as its
        // latest, so the host accessors (and the memory's free) wait for it.
        let pinned_capturing = !self.pinned.is_empty() && stream.ctx.tracking.is_capturing(stream);
        if pinned_capturing {
            self.pinned.iter().for_each(|memory| stream.capture.pinned(memory));
        } else if stream.ctx.is_in_multi_stream_mode() {
            for memory in &self.pinned {
                stream.ctx.record_err(stream.wait_tracking(&memory.event));
            }
        }
        // SAFETY: both handles are alive; the tracked device buffers and the page-locked memory
        // the graph touches are kept alive by it (freed only when their last owner drops).
        unsafe { result::graph::launch(self.cu_graph_exec, stream.cu_stream) }?;
        if mode == SyncMode::On {
            for (events, access) in &self.touched {
                events.record_after(*access, stream);
            }
        }
        if !pinned_capturing {
            for memory in &self.pinned {
                stream.ctx.record_err(memory.event.record_tracking(stream));
            }
        }
        Ok(())
    }

    /// Uploads the graph's resources now, so the first launch is not slower.
    #[doc(alias = "cuGraphUpload")]
    pub fn upload(&self) -> Result<(), DriverError> {
        self.stream.ctx.bind_to_thread()?;
        // SAFETY: both handles are alive.
        unsafe { result::graph::upload(self.cu_graph_exec, self.stream.cu_stream) }
    }

    /// The raw graph (owned by this object: do not destroy it).
    pub fn cu_graph(&self) -> sys::CUgraph {
        self.cu_graph
    }

    /// The raw executable graph (owned by this object: do not destroy it).
    pub fn cu_graph_exec(&self) -> sys::CUgraphExec {
        self.cu_graph_exec
    }
}
