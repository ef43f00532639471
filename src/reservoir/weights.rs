//! The random weights of a reservoir, built on the host from the seed (so GPU and CPU runs build the
//! same matrices), and the spectral-radius estimate they are scaled by.

use super::config::ReservoirConfig;
use crate::error::{Error, Result};
use crate::ops::neuromorphic::{Csr, ReservoirWeights};
use crate::rng::SplitMix64;

/// Power-iteration steps before the estimate's two averaging windows.
const BURN_IN: usize = 1000;
/// Length of each averaging window of the spectral-radius estimate.
const WINDOW: usize = 1000;

/// The recurrent matrix on the host.
#[derive(Debug, Clone)]
pub enum Recurrent {
    /// Row-major `[n, n]`.
    Dense(Vec<f32>),
    /// Compressed sparse rows.
    Sparse {
        /// `n + 1` offsets.
        row_ptr: Vec<i32>,
        /// Column of each entry.
        col_idx: Vec<i32>,
        /// Value of each entry.
        values: Vec<f32>,
    },
}

impl Recurrent {
    /// The matrix as the runtime's operand.
    pub fn as_reservoir(&self) -> ReservoirWeights<'_> {
        match self {
            Recurrent::Dense(w) => ReservoirWeights::Dense(w),
            Recurrent::Sparse { row_ptr, col_idx, values } => {
                ReservoirWeights::Csr(Csr { row_ptr, col_idx, values })
            }
        }
    }

    /// Stored entries (all `n * n` for a dense matrix).
    pub fn stored(&self) -> usize {
        match self {
            Recurrent::Dense(w) => w.len(),
            Recurrent::Sparse { values, .. } => values.len(),
        }
    }

    fn values_mut(&mut self) -> &mut [f32] {
        match self {
            Recurrent::Dense(w) => w,
            Recurrent::Sparse { values, .. } => values,
        }
    }
}

/// A reservoir's weights before scaling: `w` with entries uniform in `[-1, 1)` at the configured
/// density, `w_in` row-major `[n, 1 + d]` whose column 0 is the bias (fed a constant 1).
#[derive(Debug, Clone)]
pub struct Weights {
    /// The recurrent matrix.
    pub w: Recurrent,
    /// Input weights `[n, 1 + input_size]`, bias first.
    pub w_in: Vec<f32>,
}

impl Weights {
    /// Draws the weights of a (validated) configuration from its seed.
    pub fn draw(config: &ReservoirConfig) -> Result<Self> {
        let n = config.size;
        let p = config.connection_prob;
        // Separate streams, so changing one matrix's density leaves the other unchanged.
        let mut rng = SplitMix64::new(config.seed ^ 0x5245_5345_5256_4f49);
        let w = if config.is_sparse() {
            let mut row_ptr = Vec::with_capacity(n + 1);
            let (mut col_idx, mut values) = (Vec::new(), Vec::new());
            row_ptr.push(0);
            for _ in 0..n {
                for j in 0..n {
                    if rng.uniform(0.0, 1.0) < p {
                        col_idx.push(j as i32);
                        values.push(rng.uniform(-1.0, 1.0));
                    }
                }
                let nnz = i32::try_from(values.len()).map_err(|_| Error::Shape {
                    op: "GpuReservoirComputer::new",
                    expected: "at most 2^31 - 1 recurrent connections (CSR offsets are i32)".into(),
                    got: format!("more at size {n}, connection_prob {p}"),
                })?;
                row_ptr.push(nnz);
            }
            Recurrent::Sparse { row_ptr, col_idx, values }
        } else {
            let mut w = vec![0.0; n * n];
            for v in &mut w {
                if rng.uniform(0.0, 1.0) < p {
                    *v = rng.uniform(-1.0, 1.0);
                }
            }
            Recurrent::Dense(w)
        };
        let mut rng = SplitMix64::new(config.seed ^ 0x494e_5055_5457_4549);
        let cols = 1 + config.input_size;
        let mut w_in = vec![0.0; n * cols];
        for row in w_in.chunks_exact_mut(cols) {
            row[0] = rng.uniform(-config.bias, config.bias);
            for v in &mut row[1..] {
                if rng.uniform(0.0, 1.0) < config.input_connectivity {
                    *v = rng.uniform(-config.input_scaling, config.input_scaling);
                }
            }
        }
        Ok(Self { w, w_in })
    }

    /// Scales `w` to `target` from the estimate `estimate` of its spectral radius.
    pub fn scale_to(&mut self, estimate: f64, target: f32) -> Result<()> {
        if !(estimate.is_finite() && estimate > 0.0) {
            return Err(Error::Shape {
                op: "GpuReservoirComputer::new",
                expected: "a recurrent matrix with a spectral radius > 0 to scale (raise connection_prob)"
                    .into(),
                got: format!("an estimated spectral radius of {estimate}"),
            });
        }
        let factor = f64::from(target) / estimate;
        for v in self.w.values_mut() {
            *v = (f64::from(*v) * factor) as f32;
        }
        Ok(())
    }
}

