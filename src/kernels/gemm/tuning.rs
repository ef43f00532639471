//! For the tuner (`prism-gpu tune`), the benchmarks and tests: the plan a GEMM would run, every
//! kernel that can run it, and a GEMM run on a kernel of the caller's choice (checked for the
//! device, the shape and the operands first: an [`Error::Shape`](crate::Error::Shape) naming why
//! it cannot run, never a launch). Ordinary callers use [`super::gemm`], which plans by itself.

use std::sync::Arc;

pub use super::dispatch::{Device, Feed, Kernel, SplitOn, TmaReady};
pub use super::double::PlanF64;
pub use super::plan::{Launch, Plan};
pub use super::table::{Choice, Class, Entry, Table, Tuned};

use super::dispatch::{skinny_depth, skinny_rows};
use super::plan::{Family, Partials, MAX_SPLITS, SM90_WIDTHS};
use super::{effective_precision, Element, Gemm, GemmF64, Precision, RawEpilogue, Workspace};
use crate::driver::{CudaStream, CudaView, CudaViewMut};
use crate::error::Result;
use crate::kernels::args::{CheckedPtr as _, CheckedPtrMut as _};
use crate::kernels::Kernels;

/// What the dispatcher knows about `kernels`' device.
pub fn device(kernels: &Kernels) -> Result<Device> {
    super::device(kernels)
}

/// The plan [`super::gemm`] runs for `g` on these operands (checked as it checks them). A
/// product with nothing to multiply (m, n or batch 0, or k = 0) reports the small kernel, which
/// scales C.
pub fn plan_of<TIn: Element, TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    g: &Gemm,
    a: &CudaView<TIn>,
    b: &CudaView<TIn>,
) -> Result<Plan> {
    let (precision, device, tma) = context::<TIn, TOut>(kernels, stream, g, a, b)?;
    if g.is_empty() || g.k == 0 {
        return Ok(Plan { kernel: Kernel::Small, launch: Launch::Tiled(Family::Small) });
    }
    super::dispatch::plan(g, precision, &device, tma)
}

/// Which of A and B `plan`'s CUDA-core kernels copy first for these operands: f32 data that they
/// would read 4 bytes at a time (a base, pitch or row length short of whole 16-byte groups), in a
/// product large enough to pay for the copy (`[false; 2]` for other plans).
pub fn padded_copies<TIn: Element>(
    stream: &Arc<CudaStream>,
    plan: &Plan,
    g: &Gemm,
    a: &CudaView<TIn>,
    b: &CudaView<TIn>,
) -> Result<[bool; 2]> {
    let family = match plan.launch {
        Launch::Tiled(family)
        | Launch::SplitK(super::plan::SplitK { partials: Partials::Tiled(family), .. }) => family,
        _ => return Ok([false; 2]),
    };
    let (pa, _read_a) = a.checked_ptr(stream)?;
    let (pb, _read_b) = b.checked_ptr(stream)?;
    Ok(super::padded_f32::<TIn>(family, g, [pa, pb]).map_or([false; 2], |p| p.copied()))
}

/// Every kernel that can run `g` on these operands with at most `max_workspace` bytes of
/// workspace, as plans: the built-in rules' choice first, then every family with each option the
/// kernels take (sm90 widths and feeds, split-K and skinny slice counts), each once.
pub fn candidates_of<TIn: Element, TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    g: &Gemm,
    a: &CudaView<TIn>,
    b: &CudaView<TIn>,
    max_workspace: usize,
) -> Result<Vec<Plan>> {
    let (precision, device, tma) = context::<TIn, TOut>(kernels, stream, g, a, b)?;
    if g.is_empty() || g.k == 0 {
        return Ok(Vec::new());
    }
    Ok(candidates(g, precision, &device, tma, max_workspace))
}

/// The slice counts tried for split-K and skinny plans (and the rules' own), f64's included.
pub(super) const SPLITS: [u32; 16] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256];

