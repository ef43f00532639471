//! Double-precision GEMM on `cuda/gemm_f64.cu`: FP64 tensor cores (DMMA through mma.sync, sm_80+)
//! for products large enough to fill 128 x 128 tiles, a SIMT kernel otherwise. The layout rules are
//! [`Gemm`]'s; the scales are [`GemmF64`]'s f64 `alpha` and `beta`.

use std::fmt;
use std::sync::Arc;

use super::dispatch::Device;
use super::plan::layout_char;
use super::table::{self, Choice, Class, Tuned};
use super::tiled::{launch_common, CommonKernel};
use super::{device, function_with_smem, Gemm, GemmF64};
use crate::driver::{CudaStream, CudaView, CudaViewMut};
use crate::error::{Error, Result};
use crate::kernels::args::{CheckedPtr as _, CheckedPtrMut as _};
use crate::kernels::Kernels;

/// Output tile (rows and columns) of the DMMA kernels.
const DMMA_TILE: usize = 128;
/// Their dynamic shared memory: 3 stages of two 2560-double operand tiles (more than sm_86 and
/// sm_89 let a block hold: those take the SIMT kernel).
const DMMA_SMEM: u32 = 122_880;
/// Output tile of the SIMT kernel (one output per thread).
const SIMT_TILE: usize = 16;
/// Products with fewer outputs (m·n) or less work (m·n·k) than these run on the SIMT kernel ...
const DMMA_MIN_OUTPUTS: u128 = 4096;
const DMMA_MIN_VOLUME: u128 = 1 << 18;
/// ... and so do those narrower than this on either side (gemv-shaped: a 128-wide tile would be
/// mostly empty).
const DMMA_MIN_SIDE: usize = 32;

/// The kernel family chosen for one f64 GEMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlanF64 {
    /// `gemm_f64_simt`: CUDA cores, 16 x 16 tiles.
    Simt,
    /// `gemm_f64_dmma_<layout>`: FP64 tensor cores, 128 x 128 tiles.
    Dmma,
}

/// Picks the kernel for `g` on a device of compute capability `capability` whose blocks may opt
/// into `shared_optin` bytes of shared memory.
pub fn plan(g: &Gemm, capability: (i32, i32), shared_optin: u32) -> PlanF64 {
    let (m, n, k) = (g.m as u128, g.n as u128, g.k as u128);
    let small = m * n < DMMA_MIN_OUTPUTS || m * n * k < DMMA_MIN_VOLUME;
    let narrow = g.m.min(g.n) < DMMA_MIN_SIDE;
    if capability.0 < 8 || g.k == 0 || small || narrow || shared_optin < DMMA_SMEM {
        PlanF64::Simt
    } else {
        PlanF64::Dmma
    }
}

impl PlanF64 {
    /// Both kernels, in the tuner's order.
    pub const ALL: [PlanF64; 2] = [PlanF64::Simt, PlanF64::Dmma];

    /// [`Error::Shape`] naming why a device of compute capability `capability` whose blocks may
    /// opt into `shared_optin` bytes of shared memory cannot run this kernel for `g`.
    pub fn check(self, g: &Gemm, capability: (i32, i32), shared_optin: u32) -> Result<()> {
        let why = match self {
            PlanF64::Simt => return Ok(()),
            PlanF64::Dmma if capability.0 < 8 => "FP64 tensor cores (sm_80+) for dmma".to_string(),
            PlanF64::Dmma if shared_optin < DMMA_SMEM => {
                format!("{DMMA_SMEM} bytes of shared memory per block for dmma")
            }
            PlanF64::Dmma if g.k == 0 => "k >= 1 for dmma".to_string(),
            PlanF64::Dmma => return Ok(()),
        };
        Err(Error::Shape {
            op: "gemm plan",
            expected: why,
            got: format!("{}x{}x{} on sm_{}{}", g.m, g.n, g.k, capability.0, capability.1),
        })
    }
}

/// The table's name: `simt` or `dmma`.
impl fmt::Display for PlanF64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PlanF64::Simt => "simt",
            PlanF64::Dmma => "dmma",
        })
    }
}

impl std::str::FromStr for PlanF64 {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        match text.trim() {
            "simt" => Ok(PlanF64::Simt),
            "dmma" => Ok(PlanF64::Dmma),
            other => Err(format!("unknown f64 kernel `{other}` (simt, dmma)")),
        }
    }
}

/// The kernel for `g` on `device`: the tuning table's for this shape or its nearest tuned class
/// when the device can run it, else [`plan`]'s.
pub(super) fn tuned(g: &Gemm, device: &Device) -> PlanF64 {
    let entry = table::for_device(device).nearest(&Class::of(g, Tuned::F64));
    match entry.map(|e| e.choice) {
        Some(Choice::F64(p)) if p.check(g, device.capability, device.shared_optin).is_ok() => p,
        _ => plan(g, device.capability, device.shared_optin),
    }
}

