//! Every host-slice operation of a `ProductionGpuRuntime` against f64 references on fresh random
//! inputs; shared by `runtime_cpu` (the CPU fallback, in CI) and `runtime_gpu` (a real GPU).

#![allow(dead_code)] // each test binary uses its own subset

use half::{bf16, f16};
use prism_gpu::ops::activations::Activation;
use prism_gpu::ops::gemv::Gemv;
use prism_gpu::ops::neuromorphic::{Csr, Patterns, ReservoirWeights};
use prism_gpu::raw::cpu;
use prism_gpu::rng::SplitMix64;
use prism_gpu::runtime::RunningStats;
use prism_gpu::ProductionGpuRuntime;

/// A generator seeded from the clock; the seed is printed so a failure can be replayed.
pub fn fresh_rng(test: &str) -> SplitMix64 {
    let seed = SplitMix64::from_time().next_u64();
    eprintln!("{test}: seed {seed:#x}");
    SplitMix64::new(seed)
}

/// `max |got - want| / max(1, |want|)`; NaN where either is NaN unless both are.
pub fn rel_err(got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len(), "lengths");
    got.iter().zip(want).fold(0.0, |m: f64, (&g, &w)| {
        let g = f64::from(g);
        let e = if g.is_nan() && w.is_nan() || g == w { 0.0 } else { (g - w).abs() / w.abs().max(1.0) };
        if e.is_nan() {
            f64::NAN
        } else {
            m.max(e)
        }
    })
}

/// Asserts `got` is within `tol` of `want` (relative to max(1, |want|)).
pub fn close(got: &[f32], want: &[f64], tol: f64, what: &str) {
    let e = rel_err(got, want);
    assert!(e <= tol, "{what}: error {e:e} > {tol:e}");
}

/// Asserts each `got[i]` is within `tol * scale[i]` of `want[i]` (sums and dot products, where
/// `scale` is the sum of the terms' magnitudes).
pub fn close_scaled(got: &[f32], want: &[f64], scale: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, ((&g, &w), &s)) in got.iter().zip(want).zip(scale).enumerate() {
        let e = (f64::from(g) - w).abs();
        assert!(e <= tol * s.max(1.0), "{what}[{i}]: {g} vs {w} (error {e:e}, scale {s:e})");
    }
}

pub fn f64s(x: &[f32]) -> Vec<f64> {
    x.iter().map(|&v| f64::from(v)).collect()
}

/// Row shapes to check: widths around the kernels' paths (registers, shared memory, streaming,
/// scalar tails).
pub fn row_shapes(wide: bool) -> Vec<(usize, usize)> {
    let mut s = vec![(1, 1), (3, 33), (2, 1000), (2, 4097), (5, 17), (1, 65_536), (4, 8192)];
    if wide {
        s.extend([(3, 65_536), (2, 65_537), (2, 131_072), (1000, 33), (70_000, 3)]);
    }
    s
}

// ---------------------------------------------------------------------------------------------
// references

pub fn softmax_ref(x: &[f32], rows: usize, cols: usize, log: bool) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for r in x.chunks(cols).take(rows) {
        let m = r.iter().map(|&v| f64::from(v)).fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = r.iter().map(|&v| (f64::from(v) - m).exp()).sum();
        out.extend(
            r.iter().map(|&v| if log { f64::from(v) - m - s.ln() } else { (f64::from(v) - m).exp() / s }),
        );
    }
    out
}

/// Layer norm (or RMS norm) reference: `(y, mean, rstd)` per row.
pub fn norm_ref(
    x: &[f32],
    cols: usize,
    gamma: Option<&[f32]>,
    beta: Option<&[f32]>,
    eps: f32,
    rms: bool,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut y, mut means, mut rstds) = (Vec::new(), Vec::new(), Vec::new());
    for r in x.chunks(cols) {
        let r = f64s(r);
        let mu = r.iter().sum::<f64>() / cols as f64;
        let var = r.iter().map(|&v| if rms { v * v } else { (v - mu) * (v - mu) }).sum::<f64>() / cols as f64;
        let rs = 1.0 / (var + f64::from(eps)).sqrt();
        for (j, &v) in r.iter().enumerate() {
            let mut o = if rms { v * rs } else { (v - mu) * rs };
            o *= gamma.map_or(1.0, |g| f64::from(g[j]));
            if !rms {
                o += beta.map_or(0.0, |b| f64::from(b[j]));
            }
            y.push(o);
        }
        means.push(mu);
        rstds.push(rs);
    }
    (y, means, rstds)
}

