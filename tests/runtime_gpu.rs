//! Every runtime operation on a GPU against f64 references on fresh random inputs (odd sizes,
//! rows from 1 to 131072 wide, unaligned views), outputs poisoned with NaN first, and GPU against
//! CPU (spikes, conversions, max/argmax, transposes identical). Run on a machine with a CUDA GPU:
//! `cargo test --release --test runtime_gpu -- --include-ignored`.

mod runtime_checks;

use half::bf16;
use prism_gpu::driver::{CudaSlice, DeviceRepr};
use prism_gpu::ops::activations::Activation;
use prism_gpu::ops::gemv::Gemv;
use prism_gpu::ops::neuromorphic::{Csr, Patterns, ReservoirWeights};
use prism_gpu::ops::reductions::Reduce;
use prism_gpu::ops::softmax::Softmax;
use prism_gpu::raw::kernels::neuromorphic::{self, DeviceReservoir};
use prism_gpu::raw::kernels::{activations, convert, gemv, norms, reductions, softmax, transpose};
use prism_gpu::runtime::GpuOps;
use prism_gpu::ProductionGpuRuntime;
use runtime_checks::{self as checks, close, close_scaled, f64s};

fn gpu() -> ProductionGpuRuntime {
    ProductionGpuRuntime::with_device(0).expect("a usable CUDA GPU")
}

fn up<T: DeviceRepr>(g: &GpuOps, v: &[T]) -> CudaSlice<T> {
    g.upload(v).unwrap()
}

fn down<T: DeviceRepr>(g: &GpuOps, v: &CudaSlice<T>) -> Vec<T> {
    g.download(v).unwrap()
}

/// A device buffer of `n` NaNs.
fn poison(g: &GpuOps, n: usize) -> CudaSlice<f32> {
    up(g, &vec![f32::NAN; n])
}

