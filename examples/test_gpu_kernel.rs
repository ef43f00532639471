//! Vector add, matrix multiply and ReLU twice: through [`ProductionGpuRuntime`] (the GPU, or the CPU
//! fallback without one) and through the cudarc API (`prism_gpu::driver` + `prism_gpu::nvrtc`:
//! kernels compiled at run time with NVRTC and launched with `launch_builder`, as cudarc code does).
//! Every result is checked against an f64 reference computed here; the figures are GFLOP/s of the
//! best of a few timed runs (vector add and ReLU count one operation per element: they are
//! memory-bound, so GB/s are printed too).
//!
//! ```text
//! cargo run --release --example test_gpu_kernel          # GPU if there is one, else CPU fallback
//! cargo run --release --example test_gpu_kernel -- --cpu # the CPU fallback only
//! ```
//! Without a GPU the runtime part runs on the CPU and the cudarc part says it is skipped.

use std::error::Error;
use std::time::{Duration, Instant};

use prism_gpu::driver::{CudaContext, LaunchConfig, PushKernelArg};
use prism_gpu::nvrtc::compile_ptx;
use prism_gpu::rng::SplitMix64;
use prism_gpu::ProductionGpuRuntime;

/// The cudarc part's kernels: one thread per element, and a 16x16 shared-memory tiled GEMM.
const KERNELS: &str = r#"
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void relu(const float *x, float *y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

#define TILE 16
// c (m x n) = a (m x k) * b (k x n), row-major.
extern "C" __global__ void matmul(const float *a, const float *b, float *c, unsigned m, unsigned n, unsigned k) {
    __shared__ float as[TILE][TILE], bs[TILE][TILE];
    unsigned row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (unsigned t = 0; t < k; t += TILE) {
        as[threadIdx.y][threadIdx.x] = (row < m && t + threadIdx.x < k) ? a[row * k + t + threadIdx.x] : 0.0f;
        bs[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < k) ? b[(t + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
        for (unsigned p = 0; p < TILE; ++p) acc += as[threadIdx.y][p] * bs[p][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = acc;
}
"#;

/// Sizes: large enough to be worth a GPU, small enough for the CPU fallback to finish in seconds.
struct Sizes {
    elements: usize,
    m: usize,
    n: usize,
    k: usize,
}

fn main() -> Result<(), Box<dyn Error>> {
    let cpu_only = std::env::args().any(|a| a == "--cpu");
    let rt = if cpu_only { ProductionGpuRuntime::cpu() } else { ProductionGpuRuntime::initialize()? };
    let sizes = if rt.is_gpu() {
        Sizes { elements: 1 << 24, m: 2048, n: 2048, k: 2048 }
    } else {
        Sizes { elements: 1 << 22, m: 511, n: 513, k: 509 }
    };
    let seed = SplitMix64::from_time().next_u64();
    println!(
        "test_gpu_kernel: seed {seed:#x}; built-in kernels from {}",
        prism_gpu::raw::kernels::BUILT_WITH
    );
    let mut rng = SplitMix64::new(seed);
    let a = rng.vec(sizes.elements, -1.0, 1.0);
    let b = rng.vec(sizes.elements, -1.0, 1.0);
    let ma = rng.vec(sizes.m * sizes.k, -1.0, 1.0);
    let mb = rng.vec(sizes.k * sizes.n, -1.0, 1.0);
    let mut rng = SplitMix64::new(seed ^ 0x5eed);

    let copies = if rt.is_gpu() { " (host slices in and out: copies included)" } else { "" };
    println!("\n== ProductionGpuRuntime on {}{copies}", rt.describe());
    let (sum, t) = best_of(3, || rt.add(&a, &b))?;
    check("add", &sum, |i| f64::from(a[i]) + f64::from(b[i]), 0.0)?;
    report("vector add", sizes.elements as f64, 12.0 * sizes.elements as f64, t);
    let (product, t) = best_of(3, || rt.matmul(&ma, &mb, sizes.m, sizes.n, sizes.k))?;
    check_matmul(&product, &ma, &mb, &sizes, &mut rng)?;
    report("matmul", 2.0 * (sizes.m * sizes.n * sizes.k) as f64, 0.0, t);
    let (relu, t) = best_of(3, || rt.relu(&a))?;
    check("relu", &relu, |i| f64::from(a[i]).max(0.0), 0.0)?;
    report("relu", sizes.elements as f64, 8.0 * sizes.elements as f64, t);

    if !rt.is_gpu() {
        let why = if cpu_only { "--cpu given".to_string() } else { "no usable CUDA GPU".to_string() };
        println!("\n== cudarc API (prism_gpu::driver + NVRTC): skipped, {why}");
        return Ok(());
    }
    println!("\n== cudarc API (prism_gpu::driver + prism_gpu::nvrtc), device buffers, kernel time only");
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let started = Instant::now();
    let module = ctx.load_module(compile_ptx(KERNELS)?)?;
    println!("NVRTC compile + load: {:.1} ms", started.elapsed().as_secs_f64() * 1e3);
    let (add_fn, relu_fn, matmul_fn) =
        (module.load_function("vector_add")?, module.load_function("relu")?, module.load_function("matmul")?);
    let n = u32::try_from(sizes.elements)?;
    let (da, db) = (stream.clone_htod(&a)?, stream.clone_htod(&b)?);
    let mut dc = stream.alloc_zeros::<f32>(sizes.elements)?;
    let (_, t) = best_of(3, || {
        let mut launch = stream.launch_builder(&add_fn);
        launch.arg(&da).arg(&db).arg(&mut dc).arg(&n);
        // SAFETY: vector_add(const float*, const float*, float*, unsigned) with three buffers of n floats.
        unsafe { launch.launch(LaunchConfig::for_num_elems(n)) }?;
        stream.synchronize()
    })?;
    check("vector_add", &stream.clone_dtoh(&dc)?, |i| f64::from(a[i]) + f64::from(b[i]), 0.0)?;
    report("vector add", sizes.elements as f64, 12.0 * sizes.elements as f64, t);

    let (m, nn, k) = (u32::try_from(sizes.m)?, u32::try_from(sizes.n)?, u32::try_from(sizes.k)?);
    let (dma, dmb) = (stream.clone_htod(&ma)?, stream.clone_htod(&mb)?);
    let mut dmc = stream.alloc_zeros::<f32>(sizes.m * sizes.n)?;
    let tiles = LaunchConfig {
        grid_dim: (nn.div_ceil(16), m.div_ceil(16), 1),
        block_dim: (16, 16, 1),
        shared_mem_bytes: 0,
    };
    let (_, t) = best_of(3, || {
        let mut launch = stream.launch_builder(&matmul_fn);
        launch.arg(&dma).arg(&dmb).arg(&mut dmc).arg(&m).arg(&nn).arg(&k);
        // SAFETY: matmul(a, b, c, m, n, k) with a m x k, b k x n and c m x n; the grid covers c.
        unsafe { launch.launch(tiles) }?;
        stream.synchronize()
    })?;
    check_matmul(&stream.clone_dtoh(&dmc)?, &ma, &mb, &sizes, &mut rng)?;
    report("matmul (16x16 tiles)", 2.0 * (sizes.m * sizes.n * sizes.k) as f64, 0.0, t);

    let mut dy = stream.alloc_zeros::<f32>(sizes.elements)?;
    let (_, t) = best_of(3, || {
        let mut launch = stream.launch_builder(&relu_fn);
        launch.arg(&da).arg(&mut dy).arg(&n);
        // SAFETY: relu(const float*, float*, unsigned) with two buffers of n floats.
        unsafe { launch.launch(LaunchConfig::for_num_elems(n)) }?;
        stream.synchronize()
    })?;
    check("relu", &stream.clone_dtoh(&dy)?, |i| f64::from(a[i]).max(0.0), 0.0)?;
    report("relu", sizes.elements as f64, 8.0 * sizes.elements as f64, t);
    Ok(())
}

/// Runs `f` once to warm up, then `runs` times; its last result and the shortest time.
fn best_of<T, E: Error + 'static>(
    runs: usize,
    mut f: impl FnMut() -> Result<T, E>,
) -> Result<(T, Duration), Box<dyn Error>> {
    let mut out = f()?;
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let started = Instant::now();
        out = f()?;
        best = best.min(started.elapsed());
    }
    Ok((out, best))
}

fn report(what: &str, flops: f64, bytes: f64, t: Duration) {
    let secs = t.as_secs_f64();
    let bandwidth = if bytes > 0.0 { format!(", {:8.1} GB/s", bytes / secs / 1e9) } else { String::new() };
    println!("{what:<22} {:9.3} ms {:10.2} GFLOP/s{bandwidth}", secs * 1e3, flops / secs / 1e9);
}

/// Every element against `want(i)`, relative to max(1, |want|).
fn check(what: &str, got: &[f32], want: impl Fn(usize) -> f64, tolerance: f64) -> Result<(), Box<dyn Error>> {
    for (i, &g) in got.iter().enumerate() {
        let w = want(i);
        let error = (f64::from(g) - w).abs() / w.abs().max(1.0);
        if error.is_nan() || error > tolerance {
            return Err(format!("{what}[{i}] = {g}, want {w} (error {error:.2e} > {tolerance:.0e})").into());
        }
    }
    println!("{what}: {} values match the f64 reference", got.len());
    Ok(())
}

/// 256 random entries of the product against f64 dot products, relative to sum |a||b|, within
/// k * 2^-24: the worst-case rounding bound of a length-k f32 dot product.
fn check_matmul(
    c: &[f32],
    a: &[f32],
    b: &[f32],
    s: &Sizes,
    rng: &mut SplitMix64,
) -> Result<(), Box<dyn Error>> {
    if c.len() != s.m * s.n {
        return Err(format!("matmul: {} outputs, want {}", c.len(), s.m * s.n).into());
    }
    let tolerance = s.k as f64 * f64::from(f32::EPSILON) / 2.0;
    let mut worst = 0.0f64;
    for _ in 0..256 {
        let (i, j) = ((rng.next_u64() % s.m as u64) as usize, (rng.next_u64() % s.n as u64) as usize);
        let terms = (0..s.k).map(|p| f64::from(a[i * s.k + p]) * f64::from(b[p * s.n + j]));
        let (dot, magnitude) = terms.fold((0.0, 0.0), |(d, m), t| (d + t, m + t.abs()));
        let error = (f64::from(c[i * s.n + j]) - dot).abs() / magnitude.max(f64::MIN_POSITIVE);
        if error.is_nan() || error > 1e-5 {
            let got = c[i * s.n + j];
            return Err(
                format!("matmul c[{i}][{j}] = {got}, want {dot} ({error:.2e} of sum |a||b| > 1e-5)").into()
            );
        }
        worst = worst.max(error);
    }
    println!("matmul: 256 sampled entries match the f64 reference ({worst:.1e} of sum |a||b|, bound {tolerance:.1e})");
    Ok(())
}
