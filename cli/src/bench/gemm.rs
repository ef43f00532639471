//! GEMM throughput: our kernels (through [`GpuOps::gemm`](prism_gpu::runtime::GpuOps::gemm), so the
//! dispatcher's choice is what is timed) beside cuBLAS in the same run, for every precision.
//!
//! Row-major `C = A * B` (no transposes), inputs uniform in [-1, 1). cuBLAS (through cudarc, on
//! its own context and stream, feature `bench-anchors`) computes the same product column-major as
//! `C^T = B^T * A^T`: SGEMM with `CUBLAS_COMPUTE_32F`, TF32 with `CUBLAS_COMPUTE_32F_FAST_TF32`,
//! bf16 / f16 in and out with f32 compute. Each side is timed with its own CUDA events; a sample is
//! `inner` back-to-back GEMMs (enough for ~5 GFLOP, at most 100), the median of the samples after
//! warm-up is reported. For shapes up to 4096 x 4096 outputs our result is checked against
//! cuBLAS's (relative Frobenius difference within the precision's tolerance), so a wrong kernel
//! cannot post a number.

use std::sync::Arc;

use half::{bf16, f16};

use super::{teraflops, time_gpu, Measured, Row, Settings};
use prism_gpu::driver::{CudaSlice, CudaStream};
use prism_gpu::raw::kernels::gemm::{tuning, Element, Gemm, Precision};
use prism_gpu::{Error, Result};

use prism_gpu::rng::SplitMix64;
use prism_gpu::runtime::{GpuOps, ProductionGpuRuntime};

/// The shapes of a full run (m, n, k): squares, then wide / short-K, skinny, odd and non-square.
pub const SHAPES: &[(usize, usize, usize)] = &[
    (256, 256, 256),
    (512, 512, 512),
    (1024, 1024, 1024),
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (8192, 8192, 1024),
    (64, 8192, 8192),
    (1000, 1000, 1000),
    (3000, 5000, 2000),
];

/// Every precision, in table order.
pub const PRECISIONS: &[Precision] = &[Precision::F32, Precision::Tf32, Precision::Bf16, Precision::F16];

/// Which table GEMM rows go to, which decides their group and how they are plotted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// The `gemm` group: squares drawn against their side, other shapes in the table only.
    Gemm,
    /// The `sweep` group: every shape drawn against its GFLOP, one line per precision.
    Sweep,
}

impl Table {
    fn group(self) -> &'static str {
        match self {
            Table::Gemm => "gemm",
            Table::Sweep => super::sweep::GROUP,
        }
    }

    /// The plot series of a row of precision `label` at (m, n, k), a product of `flops`.
    fn series(self, label: &str, (m, n, k): (usize, usize, usize), flops: f64) -> Option<(String, f64)> {
        match self {
            Table::Gemm => (m == n && n == k).then(|| (label.to_string(), m as f64)),
            Table::Sweep => Some((label.to_string(), flops * 1e-9)),
        }
    }

    /// The row of a product of precision `label` at (m, n, k) of `flops`, `inner` of which took
    /// `ours` milliseconds on `kernel` (and `theirs` in cuBLAS, when it ran).
    fn row(
        self,
        label: &str,
        (m, n, k): (usize, usize, usize),
        (flops, inner): (f64, usize),
        (ours, theirs): (f64, Option<f64>),
        kernel: String,
    ) -> Row {
        let rate = |ms| teraflops(flops * inner as f64, ms);
        Row {
            group: self.group().into(),
            name: format!("{label} {m}x{n}x{k}"),
            series: self.series(label, (m, n, k), flops),
            ours: rate(ours),
            anchor: "cuBLAS".into(),
            anchor_value: theirs.map(rate),
            unit: "TFLOP/s".into(),
            higher_is_better: true,
            kernel: Some(kernel),
        }
    }
}

/// The rows of `bench` run for each of `shapes` on device 0, with cuBLAS (the anchor) beside and a
/// random number generator for the inputs.
fn each_shape(
    shapes: &[(usize, usize, usize)],
    mut bench: impl FnMut(
        &GpuOps,
        &mut cublas::Anchor,
        &mut SplitMix64,
        (usize, usize, usize),
    ) -> Result<Vec<Row>>,
) -> Result<Vec<Row>> {
    let runtime = ProductionGpuRuntime::with_device(0)?;
    let ops = runtime.gpu()?;
    let (mut anchor, mut rng) = (cublas::Anchor::new(), SplitMix64::from_time());
    let mut rows = Vec::new();
    for &shape in shapes {
        rows.extend(bench(ops, &mut anchor, &mut rng, shape)?);
    }
    Ok(rows)
}

