//! Operations on device buffers: allocate the output, check shapes, launch the built-in kernel.

use std::sync::Arc;

use crate::driver::{CudaContext, CudaSlice, CudaStream, DeviceRepr};
use crate::error::Result;
use crate::kernels::elementwise::{self, Binary};
use crate::kernels::Kernels;

/// The device-buffer side of [`ProductionGpuRuntime`](super::ProductionGpuRuntime): every
/// operation takes `CudaSlice`s and returns a new `CudaSlice` (or works in place) on its stream.
pub struct GpuOps {
    stream: Arc<CudaStream>,
    kernels: Kernels,
}

impl GpuOps {
    /// Operations on `ctx`'s default stream.
    pub fn new(ctx: Arc<CudaContext>) -> Result<Self> {
        Ok(Self { stream: ctx.default_stream(), kernels: Kernels::new(ctx)? })
    }

    /// The stream every operation is ordered on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The built-in kernels of this context.
    pub fn kernels(&self) -> &Kernels {
        &self.kernels
    }

    /// Runs a host-slice operation's GPU part; its downloads synchronise the stream.
    pub(crate) fn host<T>(&self, f: impl FnOnce(&Self) -> Result<T>) -> Result<T> {
        self.kernels.context().bind_to_thread()?;
        f(self)
    }

    /// A device copy of `data`.
    pub fn upload<T: DeviceRepr>(&self, data: &[T]) -> Result<CudaSlice<T>> {
        Ok(self.stream.clone_htod(data)?)
    }

    /// A host copy of `data` (waits for the work that writes it).
    pub fn download<T: DeviceRepr>(&self, data: &CudaSlice<T>) -> Result<Vec<T>> {
        Ok(self.stream.clone_dtoh(data)?)
    }

    /// An uninitialised buffer that the caller's launch overwrites entirely.
    fn output<T: DeviceRepr>(&self, len: usize) -> Result<CudaSlice<T>> {
        if len == 0 {
            return Ok(self.stream.null()?);
        }
        // SAFETY: every caller launches a kernel that writes all `len` elements before the
        // buffer is read.
        Ok(unsafe { self.stream.alloc(len) }?)
    }

    /// `a ∘ b` elementwise into a new buffer.
    pub fn binary(&self, op: Binary, a: &CudaSlice<f32>, b: &CudaSlice<f32>) -> Result<CudaSlice<f32>> {
        let mut out = self.output(a.len())?;
        elementwise::binary(
            &self.kernels,
            &self.stream,
            op,
            &a.as_view(),
            &b.as_view(),
            &mut out.as_view_mut(),
        )?;
        Ok(out)
    }

    /// `alpha * x + y` into a new buffer.
    pub fn axpy(&self, alpha: f32, x: &CudaSlice<f32>, y: &CudaSlice<f32>) -> Result<CudaSlice<f32>> {
        let mut out = self.output(x.len())?;
        elementwise::axpy(
            &self.kernels,
            &self.stream,
            alpha,
            &x.as_view(),
            &y.as_view(),
            &mut out.as_view_mut(),
        )?;
        Ok(out)
    }

    /// `alpha * x` into a new buffer.
    pub fn scale(&self, alpha: f32, x: &CudaSlice<f32>) -> Result<CudaSlice<f32>> {
        let mut out = self.output(x.len())?;
        elementwise::scale(&self.kernels, &self.stream, alpha, &x.as_view(), &mut out.as_view_mut())?;
        Ok(out)
    }

    /// `x *= alpha` in place.
    pub fn scale_inplace(&self, alpha: f32, x: &mut CudaSlice<f32>) -> Result<()> {
        elementwise::scale_inplace(&self.kernels, &self.stream, alpha, &mut x.as_view_mut())
    }

    /// A new buffer of `len` copies of `value`.
    pub fn fill(&self, len: usize, value: f32) -> Result<CudaSlice<f32>> {
        let mut out = self.output(len)?;
        elementwise::fill(&self.kernels, &self.stream, &mut out.as_view_mut(), value)?;
        Ok(out)
    }
}
