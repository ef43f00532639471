//! The memory-bound kernels against a device-to-device copy of the same traffic (read + write
//! bytes), and the echo-state reservoir step on the GPU against the CPU fallback. Every figure is
//! measured in the same run with CUDA events (host clock for the CPU), after warm-up, as a median.

use std::collections::HashMap;
use std::sync::Arc;

use half::bf16;

use super::{gigabytes_per_second, time_gpu, time_host, Row, Settings};
use prism_gpu::driver::{CudaSlice, CudaStream, CudaView, DeviceRepr};
use prism_gpu::ops::activations::Activation;
use prism_gpu::ops::elementwise::Binary;
use prism_gpu::ops::gemv::Gemv;
use prism_gpu::ops::neuromorphic::ReservoirWeights;
use prism_gpu::ops::random::{Normal, Philox};
use prism_gpu::ops::reductions::Reduce;
use prism_gpu::ops::softmax::Softmax;
use prism_gpu::raw::cpu;
use prism_gpu::raw::kernels::activations;
use prism_gpu::raw::kernels::elementwise;
use prism_gpu::raw::kernels::gemv;
use prism_gpu::raw::kernels::neuromorphic::{self, DeviceReservoir};
use prism_gpu::raw::kernels::norms;
use prism_gpu::raw::kernels::random;
use prism_gpu::raw::kernels::reductions;
use prism_gpu::raw::kernels::softmax;
use prism_gpu::raw::kernels::workspace::Workspace;
use prism_gpu::raw::kernels::{convert, transpose, Kernels};
use prism_gpu::Result;

/// The problem sizes of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes {
    /// Elements of the elementwise, activation, conversion and whole-tensor reduction benchmarks.
    pub elements: usize,
    /// `(rows, cols)` of the softmax and norm benchmarks.
    pub rows: Vec<(usize, usize)>,
    /// Side of the square GEMV matrix.
    pub gemv: usize,
    /// Side of the square transpose.
    pub transpose: usize,
    /// `(n, c, hw)` of the batch-norm benchmarks.
    pub batch_norm: (usize, usize, usize),
    /// `(neurons, inputs)` of the reservoir step.
    pub reservoir: (usize, usize),
}

impl Default for Sizes {
    /// The sizes of the targets: 2^28 elements, 8192 x 8192 and 1024 x 65536 rows, GEMV 16384,
    /// transpose 8192, batch norm 32 x 64 x 112², a 1000-neuron reservoir with 50 inputs.
    fn default() -> Self {
        Self {
            elements: 1 << 28,
            rows: vec![(8192, 8192), (1024, 65_536)],
            gemv: 16_384,
            transpose: 8192,
            batch_norm: (32, 64, 112 * 112),
            reservoir: (1000, 50),
        }
    }
}

/// Working sets below this many bytes are rotated over several buffer sets, so a timed run does
/// not find its inputs in L2 (50 MiB on an H100).
const ROTATE_BELOW: usize = 256 << 20;

/// An element count as the rows name it: `2^k` for a power of two, else the number.
fn count(n: usize) -> String {
    if n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

/// Buffer sets to rotate over for a working set of `bytes`.
fn sets_for(bytes: usize) -> usize {
    if bytes >= ROTATE_BELOW {
        1
    } else {
        ROTATE_BELOW.div_ceil(bytes.max(1)).clamp(2, 8)
    }
}

struct Bench<'a> {
    stream: &'a Arc<CudaStream>,
    kernels: &'a Kernels,
    settings: Settings,
    copies: HashMap<usize, f64>,
    rows: Vec<Row>,
    seed: u64,
}

impl<'a> Bench<'a> {
    /// `n` uniform numbers in `[-1, 1)` on the device.
    fn random(&mut self, n: usize) -> Result<CudaSlice<f32>> {
        // SAFETY: filled entirely by the init kernel below.
        let mut v = unsafe { self.stream.alloc::<f32>(n) }?;
        self.seed += 1;
        neuromorphic::power_iteration_init(self.kernels, self.stream, &mut v.as_view_mut(), self.seed)?;
        Ok(v)
    }

