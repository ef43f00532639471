//! `prism_gpu::cublas` on a GPU against f64 references (column-major, as cuBLAS defines it), and
//! (feature `bench-anchors`) against the real cuBLAS through cudarc. Seeds are printed; outputs
//! are poisoned with NaN first; errors are scaled per element by `|alpha| sum |a||b| + |beta c|`.
#![cfg(all(feature = "cublas", not(feature = "legacy-gpu")))]

mod support;

use std::sync::Arc;

use half::{bf16, f16};
use prism_gpu::cublas::sys::{
    cublasComputeType_t as Compute, cublasGemmAlgo_t, cublasOperation_t as Op, cublasPointerMode_t,
    cublasStatus_t as Status, cudaDataType,
};
use prism_gpu::cublas::{
    result, CublasError, CudaBlas, Gemm, GemmConfig, Gemv, GemvConfig, StridedBatchedConfig,
};
use prism_gpu::driver::{CudaContext, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr};

use support::Rng;

const N: Op = Op::CUBLAS_OP_N;
const T: Op = Op::CUBLAS_OP_T;

impl Rng {
    fn below(&mut self, n: u64) -> usize {
        (self.next() % n) as usize
    }
    fn value(&mut self) -> f32 {
        self.unit()
    }
    fn values(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.unit()).collect()
    }
}

fn stream() -> Arc<CudaStream> {
    CudaContext::new(0).expect("a CUDA GPU").default_stream()
}

/// One column-major problem with its layout.
#[derive(Debug, Clone, Copy)]
struct Case {
    ta: Op,
    tb: Op,
    m: usize,
    n: usize,
    k: usize,
    lda: usize,
    ldb: usize,
    ldc: usize,
    batch: usize,
    sa: usize,
    sb: usize,
    sc: usize,
    /// Element offsets of A, B, C in their buffers.
    off: [usize; 3],
    alpha: f32,
    beta: f32,
}

impl Case {
    fn random(rng: &mut Rng, max: usize) -> Self {
        let (ta, tb) = ([N, T][rng.below(2)], [N, T][rng.below(2)]);
        let (m, n, k) = (1 + rng.below(max as u64), 1 + rng.below(max as u64), 1 + rng.below(max as u64));
        let rows_a = if ta == N { m } else { k };
        let rows_b = if tb == N { k } else { n };
        let (lda, ldb, ldc) = (rows_a + rng.below(3) * 3, rows_b + rng.below(3), m + rng.below(3) * 5);
        let batch = 1 + rng.below(3);
        let one = |ld: usize, cols: usize| ld * cols;
        let (ca, cb) = (if ta == N { k } else { m }, if tb == N { n } else { k });
        let sa = if rng.below(3) == 0 { 0 } else { one(lda, ca) + rng.below(2) };
        let sb = if rng.below(3) == 0 { 0 } else { one(ldb, cb) + rng.below(2) };
        let sc = one(ldc, n) + rng.below(2);
        let off = [rng.below(4), rng.below(4), rng.below(4)];
        let beta = if rng.below(3) == 0 { 0.0 } else { rng.value() };
        Case { ta, tb, m, n, k, lda, ldb, ldc, batch, sa, sb, sc, off, alpha: 0.5 + rng.value(), beta }
    }

    fn lens(&self) -> [usize; 3] {
        let (ca, cb) =
            (if self.ta == N { self.k } else { self.m }, if self.tb == N { self.n } else { self.k });
        let span = |ld: usize, cols: usize, s: usize| (self.batch - 1) * s + ld * cols;
        [
            self.off[0] + span(self.lda, ca, self.sa),
            self.off[1] + span(self.ldb, cb, self.sb),
            self.off[2] + span(self.ldc, self.n, self.sc),
        ]
    }