/// [`candidates_of`] for a validated, non-empty `g` (k >= 1) at `precision` on `device`.
pub fn candidates(
    g: &Gemm,
    precision: Precision,
    device: &Device,
    tma: TmaReady,
    max_workspace: usize,
) -> Vec<Plan> {
    let mut kernels = vec![super::dispatch::heuristic(g, precision, device, tma)];
    kernels.extend(Kernel::WITHOUT_OPTIONS);
    for splits in SPLITS.into_iter().filter(|s| (2..=MAX_SPLITS).contains(s)) {
        let on =
            [SplitOn::Mma, SplitOn::Simt64].into_iter().chain(SM90_WIDTHS.map(|bn| SplitOn::Sm90 { bn }));
        kernels.extend(on.map(|on| Kernel::SplitK { splits, on }));
    }
    for &rows in skinny_rows(precision) {
        // The fewest slices that stage k, then the listed counts above it.
        let fewest = g.k.div_ceil(skinny_depth(rows, precision)).min(u32::MAX as usize) as u32;
        kernels.push(Kernel::Skinny { rows, splits: fewest.max(1) });
        kernels
            .extend(SPLITS.into_iter().filter(|&s| s > fewest).map(|splits| Kernel::Skinny { rows, splits }));
    }
    kernels.extend(super::dispatch::GEMV_COLS.map(|cols| Kernel::Gemv { cols }));
    let feeds = [Feed::InPlace, Feed::Transpose, Feed::Repitch];
    for bn in SM90_WIDTHS {
        for a in feeds {
            kernels.extend(feeds.map(|b| Kernel::Sm90 { bn, a, b }));
        }
        // A partial last wave's rows in up to 32 slices (each of its tiles on a multiprocessor of
        // its own needs no more).
        let tails = SPLITS.into_iter().filter(|s| (2..=32).contains(s));
        kernels.extend(tails.map(|splits| Kernel::Sm90Tail { bn, splits }));
    }
    let mut seen = std::collections::HashSet::new();
    kernels
        .into_iter()
        .filter(|k| seen.insert(*k))
        .filter_map(|k| k.resolve(g, precision, device, tma).ok())
        .filter(|plan| plan.workspace() <= max_workspace)
        .collect()
}

/// [`super::gemm`] on `kernel` instead of the dispatcher's choice: the same checks of `g` and the
/// operands, then `kernel` resolved for them ([`Kernel::resolve`]), whose error is returned
/// before anything is launched when the device cannot run it for `g`. k = 0 scales C by beta
/// whatever the kernel.
#[allow(clippy::too_many_arguments)] // the GEMM's operands and the kernel
pub fn gemm_with_kernel<TIn: Element, TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    workspace: &Workspace,
    g: &Gemm,
    kernel: Kernel,
    a: &CudaView<TIn>,
    b: &CudaView<TIn>,
    c: &mut CudaViewMut<TOut>,
) -> Result<()> {
    let precision = effective_precision::<TIn, TOut>(g.precision)?;
    g.validate(a.len(), b.len(), c.len())?;
    if g.is_empty() || (g.k == 0 && g.beta == 1.0) {
        return Ok(());
    }
    let (pa, _read_a) = a.checked_ptr(stream)?;
    let (pb, _read_b) = b.checked_ptr(stream)?;
    let (pc, _write_c) = c.checked_ptr_mut(stream)?;
    let none = RawEpilogue::default();
    let call =
        super::Call { kernels, stream, workspace, g, precision, operands: [pa, pb, pc], epilogue: &none };
    // SAFETY: `validate` checked that the views hold every element `g` touches; `run` resolves
    // `kernel` for `g`, the device and these operands before it launches anything.
    unsafe { super::run::<TIn, TOut>(&call, Some(kernel)) }
}

/// The f64 kernel [`super::double::gemm_f64`] runs for `g` (the layout) on `kernels`' device.
pub fn plan_f64(kernels: &Kernels, g: &Gemm) -> Result<PlanF64> {
    Ok(super::double::tuned(g, &device(kernels)?))
}

/// The f64 kernels worth timing for `g` on `kernels`' device, the dispatcher's rule first
/// ([`super::double::candidates`]).
pub fn candidates_f64(kernels: &Kernels, g: &Gemm) -> Result<Vec<PlanF64>> {
    Ok(super::double::candidates(g, &device(kernels)?))
}

