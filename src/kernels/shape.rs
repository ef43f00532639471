//! Shape and length checks made before any launch.

use crate::error::{Error, Result};

/// The common length of `operands` (name, length), or [`Error::Shape`] naming the first mismatch.
pub fn same_len(op: &'static str, operands: &[(&str, usize)]) -> Result<usize> {
    let (first_name, n) = operands[0];
    match operands.iter().find(|(_, len)| *len != n) {
        None => Ok(n),
        Some((name, len)) => Err(Error::Shape {
            op,
            expected: format!("`{name}` as long as `{first_name}` ({n} elements)"),
            got: format!("{len} elements"),
        }),
    }
}

/// Checks that `len` is `rows * cols` for a `rows x cols` operand called `name`.
pub fn matrix(op: &'static str, name: &str, len: usize, rows: usize, cols: usize) -> Result<()> {
    match rows.checked_mul(cols) {
        Some(n) if n == len => Ok(()),
        _ => Err(Error::Shape {
            op,
            expected: format!("`{name}` of {rows} x {cols} = {} elements", rows.saturating_mul(cols)),
            got: format!("{len} elements"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mismatched_lengths_name_the_operand() {
        assert_eq!(same_len("add", &[("a", 3), ("b", 3), ("out", 3)]).unwrap(), 3);
        let err = same_len("add", &[("a", 3), ("b", 4)]).unwrap_err().to_string();
        assert_eq!(err, "add: expected `b` as long as `a` (3 elements), got 4 elements");
    }

    #[test]
    fn matrix_lengths_must_match_the_shape() {
        assert!(matrix("gemv", "a", 12, 3, 4).is_ok());
        let err = matrix("gemv", "a", 11, 3, 4).unwrap_err().to_string();
        assert_eq!(err, "gemv: expected `a` of 3 x 4 = 12 elements, got 11 elements");
        assert!(matrix("gemv", "a", 0, usize::MAX, 2).is_err());
    }
}