/// Largest m x n whose result is compared with cuBLAS (downloads of bigger ones take seconds).
const CHECK_MAX_OUTPUTS: usize = 4096 * 4096;

/// Times every precision at every shape on device 0, ours beside cuBLAS, as rows of `table`.
pub fn run(
    settings: Settings,
    shapes: &[(usize, usize, usize)],
    precisions: &[Precision],
    table: Table,
) -> Result<Vec<Row>> {
    each_shape(shapes, |ops, anchor, rng, (m, n, k)| {
        let mut rows = Vec::new();
        let a = rng.vec(m * k, -1.0, 1.0);
        let b = rng.vec(k * n, -1.0, 1.0);
        for &precision in precisions {
            let g = Gemm::new(m, n, k).with_precision(precision);
            let inner = ((5e9 / g.flops()) as usize).clamp(1, 100);
            let timed = Timed { a: &a, b: &b, settings, inner };
            let (ours, ours_c, kernel) = match precision {
                Precision::F32 | Precision::Tf32 => time_ours::<f32>(ops, &g, timed)?,
                Precision::Bf16 => time_ours::<bf16>(ops, &g, timed)?,
                Precision::F16 => time_ours::<f16>(ops, &g, timed)?,
            };
            let theirs = anchor.time(precision, &g, timed, ours_c.is_some());
            let theirs = match theirs {
                Ok((ms, theirs_c)) => {
                    if let (Some(ours_c), Some(theirs_c)) = (&ours_c, &theirs_c) {
                        agree(&g, ours_c, theirs_c)?;
                    }
                    Some(ms)
                }
                Err(why) => {
                    eprintln!("gemm bench: cuBLAS {precision:?} {m}x{n}x{k}: {why}");
                    None
                }
            };
            rows.push(table.row(label(precision), (m, n, k), (g.flops(), inner), (ours, theirs), kernel));
        }
        Ok(rows)
    })
}

/// The DGEMM rows' shapes (f64 throughout; cuBLAS `cublasDgemm` as the anchor).
pub const DGEMM_SHAPES: &[(usize, usize, usize)] =
    &[(1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192)];

/// Times our f64 GEMM (through [`GpuOps::gemm_f64`]) beside cuBLAS DGEMM at each shape (m, n, k);
/// up to 4096 x 4096 outputs our result is checked against cuBLAS's (relative Frobenius difference
/// 1e-12). Rows of `table`.
pub fn run_dgemm(settings: Settings, shapes: &[(usize, usize, usize)], table: Table) -> Result<Vec<Row>> {
    each_shape(shapes, |ops, anchor, rng, (m, n, k)| {
        let g = Gemm::new(m, n, k).with_f64_scales(1.0, 0.0);
        let flops = g.layout.flops();
        let inner = ((5e9 / flops) as usize).clamp(1, 100);
        let values = |rng: &mut SplitMix64, len: usize| -> Vec<f64> {
            rng.vec(len, -1.0, 1.0).into_iter().map(f64::from).collect()
        };
        let (a, b) = (values(rng, m * k), values(rng, k * n));
        let (da, db) = (ops.upload(&a)?, ops.upload(&b)?);
        // SAFETY: with beta == 0 every GEMM writes all m x n elements before anything reads them.
        let mut dc: CudaSlice<f64> = unsafe { ops.stream().alloc(m * n) }?;
        let ours = time_gpu(ops.stream(), settings, |_| {
            for _ in 0..inner {
                ops.gemm_f64(&g, &da.as_view(), &db.as_view(), &mut dc.as_view_mut())?;
            }
            Ok(())
        })?;
        let check = m * n <= CHECK_MAX_OUTPUTS;
        let theirs = match anchor.time_dgemm((m, n, k), &a, &b, settings, inner, check) {
            Ok((ms, theirs)) => {
                if let Some(theirs) = theirs {
                    agree_f64((m, n, k), &ops.download(&dc)?, &theirs)?;
                }
                Some(ms)
            }
            Err(why) => {
                eprintln!("gemm bench: cuBLAS DGEMM {m}x{n}x{k}: {why}");
                None
            }
        };
        let kernel = tuning::plan_f64(ops.kernels(), &g.layout)?.to_string();
        Ok(vec![table.row("dgemm", (m, n, k), (flops, inner), (ours.median_ms, theirs), kernel)])
    })
}

