//! `prism_gpu::cublaslt` (cudarc's cuBLASLt matmul with fused bias and activation) on a GPU,
//! against an f64 reference written here: every element type, transpose, bias / activation
//! combination, batches with gaps and padded leading dimensions, beta 0 (fused into the store)
//! and beta != 0 (a second pass), at shapes that reach each GEMM path (small, mma.sync, split-K,
//! sm_90a TMA + wgmma). Outputs are poisoned first; elements of C outside the m x n blocks must
//! come back bit for bit.
#![cfg(all(feature = "cublaslt", not(feature = "legacy-gpu")))]

use std::sync::Arc;

use half::{bf16, f16};
use prism_gpu::cublaslt::sys::cublasStatus_t as Status;
use prism_gpu::cublaslt::{Activation, CublasError, CudaBlasLT, Matmul, MatmulConfig};
use prism_gpu::driver::{CudaContext, CudaStream};
use prism_gpu::raw::kernels::gemm::Element;
use prism_gpu::rng::SplitMix64;

mod cublaslt_common;

fn stream() -> Arc<CudaStream> {
    CudaContext::new(0).expect("a CUDA GPU").default_stream()
}

/// One column-major problem, with the sizes of its stored operands.
#[derive(Debug, Clone, Copy)]
struct Problem {
    cfg: MatmulConfig,
    bias: bool,
    act: Option<Act>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Act {
    Relu,
    Gelu,
}

/// (rows, cols) of an operand stored `(rows, cols)` as used, or transposed.
fn stored((rows, cols): (usize, usize), transposed: bool) -> (usize, usize) {
    if transposed {
        (cols, rows)
    } else {
        (rows, cols)
    }
}

impl Problem {
    fn batch(&self) -> usize {
        self.cfg.batch_size.unwrap_or(1) as usize
    }
    /// (rows, cols) of stored A and B, column-major.
    fn a_dims(&self) -> (usize, usize) {
        stored((self.cfg.m as usize, self.cfg.k as usize), self.cfg.transa)
    }
    fn b_dims(&self) -> (usize, usize) {
        stored((self.cfg.k as usize, self.cfg.n as usize), self.cfg.transb)
    }
    /// Elements a stored rows x cols operand spans over the batch.
    fn len(&self, (rows, cols): (usize, usize), ld: i64, stride: Option<i64>) -> usize {
        (self.batch() - 1) * stride.unwrap_or(0) as usize + (cols - 1) * ld as usize + rows
    }
}

/// A random problem of size m x n x k, every other choice at random.
fn random_problem(rng: &mut SplitMix64, (m, n, k): (usize, usize, usize)) -> Problem {
    let bit = |rng: &mut SplitMix64| rng.next_u64() % 2 == 1;
    let (transa, transb) = (bit(rng), bit(rng));
    let batch = if bit(rng) { 3 } else { 1 };
    let pad = |rng: &mut SplitMix64| if bit(rng) { (rng.next_u64() % 9) as i64 } else { 0 };
    let rows_a = if transa { k } else { m } as i64;
    let rows_b = if transb { n } else { k } as i64;
    let (lda, ldb, ldc) = (rows_a + pad(rng), rows_b + pad(rng), m as i64 + pad(rng));
    let cols_a = if transa { m } else { k } as i64;
    let cols_b = if transb { k } else { n } as i64;
    let gap = |rng: &mut SplitMix64| (rng.next_u64() % 5) as i64;
    let batched = batch > 1;
    let cfg = MatmulConfig {
        transa,
        transb,
        transc: false,
        m: m as u64,
        n: n as u64,
        k: k as u64,
        alpha: [1.0, 0.75, -1.25][(rng.next_u64() % 3) as usize],
        lda,
        ldb,
        beta: if rng.next_u64() % 4 == 0 { 0.5 } else { 0.0 },
        ldc,
        // A batched A or B may also be one matrix for every entry (stride 0).
        stride_a: batched.then(|| if bit(rng) { lda * cols_a + gap(rng) } else { 0 }),
        stride_b: batched.then(|| ldb * cols_b + gap(rng)),
        stride_c: batched.then(|| ldc * n as i64 + gap(rng)),
        stride_bias: (batched && bit(rng)).then(|| m as i64 + gap(rng)),
        batch_size: batched.then_some(batch),
    };
    let act = match rng.next_u64() % 3 {
        0 => None,
        1 => Some(Act::Relu),
        _ => Some(Act::Gelu),
    };
    Problem { cfg, bias: bit(rng) || act.is_none(), act }
}

fn gelu(x: f64) -> f64 {
    let u = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
    0.5 * x * (1.0 + u.tanh())
}

/// `act(alpha op(A) op(B) + beta C + bias)` in f64 on C's layout (elements outside the blocks
/// keep C's value).
fn reference(p: &Problem, a: &[f64], b: &[f64], c: &[f64], bias: &[f64]) -> Vec<f64> {
    let cfg = &p.cfg;
    let (m, n, k) = (cfg.m as usize, cfg.n as usize, cfg.k as usize);
    let (lda, ldb, ldc) = (cfg.lda as usize, cfg.ldb as usize, cfg.ldc as usize);
    let s = |x: Option<i64>| x.unwrap_or(0) as usize;
    let mut out = c.to_vec();
    for z in 0..p.batch() {
        for j in 0..n {
            for i in 0..m {
                let mut dot = 0.0;
                for q in 0..k {
                    let x = a[z * s(cfg.stride_a) + if cfg.transa { i * lda + q } else { q * lda + i }];
                    let y = b[z * s(cfg.stride_b) + if cfg.transb { q * ldb + j } else { j * ldb + q }];
                    dot += x * y;
                }
                let at = z * s(cfg.stride_c) + j * ldc + i;
                let mut v = f64::from(cfg.alpha) * dot;
                if cfg.beta != 0.0 {
                    v += f64::from(cfg.beta) * c[at]; // beta 0 never reads C (NaN-poisoned)
                }
                if p.bias {
                    v += bias[z * s(cfg.stride_bias) + i];
                }
                out[at] = match p.act {
                    None => v,
                    Some(Act::Relu) => v.max(0.0),
                    Some(Act::Gelu) => gelu(v),
                };
            }
        }
    }
    out
}

/// Runs `p` with element type `T` and checks every element of C: inside the blocks within `tol`
/// of the reference relative to max(|reference|, RMS of the reference), outside unchanged.
fn check<T: Element + prism_gpu::driver::ValidAsZeroBits>(
    lt: &CudaBlasLT,
    stream: &Arc<CudaStream>,
    p: &Problem,
    rng: &mut SplitMix64,
    tol: f64,
) where
    CudaBlasLT: Matmul<T>,
{
    let cfg = &p.cfg;
    let len_a = p.len(p.a_dims(), cfg.lda, cfg.stride_a);
    let len_b = p.len(p.b_dims(), cfg.ldb, cfg.stride_b);
    let len_c = p.len((cfg.m as usize, cfg.n as usize), cfg.ldc, cfg.stride_c);
    let len_bias = (p.batch() - 1) * cfg.stride_bias.unwrap_or(0) as usize + cfg.m as usize;
    let host = |rng: &mut SplitMix64, len: usize| -> Vec<T> {
        rng.vec(len, -1.0, 1.0).into_iter().map(T::from_f32).collect()
    };
    let (a, b, bias) = (host(rng, len_a), host(rng, len_b), host(rng, len_bias));
    // C: random where beta reads it, NaN everywhere else (padding and gaps included).
    let c: Vec<T> = if cfg.beta != 0.0 { host(rng, len_c) } else { vec![T::from_f32(f32::NAN); len_c] };
    let wide = |v: &[T]| v.iter().map(|x| f64::from(x.to_f32())).collect::<Vec<_>>();
    let want = reference(p, &wide(&a), &wide(&b), &wide(&c), &wide(&bias));

    let (da, db, dbias) =
        (stream.clone_htod(&a).unwrap(), stream.clone_htod(&b).unwrap(), stream.clone_htod(&bias).unwrap());
    let mut dc = stream.clone_htod(&c).unwrap();
    let act = p.act.map(|a| match a {
        Act::Relu => Activation::Relu,
        Act::Gelu => Activation::Gelu,
    });
    // SAFETY: the buffers were sized above for every element the configuration touches.
    unsafe { lt.matmul(*cfg, &da, &db, &mut dc, p.bias.then_some(&dbias), act.as_ref()) }
        .unwrap_or_else(|e| panic!("{p:?}: {e}"));
    let got = stream.clone_dtoh(&dc).unwrap();

    let inside = |at: usize| {
        let s = |x: Option<i64>| x.unwrap_or(0) as usize;
        (0..p.batch()).any(|z| {
            let off = at.wrapping_sub(z * s(cfg.stride_c));
            let ldc = cfg.ldc as usize;
            off < len_c && off / ldc < cfg.n as usize && off % ldc < cfg.m as usize
        })
    };
    let rms = (want.iter().enumerate().filter(|&(at, _)| inside(at)).map(|(_, w)| w * w).sum::<f64>()
        / (p.batch() as f64 * cfg.m as f64 * cfg.n as f64))
        .sqrt()
        .max(1e-30);
    for (at, (g, w)) in got.iter().zip(&want).enumerate() {
        let g = f64::from(g.to_f32());
        if inside(at) {
            let err = (g - w).abs() / w.abs().max(rms);
            assert!(err <= tol, "{} {p:?}: element {at}: {g} vs {w} (error {err:.2e} > {tol:.0e})", T::NAME);
        } else {
            assert!(
                g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                "{p:?}: element {at} outside C's blocks changed"
            );
        }
    }
}

/// Shapes for each GEMM path: tiny (small kernel), unaligned (mma.sync), skinny and deep
/// (split-K), multiples of 8 (sm_90a through TMA), one beyond a tile in every direction, one
/// column and one row (the GEMV, batched or not).
const SHAPES: [(usize, usize, usize); 8] = [
    (1, 1, 1),
    (7, 5, 3),
    (131, 67, 205),
    (48, 40, 4104),
    (136, 200, 264),
    (264, 520, 72),
    (300, 1, 700),
    (1, 300, 700),
];

fn run_all<T: Element + prism_gpu::driver::ValidAsZeroBits>(tol: f64)
where
    CudaBlasLT: Matmul<T>,
{
    let stream = stream();
    let lt = CudaBlasLT::new(stream.clone()).unwrap();
    let mut rng = SplitMix64::from_time();
    for shape in SHAPES {
        for _ in 0..6 {
            let p = random_problem(&mut rng, shape);
            check::<T>(&lt, &stream, &p, &mut rng, tol);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f32_tf32_matmul_with_every_epilogue() {
    run_all::<f32>(5e-3);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f16_matmul_with_every_epilogue() {
    run_all::<f16>(1e-2);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf16_matmul_with_every_epilogue() {
    run_all::<bf16>(3e-2);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_configurations_are_errors_and_leave_c_alone() {
    let stream = stream();
    let lt = CudaBlasLT::new(stream.clone()).unwrap();
    let (m, n, k) = (8usize, 6usize, 4usize);
    let a = stream.clone_htod(&vec![1.0f32; m * k]).unwrap();
    let b = stream.clone_htod(&vec![1.0f32; k * n]).unwrap();
    let short_bias = stream.clone_htod(&vec![1.0f32; m - 1]).unwrap();
    let mut c = stream.clone_htod(&vec![7.0f32; m * n]).unwrap();
    let good = cublaslt_common::plain_config(m, n, k);
    let cases: [(MatmulConfig, bool, Status); 4] = [
        (MatmulConfig { transc: true, ..good }, false, Status::CUBLAS_STATUS_NOT_SUPPORTED),
        (MatmulConfig { lda: m as i64 - 1, ..good }, false, Status::CUBLAS_STATUS_INVALID_VALUE),
        (good, true, Status::CUBLAS_STATUS_INVALID_VALUE),
        // Two entries written to the same C.
        (MatmulConfig { batch_size: Some(2), ..good }, false, Status::CUBLAS_STATUS_INVALID_VALUE),
    ];
    for (cfg, with_short_bias, status) in cases {
        // SAFETY: every buffer holds what `good` touches; the bad configurations are refused
        // before anything runs.
        let got = unsafe { lt.matmul(cfg, &a, &b, &mut c, with_short_bias.then_some(&short_bias), None) };
        assert_eq!(got, Err(CublasError(status)), "{cfg:?}");
    }
    assert!(stream.clone_dtoh(&c).unwrap().iter().all(|&x| x == 7.0), "a refused call wrote C");
}
