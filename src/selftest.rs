//! `prism-gpu selftest`: every operation on random data, on the GPU and on the CPU fallback, each
//! compared with an f64 reference.

use std::fmt::Write as _;

use crate::error::Result;
use crate::runtime::ProductionGpuRuntime;

/// A small, fast, seedable generator (SplitMix64) for test data; not for cryptography.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// A generator seeded from the clock, so every run draws fresh inputs.
    pub fn from_time() -> Self {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        Self::new(nanos as u64 ^ u64::from(std::process::id()).rotate_left(32))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        let unit = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * unit
    }

    /// `n` values uniform in `[lo, hi)`.
    pub fn vec(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
}

/// One operation's result in the self-test.
#[derive(Debug, Clone)]
pub struct Check {
    /// The operation and its size.
    pub op: String,
    /// Largest |GPU - CPU|, when a GPU ran it.
    pub gpu_vs_cpu: Option<f64>,
    /// Largest error of the GPU result against the f64 reference, relative to max(1, |reference|).
    pub gpu_error: Option<f64>,
    /// Largest error of the CPU result against the f64 reference, likewise.
    pub cpu_error: f64,
    /// The largest error accepted.
    pub tolerance: f64,
}

impl Check {
    /// Whether every measured error is within the tolerance (NaN never is).
    pub fn passed(&self) -> bool {
        let within = |e: f64| e <= self.tolerance;
        within(self.cpu_error) && self.gpu_error.is_none_or(within)
    }
}

/// Largest `|got - want| / max(1, |want|)`; infinite when lengths differ, NaN propagates.
pub fn max_error(got: &[f32], want: &[f64]) -> f64 {
    if got.len() != want.len() {
        return f64::INFINITY;
    }
    got.iter().zip(want).map(|(&g, &w)| (f64::from(g) - w).abs() / w.abs().max(1.0)).fold(0.0, |m, e| {
        if e.is_nan() || m.is_nan() {
            f64::NAN
        } else {
            m.max(e)
        }
    })
}

/// Largest `|a - b|` between two results of one operation.
pub fn max_difference(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    a.iter().zip(b).map(|(&x, &y)| (f64::from(x) - f64::from(y)).abs()).fold(0.0, f64::max)
}

type Operation<'a> = Box<dyn Fn(&ProductionGpuRuntime) -> Result<Vec<f32>> + 'a>;

/// Runs `op` on the CPU runtime and, when given, the GPU runtime, against `reference`.
fn check(
    name: String,
    gpu: Option<&ProductionGpuRuntime>,
    cpu: &ProductionGpuRuntime,
    op: Operation<'_>,
    reference: &[f64],
    tolerance: f64,
) -> Result<Check> {
    let on_cpu = op(cpu)?;
    let on_gpu = gpu.map(&op).transpose()?;
    Ok(Check {
        op: name,
        gpu_vs_cpu: on_gpu.as_deref().map(|g| max_difference(g, &on_cpu)),
        gpu_error: on_gpu.as_deref().map(|g| max_error(g, reference)),
        cpu_error: max_error(&on_cpu, reference),
        tolerance,
    })
}

/// Every operation of the runtime, on fresh random inputs from `rng`, at odd sizes.
pub fn run(
    gpu: Option<&ProductionGpuRuntime>,
    cpu: &ProductionGpuRuntime,
    rng: &mut SplitMix64,
) -> Result<Vec<Check>> {
    let n = 1_000_003;
    let a = rng.vec(n, -2.0, 2.0);
    let b = rng.vec(n, 0.5, 3.0); // away from zero: also the divisor
    let alpha = rng.uniform(-2.0, 2.0);
    let wide = |f: &dyn Fn(f64, f64) -> f64| -> Vec<f64> {
        a.iter().zip(&b).map(|(&x, &y)| f(f64::from(x), f64::from(y))).collect()
    };
    let f32_tolerance = 1e-6;
    let label = |op: &str| format!("{op} [{n}]");
    let mut checks = vec![
        check(label("add"), gpu, cpu, Box::new(|r| r.add(&a, &b)), &wide(&|x, y| x + y), f32_tolerance)?,
        check(label("sub"), gpu, cpu, Box::new(|r| r.sub(&a, &b)), &wide(&|x, y| x - y), f32_tolerance)?,
        check(label("mul"), gpu, cpu, Box::new(|r| r.mul(&a, &b)), &wide(&|x, y| x * y), f32_tolerance)?,
        check(label("div"), gpu, cpu, Box::new(|r| r.div(&a, &b)), &wide(&|x, y| x / y), f32_tolerance)?,
        check(
            label("axpy"),
            gpu,
            cpu,
            Box::new(|r| r.axpy(alpha, &a, &b)),
            &wide(&|x, y| f64::from(alpha) * x + y),
            f32_tolerance,
        )?,
        check(
            label("scale"),
            gpu,
            cpu,
            Box::new(|r| r.scale(alpha, &a)),
            &wide(&|x, _| f64::from(alpha) * x),
            f32_tolerance,
        )?,
        check(label("fill"), gpu, cpu, Box::new(|r| r.fill(n, alpha)), &vec![f64::from(alpha); n], 0.0)?,
    ];
    checks.extend(ProductionGpuRuntime::gemm_selftest(gpu, cpu, rng)?);
    Ok(checks)
}

/// The checks as a Markdown table.
pub fn table(checks: &[Check]) -> String {
    let show = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2e}"));
    let mut out = String::from(
        "| operation | max abs GPU-CPU | GPU err vs f64 | CPU err vs f64 | tolerance | ok |\n|---|---|---|---|---|---|\n",
    );
    for c in checks {
        writeln!(
            out,
            "| {} | {} | {} | {:.2e} | {:.0e} | {} |",
            c.op,
            show(c.gpu_vs_cpu),
            show(c.gpu_error),
            c.cpu_error,
            c.tolerance,
            if c.passed() { "yes" } else { "NO" }
        )
        .expect("writing to a String");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_relative_and_nan_fails() {
        assert_eq!(max_error(&[1.0, 200.0], &[1.0, 202.0]), 0.01);
        assert!(max_error(&[f32::NAN], &[1.0]).is_nan());
        assert_eq!(max_error(&[1.0], &[1.0, 2.0]), f64::INFINITY);
        let c = Check {
            op: "x".into(),
            gpu_vs_cpu: None,
            gpu_error: Some(f64::NAN),
            cpu_error: 0.0,
            tolerance: 1.0,
        };
        assert!(!c.passed());
    }

    #[test]
    fn the_cpu_fallback_passes_its_own_selftest() {
        let checks = run(None, &ProductionGpuRuntime::cpu(), &mut SplitMix64::from_time()).unwrap();
        assert!(checks.len() >= 7);
        for c in &checks {
            assert!(c.passed(), "{}", table(&checks));
        }
    }
}
