//! Class labels on a device ([`Labels`]) and the fused losses: softmax cross-entropy and MSE, each
//! returning the per-row loss and the gradient from one launch.

use crate::driver::CudaSlice;
use crate::error::{Error, Result};
use crate::kernels::nn::LossRows;
use crate::nn::tensor::{BufMut, Device, Storage, Tensor};
use crate::ops::reductions::Reduce;

/// Class indices (`i32` on the device) for a classification loss.
pub struct Labels {
    pub(crate) data: LabelStorage,
}

pub(crate) enum LabelStorage {
    Host(Vec<i32>),
    Gpu(CudaSlice<i32>),
}

impl std::fmt::Debug for Labels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Labels").field("len", &self.len()).finish()
    }
}

impl Labels {
    /// `labels` (each below `classes`, else an error naming the first bad one) on `device`.
    pub fn new(device: &Device, labels: &[u32], classes: usize) -> Result<Self> {
        let host = check_labels("Labels::new", labels, classes)?;
        Self::placed(device, host)
    }

    pub(crate) fn placed(device: &Device, host: Vec<i32>) -> Result<Self> {
        let data = if device.is_gpu() {
            LabelStorage::Gpu(device.gpu_ops()?.upload(&host)?)
        } else {
            LabelStorage::Host(host)
        };
        Ok(Self { data })
    }

    /// How many labels.
    pub fn len(&self) -> usize {
        match &self.data {
            LabelStorage::Host(v) => v.len(),
            LabelStorage::Gpu(s) => s.len(),
        }
    }

