//! What a GEMM computes: [`Gemm`] (shape, transposes, scaling, leading dimensions, batch),
//! [`Precision`], the element types, and the checks made before anything runs.

use half::{bf16, f16};

use crate::driver::DeviceRepr;
use crate::error::{Error, Result};
use crate::kernels::grid::GRID_YZ_MAX;
use crate::kernels::shape;

/// How the products are computed. Accumulation is always f32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Precision {
    /// Exact fp32 on the CUDA cores (the default).
    #[default]
    F32,
    /// f32 data multiplied as TF32 (10-bit mantissa) on the tensor cores.
    Tf32,
    /// bf16 inputs (f32 inputs are rounded to bf16 first), tensor cores.
    Bf16,
    /// f16 inputs (f32 inputs are rounded to f16 first), tensor cores.
    F16,
}

impl Precision {
    /// Rounds `x` to the values this precision multiplies (round to nearest; TF32 ties away from
    /// zero like `cvt.rna.tf32.f32`). `F32` returns `x`.
    pub fn round(self, x: f32) -> f32 {
        match self {
            Precision::F32 => x,
            Precision::Tf32 if x.is_finite() => f32::from_bits(x.to_bits().wrapping_add(0x1000) & !0x1fff),
            Precision::Tf32 => x,
            Precision::Bf16 => bf16::from_f32(x).to_f32(),
            Precision::F16 => f16::from_f32(x).to_f32(),
        }
    }

