//! Host memory copies take: [`HostSlice`] over `[T]`, `[T; N]`, `Vec<T>`, and page-locked
//! [`PinnedHostSlice`] memory.

use std::mem::size_of;
use std::sync::Arc;

use super::copies::byte_len;
use super::pointers::SyncOnDrop;
use super::repr::{DeviceRepr, ValidAsZeroBits};
use crate::driver::context::CudaContext;
use crate::driver::event::CudaEvent;
use crate::driver::result::{self, DriverError};
use crate::driver::stream::CudaStream;
use crate::driver::sys;

/// Host memory a copy can use: `[T]`, `[T; N]`, `Vec<T>`, [`PinnedHostSlice<T>`].
pub trait HostSlice<T> {
    /// Number of elements.
    fn len(&self) -> usize;
    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The memory, for a copy on `stream`, and the guard to drop after submitting it.
    ///
    /// # Safety
    /// Use the slice only for work on `stream`.
    unsafe fn stream_synced_slice<'a>(&'a self, stream: &'a CudaStream) -> (&'a [T], SyncOnDrop<'a>);

    /// The memory, writable, for a copy on `stream`, and the guard to drop after submitting it.
    ///
    /// # Safety
    /// Use the slice only for work on `stream`.
    unsafe fn stream_synced_mut_slice<'a>(
        &'a mut self,
        stream: &'a CudaStream,
    ) -> (&'a mut [T], SyncOnDrop<'a>);
}

/// `HostSlice` for plain host memory (`[T; N]`, `[T]`, `Vec<T>`): nothing to wait for, so the
/// slice is the memory itself and the guard does nothing.
macro_rules! plain_host_slice {
    ($([$($generics:tt)*] $ty:ty;)*) => {$(
        impl<$($generics)*> HostSlice<T> for $ty {
            fn len(&self) -> usize {
                <[T]>::len(self)
            }
            unsafe fn stream_synced_slice<'a>(&'a self, _stream: &'a CudaStream) -> (&'a [T], SyncOnDrop<'a>) {
                (self, SyncOnDrop::Sync(None))
            }
            unsafe fn stream_synced_mut_slice<'a>(
                &'a mut self,
                _stream: &'a CudaStream,
            ) -> (&'a mut [T], SyncOnDrop<'a>) {
                (self, SyncOnDrop::Sync(None))
            }
        }
    )*};
}

plain_host_slice! {
    [T, const N: usize] [T; N];
    [T] [T];
    [T] Vec<T>;
}

/// Page-locked host memory, allocated with [`CudaContext::alloc_pinned`]. Copies to and from it
/// are truly asynchronous; an event records the last one, and the accessors wait for it.
///
/// It owns its values like a `Vec<T>`: `Send` when `T: Send`, `Sync` when `T: Sync`.
/// ```
/// fn shareable<T: Send + Sync>() {}
/// shareable::<prism_gpu::driver::PinnedHostSlice<f32>>();
/// ```
/// ```compile_fail,E0277
/// fn sendable<T: Send>() {}
/// sendable::<prism_gpu::driver::PinnedHostSlice<std::rc::Rc<u8>>>();
/// ```
/// ```compile_fail,E0277
/// fn shareable<T: Sync>() {}
/// shareable::<prism_gpu::driver::PinnedHostSlice<std::cell::Cell<u8>>>();
/// ```
#[derive(Debug)]
pub struct PinnedHostSlice<T> {
    pub(crate) ptr: *mut T,
    pub(crate) len: usize,
    /// The allocation and its last-copy event, shared with the graphs whose captured copies
    /// use it, so that it outlives them.
    pub(crate) memory: Arc<PinnedMemory>,
}

/// A page-locked allocation and the event recording its last copy; freed, after that copy,
/// when the last of its [`PinnedHostSlice`] and the graphs that captured copies of it drops.
#[derive(Debug)]
pub(crate) struct PinnedMemory {
    ptr: *mut u8,
    bytes: usize,
    pub(crate) event: CudaEvent,
}

// SAFETY: the allocation is owned by this object and only freed by its Drop; the event is
// thread safe. The memory's contents are reached only through `PinnedHostSlice`, whose own
// Send/Sync impls carry the `T` bounds.
unsafe impl Send for PinnedMemory {}
// SAFETY: as above; `&PinnedMemory` gives access to nothing but the event.
unsafe impl Sync for PinnedMemory {}

impl Drop for PinnedMemory {
    fn drop(&mut self) {
        let ctx = &self.event.ctx;
        // Waits for the last copy using this memory whatever error is parked: freeing it with a
        // copy still in flight would let the driver write freed host memory.
        if let Err(e) = self.event.synchronize_tracking() {
            // The copy may still be in flight: leak the memory rather than free it.
            return ctx.record_err::<()>(Err(e));
        }
        if self.bytes > 0 {
            // SAFETY: we own the allocation and the last copy using it has finished.
            ctx.record_err(unsafe { result::free_host(self.ptr.cast()) });
        }
    }
}

