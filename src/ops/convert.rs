//! Element-type conversions (`cuda/convert.cu`): f32 to and from f16 / bf16, rounding to nearest
//! even, and f32 to f64 (exact).

use std::sync::Arc;

use half::{bf16, f16};

use crate::cpu;
use crate::driver::{CudaStream, CudaView, CudaViewMut, DeviceRepr};
use crate::error::Result;
use crate::kernels::{convert as launch, Kernels};
use crate::ops::{Gpu, Map, Views};

/// A launcher of `cuda/convert.cu`: `out = x` converted.
type Launcher<S, D> = fn(&Kernels, &Arc<CudaStream>, &CudaView<'_, S>, &mut CudaViewMut<D>) -> Result<()>;

/// The conversion of `S` elements to `D`: its launcher and its CPU body.
pub(crate) struct Convert<S, D> {
    launch: Launcher<S, D>,
    cpu: fn(&[S]) -> Vec<D>,
}

// Manual impls: the derives would ask `S: Clone` and `D: Clone`, and the fields are fn pointers.
impl<S, D> Clone for Convert<S, D> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S, D> Copy for Convert<S, D> {}

/// `f32 -> f16`, round to nearest even (beyond ±65504: infinity).
pub(crate) const F32_TO_F16: Convert<f32, f16> = Convert { launch: launch::f32_to_f16, cpu: cpu::f32_to_f16 };
/// `f16 -> f32` (exact).
pub(crate) const F16_TO_F32: Convert<f16, f32> = Convert { launch: launch::f16_to_f32, cpu: cpu::f16_to_f32 };
/// `f32 -> bf16`, round to nearest even.
pub(crate) const F32_TO_BF16: Convert<f32, bf16> =
    Convert { launch: launch::f32_to_bf16, cpu: cpu::f32_to_bf16 };
/// `bf16 -> f32` (exact).
pub(crate) const BF16_TO_F32: Convert<bf16, f32> =
    Convert { launch: launch::bf16_to_f32, cpu: cpu::bf16_to_f32 };
/// `f32 -> f64` (exact).
pub(crate) const F32_TO_F64: Convert<f32, f64> = Convert { launch: launch::f32_to_f64, cpu: cpu::f32_to_f64 };

impl<S: DeviceRepr, D: DeviceRepr> Map<1> for Convert<S, D> {
    type In = S;
    type Out = D;

    fn check(self, [x]: [usize; 1]) -> Result<usize> {
        Ok(x)
    }

    fn launch(self, gpu: Gpu, [x]: Views<S, 1>, out: &mut CudaViewMut<D>) -> Result<()> {
        (self.launch)(gpu.kernels, gpu.stream, x, out)
    }

    fn cpu(self, [x]: [&[S]; 1], _: usize) -> Result<Vec<D>> {
        Ok((self.cpu)(x))
    }
}