    /// The relative Frobenius error this precision is tested to (against an f64 reference, inputs
    /// of one sign mix and magnitude ~1): 1e-5 F32, 2e-3 TF32, 1e-2 BF16/FP16.
    pub fn tolerance(self) -> f64 {
        match self {
            Precision::F32 => 1e-5,
            Precision::Tf32 => 2e-3,
            Precision::Bf16 | Precision::F16 => 1e-2,
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
}

/// The element types GEMM reads and writes: `f32`, `half::bf16`, `half::f16`.
pub trait Element: DeviceRepr + Copy + Send + Sync + std::fmt::Debug + 'static + sealed::Sealed {
    /// The name used in kernel entry points (`f32`, `bf16`, `f16`).
    const NAME: &'static str;
    /// The precision that 16-bit inputs imply (`None` for f32, which can run as F32 or TF32).
    const INPUT_PRECISION: Option<Precision>;
    /// Widens to f32 (exact).
    fn to_f32(self) -> f32;
    /// Rounds an f32 to this type (round to nearest even).
    fn from_f32(x: f32) -> Self;
}

impl Element for f32 {
    const NAME: &'static str = "f32";
    const INPUT_PRECISION: Option<Precision> = None;
    fn to_f32(self) -> f32 {
        self
    }
    fn from_f32(x: f32) -> Self {
        x
    }
}

impl Element for bf16 {
    const NAME: &'static str = "bf16";
    const INPUT_PRECISION: Option<Precision> = Some(Precision::Bf16);
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
    fn from_f32(x: f32) -> Self {
        bf16::from_f32(x)
    }
}

impl Element for f16 {
    const NAME: &'static str = "f16";
    const INPUT_PRECISION: Option<Precision> = Some(Precision::F16);
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    fn from_f32(x: f32) -> Self {
        f16::from_f32(x)
    }
}

/// The precision a GEMM with inputs `TIn` and outputs `TOut` runs at, or [`Error::Shape`] for a
/// combination no kernel computes: f32 inputs run as F32 or TF32 into f32; bf16/f16 inputs give
/// f32 or their own type, and `precision` must be left at `F32` (the default) or name the type.
pub fn effective_precision<TIn: Element, TOut: Element>(precision: Precision) -> Result<Precision> {
    let unsupported = |expected: String| {
        Err(Error::Shape {
            op: "gemm",
            expected,
            got: format!("{} inputs, {} outputs, {precision:?}", TIn::NAME, TOut::NAME),
        })
    };
    match TIn::INPUT_PRECISION {
        None if TOut::NAME != "f32" => unsupported("f32 outputs for f32 inputs".into()),
        None if matches!(precision, Precision::Bf16 | Precision::F16) => unsupported(format!(
            "{} inputs for {precision:?} (convert the inputs first; the host-slice API does)",
            if precision == Precision::Bf16 { "bf16" } else { "f16" }
        )),
        None => Ok(precision),
        Some(_) if TOut::NAME != "f32" && TOut::NAME != TIn::NAME => {
            unsupported(format!("f32 or {} outputs for {} inputs", TIn::NAME, TIn::NAME))
        }
        Some(own) if precision == Precision::F32 || precision == own => Ok(own),
        Some(own) => unsupported(format!("Precision::{own:?} (or the default) for {} inputs", TIn::NAME)),
    }
}

/// One (optionally batched) GEMM on row-major matrices:
/// `C[m x n] = alpha * op(A) * op(B) + beta * C` for every batch entry.
///
/// `op(A)` is m x k: A is stored m x k (`trans_a == false`, `lda >= k`) or k x m (`trans_a`,
/// `lda >= m`). `op(B)` is k x n: B is stored k x n (`ldb >= n`) or n x k (`trans_b`, `ldb >= k`).
/// `ldc >= n`. Batch entry z uses `A[z * stride_a..]`, `B[z * stride_b..]`, `C[z * stride_c..]`;
/// A and B strides may be 0 (one matrix for every entry), C entries must not overlap. `beta == 0`
/// never reads C (it may hold NaN); elements of C outside the m x n blocks are never written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gemm {
    /// Rows of `op(A)` and C.
    pub m: usize,
    /// Columns of `op(B)` and C.
    pub n: usize,
    /// Columns of `op(A)`, rows of `op(B)`.
    pub k: usize,
    /// A is stored k x m (transposed).
    pub trans_a: bool,
    /// B is stored n x k (transposed).
    pub trans_b: bool,
    /// Scale of the product.
    pub alpha: f32,
    /// Scale of the old C (0: C is only written).
    pub beta: f32,
    /// Elements between consecutive rows of stored A.
    pub lda: usize,
    /// Elements between consecutive rows of stored B.
    pub ldb: usize,
    /// Elements between consecutive rows of C.
    pub ldc: usize,
    /// Number of matrices (1: not batched).
    pub batch: usize,
    /// Elements between consecutive A matrices.
    pub stride_a: usize,
    /// Elements between consecutive B matrices.
    pub stride_b: usize,
    /// Elements between consecutive C matrices.
    pub stride_c: usize,
    /// How the products are computed (see [`effective_precision`] for 16-bit inputs).
    pub precision: Precision,
}

impl Gemm {
    /// A batch-1 product cut after C's row `rows` (0 < rows < m): the first rows' product, the
    /// others', and the element offsets of the others' first row in A and in C.
    pub(crate) fn split_rows(&self, rows: usize) -> (Gemm, Gemm, [usize; 2]) {
        debug_assert!(self.batch == 1 && 0 < rows && rows < self.m);
        let skip_a = if self.trans_a { rows } else { rows * self.lda };
        (Gemm { m: rows, ..*self }, Gemm { m: self.m - rows, ..*self }, [skip_a, rows * self.ldc])
    }

    /// `C = A * B` for packed row-major A (m x k), B (k x n), C (m x n); F32, one matrix.
    pub fn new(m: usize, n: usize, k: usize) -> Self {
        Gemm {
            m,
            n,
            k,
            trans_a: false,
            trans_b: false,
            alpha: 1.0,
            beta: 0.0,
            lda: k,
            ldb: n,
            ldc: n,
            batch: 1,
            // Saturating: the strides of one matrix are never used, and `validate` refuses
            // dimensions this large before anything runs.
            stride_a: m.saturating_mul(k),
            stride_b: k.saturating_mul(n),
            stride_c: m.saturating_mul(n),
            precision: Precision::F32,
        }
    }