    /// `sets` random buffers of `n`.
    fn randoms(&mut self, sets: usize, n: usize) -> Result<Vec<CudaSlice<f32>>> {
        (0..sets).map(|_| self.random(n)).collect()
    }

    /// `sets` output buffers of `n`, overwritten by the benchmarked kernel.
    fn outputs<T: DeviceRepr>(&self, sets: usize, n: usize) -> Result<Vec<CudaSlice<T>>> {
        // SAFETY: every benchmarked kernel writes its whole output before anyone reads it.
        (0..sets).map(|_| Ok(unsafe { self.stream.alloc::<T>(n) }?)).collect()
    }

    /// The copy bandwidth (read + write) moving `traffic` bytes in all, measured once per size.
    fn copy(&mut self, traffic: usize) -> Result<f64> {
        if let Some(&gbps) = self.copies.get(&traffic) {
            return Ok(gbps);
        }
        let half = (traffic / 2).div_ceil(4);
        let sets = sets_for(traffic);
        let src = self.randoms(sets, half)?;
        let mut dst = self.outputs::<f32>(sets, half)?;
        let stream = self.stream;
        let t =
            time_gpu(stream, self.settings, |i| Ok(stream.memcpy_dtod(&src[i % sets], &mut dst[i % sets])?))?;
        let gbps = gigabytes_per_second((half * 8) as f64, t.median_ms);
        self.copies.insert(traffic, gbps);
        Ok(gbps)
    }

    /// Times `run(i)` and records a row: bandwidth over `traffic` bytes against the copy.
    fn bandwidth(
        &mut self,
        name: String,
        traffic: usize,
        run: impl FnMut(usize) -> Result<()>,
    ) -> Result<()> {
        let t = time_gpu(self.stream, self.settings, run)?;
        let copy = self.copy(traffic)?;
        self.rows.push(Row {
            group: "kernels".into(),
            name,
            series: None,
            ours: gigabytes_per_second(traffic as f64, t.median_ms),
            anchor: "D2D copy".into(),
            anchor_value: Some(copy),
            unit: "GB/s".into(),
            higher_is_better: true,
            kernel: None,
        });
        Ok(())
    }
}

/// Runs every kernel benchmark on `stream` at `sizes`; rows in GB/s against the copy, and the
/// reservoir step in microseconds against the CPU.
pub fn run(stream: &Arc<CudaStream>, settings: Settings, sizes: &Sizes) -> Result<Vec<Row>> {
    let kernels = Kernels::new(stream.context().clone())?;
    let mut b =
        Bench { stream, kernels: &kernels, settings, copies: HashMap::new(), rows: Vec::new(), seed: 0 };
    elementwise_family(&mut b, sizes.elements)?;
    for &(rows, cols) in &sizes.rows {
        row_family(&mut b, rows, cols)?;
    }
    reductions_family(&mut b, sizes.elements, sizes.rows[0])?;
    gemv_family(&mut b, sizes.gemv)?;
    transpose_and_batch_norm(&mut b, sizes.transpose, sizes.batch_norm)?;
    random_family(&mut b, sizes.elements)?;
    reservoir_step(&mut b, sizes.reservoir)?;
    Ok(b.rows)
}

