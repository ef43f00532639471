//! What an operation is, independent of where it runs: its operand types, its checks, and one
//! definition per operation that ties its checks, its GPU launch (a launcher of
//! [`kernels`](crate::kernels)) and its CPU body ([`runtime::cpu`](crate::runtime::cpu)) together.
//!
//! The runtime's entry points are generic over these definitions: one path runs any `Map` on host
//! slices (check, then upload → launch → download on a GPU, or the CPU body) and one on device
//! buffers (check, allocate the output, launch); `Update` is the same for operations in place.
//! The CPU fallback and the launchers import their operand types from here, not from each other.

pub mod activations;
pub mod convert;
pub mod elementwise;
pub mod gemv;
pub mod neuromorphic;
pub mod nn;
pub mod norms;
pub mod random;
pub mod reductions;
pub mod shape;
pub mod softmax;
pub mod transpose;

use std::sync::Arc;

use crate::driver::{CudaStream, CudaView, CudaViewMut, DeviceRepr};
use crate::error::Result;
use crate::kernels::Kernels;

/// An operation with `N` inputs of `In` and one new output of `Out`.
pub(crate) trait Map<const N: usize>: Copy {
    /// The inputs' element type.
    type In: DeviceRepr;
    /// The output's element type.
    type Out: DeviceRepr;

    /// Checks the inputs' lengths; the output's length.
    fn check(self, lens: [usize; N]) -> Result<usize>;

    /// Launches the kernel computing `out` from `inputs` (checked) on `stream`.
    fn launch(
        self,
        kernels: &Kernels,
        stream: &Arc<CudaStream>,
        inputs: [&CudaView<'_, Self::In>; N],
        out: &mut CudaViewMut<'_, Self::Out>,
    ) -> Result<()>;

    /// The CPU body: the output of `len` elements (the length [`check`](Self::check) gave, not 0)
    /// from the checked `inputs`.
    fn cpu(self, inputs: [&[Self::In]; N], len: usize) -> Result<Vec<Self::Out>>;
}

/// An operation that updates `x` in place from `N` further inputs of `In`.
pub(crate) trait Update<const N: usize>: Copy {
    /// The element type of the updated buffer.
    type Elem: DeviceRepr;
    /// The further inputs' element type.
    type In: DeviceRepr;

    /// Checks the lengths of `x` (`len`) and of the further inputs.
    fn check(self, len: usize, lens: [usize; N]) -> Result<()>;

    /// Launches the kernel updating `x` (checked) on `stream`.
    fn launch(
        self,
        kernels: &Kernels,
        stream: &Arc<CudaStream>,
        x: &mut CudaViewMut<'_, Self::Elem>,
        inputs: [&CudaView<'_, Self::In>; N],
    ) -> Result<()>;

    /// The CPU body, on checked operands (`x` not empty).
    fn cpu(self, x: &mut [Self::Elem], inputs: [&[Self::In]; N]);
}