/// Fails unless our f64 result and cuBLAS's agree to 1e-12 (relative Frobenius).
fn agree_f64((m, n, k): (usize, usize, usize), ours: &[f64], theirs: &[f64]) -> Result<()> {
    let diff: f64 = ours.iter().zip(theirs).map(|(x, y)| (x - y).powi(2)).sum();
    let norm: f64 = theirs.iter().map(|y| y * y).sum();
    let rel = (diff / norm.max(f64::MIN_POSITIVE)).sqrt();
    if rel.is_nan() || rel > 1e-12 || ours.len() != theirs.len() {
        return Err(Error::Shape {
            op: "gemm bench",
            expected: format!("our DGEMM {m}x{n}x{k} result within 1e-12 of cuBLAS's"),
            got: format!("relative difference {rel:.3e}"),
        });
    }
    Ok(())
}

/// The table name of a precision.
fn label(precision: Precision) -> &'static str {
    match precision {
        Precision::F32 => "sgemm",
        Precision::Tf32 => "tf32",
        Precision::Bf16 => "bf16",
        Precision::F16 => "f16",
    }
}

/// What one GEMM timing takes: row-major A and B as f32 (rounded to the element type on upload),
/// the warm-up and repeats, and the GEMMs timed back to back per repeat.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timed<'x> {
    pub a: &'x [f32],
    pub b: &'x [f32],
    pub settings: Settings,
    pub inner: usize,
}

impl Timed<'_> {
    /// [`time_gpu`] of `inner` back-to-back calls of `once` per repeat (short GEMMs batched so the
    /// events' resolution does not dominate): the milliseconds are of all `inner`.
    pub(crate) fn time(
        &self,
        stream: &Arc<CudaStream>,
        mut once: impl FnMut() -> Result<()>,
    ) -> Result<Measured> {
        time_gpu(stream, self.settings, |_| (0..self.inner).try_for_each(|_| once()))
    }
}

/// Median milliseconds of `inner` GEMMs with `T` inputs and outputs, the result as f32 when it is
/// small enough to check, and the kernel that ran (the dispatcher's plan for these operands, with
/// `a=padded` / `b=padded` where its CUDA-core kernel reads a copy of that operand).
fn time_ours<T: Element>(ops: &GpuOps, g: &Gemm, timed: Timed) -> Result<(f64, Option<Vec<f32>>, String)> {
    let (da, db) = (ops.upload(&narrow::<T>(timed.a))?, ops.upload(&narrow::<T>(timed.b))?);
    let plan = tuning::plan_of::<T, T>(ops.kernels(), ops.stream(), g, &da.as_view(), &db.as_view())?;
    let copies = tuning::padded_copies(ops.stream(), &plan, g, &da.as_view(), &db.as_view())?;
    let mut kernel = plan.to_string();
    for (copied, operand) in copies.into_iter().zip(["a", "b"]) {
        if copied {
            kernel.push_str(&format!(" {operand}=padded"));
        }
    }
    // SAFETY: with beta == 0 every GEMM writes all batch x m x n elements before anything reads
    // them.
    let mut dc: CudaSlice<T> = unsafe { ops.stream().alloc(g.batch * g.m * g.n) }?;
    let measured =
        timed.time(ops.stream(), || ops.gemm(g, &da.as_view(), &db.as_view(), &mut dc.as_view_mut()))?;
    let c = if g.batch * g.m * g.n <= CHECK_MAX_OUTPUTS {
        Some(ops.download(&dc)?.iter().map(|x| x.to_f32()).collect())
    } else {
        None
    };
    Ok((measured.median_ms, c, kernel))
}

/// Fails unless our result and cuBLAS's agree within the precision's tolerance (relative
/// Frobenius; both carry the precision's rounding, hence twice the tolerance).
fn agree(g: &Gemm, ours: &[f32], theirs: &[f32]) -> Result<()> {
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (&x, &y) in ours.iter().zip(theirs) {
        diff += (f64::from(x) - f64::from(y)).powi(2);
        norm += f64::from(y).powi(2);
    }
    let rel = (diff / norm.max(f64::MIN_POSITIVE)).sqrt();
    let tol = 2.0 * g.precision.tolerance();
    if rel.is_nan() || rel > tol || ours.len() != theirs.len() {
        return Err(Error::Shape {
            op: "gemm bench",
            expected: format!(
                "our {:?} {}x{}x{} result within {tol:.0e} of cuBLAS's",
                g.precision, g.m, g.n, g.k
            ),
            got: format!("relative difference {rel:.3e}"),
        });
    }
    Ok(())
}

/// `x` as `T` (rounded), for uploads.
pub(crate) fn narrow<T: Element>(x: &[f32]) -> Vec<T> {
    x.iter().map(|&v| T::from_f32(v)).collect()
}