/// The spectral radius of an `[n, n]` matrix by power iteration, `matvec` being `v -> W v`.
///
/// A real matrix's largest eigenvalues are often a complex pair, around which `||W v||` of one step
/// oscillates; the growth rate of `log ||W^k v||` does not. So: `BURN_IN` normalised steps, then the
/// mean of `log ||W^k v||` over two consecutive windows of `WINDOW` steps; their difference divided
/// by `WINDOW` is `log rho` (the oscillation averages out in both windows). Starts from a seeded
/// vector uniform in `[-1, 1)`.
pub fn spectral_radius(
    n: usize,
    seed: u64,
    mut matvec: impl FnMut(&[f32]) -> Result<Vec<f32>>,
) -> Result<f64> {
    let mut p = PowerIteration::new(n, seed);
    loop {
        let w = matvec(&p.v)?;
        if let Some(rho) = p.advance(w) {
            return Ok(rho);
        }
    }
}

/// [`spectral_radius`] of several `[n, n]` matrices at once, `matvec` being `v -> W v` for all of
/// them (`v` and `W v` the members' vectors one after another): each member's estimate is the one
/// [`spectral_radius`] gives it alone, its arithmetic the same step for step (a member that is done
/// early keeps its vector, its products ignored).
pub fn spectral_radii(
    n: usize,
    seeds: &[u64],
    mut matvec: impl FnMut(&[f32]) -> Result<Vec<f32>>,
) -> Result<Vec<f64>> {
    if n == 0 {
        // An empty matrix's product is empty, of norm 0: what spectral_radius says at once.
        return Ok(vec![0.0; seeds.len()]);
    }
    let mut members: Vec<PowerIteration> = seeds.iter().map(|&s| PowerIteration::new(n, s)).collect();
    let mut done: Vec<Option<f64>> = vec![None; seeds.len()];
    let mut v = vec![0.0f32; n * seeds.len()];
    while done.iter().any(Option::is_none) {
        for (chunk, p) in v.chunks_exact_mut(n).zip(&members) {
            chunk.copy_from_slice(&p.v);
        }
        let w = matvec(&v)?;
        if w.len() != v.len() {
            return Err(Error::Shape {
                op: "spectral_radii",
                expected: format!("products of {} values", v.len()),
                got: format!("{}", w.len()),
            });
        }
        for ((p, out), wi) in members.iter_mut().zip(&mut done).zip(w.chunks_exact(n)) {
            if out.is_none() {
                *out = p.advance(wi.to_vec());
            }
        }
    }
    Ok(done.into_iter().map(|r| r.unwrap_or(f64::NAN)).collect())
}

/// One power iteration of [`spectral_radius`], advanced a product at a time.
struct PowerIteration {
    v: Vec<f32>,
    log_norm: f64,
    first: f64,
    second: f64,
    k: usize,
}

impl PowerIteration {
    fn new(n: usize, seed: u64) -> Self {
        let mut v = SplitMix64::new(seed ^ 0x5350_4543_5452_414c).vec(n, -1.0, 1.0);
        let log_norm = normalize(&mut v).ln();
        Self { v, log_norm, first: 0.0, second: 0.0, k: 0 }
    }

    /// Takes `W v`; the estimate once the iteration is over.
    fn advance(&mut self, mut w: Vec<f32>) -> Option<f64> {
        let norm = normalize(&mut w);
        if norm == 0.0 || !norm.is_finite() {
            return Some(if norm == 0.0 { 0.0 } else { f64::NAN });
        }
        self.log_norm += norm.ln();
        self.v = w;
        if self.k >= BURN_IN + WINDOW {
            self.second += self.log_norm;
        } else if self.k >= BURN_IN {
            self.first += self.log_norm;
        }
        self.k += 1;
        (self.k == BURN_IN + 2 * WINDOW)
            .then(|| ((self.second - self.first) / (WINDOW * WINDOW) as f64).exp())
    }
}

/// Scales `v` to unit length (in f64) and returns the old length.
fn normalize(v: &mut [f32]) -> f64 {
    let norm = v.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
    if norm > 0.0 {
        for x in v {
            *x = (f64::from(*x) / norm) as f32;
        }
    }
    norm
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The batched power iteration gives each member the estimate it has alone, bit for bit, also
    /// for a member whose products vanish at once (a zero matrix, done on the first step).
    #[test]
    fn spectral_radii_are_each_members_spectral_radius() {
        let n = 23;
        let mut rng = SplitMix64::new(5);
        let mut mats: Vec<Vec<f32>> = (0..3).map(|_| rng.vec(n * n, -1.0, 1.0)).collect();
        mats.push(vec![0.0; n * n]);
        let product = |w: &[f32], v: &[f32]| -> Vec<f32> {
            w.chunks_exact(n).map(|row| row.iter().zip(v).map(|(a, b)| a * b).sum()).collect()
        };
        let seeds = [1, 2, 3, 4];
        let alone: Vec<f64> = mats
            .iter()
            .zip(seeds)
            .map(|(w, s)| spectral_radius(n, s, |v| Ok(product(w, v))).unwrap())
            .collect();
        let together = spectral_radii(n, &seeds, |v| {
            Ok(mats.iter().zip(v.chunks_exact(n)).flat_map(|(w, vi)| product(w, vi)).collect())
        })
        .unwrap();
        assert_eq!(
            alone.iter().map(|r| r.to_bits()).collect::<Vec<_>>(),
            together.iter().map(|r| r.to_bits()).collect::<Vec<_>>()
        );
        assert_eq!(together[3], 0.0);
        assert!(together[..3].iter().all(|&r| r > 0.5 && r < 10.0), "{together:?}");
        assert!(spectral_radii(n, &seeds, |_| Ok(vec![0.0; 3])).is_err(), "products of the wrong length");
    }
}
