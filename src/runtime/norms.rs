//! Layer, RMS and batch norms on host slices.

use half::bf16;

use super::{upload_opt, Backend, ChannelStats, ProductionGpuRuntime};
use crate::cpu;
use crate::driver::CudaSlice;
use crate::error::Result;
use crate::ops::norms::{self, Nchw, Norm};

/// Running statistics on the host that a batch-norm training step updates:
/// `r = (1 - momentum) * r + momentum * stat`, with the unbiased variance for `var`.
#[derive(Debug)]
pub struct RunningStats<'a> {
    /// Running mean (`c` elements).
    pub mean: &'a mut [f32],
    /// Running variance (`c` elements).
    pub var: &'a mut [f32],
    /// The weight of the new statistics.
    pub momentum: f32,
}

impl ProductionGpuRuntime {
    /// The host-slice path of the row norms: checks; then upload → launch → download on a GPU,
    /// or the CPU body: `(out, mean, rstd)`, the statistics when `stats` (RMS norm: no mean). An
    /// empty `x` gives empty results without a launch.
    fn row_norm<T: norms::Element>(
        &self,
        op: norms::Rows,
        x: &[T],
        gamma: Option<&[f32]>,
        beta: Option<&[f32]>,
        stats: bool,
    ) -> Result<norms::WithStats<T>> {
        op.check(x.len(), gamma.map(<[f32]>::len), beta.map(<[f32]>::len))?;
        if x.is_empty() {
            return Ok(Default::default());
        }
        self.dispatch(
            |g| {
                let (gamma, beta) = (upload_opt(g, gamma)?, upload_opt(g, beta)?);
                let (y, mean, rstd) = g.row_norm(op, &g.upload(x)?, gamma.as_ref(), beta.as_ref(), stats)?;
                let stat = |s: &CudaSlice<f32>| if s.is_empty() { Ok(Vec::new()) } else { g.download(s) };
                Ok((g.download(&y)?, stat(&mean)?, stat(&rstd)?))
            },
            || T::cpu(op, x, gamma, beta),
        )
    }

    /// Layer norm of each row with each row's mean and rstd: `(out, mean, rstd)`; see
    /// [`layer_norm`](Self::layer_norm).
    pub fn layer_norm_with_stats(
        &self,
        x: &[f32],
        rows: usize,
        cols: usize,
        gamma: Option<&[f32]>,
        beta: Option<&[f32]>,
        eps: f32,
    ) -> Result<(Vec<f32>, Vec<f32>, Vec<f32>)> {
        self.row_norm(norms::Rows::new(Norm::Layer, "layer_norm", rows, cols, eps), x, gamma, beta, true)
    }

    /// Layer norm of each row of `x` (`[rows, cols]`): `(x - mean) * rsqrt(var + eps) * gamma +
    /// beta` (biased variance; absent gamma/beta: ones/zeros). Within 1e-5 of the f64 reference,
    /// relative to `max(|y|, 0.1 * max|x| * rstd * max|gamma|)`: the GPU's f32 statistics lose
    /// digits to cancellation in rows whose spread is small against their values.
    pub fn layer_norm(
        &self,
        x: &[f32],
        rows: usize,
        cols: usize,
        gamma: Option<&[f32]>,
        beta: Option<&[f32]>,
        eps: f32,
    ) -> Result<Vec<f32>> {
        let op = norms::Rows::new(Norm::Layer, "layer_norm", rows, cols, eps);
        Ok(self.row_norm(op, x, gamma, beta, false)?.0)
    }

    /// RMS norm of each row with each row's rstd: `(out, rstd)`; see [`rms_norm`](Self::rms_norm).
    pub fn rms_norm_with_stats(
        &self,
        x: &[f32],
        rows: usize,
        cols: usize,
        gamma: Option<&[f32]>,
        eps: f32,
    ) -> Result<(Vec<f32>, Vec<f32>)> {
        let op = norms::Rows::new(Norm::Rms, "rms_norm", rows, cols, eps);
        let (y, _, rstd) = self.row_norm(op, x, gamma, None, true)?;
        Ok((y, rstd))
    }

    /// RMS norm of each row of `x` (`[rows, cols]`): `x * rsqrt(mean(x^2) + eps) * gamma` (absent
    /// gamma: ones). Within 1e-5 of the f64 reference.
    pub fn rms_norm(
        &self,
        x: &[f32],
        rows: usize,
        cols: usize,
        gamma: Option<&[f32]>,
        eps: f32,
    ) -> Result<Vec<f32>> {
        let op = norms::Rows::new(Norm::Rms, "rms_norm", rows, cols, eps);
        Ok(self.row_norm(op, x, gamma, None, false)?.0)
    }

