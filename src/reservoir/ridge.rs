//! The ridge-regression solve of the readout: `(G + ridge I) W = B` by a Cholesky factorisation in
//! f64 on the host. `G = Z Zᵀ` is `F x F` with `F = 1 + d + n` features, small next to the
//! sequences it summarises, so one f64 factorisation (`F^3 / 3` multiply-adds: 0.3 GFLOP at 1000
//! units) costs less than accumulating it; the accumulation runs on the device.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::kernels::gemm::Gemm;
use crate::runtime::ProductionGpuRuntime;

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

/// Columns per block of the Cholesky factorisation.
const BLOCK: usize = 96;

/// Cholesky factorisation in place: the lower triangle of `a` becomes `L` with `L Lᵀ = a` (the
/// upper triangle is scratch). Blocked, right-looking: factor a diagonal block, solve the panel
/// below it (rows in parallel), subtract the panel's outer product from the trailing matrix by an
/// f64 GEMM (the CPU runtime's, threaded), so a 10,000-unit readout is seconds, not minutes.
fn cholesky(a: &mut [f64], f: usize) -> Result<()> {
    let gemm = ProductionGpuRuntime::cpu();
    let mut k0 = 0;
    while k0 < f {
        let kb = BLOCK.min(f - k0);
        let end = k0 + kb;
        // The diagonal block, unblocked (earlier columns are already subtracted).
        for j in k0..end {
            let d = a[j * f + j] - a[j * f + k0..j * f + j].iter().map(|x| x * x).sum::<f64>();
            if !(d > 0.0 && d.is_finite()) {
                return Err(Error::Shape {
                    op: "GpuReservoirComputer::fit",
                    expected: "a positive definite state Gram matrix (more training steps, or ridge > 0)"
                        .into(),
                    got: format!("pivot {d:e} at feature {j} of {f}"),
                });
            }
            let djj = d.sqrt();
            a[j * f + j] = djj;
            for i in j + 1..end {
                let s: f64 = (k0..j).map(|p| a[i * f + p] * a[j * f + p]).sum();
                a[i * f + j] = (a[i * f + j] - s) / djj;
            }
        }
        if end == f {
            break;
        }
        // The panel: L21 = A21 L11⁻ᵀ, row by row.
        let (top, below) = a.split_at_mut(end * f);
        let l11 = &top[k0 * f..];
        below.par_chunks_mut(f).for_each(|row| {
            for j in 0..kb {
                let s: f64 = (0..j).map(|p| row[k0 + p] * l11[j * f + k0 + p]).sum();
                row[k0 + j] = (row[k0 + j] - s) / l11[j * f + k0 + j];
            }
        });
        // The trailing matrix: A22 -= L21 L21ᵀ (the panel copied out, so C alone is borrowed).
        let rows = f - end;
        let panel: Vec<f64> = below.chunks_exact(f).flat_map(|row| row[k0..end].iter().copied()).collect();
        let update = Gemm::new(rows, rows, kb).transposed(false, true).leading_dims(kb, kb, f);
        gemm.gemm_f64(&update.with_f64_scales(-1.0, 1.0), &panel, &panel, &mut below[end..])?;
        k0 = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// A random SPD system of several blocks, solved against Gaussian elimination in f64.
    #[test]
    fn blocked_cholesky_solves_a_multi_block_system() {
        let seed = SplitMix64::from_time().next_u64();
        println!("seed {seed}");
        let mut rng = SplitMix64::new(seed);
        let (f, outputs, rows) = (2 * BLOCK + 37, 2, 300);
        let z: Vec<f64> = (0..rows * f).map(|_| f64::from(rng.uniform(-1.0, 1.0))).collect();
        let mut g = vec![0.0; f * f];
        for r in 0..rows {
            for i in 0..f {
                for j in 0..f {
                    g[i * f + j] += z[r * f + i] * z[r * f + j];
                }
            }
        }
        let b: Vec<f64> = (0..f * outputs).map(|_| f64::from(rng.uniform(-1.0, 1.0))).collect();
        let ridge = 0.5;
        let got = solve(&g, &b, f, outputs, ridge).unwrap();
        // Reference: elimination with partial pivoting on [g + ridge I | b].
        let mut m = g.clone();
        let mut x = b.clone();
        for i in 0..f {
            m[i * f + i] += ridge;
        }
        for c in 0..f {
            let p = (c..f).max_by(|&p, &q| m[p * f + c].abs().total_cmp(&m[q * f + c].abs())).unwrap();
            for j in 0..f {
                m.swap(c * f + j, p * f + j);
            }
            for o in 0..outputs {
                x.swap(c * outputs + o, p * outputs + o);
            }
            for r in c + 1..f {
                let k = m[r * f + c] / m[c * f + c];
                for j in c..f {
                    m[r * f + j] -= k * m[c * f + j];
                }
                for o in 0..outputs {
                    x[r * outputs + o] -= k * x[c * outputs + o];
                }
            }
        }
        for r in (0..f).rev() {
            for o in 0..outputs {
                let s: f64 = (r + 1..f).map(|j| m[r * f + j] * x[j * outputs + o]).sum();
                x[r * outputs + o] = (x[r * outputs + o] - s) / m[r * f + r];
            }
        }
        let scale = x.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        let err = got.iter().zip(&x).map(|(a, b)| (a - b).abs() / scale).fold(0.0, f64::max);
        assert!(err < 1e-10, "blocked Cholesky off by {err:e}");
        // Not positive definite: an error, not a NaN.
        let mut bad = g.clone();
        bad[5 * f + 5] = -1e6;
        assert!(solve(&bad, &b, f, outputs, 0.0).is_err());
    }
}
