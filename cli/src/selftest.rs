//! `prism-gpu selftest`: every operation on random data, on the GPU and on the CPU fallback, each
//! compared with an f64 reference.

use std::fmt::Write as _;

use half::{bf16, f16};

use prism_gpu::ops::activations::Activation;
use prism_gpu::ops::gemv::Gemv;
use prism_gpu::ops::neuromorphic::{Patterns, ReservoirWeights};
use prism_gpu::rng::SplitMix64;
use prism_gpu::{Gemm, Precision, ProductionGpuRuntime, Result};

/// One operation's result in the self-test.
#[derive(Debug, Clone)]
pub struct Check {
    /// The operation and its size.
    pub op: String,
    /// Largest |GPU - CPU|, when a GPU ran it.
    pub gpu_vs_cpu: Option<f64>,
    /// Largest error of the GPU result against the f64 reference, relative to max(1, |reference|).
    pub gpu_error: Option<f64>,
    /// Largest error of the CPU result against the f64 reference, likewise.
    pub cpu_error: f64,
    /// The largest error accepted.
    pub tolerance: f64,
}

impl Check {
    /// Whether every measured error is within the tolerance (NaN never is).
    pub fn passed(&self) -> bool {
        let within = |e: f64| e <= self.tolerance;
        within(self.cpu_error) && self.gpu_error.is_none_or(within)
    }
}

/// Largest `|got - want| / max(1, |want|)`; infinite when lengths differ, NaN propagates.
pub fn max_error(got: &[f32], want: &[f64]) -> f64 {
    if got.len() != want.len() {
        return f64::INFINITY;
    }
    got.iter().zip(want).map(|(&g, &w)| (f64::from(g) - w).abs() / w.abs().max(1.0)).fold(0.0, |m, e| {
        if e.is_nan() || m.is_nan() {
            f64::NAN
        } else {
            m.max(e)
        }
    })
}

/// Largest `|a - b|` between two results of one operation.
pub fn max_difference(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    a.iter().zip(b).map(|(&x, &y)| (f64::from(x) - f64::from(y)).abs()).fold(0.0, f64::max)
}

type Operation<'a> = Box<dyn Fn(&ProductionGpuRuntime) -> Result<Vec<f32>> + 'a>;

/// Runs `op` on the CPU runtime and, when given, the GPU runtime, against `reference`.
fn check(
    name: String,
    gpu: Option<&ProductionGpuRuntime>,
    cpu: &ProductionGpuRuntime,
    op: Operation<'_>,
    reference: &[f64],
    tolerance: f64,
) -> Result<Check> {
    let on_cpu = op(cpu)?;
    let on_gpu = gpu.map(&op).transpose()?;
    Ok(Check {
        op: name,
        gpu_vs_cpu: on_gpu.as_deref().map(|g| max_difference(g, &on_cpu)),
        gpu_error: on_gpu.as_deref().map(|g| max_error(g, reference)),
        cpu_error: max_error(&on_cpu, reference),
        tolerance,
    })
}

