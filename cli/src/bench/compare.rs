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