    /// Stored-transposed operands; leading dimensions and batch strides become the packed ones.
    pub fn transposed(mut self, trans_a: bool, trans_b: bool) -> Self {
        self.trans_a = trans_a;
        self.trans_b = trans_b;
        self.lda = self.a_dims().1;
        self.ldb = self.b_dims().1;
        self
    }

    /// `C = alpha * op(A) * op(B) + beta * C`.
    pub fn scaled(mut self, alpha: f32, beta: f32) -> Self {
        self.alpha = alpha;
        self.beta = beta;
        self
    }

    /// Leading dimensions (elements between rows) of stored A, B and C.
    pub fn leading_dims(mut self, lda: usize, ldb: usize, ldc: usize) -> Self {
        (self.lda, self.ldb, self.ldc) = (lda, ldb, ldc);
        self
    }

    /// `batch` matrices, `stride_*` elements apart.
    pub fn batched(mut self, batch: usize, stride_a: usize, stride_b: usize, stride_c: usize) -> Self {
        (self.batch, self.stride_a, self.stride_b, self.stride_c) = (batch, stride_a, stride_b, stride_c);
        self
    }

    /// The precision of the products.
    pub fn with_precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// (rows, columns) of stored A.
    pub fn a_dims(&self) -> (usize, usize) {
        if self.trans_a {
            (self.k, self.m)
        } else {
            (self.m, self.k)
        }
    }

    /// The batch as one product when its entries stack: B broadcast (stride 0), A stored m x k with
    /// each entry's rows right after the previous entry's (stride_a = m * lda), C likewise
    /// (stride_c = m * ldc). Entry z's rows are then rows z * m.. of one (batch * m) x n x k product
    /// over the same elements, which plans as one GEMM whose tiles span the entries, so a batch of
    /// small products fills the device (16 x 1024^3 with B broadcast: one 16384 x 1024 x 1024).
    pub(crate) fn stacked(&self) -> Option<Gemm> {
        let stacks = self.batch > 1
            && self.stride_b == 0
            && !self.trans_a
            && self.stride_a == self.m.checked_mul(self.lda)?
            && self.stride_c == self.m.checked_mul(self.ldc)?;
        let rows = self.m.checked_mul(self.batch).filter(|&rows| rows <= i32::MAX as usize)?;
        stacks.then_some(Gemm { m: rows, batch: 1, stride_a: 0, stride_c: 0, ..*self })
    }

    /// (rows, columns) of stored B.
    pub fn b_dims(&self) -> (usize, usize) {
        if self.trans_b {
            (self.n, self.k)
        } else {
            (self.k, self.n)
        }
    }

    /// `true` when there is nothing to compute or write (m, n or batch is 0).
    pub fn is_empty(&self) -> bool {
        self.m == 0 || self.n == 0 || self.batch == 0
    }