/// Every operation of the runtime, on fresh random inputs from `rng`, at odd sizes.
pub fn run(
    gpu: Option<&ProductionGpuRuntime>,
    cpu: &ProductionGpuRuntime,
    rng: &mut SplitMix64,
) -> Result<Vec<Check>> {
    let n = 1_000_003;
    let a = rng.vec(n, -2.0, 2.0);
    let b = rng.vec(n, 0.5, 3.0); // away from zero: also the divisor
    let alpha = rng.uniform(-2.0, 2.0);
    let wide = |f: &dyn Fn(f64, f64) -> f64| -> Vec<f64> {
        a.iter().zip(&b).map(|(&x, &y)| f(f64::from(x), f64::from(y))).collect()
    };
    let f32_tolerance = 1e-6;
    let label = |op: &str| format!("{op} [{n}]");
    let mut checks = vec![
        check(label("add"), gpu, cpu, Box::new(|r| r.add(&a, &b)), &wide(&|x, y| x + y), f32_tolerance)?,
        check(label("sub"), gpu, cpu, Box::new(|r| r.sub(&a, &b)), &wide(&|x, y| x - y), f32_tolerance)?,
        check(label("mul"), gpu, cpu, Box::new(|r| r.mul(&a, &b)), &wide(&|x, y| x * y), f32_tolerance)?,
        check(label("div"), gpu, cpu, Box::new(|r| r.div(&a, &b)), &wide(&|x, y| x / y), f32_tolerance)?,
        check(
            label("axpy"),
            gpu,
            cpu,
            Box::new(|r| r.axpy(alpha, &a, &b)),
            &wide(&|x, y| f64::from(alpha) * x + y),
            f32_tolerance,
        )?,
        check(
            label("scale"),
            gpu,
            cpu,
            Box::new(|r| r.scale(alpha, &a)),
            &wide(&|x, _| f64::from(alpha) * x),
            f32_tolerance,
        )?,
        check(label("fill"), gpu, cpu, Box::new(|r| r.fill(n, alpha)), &vec![f64::from(alpha); n], 0.0)?,
    ];
    checks.extend(gemm_checks(gpu, cpu, rng)?);
    checks.extend(elementwise_checks(gpu, cpu, rng)?);
    checks.extend(row_checks(gpu, cpu, rng)?);
    checks.extend(reduction_checks(gpu, cpu, rng)?);
    checks.extend(neuromorphic_checks(gpu, cpu, rng)?);
    Ok(checks)
}

fn widen(x: &[f32]) -> Vec<f64> {
    x.iter().map(|&v| f64::from(v)).collect()
}

/// Conversions and activations (forward, in place, backward).
fn elementwise_checks(
    gpu: Option<&ProductionGpuRuntime>,
    cpu: &ProductionGpuRuntime,
    rng: &mut SplitMix64,
) -> Result<Vec<Check>> {
    let n = 1_000_003;
    let x = rng.vec(n, -6.0, 6.0);
    let dy = rng.vec(n, -2.0, 2.0);
    let label = |op: &str| format!("{op} [{n}]");
    let rounded = |f: fn(f32) -> f32| -> Vec<f64> { x.iter().map(|&v| f64::from(f(v))).collect() };
    let mut checks = vec![
        check(
            label("f32 -> f16 -> f32"),
            gpu,
            cpu,
            Box::new(|r| r.f16_to_f32(&r.f32_to_f16(&x)?)),
            &rounded(|v| f16::from_f32(v).to_f32()),
            0.0,
        )?,
        check(
            label("f32 -> bf16 -> f32"),
            gpu,
            cpu,
            Box::new(|r| r.bf16_to_f32(&r.f32_to_bf16(&x)?)),
            &rounded(|v| bf16::from_f32(v).to_f32()),
            0.0,
        )?,
    ];
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
    let gelu_t = move |v: f64| (c * (v + 0.044715 * v * v * v)).tanh();
    type Math = Box<dyn Fn(f64) -> (f64, f64)>;
    let acts: [(Activation, Math, f64); 5] = [
        (Activation::Relu, Box::new(|v| (v.max(0.0), if v > 0.0 { 1.0 } else { 0.0 })), 0.0),
        // slope 1/8: the products are exact in f32 too
        (
            Activation::LeakyRelu(0.125),
            Box::new(|v| if v > 0.0 { (v, 1.0) } else { (0.125 * v, 0.125) }),
            0.0,
        ),
        (Activation::Sigmoid, Box::new(move |v| (sigmoid(v), sigmoid(v) * (1.0 - sigmoid(v)))), 2e-6),
        (Activation::Tanh, Box::new(|v| (v.tanh(), 1.0 - v.tanh().powi(2))), 2e-6),
        (
            Activation::Gelu,
            Box::new(move |v| {
                let t = gelu_t(v);
                (
                    0.5 * v * (1.0 + t),
                    0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * v * v),
                )
            }),
            2e-6,
        ),
    ];
    for (act, math, tol) in acts {
        let name = format!("{act:?}").to_lowercase();
        let fwd: Vec<f64> = x.iter().map(|&v| math(f64::from(v)).0).collect();
        let bwd: Vec<f64> = x.iter().zip(&dy).map(|(&v, &g)| f64::from(g) * math(f64::from(v)).1).collect();
        checks.push(check(label(&name), gpu, cpu, Box::new(|r| r.activation(act, &x)), &fwd, tol)?);
        checks.push(check(
            label(&format!("{name} in place")),
            gpu,
            cpu,
            Box::new(|r| {
                let mut y = x.clone();
                r.activation_inplace(act, &mut y)?;
                Ok(y)
            }),
            &fwd,
            tol,
        )?);
        checks.push(check(
            label(&format!("{name} backward")),
            gpu,
            cpu,
            Box::new(|r| r.activation_backward(act, &dy, &x)),
            &bwd,
            tol,
        )?);
    }
    Ok(checks)
}