fn act_ref(act: Activation, x: f64) -> (f64, f64) {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    match act {
        Activation::Relu => (x.max(0.0), if x > 0.0 { 1.0 } else { 0.0 }),
        // computed in f32, as both backends do: the product is exact only in f32 rounding
        Activation::LeakyRelu(s) => {
            let y = if x > 0.0 { x } else { f64::from(s * x as f32) };
            (y, if x > 0.0 { 1.0 } else { f64::from(s) })
        }
        Activation::Sigmoid => {
            let s = 1.0 / (1.0 + (-x).exp());
            (s, s * (1.0 - s))
        }
        Activation::Tanh => (x.tanh(), 1.0 - x.tanh().powi(2)),
        Activation::Gelu => {
            let t = (c * (x + 0.044715 * x * x * x)).tanh();
            (
                0.5 * x * (1.0 + t),
                0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x),
            )
        }
    }
}

/// `(y, scale)`: `alpha * A x + beta * y0` (or `Aᵀ`) in f64 and each output's sum of magnitudes.
pub fn gemv_ref(d: Gemv, a: &[f32], x: &[f32], y0: &[f32], transposed: bool) -> (Vec<f64>, Vec<f64>) {
    let (outs, inner) = if transposed { (d.n, d.m) } else { (d.m, d.n) };
    let mut y = vec![0.0; outs];
    let mut scale = vec![0.0; outs];
    for o in 0..outs {
        let (mut acc, mut mag) = (0.0f64, 0.0f64);
        for k in 0..inner {
            let av = f64::from(if transposed { a[k * d.lda + o] } else { a[o * d.lda + k] });
            acc += av * f64::from(x[k]);
            mag += (av * f64::from(x[k])).abs();
        }
        let (alpha, beta) = (f64::from(d.alpha), f64::from(d.beta));
        let yv = if d.beta == 0.0 { 0.0 } else { beta * f64::from(y0[o]) };
        y[o] = alpha * acc + yv;
        scale[o] = (alpha * mag).abs() + yv.abs();
    }
    (y, scale)
}

/// A random CSR matrix `[n, n]` with about `density` of the entries, and its dense form.
pub fn random_csr(rng: &mut SplitMix64, n: usize, density: f32) -> (Vec<i32>, Vec<i32>, Vec<f32>, Vec<f32>) {
    let (mut rp, mut ci, mut vals, mut dense) = (vec![0i32], vec![], vec![], vec![0.0f32; n * n]);
    for i in 0..n {
        for j in 0..n {
            if rng.uniform(0.0, 1.0) < density {
                let v = rng.uniform(-0.3, 0.3);
                ci.push(j as i32);
                vals.push(v);
                dense[i * n + j] = v;
            }
        }
        rp.push(ci.len() as i32);
    }
    (rp, ci, vals, dense)
}

pub fn matvec_ref(w: &[f32], x: &[f32], rows: usize, cols: usize) -> (Vec<f64>, Vec<f64>) {
    gemv_ref(Gemv::dense(rows, cols), w, x, &[], false)
}

// ---------------------------------------------------------------------------------------------
// the checks

/// Conversions: round to nearest even, bit for bit as the `half` crate, ties included; f32 -> f64 exact.
pub fn conversions(rt: &ProductionGpuRuntime, rng: &mut SplitMix64, n: usize) {
    let mut x = rng.vec(n, -70_000.0, 70_000.0);
    x.extend([1.0 + 2f32.powi(-11), 1.0 + 2f32.powi(-8), 65_520.0, -0.0, f32::INFINITY]);
    let h = rt.f32_to_f16(&x).unwrap();
    let b = rt.f32_to_bf16(&x).unwrap();
    for (i, &v) in x.iter().enumerate() {
        assert_eq!(h[i].to_bits(), f16::from_f32(v).to_bits(), "f16 of {v}");
        assert_eq!(b[i].to_bits(), bf16::from_f32(v).to_bits(), "bf16 of {v}");
    }
    assert_eq!(h[n].to_f32(), 1.0, "ties to even");
    assert_eq!(b[n + 1].to_f32(), 1.0, "ties to even");
    assert!(h[n + 2].to_f32().is_infinite(), "f16 overflow");
    let wide = rt.f32_to_f64(&x).unwrap();
    for (&v, &w) in x.iter().zip(&wide) {
        assert_eq!(w.to_bits(), f64::from(v).to_bits(), "f64 of {v}");
    }
    let hf = rt.f16_to_f32(&h).unwrap();
    let bf = rt.bf16_to_f32(&b).unwrap();
    for i in 0..x.len() {
        assert_eq!(hf[i].to_bits(), h[i].to_f32().to_bits());
        assert_eq!(bf[i].to_bits(), b[i].to_f32().to_bits());
    }
}