    /// Floating-point operations (2 m n k per matrix).
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64 * self.batch as f64
    }

    /// Elements that the operands must hold at least: (A, B, C), or [`Error::Shape`] when one of
    /// them does not fit in `usize` (computed with [`shape::strided_extent`]).
    pub fn min_lens(&self) -> Result<(usize, usize, usize)> {
        if self.is_empty() {
            return Ok((0, 0, 0));
        }
        let need = |name: &str, (rows, cols): (usize, usize), ld: usize, stride: usize| {
            shape::strided_extent("gemm", name, self.batch, stride, rows, ld, cols)
        };
        Ok((
            need("A", self.a_dims(), self.lda, self.stride_a)?,
            need("B", self.b_dims(), self.ldb, self.stride_b)?,
            need("C", (self.m, self.n), self.ldc, self.stride_c)?,
        ))
    }

    /// Checks the shape against the operands' lengths: leading dimensions at least the stored
    /// rows' lengths, dimensions within the kernels' 32-bit range, C entries not overlapping, each
    /// operand long enough. Every failure is [`Error::Shape`] naming what was expected and given.
    pub fn validate(&self, a_len: usize, b_len: usize, c_len: usize) -> Result<()> {
        let shape = |expected: String, got: String| Err(Error::Shape { op: "gemm", expected, got });
        let limit = i32::MAX as usize;
        for (name, v) in [("m", self.m), ("n", self.n), ("k", self.k)] {
            if v > limit {
                return shape(format!("{name} <= {limit}"), format!("{name} = {v}"));
            }
        }
        let (ar, ac) = self.a_dims();
        let (br, bc) = self.b_dims();
        for (name, ld, rows, cols, what) in [
            ("lda", self.lda, ar, ac, "A"),
            ("ldb", self.ldb, br, bc, "B"),
            ("ldc", self.ldc, self.m, self.n, "C"),
        ] {
            if ld < cols {
                return shape(
                    format!("{name} >= {cols} ({what} stored {rows} x {cols})"),
                    format!("{name} = {ld}"),
                );
            }
            if ld > limit {
                return shape(format!("{name} <= {limit}"), format!("{name} = {ld}"));
            }
        }
        if self.is_empty() {
            return Ok(());
        }
        let c_one = shape::strided_extent("gemm", "C", 1, 0, self.m, self.ldc, self.n)?;
        if self.batch > 1 && self.stride_c < c_one {
            return shape(
                format!("stride_c >= {c_one} (batch entries of C must not overlap)"),
                format!("stride_c = {}", self.stride_c),
            );
        }
        let (need_a, need_b, need_c) = self.min_lens()?;
        for (name, need, len) in [("A", need_a, a_len), ("B", need_b, b_len), ("C", need_c, c_len)] {
            if len < need {
                return shape(
                    format!(
                        "`{name}` of at least {need} elements ({}x{}x{}, batch {})",
                        self.m, self.n, self.k, self.batch
                    ),
                    format!("{len} elements"),
                );
            }
        }
        Ok(())
    }
}

/// One launch's share of a GEMM whose grid covers row tiles in y and batch entries in z: batch
/// entries `z0..z0 + entries` and rows `r0..r0 + rows`, with A, B and C's offsets to them in
/// elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LaunchChunk {
    pub z0: usize,
    pub entries: usize,
    pub r0: usize,
    pub rows: usize,
    pub a: usize,
    pub b: usize,
    pub c: usize,
}

impl Gemm {
    /// The launches of a kernel with `tile_rows`-row tiles over this GEMM: grid.y and grid.z stop
    /// at [`GRID_YZ_MAX`], so the batch and the row tiles are cut into chunks of at most that many.
    pub(crate) fn launch_chunks(&self, tile_rows: usize) -> impl Iterator<Item = LaunchChunk> + '_ {
        let rows_per_launch = GRID_YZ_MAX * tile_rows;
        (0..self.batch).step_by(GRID_YZ_MAX).flat_map(move |z0| {
            (0..self.m).step_by(rows_per_launch).map(move |r0| LaunchChunk {
                z0,
                entries: (self.batch - z0).min(GRID_YZ_MAX),
                r0,
                rows: (self.m - r0).min(rows_per_launch),
                a: z0 * self.stride_a + r0 * if self.trans_a { 1 } else { self.lda },
                b: z0 * self.stride_b,
                c: z0 * self.stride_c + r0 * self.ldc,
            })
        })
    }
}

/// A double-precision GEMM: the layout of `layout` (shape, transposes, leading dimensions, batch;
/// its f32 `alpha`, `beta` and `precision` are not used) with f64 scales, so that cuBLAS-style
/// f64 scalars reach the kernel unrounded. Products and accumulation are f64.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemmF64 {
    /// Shape, transposes, leading dimensions and batch strides (see [`Gemm`]).
    pub layout: Gemm,
    /// Scale of the product.
    pub alpha: f64,
    /// Scale of the old C (0: C is only written, never read).
    pub beta: f64,
}

