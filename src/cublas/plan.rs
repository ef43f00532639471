//! Pure logic of the cuBLAS-shaped calls: cuBLAS's argument checks, which of this crate's GEMM
//! paths a type / compute-type combination runs on, and the column-major to row-major mapping.
//! No device is involved, so all of it is tested on the CPU.

use core::ffi::{c_int, c_longlong};

use super::sys::{
    cublasComputeType_t as Compute, cublasOperation_t as Op, cublasStatus_t as Status, cudaDataType_t as Ty,
};
use crate::kernels::gemm::{Gemm, Precision};

/// The element types and precision one GEMM runs at on this crate's kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// f32 inputs and outputs, products at `F32` (exact) or `Tf32`.
    F32(Precision),
    /// f32 inputs and outputs, inputs rounded to 16 bits first (`Bf16` or `F16`).
    F32Rounded(Precision),
    /// f16 inputs; f32 outputs when `out_f32`, else f16; f32 accumulation.
    F16 { out_f32: bool },
    /// bf16 inputs; f32 outputs when `out_f32`, else bf16; f32 accumulation.
    Bf16 { out_f32: bool },
    /// f64 throughout.
    F64,
}

/// The type of alpha and beta.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scalar {
    F16,
    F32,
    F64,
}

/// The route of a `cublasGemmEx`-style call with these types, or `CUBLAS_STATUS_NOT_SUPPORTED`
/// for a combination this crate does not compute as asked (never a silent substitute).
pub(crate) fn route(a: Ty, b: Ty, c: Ty, compute: Compute) -> Result<(Route, Scalar), Status> {
    use Compute::*;
    if a != b {
        return Err(Status::CUBLAS_STATUS_NOT_SUPPORTED);
    }
    Ok(match (a, c, compute) {
        (Ty::CUDA_R_32F, Ty::CUDA_R_32F, CUBLAS_COMPUTE_32F | CUBLAS_COMPUTE_32F_PEDANTIC) => {
            (Route::F32(Precision::F32), Scalar::F32)
        }
        (Ty::CUDA_R_32F, Ty::CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32) => {
            (Route::F32(Precision::Tf32), Scalar::F32)
        }
        (Ty::CUDA_R_32F, Ty::CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF) => {
            (Route::F32Rounded(Precision::Bf16), Scalar::F32)
        }
        (Ty::CUDA_R_32F, Ty::CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16F) => {
            (Route::F32Rounded(Precision::F16), Scalar::F32)
        }
        (
            Ty::CUDA_R_16F,
            Ty::CUDA_R_16F | Ty::CUDA_R_32F,
            CUBLAS_COMPUTE_32F | CUBLAS_COMPUTE_32F_PEDANTIC,
        ) => (Route::F16 { out_f32: c == Ty::CUDA_R_32F }, Scalar::F32),
        (Ty::CUDA_R_16F, Ty::CUDA_R_16F, CUBLAS_COMPUTE_16F | CUBLAS_COMPUTE_16F_PEDANTIC) => {
            (Route::F16 { out_f32: false }, Scalar::F16)
        }
        (
            Ty::CUDA_R_16BF,
            Ty::CUDA_R_16BF | Ty::CUDA_R_32F,
            CUBLAS_COMPUTE_32F | CUBLAS_COMPUTE_32F_PEDANTIC,
        ) => (Route::Bf16 { out_f32: c == Ty::CUDA_R_32F }, Scalar::F32),
        (Ty::CUDA_R_64F, Ty::CUDA_R_64F, CUBLAS_COMPUTE_64F | CUBLAS_COMPUTE_64F_PEDANTIC) => {
            (Route::F64, Scalar::F64)
        }
        _ => return Err(Status::CUBLAS_STATUS_NOT_SUPPORTED),
    })
}