/// Activations forward, backward and in place.
pub fn activations(rt: &ProductionGpuRuntime, rng: &mut SplitMix64, n: usize) {
    let x = rng.vec(n, -6.0, 6.0);
    let dy = rng.vec(n, -2.0, 2.0);
    let slope = rng.uniform(0.01, 0.3);
    for act in [
        Activation::Relu,
        Activation::LeakyRelu(slope),
        Activation::Sigmoid,
        Activation::Tanh,
        Activation::Gelu,
    ] {
        let want: Vec<f64> = x.iter().map(|&v| act_ref(act, f64::from(v)).0).collect();
        let tol = if matches!(act, Activation::Relu | Activation::LeakyRelu(_)) { 0.0 } else { 2e-6 };
        close(&rt.activation(act, &x).unwrap(), &want, tol, &format!("{act:?}"));
        let mut inplace = x.clone();
        rt.activation_inplace(act, &mut inplace).unwrap();
        close(&inplace, &want, tol, &format!("{act:?} in place"));
        let want: Vec<f64> = x
            .iter()
            .zip(&dy)
            .map(|(&v, &g)| match act {
                Activation::LeakyRelu(s) if v <= 0.0 => f64::from(s * g), // f32, as computed
                _ => f64::from(g) * act_ref(act, f64::from(v)).1,
            })
            .collect();
        close(&rt.activation_backward(act, &dy, &x).unwrap(), &want, tol, &format!("{act:?} backward"));
    }
    let want: Vec<f64> = x.iter().map(|&v| f64::from(v.max(0.0))).collect();
    close(&rt.relu(&x).unwrap(), &want, 0.0, "relu");
    close(
        &rt.leaky_relu(&x, slope).unwrap(),
        &x.iter().map(|&v| act_ref(Activation::LeakyRelu(slope), v.into()).0).collect::<Vec<_>>(),
        0.0,
        "leaky_relu",
    );
    close(
        &rt.sigmoid(&x).unwrap(),
        &x.iter().map(|&v| act_ref(Activation::Sigmoid, v.into()).0).collect::<Vec<_>>(),
        2e-6,
        "sigmoid",
    );
    close(&rt.tanh(&x).unwrap(), &x.iter().map(|&v| f64::from(v).tanh()).collect::<Vec<_>>(), 2e-6, "tanh");
    close(
        &rt.gelu(&x).unwrap(),
        &x.iter().map(|&v| act_ref(Activation::Gelu, v.into()).0).collect::<Vec<_>>(),
        2e-6,
        "gelu",
    );
}

/// Softmax and log-softmax over rows of the given shapes.
pub fn softmax(rt: &ProductionGpuRuntime, rng: &mut SplitMix64, shapes: &[(usize, usize)]) {
    for &(rows, cols) in shapes {
        let x = rng.vec(rows * cols, -8.0, 8.0);
        close(
            &rt.softmax_rows(&x, rows, cols).unwrap(),
            &softmax_ref(&x, rows, cols, false),
            1e-5,
            &format!("softmax {rows}x{cols}"),
        );
        close(
            &rt.log_softmax_rows(&x, rows, cols).unwrap(),
            &softmax_ref(&x, rows, cols, true),
            1e-5,
            &format!("log_softmax {rows}x{cols}"),
        );
    }
}

