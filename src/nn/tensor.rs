//! [`Device`] (where tensors live and operations run) and [`Tensor`] (a shaped f32 buffer on the
//! GPU, or on the host with the CPU fallback), with borrowed row ranges ([`TensorView`]).

use std::sync::Arc;

use crate::driver::{CudaSlice, CudaView, CudaViewMut, DeviceSlice as _};
use crate::error::{Error, Result};
use crate::ops::shape;
use crate::runtime::{GpuOps, ProductionGpuRuntime};

/// A runtime that tensors are placed on: a GPU, or the CPU fallback. Cheap to clone.
#[derive(Clone)]
pub struct Device {
    runtime: Arc<ProductionGpuRuntime>,
    /// On a stream of its own, so that work can be captured ([`Device::gpu_for_graphs`]).
    graphs: bool,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Device").field(&self.describe()).finish()
    }
}

impl Device {
    /// The CPU fallback.
    pub fn cpu() -> Self {
        Self { runtime: Arc::new(ProductionGpuRuntime::cpu()), graphs: false }
    }

    /// GPU `ordinal`, or the error that makes it unusable.
    pub fn gpu(ordinal: usize) -> Result<Self> {
        Ok(Self { runtime: Arc::new(ProductionGpuRuntime::with_device(ordinal)?), graphs: false })
    }

    /// GPU `ordinal` with its operations on a stream of their own, so that a training step can be
    /// captured into a CUDA graph ([`Network::capture_step`](crate::nn::Network::capture_step)).
    pub fn gpu_for_graphs(ordinal: usize) -> Result<Self> {
        Ok(Self { runtime: Arc::new(ProductionGpuRuntime::with_device_stream(ordinal)?), graphs: true })
    }

    /// GPU 0 when it is usable, else the CPU fallback (the reason is in [`describe`](Self::describe)).
    pub fn auto() -> Self {
        let runtime = ProductionGpuRuntime::initialize().unwrap_or_else(|_| ProductionGpuRuntime::cpu());
        Self { runtime: Arc::new(runtime), graphs: false }
    }

    /// `true` for a GPU device whose work can be captured ([`gpu_for_graphs`](Self::gpu_for_graphs)).
    pub fn for_graphs(&self) -> bool {
        self.graphs
    }

    /// `true` on a GPU.
    pub fn is_gpu(&self) -> bool {
        self.runtime.is_gpu()
    }

    /// What runs the operations, for people.
    pub fn describe(&self) -> String {
        self.runtime.describe()
    }

    /// The runtime underneath.
    pub fn runtime(&self) -> &ProductionGpuRuntime {
        &self.runtime
    }

    /// The device-buffer operations (binding the context to this thread), or [`Error::NoGpu`].
    pub(crate) fn gpu_ops(&self) -> Result<&GpuOps> {
        let ops = self.runtime.gpu()?;
        ops.kernels().context().bind_to_thread()?;
        Ok(ops)
    }
}

/// Where a tensor's elements are.
pub(crate) enum Storage {
    Host(Vec<f32>),
    Gpu(CudaSlice<f32>),
}

/// A row-major f32 tensor with a shape, on a GPU or (CPU fallback) on the host.
pub struct Tensor {
    shape: Vec<usize>,
    pub(crate) data: Storage,
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor").field("shape", &self.shape).field("gpu", &self.is_gpu()).finish()
    }
}

/// The element count of `shape`, checked.
pub(crate) fn numel(op: &'static str, shape: &[usize]) -> Result<usize> {
    shape::elements(op, "tensor", shape)
}

impl Tensor {
    /// `data` with `shape` (their sizes must agree) on `device`: uploaded to a GPU, kept on the host
    /// on the CPU fallback.
    pub fn from_vec(device: &Device, data: Vec<f32>, shape: &[usize]) -> Result<Self> {
        let n = numel("Tensor::from_vec", shape)?;
        if n != data.len() {
            return Err(Error::Shape {
                op: "Tensor::from_vec",
                expected: format!("{n} elements for shape {shape:?}"),
                got: format!("{} elements", data.len()),
            });
        }
        let data = if device.is_gpu() {
            Storage::Gpu(device.gpu_ops()?.upload(&data)?)
        } else {
            Storage::Host(data)
        };
        Ok(Self { shape: shape.to_vec(), data })
    }

    /// Zeros of `shape` on `device`.
    pub fn zeros(device: &Device, shape: &[usize]) -> Result<Self> {
        let n = numel("Tensor::zeros", shape)?;
        let data = if device.is_gpu() {
            let ops = device.gpu_ops()?;
            Storage::Gpu(ops.stream().alloc_zeros::<f32>(n)?)
        } else {
            Storage::Host(shape::zeroed("Tensor::zeros", "tensor", n)?)
        };
        Ok(Self { shape: shape.to_vec(), data })
    }

    /// A tensor of `shape` whose elements the caller overwrites entirely before reading them:
    /// uninitialised on a GPU (no memset in a training step), zeros on the host.
    pub(crate) fn scratch(device: &Device, shape: &[usize]) -> Result<Self> {
        let n = numel("Tensor", shape)?;
        let data = if device.is_gpu() {
            let ops = device.gpu_ops()?;
            // SAFETY: every caller launches kernels that write all n elements (a beta = 0 GEMM,
            // an elementwise kernel, a fused loss) before the tensor is read.
            Storage::Gpu(unsafe { ops.stream().alloc::<f32>(n) }?)
        } else {
            Storage::Host(shape::zeroed("Tensor", "tensor", n)?)
        };
        Ok(Self { shape: shape.to_vec(), data })
    }