#[cfg(feature = "bench-anchors")]
pub(crate) mod cublas {
    //! cuBLAS through cudarc 0.19 on its own context: the anchor.

    use std::ffi::c_void;
    use std::sync::Arc;

    use cudarc::cublas::sys::{cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType};
    use cudarc::cublas::{result as blas, CudaBlas};
    use cudarc::driver::sys::CUevent_flags;
    use cudarc::driver::{
        self as driver_api, CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr,
    };
    use half::{bf16, f16};

    use super::{narrow, Gemm, Precision, Settings, Timed, CHECK_MAX_OUTPUTS};

    /// Median milliseconds of `inner` cuBLAS DGEMMs of row-major `size`^3 A, B (as timed in
    /// `gemm`), and the result when `want_result`.
    impl Anchor {
        pub fn time_dgemm(
            &mut self,
            (m, n, k): (usize, usize, usize),
            a: &[f64],
            b: &[f64],
            settings: Settings,
            inner: usize,
            want_result: bool,
        ) -> std::result::Result<(f64, Option<Vec<f64>>), String> {
            let (stream, blas) = self.0.as_ref().map_err(Clone::clone)?;
            let da = stream.clone_htod(a).map_err(err)?;
            let db = stream.clone_htod(b).map_err(err)?;
            // SAFETY: with beta == 0 every GEMM writes all elements before anything reads them.
            let mut dc: CudaSlice<f64> = unsafe { stream.alloc(m * n) }.map_err(err)?;
            let dim = |d: usize| i32::try_from(d).map_err(|_| format!("{d} does not fit cuBLAS's int"));
            let (m, n, k) = (dim(m)?, dim(n)?, dim(k)?);
            let (alpha, beta) = (1.0f64, 0.0f64);
            let once = |dc: &mut CudaSlice<f64>| -> std::result::Result<(), String> {
                let (pa, _ra) = da.device_ptr(stream);
                let (pb, _rb) = db.device_ptr(stream);
                let (pc, _wc) = dc.device_ptr_mut(stream);
                let op = cublasOperation_t::CUBLAS_OP_N;
                // SAFETY: packed row-major A (m x k), B (k x n), C (m x n) of those lengths; host
                // scalars. Row-major C = A B is column-major C^T (n x m) = B^T (n x k) A^T (k x m).
                unsafe {
                    blas::dgemm(
                        *blas.handle(),
                        op,
                        op,
                        n,
                        m,
                        k,
                        &alpha,
                        pb as *const f64,
                        n,
                        pa as *const f64,
                        k,
                        &beta,
                        pc as *mut f64,
                        n,
                    )
                }
                .map_err(err)
            };
            let median = median_ms(stream, settings, inner, || once(&mut dc))?;
            let c = if want_result { Some(stream.clone_dtoh(&dc).map_err(err)?) } else { None };
            Ok((median, c))
        }
    }

    type Res<T> = std::result::Result<T, String>;
    fn err(e: impl std::fmt::Debug) -> String {
        format!("{e:?}")
    }
    super::super::compare::event_median_ms!();

    use prism_gpu::raw::kernels::gemm::Element;

    /// cuBLAS on device 0, or why it could not be set up.
    pub struct Anchor(std::result::Result<(Arc<CudaStream>, CudaBlas), String>);

    impl Anchor {
        pub fn new() -> Self {
            let setup = || -> std::result::Result<_, String> {
                let stream = CudaContext::new(0).map_err(err)?.default_stream();
                let blas = CudaBlas::new(stream.clone()).map_err(err)?;
                Ok((stream, blas))
            };
            Anchor(setup())
        }

        /// Median milliseconds of `inner` cuBLAS GEMMs of `g` (row-major A, B), and the result
        /// as f32 when `want_result`.
        pub fn time(
            &mut self,
            precision: Precision,
            g: &Gemm,
            timed: Timed,
            want_result: bool,
        ) -> std::result::Result<(f64, Option<Vec<f32>>), String> {
            let (stream, blas) = self.0.as_ref().map_err(Clone::clone)?;
            let (f32_compute, tf32_compute) =
                (cublasComputeType_t::CUBLAS_COMPUTE_32F, cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32);
            match precision {
                Precision::F32 => gemm::<f32>(stream, blas, f32_compute, g, timed, want_result),
                Precision::Tf32 => gemm::<f32>(stream, blas, tf32_compute, g, timed, want_result),
                Precision::Bf16 => gemm::<bf16>(stream, blas, f32_compute, g, timed, want_result),
                Precision::F16 => gemm::<f16>(stream, blas, f32_compute, g, timed, want_result),
            }
        }
    }

