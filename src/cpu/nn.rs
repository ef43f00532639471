//! The CPU bodies of `cuda/nn.cu`: bias add and gradient, the fused losses, dropout, row gathers
//! and the optimiser steps, with the kernels' formulas (sums in f64 here, in f32 on the GPU).

use rayon::prelude::*;

use crate::error::Result;
use crate::spec::nn::Optimizer;
use crate::spec::shape;

/// Rows of at least this many elements in all are worked on in parallel.
const PAR_MIN: usize = 1 << 15;

/// `y[r, c] += bias[c]` for `y` `[rows, bias.len()]`.
pub(crate) fn bias_add(y: &mut [f32], bias: &[f32]) {
    if bias.is_empty() {
        return;
    }
    let add = |row: &mut [f32]| row.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
    if y.len() >= PAR_MIN {
        y.par_chunks_exact_mut(bias.len()).for_each(add);
    } else {
        y.chunks_exact_mut(bias.len()).for_each(add);
    }
}

/// `db[c] = sum_r dy[r, c]` for `dy` `[rows, cols]`.
pub(crate) fn bias_grad(dy: &[f32], cols: usize) -> Result<Vec<f32>> {
    // `cols` is the caller's: with no rows it is not bounded by `dy`, so allocate fallibly.
    let mut acc: Vec<f64> = shape::zeroed("bias_grad", "db", cols)?;
    if cols > 0 {
        for row in dy.chunks_exact(cols) {
            acc.iter_mut().zip(row).for_each(|(a, &v)| *a += f64::from(v));
        }
    }
    Ok(acc.into_iter().map(|v| v as f32).collect())
}

/// One row of softmax cross-entropy: `(loss, correct)`, and the gradient written to `grad` when
/// given. A label outside `0..cols` gives NaN, as on the GPU.
fn xent_row(x: &[f32], label: i32, grad: Option<&mut [f32]>, grad_scale: f32) -> (f32, f32) {
    let mut arg = x.len();
    let mut m = f32::NEG_INFINITY;
    for (c, &v) in x.iter().enumerate() {
        if v > m {
            m = v;
            arg = c;
        }
    }
    let s: f64 = x.iter().map(|&v| f64::from(v - m).exp()).sum();
    let known = usize::try_from(label).ok().filter(|&l| l < x.len());
    let loss = match known {
        Some(l) => (f64::from(m) + s.ln() - f64::from(x[l])) as f32,
        None => f32::NAN,
    };
    if let Some(g) = grad {
        for (c, (gv, &v)) in g.iter_mut().zip(x).enumerate() {
            *gv = match known {
                Some(l) => {
                    let p = f64::from(v - m).exp() / s;
                    ((p - if c == l { 1.0 } else { 0.0 }) * f64::from(grad_scale)) as f32
                }
                None => f32::NAN,
            };
        }
    }
    let correct = if known == Some(arg) { 1.0 } else { 0.0 };
    (loss, correct)
}

/// Softmax cross-entropy of each row of `logits` (`[labels.len(), cols]`):
/// `(loss per row, correct per row, gradient)`, the gradient scaled by `grad_scale` (absent
/// unless `with_grad`).
pub(crate) fn softmax_xent(
    logits: &[f32],
    labels: &[i32],
    cols: usize,
    grad_scale: f32,
    with_grad: bool,
) -> (Vec<f32>, Vec<f32>, Option<Vec<f32>>) {
    let mut grad = with_grad.then(|| vec![0.0f32; logits.len()]);
    let mut out = vec![(0.0f32, 0.0f32); labels.len()];
    if cols > 0 {
        match grad.as_mut() {
            Some(g) => out
                .par_iter_mut()
                .zip(logits.par_chunks_exact(cols).zip(g.par_chunks_exact_mut(cols)))
                .zip(labels.par_iter())
                .for_each(|((o, (x, g)), &l)| *o = xent_row(x, l, Some(g), grad_scale)),
            None => out
                .par_iter_mut()
                .zip(logits.par_chunks_exact(cols))
                .zip(labels.par_iter())
                .for_each(|((o, x), &l)| *o = xent_row(x, l, None, grad_scale)),
        }
    }
    let (loss, correct) = out.into_iter().unzip();
    (loss, correct, grad)
}

/// Mean squared error of each row (`[rows, cols]`): `(sum_c d^2 / cols per row, 2 d grad_scale)`
/// with `d = pred - target`.
pub(crate) fn mse(pred: &[f32], target: &[f32], cols: usize, grad_scale: f32) -> (Vec<f32>, Vec<f32>) {
    let grad = pred.iter().zip(target).map(|(&p, &t)| 2.0 * (p - t) * grad_scale).collect();
    let loss = if cols == 0 {
        Vec::new()
    } else {
        pred.chunks_exact(cols)
            .zip(target.chunks_exact(cols))
            .map(|(p, t)| {
                let s: f64 = p.iter().zip(t).map(|(&a, &b)| f64::from(a - b).powi(2)).sum();
                (s / cols as f64) as f32
            })
            .collect()
    };
    (loss, grad)
}

/// Inverted dropout: `u > p ? x / (1 - p) : 0`.
pub(crate) fn dropout(x: &[f32], u: &[f32], p: f32) -> Vec<f32> {
    let scale = 1.0 / (1.0 - p);
    x.iter().zip(u).map(|(&v, &r)| if r > p { v * scale } else { 0.0 }).collect()
}

/// `dst[r, :] = src[index[r], :]` (rows of `cols`); an index out of range gives zeros.
pub(crate) fn gather_rows<T: Copy + Default>(src: &[T], index: &[u32], cols: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(index.len() * cols);
    for &i in index {
        let start = i as usize * cols;
        match src.get(start..start + cols) {
            Some(row) => out.extend_from_slice(row),
            None => out.extend(std::iter::repeat_n(T::default(), cols)),
        }
    }
    out
}

/// One optimiser step (the kernels' arithmetic, with the scalars of
/// [`Optimizer::adam_scalars`]); `state` is `m` then `v` for Adam and AdamW, the velocity for SGD.
pub(crate) fn optimizer_step(
    opt: Optimizer,
    lr: f32,
    scalars: (f32, f32, f32),
    p: &mut [f32],
    g: &[f32],
    state: &mut [f32],
) {
    let (step_size, bc2_sqrt, decay) = scalars;
    match opt {
        Optimizer::Sgd { momentum, weight_decay } => {
            p.par_iter_mut().zip(g).zip(state).for_each(|((p, &g), v)| {
                let grad = weight_decay.mul_add(*p, g);
                *v = momentum.mul_add(*v, grad);
                *p = (-lr).mul_add(*v, *p);
            });
        }
        Optimizer::Adam { beta1, beta2, eps, .. } | Optimizer::AdamW { beta1, beta2, eps, .. } => {
            let l2 = match opt {
                Optimizer::Adam { weight_decay, .. } => weight_decay,
                _ => 0.0,
            };
            let (m, v) = state.split_at_mut(p.len());
            p.par_iter_mut().zip(g).zip(m.par_iter_mut().zip(v)).for_each(|((p, &g), (m, v))| {
                let grad = l2.mul_add(*p, g);
                let decayed = *p * (1.0 - decay);
                let mt = beta1.mul_add(*m, (1.0 - beta1) * grad);
                let vt = beta2.mul_add(*v, (1.0 - beta2) * grad * grad);
                *m = mt;
                *v = vt;
                *p = decayed - step_size * mt / (vt.sqrt() / bc2_sqrt + eps);
            });
        }
    }
}