    pub(crate) fn from_storage(data: Storage, shape: Vec<usize>) -> Self {
        Self { shape, data }
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element count.
    pub fn len(&self) -> usize {
        match &self.data {
            Storage::Host(v) => v.len(),
            Storage::Gpu(s) => s.len(),
        }
    }

    /// `true` without elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `true` when the elements are on a GPU.
    pub fn is_gpu(&self) -> bool {
        matches!(self.data, Storage::Gpu(_))
    }

    /// The elements, copied to the host (waits for the GPU work that writes them).
    pub fn to_vec(&self) -> Result<Vec<f32>> {
        match &self.data {
            Storage::Host(v) => Ok(v.clone()),
            Storage::Gpu(s) => Ok(s.stream().clone_dtoh(s)?),
        }
    }

    /// The same elements with another shape of the same element count.
    pub fn reshape(self, shape: &[usize]) -> Result<Self> {
        let n = numel("Tensor::reshape", shape)?;
        if n != self.len() {
            return Err(Error::Shape {
                op: "Tensor::reshape",
                expected: format!("a shape of {} elements", self.len()),
                got: format!("{shape:?} ({n} elements)"),
            });
        }
        Ok(Self { shape: shape.to_vec(), data: self.data })
    }

    /// All of the tensor as a view.
    pub fn view(&self) -> TensorView<'_> {
        let data = match &self.data {
            Storage::Host(v) => ViewData::Host(v),
            Storage::Gpu(s) => ViewData::Gpu(s.as_view()),
        };
        TensorView { shape: self.shape.clone(), data }
    }

    /// Rows `start..start + rows` of the first dimension (a batch), borrowed.
    pub fn rows(&self, start: usize, rows: usize) -> Result<TensorView<'_>> {
        let total = self.shape.first().copied().unwrap_or(0);
        let end = start.checked_add(rows).filter(|&e| e <= total).ok_or_else(|| Error::Shape {
            op: "Tensor::rows",
            expected: format!("rows within 0..{total}"),
            got: format!("{start}..{start}+{rows}"),
        })?;
        let row_len = numel("Tensor::rows", &self.shape[1..])?;
        let (a, b) = (start * row_len, end * row_len);
        let data = match &self.data {
            Storage::Host(v) => ViewData::Host(&v[a..b]),
            Storage::Gpu(s) => ViewData::Gpu(s.slice(a..b)),
        };
        let mut shape = self.shape.clone();
        shape[0] = rows;
        Ok(TensorView { shape, data })
    }

    pub(crate) fn host_mut(&mut self) -> Option<&mut Vec<f32>> {
        match &mut self.data {
            Storage::Host(v) => Some(v),
            Storage::Gpu(_) => None,
        }
    }

    pub(crate) fn gpu_mut(&mut self) -> Option<&mut CudaSlice<f32>> {
        match &mut self.data {
            Storage::Gpu(s) => Some(s),
            Storage::Host(_) => None,
        }
    }

    /// Elements `range` for writing.
    pub(crate) fn range_mut(&mut self, range: std::ops::Range<usize>) -> BufMut<'_> {
        match &mut self.data {
            Storage::Host(v) => BufMut::Host(&mut v[range]),
            Storage::Gpu(s) => BufMut::Gpu(s.slice_mut(range)),
        }
    }
}

/// Borrowed elements of a tensor.
pub(crate) enum ViewData<'a> {
    Host(&'a [f32]),
    Gpu(CudaView<'a, f32>),
}

/// Writable borrowed elements of a tensor.
pub(crate) enum BufMut<'a> {
    Host(&'a mut [f32]),
    Gpu(CudaViewMut<'a, f32>),
}

/// A borrowed tensor: all of one ([`Tensor::view`]) or a range of its rows ([`Tensor::rows`]).
pub struct TensorView<'a> {
    shape: Vec<usize>,
    pub(crate) data: ViewData<'a>,
}

impl TensorView<'_> {
    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element count.
    pub fn len(&self) -> usize {
        match &self.data {
            ViewData::Host(v) => v.len(),
            ViewData::Gpu(s) => s.len(),
        }
    }

    /// `true` without elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements, copied to the host.
    pub fn to_vec(&self) -> Result<Vec<f32>> {
        match &self.data {
            ViewData::Host(v) => Ok(v.to_vec()),
            ViewData::Gpu(s) => Ok(s.stream().clone_dtoh(s)?),
        }
    }

    /// `(rows, cols)` of this view read as a matrix (first dimension by the rest), or an error
    /// naming `op` when it does not have `cols` columns.
    pub(crate) fn matrix(&self, op: &'static str, cols: usize) -> Result<usize> {
        let rows = self.shape.first().copied().unwrap_or(0);
        let row_len = numel(op, self.shape.get(1..).unwrap_or(&[]))?;
        if self.shape.len() < 2 || row_len != cols {
            return Err(Error::Shape {
                op,
                expected: format!("an input of shape [batch, {cols}]"),
                got: format!("{:?}", self.shape),
            });
        }
        Ok(rows)
    }
}