/// Softmax, log-softmax, layer norm and RMS norm of each row, in f64.
fn row_reference(x: &[f32], cols: usize, gamma: &[f32], beta: &[f32]) -> [Vec<f64>; 4] {
    let mut out: [Vec<f64>; 4] = Default::default();
    for row in x.chunks(cols) {
        let r = widen(row);
        let m = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = r.iter().map(|v| (v - m).exp()).sum();
        let mu = r.iter().sum::<f64>() / cols as f64;
        let var = r.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / cols as f64;
        let ms = r.iter().map(|v| v * v).sum::<f64>() / cols as f64;
        for (j, v) in r.iter().enumerate() {
            let (g, b) = (f64::from(gamma[j]), f64::from(beta[j]));
            out[0].push((v - m).exp() / s);
            out[1].push(v - m - s.ln());
            out[2].push((v - mu) / (var + 1e-5).sqrt() * g + b);
            out[3].push(v / (ms + 1e-5).sqrt() * g);
        }
    }
    out
}

/// Softmax, norms (f32 and bf16), batch norm, GEMV and transpose.
fn row_checks(
    gpu: Option<&ProductionGpuRuntime>,
    cpu: &ProductionGpuRuntime,
    rng: &mut SplitMix64,
) -> Result<Vec<Check>> {
    let mut checks = Vec::new();
    for (rows, cols) in [(301, 1000), (3, 65_536)] {
        let x = rng.vec(rows * cols, -4.0, 5.0);
        let gamma = rng.vec(cols, 0.5, 1.5);
        let beta = rng.vec(cols, -1.0, 1.0);
        let [sm, lsm, ln, rms] = row_reference(&x, cols, &gamma, &beta);
        let (g, b) = (Some(&gamma[..]), Some(&beta[..]));
        let label = |op: &str| format!("{op} [{rows} x {cols}]");
        checks.push(check(
            label("softmax"),
            gpu,
            cpu,
            Box::new(|r| r.softmax_rows(&x, rows, cols)),
            &sm,
            1e-5,
        )?);
        checks.push(check(
            label("log_softmax"),
            gpu,
            cpu,
            Box::new(|r| r.log_softmax_rows(&x, rows, cols)),
            &lsm,
            1e-5,
        )?);
        checks.push(check(
            label("layer_norm"),
            gpu,
            cpu,
            Box::new(|r| r.layer_norm(&x, rows, cols, g, b, 1e-5)),
            &ln,
            1e-5,
        )?);
        checks.push(check(
            label("rms_norm"),
            gpu,
            cpu,
            Box::new(|r| r.rms_norm(&x, rows, cols, g, 1e-5)),
            &rms,
            1e-5,
        )?);
        // bf16: the reference on the rounded inputs; the output rounding allows 8e-3
        let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
        let xr: Vec<f32> = xb.iter().map(|v| v.to_f32()).collect();
        let [_, _, ln, rms] = row_reference(&xr, cols, &gamma, &beta);
        let back = |v: Vec<bf16>| v.into_iter().map(|v| v.to_f32()).collect::<Vec<_>>();
        checks.push(check(
            label("layer_norm bf16"),
            gpu,
            cpu,
            Box::new(|r| Ok(back(r.layer_norm_bf16(&xb, rows, cols, g, b, 1e-5)?))),
            &ln,
            8e-3,
        )?);
        checks.push(check(
            label("rms_norm bf16"),
            gpu,
            cpu,
            Box::new(|r| Ok(back(r.rms_norm_bf16(&xb, rows, cols, g, 1e-5)?))),
            &rms,
            8e-3,
        )?);
    }
    // batch norm, training, then inference with the batch statistics
    let (n, c, hw) = (8, 16, 49 * 49);
    let x = rng.vec(n * c * hw, -2.0, 3.0);
    let gamma = rng.vec(c, 0.5, 1.5);
    let beta = rng.vec(c, -1.0, 1.0);
    let mut stats = vec![(0.0f64, 0.0f64); c];
    for (ch, st) in stats.iter_mut().enumerate() {
        let vals: Vec<f64> =
            (0..n).flat_map(|b| widen(&x[(b * c + ch) * hw..(b * c + ch + 1) * hw])).collect();
        let mu = vals.iter().sum::<f64>() / vals.len() as f64;
        *st = (mu, vals.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / vals.len() as f64);
    }
    let bn: Vec<f64> = (0..x.len())
        .map(|k| {
            let ch = (k / hw) % c;
            (f64::from(x[k]) - stats[ch].0) / (stats[ch].1 + 1e-5).sqrt() * f64::from(gamma[ch])
                + f64::from(beta[ch])
        })
        .collect();
    checks.push(check(
        format!("batch_norm train [{n} x {c} x {hw}]"),
        gpu,
        cpu,
        Box::new(|r| Ok(r.batch_norm_train(&x, (n, c, hw), Some(&gamma), Some(&beta), 1e-5, None)?.0)),
        &bn,
        1e-5,
    )?);
    let (mean, var): (Vec<f32>, Vec<f32>) = stats.iter().map(|&(m, v)| (m as f32, v as f32)).unzip();
    checks.push(check(
        format!("batch_norm inference [{n} x {c} x {hw}]"),
        gpu,
        cpu,
        Box::new(|r| r.batch_norm(&x, (n, c, hw), &mean, &var, Some(&gamma), Some(&beta), 1e-5)),
        &bn,
        1e-5,
    )?);
    // GEMV, both forms, padded rows
    let (m, k, lda) = (1001, 777, 780);
    let a = rng.vec((m - 1) * lda + k, -1.0, 1.0);
    let (xk, xm) = (rng.vec(k, -1.0, 1.0), rng.vec(m, -1.0, 1.0));
    let (yk, ym) = (rng.vec(k, -1.0, 1.0), rng.vec(m, -1.0, 1.0));
    let dims = Gemv { m, n: k, lda, alpha: 1.5, beta: -0.5 };
    let gv: Vec<f64> = (0..m)
        .map(|i| {
            1.5 * (0..k).map(|j| f64::from(a[i * lda + j]) * f64::from(xk[j])).sum::<f64>()
                - 0.5 * f64::from(ym[i])
        })
        .collect();
    let gt: Vec<f64> = (0..k)
        .map(|j| {
            1.5 * (0..m).map(|i| f64::from(a[i * lda + j]) * f64::from(xm[i])).sum::<f64>()
                - 0.5 * f64::from(yk[j])
        })
        .collect();
    checks.push(check(
        format!("gemv [{m} x {k}]"),
        gpu,
        cpu,
        Box::new(|r| r.gemv(dims, &a, &xk, &ym)),
        &gv,
        1e-5,
    )?);
    checks.push(check(
        format!("gemv_t [{m} x {k}]"),
        gpu,
        cpu,
        Box::new(|r| r.gemv_t(dims, &a, &xm, &yk)),
        &gt,
        1e-5,
    )?);
    let (tr, tc) = (1001, 777);
    let t = rng.vec(tr * tc, -1.0, 1.0);
    let tt: Vec<f64> = (0..tc * tr).map(|k| f64::from(t[(k % tr) * tc + k / tr])).collect();
    checks.push(check(
        format!("transpose [{tr} x {tc}]"),
        gpu,
        cpu,
        Box::new(|r| r.transpose(&t, tr, tc)),
        &tt,
        0.0,
    )?);
    Ok(checks)
}