/// One (strided batched) GEMM as cuBLAS takes it: column-major,
/// `C[m x n] = alpha op(A)[m x k] op(B)[k x n] + beta C` per batch entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ColMajor {
    pub transa: Op,
    pub transb: Op,
    pub m: c_int,
    pub n: c_int,
    pub k: c_int,
    pub lda: c_int,
    pub ldb: c_int,
    pub ldc: c_int,
    pub stride_a: c_longlong,
    pub stride_b: c_longlong,
    pub stride_c: c_longlong,
    pub batch: c_int,
}

/// `op != N` for the real types (`C` is `T`); `CONJG` is not a GEMM operation.
fn transposed(op: Op) -> Result<bool, Status> {
    match op {
        Op::CUBLAS_OP_N => Ok(false),
        Op::CUBLAS_OP_T | Op::CUBLAS_OP_C => Ok(true),
        Op::CUBLAS_OP_CONJG => Err(Status::CUBLAS_STATUS_INVALID_VALUE),
    }
}

impl ColMajor {
    /// One GEMM (batch 1).
    #[allow(clippy::too_many_arguments)] // cuBLAS's own argument list
    pub fn single(
        transa: Op,
        transb: Op,
        m: c_int,
        n: c_int,
        k: c_int,
        lda: c_int,
        ldb: c_int,
        ldc: c_int,
    ) -> Self {
        ColMajor { transa, transb, m, n, k, lda, ldb, ldc, stride_a: 0, stride_b: 0, stride_c: 0, batch: 1 }
    }

    /// cuBLAS's argument checks (`CUBLAS_STATUS_INVALID_VALUE`): sizes and batch count not
    /// negative, leading dimensions at least `max(1, rows)` of the stored matrices, a GEMM
    /// operation. Then the row-major problem this crate's kernels compute, `Cᵀ = op(B)ᵀ op(A)ᵀ`
    /// (operands swapped, m and n swapped), or `None` when there is nothing to do (m, n or batch
    /// 0). Negative batch strides are `CUBLAS_STATUS_NOT_SUPPORTED`.
    pub fn to_row_major(self, alpha: f32, beta: f32, precision: Precision) -> Result<Option<Gemm>, Status> {
        let invalid = Err(Status::CUBLAS_STATUS_INVALID_VALUE);
        let (ta, tb) = (transposed(self.transa)?, transposed(self.transb)?);
        if self.m < 0 || self.n < 0 || self.k < 0 || self.batch < 0 {
            return invalid;
        }
        let rows_a = if ta { self.k } else { self.m };
        let rows_b = if tb { self.n } else { self.k };
        if self.lda < rows_a.max(1) || self.ldb < rows_b.max(1) || self.ldc < self.m.max(1) {
            return invalid;
        }
        if self.stride_a < 0 || self.stride_b < 0 || self.stride_c < 0 {
            return Err(Status::CUBLAS_STATUS_NOT_SUPPORTED);
        }
        if self.m == 0 || self.n == 0 || self.batch == 0 {
            return Ok(None);
        }
        let u = |v: c_int| v as usize; // checked non-negative above
        let s = |v: c_longlong| usize::try_from(v).map_err(|_| Status::CUBLAS_STATUS_INVALID_VALUE);
        let batch = u(self.batch);
        let g = Gemm {
            m: u(self.n),
            n: u(self.m),
            k: u(self.k),
            trans_a: tb,
            trans_b: ta,
            alpha,
            beta,
            lda: u(self.ldb),
            ldb: u(self.lda),
            ldc: u(self.ldc),
            batch,
            // A batch of one never moves along its strides.
            stride_a: if batch > 1 { s(self.stride_b)? } else { 0 },
            stride_b: if batch > 1 { s(self.stride_a)? } else { 0 },
            stride_c: if batch > 1 { s(self.stride_c)? } else { 0 },
            precision,
        };
        // Overlapping batch entries of C (cuBLAS leaves them undefined) and sizes past the
        // kernels' range are refused rather than run.
        g.validate(usize::MAX, usize::MAX, usize::MAX).map_err(|_| Status::CUBLAS_STATUS_INVALID_VALUE)?;
        Ok(Some(g))
    }
}

