//! Benchmark harness shared by `benches/` and `prism-gpu bench`: GPU work timed with CUDA events,
//! host-side costs with the monotonic clock, warm-up first, medians of repeats, and results kept as
//! rows that compare ours with the anchor measured in the same run.

#[cfg(all(any(feature = "cublas", feature = "cublaslt"), not(feature = "legacy-gpu")))]
mod compare;
pub mod cpu;
#[cfg(all(feature = "cublas", not(feature = "legacy-gpu")))]
pub mod cublas_api;
#[cfg(all(feature = "cublaslt", not(feature = "legacy-gpu")))]
pub mod cublaslt_api;
pub mod driver;
pub mod gemm;
pub mod kernels;
#[cfg(all(feature = "nccl", not(feature = "legacy-gpu")))]
pub mod nccl;
#[cfg(not(feature = "legacy-gpu"))]
pub mod nvrtc;
pub mod plot;
pub mod report;
pub mod suite;
pub mod sweep;
mod timing;
#[cfg(not(feature = "legacy-gpu"))]
pub mod tune;

pub use timing::{time_gpu, time_host, Measured, Settings};

/// One benchmark result: our figure beside the anchor's, both from the same run.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Benchmark group (`launch`, `memory`, `kernels`, `gemm`, ...).
    pub group: String,
    /// What was measured (`relu 2^28 f32`, `sgemm 4096`, ...).
    pub name: String,
    /// Series and size for plots: rows with the same series are drawn as one line against `size`
    /// (e.g. series `bf16`, size 4096 for a GEMM row); `None` for rows that are not part of one.
    pub series: Option<(String, f64)>,
    /// Our figure in `unit`.
    pub ours: f64,
    /// The anchor's name (`cudarc 0.19`, `cuBLAS`, `D2D copy`, `raw driver loop`).
    pub anchor: String,
    /// The anchor's figure in `unit`, when it could be measured.
    pub anchor_value: Option<f64>,
    /// The unit (`us`, `GB/s`, `TFLOP/s`).
    pub unit: String,
    /// Whether a larger figure is better (throughputs) or smaller (latencies).
    pub higher_is_better: bool,
    /// The kernel and configuration that produced our figure, where one choice did (GEMM rows:
    /// the dispatcher's plan, e.g. `sm90 bn=128 a=inplace b=inplace`).
    pub kernel: Option<String>,
}

impl Row {
    /// Ours relative to the anchor, oriented so that above 1.0 means we are better.
    pub fn ratio(&self) -> Option<f64> {
        let anchor = self.anchor_value?;
        Some(if self.higher_is_better { self.ours / anchor } else { anchor / self.ours })
    }
}

/// Bytes per second to GB/s.
pub fn gigabytes_per_second(bytes: f64, millis: f64) -> f64 {
    bytes / (millis * 1e-3) / 1e9
}

/// Floating-point operations to TFLOP/s.
pub fn teraflops(flops: f64, millis: f64) -> f64 {
    flops / (millis * 1e-3) / 1e12
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_point_the_right_way() {
        let mut row = Row {
            group: "g".into(),
            name: "n".into(),
            series: None,
            ours: 2.0,
            anchor: "a".into(),
            anchor_value: Some(4.0),
            unit: "us".into(),
            higher_is_better: false,
            kernel: None,
        };
        assert_eq!(row.ratio(), Some(2.0)); // half the latency: twice as good
        row.higher_is_better = true;
        assert_eq!(row.ratio(), Some(0.5));
        row.anchor_value = None;
        assert_eq!(row.ratio(), None);
        assert_eq!(gigabytes_per_second(3e9, 1000.0), 3.0);
        assert_eq!(teraflops(2e12, 500.0), 4.0);
    }
}
