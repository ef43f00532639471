//! f64 references for the reservoir tests, written independently of `prism_gpu::reservoir`: the
//! echo-state step, the ridge normal equations solved by Gaussian elimination, the spectral radius
//! by a least-squares growth rate.
#![allow(dead_code)] // each test binary uses a different subset

use std::sync::Arc;

use prism_gpu::reservoir::{GpuReservoirComputer, Recurrent};
use prism_gpu::rng::SplitMix64;
use prism_gpu::ProductionGpuRuntime;

/// The CPU fallback's runtime, shared as the reservoirs take it.
pub fn cpu() -> Arc<ProductionGpuRuntime> {
    Arc::new(ProductionGpuRuntime::cpu())
}

/// A generator seeded from the clock, and its seed (printed, so a failure can be replayed).
pub fn fresh() -> (SplitMix64, u64) {
    let seed = SplitMix64::from_time().next_u64();
    println!("seed {seed}");
    (SplitMix64::new(seed), seed)
}

/// Fits `esn` (one input) to predict each of `inputs` from the one before, runs it free for
/// `outputs` steps and checks them against the f64 reference: `y = W_out [1; u; x]`, then `x` steps
/// on `y`. `what` names the run in a failure.
pub fn free_run_matches(esn: &mut GpuReservoirComputer, inputs: &[f32], outputs: usize, what: &str) {
    let train = inputs.len() - 1;
    esn.fit(&inputs[..train], &inputs[1..]).unwrap();
    let w = esn.readout().unwrap().to_vec();
    let mut x: Vec<f64> = esn.state().unwrap().iter().map(|&v| f64::from(v)).collect();
    let free = esn.generate(outputs).unwrap();
    let mut u = f64::from(inputs[train - 1]);
    let mut y_ref = Vec::new();
    for _ in 0..outputs {
        let y = f64::from(w[0])
            + f64::from(w[1]) * u
            + w[2..].iter().zip(&x).map(|(&w, &x)| f64::from(w) * x).sum::<f64>();
        y_ref.push(y);
        x = states(esn, &[y as f32], &x);
        u = y;
    }
    let scale = w.iter().map(|v| f64::from(v.abs())).sum::<f64>();
    let err = max_scaled_error(&free, &y_ref, scale);
    assert!(err < 1e-5, "{what} off by {err:e}");
}

/// The recurrent matrix as dense f64 `[n, n]`.
pub fn dense(w: &Recurrent, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; n * n];
    match w {
        Recurrent::Dense(d) => out.iter_mut().zip(d).for_each(|(o, &v)| *o = f64::from(v)),
        Recurrent::Sparse { row_ptr, col_idx, values } => {
            for i in 0..n {
                for k in row_ptr[i] as usize..row_ptr[i + 1] as usize {
                    out[i * n + col_idx[k] as usize] = f64::from(values[k]);
                }
            }
        }
    }
    out
}

/// States `[steps, n]` of `x = (1 - leak) x + leak tanh(W_in [1; u] + W x)` from `x0`, in f64.
pub fn states(esn: &GpuReservoirComputer, inputs: &[f32], x0: &[f64]) -> Vec<f64> {
    let (n, d, leak) = (esn.config().size, esn.config().input_size, f64::from(esn.config().leak_rate));
    let w = dense(esn.recurrent(), n);
    let w_in = esn.input_weights();
    let mut x = x0.to_vec();
    let mut out = Vec::with_capacity(inputs.len() / d * n);
    for u in inputs.chunks_exact(d) {
        let next: Vec<f64> = (0..n)
            .map(|i| {
                let row_in = &w_in[i * (1 + d)..(i + 1) * (1 + d)];
                let mut s = f64::from(row_in[0]);
                s += row_in[1..].iter().zip(u).map(|(&a, &b)| f64::from(a) * f64::from(b)).sum::<f64>();
                s += (0..n).map(|j| w[i * n + j] * x[j]).sum::<f64>();
                (1.0 - leak) * x[i] + leak * s.tanh()
            })
            .collect();
        x = next;
        out.extend_from_slice(&x);
    }
    out
}

