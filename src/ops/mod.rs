//! What an operation is, independent of where it runs: its operand types, its checks, and one
//! definition per operation that ties its checks, its GPU launch (a launcher of
//! [`kernels`](crate::raw::kernels)) and its CPU body ([`cpu`](crate::raw::cpu)) together.
//!
//! The runtime's entry points are generic over these definitions: one path runs any `Map` on host
//! slices (check, then upload → launch → download on a GPU, or the CPU body) and one on device
//! buffers (check, allocate the output, launch); `Update` is the same for operations in place.
//! The operand types themselves (which activation, the dimensions of a GEMV, where a random fill
//! starts, the shape checks) are defined below the launchers and the CPU fallback, which take
//! them, and each has its one public path here, in the module of its family.

pub mod activations;
pub mod convert;
pub mod elementwise;
pub mod gemv;
pub mod neuromorphic;
pub mod nn;
pub mod norms;
pub mod random;
pub mod reductions;
pub use crate::spec::shape;
pub mod softmax;
pub mod transpose;

use std::sync::Arc;

use crate::driver::{CudaStream, CudaView, CudaViewMut, DeviceRepr};
use crate::error::Result;
use crate::kernels::Kernels;

/// Where a launch goes: the built-in kernels of a context and the stream it is ordered on.
#[derive(Clone, Copy)]
pub(crate) struct Gpu<'a> {
    pub kernels: &'a Kernels,
    pub stream: &'a Arc<CudaStream>,
}

/// The device inputs of a launch.
pub(crate) type Views<'a, 'b, T, const N: usize> = [&'a CudaView<'b, T>; N];

/// An operation with `N` inputs of `In` and one new output of `Out`.
pub(crate) trait Map<const N: usize>: Copy {
    /// The inputs' element type.
    type In: DeviceRepr;
    /// The output's element type.
    type Out: DeviceRepr;

    /// Checks the inputs' lengths; the output's length.
    fn check(self, lens: [usize; N]) -> Result<usize>;

    /// Launches the kernel computing `out` from `inputs` (checked).
    fn launch(self, gpu: Gpu, inputs: Views<Self::In, N>, out: &mut CudaViewMut<Self::Out>) -> Result<()>;

    /// The CPU body: the output of `len` elements (the length [`check`](Self::check) gave, not 0)
    /// from the checked `inputs`.
    fn cpu(self, inputs: [&[Self::In]; N], len: usize) -> Result<Vec<Self::Out>>;
}

/// An operation that updates `x` in place from `N` further inputs of `In`.
pub(crate) trait Update<const N: usize>: Copy {
    /// The element type of the updated buffer.
    type Elem: DeviceRepr;
    /// The further inputs' element type.
    type In: DeviceRepr;

    /// Checks the lengths of `x` (`len`) and of the further inputs.
    fn check(self, len: usize, lens: [usize; N]) -> Result<()>;

    /// Launches the kernel updating `x` (checked).
    fn launch(self, gpu: Gpu, x: &mut CudaViewMut<Self::Elem>, inputs: Views<Self::In, N>) -> Result<()>;

    /// The CPU body, on checked operands (`x` not empty).
    fn cpu(self, x: &mut [Self::Elem], inputs: [&[Self::In]; N]);
}

