//! Norms (`cuda/norms.cu`): layer norm and RMS norm over the rows of a matrix (f32, or bf16 in and
//! out), batch norm over NCHW. Their checks, which the runtime's entry points and the launchers
//! share; the row norms' launch and CPU body.

use half::bf16;

use crate::cpu;
use crate::driver::{CudaView, CudaViewMut};
use crate::error::Result;
use crate::kernels::norms::{self as launch, NormElement};
use crate::ops::Gpu;

pub use crate::spec::norms::{check_batch, check_batch_train, check_nchw, check_rows, Lens, Nchw};

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

/// A row norm's output with each row's mean and rstd.
pub(crate) type WithStats<T> = (Vec<T>, Vec<f32>, Vec<f32>);

/// The element types of the row norms, with their CPU bodies.
pub(crate) trait Element: NormElement {
    /// `(out, mean, rstd)` of checked, non-empty operands; the statistics are empty where the CPU
    /// body does not give them (RMS norm's mean, bf16).
    fn cpu(op: Rows, x: &[Self], gamma: Option<&[f32]>, beta: Option<&[f32]>) -> WithStats<Self>;
}

impl Element for f32 {
    fn cpu(op: Rows, x: &[f32], gamma: Option<&[f32]>, beta: Option<&[f32]>) -> WithStats<f32> {
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
    fn cpu(op: Rows, x: &[bf16], gamma: Option<&[f32]>, beta: Option<&[f32]>) -> WithStats<bf16> {
        let Rows { rows, cols, eps, .. } = op;
        let y = match op.norm {
            Norm::Layer => cpu::layer_norm_bf16(x, rows, cols, gamma, beta, eps),
            Norm::Rms => cpu::rms_norm_bf16(x, rows, cols, gamma, eps),
        };
        (y, Vec::new(), Vec::new())
    }
}