/// Whole-tensor and per-row sums, means, maxima and argmaxes.
fn reduction_checks(
    gpu: Option<&ProductionGpuRuntime>,
    cpu: &ProductionGpuRuntime,
    rng: &mut SplitMix64,
) -> Result<Vec<Check>> {
    let n = 1_000_003;
    let x = rng.vec(n, -1.0, 1.5);
    let sum: f64 = widen(&x).iter().sum();
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let arg = x.iter().position(|&v| v == max).unwrap_or(0) as f64;
    let label = |op: &str| format!("{op} [{n}]");
    let (rows, cols) = (1000, 999);
    let r = &x[..rows * cols];
    let rsum: Vec<f64> = r.chunks(cols).map(|c| widen(c).iter().sum()).collect();
    let rmean: Vec<f64> = rsum.iter().map(|s| s / cols as f64).collect();
    let rmax: Vec<f32> =
        r.chunks(cols).map(|c| c.iter().copied().fold(f32::NEG_INFINITY, f32::max)).collect();
    let rarg: Vec<f64> =
        r.chunks(cols).zip(&rmax).map(|(c, m)| c.iter().position(|v| v == m).unwrap_or(0) as f64).collect();
    let rlabel = |op: &str| format!("{op} [{rows} x {cols}]");
    Ok(vec![
        check(label("sum"), gpu, cpu, Box::new(|rt| Ok(vec![rt.sum(&x)?])), &[sum], 1e-6)?,
        check(label("mean"), gpu, cpu, Box::new(|rt| Ok(vec![rt.mean(&x)?])), &[sum / n as f64], 1e-6)?,
        check(label("max"), gpu, cpu, Box::new(|rt| Ok(vec![rt.max(&x)?])), &[f64::from(max)], 0.0)?,
        check(label("argmax"), gpu, cpu, Box::new(|rt| Ok(vec![rt.argmax(&x)? as f32])), &[arg], 0.0)?,
        check(rlabel("row_sum"), gpu, cpu, Box::new(|rt| rt.row_sum(r, rows, cols)), &rsum, 1e-5)?,
        check(rlabel("row_mean"), gpu, cpu, Box::new(|rt| rt.row_mean(r, rows, cols)), &rmean, 1e-6)?,
        check(rlabel("row_max"), gpu, cpu, Box::new(|rt| rt.row_max(r, rows, cols)), &widen(&rmax), 0.0)?,
        check(
            rlabel("row_argmax"),
            gpu,
            cpu,
            Box::new(|rt| Ok(rt.row_argmax(r, rows, cols)?.into_iter().map(|i| i as f32).collect())),
            &rarg,
            0.0,
        )?,
    ])
}