    /// Layer norm of bf16 rows, f32 accumulation and f32 gamma/beta, output rounded to bf16: within
    /// 8e-3 (two bf16 roundings) of the f64 reference on the bf16 inputs.
    pub fn layer_norm_bf16(
        &self,
        x: &[bf16],
        rows: usize,
        cols: usize,
        gamma: Option<&[f32]>,
        beta: Option<&[f32]>,
        eps: f32,
    ) -> Result<Vec<bf16>> {
        let op = norms::Rows::new(Norm::Layer, "layer_norm_bf16", rows, cols, eps);
        Ok(self.row_norm(op, x, gamma, beta, false)?.0)
    }

    /// RMS norm of bf16 rows, f32 accumulation and f32 gamma, output rounded to bf16: within 8e-3.
    pub fn rms_norm_bf16(
        &self,
        x: &[bf16],
        rows: usize,
        cols: usize,
        gamma: Option<&[f32]>,
        eps: f32,
    ) -> Result<Vec<bf16>> {
        let op = norms::Rows::new(Norm::Rms, "rms_norm_bf16", rows, cols, eps);
        Ok(self.row_norm(op, x, gamma, None, false)?.0)
    }

    /// Batch norm of NCHW `x` (`nchw = (n, c, H * W)`) with given statistics (inference):
    /// `(x - mean[c]) * gamma[c] * rsqrt(var[c] + eps) + beta[c]`. Within 1e-5.
    #[allow(clippy::too_many_arguments)] // the operation's operands
    pub fn batch_norm(
        &self,
        x: &[f32],
        nchw: Nchw,
        mean: &[f32],
        var: &[f32],
        gamma: Option<&[f32]>,
        beta: Option<&[f32]>,
        eps: f32,
    ) -> Result<Vec<f32>> {
        let channels = [("mean", Some(mean)), ("var", Some(var)), ("gamma", gamma), ("beta", beta)];
        norms::check_batch(
            "batch_norm",
            x.len(),
            nchw,
            &channels.map(|(name, v)| (name, v.map(<[f32]>::len))),
        )?;
        if x.is_empty() {
            return Ok(Vec::new());
        }
        self.dispatch(
            |g| {
                let (m, v) = (g.upload(mean)?, g.upload(var)?);
                let (gm, bt) = (upload_opt(g, gamma)?, upload_opt(g, beta)?);
                let stats = ChannelStats { mean: &m, var: &v, gamma: gm.as_ref(), beta: bt.as_ref() };
                g.download(&g.batch_norm(&g.upload(x)?, nchw, stats, eps)?)
            },
            || {
                let (n, c, hw) = nchw;
                cpu::batch_norm_apply(x, n, c, hw, mean, var, gamma, beta, eps)
            },
        )
    }

    /// Training forward of batch norm over NCHW `x`: normalises with the batch statistics and
    /// returns `(out, mean, var)` (biased variance); updates `running` when given (unbiased
    /// variance). Needs `n * hw >= 1` when `c >= 1`. Within 1e-5 (statistics in f64 on both).
    pub fn batch_norm_train(
        &self,
        x: &[f32],
        nchw: Nchw,
        gamma: Option<&[f32]>,
        beta: Option<&[f32]>,
        eps: f32,
        running: Option<RunningStats<'_>>,
    ) -> Result<(Vec<f32>, Vec<f32>, Vec<f32>)> {
        let running_lens = running.as_ref().map(|r| [r.mean.len(), r.var.len()]);
        let channels = norms::train_lens(gamma.map(<[f32]>::len), beta.map(<[f32]>::len), running_lens);
        norms::check_batch_train("batch_norm_train", x.len(), nchw, &channels)?;
        let (n, c, hw) = nchw;
        if c == 0 {
            return Ok(Default::default());
        }
        match &self.backend {
            Backend::Gpu(ops) => ops.host(|g| {
                let (gm, bt) = (upload_opt(g, gamma)?, upload_opt(g, beta)?);
                let mut dev_running = match &running {
                    Some(r) => Some((g.upload(r.mean)?, g.upload(r.var)?, r.momentum)),
                    None => None,
                };
                let (y, m, v) = g.batch_norm_train(
                    &g.upload(x)?,
                    nchw,
                    gm.as_ref(),
                    bt.as_ref(),
                    eps,
                    dev_running.as_mut().map(|(rm, rv, momentum)| (rm, rv, *momentum)),
                )?;
                if let (Some(r), Some((rm, rv, _))) = (running, &dev_running) {
                    g.stream().memcpy_dtoh(rm, r.mean)?;
                    g.stream().memcpy_dtoh(rv, r.var)?;
                }
                Ok((g.download(&y)?, g.download(&m)?, g.download(&v)?))
            }),
            Backend::Cpu { .. } => {
                let (y, m, v) = cpu::batch_norm_train(x, n, c, hw, gamma, beta, eps);
                if let Some(r) = running {
                    cpu::batch_norm_update_running(r.mean, r.var, &m, &v, n * hw, r.momentum);
                }
                Ok((y, m, v))
            }
        }
    }
}