    /// `true` without labels.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `labels` as `i32`, or [`Error::Shape`] naming the first label not below `classes`.
pub(crate) fn check_labels(op: &'static str, labels: &[u32], classes: usize) -> Result<Vec<i32>> {
    labels
        .iter()
        .enumerate()
        .map(|(i, &l)| match i32::try_from(l) {
            Ok(v) if (l as usize) < classes => Ok(v),
            _ => Err(Error::Shape {
                op,
                expected: format!("labels in 0..{classes}"),
                got: format!("label {l} at index {i}"),
            }),
        })
        .collect()
}

/// A fused loss's outputs, on the device of its inputs.
#[derive(Debug)]
pub struct LossOutput {
    /// The loss of each row (`[rows]`).
    pub loss: Tensor,
    /// The gradient with respect to the input, scaled for the mean loss over the rows.
    pub grad: Tensor,
    /// Cross-entropy: 1 where a row's first maximum is at its label, else 0 (`[rows]`).
    pub correct: Option<Tensor>,
}

impl LossOutput {
    /// The mean loss over the rows (waits for the GPU).
    pub fn mean_loss(&self, device: &Device) -> Result<f32> {
        Ok(sum(device, &self.loss)? / self.loss.len() as f32)
    }
}

/// The sum of a tensor's elements (f64 partials on both), copied to the host.
pub(crate) fn sum(device: &Device, t: &Tensor) -> Result<f32> {
    match &t.data {
        Storage::Host(v) => device.runtime().sum(v),
        Storage::Gpu(s) => {
            let ops = device.gpu_ops()?;
            Ok(ops.download(&ops.reduce(Reduce::Sum, s)?)?[0])
        }
    }
}

fn rows_of(op: &'static str, t: &Tensor) -> Result<(usize, usize)> {
    match t.shape() {
        [rows, cols] => Ok((*rows, *cols)),
        s => Err(Error::Shape { op, expected: "a [rows, cols] tensor".into(), got: format!("{s:?}") }),
    }
}

/// Softmax cross-entropy of `logits` (`[rows, classes]`) against `labels` (`rows`): the loss and
/// correctness of each row, and the gradient of the mean loss, `(softmax - onehot) / rows`.
pub fn softmax_cross_entropy(device: &Device, logits: &Tensor, labels: &Labels) -> Result<LossOutput> {
    const OP: &str = "softmax_cross_entropy";
    let (rows, _) = rows_of(OP, logits)?;
    let mut loss = Tensor::scratch(device, &[rows])?;
    let mut correct = Tensor::scratch(device, &[rows])?;
    let grad = xent_into(
        device,
        logits,
        labels,
        0..rows,
        loss.range_mut(0..rows),
        correct.range_mut(0..rows),
        Some(rows),
    )?;
    let grad = grad.expect("asked for");
    Ok(LossOutput { loss, grad, correct: Some(correct) })
}

/// The cross-entropy of `logits` against `labels[range]` (as many rows as the range), with the
/// per-row loss and correctness written to `loss` and `correct`; with `grad_rows`, the gradient of
/// the loss summed over these rows and divided by `grad_rows` (the mean loss when it is the row
/// count; a data-parallel replica's share of the mean over the global batch when that is larger).
pub(crate) fn xent_into(
    device: &Device,
    logits: &Tensor,
    labels: &Labels,
    range: std::ops::Range<usize>,
    loss: BufMut<'_>,
    correct: BufMut<'_>,
    grad_rows: Option<usize>,
) -> Result<Option<Tensor>> {
    const OP: &str = "softmax_cross_entropy";
    let (rows, cols) = rows_of(OP, logits)?;
    if range.len() != rows || range.end > labels.len() {
        return Err(Error::Shape {
            op: OP,
            expected: format!("{rows} labels"),
            got: format!("{} (of {})", range.len(), labels.len()),
        });
    }
    let with_grad = grad_rows.is_some();
    let scale = 1.0 / grad_rows.unwrap_or(rows).max(1) as f32;
    match (&logits.data, &labels.data, loss, correct) {
        (Storage::Gpu(x), LabelStorage::Gpu(l), BufMut::Gpu(mut lv), BufMut::Gpu(mut cv)) => {
            let ops = device.gpu_ops()?;
            let mut grad = if with_grad { Some(Tensor::scratch(device, &[rows, cols])?) } else { None };
            {
                let mut gview = grad.as_mut().and_then(Tensor::gpu_mut).map(|g| g.as_view_mut());
                let out = LossRows { loss: &mut lv, grad: gview.as_mut(), grad_scale: scale };
                ops.softmax_xent(&x.as_view(), &l.slice(range), out, &mut cv, rows, cols)?;
            }
            Ok(grad)
        }
        (Storage::Host(x), LabelStorage::Host(l), BufMut::Host(lh), BufMut::Host(ch)) => {
            let r = device.runtime().softmax_cross_entropy(x, &l[range], rows, cols, scale)?;
            lh.copy_from_slice(&r.loss);
            ch.copy_from_slice(&r.correct);
            Ok(with_grad.then(|| Tensor::from_storage(Storage::Host(r.grad), vec![rows, cols])))
        }
        _ => Err(Error::Shape {
            op: OP,
            expected: "operands on one device".into(),
            got: "host and GPU operands".into(),
        }),
    }
}

/// Mean squared error of `pred` against `target` (both `[rows, cols]`): the loss of each row
/// (`sum_c d^2 / cols`) and the gradient of the mean over all elements, `2 d / (rows cols)`.
pub fn mse(device: &Device, pred: &Tensor, target: &Tensor) -> Result<LossOutput> {
    const OP: &str = "mse";
    let (rows, cols) = rows_of(OP, pred)?;
    if target.shape() != pred.shape() {
        return Err(Error::Shape {
            op: OP,
            expected: format!("target of shape {:?}", pred.shape()),
            got: format!("{:?}", target.shape()),
        });
    }
    let scale = 1.0 / (rows.max(1) * cols.max(1)) as f32;
    match (&pred.data, &target.data) {
        (Storage::Gpu(p), Storage::Gpu(t)) => {
            let ops = device.gpu_ops()?;
            let mut loss = Tensor::scratch(device, &[rows])?;
            let mut grad = Tensor::scratch(device, &[rows, cols])?;
            {
                let mut lv = loss.gpu_mut().expect("on the GPU").as_view_mut();
                let mut gv = grad.gpu_mut().expect("on the GPU").as_view_mut();
                let out = LossRows { loss: &mut lv, grad: Some(&mut gv), grad_scale: scale };
                ops.mse(&p.as_view(), &t.as_view(), out, rows, cols)?;
            }
            Ok(LossOutput { loss, grad, correct: None })
        }
        (Storage::Host(p), Storage::Host(t)) => {
            let (loss, grad) = device.runtime().mse_loss(p, t, rows, cols, scale)?;
            Ok(LossOutput {
                loss: Tensor::from_storage(Storage::Host(loss), vec![rows]),
                grad: Tensor::from_storage(Storage::Host(grad), vec![rows, cols]),
                correct: None,
            })
        }
        _ => Err(Error::Shape {
            op: OP,
            expected: "operands on one device".into(),
            got: "host and GPU operands".into(),
        }),
    }
}
