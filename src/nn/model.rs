//! Layers and [`Sequential`]: explicit forward and backward passes over one flat parameter buffer
//! (and one flat gradient buffer), so an optimiser step is a single launch over all parameters.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::kernels::gemm::{Gemm, Precision};
use crate::nn::tensor::{numel, BufMut, Device, Storage, Tensor, TensorView, ViewData};
use crate::ops::activations::Activation;
use crate::ops::random::Philox;
use crate::runtime::ProductionGpuRuntime;

/// A dense layer `y = x W + b`, `W` `[inputs, outputs]` and `b` `[outputs]` stored one after the
/// other in the model's parameter buffer at `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Linear {
    /// Input features.
    pub inputs: usize,
    /// Output features.
    pub outputs: usize,
    offset: usize,
}

impl Linear {
    /// Where `W` is in the parameter buffer.
    pub fn weight_range(&self) -> Range<usize> {
        self.offset..self.offset + self.inputs * self.outputs
    }

    /// Where `b` is in the parameter buffer.
    pub fn bias_range(&self) -> Range<usize> {
        let w = self.weight_range().end;
        w..w + self.outputs
    }
}

/// One layer of a [`Sequential`].
#[derive(Debug, Clone, PartialEq)]
pub enum Layer {
    /// A dense layer.
    Linear(Linear),
    /// An elementwise activation (ReLU, GELU, sigmoid, tanh, leaky ReLU).
    Activation(Activation),
    /// Inverted dropout with this rate while training; the identity in evaluation.
    Dropout(f32),
}

/// Builds a [`Sequential`] layer by layer.
#[derive(Debug, Clone)]
pub struct SequentialBuilder {
    inputs: usize,
    width: usize,
    params: usize,
    layers: Vec<Layer>,
}

impl SequentialBuilder {
    /// A dense layer to `outputs` features.
    pub fn linear(mut self, outputs: usize) -> Self {
        let lin = Linear { inputs: self.width, outputs, offset: self.params };
        self.params = self.params.saturating_add(self.width.saturating_mul(outputs)).saturating_add(outputs);
        self.width = outputs;
        self.layers.push(Layer::Linear(lin));
        self
    }

    /// An activation.
    pub fn activation(mut self, act: Activation) -> Self {
        self.layers.push(Layer::Activation(act));
        self
    }

    /// ReLU.
    pub fn relu(self) -> Self {
        self.activation(Activation::Relu)
    }

    /// GELU (tanh form).
    pub fn gelu(self) -> Self {
        self.activation(Activation::Gelu)
    }

    /// Sigmoid.
    pub fn sigmoid(self) -> Self {
        self.activation(Activation::Sigmoid)
    }

    /// Tanh.
    pub fn tanh(self) -> Self {
        self.activation(Activation::Tanh)
    }

    /// Dropout with rate `p` in `[0, 1)`.
    pub fn dropout(mut self, p: f32) -> Self {
        self.layers.push(Layer::Dropout(p));
        self
    }

    /// The model with seeded initial weights (PyTorch's default for `nn.Linear`: `W` and `b`
    /// uniform in `±1/sqrt(inputs)`, drawn from the Philox stream of `seed` on the host, so the
    /// same seed gives the same weights on every device), placed on `device`.
    pub fn build(self, device: &Device, seed: u64) -> Result<Sequential> {
        const OP: &str = "Sequential::build";
        if self.layers.is_empty() || self.inputs == 0 {
            return Err(Error::Shape {
                op: OP,
                expected: "inputs > 0 and at least one layer".into(),
                got: format!("{} inputs, {} layers", self.inputs, self.layers.len()),
            });
        }
        for layer in &self.layers {
            match layer {
                Layer::Linear(l) if l.outputs == 0 => {
                    return Err(Error::Shape {
                        op: OP,
                        expected: "dense layers of at least one output".into(),
                        got: "0 outputs".into(),
                    })
                }
                Layer::Dropout(p) => crate::ops::nn::check_dropout_rate(OP, *p)?,
                _ => {}
            }
        }
        numel(OP, &[self.params])?;
        let host = ProductionGpuRuntime::cpu();
        let mut params = Vec::with_capacity(self.params);
        let mut at = Philox::new(seed);
        for layer in &self.layers {
            if let Layer::Linear(l) = layer {
                let n = l.inputs * l.outputs + l.outputs;
                let bound = 1.0 / (l.inputs as f32).sqrt();
                params.extend(host.rand_uniform(n, at)?.into_iter().map(|u| bound * (2.0 * u - 1.0)));
                at = at.after::<f32>(n);
            }
        }
        let count = params.len();
        Ok(Sequential {
            device: device.clone(),
            inputs: self.inputs,
            outputs: self.width,
            layers: self.layers,
            params: Tensor::from_vec(device, params, &[count])?,
            grads: Tensor::zeros(device, &[count])?,
            saved: Vec::new(),
            dropout_at: Philox::new(seed ^ 0x6472_6f70_6f75_7400),
            precision: Precision::F32,
            generation: 0,
        })
    }
}

