//! Device scratch that kernels reuse between calls: GEMMs' operand copies and split-K partial
//! products, the batch-norm statistics' partial sums, and the arrival counters with which the last
//! block of a group finishes a result in the same launch (the skinny GEMMs' column tiles, the
//! batch-norm statistics' channels).

use std::sync::{Arc, Mutex, MutexGuard};

use crate::driver::{CudaSlice, CudaStream};
use crate::error::Result;

/// Device scratch that kernels reuse (operands transposed or copied to a new pitch for the sm_90
/// kernels, partial products and sums, arrival counters): it grows to the largest request and is
/// kept, so a call does not allocate. A fresh allocation per call is costly because the
/// stream-ordered pool hands freed memory back to the device at every synchronisation (64 MB per
/// 4096^3 TF32 `tn` call). Thread-safe: a call holds the lock while it enqueues its work, and the
/// buffers' own read/write tracking orders their uses across streams.
#[derive(Default)]
pub struct Workspace(Mutex<Scratch>);

/// What a [`Workspace`] holds.
#[derive(Default)]
pub(crate) struct Scratch {
    /// Bytes for operand copies, partial products and sums, grown by [`grow`].
    pub bytes: Option<CudaSlice<u8>>,
    /// Arrival counters, zero between calls ([`zeroed_counters`]): each group's last block sets
    /// its counter back to zero.
    pub counters: Option<CudaSlice<u32>>,
}

impl Workspace {
    /// The scratch, locked while a call enqueues its work.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Scratch> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Arrival counters a workspace allocates at least: one per column tile of a skinny product of
/// up to 262 144 columns (`wk`'s 32-column tiles), one per channel of a batch norm of up to 8192.
pub(crate) const COUNTERS: usize = 8192;

/// Makes the locked workspace hold at least `bytes` (none when 0), freeing a smaller buffer first
/// (ordered after its uses) so both are never held at once.
///
/// # Safety
/// A new buffer is uninitialised: the caller must write every byte it reads.
pub(crate) unsafe fn grow(
    scratch: &mut Option<CudaSlice<u8>>,
    stream: &Arc<CudaStream>,
    bytes: usize,
) -> Result<()> {
    if bytes > 0 && scratch.as_ref().is_none_or(|ws| ws.len() < bytes) {
        *scratch = None;
        // SAFETY: the caller's obligation (above).
        *scratch = Some(unsafe { stream.alloc::<u8>(bytes) }?);
    }
    Ok(())
}

/// At least `count` (and [`COUNTERS`]) arrival counters, all zero as the next launch on `stream`
/// sees them: allocated zeroed when missing or too few (the old ones freed after their uses), else
/// as the last users left them, which set each one they counted on back to zero.
pub(crate) fn zeroed_counters<'s>(
    counters: &'s mut Option<CudaSlice<u32>>,
    stream: &Arc<CudaStream>,
    count: usize,
) -> Result<&'s mut CudaSlice<u32>> {
    if counters.as_ref().is_none_or(|c| c.len() < count) {
        *counters = None;
        *counters = Some(stream.alloc_zeros::<u32>(count.max(COUNTERS))?);
    }
    Ok(counters.as_mut().expect("allocated above"))
}