/// [`super::double::gemm_f64`] on `plan` instead of the dispatcher's choice, checked first
/// ([`PlanF64::check`]).
#[allow(clippy::too_many_arguments)] // the GEMM's operands and the kernel
pub fn gemm_f64_with_plan(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    workspace: &Workspace,
    g: &GemmF64,
    plan: PlanF64,
    a: &CudaView<f64>,
    b: &CudaView<f64>,
    c: &mut CudaViewMut<f64>,
) -> Result<()> {
    g.layout.validate(a.len(), b.len(), c.len())?;
    if g.layout.is_empty() || (g.layout.k == 0 && g.beta == 1.0) {
        return Ok(());
    }
    let (pa, _read_a) = a.checked_ptr(stream)?;
    let (pb, _read_b) = b.checked_ptr(stream)?;
    let (pc, _write_c) = c.checked_ptr_mut(stream)?;
    // SAFETY: `validate` checked that the three views hold every element `g` touches; `run`
    // checks `plan` for the device and shape before it launches anything.
    unsafe { super::double::run(kernels, stream, workspace, g, [pa, pb, pc], Some(plan)) }
}

/// A candidate slower than this many times the default's median on its first run is not timed
/// further (the small kernel on a large cube would take seconds).
pub const SLOW: f64 = 4.0;
/// The best candidate must beat the default by more than this fraction to earn an entry in a
/// checked-in table (which then holds what the built-in rules get wrong, not repeats of what they
/// get right).
pub const MARGIN: f64 = 0.03;

/// Untimed and timed runs of one candidate (the median of the timed ones counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repeats {
    /// Untimed runs first (module loads, clocks).
    pub warmup: usize,
    /// Timed runs.
    pub repeats: usize,
}

/// One class tuned: the default plan, the fastest correct candidate and what was left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// What was tuned.
    pub class: Class,
    /// Its batch entries.
    pub batch: usize,
    /// The default plan and its median milliseconds.
    pub default: (String, f64),
    /// The fastest correct candidate and its median milliseconds.
    pub best: (Choice, f64),
    /// Every timed candidate (the default first) with its median milliseconds.
    pub timings: Vec<(String, f64)>,
    /// Candidates left out, with why (slow, wrong, failed).
    pub rejected: Vec<(String, String)>,
}

impl Outcome {
    /// Whether the best candidate beats the default by more than [`MARGIN`].
    pub fn worth_an_entry(&self) -> bool {
        self.best.1 < self.default.1 * (1.0 - MARGIN)
    }
}

/// How the candidates of one class are judged (by `prism-gpu tune` and by tuning on first use).
#[derive(Debug, Clone, Copy)]
pub struct Trial {
    /// What is tuned.
    pub class: Class,
    /// Its batch entries.
    pub batch: usize,
    /// Warm-up and repeats of a timing.
    pub repeats: Repeats,
    /// Whether a candidate is first run once and left out when slower than [`SLOW`] times the
    /// default (for the GEMM's many candidates, some of them far off).
    pub screen: bool,
}

impl Trial {
    /// Times `default`, then judges every other candidate against it: one that fails, whose answer
    /// is more than `tolerance` (relative Frobenius difference) from the default's, or (when
    /// screening) too slow on its first run is rejected with why; the fastest of the rest is the
    /// best. `time` runs a candidate with the given repeats, leaving its answer in `c`, and gives
    /// milliseconds per GEMM; `answer` reads `c` back.
    pub fn judge<C>(
        &self,
        default: Choice,
        candidates: impl IntoIterator<Item = Choice>,
        tolerance: f64,
        c: &mut C,
        mut time: impl FnMut(Choice, Repeats, &mut C) -> Result<f64>,
        answer: impl Fn(&C) -> Result<Vec<f64>>,
    ) -> Result<Outcome> {
        let default_ms = time(default, self.repeats, c)?;
        let reference = answer(c)?;
        let mut outcome = Outcome {
            class: self.class,
            batch: self.batch,
            default: (default.to_string(), default_ms),
            best: (default, default_ms),
            timings: vec![(default.to_string(), default_ms)],
            rejected: Vec::new(),
        };
        let first_repeats = if self.screen { Repeats { warmup: 1, repeats: 1 } } else { self.repeats };
        for candidate in candidates.into_iter().filter(|&k| k != default) {
            let name = candidate.to_string();
            let first = match time(candidate, first_repeats, c) {
                Ok(ms) => ms,
                Err(e) => {
                    outcome.rejected.push((name, format!("failed: {e}")));
                    continue;
                }
            };
            let err = relative_difference(&answer(c)?, &reference);
            if err.is_nan() || err > tolerance {
                outcome
                    .rejected
                    .push((name, format!("WRONG: relative difference {err:.2e} > {tolerance:.0e}")));
                continue;
            }
            let ms = if !self.screen {
                first
            } else if first > SLOW * default_ms {
                outcome.rejected.push((name, format!("slow: {first:.3} ms on its first run")));
                continue;
            } else {
                time(candidate, self.repeats, c)?
            };
            outcome.timings.push((name, ms));
            if ms < outcome.best.1 {
                outcome.best = (candidate, ms);
            }
        }
        Ok(outcome)
    }
}