// SAFETY: the slice owns its `T`s like a `Vec<T>` (handed out only through `&`/`&mut` borrows
// of `self`), so moving it to another thread moves them: sound exactly when `T: Send`.
unsafe impl<T: Send> Send for PinnedHostSlice<T> {}
// SAFETY: `&PinnedHostSlice<T>` hands out `&[T]` (and `&T` through it) to any thread: sound
// exactly when `T: Sync`, as for `Vec<T>`.
unsafe impl<T: Sync> Sync for PinnedHostSlice<T> {}

impl CudaContext {
    /// Allocates `len` values of page-locked, write-combined host memory.
    ///
    /// # Safety
    /// The memory is uninitialised: write it before reading it as `T`.
    #[doc(alias = "cuMemHostAlloc")]
    pub unsafe fn alloc_pinned<T: DeviceRepr>(
        self: &Arc<Self>,
        len: usize,
    ) -> Result<PinnedHostSlice<T>, DriverError> {
        // SAFETY: forwarded to the caller.
        unsafe { self.alloc_pinned_with_flags(len, sys::CU_MEMHOSTALLOC_WRITECOMBINED) }
    }

    /// Allocates `len` values of page-locked host memory with `CU_MEMHOSTALLOC_*` `flags`.
    ///
    /// # Safety
    /// The memory is uninitialised: write it before reading it as `T`.
    #[doc(alias = "cuMemHostAlloc")]
    pub unsafe fn alloc_pinned_with_flags<T: DeviceRepr>(
        self: &Arc<Self>,
        len: usize,
        flags: u32,
    ) -> Result<PinnedHostSlice<T>, DriverError> {
        self.bind_to_thread()?;
        let bytes = byte_len::<T>(len)?;
        let event = self.new_event(Some(sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC))?;
        let ptr = if bytes == 0 {
            std::ptr::NonNull::<T>::dangling().as_ptr()
        } else {
            // SAFETY: a plain allocation; freed in Drop.
            unsafe { result::malloc_host(bytes, flags) }?.cast::<T>()
        };
        Ok(PinnedHostSlice { ptr, len, memory: Arc::new(PinnedMemory { ptr: ptr.cast(), bytes, event }) })
    }
}

impl<T> PinnedHostSlice<T> {
    fn event(&self) -> &CudaEvent {
        &self.memory.event
    }

    /// The context the memory was allocated in.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.event().ctx
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Number of bytes.
    pub fn num_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn guard<'a>(&'a self, stream: &'a CudaStream) -> SyncOnDrop<'a> {
        let ctx = &stream.ctx;
        if ctx.tracking.is_capturing(stream) {
            // The graph keeps the memory alive and records its launches' copies on its event.
            stream.capture.pinned(&self.memory);
            return SyncOnDrop::Record(None);
        }
        if ctx.is_in_multi_stream_mode() {
            ctx.record_err(stream.wait_tracking(self.event()));
        }
        SyncOnDrop::Record(Some((self.event(), stream)))
    }
}

impl<T: ValidAsZeroBits> PinnedHostSlice<T> {
    /// Waits for pending copies, then gives the address.
    pub fn as_ptr(&self) -> Result<*const T, DriverError> {
        self.event().synchronize()?;
        Ok(self.ptr)
    }

    /// Waits for pending copies, then gives the address.
    pub fn as_mut_ptr(&mut self) -> Result<*mut T, DriverError> {
        self.event().synchronize()?;
        Ok(self.ptr)
    }

    /// Waits for pending copies, then borrows the memory.
    pub fn as_slice(&self) -> Result<&[T], DriverError> {
        self.event().synchronize()?;
        // SAFETY: `ptr` holds `len` values (zeroable, so any bytes the device wrote are valid),
        // no copy is pending, and the borrow of `self` keeps the memory alive.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr, self.len) })
    }

    /// Waits for pending copies, then borrows the memory mutably.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T], DriverError> {
        self.event().synchronize()?;
        // SAFETY: as for `as_slice`, and `&mut self` makes the borrow unique.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) })
    }
}

impl<T> HostSlice<T> for PinnedHostSlice<T> {
    fn len(&self) -> usize {
        self.len
    }
    unsafe fn stream_synced_slice<'a>(&'a self, stream: &'a CudaStream) -> (&'a [T], SyncOnDrop<'a>) {
        let guard = self.guard(stream);
        // SAFETY: `ptr` holds `len` values for as long as `self` is borrowed; the device reads
        // them only after earlier copies (ordered by the guard's wait).
        (unsafe { std::slice::from_raw_parts(self.ptr, self.len) }, guard)
    }
    unsafe fn stream_synced_mut_slice<'a>(
        &'a mut self,
        stream: &'a CudaStream,
    ) -> (&'a mut [T], SyncOnDrop<'a>) {
        let guard = self.guard(stream);
        // SAFETY: as above; the host reads the values only through the synchronising accessors.
        (unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }, guard)
    }
}

/// Whether a [`HostSlice`]'s guard says it is plain (pageable) host memory: the guard of `[T]`,
/// `[T; N]` and `Vec<T>` does nothing, as copies with pageable memory need no later sync.
pub(super) fn is_plain_host(guard: &SyncOnDrop<'_>) -> bool {
    matches!(guard, SyncOnDrop::Sync(None))
}