/// Ridge readout `[outputs, F]` over features `[1; u; x]` (rows `warmup..`), solving
/// `(Z Zᵀ + ridge I) w = Z y` by Gaussian elimination with partial pivoting.
pub fn ridge_readout(
    inputs: &[f32],
    states: &[f64],
    targets: &[f32],
    d: usize,
    n: usize,
    warmup: usize,
    ridge: f64,
) -> Vec<f64> {
    let steps = inputs.len() / d;
    let outputs = targets.len() / steps;
    let f = 1 + d + n;
    let mut a = vec![0.0; f * f];
    let mut b = vec![0.0; f * outputs];
    for t in warmup..steps {
        let mut z = vec![1.0];
        z.extend(inputs[t * d..(t + 1) * d].iter().map(|&v| f64::from(v)));
        z.extend_from_slice(&states[t * n..(t + 1) * n]);
        for i in 0..f {
            for j in 0..f {
                a[i * f + j] += z[i] * z[j];
            }
            for o in 0..outputs {
                b[i * outputs + o] += z[i] * f64::from(targets[t * outputs + o]);
            }
        }
    }
    for i in 0..f {
        a[i * f + i] += ridge;
    }
    // Elimination on [a | b].
    for col in 0..f {
        let pivot = (col..f).max_by(|&p, &q| a[p * f + col].abs().total_cmp(&a[q * f + col].abs())).unwrap();
        for j in 0..f {
            a.swap(col * f + j, pivot * f + j);
        }
        for o in 0..outputs {
            b.swap(col * outputs + o, pivot * outputs + o);
        }
        for r in col + 1..f {
            let m = a[r * f + col] / a[col * f + col];
            for j in col..f {
                a[r * f + j] -= m * a[col * f + j];
            }
            for o in 0..outputs {
                b[r * outputs + o] -= m * b[col * outputs + o];
            }
        }
    }
    let mut x = vec![0.0; f * outputs];
    for r in (0..f).rev() {
        for o in 0..outputs {
            let s: f64 = (r + 1..f).map(|j| a[r * f + j] * x[j * outputs + o]).sum();
            x[r * outputs + o] = (b[r * outputs + o] - s) / a[r * f + r];
        }
    }
    // As [outputs, F].
    let mut out = vec![0.0; outputs * f];
    for i in 0..f {
        for o in 0..outputs {
            out[o * f + i] = x[i * outputs + o];
        }
    }
    out
}

/// Spectral radius of a dense f64 matrix: the least-squares slope of `log ||W^k v||` over
/// `k in from..to`, from a random start (bounded oscillations of a complex pair average out).
pub fn spectral_radius(w: &[f64], n: usize, from: usize, to: usize, seed: u64) -> f64 {
    let mut rng = SplitMix64::new(seed);
    let mut v: Vec<f64> = (0..n).map(|_| f64::from(rng.uniform(-1.0, 1.0))).collect();
    let (mut log_norm, mut sk, mut sl, mut skk, mut skl, mut count) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for k in 1..to {
        let next: Vec<f64> = (0..n).map(|i| (0..n).map(|j| w[i * n + j] * v[j]).sum()).collect();
        let norm = next.iter().map(|x| x * x).sum::<f64>().sqrt();
        log_norm += norm.ln();
        v = next.iter().map(|x| x / norm).collect();
        if k >= from {
            let kf = k as f64;
            (sk, sl, skk, skl, count) =
                (sk + kf, sl + log_norm, skk + kf * kf, skl + kf * log_norm, count + 1.0);
        }
    }
    ((count * skl - sk * sl) / (count * skk - sk * sk)).exp()
}

/// Largest `|got - want|` divided by `scale`.
pub fn max_scaled_error(got: &[f32], want: &[f64], scale: f64) -> f64 {
    assert_eq!(got.len(), want.len(), "lengths differ");
    got.iter().zip(want).map(|(&g, &w)| (f64::from(g) - w).abs() / scale).fold(0.0, f64::max)
}

/// Largest magnitude of `x` (at least `floor`).
pub fn max_abs(x: &[f64], floor: f64) -> f64 {
    x.iter().fold(floor, |m, v| m.max(v.abs()))
}
