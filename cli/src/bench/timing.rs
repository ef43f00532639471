//! Timing: warm-up, repeats, medians, and the gate that holds a stream while a repeat is queued.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
/// keep them from sitting in L2. Each repeat is queued behind a gate (a host function that holds
/// the stream until the repeat is queued), so the events time the GPU's work alone.
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
        ctx.bind_to_thread()?;
        let gate = Gate::close(|hold, state| {
            // SAFETY: `hold` makes no CUDA call and `state` stays alive until it has run (`Gate`).
            unsafe {
                prism_gpu::driver::result::stream::launch_host_function(stream.cu_stream(), hold, state)
            }
        })?;
        start.record(stream)?;
        run(settings.warmup + i)?;
        end.record(stream)?;
        gate.open().map_err(|why| prism_gpu::Error::Shape {
            op: "bench timing",
            expected: "work that does not wait for its own stream".into(),
            got: why.into(),
        })?;
        end.synchronize()?;
        samples.push(f64::from(start.elapsed_ms(&end)?));
    }
    Ok(Measured::from_samples(samples))
}

/// Holds a stream at a host function until [`Gate::open`], so that a repeat is wholly queued before
/// the GPU reaches its start event: the events then time the GPU's work, not the host's submission of
/// it nor an idle GPU's launch latency, which differ between the libraries compared (nvbench holds
/// the stream the same way, with a kernel). Work queued behind a gate must not wait for that stream
/// (a synchronizing call would wait for the gate): the host function gives up after [`GATE_LIMIT`] and
/// [`Gate::open`] reports it. Under a profiler the gate does not hold the stream ([`under_a_profiler`]).
pub(crate) struct Gate {
    state: Option<Box<GateState>>,
}

#[derive(Default)]
struct GateState {
    open: AtomicBool,
    gave_up: AtomicBool,
    done: AtomicBool,
}

/// Whether a CUDA tool (ncu, nsys) is injected into this process: they serialize launches, so a
/// launch behind a held stream would wait for the gate and the gate for that launch; under them the
/// stream is not held (their own timings replace the events' anyway).
fn under_a_profiler() -> bool {
    std::env::var_os("CUDA_INJECTION64_PATH").is_some()
}

/// How long the held stream waits for [`Gate::open`] (far beyond queuing any repeat).
const GATE_LIMIT: Duration = Duration::from_secs(2);

/// The host function: waits until the gate opens (or [`GATE_LIMIT`] passes), then lets the stream go on.
///
/// # Safety
/// `state` must point to a live `GateState` until this function has set its `done`.
unsafe extern "C" fn hold(state: *mut c_void) {
    // SAFETY: `Gate::close` passes its boxed state, which `Gate` frees only once `done` is set.
    let state = unsafe { &*(state as *const GateState) };
    let since = Instant::now();
    while !state.open.load(Ordering::Acquire) {
        if since.elapsed() > GATE_LIMIT {
            state.gave_up.store(true, Ordering::Relaxed);
            break;
        }
        std::hint::spin_loop();
    }
    state.done.store(true, Ordering::Release);
}

impl Gate {
    /// Holds a stream: `enqueue(hold, state)` must queue `hold(state)` on it as a host function.
    pub(crate) fn close<E>(
        enqueue: impl FnOnce(unsafe extern "C" fn(*mut c_void), *mut c_void) -> std::result::Result<(), E>,
    ) -> std::result::Result<Gate, E> {
        if under_a_profiler() {
            return Ok(Gate { state: None });
        }
        let state = Box::<GateState>::default();
        enqueue(hold, &*state as *const GateState as *mut c_void)?;
        Ok(Gate { state: Some(state) })
    }

    /// Lets the stream go on once it has reached the gate; an error if the gate had given up waiting
    /// (the work queued behind it waited for the stream).
    pub(crate) fn open(mut self) -> std::result::Result<(), &'static str> {
        if self.state.is_none() {
            return Ok(()); // never closed: under a profiler
        }
        match self.release() {
            None => Err("the stream did not reach the gate"),
            Some(state) if state.gave_up.load(Ordering::Relaxed) => {
                Err("the stream was held for the whole gate limit: the timed work waited for its own stream")
            }
            Some(_) => Ok(()),
        }
    }

    /// Opens the gate and waits for the host function to finish; the state, or `None` where the stream
    /// did not reach the gate within [`GATE_LIMIT`] (a failed context), whose state is then leaked, since
    /// the host function may still read it.
    fn release(&mut self) -> Option<Box<GateState>> {
        let state = self.state.take()?;
        state.open.store(true, Ordering::Release);
        let since = Instant::now();
        while !state.done.load(Ordering::Acquire) {
            if since.elapsed() > GATE_LIMIT {
                std::mem::forget(state);
                return None;
            }
            std::thread::yield_now();
        }
        Some(state)
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.release();
    }
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
    fn a_gate_holds_its_host_function_until_opened() {
        let (returned, has_returned) = std::sync::mpsc::channel();
        let gate = Gate::close(|hold, state| {
            let state = state as usize;
            std::thread::spawn(move || {
                // SAFETY: the gate keeps its state alive until `hold` has set `done`.
                unsafe { hold(state as *mut c_void) };
                returned.send(()).unwrap();
            });
            Ok::<(), ()>(())
        })
        .unwrap();
        let early = has_returned.recv_timeout(Duration::from_millis(100));
        assert!(early.is_err(), "the host function returned before the gate opened");
        gate.open().unwrap();
        has_returned.recv_timeout(GATE_LIMIT).unwrap();
    }

    #[test]
    fn a_gate_that_could_not_be_queued_reports_why() {
        assert_eq!(Gate::close(|_, _| Err("no stream")).err(), Some("no stream"));
    }

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