fn elementwise_family(b: &mut Bench, n: usize) -> Result<()> {
    let sets = sets_for(12 * n);
    let (x, y) = (b.randoms(sets, n)?, b.randoms(sets, n)?);
    let mut out = b.outputs::<f32>(sets, n)?;
    let (k, s) = (b.kernels, b.stream);
    let label = |op: &str| format!("{op} {} f32", count(n));
    b.bandwidth(label("add"), 12 * n, |i| {
        let j = i % sets;
        elementwise::binary(k, s, Binary::Add, &x[j].as_view(), &y[j].as_view(), &mut out[j].as_view_mut())
    })?;
    for act in [Activation::Relu, Activation::Gelu, Activation::Sigmoid] {
        b.bandwidth(label(&format!("{act:?}").to_lowercase()), 8 * n, |i| {
            let j = i % sets;
            activations::forward(k, s, act, &x[j].as_view(), &mut out[j].as_view_mut())
        })?;
    }
    b.bandwidth(label("relu in place"), 8 * n, |i| {
        activations::forward_inplace(k, s, Activation::Relu, &mut out[i % sets].as_view_mut())
    })?;
    b.bandwidth(label("gelu backward"), 12 * n, |i| {
        let j = i % sets;
        activations::backward(
            k,
            s,
            Activation::Gelu,
            &y[j].as_view(),
            &x[j].as_view(),
            &mut out[j].as_view_mut(),
        )
    })?;
    let mut halves = b.outputs::<bf16>(sets, n)?;
    b.bandwidth(label("f32 -> bf16"), 6 * n, |i| {
        let j = i % sets;
        convert::f32_to_bf16(k, s, &x[j].as_view(), &mut halves[j].as_view_mut())
    })?;
    b.bandwidth(label("bf16 -> f32"), 6 * n, |i| {
        let j = i % sets;
        convert::bf16_to_f32(k, s, &halves[j].as_view(), &mut out[j].as_view_mut())
    })?;
    Ok(())
}

fn row_family(b: &mut Bench, rows: usize, cols: usize) -> Result<()> {
    let n = rows * cols;
    let sets = sets_for(8 * n);
    let x = b.randoms(sets, n)?;
    let mut out = b.outputs::<f32>(sets, n)?;
    let (gamma, beta) = (b.random(cols)?, b.random(cols)?);
    let (k, s) = (b.kernels, b.stream);
    let label = |op: &str| format!("{op} {rows}x{cols} f32");
    for kind in [Softmax::Softmax, Softmax::LogSoftmax] {
        b.bandwidth(label(if kind == Softmax::Softmax { "softmax" } else { "log_softmax" }), 8 * n, |i| {
            let j = i % sets;
            softmax::rows(k, s, kind, &x[j].as_view(), &mut out[j].as_view_mut(), rows, cols)
        })?;
    }
    let (gv, bv) = (gamma.as_view(), beta.as_view());
    layer_norm(b, (label("layer_norm"), 8 * n), &x, &mut out, (&gv, &bv), (rows, cols))?;
    b.bandwidth(label("rms_norm"), 8 * n, |i| {
        let j = i % sets;
        norms::rms_norm(k, s, &x[j].as_view(), Some(&gv), &mut out[j].as_view_mut(), None, rows, cols, 1e-5)
    })?;
    if rows * cols <= 1 << 26 {
        let mut xb = b.outputs::<bf16>(sets, n)?;
        for j in 0..sets {
            convert::f32_to_bf16(k, s, &x[j].as_view(), &mut xb[j].as_view_mut())?;
        }
        let mut ob = b.outputs::<bf16>(sets, n)?;
        b.bandwidth(format!("rms_norm {rows}x{cols} bf16"), 4 * n, |i| {
            let j = i % sets;
            norms::rms_norm(
                k,
                s,
                &xb[j].as_view(),
                Some(&gv),
                &mut ob[j].as_view_mut(),
                None,
                rows,
                cols,
                1e-5,
            )
        })?;
        let row = (format!("layer_norm {rows}x{cols} bf16"), 4 * n);
        layer_norm(b, row, &xb, &mut ob, (&gv, &bv), (rows, cols))?;
    }
    Ok(())
}