/// Defines operations' `impl Map<N>`: the element types of the inputs and the output, then the
/// check, the launch and the CPU body, each naming its parameters (the trait gives their types):
///
/// ```text
/// map! {
///     /// `out = alpha * x + y`.
///     impl Map<2> for Axpy: In = f32, Out = f32 {
///         check(self, [x, y]) { shape::same_len("axpy", &[("x", x), ("y", y)]) }
///         launch(self, gpu, [x, y], out) { launch::axpy(gpu.kernels, gpu.stream, self.0, x, y, out) }
///         cpu(self, [x, y], _len) { Ok(cpu::axpy(self.0, x, y)) }
///     }
/// }
/// ```
macro_rules! map {
    ($(
        $(#[$attr:meta])*
        impl Map<$n:literal> for $op:ty: In = $in:ty, Out = $out:ty {
            check($check_self:ident, $lens:pat) $check:block
            launch($launch_self:ident, $gpu:pat, $views:pat, $output:pat) $launch:block
            cpu($cpu_self:ident, $slices:pat, $len:pat) $cpu:block
        }
    )+) => {$(
        $(#[$attr])*
        impl $crate::ops::Map<$n> for $op {
            type In = $in;
            type Out = $out;

            fn check($check_self, $lens: [usize; $n]) -> $crate::error::Result<usize> $check

            fn launch(
                $launch_self,
                $gpu: $crate::ops::Gpu,
                $views: $crate::ops::Views<$in, $n>,
                $output: &mut $crate::driver::CudaViewMut<$out>,
            ) -> $crate::error::Result<()> $launch

            fn cpu($cpu_self, $slices: [&[$in]; $n], $len: usize) -> $crate::error::Result<Vec<$out>> $cpu
        }
    )+};
}
pub(crate) use map;

/// Defines operations' `impl Update<N>` as [`map!`] does `Map`: the element types of the updated
/// buffer and of the further inputs, then the check, the launch and the CPU body.
macro_rules! update {
    ($(
        $(#[$attr:meta])*
        impl Update<$n:literal> for $op:ty: Elem = $elem:ty, In = $in:ty {
            check($check_self:ident, $len:pat, $lens:pat) $check:block
            launch($launch_self:ident, $gpu:pat, $x:pat, $views:pat) $launch:block
            cpu($cpu_self:ident, $values:pat, $slices:pat) $cpu:block
        }
    )+) => {$(
        $(#[$attr])*
        impl $crate::ops::Update<$n> for $op {
            type Elem = $elem;
            type In = $in;

            fn check($check_self, $len: usize, $lens: [usize; $n]) -> $crate::error::Result<()> $check

            fn launch(
                $launch_self,
                $gpu: $crate::ops::Gpu,
                $x: &mut $crate::driver::CudaViewMut<$elem>,
                $views: $crate::ops::Views<$in, $n>,
            ) -> $crate::error::Result<()> $launch

            fn cpu($cpu_self, $values: &mut [$elem], $slices: [&[$in]; $n]) $cpu
        }
    )+};
}
pub(crate) use update;

#[cfg(test)]
mod tests {
    //! Each check lives in one definition now and serves both the host-slice and device-buffer
    //! paths: the messages callers see are pinned here.
    use super::activations::{Activation, Backward};
    use super::elementwise::{Binary, Fill};
    use super::gemv::{Gemv, Product};
    use super::neuromorphic::{LeakyIntegration, MatvecInput, Patterns, SpikeEncode};
    use super::nn::{BiasAdd, BiasGrad, Dropout};
    use super::norms::{self, Norm};
    use super::reductions::{self, Argmax, Reduce, RowArgmax};
    use super::softmax::{self, Softmax};
    use super::transpose::Transpose;
    use super::{Map, Update};

    fn message<T: std::fmt::Debug>(r: crate::Result<T>) -> String {
        r.expect_err("a shape error").to_string()
    }

    #[test]
    fn output_lengths_follow_the_inputs() {
        assert_eq!(Binary::Mul.check([7, 7]).unwrap(), 7);
        assert_eq!(Fill { len: 5, value: 1.0 }.check([]).unwrap(), 5);
        assert_eq!(Map::check(Activation::Gelu, [0]).unwrap(), 0);
        assert_eq!(Map::check(Reduce::Mean, [0]).unwrap(), 1);
        assert_eq!(Argmax.check([3]).unwrap(), 1);
        assert_eq!(reductions::Rows { op: Reduce::Max, rows: 3, cols: 4 }.check([12]).unwrap(), 3);
        assert_eq!(reductions::Rows { op: Reduce::Sum, rows: 0, cols: 0 }.check([0]).unwrap(), 0);
        assert_eq!(Transpose { rows: 2, cols: 5 }.check([10]).unwrap(), 10);
        assert_eq!(MatvecInput { n_reservoir: 4, n_inputs: 3 }.check([12, 3]).unwrap(), 4);
        assert_eq!(SpikeEncode { steps: 3, seed: 1 }.check([5]).unwrap(), 15);
        let dims = Patterns { t: 9, n: 2, p: 3, w: 4 };
        assert_eq!(Map::check(dims, [18, 24]).unwrap(), 18);
    }

    #[test]
    fn mismatches_name_the_operation_and_operand() {
        assert_eq!(
            message(Binary::Add.check([3, 4])),
            "prism_add_f32: expected `b` as long as `a` (3 elements), got 4 elements"
        );
        assert_eq!(
            message(Map::check(Backward(Activation::Tanh), [2, 3])),
            "prism_tanh_backward_f32: expected `x` as long as `dy` (2 elements), got 3 elements"
        );
        assert!(Update::check(Backward(Activation::Relu), 2, [2]).is_ok());
        let rows = softmax::Rows { kind: Softmax::LogSoftmax, rows: 2, cols: 3 };
        assert_eq!(
            message(Map::check(rows, [5])),
            "prism_log_softmax_rows_f32: expected `x` of 2 x 3 = 6 elements, got 5 elements"
        );
        assert_eq!(message(Update::check(rows, 7, [])), message(Map::check(rows, [7])));
        assert_eq!(
            message(reductions::Rows { op: Reduce::Sum, rows: 2, cols: 0 }.check([0])),
            "reduce_rows: expected at least one column, got 0 columns"
        );
        assert_eq!(message(Argmax.check([0])), "argmax: expected at least one element, got 0 elements");
        assert_eq!(RowArgmax { rows: 2, cols: 3 }.check([6]).unwrap(), 2);
        assert_eq!(
            message(RowArgmax { rows: 2, cols: 0 }.check([0])),
            "row_argmax: expected at least one column, got 0 columns"
        );
        assert!(RowArgmax { rows: 1, cols: 1 << 31 }.cpu([&[]], 1).is_err());
        assert_eq!(
            message(Transpose { rows: usize::MAX, cols: 2 }.check([0])),
            format!(
                "transpose: expected `x` of {} x 2 = {} elements, got 0 elements",
                usize::MAX,
                usize::MAX
            )
        );
        assert_eq!(
            message(MatvecInput { n_reservoir: 4, n_inputs: 3 }.check([12, 2])),
            "matvec_input: expected `u` of 3 elements, got 2 elements"
        );
        assert_eq!(
            message(LeakyIntegration(0.5).check(4, [5])),
            "leaky_integration: expected `drive` as long as `x` (4 elements), got 5 elements"
        );
        assert!(SpikeEncode { steps: usize::MAX, seed: 0 }.check([2]).is_err());
        assert_eq!(
            message(Map::check(Patterns { t: 3, n: 2, p: 1, w: 4 }, [6, 8])),
            "pattern_correlation: expected a window 1 <= w <= t = 3, got w = 4"
        );
        assert_eq!(
            message(BiasAdd { rows: 2, cols: 3 }.check(6, [2])),
            "bias_add: expected `bias` of 1 x 3 = 3 elements, got 2 elements"
        );
        assert_eq!(BiasGrad { rows: 0, cols: 3 }.check([0]).unwrap(), 3);
        assert_eq!(
            message(BiasGrad { rows: 2, cols: 3 }.check([5])),
            "bias_grad: expected `dy` of 2 x 3 = 6 elements, got 5 elements"
        );
        assert_eq!(message(Dropout(1.0).check([4, 4])), "dropout: expected a dropout rate in [0, 1), got 1");
        assert!(Dropout(f32::NAN).check([4, 4]).is_err());
    }

    #[test]
    fn gemv_checks_name_the_product() {
        let product = Product { dims: Gemv::dense(3, 4), transposed: false };
        assert!(product.check(3, [12, 4]).is_ok());
        assert_eq!(message(product.check(3, [12, 3])), "gemv: expected `x` of 4 elements, got 3 elements");
        let transposed = Product { transposed: true, ..product };
        assert_eq!(transposed.out_and_inner(), (4, 3));
        assert_eq!(
            message(transposed.check(3, [12, 3])),
            "gemv_t: expected `y` of 4 elements, got 3 elements"
        );
    }

    #[test]
    fn norm_checks_name_the_operand() {
        let layer = norms::Rows::new(Norm::Layer, "layer_norm", 3, 4, 1e-5);
        assert!(layer.check(12, Some(4), Some(4)).is_ok());
        assert_eq!(
            message(layer.check(11, None, None)),
            "layer_norm: expected `x` of 3 x 4 = 12 elements, got 11 elements"
        );
        assert_eq!(
            message(layer.check(12, Some(4), Some(3))),
            "layer_norm: expected `beta` of 4 elements, got 3 elements"
        );
        assert_eq!(
            message(norms::check_rows("prism_rms_norm_f32", 6, 6, &[], &[("rstd", Some(1))], 2, 3)),
            "prism_rms_norm_f32: expected `rstd` of 2 elements, got 1 elements"
        );
        let channels = [("mean", Some(3)), ("var", Some(2)), ("gamma", None)];
        assert_eq!(
            message(norms::check_batch("batch_norm", 18, (2, 3, 3), &channels)),
            "batch_norm: expected `var` of 3 elements, got 2 elements"
        );
        assert_eq!(
            message(norms::check_batch("batch_norm", 12, (2, 3, 3), &[])),
            "batch_norm: expected `x` of n x c x hw = 2 x 3 x 3 elements, got 12 elements"
        );
        let running = norms::train_lens(None, Some(3), Some([3, 4]));
        assert_eq!(
            message(norms::check_batch_train("batch_norm_train", 18, (2, 3, 3), &running)),
            "batch_norm_train: expected `running var` of 3 elements, got 4 elements"
        );
        assert_eq!(
            message(norms::check_batch_train("batch_norm_train", 0, (0, 3, 4), &[])),
            "batch_norm_train: expected at least one value per channel (n * hw >= 1), got n = 0, hw = 4"
        );
        assert!(norms::check_batch_train("batch_norm_train", 0, (2, 0, 4), &[]).is_ok());
    }
}
