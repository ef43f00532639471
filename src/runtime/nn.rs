//! The neural-network operations of the runtime (`cuda/nn.cu`): a dense layer's bias, the fused
//! losses, dropout, row gathers and the fused optimiser steps, on device buffers ([`GpuOps`]) and
//! on host slices ([`ProductionGpuRuntime`], GPU or CPU fallback).

use super::{Backend, GpuOps, ProductionGpuRuntime};
use crate::cpu;
use crate::driver::{CudaView, CudaViewMut};
use crate::error::Result;
use crate::kernels::nn::{self, GatherElement, LossRows};
use crate::ops::nn::Optimizer;
use crate::ops::nn::{BiasAdd, BiasGrad, Dropout};
use crate::ops::shape;

/// `GpuOps` methods that run a launcher of `kernels::nn` on this runtime's kernels and stream:
/// `pub fn name(args) => launcher;`.
macro_rules! launchers {
    ($(
        $(#[$attr:meta])*
        pub fn $name:ident $(<$t:ident: $bound:path>)? ($($arg:ident: $ty:ty),* $(,)?) => $launcher:path;
    )+) => {
        impl GpuOps {$(
            $(#[$attr])*
            pub fn $name $(<$t: $bound>)? (&self, $($arg: $ty),*) -> Result<()> {
                $launcher(self.kernels(), self.stream(), $($arg),*)
            }
        )+}
    };
}

launchers! {
    /// `y[r, c] += bias[c]` in place (`y` `[rows, cols]`).
    pub fn bias_add(y: &mut CudaViewMut<f32>, bias: &CudaView<f32>, rows: usize, cols: usize) => nn::bias_add;

    /// `db[c] = sum_r dy[r, c]` (`dy` `[rows, cols]`), deterministic.
    pub fn bias_grad(dy: &CudaView<f32>, db: &mut CudaViewMut<f32>, rows: usize, cols: usize)
        => nn::bias_grad;

    /// Fused softmax cross-entropy of `logits` (`[rows, cols]`) against `labels`: per-row loss and
    /// correctness, and the gradient when `out.grad` is given (the launcher `kernels::nn::softmax_xent`).
    #[allow(clippy::too_many_arguments)] // the kernel's operands, each named
    pub fn softmax_xent(logits: &CudaView<f32>, labels: &CudaView<i32>, out: LossRows<'_, '_>,
        correct: &mut CudaViewMut<f32>, rows: usize, cols: usize) => nn::softmax_xent;

    /// Fused mean squared error of each row and its gradient (the launcher `kernels::nn::mse`).
    pub fn mse(pred: &CudaView<f32>, target: &CudaView<f32>, out: LossRows<'_, '_>, rows: usize, cols: usize)
        => nn::mse;

    /// Inverted dropout `y = u > p ? x / (1 - p) : 0` (the backward pass: the same on `dy`).
    pub fn dropout(x: &CudaView<f32>, u: &CudaView<f32>, y: &mut CudaViewMut<f32>, p: f32) => nn::dropout;

    /// `dst[r, :] = src[index[r], :]` (rows of `cols`; an index out of range gives zeros).
    pub fn gather_rows<T: GatherElement>(src: &CudaView<T>, index: &CudaView<u32>,
        dst: &mut CudaViewMut<T>, cols: usize) => nn::gather_rows;

    /// One step of `opt` over all `params` at learning rate `lr`, step `t` (1-based), in one launch.
    pub fn optimizer_step(opt: Optimizer, lr: f32, t: u64, params: &mut CudaViewMut<f32>,
        grads: &CudaView<f32>, state: &mut CudaViewMut<f32>) => nn::optimizer_step;

    /// [`optimizer_step`](Self::optimizer_step) with the step count kept on the device in `sched`
    /// (the launcher `kernels::nn::optimizer_step_scheduled`), for steps captured into a CUDA graph and replayed.
    pub fn optimizer_step_scheduled(opt: Optimizer, lr: f32, params: &mut CudaViewMut<f32>,
        grads: &CudaView<f32>, state: &mut CudaViewMut<f32>, sched: &mut CudaViewMut<f32>)
        => nn::optimizer_step_scheduled;
}

/// The outputs of a fused classification loss on host slices.
#[derive(Debug, Clone, PartialEq)]
pub struct RowLosses {
    /// The loss of each row.
    pub loss: Vec<f32>,
    /// 1 where the row's first maximum is at its label, else 0.
    pub correct: Vec<f32>,
    /// The gradient with respect to the logits.
    pub grad: Vec<f32>,
}

/// The neural-network operations on host slices. Shapes are checked first ([`crate::Error::Shape`]);
/// GPU and CPU agree to f32 rounding (sums in f32 on the GPU, f64 on the CPU), dropout, gathers and
/// the bias add exactly.
impl ProductionGpuRuntime {
    /// `y[r, c] += bias[c]` in place (`y` `[rows, cols]`).
    pub fn bias_add(&self, y: &mut [f32], bias: &[f32], rows: usize, cols: usize) -> Result<()> {
        self.update(BiasAdd { rows, cols }, y, [bias])
    }

    /// The column sums of `dy` (`[rows, cols]`): a dense layer's bias gradient.
    pub fn bias_grad(&self, dy: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        self.map(BiasGrad { rows, cols }, [dy])
    }

    /// Fused softmax cross-entropy of `logits` (`[rows, cols]`) against `labels` (`rows`, each in
    /// `0..cols`, else an error): the loss and correctness of each row and the gradient
    /// `(softmax - onehot) * grad_scale`.
    pub fn softmax_cross_entropy(
        &self,
        logits: &[f32],
        labels: &[i32],
        rows: usize,
        cols: usize,
        grad_scale: f32,
    ) -> Result<RowLosses> {
        shape::matrix("softmax_cross_entropy", "logits", logits.len(), rows, cols)?;
        shape::matrix("softmax_cross_entropy", "labels", labels.len(), rows, 1)?;
        if let Some(bad) = labels.iter().find(|&&l| usize::try_from(l).map_or(true, |l| l >= cols)) {
            return Err(crate::Error::Shape {
                op: "softmax_cross_entropy",
                expected: format!("labels in 0..{cols}"),
                got: format!("label {bad}"),
            });
        }
        if rows == 0 {
            return Ok(RowLosses { loss: Vec::new(), correct: Vec::new(), grad: Vec::new() });
        }
        self.dispatch(
            |g| {
                let (x, l) = (g.upload(logits)?, g.upload(labels)?);
                let mut loss = g.stream().alloc_zeros::<f32>(rows)?;
                let mut correct = g.stream().alloc_zeros::<f32>(rows)?;
                let mut grad = g.stream().alloc_zeros::<f32>(logits.len())?;
                // Named views: Rust 1.85 (the MSRV) does not extend temporaries inside `Some(..)`.
                let (mut loss_view, mut grad_view) = (loss.as_view_mut(), grad.as_view_mut());
                let out = LossRows { loss: &mut loss_view, grad: Some(&mut grad_view), grad_scale };
                g.softmax_xent(&x.as_view(), &l.as_view(), out, &mut correct.as_view_mut(), rows, cols)?;
                Ok(RowLosses {
                    loss: g.download(&loss)?,
                    correct: g.download(&correct)?,
                    grad: g.download(&grad)?,
                })
            },
            || {
                let (loss, correct, grad) = cpu::nn::softmax_xent(logits, labels, cols, grad_scale, true);
                RowLosses { loss, correct, grad: grad.unwrap_or_default() }
            },
        )
    }

    /// Fused mean squared error (`pred`, `target` `[rows, cols]`, `cols >= 1`): the loss of each
    /// row (`sum_c d^2 / cols`) and the gradient `2 d grad_scale`, `d = pred - target`.
    pub fn mse_loss(
        &self,
        pred: &[f32],
        target: &[f32],
        rows: usize,
        cols: usize,
        grad_scale: f32,
    ) -> Result<(Vec<f32>, Vec<f32>)> {
        shape::matrix("mse_loss", "pred", pred.len(), rows, cols)?;
        shape::matrix("mse_loss", "target", target.len(), rows, cols)?;
        if rows == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        if cols == 0 {
            return Err(crate::Error::Shape {
                op: "mse_loss",
                expected: "at least one column".into(),
                got: "0".into(),
            });
        }
        self.dispatch(
            |g| {
                let (p, t) = (g.upload(pred)?, g.upload(target)?);
                let mut loss = g.stream().alloc_zeros::<f32>(rows)?;
                let mut grad = g.stream().alloc_zeros::<f32>(pred.len())?;
                // Named views: Rust 1.85 (the MSRV) does not extend temporaries inside `Some(..)`.
                let (mut loss_view, mut grad_view) = (loss.as_view_mut(), grad.as_view_mut());
                let out = LossRows { loss: &mut loss_view, grad: Some(&mut grad_view), grad_scale };
                g.mse(&p.as_view(), &t.as_view(), out, rows, cols)?;
                Ok((g.download(&loss)?, g.download(&grad)?))
            },
            || cpu::nn::mse(pred, target, cols, grad_scale),
        )
    }

    /// Inverted dropout `u > p ? x / (1 - p) : 0` with uniforms `u` (as from
    /// [`rand_uniform`](Self::rand_uniform)), `p` in `[0, 1)`. Exact on GPU and CPU.
    pub fn dropout(&self, x: &[f32], u: &[f32], p: f32) -> Result<Vec<f32>> {
        self.map(Dropout(p), [x, u])
    }

    /// `src[index[r], :]` for each `r` (rows of `cols`; an index out of range gives zeros). Exact.
    pub fn gather_rows<T: GatherElement + Copy + Default + crate::driver::ValidAsZeroBits>(
        &self,
        src: &[T],
        index: &[u32],
        cols: usize,
    ) -> Result<Vec<T>> {
        let len = shape::elements("gather_rows", "dst", &[index.len(), cols])?;
        if cols == 0 || src.len() % cols != 0 {
            return Err(crate::Error::Shape {
                op: "gather_rows",
                expected: format!("`src` of whole rows of {cols} > 0 elements"),
                got: format!("{} elements", src.len()),
            });
        }
        if len == 0 {
            return Ok(Vec::new());
        }
        self.dispatch(
            |g| {
                let mut dst = g.stream().alloc_zeros::<T>(len)?;
                g.gather_rows(
                    &g.upload(src)?.as_view(),
                    &g.upload(index)?.as_view(),
                    &mut dst.as_view_mut(),
                    cols,
                )?;
                g.download(&dst)
            },
            || cpu::nn::gather_rows(src, index, cols),
        )
    }

    /// One step of `opt` over `params` with `grads` and the rule's `state` (zeros before the first
    /// step; [`Optimizer::state_len`] elements), at learning rate `lr`, step `t` (1-based).
    #[allow(clippy::too_many_arguments)] // the step's operands, each named
    pub fn optimizer_step(
        &self,
        opt: Optimizer,
        lr: f32,
        t: u64,
        params: &mut [f32],
        grads: &[f32],
        state: &mut [f32],
    ) -> Result<()> {
        let n = shape::same_len(opt.kernel(), &[("params", params.len()), ("grads", grads.len())])?;
        shape::matrix(opt.kernel(), "state", state.len(), opt.state_len(n)?, 1)?;
        let scalars = opt.adam_scalars(lr, t)?;
        if n == 0 {
            return Ok(());
        }
        match &self.backend {
            Backend::Gpu(ops) => ops.host(|g| {
                let (mut p, gr, mut s) = (g.upload(params)?, g.upload(grads)?, g.upload(state)?);
                g.optimizer_step(opt, lr, t, &mut p.as_view_mut(), &gr.as_view(), &mut s.as_view_mut())?;
                g.stream().memcpy_dtoh(&p, params)?;
                Ok(g.stream().memcpy_dtoh(&s, state)?)
            }),
            Backend::Cpu { .. } => {
                cpu::nn::optimizer_step(opt, lr, scalars, params, grads, state);
                Ok(())
            }
        }
    }
}