    trait BlasType: Element + DeviceRepr {
        const CUDA: cudaDataType;
    }
    impl BlasType for f32 {
        const CUDA: cudaDataType = cudaDataType::CUDA_R_32F;
    }
    impl BlasType for bf16 {
        const CUDA: cudaDataType = cudaDataType::CUDA_R_16BF;
    }
    impl BlasType for f16 {
        const CUDA: cudaDataType = cudaDataType::CUDA_R_16F;
    }

    fn gemm<T: BlasType>(
        stream: &Arc<CudaStream>,
        blas: &CudaBlas,
        compute: cublasComputeType_t,
        g: &Gemm,
        Timed { a, b, settings, inner }: Timed,
        want_result: bool,
    ) -> std::result::Result<(f64, Option<Vec<f32>>), String> {
        let da = stream.clone_htod(&narrow::<T>(a)).map_err(err)?;
        let db = stream.clone_htod(&narrow::<T>(b)).map_err(err)?;
        // SAFETY: with beta == 0 every GEMM writes all batch x m x n elements before anything
        // reads them.
        let mut dc: CudaSlice<T> = unsafe { stream.alloc(g.batch * g.m * g.n) }.map_err(err)?;
        let dim = |d: usize| i32::try_from(d).map_err(|_| format!("{d} does not fit cuBLAS's int"));
        let stride = |d: usize| i64::try_from(d).map_err(|_| format!("{d} does not fit cuBLAS's int64"));
        let (m, n, k, lda, ldb, ldc) =
            (dim(g.m)?, dim(g.n)?, dim(g.k)?, dim(g.lda)?, dim(g.ldb)?, dim(g.ldc)?);
        let (stride_a, stride_b, stride_c) = (stride(g.stride_a)?, stride(g.stride_b)?, stride(g.stride_c)?);
        let batch = dim(g.batch)?;
        let op = |t: bool| if t { cublasOperation_t::CUBLAS_OP_T } else { cublasOperation_t::CUBLAS_OP_N };
        let (alpha, beta) = (1.0f32, 0.0f32);
        let once = || -> std::result::Result<(), String> {
            let (pa, _ra) = da.device_ptr(stream);
            let (pb, _rb) = db.device_ptr(stream);
            let (pc, _wc) = dc.device_ptr_mut(stream);
            // Row-major C (m x n) = op(A) op(B) is column-major C^T (n x m) = op(B)^T op(A)^T: B
            // first, each operand transposed as stored.
            // SAFETY: the buffers hold `g`'s batch entries of A, B and C (packed, as the caller
            // built them) of type T with these leading dimensions and strides; alpha and beta are
            // host f32 (host pointer mode).
            unsafe {
                blas::gemm_strided_batched_ex(
                    *blas.handle(),
                    op(g.trans_b),
                    op(g.trans_a),
                    n,
                    m,
                    k,
                    (&alpha as *const f32).cast::<c_void>(),
                    pb as *const c_void,
                    T::CUDA,
                    ldb,
                    stride_b,
                    pa as *const c_void,
                    T::CUDA,
                    lda,
                    stride_a,
                    (&beta as *const f32).cast::<c_void>(),
                    pc as *mut c_void,
                    T::CUDA,
                    ldc,
                    stride_c,
                    batch,
                    compute,
                    cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                )
            }
            .map_err(err)
        };
        let median = median_ms(stream, settings, inner, once)?;
        let c = if want_result && g.batch * g.m * g.n <= CHECK_MAX_OUTPUTS {
            Some(stream.clone_dtoh(&dc).map_err(err)?.iter().map(|x| x.to_f32()).collect())
        } else {
            None
        };
        Ok((median, c))
    }
}

#[cfg(not(feature = "bench-anchors"))]
pub(crate) mod cublas {
    //! Without `bench-anchors` there is no cuBLAS to compare with: rows carry no anchor.

    use super::{Gemm, Precision, Settings, Timed};

    pub struct Anchor;

    impl Anchor {
        pub fn new() -> Self {
            Anchor
        }

        pub fn time(
            &mut self,
            _: Precision,
            _: &Gemm,
            _: Timed,
            _: bool,
        ) -> std::result::Result<(f64, Option<Vec<f32>>), String> {
            Err("built without the `bench-anchors` feature".into())
        }

        pub fn time_dgemm(
            &mut self,
            _: (usize, usize, usize),
            _: &[f64],
            _: &[f64],
            _: Settings,
            _: usize,
            _: bool,
        ) -> std::result::Result<(f64, Option<Vec<f64>>), String> {
            Err("built without the `bench-anchors` feature".into())
        }
    }
}
