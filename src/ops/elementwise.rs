//! f32 arithmetic over equal-length vectors (`cuda/elementwise.cu`).

use crate::cpu;
use crate::kernels::elementwise as launch;
use crate::ops::{map, shape, update};

pub use crate::spec::elementwise::Binary;

/// `out = alpha * x + y`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Axpy(pub f32);

/// `out = alpha * x`, or `x *= alpha` in place.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scale(pub f32);

/// `len` copies of a value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fill {
    pub len: usize,
    pub value: f32,
}

map! {
    /// `out = a ∘ b`.
    impl Map<2> for Binary: In = f32, Out = f32 {
        check(self, [a, b]) { shape::same_len(self.kernel(), &[("a", a), ("b", b)]) }
        launch(self, gpu, [a, b], out) { launch::binary(gpu.kernels, gpu.stream, self, a, b, out) }
        cpu(self, [a, b], _) { Ok(cpu::binary(self, a, b)) }
    }

    impl Map<2> for Axpy: In = f32, Out = f32 {
        check(self, [x, y]) { shape::same_len("axpy", &[("x", x), ("y", y)]) }
        launch(self, gpu, [x, y], out) { launch::axpy(gpu.kernels, gpu.stream, self.0, x, y, out) }
        cpu(self, [x, y], _) { Ok(cpu::axpy(self.0, x, y)) }
    }

    impl Map<1> for Scale: In = f32, Out = f32 {
        check(self, [x]) { Ok(x) }
        launch(self, gpu, [x], out) { launch::scale(gpu.kernels, gpu.stream, self.0, x, out) }
        cpu(self, [x], _) { Ok(cpu::scale(self.0, x)) }
    }

    impl Map<0> for Fill: In = f32, Out = f32 {
        check(self, []) { Ok(self.len) }
        launch(self, gpu, [], out) { launch::fill(gpu.kernels, gpu.stream, out, self.value) }
        cpu(self, [], len) {
            // A size the host cannot hold is an error, not an allocation abort.
            let mut out = shape::zeroed("fill", "out", len)?;
            out.fill(self.value);
            Ok(out)
        }
    }
}

update! {
    impl Update<0> for Scale: Elem = f32, In = f32 {
        check(self, _, []) { Ok(()) }
        launch(self, gpu, x, []) { launch::scale_inplace(gpu.kernels, gpu.stream, self.0, x) }
        cpu(self, x, []) { cpu::scale_inplace(self.0, x) }
    }
}
