//! Norms (`cuda/norms.cu`): layer norm and RMS norm over the rows of a matrix (f32, or bf16 in and
//! out), batch norm over NCHW. Their checks, which the runtime's entry points and the launchers
//! share; the row norms' launch and CPU body.

use half::bf16;

use crate::cpu;
use crate::driver::{CudaView, CudaViewMut};
use crate::error::{Error, Result};
use crate::kernels::args;
use crate::kernels::norms::{self as launch, NormElement};
use crate::ops::{shape, Gpu};

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

/// Checks batch norm's NCHW `x` (`len` elements) and its per-channel operands (name, length;
/// absent ones skipped), `c` elements each.
pub fn check_batch(
    op: &'static str,
    len: usize,
    (n, c, hw): Nchw,
    channels: &[(&str, Option<usize>)],
) -> Result<()> {
    check_nchw(op, len, n, c, hw)?;
    for (name, len) in channels {
        args::optional_len(op, name, *len, c)?;
    }
    Ok(())
}

/// [`check_batch`] for the training statistics, which also need a value in each channel
/// (`n * hw >= 1`) when there are channels.
pub fn check_batch_train(
    op: &'static str,
    len: usize,
    (n, c, hw): Nchw,
    channels: &[(&str, Option<usize>)],
) -> Result<()> {
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

/// The optional operands of a batch-norm training step by name, for [`check_batch_train`]: gamma,
/// beta, and the running mean and variance.
pub(crate) fn train_lens(
    gamma: Option<usize>,
    beta: Option<usize>,
    running: Option<[usize; 2]>,
) -> [(&'static str, Option<usize>); 4] {
    [
        ("gamma", gamma),
        ("beta", beta),
        ("running mean", running.map(|[mean, _]| mean)),
        ("running var", running.map(|[_, var]| var)),
    ]
}

/// Checks a row norm's operands: `x` and `out` of `rows * cols`, the per-column `params` (gamma,
/// beta) of `cols`, the per-row `stats` of `rows`; absent operands are skipped.
pub fn check_rows(
    op: &'static str,
    x: usize,
    out: usize,
    params: &[(&str, Option<usize>)],
    stats: &[(&str, Option<usize>)],
    rows: usize,
    cols: usize,
) -> Result<()> {
    shape::matrix(op, "x", x, rows, cols)?;
    shape::same_len(op, &[("x", x), ("out", out)])?;
    for (name, len) in params {
        args::optional_len(op, name, *len, cols)?;
    }
    for (name, len) in stats {
        args::optional_len(op, name, *len, rows)?;
    }
    Ok(())
}

/// Which row norm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Norm {
    /// `(x - mean) * rsqrt(var + eps) * gamma + beta` (biased variance).
    Layer,
    /// `x * rsqrt(mean(x^2) + eps) * gamma` (no beta, no mean).
    Rms,
}

/// A layer norm or RMS norm of each row of `x` (`[rows, cols]`), its errors named `op`. Absent
/// gamma and beta mean ones and zeros.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rows {
    pub norm: Norm,
    pub op: &'static str,
    pub rows: usize,
    pub cols: usize,
    pub eps: f32,
}

impl Rows {
    pub fn new(norm: Norm, op: &'static str, rows: usize, cols: usize, eps: f32) -> Self {
        Self { norm, op, rows, cols, eps }
    }

    /// Checks `x` and the optional gamma and beta (`cols` each); the output and the statistics are
    /// the caller's to size.
    pub fn check(self, x: usize, gamma: Option<usize>, beta: Option<usize>) -> Result<()> {
        check_rows(self.op, x, x, &[("gamma", gamma), ("beta", beta)], &[], self.rows, self.cols)
    }

    /// Launches the kernel on checked operands: `x` into `out`, with the optional gamma and beta
    /// and the optional statistics (mean, rstd); RMS norm takes no beta and no mean.
    pub fn launch<T: NormElement>(
        self,
        gpu: Gpu,
        x: &CudaView<T>,
        [gamma, beta]: [Option<&CudaView<f32>>; 2],
        out: &mut CudaViewMut<T>,
        [mean, rstd]: [Option<&mut CudaViewMut<f32>>; 2],
    ) -> Result<()> {
        let (Gpu { kernels, stream }, Rows { rows, cols, eps, .. }) = (gpu, self);
        match self.norm {
            Norm::Layer => {
                launch::layer_norm(kernels, stream, x, gamma, beta, out, mean, rstd, rows, cols, eps)
            }
            Norm::Rms => launch::rms_norm(kernels, stream, x, gamma, out, rstd, rows, cols, eps),
        }
    }
}

/// The element types of the row norms, with their CPU bodies.
pub(crate) trait Element: NormElement {
    /// `(out, mean, rstd)` of checked, non-empty operands; the statistics are empty where the CPU
    /// body does not give them (RMS norm's mean, bf16).
    fn cpu(
        op: Rows,
        x: &[Self],
        gamma: Option<&[f32]>,
        beta: Option<&[f32]>,
    ) -> (Vec<Self>, Vec<f32>, Vec<f32>);
}

impl Element for f32 {
    fn cpu(
        op: Rows,
        x: &[f32],
        gamma: Option<&[f32]>,
        beta: Option<&[f32]>,
    ) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let Rows { rows, cols, eps, .. } = op;
        match op.norm {
            Norm::Layer => cpu::layer_norm_with_stats(x, rows, cols, gamma, beta, eps),
            Norm::Rms => {
                let (y, rstd) = cpu::rms_norm_with_stats(x, rows, cols, gamma, eps);
                (y, Vec::new(), rstd)
            }
        }
    }
}

impl Element for bf16 {
    fn cpu(
        op: Rows,
        x: &[bf16],
        gamma: Option<&[f32]>,
        beta: Option<&[f32]>,
    ) -> (Vec<bf16>, Vec<f32>, Vec<f32>) {
        let Rows { rows, cols, eps, .. } = op;
        let y = match op.norm {
            Norm::Layer => cpu::layer_norm_bf16(x, rows, cols, gamma, beta, eps),
            Norm::Rms => cpu::rms_norm_bf16(x, rows, cols, gamma, eps),
        };
        (y, Vec::new(), Vec::new())
    }
}