impl Gemm {
    /// This layout as an f64 GEMM `C = alpha * op(A) * op(B) + beta * C`.
    pub fn with_f64_scales(self, alpha: f64, beta: f64) -> GemmF64 {
        GemmF64 { layout: self, alpha, beta }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gapless_batches_with_b_broadcast_stack_into_one_product() {
        // 5 entries of 37 x 131 x 67, A packed (stride 37 * 67), B broadcast, C packed.
        let g = Gemm::new(37, 131, 67).batched(5, 37 * 67, 0, 37 * 131);
        let one = g.stacked().expect("stacks");
        assert_eq!((one.m, one.n, one.k, one.batch), (185, 131, 67, 1));
        assert_eq!((one.lda, one.ldb, one.ldc), (g.lda, g.ldb, g.ldc));
        assert_eq!(one.min_lens().unwrap(), g.min_lens().unwrap(), "the same elements");
        let b_t = Gemm::new(37, 131, 67).transposed(false, true).batched(5, 37 * 67, 0, 37 * 131);
        assert_eq!(b_t.stacked().map(|o| (o.m, o.trans_b)), Some((185, true)));
        // Not: B per entry, A transposed, a gap after A's or C's entries, one entry.
        for no in [
            Gemm::new(37, 131, 67).batched(5, 37 * 67, 67 * 131, 37 * 131),
            Gemm::new(37, 131, 67).transposed(true, false).batched(5, 37 * 67, 0, 37 * 131),
            Gemm::new(37, 131, 67).batched(5, 37 * 67 + 8, 0, 37 * 131),
            Gemm::new(37, 131, 67).batched(5, 37 * 67, 0, 37 * 131 + 8),
            Gemm::new(37, 131, 67),
        ] {
            assert_eq!(no.stacked(), None, "{no:?}");
        }
        // Rows past i32::MAX stay a batch.
        let tall = Gemm::new(1 << 30, 1, 1).batched(4, 1 << 30, 0, 1 << 30);
        assert_eq!(tall.stacked(), None);
    }

    #[test]
    fn launch_chunks_cut_the_batch_and_the_rows_at_the_grid_limit() {
        let chunk = |z0, entries, r0, rows, a, b, c| LaunchChunk { z0, entries, r0, rows, a, b, c };
        let batched = Gemm::new(3, 4, 5).batched(GRID_YZ_MAX + 1, 100, 0, 50);
        assert_eq!(
            batched.launch_chunks(128).collect::<Vec<_>>(),
            [
                chunk(0, GRID_YZ_MAX, 0, 3, 0, 0, 0),
                chunk(GRID_YZ_MAX, 1, 0, 3, GRID_YZ_MAX * 100, 0, GRID_YZ_MAX * 50)
            ]
        );
        // 2-row tiles: 2 * GRID_YZ_MAX rows a launch; A advances by rows (lda 7) or, stored
        // transposed, by columns.
        let tall = Gemm::new(2 * GRID_YZ_MAX + 1, 4, 5).leading_dims(7, 4, 9);
        let rows = 2 * GRID_YZ_MAX;
        assert_eq!(
            tall.launch_chunks(2).collect::<Vec<_>>(),
            [chunk(0, 1, 0, rows, 0, 0, 0), chunk(0, 1, rows, 1, rows * 7, 0, rows * 9)]
        );
        let transposed = tall.transposed(true, false).leading_dims(2 * GRID_YZ_MAX + 1, 4, 9);
        assert_eq!(transposed.launch_chunks(2).nth(1).map(|c| c.a), Some(rows));
        assert_eq!(Gemm::new(0, 4, 5).launch_chunks(2).count(), 0);
    }

    #[test]
    fn packed_shapes_need_exactly_their_elements() {
        let g = Gemm::new(3, 5, 7);
        assert_eq!(g.min_lens().unwrap(), (21, 35, 15));
        assert!(g.validate(21, 35, 15).is_ok());
        let t = g.transposed(true, true);
        assert_eq!((t.lda, t.ldb), (3, 7));
        assert_eq!(t.min_lens().unwrap(), (21, 35, 15));
        let b = g.batched(4, 21, 0, 15);
        assert_eq!(b.min_lens().unwrap(), (84, 35, 60));
    }

    #[test]
    fn bad_shapes_are_shape_errors_naming_the_operand() {
        let g = Gemm::new(3, 5, 7);
        let err = g.validate(20, 35, 15).unwrap_err().to_string();
        assert!(err.contains("`A` of at least 21 elements") && err.contains("got 20"), "{err}");
        let err = g.leading_dims(6, 5, 5).validate(100, 100, 100).unwrap_err().to_string();
        assert!(err.contains("lda >= 7") && err.contains("lda = 6"), "{err}");
        let err = g.batched(2, 21, 35, 14).validate(100, 100, 100).unwrap_err().to_string();
        assert!(err.contains("stride_c >= 15"), "{err}");
        let err = Gemm::new(1 << 31, 1, 1).validate(usize::MAX, 1, usize::MAX).unwrap_err().to_string();
        assert!(err.contains("m <= 2147483647"), "{err}");
    }

    #[test]
    fn extents_that_overflow_are_shape_errors() {
        // A batch stride this large used to wrap in min_lens and pass validation.
        let g = Gemm::new(2, 2, 2).batched(3, usize::MAX / 2, 0, 4);
        assert!(g.min_lens().is_err());
        let err = g.validate(8, 4, 12).unwrap_err().to_string();
        assert!(err.contains("`A`") && err.contains("overflows"), "{err}");
        let g = Gemm::new(2, 2, 2).batched(usize::MAX, 4, 4, 4);
        assert!(g.validate(usize::MAX, usize::MAX, usize::MAX).is_err());
    }

    #[test]
    fn empty_shapes_need_nothing() {
        assert_eq!(Gemm::new(0, 5, 7).min_lens().unwrap(), (0, 0, 0));
        assert!(Gemm::new(0, 5, 7).validate(0, 0, 0).is_ok());
        // k = 0: no A or B elements, C still m x n.
        assert_eq!(Gemm::new(2, 3, 0).min_lens().unwrap(), (0, 0, 6));
    }

    #[test]
    fn type_and_precision_combinations() {
        assert_eq!(effective_precision::<f32, f32>(Precision::Tf32).unwrap(), Precision::Tf32);
        assert_eq!(effective_precision::<bf16, f32>(Precision::F32).unwrap(), Precision::Bf16);
        assert_eq!(effective_precision::<f16, f16>(Precision::F16).unwrap(), Precision::F16);
        assert!(effective_precision::<f32, bf16>(Precision::F32).is_err());
        assert!(effective_precision::<f32, f32>(Precision::Bf16).is_err());
        assert!(effective_precision::<bf16, f16>(Precision::Bf16).is_err());
        assert!(effective_precision::<f16, f32>(Precision::Bf16).is_err());
    }

    #[test]
    fn rounding_keeps_the_precisions_mantissa() {
        let x = 1.0 + f32::EPSILON * 3.0;
        assert_eq!(Precision::F32.round(x), x);
        assert_eq!(Precision::Tf32.round(x), 1.0);
        assert_eq!(Precision::Tf32.round(1.0 + 2f32.powi(-10)), 1.0 + 2f32.powi(-10));
        assert_eq!(Precision::Tf32.round(1.0 + 2f32.powi(-11)), 1.0 + 2f32.powi(-10)); // tie: away
        assert_eq!(Precision::Bf16.round(1.0 + 2f32.powi(-9)), 1.0);
        assert_eq!(Precision::F16.round(1.0 + 2f32.powi(-9)), 1.0 + 2f32.powi(-9));
        assert!(Precision::Tf32.round(f32::NAN).is_nan());
        assert_eq!(Precision::Tf32.round(f32::INFINITY), f32::INFINITY);
    }
}
