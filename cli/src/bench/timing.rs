//! Timing: warm-up, repeats, medians.

use std::sync::Arc;
use std::time::Instant;

use prism_gpu::driver::CudaStream;
use prism_gpu::Result;

/// How many untimed warm-up runs and timed repeats to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Untimed runs first (module loads, JIT, allocator warm-up, clocks).
    pub warmup: usize,
    /// Timed runs; the median is reported.
    pub repeats: usize,
}

impl Settings {
    /// A quick run: few repeats.
    pub const QUICK: Settings = Settings { warmup: 3, repeats: 10 };
    /// A full run: more repeats for steadier medians.
    pub const FULL: Settings = Settings { warmup: 5, repeats: 30 };
}

/// The distribution of repeated timings, in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// Median of the repeats.
    pub median_ms: f64,
    /// Fastest repeat.
    pub min_ms: f64,
    /// Slowest repeat.
    pub max_ms: f64,
    /// Number of timed repeats.
    pub repeats: usize,
}

impl Measured {
    /// The distribution of `samples` (at least one).
    pub(super) fn from_samples(mut samples: Vec<f64>) -> Self {
        assert!(!samples.is_empty(), "at least one repeat is timed");
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        let median = if n % 2 == 1 { samples[n / 2] } else { (samples[n / 2 - 1] + samples[n / 2]) / 2.0 };
        Measured { median_ms: median, min_ms: samples[0], max_ms: samples[n - 1], repeats: n }
    }
}

/// Times GPU work on `stream` with CUDA events around each repeat. `run(i)` enqueues one repeat;
/// `i` counts every call (warm-up included) so callers can rotate through several input sets and
/// keep them from sitting in L2.
pub fn time_gpu(
    stream: &Arc<CudaStream>,
    settings: Settings,
    mut run: impl FnMut(usize) -> Result<()>,
) -> Result<Measured> {
    let ctx = stream.context();
    let flags = Some(prism_gpu::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let (start, end) = (ctx.new_event(flags)?, ctx.new_event(flags)?);
    for i in 0..settings.warmup {
        run(i)?;
    }
    stream.synchronize()?;
    let mut samples = Vec::with_capacity(settings.repeats);
    for i in 0..settings.repeats.max(1) {
        start.record(stream)?;
        run(settings.warmup + i)?;
        end.record(stream)?;
        end.synchronize()?;
        samples.push(f64::from(start.elapsed_ms(&end)?));
    }
    Ok(Measured::from_samples(samples))
}

/// Times host-side work (launch submission, allocation) with the monotonic clock. `run(i)` does
/// one repeat and returns what it must wait for before the clock stops (nothing to wait for: `Ok`).
pub fn time_host(settings: Settings, mut run: impl FnMut(usize) -> Result<()>) -> Result<Measured> {
    for i in 0..settings.warmup {
        run(i)?;
    }
    let mut samples = Vec::with_capacity(settings.repeats);
    for i in 0..settings.repeats.max(1) {
        let start = Instant::now();
        run(settings.warmup + i)?;
        samples.push(start.elapsed().as_secs_f64() * 1e3);
    }
    Ok(Measured::from_samples(samples))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        let m = Measured::from_samples(vec![3.0, 1.0, 2.0]);
        assert_eq!((m.median_ms, m.min_ms, m.max_ms, m.repeats), (2.0, 1.0, 3.0, 3));
        assert_eq!(Measured::from_samples(vec![4.0, 1.0, 2.0, 3.0]).median_ms, 2.5);
    }

    #[test]
    fn host_timing_runs_warmup_then_repeats_in_order() {
        let mut seen = Vec::new();
        let m = time_host(Settings { warmup: 2, repeats: 3 }, |i| {
            seen.push(i);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [0, 1, 2, 3, 4]);
        assert_eq!(m.repeats, 3);
        assert!(m.min_ms >= 0.0 && m.min_ms <= m.median_ms && m.median_ms <= m.max_ms);
    }
}
