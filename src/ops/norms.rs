//! Norms (`cuda/norms.cu`): the NCHW shape of batch norm and its check.

use crate::error::{Error, Result};

/// The NCHW shape `(n, c, hw)` with `hw = H * W`.
pub type Nchw = (usize, usize, usize);

/// Checks that `len` is `n * c * hw` (an NCHW tensor with `hw = H * W`).
pub fn check_nchw(op: &'static str, len: usize, n: usize, c: usize, hw: usize) -> Result<()> {
    match n.checked_mul(c).and_then(|nc| nc.checked_mul(hw)) {
        Some(total) if total == len => Ok(()),
        _ => Err(Error::Shape {
            op,
            expected: format!("`x` of n x c x hw = {n} x {c} x {hw} elements"),
            got: format!("{len} elements"),
        }),
    }
}