/// Records the `(name, traffic)` row of layer norm (gamma and beta, no statistics) over the
/// `[rows, cols]` matrices of `x` in turn, into those of `out`.
fn layer_norm<T: norms::NormElement>(
    b: &mut Bench,
    (name, traffic): (String, usize),
    x: &[CudaSlice<T>],
    out: &mut [CudaSlice<T>],
    (gamma, beta): (&CudaView<f32>, &CudaView<f32>),
    (rows, cols): (usize, usize),
) -> Result<()> {
    let (k, s, sets) = (b.kernels, b.stream, x.len());
    b.bandwidth(name, traffic, |i| {
        let (x, out) = (&x[i % sets].as_view(), &mut out[i % sets].as_view_mut());
        norms::layer_norm(k, s, x, Some(gamma), Some(beta), out, None, None, rows, cols, 1e-5)
    })
}

fn reductions_family(b: &mut Bench, n: usize, (rows, cols): (usize, usize)) -> Result<()> {
    let m = rows * cols;
    // One buffer serves the whole-array reductions (n) and the row reductions (m): --elements may
    // be smaller than the matrix.
    let len = n.max(m);
    let sets = sets_for(4 * len);
    let x = b.randoms(sets, len)?;
    let mut out = b.outputs::<f32>(sets, rows.max(1))?;
    let mut idx = b.outputs::<u64>(sets, 1)?;
    let (k, s) = (b.kernels, b.stream);
    for op in [Reduce::Sum, Reduce::Max] {
        b.bandwidth(format!("{} {} f32", format!("{op:?}").to_lowercase(), count(n)), 4 * n, |i| {
            let j = i % sets;
            reductions::reduce(k, s, op, &x[j].slice(..n), &mut out[j].slice_mut(..1))
        })?;
    }
    b.bandwidth(format!("argmax {} f32", count(n)), 4 * n, |i| {
        let j = i % sets;
        reductions::argmax(k, s, &x[j].slice(..n), &mut idx[j].as_view_mut(), None)
    })?;
    b.bandwidth(format!("row_sum {rows}x{cols} f32"), 4 * m, |i| {
        let j = i % sets;
        reductions::rows(k, s, Reduce::Sum, &x[j].slice(..m), &mut out[j].as_view_mut(), rows, cols)
    })?;
    let mut arg = b.outputs::<i32>(sets, rows)?;
    b.bandwidth(format!("row_argmax {rows}x{cols} f32"), 4 * m, |i| {
        let j = i % sets;
        reductions::row_argmax(k, s, &x[j].slice(..m), &mut arg[j].as_view_mut(), rows, cols)
    })?;
    Ok(())
}

fn gemv_family(b: &mut Bench, side: usize) -> Result<()> {
    let n = side * side;
    let sets = sets_for(4 * n);
    let a = b.randoms(sets, n)?;
    let x = b.random(side)?;
    let mut y = b.outputs::<f32>(sets, side)?;
    let (k, s) = (b.kernels, b.stream);
    let dims = Gemv::dense(side, side);
    let traffic = 4 * (n + 2 * side);
    b.bandwidth(format!("gemv {side}x{side} f32"), traffic, |i| {
        let j = i % sets;
        gemv::gemv(k, s, dims, &a[j].as_view(), &x.as_view(), &mut y[j].as_view_mut())
    })?;
    b.bandwidth(format!("gemv_t {side}x{side} f32"), traffic, |i| {
        let j = i % sets;
        gemv::gemv_t(k, s, dims, &a[j].as_view(), &x.as_view(), &mut y[j].as_view_mut())
    })?;
    Ok(())
}