// ---------------------------------------------------------------------------------------------
// the host-slice operations on the GPU (the same checks the CPU fallback passes in CI)

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_ops_conversions_and_activations() {
    let rt = gpu();
    checks::conversions(&rt, &mut checks::fresh_rng("conversions"), 1_000_003);
    checks::activations(&rt, &mut checks::fresh_rng("activations"), 1_000_003);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_ops_softmax() {
    checks::softmax(&gpu(), &mut checks::fresh_rng("softmax"), &checks::row_shapes(true));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_ops_norms() {
    checks::norms(&gpu(), &mut checks::fresh_rng("norms"), &checks::row_shapes(true));
    checks::batch_norm(&gpu(), &mut checks::fresh_rng("batch_norm"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_ops_reductions() {
    let sizes = [1, 3, 4097, 65_537, 1_000_003, 3_000_017];
    checks::reductions(&gpu(), &mut checks::fresh_rng("reductions"), &sizes, &checks::row_shapes(true));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_ops_gemv_and_transpose() {
    let rt = gpu();
    let shapes =
        [(1, 1, 1), (37, 53, 53), (129, 1000, 1004), (1000, 257, 260), (3, 4097, 4097), (4097, 33, 35)];
    checks::gemv(&rt, &mut checks::fresh_rng("gemv"), &shapes);
    let shapes = [(1, 1), (33, 65), (100, 7), (513, 1025), (1, 4097), (4097, 1)];
    checks::transpose(&rt, &mut checks::fresh_rng("transpose"), &shapes);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_ops_neuromorphic() {
    let rt = gpu();
    checks::neuromorphic(&rt, &mut checks::fresh_rng("neuromorphic"), 1000, 50);
    checks::neuromorphic(&rt, &mut checks::fresh_rng("neuromorphic"), 33, 1);
}

// ---------------------------------------------------------------------------------------------
// launchers writing into poisoned buffers, aligned and unaligned

#[test]
#[ignore = "needs a CUDA GPU"]
fn softmax_rows_poisoned_inplace_and_unaligned() {
    let rt = gpu();
    let g = rt.gpu().unwrap();
    let (k, s) = (g.kernels(), g.stream());
    let mut rng = checks::fresh_rng("softmax launcher");
    for (rows, cols) in [(3, 1), (2, 33), (2, 4097), (3, 65_536), (2, 65_537), (1, 131_072), (64, 8192)] {
        let x = rng.vec(rows * cols, -10.0, 10.0);
        for kind in [Softmax::Softmax, Softmax::LogSoftmax] {
            let want = checks::softmax_ref(&x, rows, cols, kind == Softmax::LogSoftmax);
            let what = format!("{kind:?} {rows}x{cols}");
            let xd = up(g, &x);
            let mut out = poison(g, x.len());
            softmax::rows(k, s, kind, &xd.as_view(), &mut out.as_view_mut(), rows, cols).unwrap();
            close(&down(g, &out), &want, 1e-5, &what);
            let mut inplace = up(g, &x);
            softmax::rows_inplace(k, s, kind, &mut inplace.as_view_mut(), rows, cols).unwrap();
            close(&down(g, &inplace), &want, 1e-5, &format!("{what} in place"));
            // one element in: no 16-byte alignment, the scalar paths
            let mut padded = vec![0.5f32];
            padded.extend(&x);
            let xd = up(g, &padded);
            let mut out = poison(g, padded.len());
            softmax::rows(k, s, kind, &xd.slice(1..), &mut out.slice_mut(1..), rows, cols).unwrap();
            close(&down(g, &out)[1..], &want, 1e-5, &format!("{what} unaligned"));
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn norms_poisoned_with_statistics() {
    let rt = gpu();
    let g = rt.gpu().unwrap();
    let (k, s) = (g.kernels(), g.stream());
    let mut rng = checks::fresh_rng("norm launchers");
    for (rows, cols) in [(3, 1), (2, 33), (2, 4097), (3, 65_536), (2, 65_544), (1, 131_072), (64, 8192)] {
        let x = rng.vec(rows * cols, -4.0, 5.0);
        let gamma = rng.vec(cols, 0.5, 1.5);
        let beta = rng.vec(cols, -1.0, 1.0);
        let (xd, gd, bd) = (up(g, &x), up(g, &gamma), up(g, &beta));
        let (gv, bv) = (gd.as_view(), bd.as_view());
        let what = |op: &str| format!("{op} {rows}x{cols}");
        let (want, mean, rstd) = checks::norm_ref(&x, cols, Some(&gamma), Some(&beta), 1e-5, false);
        let (mut out, mut m, mut r) = (poison(g, x.len()), poison(g, rows), poison(g, rows));
        norms::layer_norm(
            k,
            s,
            &xd.as_view(),
            Some(&gv),
            Some(&bv),
            &mut out.as_view_mut(),
            Some(&mut m.as_view_mut()),
            Some(&mut r.as_view_mut()),
            rows,
            cols,
            1e-5,
        )
        .unwrap();
        close(&down(g, &out), &want, 1e-5, &what("layer_norm"));
        close(&down(g, &m), &mean, 1e-5, &what("layer_norm mean"));
        close(&down(g, &r), &rstd, 1e-5, &what("layer_norm rstd"));
        let (want, _, rstd) = checks::norm_ref(&x, cols, Some(&gamma), None, 1e-5, true);
        let (mut out, mut r) = (poison(g, x.len()), poison(g, rows));
        norms::rms_norm(
            k,
            s,
            &xd.as_view(),
            Some(&gv),
            &mut out.as_view_mut(),
            Some(&mut r.as_view_mut()),
            rows,
            cols,
            1e-5,
        )
        .unwrap();
        close(&down(g, &out), &want, 1e-5, &what("rms_norm"));
        close(&down(g, &r), &rstd, 1e-5, &what("rms_norm rstd"));
        // bf16, output poisoned with bf16 NaN
        let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
        let xr: Vec<f32> = xb.iter().map(|v| v.to_f32()).collect();
        let xbd = up(g, &xb);
        let mut outb = up(g, &vec![bf16::NAN; x.len()]);
        norms::rms_norm(k, s, &xbd.as_view(), None, &mut outb.as_view_mut(), None, rows, cols, 1e-5).unwrap();
        let got: Vec<f32> = down(g, &outb).iter().map(|v| v.to_f32()).collect();
        close(&got, &checks::norm_ref(&xr, cols, None, None, 1e-5, true).0, 8e-3, &what("rms_norm_bf16"));
        let mut outb = up(g, &vec![bf16::NAN; x.len()]);
        norms::layer_norm(
            k,
            s,
            &xbd.as_view(),
            Some(&gv),
            None,
            &mut outb.as_view_mut(),
            None,
            None,
            rows,
            cols,
            1e-5,
        )
        .unwrap();
        let got: Vec<f32> = down(g, &outb).iter().map(|v| v.to_f32()).collect();
        close(
            &got,
            &checks::norm_ref(&xr, cols, Some(&gamma), None, 1e-5, false).0,
            8e-3,
            &what("layer_norm_bf16"),
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reductions_poisoned() {
    let rt = gpu();
    let g = rt.gpu().unwrap();
    let (k, s) = (g.kernels(), g.stream());
    let mut rng = checks::fresh_rng("reduction launchers");
    for n in [1, 5, 4096, 4097, 1_000_003] {
        let x = rng.vec(n, -1.0, 2.0);
        let xd = up(g, &x);
        let sum: f64 = f64s(&x).iter().sum();
        let mag: f64 = f64s(&x).iter().map(|v| v.abs()).sum();
        for (op, want, scale) in [(Reduce::Sum, sum, mag), (Reduce::Mean, sum / n as f64, mag / n as f64)] {
            let mut out = poison(g, 1);
            reductions::reduce(k, s, op, &xd.as_view(), &mut out.as_view_mut()).unwrap();
            close_scaled(&down(g, &out), &[want], &[scale], 1e-6, &format!("{op:?} [{n}]"));
        }
        let best = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut out = poison(g, 1);
        reductions::reduce(k, s, Reduce::Max, &xd.as_view(), &mut out.as_view_mut()).unwrap();
        assert_eq!(down(g, &out)[0], best);
        let (mut idx, mut val) = (up(g, &[u64::MAX]), poison(g, 1));
        reductions::argmax(k, s, &xd.as_view(), &mut idx.as_view_mut(), Some(&mut val.as_view_mut()))
            .unwrap();
        assert_eq!(down(g, &idx)[0] as usize, x.iter().position(|&v| v == best).unwrap());
        assert_eq!(down(g, &val)[0], best);
    }
    for (rows, cols) in [(1, 1), (7, 33), (3, 4097), (2, 65_536), (1000, 5)] {
        let x = rng.vec(rows * cols, -3.0, 3.0);
        let xd = up(g, &x);
        let mut out = poison(g, rows);
        reductions::rows(k, s, Reduce::Max, &xd.as_view(), &mut out.as_view_mut(), rows, cols).unwrap();
        let maxes: Vec<f32> =
            x.chunks(cols).map(|r| r.iter().copied().fold(f32::NEG_INFINITY, f32::max)).collect();
        assert_eq!(down(g, &out), maxes);
        let mut idx = up(g, &vec![-1i32; rows]);
        reductions::row_argmax(k, s, &xd.as_view(), &mut idx.as_view_mut(), rows, cols).unwrap();
        let want: Vec<i32> =
            x.chunks(cols).zip(&maxes).map(|(r, m)| r.iter().position(|v| v == m).unwrap() as i32).collect();
        assert_eq!(down(g, &idx), want);
        let mut out = poison(g, rows);
        reductions::rows(k, s, Reduce::Sum, &xd.as_view(), &mut out.as_view_mut(), rows, cols).unwrap();
        let sums: Vec<f64> = x.chunks(cols).map(|r| f64s(r).iter().sum()).collect();
        let mags: Vec<f64> = x.chunks(cols).map(|r| f64s(r).iter().map(|v| v.abs()).sum()).collect();
        close_scaled(&down(g, &out), &sums, &mags, 1e-5, &format!("row sums {rows}x{cols}"));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gemv_does_not_read_y_when_beta_is_zero() {
    let rt = gpu();
    let g = rt.gpu().unwrap();
    let (k, s) = (g.kernels(), g.stream());
    let mut rng = checks::fresh_rng("gemv launchers");
    for (m, n, lda) in [(1, 1, 1), (33, 1000, 1003), (4097, 65, 68), (300, 4097, 4100), (2, 70_000, 70_000)] {
        let a = rng.vec((m - 1) * lda + n, -1.0, 1.0);
        let ad = up(g, &a);
        for transposed in [false, true] {
            let (xl, yl) = if transposed { (m, n) } else { (n, m) };
            let x = rng.vec(xl, -1.0, 1.0);
            let y0 = rng.vec(yl, -1.0, 1.0);
            for beta in [0.0f32, 0.75] {
                let d = Gemv { m, n, lda, alpha: rng.uniform(-2.0, 2.0), beta };
                let (want, scale) = checks::gemv_ref(d, &a, &x, &y0, transposed);
                let mut y = if beta == 0.0 { poison(g, yl) } else { up(g, &y0) };
                // x one element into its buffer: unaligned
                let mut xp = vec![9.0f32];
                xp.extend(&x);
                let xd = up(g, &xp);
                if transposed {
                    gemv::gemv_t(k, s, d, &ad.as_view(), &xd.slice(1..), &mut y.as_view_mut()).unwrap();
                } else {
                    gemv::gemv(k, s, d, &ad.as_view(), &xd.slice(1..), &mut y.as_view_mut()).unwrap();
                }
                let what = format!("gemv transposed={transposed} {m}x{n} lda {lda} beta {beta}");
                close_scaled(&down(g, &y), &want, &scale, 1e-5, &what);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn elementwise_families_poisoned_and_inplace() {
    let rt = gpu();
    let g = rt.gpu().unwrap();
    let (k, s) = (g.kernels(), g.stream());
    let mut rng = checks::fresh_rng("elementwise launchers");
    for n in [1, 3, 1023, 4097, 1_000_003] {
        let x = rng.vec(n, -5.0, 5.0);
        let dy = rng.vec(n, -1.0, 1.0);
        let (xd, dyd) = (up(g, &x), up(g, &dy));
        let cpu_rt = ProductionGpuRuntime::cpu();
        for act in [
            Activation::Relu,
            Activation::LeakyRelu(0.1),
            Activation::Sigmoid,
            Activation::Tanh,
            Activation::Gelu,
        ] {
            let exact = matches!(act, Activation::Relu | Activation::LeakyRelu(_));
            let tol = if exact { 0.0 } else { 2e-6 };
            let want = f64s(&cpu_rt.activation(act, &x).unwrap());
            let mut out = poison(g, n);
            activations::forward(k, s, act, &xd.as_view(), &mut out.as_view_mut()).unwrap();
            close(&down(g, &out), &want, tol, &format!("{act:?}"));
            activations::forward_inplace(k, s, act, &mut out.as_view_mut()).unwrap(); // f(f(x))
            let twice = f64s(&cpu_rt.activation(act, &cpu_rt.activation(act, &x).unwrap()).unwrap());
            close(&down(g, &out), &twice, 2.0 * tol, &format!("{act:?} in place"));
            let want = f64s(&cpu_rt.activation_backward(act, &dy, &x).unwrap());
            let mut dx = poison(g, n);
            activations::backward(k, s, act, &dyd.as_view(), &xd.as_view(), &mut dx.as_view_mut()).unwrap();
            close(&down(g, &dx), &want, tol, &format!("{act:?} backward"));
            let mut dyi = up(g, &dy);
            activations::backward_inplace(k, s, act, &mut dyi.as_view_mut(), &xd.as_view()).unwrap();
            close(&down(g, &dyi), &want, tol, &format!("{act:?} backward in place"));
        }
        let mut h = up(g, &vec![half::f16::NAN; n]);
        convert::f32_to_f16(k, s, &xd.as_view(), &mut h.as_view_mut()).unwrap();
        let mut back = poison(g, n);
        convert::f16_to_f32(k, s, &h.as_view(), &mut back.as_view_mut()).unwrap();
        let want: Vec<f32> = x.iter().map(|&v| half::f16::from_f32(v).to_f32()).collect();
        assert_eq!(down(g, &back), want);
        let mut b = up(g, &vec![bf16::NAN; n]);
        convert::f32_to_bf16(k, s, &xd.as_view(), &mut b.as_view_mut()).unwrap();
        let mut back = poison(g, n);
        convert::bf16_to_f32(k, s, &b.as_view(), &mut back.as_view_mut()).unwrap();
        let want: Vec<f32> = x.iter().map(|&v| bf16::from_f32(v).to_f32()).collect();
        assert_eq!(down(g, &back), want);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn batch_norm_and_transpose_poisoned() {
    let rt = gpu();
    let g = rt.gpu().unwrap();
    let (k, s) = (g.kernels(), g.stream());
    let mut rng = checks::fresh_rng("batch norm, transpose");
    // One workspace for every shape: the partial sums grow, and each call's last blocks leave the
    // counters zero for the next.
    let workspace = prism_gpu::raw::kernels::workspace::Workspace::default();
    let cpu_rt = ProductionGpuRuntime::cpu();
    // (1, 3, 9001): three units of a row per channel, the last one short, scalar loads; (2, 9000,
    // 3): more channels than the workspace's first counters (8192), which grow.
    for (n, c, hw) in [
        (1, 1, 1),
        (3, 5, 49),
        (2, 3, 1024),
        (4, 64, 3136),
        (1, 3, 9001),
        (2, 300, 52),
        (2, 3, 12_544),
        (2, 9000, 3),
        (3, 5, 49),
    ] {
        let x = rng.vec(n * c * hw, -2.0, 3.0);
        let (gamma, beta) = (rng.vec(c, 0.5, 1.5), rng.vec(c, -1.0, 1.0));
        let xd = up(g, &x);
        let (mut m, mut v) = (poison(g, c), poison(g, c));
        norms::batch_norm_stats(
            k,
            s,
            &workspace,
            &xd.as_view(),
            &mut m.as_view_mut(),
            &mut v.as_view_mut(),
            None,
            (n, c, hw),
        )
        .unwrap();
        let (y, mean, var) =
            cpu_rt.batch_norm_train(&x, (n, c, hw), Some(&gamma), Some(&beta), 1e-5, None).unwrap();
        close(&down(g, &m), &f64s(&mean), 1e-6, "bn mean");
        close(&down(g, &v), &f64s(&var), 1e-6, "bn var");
        let (gd, bd) = (up(g, &gamma), up(g, &beta));
        let (mv, vv, gv, bv) = (m.as_view(), v.as_view(), gd.as_view(), bd.as_view());
        let ch = norms::Channels { mean: &mv, var: &vv, gamma: Some(&gv), beta: Some(&bv) };
        let mut out = poison(g, x.len());
        norms::batch_norm(k, s, &xd.as_view(), &mut out.as_view_mut(), ch, (n, c, hw), 1e-5).unwrap();
        close(&down(g, &out), &f64s(&y), 1e-5, "bn apply");
        let mut inplace = up(g, &x);
        norms::batch_norm_inplace(k, s, &mut inplace.as_view_mut(), ch, (n, c, hw), 1e-5).unwrap();
        close(&down(g, &inplace), &f64s(&y), 1e-5, "bn apply in place");
    }
    // 4200000 rows: more row tiles than a grid has blocks along y, so blocks loop over tiles
    for (r, c) in [(1, 1), (33, 65), (1, 4097), (4097, 3), (1000, 1000), (127, 129), (4_200_000, 2)] {
        let x = rng.vec(r * c, -1.0, 1.0);
        let mut out = poison(g, x.len());
        transpose::transpose(k, s, &up(g, &x).as_view(), &mut out.as_view_mut(), r, c).unwrap();
        assert_eq!(down(g, &out), cpu_rt.transpose(&x, r, c).unwrap(), "transpose {r}x{c}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn neuromorphic_poisoned_and_against_the_cpu() {
    let rt = gpu();
    let g = rt.gpu().unwrap();
    let (k, s) = (g.kernels(), g.stream());
    let cpu_rt = ProductionGpuRuntime::cpu();
    let mut rng = checks::fresh_rng("neuromorphic launchers");
    let (n, n_in) = (1000, 50);
    let rates = rng.vec(4097, 0.0, 1.0);
    let (steps, seed) = (33, rng.next_u64());
    let mut spikes = poison(g, rates.len() * steps);
    neuromorphic::spike_encode(k, s, &up(g, &rates).as_view(), &mut spikes.as_view_mut(), steps, seed)
        .unwrap();
    let spikes_gpu = down(g, &spikes);
    assert_eq!(spikes_gpu, cpu_rt.spike_encode(&rates, steps, seed).unwrap(), "spikes identical to the CPU");

    let dims = Patterns { t: steps, n: rates.len(), p: 3, w: 4 };
    let templates = rng.vec(dims.p * dims.w * dims.n, -1.0, 1.0);
    let mut corr = poison(g, dims.p * dims.positions());
    let td = up(g, &templates);
    neuromorphic::pattern_correlation(k, s, &spikes.as_view(), &td.as_view(), &mut corr.as_view_mut(), dims)
        .unwrap();
    let want = cpu_rt.pattern_correlation(&spikes_gpu, &templates, dims).unwrap();
    let scale: Vec<f64> = vec![(dims.w * dims.n) as f64; want.len()];
    close_scaled(&down(g, &corr), &f64s(&want), &scale, 1e-6, "pattern correlation");

    let w_in = rng.vec(n * n_in, -1.0, 1.0);
    let w = rng.vec(n * n, -0.05, 0.05);
    let u = rng.vec(n_in, -1.0, 1.0);
    let x0 = rng.vec(n, -1.0, 1.0);
    let (w_ind, wd, ud) = (up(g, &w_in), up(g, &w), up(g, &u));
    let mut out = poison(g, n);
    neuromorphic::matvec_input(k, s, &w_ind.as_view(), &ud.as_view(), &mut out.as_view_mut(), n, n_in)
        .unwrap();
    let (want, scale) = checks::matvec_ref(&w_in, &u, n, n_in);
    close_scaled(&down(g, &out), &want, &scale, 1e-5, "matvec_input");
    let (rp, ci, vals, dense) = checks::random_csr(&mut rng, n, 0.02);
    let csr = g.upload_csr(Csr { row_ptr: &rp, col_idx: &ci, values: &vals }, n, n).unwrap();
    for (name, dw, wh) in
        [("dense", DeviceReservoir::Dense(wd.as_view()), &w), ("csr", DeviceReservoir::Csr(&csr), &dense)]
    {
        let mut out = poison(g, n);
        neuromorphic::matvec_reservoir(k, s, &dw, &up(g, &x0).as_view(), &mut out.as_view_mut()).unwrap();
        let (want, scale) = checks::matvec_ref(wh, &x0, n, n);
        close_scaled(&down(g, &out), &want, &scale, 1e-5, &format!("matvec_reservoir {name}"));
        // 20 steps on the device against 20 on the CPU
        let mut xd = up(g, &x0);
        let mut drive = poison(g, n);
        let mut xc = x0.clone();
        let host_w = if name == "dense" {
            ReservoirWeights::Dense(&w)
        } else {
            ReservoirWeights::Csr(Csr { row_ptr: &rp, col_idx: &ci, values: &vals })
        };
        for _ in 0..20 {
            neuromorphic::reservoir_step(
                k,
                s,
                &w_ind.as_view(),
                &dw,
                &ud.as_view(),
                &mut xd.as_view_mut(),
                &mut drive.as_view_mut(),
                0.3,
            )
            .unwrap();
            cpu_rt.reservoir_step(&w_in, host_w, &u, &mut xc, 0.3).unwrap();
        }
        close(&down(g, &xd), &f64s(&xc), 1e-5, &format!("20 reservoir steps {name}"));
        // The fused out-of-place update, 20 steps between two poisoned buffers, the second at an
        // odd offset (no 16-byte vectors there), against the same 20 CPU steps.
        let (mut a, mut b) = (up(g, &x0), poison(g, n + 1));
        for step in 0..20 {
            let (w_v, u_v) = (w_ind.as_view(), ud.as_view());
            if step % 2 == 0 {
                let mut to = b.slice_mut(1..);
                neuromorphic::reservoir_update(k, s, &w_v, &dw, &u_v, &a.as_view(), &mut to, 0.3).unwrap();
            } else {
                let from = b.slice(1..);
                neuromorphic::reservoir_update(k, s, &w_v, &dw, &u_v, &from, &mut a.as_view_mut(), 0.3)
                    .unwrap();
            }
        }
        close(&down(g, &a), &f64s(&xc), 1e-5, &format!("20 fused reservoir updates {name}"));
        let on_gpu = g.spectral_radius(&dw, n, 100, seed).unwrap();
        let on_cpu = cpu_rt.spectral_radius(host_w, n, 100, seed).unwrap();
        assert!(
            (on_gpu - on_cpu).abs() <= 1e-3 * on_cpu.abs().max(1e-3),
            "spectral radius {name}: {on_gpu} vs {on_cpu}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_and_cpu_agree() {
    let (rt, cpu_rt) = (gpu(), ProductionGpuRuntime::cpu());
    let mut rng = checks::fresh_rng("agreement");
    let x = rng.vec(1_000_003, -3.0, 3.0);
    assert_eq!(rt.relu(&x).unwrap(), cpu_rt.relu(&x).unwrap());
    assert_eq!(rt.f32_to_bf16(&x).unwrap(), cpu_rt.f32_to_bf16(&x).unwrap());
    assert_eq!(rt.f32_to_f16(&x).unwrap(), cpu_rt.f32_to_f16(&x).unwrap());
    assert_eq!(rt.max(&x).unwrap(), cpu_rt.max(&x).unwrap());
    assert_eq!(rt.argmax(&x).unwrap(), cpu_rt.argmax(&x).unwrap());
    assert_eq!(
        rt.row_argmax(&x[..1_000_000], 1000, 1000).unwrap(),
        cpu_rt.row_argmax(&x[..1_000_000], 1000, 1000).unwrap()
    );
    assert_eq!(rt.transpose(&x, 1, x.len()).unwrap(), x);
    let rates = rng.vec(1001, 0.0, 1.0);
    let seed = rng.next_u64();
    assert_eq!(rt.spike_encode(&rates, 100, seed).unwrap(), cpu_rt.spike_encode(&rates, 100, seed).unwrap());
    let sm_gpu = rt.softmax_rows(&x[..1_000_000], 100, 10_000).unwrap();
    let sm_cpu = cpu_rt.softmax_rows(&x[..1_000_000], 100, 10_000).unwrap();
    close(&sm_gpu, &f64s(&sm_cpu), 1e-5, "softmax GPU vs CPU");
    // the process-wide runtime is this GPU
    assert!(prism_gpu::runtime::get_global_executor().is_gpu());
}

/// A buffer of another context (here a non-primary context on the same device) is refused by the
/// safe launchers with CUDA_ERROR_INVALID_CONTEXT instead of being launched on: its address and
/// tracking events belong to the other context.
#[test]
#[ignore = "needs a CUDA GPU"]
fn buffers_of_another_context_are_refused() {
    use prism_gpu::driver::{sys, CudaContext, DriverError};
    use prism_gpu::ops::elementwise::Binary;
    let ops = GpuOps::new(CudaContext::new(0).unwrap()).unwrap();
    let other = CudaContext::new_non_primary(0, 0).unwrap();
    let foreign = other.default_stream().clone_htod(&[1.0f32; 257]).unwrap();
    let ours = up(&ops, &[2.0f32; 257]);
    let refused = |r: prism_gpu::Result<CudaSlice<f32>>| {
        assert!(
            matches!(
                r,
                Err(prism_gpu::Error::Driver(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT)))
            ),
            "{r:?}"
        )
    };
    refused(ops.binary(Binary::Add, &ours, &foreign));
    refused(ops.binary(Binary::Add, &foreign, &ours));
    refused(ops.scale(2.0, &foreign));
    refused(ops.activation(Activation::Relu, &foreign));
    refused(ops.reduce(Reduce::Sum, &foreign));
    refused(ops.transpose(&foreign, 1, 257));
    assert!(ops.download(&foreign).is_err());
    // Our own buffers still work.
    assert_eq!(ops.download(&ops.binary(Binary::Add, &ours, &ours).unwrap()).unwrap(), vec![4.0f32; 257]);
}
