//! Norms (`cuda/norms.cu`): the NCHW shape and the checks that the runtime's entry points and the launchers share.

use crate::error::{Error, Result};
use crate::spec::shape;

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

/// Operands by name with their lengths, `None` for an absent one.
pub type Lens<'a> = [(&'a str, Option<usize>)];

/// Checks batch norm's NCHW `x` (`len` elements) and its per-channel operands (name, length;
/// absent ones skipped), `c` elements each.
pub fn check_batch(op: &'static str, len: usize, (n, c, hw): Nchw, channels: &Lens) -> Result<()> {
    check_nchw(op, len, n, c, hw)?;
    for (name, len) in channels {
        shape::optional_len(op, name, *len, c)?;
    }
    Ok(())
}

/// [`check_batch`] for the training statistics, which also need a value in each channel
/// (`n * hw >= 1`) when there are channels.
pub fn check_batch_train(op: &'static str, len: usize, (n, c, hw): Nchw, channels: &Lens) -> Result<()> {
    check_batch(op, len, (n, c, hw), channels)?;
    if c > 0 && len == 0 {
        return Err(Error::Shape {
            op,
            expected: "at least one value per channel (n * hw >= 1)".into(),
            got: format!("n = {n}, hw = {hw}"),
        });
    }
    Ok(())
}

/// Checks a row norm's operands: `x` and `out` of `rows * cols`, the per-column `params` (gamma,
/// beta) of `cols`, the per-row `stats` of `rows`; absent operands are skipped.
pub fn check_rows(
    op: &'static str,
    x: usize,
    out: usize,
    params: &Lens,
    stats: &Lens,
    rows: usize,
    cols: usize,
) -> Result<()> {
    shape::matrix(op, "x", x, rows, cols)?;
    shape::same_len(op, &[("x", x), ("out", out)])?;
    for (name, len) in params {
        shape::optional_len(op, name, *len, cols)?;
    }
    for (name, len) in stats {
        shape::optional_len(op, name, *len, rows)?;
    }
    Ok(())
}