fn transpose_and_batch_norm(b: &mut Bench, side: usize, (bn, bc, bhw): (usize, usize, usize)) -> Result<()> {
    let n = side * side;
    let sets = sets_for(8 * n);
    let x = b.randoms(sets, n)?;
    let mut out = b.outputs::<f32>(sets, n)?;
    let (k, s) = (b.kernels, b.stream);
    b.bandwidth(format!("transpose {side}x{side} f32"), 8 * n, |i| {
        let j = i % sets;
        transpose::transpose(k, s, &x[j].as_view(), &mut out[j].as_view_mut(), side, side)
    })?;
    drop((x, out));
    let n = bn * bc * bhw;
    let sets = sets_for(8 * n);
    let x = b.randoms(sets, n)?;
    let mut out = b.outputs::<f32>(sets, n)?;
    let (mut mean, mut var) = (b.random(bc)?, b.random(bc)?);
    let (gamma, beta) = (b.random(bc)?, b.random(bc)?);
    let label = |op: &str| format!("batch_norm {op} {bn}x{bc}x{bhw} f32");
    // The runtime's way: partial sums and counters in a workspace kept between calls.
    let workspace = Workspace::default();
    b.bandwidth(label("stats"), 4 * n, |i| {
        let j = i % sets;
        norms::batch_norm_stats(
            k,
            s,
            &workspace,
            &x[j].as_view(),
            &mut mean.as_view_mut(),
            &mut var.as_view_mut(),
            None,
            (bn, bc, bhw),
        )
    })?;
    // positive variances for the apply
    activations::forward_inplace(k, s, Activation::Sigmoid, &mut var.as_view_mut())?;
    let (mv, vv, gv, bv) = (mean.as_view(), var.as_view(), gamma.as_view(), beta.as_view());
    let channels = norms::Channels { mean: &mv, var: &vv, gamma: Some(&gv), beta: Some(&bv) };
    b.bandwidth(label("apply"), 8 * n, |i| {
        let j = i % sets;
        norms::batch_norm(k, s, &x[j].as_view(), &mut out[j].as_view_mut(), channels, (bn, bc, bhw), 1e-5)
    })?;
    Ok(())
}

/// Steps timed per repeat, so launch overhead is averaged.
const STEPS: usize = 100;

/// The Philox fills (write-only) against a memset of the same bytes, the write-only bound.
fn random_family(b: &mut Bench, n: usize) -> Result<()> {
    let sets = sets_for(4 * n);
    let mut out = b.outputs::<f32>(sets, n)?;
    let (k, s, settings) = (b.kernels, b.stream, b.settings);
    let memset = time_gpu(s, settings, |i| Ok(s.memset_zeros(&mut out[i % sets])?))?;
    let memset = gigabytes_per_second((4 * n) as f64, memset.median_ms);
    let draws: [(&str, Option<Normal<f32>>); 2] =
        [("uniform", None), ("normal", Some(Normal::Normal { mean: 0.0, std: 1.0 }))];
    for (name, draw) in draws {
        let t = time_gpu(s, settings, |i| {
            let (view, at) = (&mut out[i % sets].as_view_mut(), Philox { seed: 42, offset: i as u64 });
            match draw {
                None => random::uniform(k, s, view, at),
                Some(d) => random::normal(k, s, view, at, d),
            }
            .map(|_| ())
        })?;
        let ours = gigabytes_per_second((4 * n) as f64, t.median_ms);
        let row = |anchor: &str, anchor_value| Row {
            group: "kernels".into(),
            name: format!("philox {name} {} f32", count(n)),
            series: None,
            ours,
            anchor: anchor.into(),
            anchor_value,
            unit: "GB/s".into(),
            higher_is_better: true,
            kernel: None,
        };
        b.rows.push(row("memset", Some(memset)));
        let curand = curand_philox(s, settings, &mut out, draw.is_some())
            .map_err(|e| eprintln!("kernels bench: cuRAND Philox {name}: {e}"))
            .ok()
            .map(|ms| gigabytes_per_second((4 * n) as f64, ms));
        b.rows.push(row("cuRAND Philox4_32_10", curand));
    }
    Ok(())
}