/// Layer norm and RMS norm (f32 with statistics, and bf16), with and without gamma/beta.
pub fn norms(rt: &ProductionGpuRuntime, rng: &mut SplitMix64, shapes: &[(usize, usize)]) {
    for &(rows, cols) in shapes {
        let x = rng.vec(rows * cols, -4.0, 5.0);
        let gamma = rng.vec(cols, 0.5, 1.5);
        let beta = rng.vec(cols, -1.0, 1.0);
        let eps = 1e-5;
        for affine in [false, true] {
            let (g, b) = if affine { (Some(&gamma[..]), Some(&beta[..])) } else { (None, None) };
            let what = |op: &str| format!("{op} {rows}x{cols} affine={affine}");
            let (want, mean, rstd) = norm_ref(&x, cols, g, b, eps, false);
            // f32 statistics lose digits to cancellation in rows whose spread is small against
            // their values: the error scales with the row's condition max|x| * rstd.
            let cond: Vec<f64> = x
                .chunks(cols)
                .zip(&rstd)
                .map(|(r, s)| r.iter().map(|v| f64::from(v.abs())).fold(1.0, f64::max) * s)
                .collect();
            let gmax = gamma.iter().map(|v| f64::from(v.abs())).fold(1.0, f64::max);
            let y_scale: Vec<f64> =
                want.iter().enumerate().map(|(i, w)| w.abs().max(0.1 * cond[i / cols] * gmax)).collect();
            let r_scale: Vec<f64> = rstd.iter().zip(&cond).map(|(r, c)| r * (0.1 * c).max(1.0)).collect();
            let (y, m, r) = rt.layer_norm_with_stats(&x, rows, cols, g, b, eps).unwrap();
            close_scaled(&y, &want, &y_scale, 1e-5, &what("layer_norm"));
            close(&m, &mean, 1e-5, &what("layer_norm mean"));
            close_scaled(&r, &rstd, &r_scale, 1e-5, &what("layer_norm rstd"));
            let y = rt.layer_norm(&x, rows, cols, g, b, eps).unwrap();
            close_scaled(&y, &want, &y_scale, 1e-5, &what("layer_norm"));
            let (want, _, rstd) = norm_ref(&x, cols, g, None, eps, true);
            let (y, r) = rt.rms_norm_with_stats(&x, rows, cols, g, eps).unwrap();
            close(&y, &want, 1e-5, &what("rms_norm"));
            close(&r, &rstd, 1e-5, &what("rms_norm rstd"));
            close(&rt.rms_norm(&x, rows, cols, g, eps).unwrap(), &want, 1e-5, &what("rms_norm"));
            // bf16 in and out, f32 accumulation: the reference uses the rounded inputs
            let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
            let xr: Vec<f32> = xb.iter().map(|v| v.to_f32()).collect();
            let back = |v: Vec<bf16>| v.into_iter().map(|v| v.to_f32()).collect::<Vec<_>>();
            let (want, _, _) = norm_ref(&xr, cols, g, b, eps, false);
            close(
                &back(rt.layer_norm_bf16(&xb, rows, cols, g, b, eps).unwrap()),
                &want,
                8e-3,
                &what("layer_norm_bf16"),
            );
            let (want, _, _) = norm_ref(&xr, cols, g, None, eps, true);
            close(
                &back(rt.rms_norm_bf16(&xb, rows, cols, g, eps).unwrap()),
                &want,
                8e-3,
                &what("rms_norm_bf16"),
            );
        }
    }
}

