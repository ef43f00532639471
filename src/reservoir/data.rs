//! Benchmark series and error measures: Mackey-Glass and NARMA10, (N)RMSE.

use crate::error::{Error, Result};
use crate::rng::SplitMix64;

/// Integration steps per unit of time of [`mackey_glass`].
const MG_SUBSTEPS: usize = 10;

/// `steps` samples (one per unit of time) of the Mackey-Glass delay differential equation
/// `dx/dt = 0.2 x(t - tau) / (1 + x(t - tau)^10) - 0.1 x(t)`, with the history `x = x0` for
/// `t <= 0`. Runge-Kutta 4 with step 1/10 (the delayed value at half steps linearly interpolated),
/// sampled every 10 steps, as Jaeger (2001) generates it. `tau = 17` is the standard chaotic series.
pub fn mackey_glass(steps: usize, tau: usize, x0: f64) -> Vec<f64> {
    const H: f64 = 1.0 / MG_SUBSTEPS as f64;
    let f = |x: f64, xd: f64| 0.2 * xd / (1.0 + xd.powi(10)) - 0.1 * x;
    let lag = tau * MG_SUBSTEPS;
    // history[i] is x at substep i - lag.
    let mut history = vec![x0; lag + 1];
    let mut out = Vec::with_capacity(steps);
    let mut x = x0;
    for s in 0..steps * MG_SUBSTEPS {
        if s % MG_SUBSTEPS == 0 {
            out.push(x);
        }
        let (d0, d1) = (history[s], history[s + 1]);
        let dh = 0.5 * (d0 + d1);
        let k1 = f(x, d0);
        let k2 = f(x + 0.5 * H * k1, dh);
        let k3 = f(x + 0.5 * H * k2, dh);
        let k4 = f(x + H * k3, d1);
        x += H / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
        history.push(x);
    }
    out
}

/// NARMA10: inputs `u` uniform in `[0, 0.5)` (seeded) and the series `y(t + 1) = 0.3 y(t) + 0.05
/// y(t) sum_{i<10} y(t - i) + 1.5 u(t - 9) u(t) + 0.1`; returns `(u, y)`, `y[t]` the target for
/// the input `u[t]` (that is, `y(t + 1)`).
pub fn narma10(steps: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = SplitMix64::new(seed);
    let u: Vec<f64> = (0..steps).map(|_| f64::from(rng.uniform(0.0, 0.5))).collect();
    let mut y = vec![0.0; steps + 1];
    for t in 9..steps {
        let sum: f64 = y[t - 9..=t].iter().sum();
        y[t + 1] = 0.3 * y[t] + 0.05 * y[t] * sum + 1.5 * u[t - 9] * u[t] + 0.1;
    }
    (u, y[1..].to_vec())
}

/// Root mean square of `got - want`; an error when the lengths differ or are 0.
pub fn rmse(got: &[f32], want: &[f64]) -> Result<f64> {
    if got.len() != want.len() || got.is_empty() {
        return Err(Error::Shape {
            op: "rmse",
            expected: "two non-empty series of one length".into(),
            got: format!("{} and {} values", got.len(), want.len()),
        });
    }
    let sq: f64 = got.iter().zip(want).map(|(&g, &w)| (f64::from(g) - w).powi(2)).sum();
    Ok((sq / got.len() as f64).sqrt())
}

/// [`rmse`] divided by the standard deviation `std` of the target signal.
pub fn nrmse(got: &[f32], want: &[f64], std: f64) -> Result<f64> {
    Ok(rmse(got, want)? / std)
}

/// The population standard deviation of `x` (0 for an empty series).
pub fn std_dev(x: &[f64]) -> f64 {
    if x.is_empty() {
        return 0.0;
    }
    let mean = x.iter().sum::<f64>() / x.len() as f64;
    (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / x.len() as f64).sqrt()
}