    /// (value, scale) of every C element, f64, from inputs as the kernel sees them (`round`).
    fn reference(&self, a: &[f32], b: &[f32], c: &[f32], round: impl Fn(f32) -> f32) -> Vec<(f64, f64)> {
        let mut out = vec![(f64::NAN, 0.0); c.len()];
        for z in 0..self.batch {
            for j in 0..self.n {
                for i in 0..self.m {
                    let (mut acc, mut mag) = (0.0f64, 0.0f64);
                    for p in 0..self.k {
                        let ai = if self.ta == N { i + p * self.lda } else { p + i * self.lda };
                        let bi = if self.tb == N { p + j * self.ldb } else { j + p * self.ldb };
                        let av = round(a[self.off[0] + z * self.sa + ai]) as f64;
                        let bv = round(b[self.off[1] + z * self.sb + bi]) as f64;
                        acc += av * bv;
                        mag += (av * bv).abs();
                    }
                    let at = self.off[2] + z * self.sc + i + j * self.ldc;
                    let old = if self.beta == 0.0 { 0.0 } else { self.beta as f64 * c[at] as f64 };
                    out[at] = (self.alpha as f64 * acc + old, self.alpha.abs() as f64 * mag + old.abs());
                }
            }
        }
        out
    }
}

/// Checks `got` against the reference: computed elements within `tol` of their scale (and
/// never NaN), every other element unchanged.
fn check(case: &Case, before: &[f32], got: &[f32], want: &[(f64, f64)], tol: f64) {
    check_with_floor(case, before, got, want, tol, 0.0);
}

/// [`check`] allowing `floor` more absolute error: the rounding of a result to an output type's
/// subnormals, which no relative tolerance covers.
fn check_with_floor(case: &Case, before: &[f32], got: &[f32], want: &[(f64, f64)], tol: f64, floor: f64) {
    if let Err(e) = mismatch(case, before, got, want, tol, floor) {
        panic!("{e}");
    }
}

/// The first element of `got` that misses the reference (see `check`), as a message.
fn mismatch(
    case: &Case,
    before: &[f32],
    got: &[f32],
    want: &[(f64, f64)],
    tol: f64,
    floor: f64,
) -> Result<(), String> {
    for (i, ((g, b), (w, scale))) in got.iter().zip(before).zip(want).enumerate() {
        if w.is_nan() {
            if g.to_bits() != b.to_bits() {
                return Err(format!("{case:?}: element {i} outside C's blocks changed: {b} -> {g}"));
            }
        } else if (*g as f64 - w).abs() > tol * scale.max(f64::MIN_POSITIVE) + floor || g.is_nan() {
            return Err(format!("{case:?}: element {i}: got {g}, want {w} (scale {scale})"));
        }
    }
    Ok(())
}

fn poisoned_c(rng: &mut Rng, case: &Case) -> Vec<f32> {
    let mut c = rng.values(case.lens()[2]);
    if case.beta == 0.0 {
        c.iter_mut().for_each(|v| *v = f32::NAN); // beta 0 must not read C
    }
    c
}

