//! Differential test: `prism_gpu::cublas::result` against the real cuBLAS (cudarc 0.19 with its
//! `cublas` feature, libcublas loaded at run time) on the same device, one process, each engine on
//! its own context handle to the primary context. Random column-major strided batched problems
//! (every transpose pair, padded leading dimensions, zero strides, odd element offsets, beta 0
//! over a NaN C) go through both with the same arguments; C is compared element-wise within
//! `tol * (|alpha| sum_k |a||b| + |beta c|)`, computed on the host in f64. Elements outside C's
//! blocks must be left bit-for-bit as they were. The seed is printed; `PRISM_SEED` overrides it.
#![cfg(all(feature = "bench-anchors", feature = "cublas", not(feature = "legacy-gpu")))]

use std::any::TypeId;
use std::ffi::c_void;
use std::sync::Arc;

use cudarc::cublas::{result as theirs, sys as tsys};
use cudarc::driver::{DevicePtr as _, DevicePtrMut as _};
use half::{bf16, f16};
use prism_gpu::cublas::{result as ours, sys as osys};
use prism_gpu::driver::{DevicePtr as _, DevicePtrMut as _};

/// xorshift64; the seed comes from `PRISM_SEED` (decimal or `0x` hex) or the clock.
struct Rng(u64);
impl Rng {
    fn seeded() -> (Self, u64) {
        let seed = match std::env::var("PRISM_SEED") {
            Ok(s) => match s.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => s.parse(),
            }
            .expect("PRISM_SEED: a decimal or 0x-hex u64"),
            Err(_) => {
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
            }
        } | 1;
        println!("cublas_vs_cublas: seed {seed:#x} (rerun with PRISM_SEED={seed:#x})");
        (Rng(seed), seed)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// Uniform in [-1, 1], never zero (nor so small that f16 would flush it).
    fn value(&mut self) -> f32 {
        loop {
            let v = ((self.next() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
            if v.abs() >= 1e-3 {
                return v;
            }
        }
    }
}

/// An element type both engines know.
trait Elem: Copy + prism_gpu::driver::DeviceRepr + cudarc::driver::DeviceRepr + 'static {
    const OURS: osys::cudaDataType;
    const THEIRS: tsys::cudaDataType;
    fn from_f32(x: f32) -> Self;
    fn to_f64(self) -> f64;
}
macro_rules! elem {
    ($t:ty, $cuda:ident, $from:expr, $to:expr) => {
        impl Elem for $t {
            const OURS: osys::cudaDataType = osys::cudaDataType::$cuda;
            const THEIRS: tsys::cudaDataType = tsys::cudaDataType::$cuda;
            fn from_f32(x: f32) -> Self {
                $from(x)
            }
            fn to_f64(self) -> f64 {
                $to(self)
            }
        }
    };
}
elem!(f32, CUDA_R_32F, |x| x, f64::from);
elem!(f16, CUDA_R_16F, f16::from_f32, |x: f16| x.to_f64());
elem!(bf16, CUDA_R_16BF, bf16::from_f32, |x: bf16| x.to_f64());

/// One type pair and how it is called.
struct Kind {
    name: &'static str,
    /// `sgemm_strided_batched` (f32 only) rather than `gemm_strided_batched_ex`.
    sgemm: bool,
    tf32: bool,
    tol: f64,
}

const KINDS: [Kind; 5] = [
    Kind { name: "f32 sgemm COMPUTE_32F", sgemm: true, tf32: false, tol: 1e-5 },
    // Both sides round the inputs to TF32, perhaps differently (nearest vs truncation: up to
    // 2^-11 + 2^-10 per operand), hence a little over the nominal 2e-3.
    Kind { name: "f32 ex COMPUTE_32F_FAST_TF32", sgemm: false, tf32: true, tol: 4e-3 },
    Kind { name: "f16->f16 ex COMPUTE_32F", sgemm: false, tf32: false, tol: 1e-2 },
    Kind { name: "bf16->bf16 ex COMPUTE_32F", sgemm: false, tf32: false, tol: 1e-2 },
    Kind { name: "f16->f32 ex COMPUTE_32F", sgemm: false, tf32: false, tol: 1e-2 },
];

#[derive(Debug, Clone, Copy)]
struct Case {
    /// Transposes of A and B.
    t: [bool; 2],
    m: usize,
    n: usize,
    k: usize,
    ld: [usize; 3],
    batch: usize,
    stride: [usize; 3],
    /// Element offsets of A, B, C in their buffers.
    off: [usize; 3],
    alpha: f32,
    beta: f32,
}

impl Case {
    fn random(rng: &mut Rng, big: bool) -> Self {
        let mut dims = [1 + rng.below(300), 1 + rng.below(300), 1 + rng.below(300)];
        if big {
            dims[rng.below(3)] = 1001 + rng.below(300);
        }
        let [m, n, k] = dims;
        let t = [rng.below(2) == 1, rng.below(2) == 1];
        let (rows, cols) = (rows_of(t, m, n, k), cols_of(t, m, n, k));
        let ld = [0, 1, 2].map(|i| rows[i] + [0, 1, 3, 8][rng.below(4)]);
        let batch = if big { 1 } else { 1 + rng.below(4) };
        let zero = rng.below(4); // 0: A's stride is 0, 1: B's; C's never is (outputs would overlap)
        let stride = [0, 1, 2].map(|i| if i == zero && i < 2 { 0 } else { ld[i] * cols[i] + rng.below(5) });
        let off = [0, 1, 2].map(|_| [0, 1, 3, 5][rng.below(4)]);
        let alpha = [1.0, -1.0, 1.5 * rng.value()][rng.below(3)];
        let beta = [0.0, 0.0, 1.0, rng.value()][rng.below(4)];
        Case { t, m, n, k, ld, batch, stride, off, alpha, beta }
    }