/// The reservoir-computing operations: matvecs, leaky integration, a full step, spikes, pattern
/// correlation, spectral radius.
fn neuromorphic_checks(
    gpu: Option<&ProductionGpuRuntime>,
    cpu: &ProductionGpuRuntime,
    rng: &mut SplitMix64,
) -> Result<Vec<Check>> {
    let (n, n_in) = (1000, 50);
    let w_in = rng.vec(n * n_in, -1.0, 1.0);
    let w = rng.vec(n * n, -0.05, 0.05);
    let u = rng.vec(n_in, -1.0, 1.0);
    let x = rng.vec(n, -1.0, 1.0);
    let dot = |m: &[f32], v: &[f32], rows: usize| -> Vec<f64> {
        let cols = v.len();
        (0..rows).map(|i| (0..cols).map(|j| f64::from(m[i * cols + j]) * f64::from(v[j])).sum()).collect()
    };
    let (win_u, w_x) = (dot(&w_in, &u, n), dot(&w, &x, n));
    let leak = 0.3f32;
    let keep = 1.0 - f64::from(leak);
    let step: Vec<f64> =
        (0..n).map(|i| keep * f64::from(x[i]) + f64::from(leak) * (win_u[i] + w_x[i]).tanh()).collect();
    let drive: Vec<f32> = (0..n).map(|i| 3.0 * u[i % n_in]).collect();
    let leaky: Vec<f64> =
        (0..n).map(|i| keep * f64::from(x[i]) + f64::from(leak) * f64::from(drive[i]).tanh()).collect();
    let rates = rng.vec(1001, 0.0, 1.0);
    let (steps, seed) = (50, rng.next_u64());
    let spikes: Vec<f32> = (0..steps * rates.len())
        .map(|k| {
            let (t, i) = (k / rates.len(), k % rates.len());
            if prism_gpu::raw::cpu::uniform01(seed, i as u64, t as u64) < rates[i] {
                1.0
            } else {
                0.0
            }
        })
        .collect();
    let dims = Patterns { t: steps, n: rates.len(), p: 3, w: 7 };
    let templates = rng.vec(dims.p * dims.w * dims.n, -1.0, 1.0);
    let len = dims.w * dims.n;
    let corr: Vec<f64> = (0..dims.p * dims.positions())
        .map(|o| {
            let (k, t) = (o / dims.positions(), o % dims.positions());
            (0..len).map(|j| f64::from(spikes[t * dims.n + j]) * f64::from(templates[k * len + j])).sum()
        })
        .collect();
    // a diagonal reservoir with a known dominant eigenvalue
    let lambda = rng.uniform(0.8, 1.2);
    let diag: Vec<f32> = (0..n * n)
        .map(|k| match k {
            k if k % (n + 1) != 0 => 0.0,
            k if k == 17 * (n + 1) => -lambda,
            _ => 0.5 * rng.uniform(-1.0, 1.0),
        })
        .collect();
    let label = |op: &str| format!("{op} [{n}]");
    Ok(vec![
        check(
            label("matvec_input"),
            gpu,
            cpu,
            Box::new(|r| r.matvec_input(&w_in, &u, n, n_in)),
            &win_u,
            1e-5,
        )?,
        check(
            label("matvec_reservoir"),
            gpu,
            cpu,
            Box::new(|r| r.matvec_reservoir(ReservoirWeights::Dense(&w), &x)),
            &w_x,
            1e-5,
        )?,
        check(
            label("leaky_integration"),
            gpu,
            cpu,
            Box::new(|r| {
                let mut s = x.clone();
                r.leaky_integration(&mut s, &drive, leak)?;
                Ok(s)
            }),
            &leaky,
            2e-6,
        )?,
        check(
            label("reservoir_step"),
            gpu,
            cpu,
            Box::new(|r| {
                let mut s = x.clone();
                r.reservoir_step(&w_in, ReservoirWeights::Dense(&w), &u, &mut s, leak)?;
                Ok(s)
            }),
            &step,
            1e-5,
        )?,
        check(
            format!("spike_encode [{steps} x {}]", rates.len()),
            gpu,
            cpu,
            Box::new(|r| r.spike_encode(&rates, steps, seed)),
            &widen(&spikes),
            0.0,
        )?,
        check(
            format!("pattern_correlation [{} x {}]", dims.p, dims.positions()),
            gpu,
            cpu,
            Box::new(|r| r.pattern_correlation(&spikes, &templates, dims)),
            &corr,
            // sums of w * n = 7007 terms in f32 with cancellation: 1e-5 of the terms' magnitudes
            5e-4,
        )?,
        check(
            label("spectral_radius"),
            gpu,
            cpu,
            Box::new(|r| Ok(vec![r.spectral_radius(ReservoirWeights::Dense(&diag), n, 300, seed)?])),
            &[f64::from(lambda)],
            1e-4,
        )?,
    ])
}