/// A `gemv` (`y = alpha op(A) x + beta y`, A column-major m x n) as a one-row column-major GEMM:
/// `yᵀ[1 x rows] = xᵀ[1 x cols] op(A)ᵀ`, x and y as one-row matrices whose leading dimension is
/// their increment. `None` when BLAS returns at once (m or n 0). Zero increments are
/// `CUBLAS_STATUS_INVALID_VALUE`; negative ones (backward vectors) `CUBLAS_STATUS_NOT_SUPPORTED`.
pub(crate) fn gemv_as_gemm(
    trans: Op,
    m: c_int,
    n: c_int,
    lda: c_int,
    incx: c_int,
    incy: c_int,
) -> Result<Option<ColMajor>, Status> {
    let t = transposed(trans)?;
    if m < 0 || n < 0 || lda < m.max(1) || incx == 0 || incy == 0 {
        return Err(Status::CUBLAS_STATUS_INVALID_VALUE);
    }
    if incx < 0 || incy < 0 {
        return Err(Status::CUBLAS_STATUS_NOT_SUPPORTED);
    }
    if m == 0 || n == 0 {
        return Ok(None);
    }
    let (rows, cols) = if t { (n, m) } else { (m, n) };
    let transb = if t { Op::CUBLAS_OP_N } else { Op::CUBLAS_OP_T };
    Ok(Some(ColMajor::single(Op::CUBLAS_OP_N, transb, 1, rows, cols, incx, lda, incy)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: Op = Op::CUBLAS_OP_N;
    const T: Op = Op::CUBLAS_OP_T;

    /// Column-major element (i, j) of a matrix with leading dimension ld.
    fn cm(buf: &[f64], ld: usize, i: usize, j: usize) -> f64 {
        buf[i + j * ld]
    }

    /// The column-major reference product, straight from cuBLAS's definition, in f64.
    fn reference(cfg: &ColMajor, alpha: f64, beta: f64, a: &[f64], b: &[f64], c: &mut [f64]) {
        let (ta, tb) = (cfg.transa != N, cfg.transb != N);
        let (m, n, k) = (cfg.m as usize, cfg.n as usize, cfg.k as usize);
        for z in 0..cfg.batch as usize {
            let (a, b) = (&a[z * cfg.stride_a as usize..], &b[z * cfg.stride_b as usize..]);
            let c = &mut c[z * cfg.stride_c as usize..];
            for j in 0..n {
                for i in 0..m {
                    let mut acc = 0.0;
                    for p in 0..k {
                        let av =
                            if ta { cm(a, cfg.lda as usize, p, i) } else { cm(a, cfg.lda as usize, i, p) };
                        let bv =
                            if tb { cm(b, cfg.ldb as usize, j, p) } else { cm(b, cfg.ldb as usize, p, j) };
                        acc += av * bv;
                    }
                    let old = if beta == 0.0 { 0.0 } else { beta * c[i + j * cfg.ldc as usize] };
                    c[i + j * cfg.ldc as usize] = alpha * acc + old;
                }
            }
        }
    }

    /// The row-major problem as our kernels define it ([`Gemm`]'s doc), evaluated independently.
    fn row_major(g: &Gemm, a: &[f64], b: &[f64], c: &mut [f64]) {
        for z in 0..g.batch {
            for i in 0..g.m {
                for j in 0..g.n {
                    let mut acc = 0.0;
                    for p in 0..g.k {
                        let av = if g.trans_a {
                            a[z * g.stride_a + p * g.lda + i]
                        } else {
                            a[z * g.stride_a + i * g.lda + p]
                        };
                        let bv = if g.trans_b {
                            b[z * g.stride_b + j * g.ldb + p]
                        } else {
                            b[z * g.stride_b + p * g.ldb + j]
                        };
                        acc += av * bv;
                    }
                    let at = z * g.stride_c + i * g.ldc + j;
                    let old = if g.beta == 0.0 { 0.0 } else { g.beta as f64 * c[at] };
                    c[at] = g.alpha as f64 * acc + old;
                }
            }
        }
    }

    /// A small deterministic generator (xorshift), values in [-1, 1).
    struct Rng(u64);
    impl Rng {
        /// The generator from `seed`, printed so that a failure names it.
        fn seeded(seed: u64) -> Self {
            println!("seed {seed:#x}");
            Rng(seed)
        }
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn value(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        }
    }

    #[test]
    fn the_row_major_problem_is_the_column_major_product() {
        let mut rng = Rng::seeded(0x5eed_c0b1a5);
        for case in 0..300 {
            let (m, n, k) = (1 + rng.below(7) as i32, 1 + rng.below(7) as i32, rng.below(6) as i32);
            let (ta, tb) = ([N, T, Op::CUBLAS_OP_C][rng.below(3) as usize], [N, T][rng.below(2) as usize]);
            let rows_a = if ta != N { k } else { m };
            let rows_b = if tb != N { n } else { k };
            let mut pad = || rng.below(3) as i32;
            let mut cfg = ColMajor::single(ta, tb, m, n, k, rows_a.max(1), rows_b.max(1), m);
            cfg.lda += pad();
            cfg.ldb += pad();
            cfg.ldc += pad();
            let size = |ld: i32, cols: i32| (ld * cols.max(1)) as i64;
            let (sa, sb, sc) = (
                size(cfg.lda, if ta != N { m } else { k }),
                size(cfg.ldb, if tb != N { k } else { n }),
                size(cfg.ldc, n),
            );
            cfg.batch = 1 + rng.below(3) as i32;
            cfg.stride_a = if rng.below(3) == 0 { 0 } else { sa + rng.below(2) as i64 };
            cfg.stride_b = if rng.below(3) == 0 { 0 } else { sb };
            cfg.stride_c = sc + rng.below(2) as i64;
            let (alpha, beta) = (0.75, if rng.below(3) == 0 { 0.0 } else { -0.5 });
            let len = |s: i64, one: i64| (s * (cfg.batch as i64 - 1) + one) as usize;
            let a: Vec<f64> = (0..len(cfg.stride_a, sa)).map(|_| rng.value()).collect();
            let b: Vec<f64> = (0..len(cfg.stride_b, sb)).map(|_| rng.value()).collect();
            let mut c: Vec<f64> = (0..len(cfg.stride_c, sc)).map(|_| rng.value()).collect();
            if beta == 0.0 {
                c.iter_mut().step_by(2).for_each(|v| *v = f64::NAN);
            }
            let mut want = c.clone();
            reference(&cfg, alpha, beta, &a, &b, &mut want);
            let g = cfg.to_row_major(alpha as f32, beta as f32, Precision::F32).unwrap().unwrap();
            let mut got = c.clone();
            // Row-major A is cuBLAS's B and vice versa.
            row_major(&g, &b, &a, &mut got);
            for (i, (w, g)) in want.iter().zip(&got).enumerate() {
                let same = (w.is_nan() && g.is_nan()) || (w - g).abs() <= 1e-12 * w.abs().max(1.0);
                assert!(same, "case {case} {cfg:?}: element {i}: want {w}, got {g}");
            }
        }
    }

    #[test]
    fn bad_arguments_are_invalid_value_and_empty_problems_do_nothing() {
        let ok = ColMajor::single(N, N, 4, 3, 2, 4, 2, 4);
        let p = Precision::F32;
        assert!(ok.to_row_major(1.0, 0.0, p).unwrap().is_some());
        let invalid = Err(Status::CUBLAS_STATUS_INVALID_VALUE);
        for bad in [
            ColMajor { m: -1, ..ok },
            ColMajor { n: -1, ..ok },
            ColMajor { k: -1, ..ok },
            ColMajor { lda: 3, ..ok },
            ColMajor { ldb: 1, ..ok },
            ColMajor { ldc: 3, ..ok },
            ColMajor { transa: Op::CUBLAS_OP_CONJG, ..ok },
            ColMajor { batch: -1, ..ok },
            ColMajor { batch: 2, stride_c: 11, ..ok }, // overlapping C entries
        ] {
            assert_eq!(bad.to_row_major(1.0, 0.0, p), invalid, "{bad:?}");
        }
        assert_eq!(
            ColMajor { batch: 2, stride_a: -1, ..ok }.to_row_major(1.0, 0.0, p),
            Err(Status::CUBLAS_STATUS_NOT_SUPPORTED)
        );
        for empty in [ColMajor { m: 0, ldc: 1, ..ok }, ColMajor { n: 0, ..ok }, ColMajor { batch: 0, ..ok }] {
            assert_eq!(empty.to_row_major(1.0, 0.0, p), Ok(None), "{empty:?}");
        }
        // k = 0 still scales C by beta.
        let g = ColMajor { k: 0, ldb: 1, ..ok }.to_row_major(1.0, 2.0, p).unwrap().unwrap();
        assert_eq!((g.m, g.n, g.k, g.beta), (3, 4, 0, 2.0));
    }

    #[test]
    fn type_combinations_route_or_are_not_supported() {
        use Compute::*;
        // (A and B, C, compute): the route and the scalars' type.
        for (ab, c, compute, want) in [
            (Ty::CUDA_R_32F, Ty::CUDA_R_32F, CUBLAS_COMPUTE_32F, (Route::F32(Precision::F32), Scalar::F32)),
            (
                Ty::CUDA_R_32F,
                Ty::CUDA_R_32F,
                CUBLAS_COMPUTE_32F_FAST_TF32,
                (Route::F32(Precision::Tf32), Scalar::F32),
            ),
            (
                Ty::CUDA_R_32F,
                Ty::CUDA_R_32F,
                CUBLAS_COMPUTE_32F_FAST_16BF,
                (Route::F32Rounded(Precision::Bf16), Scalar::F32),
            ),
            (
                Ty::CUDA_R_32F,
                Ty::CUDA_R_32F,
                CUBLAS_COMPUTE_32F_FAST_16F,
                (Route::F32Rounded(Precision::F16), Scalar::F32),
            ),
            (
                Ty::CUDA_R_16F,
                Ty::CUDA_R_16F,
                CUBLAS_COMPUTE_16F,
                (Route::F16 { out_f32: false }, Scalar::F16),
            ),
            (Ty::CUDA_R_16F, Ty::CUDA_R_32F, CUBLAS_COMPUTE_32F, (Route::F16 { out_f32: true }, Scalar::F32)),
            (
                Ty::CUDA_R_16BF,
                Ty::CUDA_R_16BF,
                CUBLAS_COMPUTE_32F,
                (Route::Bf16 { out_f32: false }, Scalar::F32),
            ),
            (Ty::CUDA_R_64F, Ty::CUDA_R_64F, CUBLAS_COMPUTE_64F, (Route::F64, Scalar::F64)),
        ] {
            assert_eq!(route(ab, ab, c, compute), Ok(want), "{ab:?} {c:?} {compute:?}");
        }
        let unsupported = Err(Status::CUBLAS_STATUS_NOT_SUPPORTED);
        for (a, b, c, compute) in [
            (Ty::CUDA_R_16F, Ty::CUDA_R_16BF, Ty::CUDA_R_32F, CUBLAS_COMPUTE_32F),
            (Ty::CUDA_R_16F, Ty::CUDA_R_16F, Ty::CUDA_R_16F, CUBLAS_COMPUTE_32F_FAST_TF32),
            (Ty::CUDA_R_16BF, Ty::CUDA_R_16BF, Ty::CUDA_R_16F, CUBLAS_COMPUTE_32F),
            (Ty::CUDA_R_16BF, Ty::CUDA_R_16BF, Ty::CUDA_R_16BF, CUBLAS_COMPUTE_16F),
            (Ty::CUDA_R_16F, Ty::CUDA_R_16F, Ty::CUDA_R_32F, CUBLAS_COMPUTE_16F),
            (Ty::CUDA_R_32F, Ty::CUDA_R_32F, Ty::CUDA_R_32F, CUBLAS_COMPUTE_64F),
            (Ty::CUDA_R_32F, Ty::CUDA_R_32F, Ty::CUDA_R_16F, CUBLAS_COMPUTE_32F),
            (Ty::CUDA_R_8I, Ty::CUDA_R_8I, Ty::CUDA_R_32I, CUBLAS_COMPUTE_32I),
            (Ty::CUDA_C_32F, Ty::CUDA_C_32F, Ty::CUDA_C_32F, CUBLAS_COMPUTE_32F),
            (Ty::CUDA_R_32F, Ty::CUDA_R_32F, Ty::CUDA_R_32F, CUBLAS_COMPUTE_32F_EMULATED_16BFX9),
        ] {
            assert_eq!(route(a, b, c, compute), unsupported, "{a:?} {b:?} {c:?} {compute:?}");
        }
    }

    #[test]
    fn gemv_is_a_one_row_gemm() {
        let mut rng = Rng::seeded(0x9e3779b97f4a7c15);
        for _ in 0..200 {
            let (m, n) = (1 + rng.below(6) as i32, 1 + rng.below(6) as i32);
            let trans = [N, T][rng.below(2) as usize];
            let (lda, incx, incy) =
                (m + rng.below(2) as i32, 1 + rng.below(3) as i32, 1 + rng.below(3) as i32);
            let (xl, yl) = if trans == N { (n, m) } else { (m, n) };
            let a: Vec<f64> = (0..(lda * n) as usize).map(|_| rng.value()).collect();
            let x: Vec<f64> = (0..((xl - 1) * incx + 1) as usize).map(|_| rng.value()).collect();
            let y0: Vec<f64> = (0..((yl - 1) * incy + 1) as usize).map(|_| rng.value()).collect();
            let (alpha, beta) = (1.25, -0.5);
            let mut want = y0.clone();
            for i in 0..yl as usize {
                let mut acc = 0.0;
                for j in 0..xl as usize {
                    let av = if trans == N { a[i + j * lda as usize] } else { a[j + i * lda as usize] };
                    acc += av * x[j * incx as usize];
                }
                want[i * incy as usize] = alpha * acc + beta * y0[i * incy as usize];
            }
            let cfg = gemv_as_gemm(trans, m, n, lda, incx, incy).unwrap().unwrap();
            let mut got = y0.clone();
            reference(&cfg, alpha, beta, &x, &a, &mut got);
            for (w, g) in want.iter().zip(&got) {
                assert!((w - g).abs() <= 1e-12 * w.abs().max(1.0), "{cfg:?}: {w} vs {g}");
            }
        }
        let invalid = Err(Status::CUBLAS_STATUS_INVALID_VALUE);
        assert_eq!(gemv_as_gemm(N, -1, 2, 1, 1, 1), invalid);
        assert_eq!(gemv_as_gemm(N, 3, 2, 2, 1, 1), invalid);
        assert_eq!(gemv_as_gemm(N, 3, 2, 3, 0, 1), invalid);
        assert_eq!(gemv_as_gemm(N, 3, 2, 3, 1, 0), invalid);
        assert_eq!(gemv_as_gemm(N, 3, 2, 3, -1, 1), Err(Status::CUBLAS_STATUS_NOT_SUPPORTED));
        assert_eq!(gemv_as_gemm(T, 0, 2, 1, 1, 1), Ok(None));
        assert_eq!(gemv_as_gemm(N, 3, 0, 3, 1, 1), Ok(None));
    }
}
