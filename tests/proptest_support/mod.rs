//! The property-test harness shared by `proptest_cpu`, `proptest_no_driver` and
//! `proptest_gpu`: a seeded proptest runner that prints its seed and case count, value strategies
//! with NaN/Inf, and comparisons against f64 references.
#![allow(dead_code)] // each test binary uses a different subset

pub mod ops;

use std::fmt::Debug;
use std::time::{SystemTime, UNIX_EPOCH};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

/// The seed of this run: `$PRISM_PROPTEST_SEED` when set (to replay a failure), else the clock.
pub fn seed() -> u64 {
    match std::env::var("PRISM_PROPTEST_SEED") {
        Ok(s) => s.trim().parse().expect("PRISM_PROPTEST_SEED must be a u64"),
        Err(_) => SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64),
    }
}

/// A property suite: the case count of each property, whose sum is at least `least`.
pub struct Suite {
    pub name: &'static str,
    pub least: u32,
    pub cases: &'static [(&'static str, u32)],
}

impl Suite {
    /// The case count of property `name`.
    pub fn cases(&self, name: &str) -> u32 {
        self.cases.iter().find(|(n, _)| *n == name).map(|&(_, c)| c).expect("every property has a case count")
    }

    /// Prints the case count of each property and their total, which must be at least `least`.
    pub fn check_budget(&self) {
        let (suite, least) = (self.name, self.least);
        let total: u32 = self.cases.iter().map(|&(_, c)| c).sum();
        for (name, c) in self.cases {
            eprintln!("{name:>24}: {c}");
        }
        eprintln!("property cases in {suite}: {total}");
        assert!(total >= least, "{suite} runs {total} property cases, fewer than {least}");
    }
}

/// Runs `test` on `cases` values of `strategy` from a printed seed; a failure (an `Err` from a
/// `prop_assert`, or a panic in the code under test) shrinks and panics with the minimal input.
pub fn check<S>(name: &str, cases: u32, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S: Strategy,
    S::Value: Debug,
{
    let base = seed();
    let seed = base ^ fnv(name);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config { cases, failure_persistence: None, max_shrink_iters: 4096, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let result = runner.run(&strategy, test);
    eprintln!("property {name}: {cases} cases (replay: PRISM_PROPTEST_SEED={base})");
    if let Err(e) = result {
        panic!("property {name} failed (replay: PRISM_PROPTEST_SEED={base}): {e}");
    }
}

/// A per-name perturbation, so that properties run with one `PRISM_PROPTEST_SEED` differ.
fn fnv(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// f32 values: mostly finite in `[-range, range]`, sometimes NaN, ±Inf, ±0, subnormal or huge.
pub fn any_f32(range: f32) -> impl Strategy<Value = f32> {
    prop_oneof![
        12 => -range..range,
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
        1 => Just(0.0f32),
        1 => Just(-0.0f32),
        1 => Just(1e-40f32),
        1 => prop::num::f32::NORMAL,
    ]
}

/// Finite f32 in `[-range, range]`, never exactly zero-heavy.
pub fn finite(range: f32) -> impl Strategy<Value = f32> {
    -range..range
}

/// `got` (f32) equals `want` (f64) rounded to f32, NaN matching NaN.
pub fn exact(what: &str, i: usize, got: f32, want: f64) -> Result<(), TestCaseError> {
    let want = want as f32;
    if (got.is_nan() && want.is_nan()) || got.to_bits() == want.to_bits() || (got == 0.0 && want == 0.0) {
        Ok(())
    } else {
        Err(TestCaseError::fail(format!("{what}[{i}]: got {got:e}, want {want:e} exactly")))
    }
}

/// `|got - want| <= tol`, with NaN matching NaN and infinities matching themselves.
pub fn close(what: &str, i: usize, got: f64, want: f64, tol: f64) -> Result<(), TestCaseError> {
    let ok = if want.is_nan() || got.is_nan() {
        want.is_nan() && got.is_nan()
    } else if want.is_infinite() || got.is_infinite() {
        got == want
    } else {
        (got - want).abs() <= tol
    };
    if ok {
        Ok(())
    } else {
        Err(TestCaseError::fail(format!(
            "{what}[{i}]: got {got:e}, want {want:e} (error {:e} > tolerance {tol:e})",
            (got - want).abs()
        )))
    }
}

/// `r` is an [`prism_gpu::Error::Shape`] (a bad input is refused, not answered or panicked on).
pub fn shape_err<T: Debug>(what: &str, r: prism_gpu::Result<T>) -> Result<(), TestCaseError> {
    match r {
        Err(prism_gpu::Error::Shape { .. }) => Ok(()),
        other => Err(TestCaseError::fail(format!("{what}: expected a shape error, got {other:?}"))),
    }
}

/// `r` is an error of any kind (a size no device or host can hold: a shape error on the CPU,
/// an allocation error on a GPU), not a value or a panic.
pub fn refused<T: Debug>(what: &str, r: prism_gpu::Result<T>) -> Result<(), TestCaseError> {
    match r {
        Err(_) => Ok(()),
        Ok(v) => Err(TestCaseError::fail(format!("{what}: expected an error, got {v:?}"))),
    }
}

/// `r`'s value, or a test failure naming the error.
pub fn ok<T>(what: &str, r: prism_gpu::Result<T>) -> Result<T, TestCaseError> {
    r.map_err(|e| TestCaseError::fail(format!("{what}: unexpected error {e}")))
}

/// Dimensions: mostly small and odd, sometimes 0 or 1.
pub fn dim(max: usize) -> impl Strategy<Value = usize> {
    prop_oneof![1 => Just(0usize), 2 => Just(1usize), 8 => 1..=max]
}

/// Sizes that cannot be allocated or whose products overflow.
pub fn huge() -> impl Strategy<Value = usize> {
    prop_oneof![
        Just(usize::MAX),
        Just(usize::MAX / 2 + 1),
        Just(1usize << 40),
        Just((1usize << 32) + 1),
        (1usize << 33)..usize::MAX,
    ]
}