/// The self-test's GEMM rows: each precision on fresh random inputs at an odd shape (one
/// transposed with alpha and beta, one batched), on the CPU fallback and, when given, the GPU,
/// against an f64 reference. Errors are the self-test's (largest |error| / max(1, |reference|)),
/// so the tolerances are per element: 1e-5 F32, 1e-2 TF32 and FP16, 1e-1 BF16 (measured
/// ~3.5e-2 on the CPU: 8-bit mantissas and cancellation near 0).
fn gemm_checks(
    gpu: Option<&ProductionGpuRuntime>,
    cpu: &ProductionGpuRuntime,
    rng: &mut SplitMix64,
) -> Result<Vec<Check>> {
    let (m, n, k) = (127, 129, 131);
    let cases = [
        (Precision::F32, Gemm::new(m, n, k), 1e-5),
        (Precision::F32, Gemm::new(m, n, k).transposed(true, true).scaled(0.75, -0.5), 1e-5),
        (Precision::Tf32, Gemm::new(m, n, k), 1e-2),
        (Precision::Bf16, Gemm::new(m, n, k).batched(3, m * k, k * n, m * n), 1e-1),
        (Precision::F16, Gemm::new(m, n, k).transposed(false, true), 1e-2),
    ];
    let mut checks = Vec::with_capacity(cases.len());
    for (precision, g, tolerance) in cases {
        let g = g.with_precision(precision);
        let (la, lb, lc) = g.min_lens()?;
        let (a, b, c0) = (rng.vec(la, -1.0, 1.0), rng.vec(lb, -1.0, 1.0), rng.vec(lc, -1.0, 1.0));
        let reference = reference(&g, &a, &b, &c0);
        let run = |rt: &ProductionGpuRuntime| -> Result<Vec<f32>> {
            let mut c = c0.clone();
            rt.gemm(&g, &a, &b, &mut c)?;
            Ok(c)
        };
        let on_cpu = run(cpu)?;
        let on_gpu = gpu.map(run).transpose()?;
        let t = |x: bool| if x { 't' } else { 'n' };
        checks.push(Check {
            op: format!(
                "gemm {precision:?} {}{} {m}x{n}x{k}{}",
                t(g.trans_a),
                t(g.trans_b),
                if g.batch > 1 { format!(" x{}", g.batch) } else { String::new() }
            ),
            gpu_vs_cpu: on_gpu.as_deref().map(|x| max_difference(x, &on_cpu)),
            gpu_error: on_gpu.as_deref().map(|x| max_error(x, &reference)),
            cpu_error: max_error(&on_cpu, &reference),
            tolerance,
        });
    }
    Ok(checks)
}

