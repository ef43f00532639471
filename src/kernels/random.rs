//! Typed launchers for `cuda/random.cu`: Philox4x32-10 fills of device buffers.
//!
//! A fill of `n` elements at [`Philox`] `{ seed, offset }` computes block `b` (four 32-bit words)
//! as Philox4x32-10 with key `seed` and 128-bit counter `offset + b`, for the blocks `0..n /
//! PER_BLOCK` (rounded up); element `i` depends only on `(seed, offset, i)`. How the words become
//! values is documented in `cuda/random.cu`; `cpu::random` computes the same numbers.
//! The values differ from cuRAND's Philox generator (another counter layout and conversions).

use std::sync::Arc;

use crate::driver::{sys::CUdeviceptr, CudaStream, CudaViewMut, DeviceRepr, PushKernelArg};
use crate::error::{Error, Result};
use crate::kernels::args::CheckedPtrMut as _;
use crate::kernels::{grid, Kernels};

use crate::spec::random::{Normal, NormalElement, Philox, RandomElement};

/// Fills `out` with uniform values at `at`; returns the position after the fill.
pub fn uniform<T: RandomElement>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    out: &mut CudaViewMut<T>,
    at: Philox,
) -> Result<Philox> {
    let n = out.len();
    let (ptr, _write) = out.checked_ptr_mut(stream)?;
    // SAFETY: `ptr` addresses the `n` elements of `out`, a buffer of `stream`'s context.
    unsafe { uniform_raw::<T>(kernels, stream, ptr, n, at) }
}

/// Fills `out` with normal or log-normal values at `at`; returns the position after the fill.
pub fn normal<T: NormalElement>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    out: &mut CudaViewMut<T>,
    at: Philox,
    draw: Normal<T>,
) -> Result<Philox> {
    let n = out.len();
    let (ptr, _write) = out.checked_ptr_mut(stream)?;
    // SAFETY: `ptr` addresses the `n` elements of `out`, a buffer of `stream`'s context.
    unsafe { normal_raw(kernels, stream, ptr, n, at, draw) }
}

/// [`uniform`] on a raw device address.
///
/// # Safety
/// `ptr` must be a device address in `stream`'s context, aligned for `T`, with `n` elements of
/// `T` writable and not in use by other work until the fill is done.
pub unsafe fn uniform_raw<T: RandomElement>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    ptr: CUdeviceptr,
    n: usize,
    at: Philox,
) -> Result<Philox> {
    let (entry, units) = T::UNIFORM;
    let words = n.checked_mul(units).ok_or_else(|| too_long(entry, n))?;
    // SAFETY: the caller's obligation; the kernel writes `words` of its elements, `n` of `T`.
    unsafe { launch(kernels, stream, entry, ptr, words, T::PER_BLOCK * units, at, None::<(T, T)>)? };
    Ok(at.after::<T>(n))
}

/// [`normal`] on a raw device address.
///
/// # Safety
/// As [`uniform_raw`].
pub unsafe fn normal_raw<T: NormalElement>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    ptr: CUdeviceptr,
    n: usize,
    at: Philox,
    draw: Normal<T>,
) -> Result<Philox> {
    let (entry, mean, std) = match draw {
        Normal::Normal { mean, std } => (T::NORMAL, mean, std),
        Normal::LogNormal { mean, std } => (T::LOG_NORMAL, mean, std),
    };
    // SAFETY: the caller's obligation; the kernel writes `n` elements of `T`.
    unsafe { launch(kernels, stream, entry, ptr, n, T::PER_BLOCK, at, Some((mean, std)))? };
    Ok(at.after::<T>(n))
}

fn too_long(op: &'static str, n: usize) -> Error {
    Error::Shape { op, expected: "a length whose 32-bit words fit in usize".into(), got: n.to_string() }
}

/// One launch of `entry` over `n` of its elements, `per_block` to a thread.
///
/// # Safety
/// `ptr` holds `n` writable elements of the kernel's type in `stream`'s context.
#[allow(clippy::too_many_arguments)] // the kernel's argument list
unsafe fn launch<T: DeviceRepr>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    entry: &'static str,
    ptr: CUdeviceptr,
    n: usize,
    per_block: usize,
    at: Philox,
    moments: Option<(T, T)>,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let function = kernels.function(entry)?;
    let count = n as u64;
    let mut builder = stream.launch_builder(&function);
    builder.arg(&ptr).arg(&count).arg(&at.seed).arg(&at.offset);
    if let Some((mean, std)) = &moments {
        builder.arg(mean).arg(std);
    }
    // SAFETY: the caller vouches for `ptr`; the kernel writes elements `0..n` and nothing else.
    unsafe { builder.launch(grid::strided(n.div_ceil(per_block), kernels.multiprocessors())) }?;
    Ok(())
}