/// Relative Frobenius difference of `got` from `want` (NaN when either holds a NaN or their
/// lengths differ).
pub fn relative_difference(got: &[f64], want: &[f64]) -> f64 {
    if got.len() != want.len() {
        return f64::NAN;
    }
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (x, y) in got.iter().zip(want) {
        diff += (x - y) * (x - y);
        norm += y * y;
    }
    (diff / norm.max(f64::MIN_POSITIVE)).sqrt()
}

/// The precision, device and TMA readiness of `g` on these operands, after `gemm`'s checks of `g`
/// against them (C's length is not known here and not needed).
fn context<TIn: Element, TOut: Element>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    g: &Gemm,
    a: &CudaView<TIn>,
    b: &CudaView<TIn>,
) -> Result<(Precision, Device, TmaReady)> {
    let precision = effective_precision::<TIn, TOut>(g.precision)?;
    g.validate(a.len(), b.len(), usize::MAX)?;
    let (pa, _read_a) = a.checked_ptr(stream)?;
    let (pb, _read_b) = b.checked_ptr(stream)?;
    Ok((precision, device(kernels)?, super::tma_ready::<TIn>(g, pa, pb)))
}

#[cfg(test)]
mod tests {
    use super::super::dispatch::testing::{ALIGNED, H100};
    use super::*;

    #[test]
    fn candidates_are_valid_distinct_and_start_with_the_rules_choice() {
        for (g, p) in [
            (Gemm::new(1, 4096, 4096), Precision::Bf16),
            (Gemm::new(128, 50257, 768).transposed(false, true), Precision::Tf32),
            (Gemm::new(257, 257, 257), Precision::F32),
            (Gemm::new(2048, 2048, 2048).transposed(true, false), Precision::Tf32),
        ] {
            let all = candidates(&g, p, &H100, ALIGNED, usize::MAX);
            assert_eq!(all[0].kernel, super::super::dispatch::heuristic(&g, p, &H100, ALIGNED));
            let distinct: std::collections::HashSet<_> = all.iter().map(|c| c.kernel).collect();
            assert_eq!(distinct.len(), all.len());
            for c in &all {
                assert_eq!(c.kernel.resolve(&g, p, &H100, ALIGNED).unwrap(), *c);
            }
        }
        // Decode bf16: skinny (16 rows: at least 8 slices of 512), sm90 and split-K on mma among them.
        let decode = candidates(&Gemm::new(1, 4096, 4096), Precision::Bf16, &H100, ALIGNED, usize::MAX);
        assert!(decode.iter().any(|c| c.kernel == Kernel::Skinny { rows: 16, splits: 8 }));
        assert!(decode.iter().any(|c| matches!(c.kernel, Kernel::Sm90 { bn: 64, .. })));
        assert!(decode.iter().any(|c| c.kernel == Kernel::SplitK { splits: 64, on: SplitOn::Mma }));
        let sm90_split = Kernel::SplitK { splits: 4, on: SplitOn::Sm90 { bn: 256 } };
        assert!(decode.iter().any(|c| c.kernel == sm90_split));
        assert!(!decode.iter().any(|c| c.kernel == Kernel::Simt64));
        // The workspace cap drops split-K's larger partial products.
        let capped = candidates(&Gemm::new(1024, 1024, 8192), Precision::F32, &H100, ALIGNED, 16 << 20);
        assert!(capped.iter().all(|c| c.workspace() <= 16 << 20));
        assert!(capped.iter().any(|c| c.kernel == Kernel::SplitK { splits: 4, on: SplitOn::Simt64 }));
        assert!(!capped.iter().any(|c| c.kernel == Kernel::SplitK { splits: 6, on: SplitOn::Simt64 }));
    }
}
