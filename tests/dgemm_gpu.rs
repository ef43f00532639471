//! The f64 GEMM and asum on a GPU against independent f64 references: the runtime's `gemm_f64`
//! (SIMT and DMMA paths: random odd sizes, every transpose pair, padded leading dimensions, batches
//! with stride 0, beta 0 over NaN, large products), cuBLAS-shaped `dgemm` on offset (8-byte
//! aligned) operands, and `sasum` / `dasum` in both pointer modes. Errors are scaled per element to
//! `|alpha| sum |a b| + |beta c|`. Run with `--include-ignored` on a GPU machine.
#![cfg(all(feature = "cublas", not(feature = "legacy-gpu")))]

mod dgemm_common;

use std::sync::Arc;

use dgemm_common::*;
use prism_gpu::cublas::sys::{cublasOperation_t as Op, cublasPointerMode_t};
use prism_gpu::cublas::{result, Asum, AsumConfig, CudaBlas, Gemm as _, GemmConfig};
use prism_gpu::driver::{CudaContext, CudaStream};
use prism_gpu::raw::kernels::gemm::{tuning, Workspace};
use prism_gpu::raw::kernels::Kernels;
use prism_gpu::rng::SplitMix64;
use prism_gpu::{Gemm, ProductionGpuRuntime};

/// f64 rounding of k-term dot products, relative to their bound (k up to ~2000: about k * 2^-53
/// in the worst case, far less in practice).
const TOL: f64 = 1e-12;