/// Batch norm: inference with given statistics, training with running statistics.
pub fn batch_norm(rt: &ProductionGpuRuntime, rng: &mut SplitMix64) {
    for (n, c, hw) in [(3, 5, 49), (4, 7, 1), (2, 3, 1024), (1, 1, 1), (2, 16, 3136)] {
        let x = rng.vec(n * c * hw, -2.0, 3.0);
        let gamma = rng.vec(c, 0.5, 1.5);
        let beta = rng.vec(c, -1.0, 1.0);
        let cnt = (n * hw) as f64;
        let at = |b: usize, ch: usize, j: usize| f64::from(x[(b * c + ch) * hw + j]);
        let mean: Vec<f64> = (0..c)
            .map(|ch| {
                (0..n).flat_map(|b| (0..hw).map(move |j| (b, j))).map(|(b, j)| at(b, ch, j)).sum::<f64>()
                    / cnt
            })
            .collect();
        let var: Vec<f64> = (0..c)
            .map(|ch| {
                (0..n)
                    .flat_map(|b| (0..hw).map(move |j| (b, j)))
                    .map(|(b, j)| (at(b, ch, j) - mean[ch]).powi(2))
                    .sum::<f64>()
                    / cnt
            })
            .collect();
        let apply = |m: &dyn Fn(usize) -> f64, v: &dyn Fn(usize) -> f64, affine: bool| -> Vec<f64> {
            (0..x.len())
                .map(|k| {
                    let ch = (k / hw) % c;
                    let (g, b) =
                        if affine { (f64::from(gamma[ch]), f64::from(beta[ch])) } else { (1.0, 0.0) };
                    (f64::from(x[k]) - m(ch)) * g / (v(ch) + 1e-5).sqrt() + b
                })
                .collect()
        };
        let rm0 = rng.vec(c, -0.5, 0.5);
        let rv0 = rng.vec(c, 0.5, 2.0);
        let (mut rm, mut rv) = (rm0.clone(), rv0.clone());
        let running = RunningStats { mean: &mut rm, var: &mut rv, momentum: 0.1 };
        let (y, m, v) =
            rt.batch_norm_train(&x, (n, c, hw), Some(&gamma), Some(&beta), 1e-5, Some(running)).unwrap();
        close(&m, &mean, 1e-6, "bn mean");
        close(&v, &var, 1e-6, "bn var");
        close(&y, &apply(&|ch| mean[ch], &|ch| var[ch], true), 1e-5, "bn train");
        let unbias = if cnt > 1.0 { cnt / (cnt - 1.0) } else { 1.0 };
        close(
            &rm,
            &(0..c).map(|k| 0.9 * f64::from(rm0[k]) + 0.1 * mean[k]).collect::<Vec<_>>(),
            1e-6,
            "running mean",
        );
        close(
            &rv,
            &(0..c).map(|k| 0.9 * f64::from(rv0[k]) + 0.1 * var[k] * unbias).collect::<Vec<_>>(),
            1e-6,
            "running var",
        );
        let (y2, _, _) = rt.batch_norm_train(&x, (n, c, hw), None, None, 1e-5, None).unwrap();
        close(&y2, &apply(&|ch| mean[ch], &|ch| var[ch], false), 1e-5, "bn train, no affine");
        let y = rt.batch_norm(&x, (n, c, hw), &rm0, &rv0, Some(&gamma), Some(&beta), 1e-5).unwrap();
        close(&y, &apply(&|ch| f64::from(rm0[ch]), &|ch| f64::from(rv0[ch]), true), 1e-5, "bn inference");
    }
}

/// Whole-tensor and per-row reductions, ties and NaN included.
pub fn reductions(
    rt: &ProductionGpuRuntime,
    rng: &mut SplitMix64,
    sizes: &[usize],
    shapes: &[(usize, usize)],
) {
    for &n in sizes {
        let x = rng.vec(n, -1.0, 1.5);
        let s: f64 = x.iter().map(|&v| f64::from(v)).sum();
        let mag: f64 = x.iter().map(|&v| f64::from(v).abs()).sum();
        close_scaled(&[rt.sum(&x).unwrap()], &[s], &[mag], 1e-6, &format!("sum [{n}]"));
        close_scaled(
            &[rt.mean(&x).unwrap()],
            &[s / n as f64],
            &[mag / n as f64],
            1e-6,
            &format!("mean [{n}]"),
        );
        let best = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        assert_eq!(rt.max(&x).unwrap(), best, "max [{n}]");
        assert_eq!(rt.argmax(&x).unwrap(), x.iter().position(|&v| v == best).unwrap(), "argmax [{n}]");
    }
    // ties resolve to the first index; NaN is skipped
    let mut t = rng.vec(300_001, -1.0, 1.0);
    let (a, b) = (70_001 + (rng.next_u64() % 1000) as usize, 250_003);
    t[a] = 3.0;
    t[b] = 3.0;
    t[5] = f32::NAN;
    t[299_999] = f32::NAN;
    assert_eq!(rt.argmax(&t).unwrap(), a);
    assert_eq!(rt.max(&t).unwrap(), 3.0);
    assert_eq!(rt.argmax(&[f32::NAN, f32::NAN, f32::NAN]).unwrap(), 0);
    assert_eq!(rt.max(&[f32::NAN]).unwrap(), f32::NEG_INFINITY);

    for &(rows, cols) in shapes {
        let mut x = rng.vec(rows * cols, -5.0, 5.0);
        if cols > 2 {
            x[cols / 2] = f32::NAN; // row 0: NaN ignored by max and argmax
            let tie = x[..cols].iter().copied().filter(|v| !v.is_nan()).fold(f32::NEG_INFINITY, f32::max);
            x[cols - 1] = tie; // a later tie does not win
        }
        let (mut sums, mut mags, mut maxes, mut args) = (vec![], vec![], vec![], vec![]);
        for r in x.chunks(cols) {
            sums.push(r.iter().filter(|v| !v.is_nan()).map(|&v| f64::from(v)).sum::<f64>());
            mags.push(r.iter().filter(|v| !v.is_nan()).map(|&v| f64::from(v).abs()).sum::<f64>());
            let m = r.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            maxes.push(f64::from(m));
            args.push(r.iter().position(|&v| v == m).unwrap());
        }
        let what = |op: &str| format!("{op} {rows}x{cols}");
        assert_eq!(
            rt.row_max(&x, rows, cols).unwrap().iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
            maxes,
            "{}",
            what("row_max")
        );
        assert_eq!(rt.row_argmax(&x, rows, cols).unwrap(), args, "{}", what("row_argmax"));
        // sums of rows with NaN are NaN: check the others
        let clean: Vec<f32> = x.iter().map(|v| if v.is_nan() { 0.0 } else { *v }).collect();
        close_scaled(&rt.row_sum(&clean, rows, cols).unwrap(), &sums, &mags, 1e-5, &what("row_sum"));
        let means: Vec<f64> = sums.iter().map(|s| s / cols as f64).collect();
        let mmags: Vec<f64> = mags.iter().map(|s| s / cols as f64).collect();
        close_scaled(&rt.row_mean(&clean, rows, cols).unwrap(), &means, &mmags, 1e-5, &what("row_mean"));
    }
}

