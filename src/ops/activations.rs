//! Activation functions, forward and backward, out of place or in place (`cuda/activations.cu`).

use crate::cpu;
use crate::kernels::activations as launch;
use crate::ops::{map, shape, update};

pub use crate::spec::activations::Activation;

/// The backward pass of an activation: `dx = dy * f'(x)`, `x` the forward input; in place, `dy`
/// is updated.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Backward(pub Activation);

impl Backward {
    fn check_lens(self, dy: usize, x: usize) -> crate::error::Result<usize> {
        shape::same_len(self.0.backward_kernel(), &[("dy", dy), ("x", x)])
    }
}

map! {
    /// `out = f(x)`.
    impl Map<1> for Activation: In = f32, Out = f32 {
        check(self, [x]) { Ok(x) }
        launch(self, gpu, [x], out) { launch::forward(gpu.kernels, gpu.stream, self, x, out) }
        cpu(self, [x], _) { Ok(cpu::activation(self, x)) }
    }

    impl Map<2> for Backward: In = f32, Out = f32 {
        check(self, [dy, x]) { self.check_lens(dy, x) }
        launch(self, gpu, [dy, x], dx) { launch::backward(gpu.kernels, gpu.stream, self.0, dy, x, dx) }
        cpu(self, [dy, x], _) { Ok(cpu::activation_backward(self.0, dy, x)) }
    }
}

update! {
    /// `x = f(x)`.
    impl Update<0> for Activation: Elem = f32, In = f32 {
        check(self, _, []) { Ok(()) }
        launch(self, gpu, x, []) { launch::forward_inplace(gpu.kernels, gpu.stream, self, x) }
        cpu(self, x, []) { cpu::activation_inplace(self, x) }
    }

    impl Update<1> for Backward: Elem = f32, In = f32 {
        check(self, dy, [x]) { self.check_lens(dy, x).map(drop) }
        launch(self, gpu, dy, [x]) { launch::backward_inplace(gpu.kernels, gpu.stream, self.0, dy, x) }
        cpu(self, dy, [x]) { cpu::activation_backward_inplace(self.0, dy, x) }
    }
}
