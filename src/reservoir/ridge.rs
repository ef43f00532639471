//! The ridge-regression solve of the readout: `(G + ridge I) W = B` by a Cholesky factorisation in
//! f64 on the host. `G = Z Zᵀ` is `F x F` with `F = 1 + d + n` features, small next to the
//! sequences it summarises, so one f64 factorisation (`F^3 / 3` multiply-adds: 0.3 GFLOP at 1000
//! units) costs less than accumulating it; the accumulation runs on the device.

use rayon::prelude::*;

use crate::error::{Error, Result};

/// Solves `(g + ridge I) x = b` for `x` (`[f, outputs]`, row-major), `g` symmetric `[f, f]`
/// row-major (only its lower triangle is read), `b` `[f, outputs]`. An error when `g + ridge I` is
/// not positive definite (too little data or no ridge) or holds a NaN.
pub fn solve(g: &[f64], b: &[f64], f: usize, outputs: usize, ridge: f64) -> Result<Vec<f64>> {
    let mut l = g.to_vec();
    for i in 0..f {
        l[i * f + i] += ridge;
    }
    cholesky(&mut l, f)?;
    let mut x = b.to_vec();
    // L y = b, then Lᵀ x = y, for every output column at once.
    for i in 0..f {
        for k in 0..i {
            let lik = l[i * f + k];
            for o in 0..outputs {
                x[i * outputs + o] -= lik * x[k * outputs + o];
            }
        }
        for o in 0..outputs {
            x[i * outputs + o] /= l[i * f + i];
        }
    }
    for i in (0..f).rev() {
        for k in i + 1..f {
            let lki = l[k * f + i];
            for o in 0..outputs {
                x[i * outputs + o] -= lki * x[k * outputs + o];
            }
        }
        for o in 0..outputs {
            x[i * outputs + o] /= l[i * f + i];
        }
    }
    Ok(x)
}

/// Cholesky factorisation in place: the lower triangle of `a` becomes `L` with `L Lᵀ = a`
/// (row-oriented, the rows below each pivot in parallel).
fn cholesky(a: &mut [f64], f: usize) -> Result<()> {
    for j in 0..f {
        let (row_j, below) = a[j * f..].split_at_mut(f);
        let d = row_j[j] - row_j[..j].iter().map(|x| x * x).sum::<f64>();
        if !(d > 0.0 && d.is_finite()) {
            return Err(Error::Shape {
                op: "GpuReservoirComputer::fit",
                expected: "a positive definite state Gram matrix (more training steps, or ridge > 0)".into(),
                got: format!("pivot {d:e} at feature {j} of {f}"),
            });
        }
        let djj = d.sqrt();
        row_j[j] = djj;
        let row_j = &row_j[..j];
        below.par_chunks_mut(f).for_each(|row_i| {
            let s = row_i[j] - row_i[..j].iter().zip(row_j).map(|(x, y)| x * y).sum::<f64>();
            row_i[j] = s / djj;
        });
    }
    Ok(())
}