/// What one training forward pass keeps for the backward pass.
struct Saved {
    /// The output of each layer but the last (the input of the next).
    outputs: Vec<Tensor>,
    /// A copy of the model's input when the first layer needs an owned one (not a dense layer).
    first_input: Option<Tensor>,
    /// The uniforms of each dropout layer, by layer index.
    masks: Vec<Option<Tensor>>,
    rows: usize,
}

/// Layers applied in order, with explicit [`forward`](Self::forward) and
/// [`backward`](Self::backward) passes. Parameters and their gradients are two flat buffers
/// ([`params`](Self::params), [`grads`](Self::grads)) on the model's device.
pub struct Sequential {
    device: Device,
    inputs: usize,
    outputs: usize,
    layers: Vec<Layer>,
    params: Tensor,
    grads: Tensor,
    saved: Vec<Saved>,
    dropout_at: Philox,
    precision: Precision,
    /// Counts replacements of the parameter buffer (a captured step refers to the old one).
    generation: u64,
}

impl std::fmt::Debug for Sequential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sequential").field("layers", &self.layers).field("device", &self.device).finish()
    }
}

impl Sequential {
    /// A builder for a model taking `inputs` features.
    pub fn builder(inputs: usize) -> SequentialBuilder {
        SequentialBuilder { inputs, width: inputs, params: 0, layers: Vec::new() }
    }

    /// The layers.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// Input features.
    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// Output features.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// The device the parameters are on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// All parameters, flat (each dense layer's `W` then `b`, in layer order).
    pub fn params(&self) -> &Tensor {
        &self.params
    }