/// Median milliseconds of cuRAND's Philox4x32-10 (the real libcurand through cudarc, feature
/// `bench-anchors`) filling the same buffers on the same stream with uniform or standard normal
/// f32. Without `bench-anchors` there is no libcurand to compare with: an error.
fn curand_philox(
    s: &Arc<CudaStream>,
    settings: Settings,
    out: &mut [CudaSlice<f32>],
    normal: bool,
) -> std::result::Result<f64, String> {
    #[cfg(not(feature = "bench-anchors"))]
    {
        let _ = (s, settings, out, normal);
        Err("built without the bench-anchors feature".into())
    }
    #[cfg(feature = "bench-anchors")]
    {
        use cudarc::curand::{result, sys};

        use prism_gpu::driver::DevicePtrMut as _;
        let err = |e: result::CurandError| format!("{e:?}");
        let generator = result::create_generator_kind(sys::curandRngType_t::CURAND_RNG_PSEUDO_PHILOX4_32_10)
            .map_err(err)?;
        let sets = out.len();
        let timed = (|| {
            // SAFETY: the generator was just created; the stream outlives it (destroyed below).
            unsafe {
                result::set_seed(generator, 42).map_err(err)?;
                result::set_stream(generator, s.cu_stream() as sys::cudaStream_t).map_err(err)?;
            }
            time_gpu(s, settings, |i| {
                let buffer = &mut out[i % sets];
                let n = buffer.len();
                let (ptr, _write) = buffer.device_ptr_mut(s);
                // SAFETY: `ptr` holds `n` f32 (n is even, as cuRAND's normal fill needs).
                unsafe {
                    if normal {
                        result::generate::normal_f32(generator, ptr as *mut f32, n, 0.0, 1.0)
                    } else {
                        result::generate::uniform_f32(generator, ptr as *mut f32, n)
                    }
                }
                .map_err(|e| prism_gpu::Error::Shape {
                    op: "curand",
                    expected: "a fill".into(),
                    got: format!("{e:?}"),
                })
            })
            .map(|t| t.median_ms)
            .map_err(|e| e.to_string())
        })();
        // SAFETY: created above, destroyed once; its work was synchronised by the timing.
        unsafe { result::destroy_generator(generator) }.map_err(err)?;
        timed
    }
}

fn reservoir_step(b: &mut Bench, (n, n_in): (usize, usize)) -> Result<()> {
    let (w_in, w, u) = (b.random(n * n_in)?, b.random(n * n)?, b.random(n_in)?);
    let mut x = b.random(n)?;
    let mut drive = b.outputs::<f32>(1, n)?.remove(0);
    let (k, s) = (b.kernels, b.stream);
    let dense = DeviceReservoir::Dense(w.as_view());
    let gpu = time_gpu(s, b.settings, |_| {
        for _ in 0..STEPS {
            neuromorphic::reservoir_step(
                k,
                s,
                &w_in.as_view(),
                &dense,
                &u.as_view(),
                &mut x.as_view_mut(),
                &mut drive.as_view_mut(),
                0.3,
            )?;
        }
        Ok(())
    })?;
    let (hw_in, hw, hu) = (s.clone_dtoh(&w_in)?, s.clone_dtoh(&w)?, s.clone_dtoh(&u)?);
    let mut hx = s.clone_dtoh(&x)?;
    let host = time_host(b.settings, |_| {
        for _ in 0..STEPS {
            cpu::reservoir_step(&hw_in, ReservoirWeights::Dense(&hw), &hu, &mut hx, 0.3);
        }
        Ok(())
    })?;
    b.rows.push(Row {
        group: "kernels".into(),
        name: format!("reservoir step {n} neurons, {n_in} inputs (dense)"),
        series: None,
        ours: gpu.median_ms * 1e3 / STEPS as f64,
        anchor: "CPU fallback (rayon)".into(),
        anchor_value: Some(host.median_ms * 1e3 / STEPS as f64),
        unit: "us/step".into(),
        higher_is_better: false,
        kernel: None,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_working_sets_rotate() {
        assert_eq!(sets_for(4 << 30), 1);
        assert_eq!(sets_for(ROTATE_BELOW), 1);
        assert_eq!(sets_for(100 << 20), 3);
        assert_eq!(sets_for(1 << 20), 8);
    }

    #[test]
    fn counts_are_named_exactly() {
        assert_eq!(count(1 << 28), "2^28");
        assert_eq!(count(1), "2^0");
        assert_eq!(count(1_000_003), "1000003");
        assert_eq!(count(3 << 20), "3145728");
    }
}
