//! Neural-network operations (`cuda/nn.cu`): the optimisers' update rules and the dropout rate's check.

use crate::error::{Error, Result};
use crate::spec::shape;

/// An optimiser's update rule; the step is one launch over all parameters (`prism_sgd_momentum_f32`,
/// `prism_adam_f32`, `prism_adamw_f32`) with PyTorch's arithmetic, and the CPU fallback computes the
/// same (`cpu::nn::optimizer_step`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Optimizer {
    /// SGD with momentum (dampening 0): `g' = g + weight_decay p`, `v = momentum v + g'`, `p -= lr v`.
    Sgd {
        /// Momentum (0 gives plain SGD).
        momentum: f32,
        /// L2 penalty added to the gradient.
        weight_decay: f32,
    },
    /// Adam with bias correction; `weight_decay` is an L2 penalty added to the gradient.
    Adam {
        /// First-moment decay.
        beta1: f32,
        /// Second-moment decay.
        beta2: f32,
        /// Added to the denominator.
        eps: f32,
        /// L2 penalty added to the gradient.
        weight_decay: f32,
    },
    /// AdamW: Adam with decoupled weight decay (`p *= 1 - lr weight_decay` before the step).
    AdamW {
        /// First-moment decay.
        beta1: f32,
        /// Second-moment decay.
        beta2: f32,
        /// Added to the denominator.
        eps: f32,
        /// Decoupled weight decay.
        weight_decay: f32,
    },
}

impl Optimizer {
    /// Adam with PyTorch's defaults (0.9, 0.999, 1e-8, no weight decay).
    pub const ADAM: Self = Self::Adam { beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.0 };
    /// AdamW with PyTorch's defaults (0.9, 0.999, 1e-8, weight decay 0.01).
    pub const ADAMW: Self = Self::AdamW { beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.01 };

    /// The kernel of this rule.
    pub fn kernel(&self) -> &'static str {
        match self {
            Self::Sgd { .. } => "prism_sgd_momentum_f32",
            Self::Adam { .. } => "prism_adam_f32",
            Self::AdamW { .. } => "prism_adamw_f32",
        }
    }

    /// State elements for `n` parameters: the velocity (SGD), or the two moments one after the
    /// other (Adam, AdamW: `m` then `v`).
    pub fn state_len(&self, n: usize) -> Result<usize> {
        let per = if matches!(self, Self::Sgd { .. }) { 1 } else { 2 };
        shape::elements(self.kernel(), "state", &[n, per])
    }

    /// The host-side scalars of step `t` (1-based) at learning rate `lr`:
    /// `(step_size, bc2_sqrt, decay)` for Adam and AdamW; `t == 0` is an error.
    pub fn adam_scalars(&self, lr: f32, t: u64) -> Result<(f32, f32, f32)> {
        let (beta1, beta2, decay) = match *self {
            Self::Adam { beta1, beta2, .. } => (beta1, beta2, 0.0),
            Self::AdamW { beta1, beta2, weight_decay, .. } => (beta1, beta2, lr * weight_decay),
            Self::Sgd { .. } => return Ok((lr, 1.0, 0.0)),
        };
        if t == 0 {
            return Err(Error::Shape {
                op: self.kernel(),
                expected: "a step count of at least 1".into(),
                got: "0".into(),
            });
        }
        let t = i32::try_from(t).unwrap_or(i32::MAX);
        let bc1 = 1.0 - f64::from(beta1).powi(t);
        let bc2 = 1.0 - f64::from(beta2).powi(t);
        Ok(((f64::from(lr) / bc1) as f32, bc2.sqrt() as f32, decay))
    }
}

/// `Ok` for a dropout rate in `[0, 1)`, else [`Error::Shape`].
pub fn check_dropout_rate(op: &'static str, p: f32) -> Result<()> {
    if (0.0..1.0).contains(&p) {
        Ok(())
    } else {
        Err(Error::Shape { op, expected: "a dropout rate in [0, 1)".into(), got: p.to_string() })
    }
}
