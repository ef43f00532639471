//! Typed launchers for `cuda/convert.cu`: f32 to and from f16 / bf16, rounding to nearest even;
//! f32 to f64 (exact, for accumulating f32 data in f64).

use std::sync::Arc;

use half::{bf16, f16};

use crate::driver::{CudaStream, CudaView, CudaViewMut};
use crate::error::Result;
use crate::kernels::{grid, launch, shape, Kernels};

/// `out = x` converted element by element by the kernel `name`; both of one length.
fn convert<S, D>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    name: &'static str,
    x: &CudaView<S>,
    out: &mut CudaViewMut<D>,
) -> Result<()> {
    let n = shape::same_len(name, &[("x", x.len()), ("out", out.len())])?;
    if n == 0 {
        return Ok(());
    }
    let count = n as u64;
    let config = grid::elementwise(n, grid::Step::Vector);
    // SAFETY: the kernel reads n elements of x and writes n of out; both hold n.
    unsafe { launch!(kernels, stream, name, config, [x, out, &count]) }
}

/// Each conversion as a function of its own: `x` converted into `out` by the kernel named.
macro_rules! conversions {
    ($($(#[$doc:meta])* $vis:vis fn $name:ident($from:ty => $to:ty) = $kernel:literal;)+) => {$(
        $(#[$doc])*
        $vis fn $name(
            kernels: &Kernels,
            stream: &Arc<CudaStream>,
            x: &CudaView<$from>,
            out: &mut CudaViewMut<$to>,
        ) -> Result<()> {
            convert(kernels, stream, $kernel, x, out)
        }
    )+};
}

conversions! {
    /// `out = x as f16`, round to nearest even (beyond ±65504: infinity).
    pub fn f32_to_f16(f32 => f16) = "prism_f32_to_f16";
    /// `out = x as f32` (exact).
    pub fn f16_to_f32(f16 => f32) = "prism_f16_to_f32";
    /// `out = x as bf16`, round to nearest even (NaN stays NaN).
    pub fn f32_to_bf16(f32 => bf16) = "prism_f32_to_bf16";
    /// `out = x as f32` (exact).
    pub fn bf16_to_f32(bf16 => f32) = "prism_bf16_to_f32";
    /// `out = x as f64` (exact).
    pub(crate) fn f32_to_f64(f32 => f64) = "prism_f32_to_f64";
}