/// Runs `case` through the safe `Gemm<T>` (strided batched), views at the case's offsets, with
/// the case's alpha and beta as `T` (`scalar`).
fn run_strided<T: DeviceRepr>(
    blas: &CudaBlas,
    stream: &Arc<CudaStream>,
    case: &Case,
    [a, b, c]: [&[T]; 3],
    scalar: impl Fn(f32) -> T,
) -> Vec<T>
where
    CudaBlas: Gemm<T>,
{
    let (da, db) = (stream.clone_htod(a).unwrap(), stream.clone_htod(b).unwrap());
    let mut dc = stream.clone_htod(c).unwrap();
    let cfg = StridedBatchedConfig {
        gemm: GemmConfig {
            transa: case.ta,
            transb: case.tb,
            m: case.m as i32,
            n: case.n as i32,
            k: case.k as i32,
            alpha: scalar(case.alpha),
            lda: case.lda as i32,
            ldb: case.ldb as i32,
            beta: scalar(case.beta),
            ldc: case.ldc as i32,
        },
        batch_size: case.batch as i32,
        stride_a: case.sa as i64,
        stride_b: case.sb as i64,
        stride_c: case.sc as i64,
    };
    {
        let (va, vb) = (da.slice(case.off[0]..), db.slice(case.off[1]..));
        let mut vc = dc.slice_mut(case.off[2]..);
        // SAFETY: the buffers hold every element of the case (`lens`) from their offsets.
        unsafe { blas.gemm_strided_batched(cfg, &va, &vb, &mut vc) }.unwrap();
    }
    stream.clone_dtoh(&dc).unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sgemm_every_layout_offset_stride_and_beta_is_exact_fp32() {
    let stream = stream();
    let blas = CudaBlas::new(stream.clone()).unwrap();
    let mut rng = Rng::seeded("sgemm");
    for round in 0..200 {
        let case = Case::random(&mut rng, if round % 10 == 0 { 300 } else { 40 });
        let [la, lb, _] = case.lens();
        let (a, b, c) = (rng.values(la), rng.values(lb), poisoned_c(&mut rng, &case));
        let got = run_strided(&blas, &stream, &case, [&a, &b, &c], |x| x);
        // Exact fp32 products (TF32 would miss 1e-5 by far on k >= 10).
        check(&case, &c, &got, &case.reference(&a, &b, &c, |x| x), 1e-5);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gemm_ex_tf32_and_16_bit_paths() {
    let stream = stream();
    let blas = CudaBlas::new(stream.clone()).unwrap();
    let mut rng = Rng::seeded("gemm_ex");
    let tf32 = |x: f32| f32::from_bits(x.to_bits().wrapping_add(0x1000) & !0x1fff);
    for round in 0..60 {
        let mut case = Case::random(&mut rng, 70);
        case.batch = 1;
        let [la, lb, _] = case.lens();
        let (a, b, c) = (rng.values(la), rng.values(lb), poisoned_c(&mut rng, &case));
        let (compute, round_in, tol): (Compute, fn(f32) -> f32, f64) = match round % 3 {
            0 => (Compute::CUBLAS_COMPUTE_32F_FAST_TF32, tf32, 1e-5),
            1 => (Compute::CUBLAS_COMPUTE_32F_FAST_16BF, |x| bf16::from_f32(x).to_f32(), 1e-5),
            _ => (Compute::CUBLAS_COMPUTE_32F_FAST_16F, |x| f16::from_f32(x).to_f32(), 1e-5),
        };
        let (da, db) = (stream.clone_htod(&a).unwrap(), stream.clone_htod(&b).unwrap());
        let mut dc = stream.clone_htod(&c).unwrap();
        {
            let (va, vb) = (da.slice(case.off[0]..), db.slice(case.off[1]..));
            let (pa, _ga) = va.device_ptr(&stream);
            let (pb, _gb) = vb.device_ptr(&stream);
            let mut vc = dc.slice_mut(case.off[2]..);
            let (pc, _gc) = vc.device_ptr_mut(&stream);
            let f32t = cudaDataType::CUDA_R_32F;
            // SAFETY: the buffers hold the case's elements; alpha and beta are host f32s.
            unsafe {
                result::gemm_ex(
                    *blas.handle(),
                    case.ta,
                    case.tb,
                    case.m as i32,
                    case.n as i32,
                    case.k as i32,
                    (&case.alpha as *const f32).cast(),
                    pa as *const _,
                    f32t,
                    case.lda as i32,
                    pb as *const _,
                    f32t,
                    case.ldb as i32,
                    (&case.beta as *const f32).cast(),
                    pc as *mut _,
                    f32t,
                    case.ldc as i32,
                    compute,
                    cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                )
            }
            .unwrap();
        }
        let got = stream.clone_dtoh(&dc).unwrap();
        // The reference rounds the inputs as the compute type does, so the tolerance stays tight.
        let rounded = mismatch(&case, &c, &got, &case.reference(&a, &b, &c, round_in), tol, 0.0);
        if compute == Compute::CUBLAS_COMPUTE_32F_FAST_TF32 {
            // FAST_TF32 *allows* TF32 (as in cuBLAS): small products run exactly in fp32. Either
            // model must hold for the whole case, at the same tight tolerance.
            if let Err(tf32_miss) = rounded {
                let exact = mismatch(&case, &c, &got, &case.reference(&a, &b, &c, |x| x), tol, 0.0);
                assert!(exact.is_ok(), "TF32 model: {tf32_miss}\nexact fp32 model: {}", exact.unwrap_err());
            }
        } else if let Err(e) = rounded {
            panic!("{compute:?}: {e}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn half_and_bf16_gemm_traits() {
    let stream = stream();
    let blas = CudaBlas::new(stream.clone()).unwrap();
    let mut rng = Rng::seeded("gemm 16-bit");
    for round in 0..40 {
        let case = Case { beta: if round % 2 == 0 { 0.0 } else { 0.5 }, ..Case::random(&mut rng, 50) };
        let [la, lb, lc] = case.lens();
        let (a, b) = (rng.values(la), rng.values(lb));
        let c: Vec<f32> = rng.values(lc);
        macro_rules! go {
            ($t:ty) => {{
                let cast = |v: &[f32]| v.iter().map(|x| <$t>::from_f32(*x)).collect::<Vec<$t>>();
                let (a16, b16, mut c16) = (cast(&a), cast(&b), cast(&c));
                if case.beta == 0.0 {
                    c16.iter_mut().for_each(|v| *v = <$t>::NAN);
                }
                let widen = |v: &[$t]| v.iter().map(|x| x.to_f32()).collect::<Vec<f32>>();
                let c_in = widen(&c16);
                let got = widen(&run_strided(&blas, &stream, &case, [&a16, &b16, &c16], <$t>::from_f32));
                let exact = Case {
                    alpha: <$t>::from_f32(case.alpha).to_f32(),
                    beta: <$t>::from_f32(case.beta).to_f32(),
                    ..case
                };
                // Inputs are exact in the reference (already 16-bit); the output rounding is the
                // only 16-bit error: 2^-8 of the scale covers bf16, f16 too, and half the output
                // type's smallest subnormal a result rounded among them (an f16 product of k = 1
                // near 3e-6 is a multiple of 2^-24).
                check_with_floor(
                    &exact,
                    &c_in,
                    &got,
                    &exact.reference(&widen(&a16), &widen(&b16), &c_in, |x| x),
                    1.0 / 256.0,
                    f64::from(<$t>::MIN_POSITIVE_SUBNORMAL.to_f32()) / 2.0,
                );
            }};
        }
        if round % 2 == 0 {
            go!(f16)
        } else {
            go!(bf16)
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_pointer_mode_reads_alpha_and_beta_from_the_device() {
    let stream = stream();
    let blas = CudaBlas::new(stream.clone()).unwrap();
    assert_eq!(blas.get_pointer_mode().unwrap(), cublasPointerMode_t::CUBLAS_POINTER_MODE_HOST);
    blas.set_pointer_mode(cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE).unwrap();
    assert_eq!(blas.get_pointer_mode().unwrap(), cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE);
    let mut rng = Rng::seeded("device pointer mode");
    for _ in 0..20 {
        let mut case = Case::random(&mut rng, 33);
        case.batch = 1;
        let [la, lb, _] = case.lens();
        let (a, b, c) = (rng.values(la), rng.values(lb), poisoned_c(&mut rng, &case));
        let scalars = stream.clone_htod(&[case.alpha, case.beta]).unwrap();
        let (da, db) = (stream.clone_htod(&a).unwrap(), stream.clone_htod(&b).unwrap());
        let mut dc = stream.clone_htod(&c).unwrap();
        {
            let (ps, _gs) = scalars.device_ptr(&stream);
            let (va, vb) = (da.slice(case.off[0]..), db.slice(case.off[1]..));
            let (pa, _ga) = va.device_ptr(&stream);
            let (pb, _gb) = vb.device_ptr(&stream);
            let mut vc = dc.slice_mut(case.off[2]..);
            let (pc, _gc) = vc.device_ptr_mut(&stream);
            // SAFETY: alpha and beta are device f32s (device pointer mode); operands as the case.
            unsafe {
                result::sgemm(
                    *blas.handle(),
                    case.ta,
                    case.tb,
                    case.m as i32,
                    case.n as i32,
                    case.k as i32,
                    ps as *const f32,
                    pa as *const f32,
                    case.lda as i32,
                    pb as *const f32,
                    case.ldb as i32,
                    (ps + 4) as *const f32,
                    pc as *mut f32,
                    case.ldc as i32,
                )
            }
            .unwrap();
        }
        let got = stream.clone_dtoh(&dc).unwrap();
        check(&case, &c, &got, &case.reference(&a, &b, &c, |x| x), 1e-5);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sgemv_both_transposes_with_increments() {
    let stream = stream();
    let blas = CudaBlas::new(stream.clone()).unwrap();
    let mut rng = Rng::seeded("sgemv");
    for _ in 0..100 {
        let (m, n) = (1 + rng.below(200), 1 + rng.below(200));
        let trans = [N, T][rng.below(2)];
        let (lda, incx, incy) = (m + rng.below(3), 1 + rng.below(3), 1 + rng.below(3));
        let (xl, yl) = if trans == N { (n, m) } else { (m, n) };
        let a = rng.values(lda * n);
        let x = rng.values((xl - 1) * incx + 1);
        let beta = if rng.below(2) == 0 { 0.0 } else { 0.75 };
        let mut y = rng.values((yl - 1) * incy + 1);
        if beta == 0.0 {
            y.iter_mut().for_each(|v| *v = f32::NAN);
        }
        let alpha = 1.5;
        let (da, dx) = (stream.clone_htod(&a).unwrap(), stream.clone_htod(&x).unwrap());
        let mut dy = stream.clone_htod(&y).unwrap();
        let cfg = GemvConfig {
            trans,
            m: m as i32,
            n: n as i32,
            alpha,
            lda: lda as i32,
            incx: incx as i32,
            beta,
            incy: incy as i32,
        };
        // SAFETY: the buffers hold what the configuration touches.
        unsafe { blas.gemv(cfg, &da, &dx, &mut dy) }.unwrap();
        let got = stream.clone_dtoh(&dy).unwrap();
        for i in 0..yl {
            let (mut acc, mut mag) = (0.0f64, 0.0f64);
            for j in 0..xl {
                let av = if trans == N { a[i + j * lda] } else { a[j + i * lda] } as f64;
                acc += av * x[j * incx] as f64;
                mag += (av * x[j * incx] as f64).abs();
            }
            let old = if beta == 0.0 { 0.0 } else { beta as f64 * y[i * incy] as f64 };
            let want = alpha as f64 * acc + old;
            let scale = alpha as f64 * mag + old.abs();
            let g = got[i * incy] as f64;
            assert!(
                (g - want).abs() <= 1e-5 * scale,
                "{trans:?} {m}x{n} lda {lda} incx {incx} incy {incy}: y[{i}] {g} vs {want}"
            );
        }
        for (i, (g, b)) in got.iter().zip(&y).enumerate() {
            if i % incy != 0 {
                assert_eq!(g.to_bits(), b.to_bits(), "y element {i} between increments changed");
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn statuses_on_the_gpu() {
    let stream = stream();
    let blas = CudaBlas::new(stream.clone()).unwrap();
    let a = stream.alloc_zeros::<f32>(64).unwrap();
    let mut c = stream.alloc_zeros::<f32>(64).unwrap();
    let cfg =
        GemmConfig { transa: N, transb: N, m: 4, n: 4, k: 4, alpha: 1.0, lda: 4, ldb: 4, beta: 0.0, ldc: 4 };
    // SAFETY (each call): 64-element buffers cover every 4x4 problem below.
    let bad = unsafe { blas.gemm(GemmConfig { m: -1, ..cfg }, &a, &a, &mut c) };
    assert_eq!(bad, Err(CublasError(Status::CUBLAS_STATUS_INVALID_VALUE)));
    // SAFETY: as above.
    let bad = unsafe { blas.gemm(GemmConfig { lda: 3, ..cfg }, &a, &a, &mut c) };
    assert_eq!(bad, Err(CublasError(Status::CUBLAS_STATUS_INVALID_VALUE)));
    // SAFETY: as above; nothing is touched for m = 0.
    unsafe { blas.gemm(GemmConfig { m: 0, ..cfg }, &a, &a, &mut c) }.unwrap();
    let d = stream.alloc_zeros::<f64>(64).unwrap();
    let mut dc = stream.alloc_zeros::<f64>(64).unwrap();
    let dcfg = GemmConfig {
        transa: N,
        transb: N,
        m: 4,
        n: 4,
        k: 4,
        alpha: 1.0f64,
        lda: 4,
        ldb: 4,
        beta: 0.0f64,
        ldc: 4,
    };
    // SAFETY: as above.
    unsafe { blas.gemm(dcfg, &d, &d, &mut dc) }.unwrap();
    // SAFETY: as above.
    let bad = unsafe { blas.gemm(GemmConfig { ldc: 3, ..dcfg }, &d, &d, &mut dc) };
    assert_eq!(bad, Err(CublasError(Status::CUBLAS_STATUS_INVALID_VALUE)));
}
