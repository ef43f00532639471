//! The reservoir and spiking operations on host slices.

use super::{Backend, GpuOps, ProductionGpuRuntime};
use crate::cpu;
use crate::error::Result;
use crate::kernels::neuromorphic::DeviceReservoir;
use crate::ops::neuromorphic::{LeakyIntegration, MatvecInput, Patterns, ReservoirWeights, SpikeEncode};
use crate::ops::shape;
use crate::ops::Map;

impl ProductionGpuRuntime {
    /// `W_in u` (`w_in` `[n_reservoir, n_inputs]`); dot-product tolerance as [`gemv`](Self::gemv).
    pub fn matvec_input(
        &self,
        w_in: &[f32],
        u: &[f32],
        n_reservoir: usize,
        n_inputs: usize,
    ) -> Result<Vec<f32>> {
        let op = MatvecInput { n_reservoir, n_inputs };
        if n_inputs == 0 {
            // `w_in` has no columns: zeros, without a launch.
            op.check([w_in.len(), u.len()])?;
            return Ok(vec![0.0; n_reservoir]);
        }
        self.map(op, [w_in, u])
    }

    /// `W x` for an `[n, n]` reservoir (`n = x.len()`), dense or CSR (checked: offsets, columns);
    /// dot-product tolerance as [`gemv`](Self::gemv).
    pub fn matvec_reservoir(&self, w: ReservoirWeights<'_>, x: &[f32]) -> Result<Vec<f32>> {
        w.check("matvec_reservoir", x.len())?;
        if x.is_empty() {
            return Ok(Vec::new());
        }
        self.dispatch(
            |g| {
                with_device_reservoir(g, w, x.len(), |dw| g.download(&g.matvec_reservoir(dw, &g.upload(x)?)?))
            },
            || cpu::reservoir_matvec(w, x),
        )
    }

    /// `x = (1 - leak) * x + leak * tanh(drive)` in place; within 2e-6.
    pub fn leaky_integration(&self, x: &mut [f32], drive: &[f32], leak: f32) -> Result<()> {
        self.update(LeakyIntegration(leak), x, [drive])
    }

    /// Rate-based spikes, time-major `[steps, rates.len()]`: 1 where `uniform01(seed, i, t) <
    /// rates[i]`. GPU and CPU give identical spikes for the same seed.
    pub fn spike_encode(&self, rates: &[f32], steps: usize, seed: u64) -> Result<Vec<f32>> {
        self.map(SpikeEncode { steps, seed }, [rates])
    }

    /// Sliding-window correlation of spike trains (`[t, n]`) with `p` templates (`[w, n]`):
    /// `[p, t - w + 1]`; dot-product tolerance as [`gemv`](Self::gemv).
    pub fn pattern_correlation(&self, spikes: &[f32], templates: &[f32], dims: Patterns) -> Result<Vec<f32>> {
        if dims.n == 0 {
            // Every product is 0: zeros without a launch (an output the host cannot hold is an
            // error, not an abort).
            let len = Map::check(dims, [spikes.len(), templates.len()])?;
            return shape::zeroed("pattern_correlation", "out", len);
        }
        self.map(dims, [spikes, templates])
    }

    /// Spectral-radius estimate of an `[n, n]` reservoir by `iters` power-iteration steps from
    /// the seeded start vector (0 for `n == 0`). GPU and CPU agree to 1e-4 relative once the
    /// iteration has converged.
    pub fn spectral_radius(&self, w: ReservoirWeights<'_>, n: usize, iters: usize, seed: u64) -> Result<f32> {
        w.check("spectral_radius", n)?;
        if n == 0 {
            return Ok(0.0);
        }
        self.dispatch(
            |g| with_device_reservoir(g, w, n, |dw| g.spectral_radius(dw, n, iters, seed)),
            || cpu::reservoir_spectral_radius(w, n, iters, seed),
        )
    }

    /// One echo-state step out of place: the next state `(1 - leak) * x + leak * tanh(W_in u + W x)`,
    /// `w_in` `[n, u.len()]`, `w` `[n, n]` (`n = x.len()`); one fused launch on a GPU. Within 1e-5.
    pub fn reservoir_update(
        &self,
        w_in: &[f32],
        w: ReservoirWeights<'_>,
        u: &[f32],
        x: &[f32],
        leak: f32,
    ) -> Result<Vec<f32>> {
        let n = x.len();
        shape::matrix("reservoir_update", "w_in", w_in.len(), n, u.len())?;
        w.check("reservoir_update", n)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        self.dispatch(
            |g| {
                with_device_reservoir(g, w, n, |dw| {
                    g.download(&g.reservoir_update(
                        &g.upload(w_in)?,
                        dw,
                        &g.upload(u)?,
                        &g.upload(x)?,
                        leak,
                    )?)
                })
            },
            || cpu::reservoir_update(w_in, w, u, x, leak),
        )
    }

    /// One echo-state step in place: `x = (1 - leak) * x + leak * tanh(W_in u + W x)`, `w_in`
    /// `[n, u.len()]`, `w` `[n, n]` (`n = x.len()`). Within 1e-5 (dot products, then tanh).
    pub fn reservoir_step(
        &self,
        w_in: &[f32],
        w: ReservoirWeights<'_>,
        u: &[f32],
        x: &mut [f32],
        leak: f32,
    ) -> Result<()> {
        let n = x.len();
        shape::matrix("reservoir_step", "w_in", w_in.len(), n, u.len())?;
        w.check("reservoir_step", n)?;
        if n == 0 {
            return Ok(());
        }
        match &self.backend {
            Backend::Gpu(ops) => ops.host(|g| {
                with_device_reservoir(g, w, n, |dw| {
                    let mut xd = g.upload(x)?;
                    g.reservoir_step(&g.upload(w_in)?, dw, &g.upload(u)?, &mut xd, leak)?;
                    Ok(g.stream().memcpy_dtoh(&xd, x)?)
                })
            }),
            Backend::Cpu { .. } => {
                cpu::reservoir_step(w_in, w, u, x, leak);
                Ok(())
            }
        }
    }
}

/// Runs `f` with a device copy of the (checked) reservoir `w` of `n` rows.
fn with_device_reservoir<T>(
    g: &GpuOps,
    w: ReservoirWeights<'_>,
    n: usize,
    f: impl FnOnce(&DeviceReservoir<'_>) -> Result<T>,
) -> Result<T> {
    match w {
        ReservoirWeights::Dense(d) => {
            let dense = g.upload(d)?;
            f(&DeviceReservoir::Dense(dense.as_view()))
        }
        ReservoirWeights::Csr(c) => {
            let csr = g.upload_csr(c, n, n)?;
            f(&DeviceReservoir::Csr(&csr))
        }
    }
}