    /// The gradients of the last [`backward`](Self::backward), laid out as [`params`](Self::params).
    pub fn grads(&self) -> &Tensor {
        &self.grads
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// `true` when a training pass draws random numbers (dropout with a rate above 0).
    pub(crate) fn has_dropout(&self) -> bool {
        self.layers.iter().any(|l| matches!(l, Layer::Dropout(p) if *p > 0.0))
    }

    /// Drops what the last training forward pass kept.
    pub(crate) fn clear_saved(&mut self) {
        self.saved.clear();
    }

    pub(crate) fn params_and_grads(&mut self) -> (&mut Tensor, &Tensor) {
        (&mut self.params, &self.grads)
    }

    /// Replaces all parameters (`params().len()` values, laid out as [`params`](Self::params)).
    pub fn set_params(&mut self, values: Vec<f32>) -> Result<()> {
        let n = self.params.len();
        if values.len() != n {
            return Err(Error::Shape {
                op: "Sequential::set_params",
                expected: format!("{n} values"),
                got: format!("{}", values.len()),
            });
        }
        self.params = Tensor::from_vec(&self.device, values, &[n])?;
        self.generation += 1;
        Ok(())
    }

    /// The precision of the dense layers' products (F32 by default; TF32 is faster on a GPU).
    pub fn set_precision(&mut self, precision: Precision) {
        self.precision = precision;
    }

    /// Moves the parameters to `device` (gradients start at zero there).
    pub fn to_device(&mut self, device: &Device) -> Result<()> {
        let generation = self.generation + 1;
        *self = self.replica(device, 0)?;
        self.generation = generation;
        Ok(())
    }

    /// A copy of this model on `device`: the same layers, parameters and precision, gradients at
    /// zero. Replica 0 continues this model's dropout stream; replica `r > 0` draws its masks from a
    /// stream of its own (another Philox key), so data-parallel replicas do not repeat each other's.
    pub(crate) fn replica(&self, device: &Device, replica: usize) -> Result<Sequential> {
        // Distinct keys per replica (the golden-ratio increment keeps them apart for any seed).
        let key = (replica as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let n = self.params.len();
        Ok(Sequential {
            device: device.clone(),
            inputs: self.inputs,
            outputs: self.outputs,
            layers: self.layers.clone(),
            params: Tensor::from_vec(device, self.params.to_vec()?, &[n])?,
            grads: Tensor::zeros(device, &[n])?,
            saved: Vec::new(),
            dropout_at: Philox { seed: self.dropout_at.seed ^ key, offset: self.dropout_at.offset },
            precision: self.precision,
            generation: 0,
        })
    }

    /// Sets every gradient to zero (a data-parallel replica without rows in a step).
    #[cfg(all(feature = "nccl", not(feature = "legacy-gpu")))]
    pub(crate) fn zero_grads(&mut self) -> Result<()> {
        match &mut self.grads.data {
            Storage::Gpu(g) => {
                let stream = g.stream().clone();
                Ok(stream.memset_zeros(g)?)
            }
            Storage::Host(h) => {
                h.fill(0.0);
                Ok(())
            }
        }
    }

    #[cfg(all(feature = "nccl", not(feature = "legacy-gpu")))]
    pub(crate) fn grads_mut(&mut self) -> &mut Tensor {
        &mut self.grads
    }

    /// The output for a batch `x` (`[batch, inputs]`, on the model's device). With `train`,
    /// dropout is applied and what [`backward`](Self::backward) needs is kept (one pass at a time).
    pub fn forward(&mut self, x: &TensorView<'_>, train: bool) -> Result<Tensor> {
        let rows = x.matrix("Sequential::forward", self.inputs)?;
        let first_input = match self.layers.first() {
            Some(Layer::Linear(_)) | None => None,
            Some(_) => Some(copy_view(&self.device, x, rows, self.inputs)?),
        };
        let mut outputs: Vec<Tensor> = Vec::with_capacity(self.layers.len());
        let mut masks = Vec::with_capacity(self.layers.len());
        for (i, layer) in self.layers.iter().enumerate() {
            let (y, mask) = {
                let input = match (i, &first_input) {
                    (0, None) => Input::View(x),
                    (0, Some(t)) => Input::Owned(t),
                    _ => Input::Owned(&outputs[i - 1]),
                };
                match layer {
                    Layer::Linear(l) => {
                        (linear_forward(&self.device, &self.params, l, &input, rows, self.precision)?, None)
                    }
                    Layer::Activation(act) => (activation_forward(&self.device, *act, input.owned()?)?, None),
                    Layer::Dropout(p) if train && *p > 0.0 => {
                        let x = input.owned()?;
                        let u = uniforms(&self.device, x.len(), self.dropout_at)?;
                        self.dropout_at = self.dropout_at.after::<f32>(x.len());
                        (dropout(&self.device, x, &u, *p)?, Some(u))
                    }
                    Layer::Dropout(_) => (copy_tensor(input.owned()?)?, None),
                }
            };
            outputs.push(y);
            masks.push(mask);
        }
        let out = outputs.pop().expect("a built model has a layer");
        let out = out.reshape(&[rows, self.outputs])?;
        self.saved.clear();
        if train {
            self.saved.push(Saved { outputs, first_input, masks, rows });
        }
        Ok(out)
    }

    /// Gradients of all parameters (into [`grads`](Self::grads), overwritten) for the gradient
    /// `dy` (`[batch, outputs]`) of the loss with respect to the output of the last training
    /// [`forward`](Self::forward) on `x` (the same batch). Returns nothing: the gradient with
    /// respect to `x` is not computed.
    pub fn backward(&mut self, x: &TensorView<'_>, dy: Tensor) -> Result<()> {
        let saved = self.saved.pop().ok_or_else(|| Error::Shape {
            op: "Sequential::backward",
            expected: "a training forward pass first".into(),
            got: "none (or backward was already run)".into(),
        })?;
        let rows = saved.rows;
        if x.matrix("Sequential::backward", self.inputs)? != rows || dy.shape() != [rows, self.outputs] {
            return Err(Error::Shape {
                op: "Sequential::backward",
                expected: format!(
                    "x [{rows}, {}] and dy [{rows}, {}] of the forward pass",
                    self.inputs, self.outputs
                ),
                got: format!("x {:?}, dy {:?}", x.shape(), dy.shape()),
            });
        }
        let mut dy = dy;
        for (i, layer) in self.layers.iter().enumerate().rev() {
            let input = match (i, &saved.first_input) {
                (0, None) => Input::View(x),
                (0, Some(t)) => Input::Owned(t),
                _ => Input::Owned(&saved.outputs[i - 1]),
            };
            dy = match layer {
                Layer::Linear(l) => {
                    linear_backward(&self.device, &mut self.grads, l, &input, &dy, rows, self.precision)?;
                    if i == 0 {
                        break;
                    }
                    linear_input_grad(&self.device, &self.params, l, &dy, rows, self.precision)?
                }
                Layer::Activation(act) => activation_backward(&self.device, *act, dy, input.owned()?)?,
                Layer::Dropout(p) => match &saved.masks[i] {
                    Some(u) => dropout(&self.device, &dy, u, *p)?,
                    None => dy,
                },
            };
        }
        Ok(())
    }
}

/// A layer's input: the caller's batch or an owned tensor of the pass.
enum Input<'a, 'b> {
    View(&'a TensorView<'b>),
    Owned(&'a Tensor),
}

impl Input<'_, '_> {
    fn owned(&self) -> Result<&Tensor> {
        match self {
            Input::Owned(t) => Ok(t),
            // Not reached: a first layer that needs an owned input gets a copy.
            Input::View(_) => Err(Error::Shape {
                op: "Sequential",
                expected: "an owned input".into(),
                got: "a view".into(),
            }),
        }
    }

    fn data(&self) -> ViewData<'_> {
        match self {
            Input::View(v) => match &v.data {
                ViewData::Host(h) => ViewData::Host(h),
                ViewData::Gpu(g) => ViewData::Gpu(g.slice(..)),
            },
            Input::Owned(t) => t.view().data,
        }
    }
}

fn mixed(op: &'static str) -> Error {
    Error::Shape {
        op,
        expected: "operands on the model's device".into(),
        got: "operands on the host and on a GPU".into(),
    }
}

fn output(device: &Device, rows: usize, cols: usize) -> Result<Tensor> {
    Tensor::scratch(device, &[rows, cols])
}

fn copy_view(device: &Device, x: &TensorView<'_>, rows: usize, cols: usize) -> Result<Tensor> {
    let data = match &x.data {
        ViewData::Host(h) => Storage::Host(h.to_vec()),
        ViewData::Gpu(g) => Storage::Gpu(device.gpu_ops()?.stream().clone_dtod(g)?),
    };
    Ok(Tensor::from_storage(data, vec![rows, cols]))
}

fn copy_tensor(x: &Tensor) -> Result<Tensor> {
    let data = match &x.data {
        Storage::Host(h) => Storage::Host(h.clone()),
        Storage::Gpu(g) => Storage::Gpu(g.stream().clone_dtod(g)?),
    };
    Ok(Tensor::from_storage(data, x.shape().to_vec()))
}

/// `y = x W + b`.
fn linear_forward(
    device: &Device,
    params: &Tensor,
    l: &Linear,
    x: &Input<'_, '_>,
    rows: usize,
    precision: Precision,
) -> Result<Tensor> {
    let mut y = output(device, rows, l.outputs)?;
    let g = Gemm::new(rows, l.outputs, l.inputs).with_precision(precision);
    match (&x.data(), &params.data, &mut y.data) {
        (ViewData::Gpu(xv), Storage::Gpu(p), Storage::Gpu(yd)) => {
            let ops = device.gpu_ops()?;
            let mut yv = yd.as_view_mut();
            ops.gemm(&g, xv, &p.slice(l.weight_range()), &mut yv)?;
            ops.bias_add(&mut yv, &p.slice(l.bias_range()), rows, l.outputs)?;
        }
        (ViewData::Host(xh), Storage::Host(p), Storage::Host(yh)) => {
            let rt = device.runtime();
            rt.gemm(&g, xh, &p[l.weight_range()], yh)?;
            rt.bias_add(yh, &p[l.bias_range()], rows, l.outputs)?;
        }
        _ => return Err(mixed("Linear::forward")),
    }
    Ok(y)
}

/// `dW = xᵀ dy` and `db = column sums of dy` into the gradient buffer.
fn linear_backward(
    device: &Device,
    grads: &mut Tensor,
    l: &Linear,
    x: &Input<'_, '_>,
    dy: &Tensor,
    rows: usize,
    precision: Precision,
) -> Result<()> {
    let g = Gemm::new(l.inputs, l.outputs, rows).transposed(true, false).with_precision(precision);
    let (w, b) = (l.weight_range(), l.bias_range());
    match (&x.data(), &dy.data) {
        (ViewData::Gpu(xv), Storage::Gpu(dyd)) => {
            let ops = device.gpu_ops()?;
            let grads = grads.gpu_mut().ok_or_else(|| mixed("Linear::backward"))?;
            ops.gemm(&g, xv, &dyd.as_view(), &mut grads.slice_mut(w))?;
            ops.bias_grad(&dyd.as_view(), &mut grads.slice_mut(b), rows, l.outputs)?;
        }
        (ViewData::Host(xh), Storage::Host(dyh)) => {
            let rt = device.runtime();
            let grads = grads.host_mut().ok_or_else(|| mixed("Linear::backward"))?;
            rt.gemm(&g, xh, dyh, &mut grads[w])?;
            let db = rt.bias_grad(dyh, rows, l.outputs)?;
            grads[b].copy_from_slice(&db);
        }
        _ => return Err(mixed("Linear::backward")),
    }
    Ok(())
}

/// `dx = dy Wᵀ`.
fn linear_input_grad(
    device: &Device,
    params: &Tensor,
    l: &Linear,
    dy: &Tensor,
    rows: usize,
    precision: Precision,
) -> Result<Tensor> {
    let mut dx = output(device, rows, l.inputs)?;
    let g = Gemm::new(rows, l.inputs, l.outputs).transposed(false, true).with_precision(precision);
    match (&dy.data, &params.data, &mut dx.data) {
        (Storage::Gpu(d), Storage::Gpu(p), Storage::Gpu(o)) => {
            device.gpu_ops()?.gemm(&g, &d.as_view(), &p.slice(l.weight_range()), &mut o.as_view_mut())?;
        }
        (Storage::Host(d), Storage::Host(p), Storage::Host(o)) => {
            device.runtime().gemm(&g, d, &p[l.weight_range()], o)?;
        }
        _ => return Err(mixed("Linear::backward")),
    }
    Ok(dx)
}

fn activation_forward(device: &Device, act: Activation, x: &Tensor) -> Result<Tensor> {
    let data = match &x.data {
        Storage::Gpu(g) => Storage::Gpu(device.gpu_ops()?.activation(act, g)?),
        Storage::Host(h) => Storage::Host(device.runtime().activation(act, h)?),
    };
    Ok(Tensor::from_storage(data, x.shape().to_vec()))
}

fn activation_backward(device: &Device, act: Activation, mut dy: Tensor, x: &Tensor) -> Result<Tensor> {
    match (&mut dy.data, &x.data) {
        (Storage::Gpu(d), Storage::Gpu(xg)) => device.gpu_ops()?.activation_backward_inplace(act, d, xg)?,
        (Storage::Host(d), Storage::Host(xh)) => *d = device.runtime().activation_backward(act, d, xh)?,
        _ => return Err(mixed("activation backward")),
    }
    Ok(dy)
}

fn uniforms(device: &Device, n: usize, at: Philox) -> Result<Tensor> {
    let data = if device.is_gpu() {
        Storage::Gpu(device.gpu_ops()?.rand_uniform(n, at)?)
    } else {
        Storage::Host(device.runtime().rand_uniform(n, at)?)
    };
    Ok(Tensor::from_storage(data, vec![n]))
}

/// `x * (u > p) / (1 - p)`: dropout's forward pass, and its backward pass on `dy`.
fn dropout(device: &Device, x: &Tensor, u: &Tensor, p: f32) -> Result<Tensor> {
    let rows = x.shape().first().copied().unwrap_or(0);
    let mut y = output(device, rows, x.len() / rows.max(1))?;
    match (&x.data, &u.data, y.range_mut(0..x.len())) {
        (Storage::Gpu(xg), Storage::Gpu(ug), BufMut::Gpu(mut yv)) => {
            device.gpu_ops()?.dropout(&xg.as_view(), &ug.as_view(), &mut yv, p)?;
        }
        (Storage::Host(xh), Storage::Host(uh), BufMut::Host(yh)) => {
            yh.copy_from_slice(&device.runtime().dropout(xh, uh, p)?);
        }
        _ => return Err(mixed("dropout")),
    }
    y.reshape(x.shape())
}
