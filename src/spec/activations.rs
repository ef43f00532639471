//! Activation functions (`cuda/activations.cu`): which one, and its kernels' names.

/// An activation function, as the `prism_<name>_f32` kernels compute it (the CPU fallback's
/// arithmetic is `Activation::forward` and `Activation::backward`, in `cpu`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Activation {
    /// `max(x, 0)`
    Relu,
    /// `x > 0 ? x : slope * x`
    LeakyRelu(f32),
    /// `1 / (1 + exp(-x))`
    Sigmoid,
    /// `tanh(x)`
    Tanh,
    /// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` (the tanh form of GELU)
    Gelu,
}

impl Activation {
    /// The kernel computing the forward pass.
    pub fn kernel(self) -> &'static str {
        match self {
            Activation::Relu => "prism_relu_f32",
            Activation::LeakyRelu(_) => "prism_leaky_relu_f32",
            Activation::Sigmoid => "prism_sigmoid_f32",
            Activation::Tanh => "prism_tanh_f32",
            Activation::Gelu => "prism_gelu_f32",
        }
    }

    /// The kernel computing the backward pass.
    pub fn backward_kernel(self) -> &'static str {
        match self {
            Activation::Relu => "prism_relu_backward_f32",
            Activation::LeakyRelu(_) => "prism_leaky_relu_backward_f32",
            Activation::Sigmoid => "prism_sigmoid_backward_f32",
            Activation::Tanh => "prism_tanh_backward_f32",
            Activation::Gelu => "prism_gelu_backward_f32",
        }
    }
}
