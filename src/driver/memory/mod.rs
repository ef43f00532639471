//! Device memory ([`CudaSlice`] and its views), page-locked host memory ([`PinnedHostSlice`]),
//! the marker traits, and the allocation and copy methods of [`CudaStream`].
//!
//! # Cross-stream ordering
//! A tracked slice (the default) owns lazily created events: one recorded after its last write,
//! and one per stream that has read it, recorded after that stream's last read. A use on any
//! stream first waits for what it conflicts with (a read waits for the last write; a write, or
//! the free, waits for it and for the last read on every other stream) and then records its own. So work
//! on stream B sees a write made on stream A without the caller synchronising, and a slice is
//! freed only after its pending uses. None of this happens while the context has only its
//! default stream: the events are not even created. While a stream is being captured into a
//! graph, the events are neither waited for nor recorded (that would cross the capture
//! boundary); the graph does the waits and records when it is launched instead.

mod copies;
mod host;
mod pointers;
mod repr;
mod slice;

pub(crate) use host::PinnedMemory;
pub use host::{HostSlice, PinnedHostSlice};
pub use pointers::{DevicePtr, DevicePtrMut, DeviceSlice, SyncOnDrop};
pub use repr::{DeviceRepr, ValidAsZeroBits};
pub(crate) use slice::free_allocation;
pub use slice::{CudaSlice, CudaView, CudaViewMut};