    /// Element counts of the A, B, C buffers, offsets included.
    fn lens(&self) -> [usize; 3] {
        let cols = cols_of(self.t, self.m, self.n, self.k);
        [0, 1, 2].map(|i| self.off[i] + (self.batch - 1) * self.stride[i] + self.ld[i] * cols[i])
    }

    /// Per element of C's buffer: `|alpha| sum_k |a||b| + |beta c|` inside C's blocks, NaN outside.
    fn scales(&self, a: &[f64], b: &[f64], c: &[f64]) -> Vec<f64> {
        let (m, n, k) = (self.m, self.n, self.k);
        let mut out = vec![f64::NAN; c.len()];
        for z in 0..self.batch {
            let at = |buf: &[f64], i: usize, r: usize, p: usize, trans: bool| {
                let e = if trans { p + r * self.ld[i] } else { r + p * self.ld[i] };
                buf[self.off[i] + z * self.stride[i] + e].abs()
            };
            // op(A) row i and op(B) column j, each as k contiguous magnitudes.
            let ra: Vec<f64> = (0..m * k).map(|x| at(a, 0, x / k, x % k, self.t[0])).collect();
            let cb: Vec<f64> = (0..n * k).map(|x| at(b, 1, x / k, x % k, !self.t[1])).collect();
            // Columns of C spread over the cores (tests may run unoptimised).
            let base = self.off[2] + z * self.stride[2];
            let block = &mut out[base..base + self.ld[2] * n];
            let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
            let per = n.div_ceil(threads) * self.ld[2];
            std::thread::scope(|scope| {
                for (chunk, cols) in block.chunks_mut(per).enumerate() {
                    let (ra, cb) = (&ra, &cb);
                    scope.spawn(move || {
                        for (jj, col) in cols.chunks_mut(self.ld[2]).enumerate() {
                            let j = chunk * per / self.ld[2] + jj;
                            for (i, slot) in col[..m].iter_mut().enumerate() {
                                let dot: f64 =
                                    ra[i * k..][..k].iter().zip(&cb[j * k..][..k]).map(|(x, y)| x * y).sum();
                                let old = if self.beta == 0.0 {
                                    0.0
                                } else {
                                    (self.beta as f64 * c[base + i + j * self.ld[2]]).abs()
                                };
                                *slot = self.alpha.abs() as f64 * dot + old;
                            }
                        }
                    });
                }
            });
        }
        out
    }
}

/// Rows of the stored A (op(A) m x k), B (op(B) k x n) and C (m x n).
fn rows_of(t: [bool; 2], m: usize, n: usize, k: usize) -> [usize; 3] {
    [if t[0] { k } else { m }, if t[1] { n } else { k }, m]
}
fn cols_of(t: [bool; 2], m: usize, n: usize, k: usize) -> [usize; 3] {
    [if t[0] { m } else { k }, if t[1] { k } else { n }, n]
}

/// Both engines on device 0.
struct Engines {
    o_stream: Arc<prism_gpu::driver::CudaStream>,
    o_blas: prism_gpu::cublas::CudaBlas,
    t_stream: Arc<cudarc::driver::CudaStream>,
    t_blas: cudarc::cublas::CudaBlas,
}

/// Runs `case` through both engines; returns (ours, theirs, C before) as f64.
fn run_both<I: Elem, O: Elem>(
    e: &Engines,
    kind: &Kind,
    case: &Case,
    a: &[I],
    b: &[I],
    c: &[O],
) -> [Vec<f64>; 3] {
    let (m, n, k) = (case.m as i32, case.n as i32, case.k as i32);
    let [lda, ldb, ldc] = case.ld.map(|x| x as i32);
    let [sa, sb, sc] = case.stride.map(|x| x as i64);
    let (alpha, beta) = (case.alpha, case.beta);
    let (ob, os) = (std::mem::size_of::<I>() as u64, std::mem::size_of::<O>() as u64);
    let [offa, offb, offc] = case.off.map(|x| x as u64);
    let sgemm = kind.sgemm && TypeId::of::<(I, O)>() == TypeId::of::<(f32, f32)>();
    assert_eq!(sgemm, kind.sgemm, "sgemm is for f32 only");

    // Runs the case on one engine (its stream, cuBLAS handle, `result` and `sys`
    // modules and `Elem` data-type constant): the same steps on either crate's types; `C` comes back.
    // Defined here so that its body sees the locals above.
    macro_rules! on_engine {
        ($stream:expr, $blas:expr, $api:ident, $sys:ident, $dt:ident, $who:literal) => {{
            let op = |t: bool| {
                if t {
                    $sys::cublasOperation_t::CUBLAS_OP_T
                } else {
                    $sys::cublasOperation_t::CUBLAS_OP_N
                }
            };
            let compute = if kind.tf32 {
                $sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32
            } else {
                $sys::cublasComputeType_t::CUBLAS_COMPUTE_32F
            };
            let s = &$stream;
            let (da, db, mut dc) =
                (s.clone_htod(a).unwrap(), s.clone_htod(b).unwrap(), s.clone_htod(c).unwrap());
            {
                let ((pa, _ga), (pb, _gb), (pc, _gc)) =
                    (da.device_ptr(s), db.device_ptr(s), dc.device_ptr_mut(s));
                let (pa, pb, pc) = (pa + offa * ob, pb + offb * ob, pc + offc * os);
                let h = *$blas.handle();
                // SAFETY: the buffers hold `lens()` elements of I (A, B) and O (C), so from the
                // offset pointers every element of every batch at these ld/strides is inside them
                // (`lens`); C's blocks do not overlap (stride_c >= ldc * n); alpha and beta are host
                // f32 (host pointer mode, either handle's default; cudarc's handle is bound to its
                // stream); the guards keep the buffers alive until the call returns.
                let done = unsafe {
                    if sgemm {
                        $api::sgemm_strided_batched(
                            h,
                            op(case.t[0]),
                            op(case.t[1]),
                            m,
                            n,
                            k,
                            &alpha,
                            pa as *const f32,
                            lda,
                            sa,
                            pb as *const f32,
                            ldb,
                            sb,
                            &beta,
                            pc as *mut f32,
                            ldc,
                            sc,
                            case.batch as i32,
                        )
                    } else {
                        $api::gemm_strided_batched_ex(
                            h,
                            op(case.t[0]),
                            op(case.t[1]),
                            m,
                            n,
                            k,
                            (&alpha as *const f32).cast(),
                            pa as *const c_void,
                            I::$dt,
                            lda,
                            sa,
                            pb as *const c_void,
                            I::$dt,
                            ldb,
                            sb,
                            (&beta as *const f32).cast(),
                            pc as *mut c_void,
                            O::$dt,
                            ldc,
                            sc,
                            case.batch as i32,
                            compute,
                            $sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                        )
                    }
                };
                done.unwrap_or_else(|err| panic!("{}: {} failed on {case:?}: {err:?}", kind.name, $who));
            }
            s.clone_dtoh(&dc).unwrap()
        }};
    }

    let got_o = on_engine!(e.o_stream, e.o_blas, ours, osys, OURS, "ours");
    let got_t = on_engine!(e.t_stream, e.t_blas, theirs, tsys, THEIRS, "cuBLAS");
    let f = |v: &[O]| v.iter().map(|x| x.to_f64()).collect::<Vec<_>>();
    [f(&got_o), f(&got_t), f(c)]
}

/// One random case of `kind` through both engines: the worst scaled error, or what mismatched.
fn one<I: Elem, O: Elem>(e: &Engines, rng: &mut Rng, kind: &Kind, big: bool) -> Result<f64, String> {
    let case = Case::random(rng, big);
    let [la, lb, lc] = case.lens();
    let a: Vec<I> = (0..la).map(|_| I::from_f32(rng.value())).collect();
    let b: Vec<I> = (0..lb).map(|_| I::from_f32(rng.value())).collect();
    // beta == 0 must not read C: all of it (gaps included) is NaN then.
    let c: Vec<O> =
        (0..lc).map(|_| O::from_f32(if case.beta == 0.0 { f32::NAN } else { rng.value() })).collect();
    let [got_o, got_t, before] = run_both(e, kind, &case, &a, &b, &c);
    let wide = |v: &[I]| v.iter().map(|x| x.to_f64()).collect::<Vec<_>>();
    let scales = case.scales(&wide(&a), &wide(&b), &before);
    let mut worst = 0.0f64;
    for (i, (((o, t), was), scale)) in got_o.iter().zip(&got_t).zip(&before).zip(&scales).enumerate() {
        let same = |x: &f64, y: &f64| x == y || (x.is_nan() && y.is_nan());
        let bad = if scale.is_nan() {
            (!same(o, was) || !same(t, was))
                .then(|| format!("outside C's blocks: was {was}, ours {o}, cuBLAS {t}"))
        } else {
            let err = (o - t).abs() / scale;
            worst = worst.max(err);
            (!o.is_finite() || !t.is_finite() || err.is_nan() || err > kind.tol).then(|| {
                format!("ours {o}, cuBLAS {t}, scale {scale}, scaled error {err:e} > {:e}", kind.tol)
            })
        };
        if let Some(why) = bad {
            return Err(format!("{}: element {i} of C's buffer: {why}; case {case:?}", kind.name));
        }
    }
    Ok(worst)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ours_matches_real_cublas_on_random_strided_batched_gemms() {
    let (mut rng, seed) = Rng::seeded();
    let o_stream = prism_gpu::driver::CudaContext::new(0).expect("a CUDA GPU (prism-gpu)").default_stream();
    let t_stream = cudarc::driver::CudaContext::new(0).expect("a CUDA GPU (cudarc)").default_stream();
    let e = Engines {
        o_blas: prism_gpu::cublas::CudaBlas::new(o_stream.clone()).expect("our cuBLAS handle"),
        t_blas: cudarc::cublas::CudaBlas::new(t_stream.clone()).expect("libcublas through cudarc"),
        o_stream,
        t_stream,
    };
    // PRISM_CUBLAS_ROUNDS shortens the run (the sanitizers instrument cuBLAS's kernels too, and 3000
    // rounds under racecheck outlast a device call); the count run is printed below.
    let rounds: usize = std::env::var("PRISM_CUBLAS_ROUNDS")
        .map(|r| r.trim().parse().expect("PRISM_CUBLAS_ROUNDS must be a count"))
        .unwrap_or(3000);
    println!("{rounds} rounds, seed {seed:#x}");
    let mut runs = [0usize; KINDS.len()];
    let mut worst = [0.0f64; KINDS.len()];
    let mut failures = Vec::new();
    for round in 0..rounds {
        let which = round % KINDS.len();
        // One case in 20 of each kind has a dimension over 1000.
        let big = (round / KINDS.len()) % 20 == 19;
        let kind = &KINDS[which];
        let got = match which {
            0 | 1 => one::<f32, f32>(&e, &mut rng, kind, big),
            2 => one::<f16, f16>(&e, &mut rng, kind, big),
            3 => one::<bf16, bf16>(&e, &mut rng, kind, big),
            _ => one::<f16, f32>(&e, &mut rng, kind, big),
        };
        runs[which] += 1;
        match got {
            Ok(w) => worst[which] = worst[which].max(w),
            Err(why) => {
                failures.push(format!("round {round}: {why}"));
                if failures.len() >= 5 {
                    break;
                }
            }
        }
    }
    println!("{:<30} {:>6} {:>14} {:>10}", "type pair", "cases", "worst scaled", "tolerance");
    for (i, kind) in KINDS.iter().enumerate() {
        println!("{:<30} {:>6} {:>14.3e} {:>10.0e}", kind.name, runs[i], worst[i], kind.tol);
    }
    assert!(failures.is_empty(), "seed {seed:#x} (PRISM_SEED={seed:#x}):\n{}", failures.join("\n"));
}

/// The host scales (threaded, over packed op(A) rows and op(B) columns) against a plain loop.
#[test]
fn scales_match_a_plain_loop() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..50 {
        let mut case = Case::random(&mut rng, false);
        (case.m, case.n, case.k) = (case.m % 9 + 1, case.n % 9 + 1, case.k % 9 + 1);
        let (rows, cols) = (rows_of(case.t, case.m, case.n, case.k), cols_of(case.t, case.m, case.n, case.k));
        case.ld = [0, 1, 2].map(|i| rows[i] + case.ld[i] % 3);
        case.stride = [0, 1, 2].map(|i| if case.stride[i] == 0 { 0 } else { case.ld[i] * cols[i] + 1 });
        let [la, lb, lc] = case.lens();
        let mut values = |n: usize| (0..n).map(|_| rng.value() as f64).collect::<Vec<_>>();
        let (a, b, c) = (values(la), values(lb), values(lc));
        let got = case.scales(&a, &b, &c);
        for z in 0..case.batch {
            for j in 0..case.n {
                for i in 0..case.m {
                    let mut dot = 0.0;
                    for p in 0..case.k {
                        let ai = if case.t[0] { p + i * case.ld[0] } else { i + p * case.ld[0] };
                        let bi = if case.t[1] { j + p * case.ld[1] } else { p + j * case.ld[1] };
                        dot += (a[case.off[0] + z * case.stride[0] + ai]
                            * b[case.off[1] + z * case.stride[1] + bi])
                            .abs();
                    }
                    let e = case.off[2] + z * case.stride[2] + i + j * case.ld[2];
                    let old = if case.beta == 0.0 { 0.0 } else { (case.beta as f64 * c[e]).abs() };
                    let want = case.alpha.abs() as f64 * dot + old;
                    assert!(
                        (got[e] - want).abs() <= 1e-12 * want,
                        "{case:?}: element {e}: {} vs {want}",
                        got[e]
                    );
                }
            }
        }
        let inside = got.iter().filter(|s| !s.is_nan()).count();
        assert_eq!(inside, case.batch * case.m * case.n, "{case:?}: elements outside C's blocks");
    }
}
