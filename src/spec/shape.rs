//! Shape and length checks made before any launch.

use crate::error::{Error, Result};

/// The common length of `operands` (name, length), or [`Error::Shape`] naming the first mismatch
/// (or saying that no operand was given).
pub fn same_len(op: &'static str, operands: &[(&str, usize)]) -> Result<usize> {
    let Some(&(first_name, n)) = operands.first() else {
        return Err(Error::Shape { op, expected: "at least one operand".into(), got: "none".into() });
    };
    match operands.iter().find(|(_, len)| *len != n) {
        None => Ok(n),
        Some((name, len)) => Err(Error::Shape {
            op,
            expected: format!("`{name}` as long as `{first_name}` ({n} elements)"),
            got: format!("{len} elements"),
        }),
    }
}

/// The product of `dims` (the element count of a `dims[0] x dims[1] x ...` operand called `name`),
/// or [`Error::Shape`] when it does not fit in `usize`. Every element count computed from a
/// caller's dimensions goes through this or [`strided_extent`].
pub fn elements(op: &'static str, name: &str, dims: &[usize]) -> Result<usize> {
    dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).ok_or_else(|| Error::Shape {
        op,
        expected: format!("`{name}` of {} elements, at most {}", show_dims(dims), usize::MAX),
        got: "a product that overflows usize".into(),
    })
}

/// The elements a strided operand called `name` spans: `count` blocks `stride` elements apart,
/// each `rows` rows `ld` elements apart of `cols` elements, that is
/// `(count - 1) * stride + (rows - 1) * ld + cols`, and 0 when `count`, `rows` or `cols` is 0.
/// [`Error::Shape`] when that does not fit in `usize`.
pub fn strided_extent(
    op: &'static str,
    name: &str,
    count: usize,
    stride: usize,
    rows: usize,
    ld: usize,
    cols: usize,
) -> Result<usize> {
    if count == 0 || rows == 0 || cols == 0 {
        return Ok(0);
    }
    (count - 1)
        .checked_mul(stride)
        .and_then(|blocks| (rows - 1).checked_mul(ld).and_then(|r| r.checked_add(blocks)))
        .and_then(|span| span.checked_add(cols))
        .ok_or_else(|| Error::Shape {
            op,
            expected: format!(
                "`{name}` spanning at most {} elements ({count} x {rows} x {cols}, stride {stride}, \
                 leading dimension {ld})",
                usize::MAX
            ),
            got: "an extent that overflows usize".into(),
        })
}

/// A host vector of `len` zeros for an output called `name`, or [`Error::Shape`] when the host
/// cannot allocate it (instead of aborting the process on a size taken from the caller).
pub fn zeroed<T: Clone + Default>(op: &'static str, name: &str, len: usize) -> Result<Vec<T>> {
    let mut out = Vec::new();
    out.try_reserve_exact(len).map_err(|_| Error::Shape {
        op,
        expected: format!("`{name}` of a size the host can allocate"),
        got: format!("{len} elements of {} bytes", std::mem::size_of::<T>()),
    })?;
    out.resize(len, T::default());
    Ok(out)
}

fn show_dims(dims: &[usize]) -> String {
    dims.iter().map(usize::to_string).collect::<Vec<_>>().join(" x ")
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

/// Checks that an optional per-column (or per-channel) operand has `len` elements.
pub fn optional_len(op: &'static str, name: &str, len: Option<usize>, expected: usize) -> Result<()> {
    match len {
        Some(got) if got != expected => Err(Error::Shape {
            op,
            expected: format!("`{name}` of {expected} elements"),
            got: format!("{got} elements"),
        }),
        _ => Ok(()),
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
        assert!(same_len("add", &[]).is_err());
    }

    #[test]
    fn extents_are_checked() {
        assert_eq!(elements("x", "a", &[3, 4, 5]).unwrap(), 60);
        assert_eq!(elements("x", "a", &[]).unwrap(), 1);
        assert!(elements("x", "a", &[usize::MAX, 2]).is_err());
        assert_eq!(elements("x", "a", &[usize::MAX, 0]).unwrap(), 0);
        assert_eq!(strided_extent("x", "a", 4, 21, 3, 7, 7).unwrap(), 84);
        assert_eq!(strided_extent("x", "a", 0, usize::MAX, 3, 7, 7).unwrap(), 0);
        assert_eq!(strided_extent("x", "a", 1, usize::MAX, 1, usize::MAX, 5).unwrap(), 5);
        assert!(strided_extent("x", "a", 2, usize::MAX, 1, 1, 1).is_err());
        assert!(strided_extent("x", "a", 1, 0, 3, usize::MAX / 2 + 1, 1).is_err());
        assert!(strided_extent("x", "a", 2, usize::MAX - 1, 1, 1, 2).is_err());
        assert_eq!(zeroed::<f32>("x", "out", 3).unwrap(), [0.0; 3]);
        assert!(zeroed::<f32>("x", "out", usize::MAX / 4).is_err());
    }

    #[test]
    fn matrix_lengths_must_match_the_shape() {
        assert!(matrix("gemv", "a", 12, 3, 4).is_ok());
        let err = matrix("gemv", "a", 11, 3, 4).unwrap_err().to_string();
        assert_eq!(err, "gemv: expected `a` of 3 x 4 = 12 elements, got 11 elements");
        assert!(matrix("gemv", "a", 0, usize::MAX, 2).is_err());
    }

    #[test]
    fn optional_operands_are_checked_when_present() {
        assert!(optional_len("layer_norm", "gamma", None, 3).is_ok());
        assert!(optional_len("layer_norm", "gamma", Some(3), 3).is_ok());
        let err = optional_len("layer_norm", "gamma", Some(2), 3).unwrap_err().to_string();
        assert_eq!(err, "layer_norm: expected `gamma` of 3 elements, got 2 elements");
    }
}