/// `alpha * op(a) * op(b) + beta * c` in f64 for packed batches (C's layout, C's length).
fn reference(g: &Gemm, a: &[f32], b: &[f32], c: &[f32]) -> Vec<f64> {
    let mut out: Vec<f64> = c.iter().map(|&x| f64::from(g.beta) * f64::from(x)).collect();
    for z in 0..g.batch {
        for i in 0..g.m {
            for j in 0..g.n {
                let dot: f64 = (0..g.k)
                    .map(|p| {
                        let x = a[z * g.stride_a + if g.trans_a { p * g.lda + i } else { i * g.lda + p }];
                        let y = b[z * g.stride_b + if g.trans_b { j * g.ldb + p } else { p * g.ldb + j }];
                        f64::from(x) * f64::from(y)
                    })
                    .sum();
                out[z * g.stride_c + i * g.ldc + j] += f64::from(g.alpha) * dot;
            }
        }
    }
    out
}

/// The checks as a Markdown table.
pub fn table(checks: &[Check]) -> String {
    let show = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2e}"));
    let mut out = String::from(
        "| operation | max abs GPU-CPU | GPU err vs f64 | CPU err vs f64 | tolerance | ok |\n|---|---|---|---|---|---|\n",
    );
    for c in checks {
        writeln!(
            out,
            "| {} | {} | {} | {:.2e} | {:.0e} | {} |",
            c.op,
            show(c.gpu_vs_cpu),
            show(c.gpu_error),
            c.cpu_error,
            c.tolerance,
            if c.passed() { "yes" } else { "NO" }
        )
        .expect("writing to a String");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_relative_and_nan_fails() {
        assert!((max_error(&[1.0, 200.0], &[1.0, 202.0]) - 2.0 / 202.0).abs() < 1e-15);
        assert!(max_error(&[f32::NAN], &[1.0]).is_nan());
        assert_eq!(max_error(&[1.0], &[1.0, 2.0]), f64::INFINITY);
        let c = Check {
            op: "x".into(),
            gpu_vs_cpu: None,
            gpu_error: Some(f64::NAN),
            cpu_error: 0.0,
            tolerance: 1.0,
        };
        assert!(!c.passed());
    }

    #[test]
    fn the_cpu_fallback_passes_its_own_selftest() {
        let checks = run(None, &ProductionGpuRuntime::cpu(), &mut SplitMix64::from_time()).unwrap();
        assert!(checks.len() >= 60, "{}", checks.len());
        for c in &checks {
            assert!(c.passed(), "{}", table(&checks));
        }
    }
}
