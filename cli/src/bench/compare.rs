//! What the side-by-side API benchmarks (`cublas_api`, `cublaslt_api`) share: the element types
//! they upload (rounded from f32 inputs) and read back (as f64), and the check that our result
//! agrees with the real library's before a figure is kept.

use half::{bf16, f16};

use prism_gpu::{Error, Result};

/// An element type the cases upload and read back.
pub trait Element: Copy {
    /// Rounds an f32 input to this type.
    fn from_f32(x: f32) -> Self;
    /// Widens to f64 (exact).
    fn to_f64(self) -> f64;
}
impl Element for f32 {
    fn from_f32(x: f32) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}
impl Element for f64 {
    fn from_f32(x: f32) -> Self {
        f64::from(x)
    }
    fn to_f64(self) -> f64 {
        self
    }
}
impl Element for bf16 {
    fn from_f32(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
}
impl Element for f16 {
    fn from_f32(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
}

/// Fails (naming `op`, the case and the `library`) unless `ours` is within `tolerance` of
/// `theirs`, relative Frobenius.
pub fn agree(
    op: &'static str,
    case: &str,
    library: &str,
    tolerance: f64,
    ours: &[f64],
    theirs: &[f64],
) -> Result<()> {
    let diff: f64 = ours.iter().zip(theirs).map(|(x, y)| (x - y).powi(2)).sum();
    let norm: f64 = theirs.iter().map(|y| y * y).sum();
    let rel = (diff / norm.max(f64::MIN_POSITIVE)).sqrt();
    if rel.is_nan() || rel > tolerance || ours.len() != theirs.len() {
        return Err(Error::Shape {
            op,
            expected: format!("{case} within {tolerance:.0e} of {library}'s result"),
            got: format!("relative difference {rel:.3e}"),
        });
    }
    Ok(())
}

/// Defines `median_ms(stream, settings, inner, once)`: the median milliseconds of `inner`
/// back-to-back `once()` per sample, CUDA events, after `settings.warmup` samples of warm-up, each
/// sample queued behind a [`Gate`](super::timing::Gate) as [`time_gpu`](super::time_gpu) does. A macro
/// because each side of a benchmark (`caller!` in cublas_api and cublaslt_api, the cuBLAS anchor in
/// gemm) expands it against its own crate's driver: `Arc`, `CudaStream`, `CUevent_flags`, `Settings`,
/// `Res`, `err` and that crate's `driver` as `driver_api` must be in scope where it is used.
macro_rules! event_median_ms {
    () => {
        pub fn median_ms(
            stream: &Arc<CudaStream>,
            settings: Settings,
            inner: usize,
            mut once: impl FnMut() -> Res<()>,
        ) -> Res<f64> {
            let ctx = stream.context();
            let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
            let (start, end) = (ctx.new_event(flags).map_err(err)?, ctx.new_event(flags).map_err(err)?);
            for _ in 0..settings.warmup * inner {
                once()?;
            }
            stream.synchronize().map_err(err)?;
            let mut samples = Vec::new();
            for _ in 0..settings.repeats.max(1) {
                ctx.bind_to_thread().map_err(err)?;
                let gate = $crate::bench::timing::Gate::close(|hold, state| {
                    // SAFETY: `hold` makes no CUDA call and `state` stays alive until it has run
                    // (`Gate`).
                    unsafe {
                        driver_api::result::stream::launch_host_function(stream.cu_stream(), hold, state)
                    }
                    .map_err(err)
                })?;
                start.record(stream).map_err(err)?;
                for _ in 0..inner {
                    once()?;
                }
                end.record(stream).map_err(err)?;
                gate.open().map_err(err)?;
                end.synchronize().map_err(err)?;
                samples.push(f64::from(start.elapsed_ms(&end).map_err(err)?));
            }
            Ok($crate::bench::timing::Measured::from_samples(samples).median_ms)
        }
    };
}
pub(crate) use event_median_ms;