/// `C = alpha * op(A) * op(B) + beta * C` in f64 on device buffers, ordered on `stream`, for every
/// batch entry of `g.layout` (see [`Gemm`]). Checks the shape first ([`Error::Shape`]);
/// m, n or batch 0 does nothing, k = 0 scales C by beta (beta 0 writes zeros without reading C).
pub fn gemm_f64(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    g: &GemmF64,
    a: &CudaView<f64>,
    b: &CudaView<f64>,
    c: &mut CudaViewMut<f64>,
) -> Result<()> {
    g.layout.validate(a.len(), b.len(), c.len())?;
    if nothing_to_do(g) {
        return Ok(());
    }
    let (pa, _read_a) = a.checked_ptr(stream)?;
    let (pb, _read_b) = b.checked_ptr(stream)?;
    let (pc, _write_c) = c.checked_ptr_mut(stream)?;
    // SAFETY: `validate` checked that the three views hold every element `g` touches.
    unsafe { run(kernels, stream, g, [pa, pb, pc], None) }
}

/// [`gemm_f64`] on raw device addresses `[A, B, C]` (for the cuBLAS-shaped API): the same checks
/// of the layout except the operands' lengths, the same kernels.
///
/// # Safety
/// `a`, `b` and `c` must be addresses in live device allocations of `kernels`' context that hold
/// the `g.layout.min_lens()` f64 elements from there on; nothing else may write A or B, or use C,
/// until the work enqueued on `stream` is done.
pub unsafe fn gemm_f64_raw(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    g: &GemmF64,
    ptrs: [u64; 3],
) -> Result<()> {
    g.layout.validate(usize::MAX, usize::MAX, usize::MAX)?;
    if nothing_to_do(g) {
        return Ok(());
    }
    // SAFETY: the caller vouches for the operands.
    unsafe { run(kernels, stream, g, ptrs, None) }
}

/// Nothing to compute or write: an empty product, or k = 0 with C kept as it is.
fn nothing_to_do(g: &GemmF64) -> bool {
    g.layout.is_empty() || (g.layout.k == 0 && g.beta == 1.0)
}

/// The launches of a validated, non-empty `g` on `[A, B, C]`: batches of at most 65 535 entries
/// (grid.z) and row blocks within grid.y's limit per launch. `choice`: the caller's kernel (checked
/// for this device and shape) instead of the dispatcher's.
///
/// # Safety
/// As [`gemm_f64_raw`]; `g.layout` has passed `validate`.
pub(super) unsafe fn run(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    g: &GemmF64,
    [pa, pb, pc]: [u64; 3],
    choice: Option<PlanF64>,
) -> Result<()> {
    let l = &g.layout;
    let device = device(kernels)?;
    let plan = match choice {
        Some(p) => {
            p.check(l, device.capability, device.shared_optin)?;
            p
        }
        None => tuned(l, &device),
    };
    let (tile, smem, function) = match plan {
        PlanF64::Simt => (SIMT_TILE, 0, kernels.function("gemm_f64_simt")?),
        PlanF64::Dmma => {
            let name = format!("gemm_f64_dmma_{}{}", layout_char(l.trans_a), layout_char(l.trans_b));
            (DMMA_TILE, DMMA_SMEM, function_with_smem(kernels, &name, DMMA_SMEM)?)
        }
    };
    let kernel = CommonKernel { function: &function, tile: (tile, tile), smem, flags: plan == PlanF64::Simt };
    let sizes = [size_of::<f64>(); 2];
    // SAFETY: the entries take the common list with f64 scales and no epilogue, the transpose
    // flags only on the SIMT kernel (cuda/gemm_f64.cu: the DMMA entries have their layout in the
    // name); `validate` checked the operands, which the caller vouches for.
    unsafe { launch_common(stream, &kernel, l, (g.alpha, g.beta), [pa, pb, pc], sizes, None) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_products_on_tensor_core_devices_use_dmma() {
        // (capability, opt-in shared memory per block) of an H100, an A100, an RTX 4090, a V100.
        let (h100, a100, ada, volta) =
            (((9, 0), 232_448), ((8, 0), 166_912), ((8, 9), 101_376), ((7, 0), 98_304));
        let on = |g: Gemm, (capability, optin): ((i32, i32), u32)| plan(&g, capability, optin);
        let g = Gemm::new(4096, 4096, 4096);
        assert_eq!(on(g, h100), PlanF64::Dmma);
        assert_eq!(on(g, a100), PlanF64::Dmma);
        // sm_86 / sm_89 blocks cannot hold the DMMA kernels' 122880 bytes.
        assert_eq!(on(g, ada), PlanF64::Simt);
        assert_eq!(on(g, volta), PlanF64::Simt);
        assert_eq!(on(Gemm::new(1001, 777, 333).transposed(true, false), h100), PlanF64::Dmma);
        // Tiny, k = 0 or gemv-shaped: SIMT.
        assert_eq!(on(Gemm::new(16, 16, 16), h100), PlanF64::Simt);
        assert_eq!(on(Gemm::new(64, 64, 63), h100), PlanF64::Simt);
        assert_eq!(on(Gemm::new(4096, 4096, 0), h100), PlanF64::Simt);
        assert_eq!(on(Gemm::new(8192, 1, 8192), h100), PlanF64::Simt);
        assert_eq!(on(Gemm::new(31, 8192, 8192), h100), PlanF64::Simt);
    }
}