/// GEMV in both forms, with padding (lda > n), beta 0 (y absent) and beta != 0.
pub fn gemv(rt: &ProductionGpuRuntime, rng: &mut SplitMix64, shapes: &[(usize, usize, usize)]) {
    for &(m, n, lda) in shapes {
        let a = rng.vec(if m == 0 { 0 } else { (m - 1) * lda + n }, -1.0, 1.0);
        let (xn, xt) = (rng.vec(n, -1.0, 1.0), rng.vec(m, -1.0, 1.0));
        let (y0, y0t) = (rng.vec(m, -1.0, 1.0), rng.vec(n, -1.0, 1.0));
        for beta in [0.0f32, rng.uniform(0.25, 1.5)] {
            let d = Gemv { m, n, lda, alpha: rng.uniform(-2.0, 2.0), beta };
            for (transposed, x, y0) in [(false, &xn, &y0), (true, &xt, &y0t)] {
                let (want, scale) = gemv_ref(d, &a, x, y0, transposed);
                let y = if beta == 0.0 { vec![] } else { y0.clone() };
                let (name, got) = match transposed {
                    false => ("gemv", rt.gemv(d, &a, x, &y)),
                    true => ("gemv_t", rt.gemv_t(d, &a, x, &y)),
                };
                close_scaled(
                    &got.unwrap(),
                    &want,
                    &scale,
                    1e-5,
                    &format!("{name} {m}x{n} lda {lda} beta {beta}"),
                );
            }
        }
    }
}

/// Transposes of odd shapes: exact.
pub fn transpose(rt: &ProductionGpuRuntime, rng: &mut SplitMix64, shapes: &[(usize, usize)]) {
    for &(r, c) in shapes {
        let x = rng.vec(r * c, -1.0, 1.0);
        let t = rt.transpose(&x, r, c).unwrap();
        for i in 0..r {
            for j in 0..c {
                assert_eq!(t[j * r + i], x[i * c + j], "transpose {r}x{c} at ({i}, {j})");
            }
        }
    }
}

