//! Stress: 16 threads share one context and one set of loaded kernels; each has its own stream and
//! runs a fixed number of iterations of a mix of ops (uploads, elementwise, ReLU, transpose,
//! max/argmax, an f32 GEMM, a Philox fill, downloads) on fresh inputs, all reading one shared
//! buffer written on another stream. Every result is checked exactly: the inputs are small
//! integers (or halves), so every sum and product is exact in f32 in any order, and the fill is
//! compared bit for bit with the CPU fallback's. Run on a machine with a CUDA GPU:
//! `cargo test --release --test stress_gpu -- --include-ignored --nocapture`.

use std::sync::Arc;
use std::thread;

use prism_gpu::driver::CudaContext;
use prism_gpu::ops::activations::Activation;
use prism_gpu::ops::elementwise::Binary;
use prism_gpu::ops::random::Philox;
use prism_gpu::ops::reductions::Reduce;
use prism_gpu::raw::kernels::gemm::{self, Gemm, Workspace};
use prism_gpu::raw::kernels::{activations, elementwise, random, reductions, transpose, Kernels};
use prism_gpu::ProductionGpuRuntime;

const THREADS: usize = 16;
const ITERATIONS: usize = 200;

/// A splitmix64 step (each thread's inputs come from its own seeded stream).
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `n` integers in `[-8, 8]` as f32 (sums and products of a few hundred are exact).
fn ints(state: &mut u64, n: usize) -> Vec<f32> {
    (0..n).map(|_| (next(state) % 17) as f32 - 8.0).collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sixteen_threads_share_one_context() {
    let ctx = CudaContext::new(0).expect("a usable CUDA GPU");
    let kernels = Arc::new(Kernels::new(ctx.clone()).expect("kernels"));
    let base = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    eprintln!("stress: {THREADS} threads x {ITERATIONS} iterations, seed {base}");
    // One buffer every thread reads, written on the default stream before the threads start.
    let mut seed = base;
    let shared_host = ints(&mut seed, 4099);
    let shared = Arc::new(ctx.default_stream().clone_htod(&shared_host).unwrap());
    let shared_host = Arc::new(shared_host);

    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (ctx, kernels, shared, shared_host) =
                (ctx.clone(), kernels.clone(), shared.clone(), shared_host.clone());
            thread::spawn(move || -> Result<usize, String> {
                let stream = ctx.new_stream().map_err(|e| format!("thread {t}: new_stream: {e}"))?;
                let workspace = Workspace::default();
                let cpu = ProductionGpuRuntime::cpu();
                let mut state = base ^ (t as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
                let mut checked = 0;
                for it in 0..ITERATIONS {
                    let fail = |what: &str, e: &dyn std::fmt::Display| {
                        format!("thread {t} iteration {it}: {what}: {e}")
                    };
                    let n = 1 + (next(&mut state) % 4099) as usize;
                    let a = ints(&mut state, n);
                    let da = stream.clone_htod(&a).map_err(|e| fail("upload", &e))?;
                    // (a + shared) then ReLU.
                    let mut sum = stream.alloc_zeros::<f32>(n).map_err(|e| fail("alloc", &e))?;
                    elementwise::binary(
                        &kernels,
                        &stream,
                        Binary::Add,
                        &da.as_view(),
                        &shared.slice(..n),
                        &mut sum.as_view_mut(),
                    )
                    .map_err(|e| fail("add", &e))?;
                    let mut relu = stream.alloc_zeros::<f32>(n).map_err(|e| fail("alloc", &e))?;
                    activations::forward(
                        &kernels,
                        &stream,
                        Activation::Relu,
                        &sum.as_view(),
                        &mut relu.as_view_mut(),
                    )
                    .map_err(|e| fail("relu", &e))?;
                    let want: Vec<f32> =
                        a.iter().zip(shared_host.iter()).map(|(x, y)| (x + y).max(0.0)).collect();
                    let got = stream.clone_dtoh(&relu).map_err(|e| fail("download", &e))?;
                    if got != want {
                        return Err(fail("relu(a + shared)", &"differs from the host"));
                    }
                    // Max and argmax of a.
                    let mut mx = stream.alloc_zeros::<f32>(1).map_err(|e| fail("alloc", &e))?;
                    let mut am = stream.alloc_zeros::<u64>(1).map_err(|e| fail("alloc", &e))?;
                    reductions::reduce(&kernels, &stream, Reduce::Max, &da.as_view(), &mut mx.as_view_mut())
                        .map_err(|e| fail("max", &e))?;
                    reductions::argmax(&kernels, &stream, &da.as_view(), &mut am.as_view_mut(), None)
                        .map_err(|e| fail("argmax", &e))?;
                    let want_max = a.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let want_arg = a.iter().position(|&v| v == want_max).unwrap() as u64;
                    let (gm, ga) = (
                        stream.clone_dtoh(&mx).map_err(|e| fail("download", &e))?,
                        stream.clone_dtoh(&am).map_err(|e| fail("download", &e))?,
                    );
                    if gm[0] != want_max || ga[0] != want_arg {
                        return Err(fail(
                            "max/argmax",
                            &format!("({}, {}) != ({want_max}, {want_arg})", gm[0], ga[0]),
                        ));
                    }
                    // A GEMM and a transpose of odd shapes.
                    let (m, k, nn) = (
                        1 + (next(&mut state) % 67) as usize,
                        1 + (next(&mut state) % 45) as usize,
                        1 + (next(&mut state) % 71) as usize,
                    );
                    let (ha, hb) = (ints(&mut state, m * k), ints(&mut state, k * nn));
                    let (ga_, gb) = (
                        stream.clone_htod(&ha).map_err(|e| fail("upload", &e))?,
                        stream.clone_htod(&hb).map_err(|e| fail("upload", &e))?,
                    );
                    let mut c = stream.clone_htod(&vec![f32::NAN; m * nn]).map_err(|e| fail("upload", &e))?;
                    gemm::gemm(
                        &kernels,
                        &stream,
                        &workspace,
                        &Gemm::new(m, nn, k),
                        &ga_.as_view(),
                        &gb.as_view(),
                        &mut c.as_view_mut(),
                    )
                    .map_err(|e| fail("gemm", &e))?;
                    let mut ct = stream.alloc_zeros::<f32>(m * nn).map_err(|e| fail("alloc", &e))?;
                    transpose::transpose(&kernels, &stream, &c.as_view(), &mut ct.as_view_mut(), m, nn)
                        .map_err(|e| fail("transpose", &e))?;
                    let got = stream.clone_dtoh(&ct).map_err(|e| fail("download", &e))?;
                    for i in 0..m {
                        for j in 0..nn {
                            let want: f32 = (0..k).map(|p| ha[i * k + p] * hb[p * nn + j]).sum();
                            if got[j * m + i] != want {
                                return Err(fail(
                                    "gemm then transpose",
                                    &format!("[{i}, {j}] = {} != {want}", got[j * m + i]),
                                ));
                            }
                        }
                    }
                    // A Philox fill, bit for bit with the CPU's.
                    let at = Philox { seed: next(&mut state), offset: next(&mut state) };
                    let mut u = stream.alloc_zeros::<f32>(n).map_err(|e| fail("alloc", &e))?;
                    random::uniform(&kernels, &stream, &mut u.as_view_mut(), at)
                        .map_err(|e| fail("uniform", &e))?;
                    let got = stream.clone_dtoh(&u).map_err(|e| fail("download", &e))?;
                    if got != cpu.rand_uniform(n, at).map_err(|e| fail("cpu uniform", &e))? {
                        return Err(fail("uniform", &"differs from the CPU's Philox"));
                    }
                    checked += 1;
                }
                Ok(checked)
            })
        })
        .collect();
    let mut errors = Vec::new();
    let mut done = 0;
    for w in workers {
        match w.join() {
            Ok(Ok(n)) => done += n,
            Ok(Err(e)) => errors.push(e),
            Err(_) => errors.push("a thread panicked".into()),
        }
    }
    ctx.synchronize().expect("the context is healthy after the stress");
    eprintln!("stress: {done} iterations checked, {} errors", errors.len());
    assert!(errors.is_empty(), "{} errors (seed {base}):\n{}", errors.len(), errors.join("\n"));
    assert_eq!(done, THREADS * ITERATIONS);
}