fn gpu() -> ProductionGpuRuntime {
    ProductionGpuRuntime::with_device(0).expect("a usable CUDA GPU")
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn random_odd_shapes_every_layout_both_paths() {
    let (rt, mut rng) = (gpu(), fresh_rng("dgemm gpu random"));
    for round in 0..48 {
        // Small shapes (SIMT) and ones past the DMMA threshold (>= 32 per side).
        let max = if round % 2 == 0 { 40 } else { 300 };
        let shape = (1 + below(&mut rng, max), 1 + below(&mut rng, max), below(&mut rng, max + 1));
        let trans = TRANSPOSES[round % 4];
        let batch = 1 + below(&mut rng, 3);
        let broadcast = (below(&mut rng, 3) == 0, below(&mut rng, 3) == 0);
        let scales = [(1.0, 0.0), (0.75, -0.5), (-1.0 / 3.0, 1.0)][below(&mut rng, 3)];
        let case = case(&mut rng, shape, trans, 3, batch, broadcast, scales);
        check(&rt, &case, TOL);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_products_on_the_tensor_cores() {
    let (rt, mut rng) = (gpu(), fresh_rng("dgemm gpu large"));
    for (shape, trans, pad) in [
        ((1024, 1024, 1024), (false, false), 0),
        ((1537, 1001, 1999), (false, true), 1),
        ((1000, 2000, 777), (true, false), 2),
        ((1283, 1029, 1500), (true, true), 0),
    ] {
        // pad 1 or 2 makes odd leading dimensions: the 8-byte copy path.
        let case = case(&mut rng, shape, trans, pad, 1, (false, false), (1.5, 0.0));
        check(&rt, &case, TOL);
    }
    let broadcast_a = case(&mut rng, (300, 260, 520), (false, false), 2, 3, (true, false), (0.5, -2.0));
    check(&rt, &broadcast_a, TOL);
    // B broadcast, A's entries without gaps: one product of 4 x 301 rows (`Gemm::stacked`).
    for tb in [false, true] {
        let stacked = case(&mut rng, (301, 257, 190), (false, tb), 0, 4, (false, true), (0.5, -2.0));
        check(&rt, &stacked, TOL);
    }
}

/// Every f64 kernel the tuner may pick (SIMT, the four DMMA tiles, k sliced many ways) on deep,
/// skinny, small and odd shapes in every layout, with padded leading dimensions, beta and a batch,
/// each through `tuning::gemm_f64_with_plan` against the reference.
#[test]
#[ignore = "needs a CUDA GPU"]
fn every_candidate_kernel_deep_skinny_and_small() {
    let shapes =
        [(64, 64, 20_000), (1, 700, 3001), (13, 1000, 2049), (183, 103, 647), (130, 67, 1500), (300, 9, 777)];
    let scales = [(1.0, 0.0), (0.75, -0.5)];
    // And a batch with a broadcast A (slices are not offered for batches).
    let batch = |rng: &mut SplitMix64| {
        vec![case(rng, (100, 200, 600), (true, false), 2, 3, (true, false), (0.5, 1.0))]
    };
    let runs = candidates_in_every_layout("dgemm gpu candidates", &shapes, &scales, |_| true, batch);
    println!("{runs} candidate runs checked");
}

/// The f64 skinny kernels (the long operand streamed, k in slices) on short sides of 1 to 16 along
/// m and along n, every layout, odd lengths and depths, padded leading dimensions and beta: each
/// skinny candidate through `tuning::gemm_f64_with_plan` against the reference. Small enough to run
/// under racecheck.
#[test]
#[ignore = "needs a CUDA GPU"]
fn skinny_kernels_both_sides_every_layout() {
    let shapes = [(1, 301, 700), (3, 257, 129), (8, 130, 1000), (16, 67, 300), (297, 5, 413), (129, 1, 70)];
    let scales = [(1.0, 0.0), (0.75, -0.5), (-2.0, 1.0)];
    let skinny = |p: &str| p.starts_with("skinny");
    let runs = candidates_in_every_layout("dgemm gpu skinny", &shapes, &scales, skinny, |_| Vec::new());
    println!("{runs} skinny runs checked");
}

/// Runs the candidates `keep` accepts on each of `shapes` in every layout (the scales taking turns,
/// A's and B's leading dimensions padded by 3), then on `more(rng)`'s cases: the number of runs.
fn candidates_in_every_layout(
    label: &str,
    shapes: &[(usize, usize, usize)],
    scales: &[(f64, f64)],
    keep: impl Fn(&str) -> bool,
    more: impl Fn(&mut SplitMix64) -> Vec<Case>,
) -> usize {
    let (rt, mut rng) = (gpu(), fresh_rng(label));
    let ops = rt.gpu().expect("a GPU runtime");
    let (kernels, stream) = (ops.kernels(), ops.stream());
    let workspace = Workspace::default();
    let mut cases = Vec::new();
    for (round, &shape) in shapes.iter().enumerate() {
        for (t, trans) in TRANSPOSES.into_iter().enumerate() {
            let scales = scales[(round + t) % scales.len()];
            cases.push(case(&mut rng, shape, trans, 3, 1, (false, false), scales));
        }
    }
    cases.extend(more(&mut rng));
    cases.iter().map(|case| every_candidate_where(case, kernels, stream, &workspace, &keep)).sum()
}

/// Runs the candidates of `case` whose names `keep` accepts (at least one) and checks each.
fn every_candidate_where(
    case: &Case,
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    workspace: &Workspace,
    keep: impl Fn(&str) -> bool,
) -> usize {
    let want = reference(case);
    let mut plans = tuning::candidates_f64(kernels, &case.g.layout).unwrap();
    plans.retain(|p| keep(&p.to_string()));
    assert!(!plans.is_empty(), "{:?}: no candidate kept", case.g.layout);
    let (da, db) = (stream.clone_htod(&case.a).unwrap(), stream.clone_htod(&case.b).unwrap());
    for &plan in &plans {
        let mut dc = stream.clone_htod(&case.c).unwrap();
        let (a, b) = (da.as_view(), db.as_view());
        tuning::gemm_f64_with_plan(kernels, stream, workspace, &case.g, plan, &a, &b, &mut dc.as_view_mut())
            .unwrap_or_else(|e| panic!("{:?} on {plan}: {e}", case.g.layout));
        verify(case, &want, &stream.clone_dtoh(&dc).unwrap(), TOL, &format!(" on {plan}"));
    }
    plans.len()
}

/// Both builds of the DMMA kernels, launched by name on this device: `gemm_f64_dmma{,64,32,32x32}_<layout>`
/// (`cuda/gemm_f64.cu`, what devices before sm_90 run) and, on sm_90 and newer, the launcher's
/// `gemm_f64_sm90_...` (`cuda/gemm_f64_sm90.cu`), each tile and layout, on a shape off the tiles
/// with beta, padded pitches (8-byte copies) and a batch, against the f64 reference.
#[test]
#[ignore = "needs a CUDA GPU"]
fn dmma_kernels_of_both_builds_by_name() {
    use prism_gpu::driver::sys::CUfunction_attribute;
    use prism_gpu::driver::{LaunchConfig, PushKernelArg};
    let (rt, mut rng) = (gpu(), fresh_rng("dgemm gpu dmma by name"));
    let ops = rt.gpu().expect("a GPU runtime");
    let capability = tuning::device(ops.kernels()).unwrap().capability;
    let families: &[&str] = if capability >= (9, 0) { &["gemm_f64", "gemm_f64_sm90"] } else { &["gemm_f64"] };
    let mut runs = 0;
    for &family in families {
        let tiles = [
            ("dmma", 128, 64, 92_160),
            ("dmma64", 64, 64, 61_440),
            ("dmma32", 32, 64, 61_440),
            ("dmma32x32", 32, 32, 40_960),
        ];
        for (kernel, rows, cols, smem) in tiles {
            for (round, trans) in TRANSPOSES.into_iter().enumerate() {
                let pad = if round % 2 == 0 { 0 } else { 3 };
                let case = case(&mut rng, (133, 150, 77), trans, pad, 2, (false, false), (0.75, -0.5));
                let l = &case.g.layout;
                let name = format!(
                    "{family}_{kernel}_{}{}",
                    ["n", "t"][l.trans_a as usize],
                    ["n", "t"][l.trans_b as usize]
                );
                let f = ops.kernels().function(&name).unwrap();
                f.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)
                    .unwrap();
                let stream = ops.stream();
                let (da, db) = (stream.clone_htod(&case.a).unwrap(), stream.clone_htod(&case.b).unwrap());
                let mut dc = stream.clone_htod(&case.c).unwrap();
                let dims = [l.m, l.n, l.k, l.lda, l.ldb, l.ldc].map(|d| d as i32);
                let strides = [l.stride_a, l.stride_b, l.stride_c].map(|s| s as i64);
                let cfg = LaunchConfig {
                    grid_dim: (l.n.div_ceil(cols) as u32, l.m.div_ceil(rows) as u32, l.batch as u32),
                    block_dim: (128, 1, 1),
                    shared_mem_bytes: smem as u32,
                };
                let mut launch = stream.launch_builder(&f);
                launch.arg(&dims[0]).arg(&dims[1]).arg(&dims[2]).arg(&case.g.alpha);
                launch.arg(&da).arg(&dims[3]).arg(&strides[0]).arg(&db).arg(&dims[4]).arg(&strides[1]);
                launch.arg(&case.g.beta).arg(&mut dc).arg(&dims[5]).arg(&strides[2]);
                // SAFETY: the arguments follow DMMA_ENTRY's signature (cuda/gemm_f64_dmma.cuh) with
                // its grid, block and shared memory; the buffers hold min_lens() elements, which
                // covers every element the kernel touches.
                unsafe { launch.launch(cfg) }.unwrap();
                verify(
                    &case,
                    &reference(&case),
                    &stream.clone_dtoh(&dc).unwrap(),
                    TOL,
                    &format!(" on {name}"),
                );
                runs += 1;
            }
        }
    }
    println!("{runs} launches of {families:?} on compute capability {capability:?} checked");
}

/// A leading dimension past the DMMA copies' 32-bit offsets (2^24 doubles) takes the SIMT kernel,
/// which must still give the right answer, on a product big enough for the tensor cores otherwise
/// (B's two rows 2^24 + 3 apart).
#[test]
#[ignore = "needs a CUDA GPU"]
fn leading_dimensions_past_the_tensor_core_copies_reach() {
    let (rt, mut rng) = (gpu(), fresh_rng("dgemm gpu wide ldb"));
    let ops = rt.gpu().expect("a GPU runtime");
    let layout = Gemm::new(200, 700, 2).leading_dims(2, (1 << 24) + 3, 701);
    let plans = tuning::candidates_f64(ops.kernels(), &layout).unwrap();
    assert!(plans.iter().all(|p| p.to_string() == "simt"), "{plans:?}");
    let (la, lb, lc) = layout.min_lens().unwrap();
    let case = Case {
        g: layout.with_f64_scales(0.5, 0.0),
        a: (0..la).map(|_| value(&mut rng)).collect(),
        b: (0..lb).map(|_| value(&mut rng)).collect(),
        c: vec![f64::NAN; lc],
    };
    check(&rt, &case, TOL);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cublas_dgemm_on_offset_operands_and_asum() {
    let mut rng = fresh_rng("dgemm cublas");
    let stream = CudaContext::new(0).expect("a CUDA GPU").default_stream();
    let blas = CudaBlas::new(stream.clone()).unwrap();
    // Column-major C = alpha A B + beta C with every operand one element past a 16-byte boundary.
    let (m, n, k) = (301usize, 157usize, 263usize);
    let (alpha, beta) = (0.625f64, -1.5f64);
    let a: Vec<f64> = (0..1 + m * k).map(|_| value(&mut rng)).collect();
    let b: Vec<f64> = (0..1 + k * n).map(|_| value(&mut rng)).collect();
    let c: Vec<f64> = (0..1 + m * n).map(|_| value(&mut rng)).collect();
    let (da, db) = (stream.clone_htod(&a).unwrap(), stream.clone_htod(&b).unwrap());
    let mut dc = stream.clone_htod(&c).unwrap();
    let cfg = GemmConfig {
        transa: Op::CUBLAS_OP_N,
        transb: Op::CUBLAS_OP_N,
        m: m as i32,
        n: n as i32,
        k: k as i32,
        alpha,
        lda: m as i32,
        ldb: k as i32,
        beta,
        ldc: m as i32,
    };
    // SAFETY: each view holds its column-major operand exactly.
    unsafe { blas.gemm(cfg, &da.slice(1..), &db.slice(1..), &mut dc.slice_mut(1..)) }.unwrap();
    let got = stream.clone_dtoh(&dc).unwrap();
    for j in 0..n {
        for i in 0..m {
            let (mut dot, mut bound) = (0.0, 0.0);
            for p in 0..k {
                let x = a[1 + i + p * m] * b[1 + p + j * k];
                dot += x;
                bound += x.abs();
            }
            let old = beta * c[1 + i + j * m];
            let (want, bound) = (alpha * dot + old, alpha.abs() * bound + old.abs());
            let at = 1 + i + j * m;
            assert!((got[at] - want).abs() <= TOL * bound, "C({i}, {j}) = {} want {want}", got[at]);
        }
    }
    assert_eq!(got[0].to_bits(), c[0].to_bits(), "the element before C was written");

    // asum: strided, both types, host and device pointer modes.
    for (len, incx) in [(1usize, 1usize), (1000, 1), (100_003, 3)] {
        let x: Vec<f64> = (0..(len - 1) * incx + 1).map(|_| value(&mut rng) * 4.0).collect();
        let want: f64 = x.iter().step_by(incx).map(|v| v.abs()).sum();
        let cfg = AsumConfig { n: len as i32, incx: incx as i32 };
        let dx = stream.clone_htod(&x).unwrap();
        let mut got = f64::NAN;
        // SAFETY: dx holds the strided elements; host pointer mode (default), host result.
        unsafe { blas.asum(cfg, &dx, &mut got) }.unwrap();
        assert!((got - want).abs() <= 1e-13 * want, "dasum n {len} incx {incx}: {got} vs {want}");
        let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let want_f: f64 = xf.iter().step_by(incx).map(|v| f64::from(v.abs())).sum();
        let dxf = stream.clone_htod(&xf).unwrap();
        let mut got_f = f32::NAN;
        // SAFETY: as above.
        unsafe { blas.asum(cfg, &dxf, &mut got_f) }.unwrap();
        assert!((f64::from(got_f) - want_f).abs() <= 1e-6 * want_f, "sasum n {len}: {got_f} vs {want_f}");
        // Device pointer mode: the result lands in device memory.
        let mut out = stream.clone_htod(&[f64::NAN]).unwrap();
        // SAFETY: a live handle; the mode is set back below.
        unsafe { result::set_pointer_mode(*blas.handle(), cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE) }
            .unwrap();
        {
            let (px, _gx) = prism_gpu::driver::DevicePtr::device_ptr(&dx, &stream);
            let (po, _go) = prism_gpu::driver::DevicePtrMut::device_ptr_mut(&mut out, &stream);
            // SAFETY: px holds the strided elements, po one writable device f64.
            unsafe {
                result::dasum(*blas.handle(), len as i32, px as *const f64, incx as i32, po as *mut f64)
            }
            .unwrap();
        }
        // SAFETY: as above.
        unsafe { result::set_pointer_mode(*blas.handle(), cublasPointerMode_t::CUBLAS_POINTER_MODE_HOST) }
            .unwrap();
        let dev = stream.clone_dtoh(&out).unwrap()[0];
        assert!((dev - want).abs() <= 1e-13 * want, "dasum (device mode) {dev} vs {want}");
    }
    // n or incx not positive: 0, as cuBLAS.
    let dx = stream.clone_htod(&[1.0f64, -2.0]).unwrap();
    let mut got = f64::NAN;
    // SAFETY: nothing is read for n = 0 or incx = 0.
    unsafe { blas.asum(AsumConfig { n: 0, incx: 1 }, &dx, &mut got) }.unwrap();
    assert_eq!(got, 0.0);
    // SAFETY: as above.
    unsafe { blas.asum(AsumConfig { n: 2, incx: 0 }, &dx, &mut got) }.unwrap();
    assert_eq!(got, 0.0);
}