/// The reservoir-computing operations.
pub fn neuromorphic(rt: &ProductionGpuRuntime, rng: &mut SplitMix64, n: usize, n_in: usize) {
    let w_in = rng.vec(n * n_in, -1.0, 1.0);
    let u = rng.vec(n_in, -1.0, 1.0);
    let (want, scale) = matvec_ref(&w_in, &u, n, n_in);
    close_scaled(&rt.matvec_input(&w_in, &u, n, n_in).unwrap(), &want, &scale, 1e-5, "matvec_input");
    let w = rng.vec(n * n, -0.1, 0.1);
    let x = rng.vec(n, -1.0, 1.0);
    let (want, scale) = matvec_ref(&w, &x, n, n);
    close_scaled(
        &rt.matvec_reservoir(ReservoirWeights::Dense(&w), &x).unwrap(),
        &want,
        &scale,
        1e-5,
        "matvec_reservoir dense",
    );
    let (rp, ci, vals, dense) = random_csr(rng, n, 0.1);
    let csr = ReservoirWeights::Csr(Csr { row_ptr: &rp, col_idx: &ci, values: &vals });
    let (want, scale) = matvec_ref(&dense, &x, n, n);
    close_scaled(&rt.matvec_reservoir(csr, &x).unwrap(), &want, &scale, 1e-5, "matvec_reservoir csr");

    // leaky integration and one full step
    let drive = rng.vec(n, -3.0, 3.0);
    let leak = rng.uniform(0.05, 0.95);
    let mut s = x.clone();
    rt.leaky_integration(&mut s, &drive, leak).unwrap();
    let want: Vec<f64> = x
        .iter()
        .zip(&drive)
        .map(|(&s, &d)| (1.0 - f64::from(leak)) * f64::from(s) + f64::from(leak) * f64::from(d).tanh())
        .collect();
    close(&s, &want, 2e-6, "leaky_integration");
    for (name, wr, wd) in [("dense", ReservoirWeights::Dense(&w), &w), ("csr", csr, &dense)] {
        let mut s = x.clone();
        rt.reservoir_step(&w_in, wr, &u, &mut s, leak).unwrap();
        let (a, _) = matvec_ref(&w_in, &u, n, n_in);
        let (b, _) = matvec_ref(wd, &x, n, n);
        let want: Vec<f64> = (0..n)
            .map(|i| (1.0 - f64::from(leak)) * f64::from(x[i]) + f64::from(leak) * (a[i] + b[i]).tanh())
            .collect();
        close(&s, &want, 1e-5, &format!("reservoir_step {name}"));
        let next = rt.reservoir_update(&w_in, wr, &u, &x, leak).unwrap();
        close(&next, &want, 1e-5, &format!("reservoir_update {name}"));
    }

    // spikes: the documented generator, and rates near the expected count
    let rates = rng.vec(n, 0.0, 1.0);
    let (steps, seed) = (37, rng.next_u64());
    let spikes = rt.spike_encode(&rates, steps, seed).unwrap();
    for t in 0..steps {
        for (i, &r) in rates.iter().enumerate() {
            let e = if cpu::uniform01(seed, i as u64, t as u64) < r { 1.0 } else { 0.0 };
            assert_eq!(spikes[t * n + i], e, "spike ({t}, {i})");
        }
    }

    // pattern correlation: windows of the spike trains against templates
    let dims = Patterns { t: steps, n, p: 3, w: 5 };
    let templates = rng.vec(dims.p * dims.w * n, -1.0, 1.0);
    let outs = dims.positions();
    let (mut want, mut scale) = (vec![0.0; dims.p * outs], vec![0.0; dims.p * outs]);
    for k in 0..dims.p {
        for t in 0..outs {
            for j in 0..dims.w * n {
                let v = f64::from(spikes[t * n + j]) * f64::from(templates[k * dims.w * n + j]);
                want[k * outs + t] += v;
                scale[k * outs + t] += v.abs();
            }
        }
    }
    close_scaled(
        &rt.pattern_correlation(&spikes, &templates, dims).unwrap(),
        &want,
        &scale,
        1e-5,
        "pattern_correlation",
    );

    // spectral radius of a matrix with a known dominant eigenvalue (a similarity transform of a
    // diagonal one would be costly to build; a diagonal one and its CSR form suffice)
    let lambda = rng.uniform(0.8, 1.2) * if rng.next_u64() % 2 == 0 { 1.0 } else { -1.0 };
    let mut diag = vec![0.0f32; n * n];
    let top = (rng.next_u64() % n as u64) as usize;
    for i in 0..n {
        diag[i * n + i] = if i == top { lambda } else { 0.5 * rng.uniform(-1.0, 1.0) };
    }
    let est = rt.spectral_radius(ReservoirWeights::Dense(&diag), n, 200, seed).unwrap();
    assert!((est - lambda.abs()).abs() < 1e-4, "spectral radius {est} vs {}", lambda.abs());
    let rp: Vec<i32> = (0..=n as i32).collect();
    let ci: Vec<i32> = (0..n as i32).collect();
    let vals: Vec<f32> = (0..n).map(|i| diag[i * n + i]).collect();
    let est = rt
        .spectral_radius(
            ReservoirWeights::Csr(Csr { row_ptr: &rp, col_idx: &ci, values: &vals }),
            n,
            200,
            seed,
        )
        .unwrap();
    assert!((est - lambda.abs()).abs() < 1e-4, "spectral radius (CSR) {est} vs {}", lambda.abs());
}
