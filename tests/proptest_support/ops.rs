//! The runtime properties, each a function of the runtime it runs on and its case count:
//! `proptest_cpu` runs them on the CPU fallback (CI), `proptest_gpu` on a GPU. Each result is
//! checked against an f64 reference written here (never the fallback's helpers); each bad input
//! must be an `Error::Shape`, never a panic. Tolerances are per element: exact where the op is
//! exact, else relative to the value or to the magnitude of the terms that make it up (stated at
//! each check); they hold for the GPU's f32 arithmetic as well as the CPU's.
#![allow(dead_code)] // each test binary uses a different subset

use half::bf16;
use prism_gpu::ops::activations::Activation;
use prism_gpu::ops::gemv::Gemv;
use prism_gpu::ops::neuromorphic::{Csr, Patterns, ReservoirWeights};
use prism_gpu::ops::random::Philox;
use prism_gpu::raw::kernels::gemm::{Gemm, Precision};
use prism_gpu::ProductionGpuRuntime;
use proptest::collection::vec;
use proptest::prelude::*;

use super::{any_f32, check, close, dim, exact, finite, huge, ok, refused, shape_err};

fn f(x: f32) -> f64 {
    f64::from(x)
}

/// Two vectors of one length (0..=max) of `any_f32(range)`.
fn pair(max: usize, range: f32) -> impl Strategy<Value = (Vec<f32>, Vec<f32>)> {
    (0..=max).prop_flat_map(move |n| (vec(any_f32(range), n), vec(any_f32(range), n)))
}

/// The `elementwise` property on `rt`, `cases` cases.
pub fn elementwise(rt: &ProductionGpuRuntime, cases: u32) {
    check("elementwise", cases, pair(700, 1e6), |(a, b)| {
        let got = [
            ok("add", rt.add(&a, &b))?,
            ok("sub", rt.sub(&a, &b))?,
            ok("mul", rt.mul(&a, &b))?,
            ok("div", rt.div(&a, &b))?,
        ];
        for (op, got) in ["add", "sub", "mul", "div"].iter().zip(got) {
            prop_assert_eq!(got.len(), a.len());
            for i in 0..a.len() {
                let (x, y) = (f(a[i]), f(b[i]));
                // f64 holds every f32 sum, difference and product exactly, and rounds a quotient
                // so that the f32 rounding after it is the correctly rounded f32 quotient.
                let want = match *op {
                    "add" => x + y,
                    "sub" => x - y,
                    "mul" => x * y,
                    _ => x / y,
                };
                exact(op, i, got[i], want)?;
            }
        }
        Ok(())
    });
}

/// The `axpy_scale_fill` property on `rt`, `cases` cases.
pub fn axpy_scale_fill(rt: &ProductionGpuRuntime, cases: u32) {
    let s = (pair(600, 1e4), any_f32(100.0), 0usize..3000);
    check("axpy_scale_fill", cases, s, |((x, y), alpha, n)| {
        let got = ok("axpy", rt.axpy(alpha, &x, &y))?;
        prop_assert_eq!(got.len(), x.len());
        for i in 0..x.len() {
            // Rounded to f32 first, so that a result beyond f32's range is the infinity.
            let want = f((f(alpha) * f(x[i]) + f(y[i])) as f32);
            // One rounding (fused) or two: within one f32 ulp of the terms' magnitude.
            let tol = f64::from(f32::EPSILON) * (f(alpha) * f(x[i])).abs().max(f(y[i]).abs());
            close("axpy", i, f(got[i]), want, tol)?;
        }
        let got = ok("scale", rt.scale(alpha, &x))?;
        for i in 0..x.len() {
            exact("scale", i, got[i], f(alpha) * f(x[i]))?;
        }
        let got = ok("fill", rt.fill(n, alpha))?;
        prop_assert_eq!(got.len(), n);
        for (i, &v) in got.iter().enumerate() {
            exact("fill", i, v, f(alpha))?;
        }
        Ok(())
    });
}

/// The f64 value of the bf16 `bits` (decoded here: sign, 8 exponent bits, 7 mantissa bits).
fn bf16_value(bits: u16) -> f64 {
    f(f32::from_bits(u32::from(bits) << 16))
}

/// The f64 value of the IEEE half `bits`, decoded here.
fn f16_value(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let (e, m) = ((bits >> 10) & 0x1f, f64::from(bits & 0x3ff));
    sign * match e {
        0 => m * 2f64.powi(-24),
        31 if m == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1.0 + m / 1024.0) * 2f64.powi(i32::from(e) - 15),
    }
}

/// `bits` (of a 16-bit format decoded by `value`) is `x` rounded to nearest, ties to even:
/// no neighbour is nearer, a tie has an even mantissa; overflow gives the infinity.
fn nearest(what: &str, i: usize, x: f32, bits: u16, value: fn(u16) -> f64) -> Result<(), TestCaseError> {
    let (x, v) = (f(x), value(bits));
    if x.is_nan() {
        prop_assert!(v.is_nan(), "{what}[{i}]: NaN became {v}");
        return Ok(());
    }
    if v.is_infinite() {
        let below = value(bits - 1); // the largest finite value of that sign
        prop_assert!(x.is_infinite() || x.abs() >= below.abs(), "{what}[{i}]: {x} overflowed to {v}");
        prop_assert_eq!(v.signum(), x.signum());
        return Ok(());
    }
    let d = (v - x).abs();
    for nb in [bits.wrapping_add(1), bits.wrapping_sub(1)] {
        let w = value(nb);
        if w.is_nan() || (nb & 0x7fff) == 0x7fff || (nb ^ bits) & 0x8000 != 0 && v != 0.0 {
            continue;
        }
        let dn = (w - x).abs();
        prop_assert!(dn >= d, "{what}[{i}]: {x} rounded to {v}, but {w} is nearer");
        prop_assert!(dn > d || bits & 1 == 0, "{what}[{i}]: tie {x} rounded to odd {v}");
    }
    Ok(())
}

/// The `conversions` property on `rt`, `cases` cases.
pub fn conversions(rt: &ProductionGpuRuntime, cases: u32) {
    let s = vec(prop_oneof![4 => any_f32(70_000.0), 2 => -1.0f32..1.0, 1 => -1e-4f32..1e-4], 0..400);
    check("conversions", cases, s, |x| {
        let h = ok("f32_to_f16", rt.f32_to_f16(&x))?;
        let b = ok("f32_to_bf16", rt.f32_to_bf16(&x))?;
        prop_assert_eq!((h.len(), b.len()), (x.len(), x.len()));
        for i in 0..x.len() {
            nearest("f32_to_f16", i, x[i], h[i].to_bits(), f16_value)?;
            nearest("f32_to_bf16", i, x[i], b[i].to_bits(), bf16_value)?;
        }
        let hb = ok("f16_to_f32", rt.f16_to_f32(&h))?;
        let bb = ok("bf16_to_f32", rt.bf16_to_f32(&b))?;
        for i in 0..x.len() {
            exact("f16_to_f32", i, hb[i], f16_value(h[i].to_bits()))?;
            exact("bf16_to_f32", i, bb[i], bf16_value(b[i].to_bits()))?;
        }
        Ok(())
    });
}

/// `sqrt(2 / pi)` and the cubic coefficient of GELU's tanh form, in f64.
const GELU_C: f64 = 0.797_884_560_802_865_4;
const GELU_A: f64 = 0.044715;

/// `pass` where `x > 0`, else `otherwise`.
fn when_positive(x: f64, pass: f64, otherwise: f64) -> f64 {
    if x > 0.0 {
        pass
    } else {
        otherwise
    }
}

fn forward64(act: Activation, x: f64) -> f64 {
    match act {
        Activation::Relu => when_positive(x, x, 0.0),
        Activation::LeakyRelu(s) => when_positive(x, x, f(s) * x),
        Activation::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        Activation::Tanh => x.tanh(),
        Activation::Gelu => 0.5 * x * (1.0 + (GELU_C * (x + GELU_A * x * x * x)).tanh()),
    }
}

fn backward64(act: Activation, dy: f64, x: f64) -> f64 {
    match act {
        Activation::Relu => when_positive(x, dy, 0.0),
        Activation::LeakyRelu(s) => when_positive(x, dy, f(s) * dy),
        Activation::Sigmoid => {
            let s = 1.0 / (1.0 + (-x).exp());
            dy * s * (1.0 - s)
        }
        Activation::Tanh => dy * (1.0 - x.tanh().powi(2)),
        Activation::Gelu => {
            let t = (GELU_C * (x + GELU_A * x * x * x)).tanh();
            dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_C * (1.0 + 3.0 * GELU_A * x * x))
        }
    }
}

fn activation() -> impl Strategy<Value = Activation> {
    prop_oneof![
        Just(Activation::Relu),
        (-2.0f32..2.0).prop_map(Activation::LeakyRelu),
        Just(Activation::Sigmoid),
        Just(Activation::Tanh),
        Just(Activation::Gelu),
    ]
}

fn is_exact(act: Activation) -> bool {
    matches!(act, Activation::Relu | Activation::LeakyRelu(_))
}

/// The `activations` property on `rt`, `cases` cases.
pub fn activations(rt: &ProductionGpuRuntime, cases: u32) {
    let s = (activation(), vec(any_f32(30.0), 0..700));
    check("activations", cases, s, |(act, x)| {
        let got = ok("activation", rt.activation(act, &x))?;
        let mut inplace = x.clone();
        ok("activation_inplace", rt.activation_inplace(act, &mut inplace))?;
        prop_assert_eq!(got.len(), x.len());
        for i in 0..x.len() {
            let want = forward64(act, f(x[i]));
            if is_exact(act) {
                exact("activation", i, got[i], want)?;
            } else {
                // Relative to the value, plus an absolute part scaled to |x|: GELU's 1 + tanh
                // cancels for negative x, where f32 tanh's absolute error (~6e-8) times x/2 is what is left.
                let gelu = if matches!(act, Activation::Gelu) { 1e-7 * f(x[i]).abs() } else { 0.0 };
                let tol = 4e-6 * want.abs() + gelu + 1e-37;
                close("activation", i, f(got[i]), want, tol)?;
            }
            prop_assert!(got[i].to_bits() == inplace[i].to_bits(), "in place differs at {i}");
        }
        Ok(())
    });
}

/// The `activation_backward` property on `rt`, `cases` cases.
pub fn activation_backward(rt: &ProductionGpuRuntime, cases: u32) {
    let s = (activation(), (0..600usize).prop_flat_map(|n| (vec(finite(100.0), n), vec(finite(25.0), n))));
    check("activation_backward", cases, s, |(act, (dy, x))| {
        let got = ok("activation_backward", rt.activation_backward(act, &dy, &x))?;
        prop_assert_eq!(got.len(), x.len());
        for i in 0..x.len() {
            let want = backward64(act, f(dy[i]), f(x[i]));
            if is_exact(act) {
                exact("activation_backward", i, got[i], want)?;
            } else {
                // Relative to dy's size and x's (the derivative's terms are O(1 + |x|)).
                let tol = 4e-6 * want.abs() + 2e-7 * f(dy[i]).abs() * (1.0 + f(x[i]).abs());
                close("activation_backward", i, f(got[i]), want, tol)?;
            }
        }
        Ok(())
    });
}

/// A `[rows, cols]` matrix of finite values in `[-range, range]`.
fn matrix(rows: usize, cols: usize, range: f32) -> impl Strategy<Value = (Vec<f32>, usize, usize)> {
    (dim(rows), dim(cols)).prop_flat_map(move |(r, c)| (vec(finite(range), r * c), Just(r), Just(c)))
}

/// The `softmax` property on `rt`, `cases` cases.
pub fn softmax(rt: &ProductionGpuRuntime, cases: u32) {
    check("softmax", cases, matrix(40, 300, 60.0), |(x, rows, cols)| {
        let y = ok("softmax_rows", rt.softmax_rows(&x, rows, cols))?;
        let l = ok("log_softmax_rows", rt.log_softmax_rows(&x, rows, cols))?;
        prop_assert_eq!((y.len(), l.len()), (x.len(), x.len()));
        for r in 0..rows {
            let row = &x[r * cols..(r + 1) * cols];
            let max = row.iter().map(|&v| f(v)).fold(f64::NEG_INFINITY, f64::max);
            let lse = row.iter().map(|&v| (f(v) - max).exp()).sum::<f64>().ln();
            for c in 0..cols {
                let i = r * cols + c;
                let log = f(x[i]) - max - lse;
                // Each probability relative to itself (plus f32's underflow floor).
                close("softmax", i, f(y[i]), log.exp(), 1e-5 * log.exp() + 1e-38)?;
                // A log-probability's absolute error is its probability's relative error.
                close("log_softmax", i, f(l[i]), log, 1e-5 * (1.0 + log.abs() * 1e-1))?;
            }
        }
        Ok(())
    });
}

/// `(out, mean, rstd)` of f64 layer norm (biased variance) of each row.
fn layer_norm64(
    x: &[f32],
    rows: usize,
    cols: usize,
    g: Option<&[f32]>,
    b: Option<&[f32]>,
    eps: f32,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut out, mut means, mut rstds) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let mean = row.iter().map(|&v| f(v)).sum::<f64>() / cols as f64;
        let var = row.iter().map(|&v| (f(v) - mean).powi(2)).sum::<f64>() / cols as f64;
        let rstd = 1.0 / (var + f(eps)).sqrt();
        for c in 0..cols {
            let gc = g.map_or(1.0, |g| f(g[c]));
            let bc = b.map_or(0.0, |b| f(b[c]));
            out.push((f(row[c]) - mean) * rstd * gc + bc);
        }
        means.push(mean);
        rstds.push(rstd);
    }
    (out, means, rstds)
}

fn rms_norm64(x: &[f32], rows: usize, cols: usize, g: Option<&[f32]>, eps: f32) -> (Vec<f64>, Vec<f64>) {
    let (mut out, mut rstds) = (Vec::new(), Vec::new());
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let rstd = 1.0 / (row.iter().map(|&v| f(v) * f(v)).sum::<f64>() / cols as f64 + f(eps)).sqrt();
        for c in 0..cols {
            out.push(f(row[c]) * rstd * g.map_or(1.0, |g| f(g[c])));
        }
        rstds.push(rstd);
    }
    (out, rstds)
}

/// A norm case: `x` `[rows, cols]`, optional gamma and beta of `cols`, eps.
type NormCase = ((Vec<f32>, usize, usize), Option<Vec<f32>>, Option<Vec<f32>>, f32);

fn norm_case() -> impl Strategy<Value = NormCase> {
    matrix(24, 200, 50.0).prop_flat_map(|(x, r, c)| {
        (
            Just((x, r, c)),
            proptest::option::of(vec(finite(3.0), c)),
            proptest::option::of(vec(finite(3.0), c)),
            prop_oneof![Just(1e-5f32), 1e-6f32..1.0],
        )
    })
}

/// The `norms` property on `rt`, `cases` cases.
pub fn norms(rt: &ProductionGpuRuntime, cases: u32) {
    check("norms", cases, norm_case(), |((x, rows, cols), g, b, eps)| {
        let (g, b) = (g.as_deref(), b.as_deref());
        let (want, wm, wr) = layer_norm64(&x, rows, cols, g, b, eps);
        let (y, m, r) = ok("layer_norm_with_stats", rt.layer_norm_with_stats(&x, rows, cols, g, b, eps))?;
        let plain = ok("layer_norm", rt.layer_norm(&x, rows, cols, g, b, eps))?;
        prop_assert_eq!((y.len(), m.len(), r.len()), (x.len(), if x.is_empty() { 0 } else { rows }, m.len()));
        let gmax = g.map_or(1.0, |g| g.iter().fold(0.0f64, |a, &v| a.max(f(v).abs())));
        for row in 0..m.len() {
            let xmax = x[row * cols..(row + 1) * cols].iter().fold(0.0f64, |a, &v| a.max(f(v).abs()));
            // Statistics summed in f32 (the GPU) are within cols ulps of the magnitudes summed; the
            // variance's error reaches rstd through d(rstd) = rstd^3 d(var) / 2.
            let sum_err = cols as f64 * f64::from(f32::EPSILON);
            close("mean", row, f(m[row]), wm[row], sum_err * xmax + 1e-30)?;
            let var_err = sum_err * xmax * xmax;
            close("rstd", row, f(r[row]), wr[row], 1e-5 * wr[row] + 0.5 * wr[row].powi(3) * var_err)?;
            for c in 0..cols {
                let i = row * cols + c;
                // The runtime's stated bound: relative to max(|y|, 0.1 * max|x| * rstd * max|gamma|),
                // plus |beta| (added after the product).
                let scale = want[i].abs().max(0.1 * xmax * wr[row] * gmax) + b.map_or(0.0, |b| f(b[c]).abs());
                close("layer_norm", i, f(y[i]), want[i], 1e-5 * scale)?;
                close("layer_norm (no stats)", i, f(plain[i]), want[i], 1e-5 * scale)?;
            }
        }
        let (want, wr) = rms_norm64(&x, rows, cols, g, eps);
        let (y, r) = ok("rms_norm_with_stats", rt.rms_norm_with_stats(&x, rows, cols, g, eps))?;
        let plain = ok("rms_norm", rt.rms_norm(&x, rows, cols, g, eps))?;
        for (row, &rs) in r.iter().enumerate() {
            // The mean square is a sum of positive terms: relative error within cols ulps.
            close("rms rstd", row, f(rs), wr[row], (1e-5 + cols as f64 * f64::from(f32::EPSILON)) * wr[row])?;
        }
        for i in 0..x.len() {
            close("rms_norm", i, f(y[i]), want[i], 1e-5 * want[i].abs() + 1e-30)?;
            close("rms_norm (no stats)", i, f(plain[i]), want[i], 1e-5 * want[i].abs() + 1e-30)?;
        }
        Ok(())
    });
}

/// The `norms_bf16` property on `rt`, `cases` cases.
pub fn norms_bf16(rt: &ProductionGpuRuntime, cases: u32) {
    check("norms_bf16", cases, norm_case(), |((x, rows, cols), g, b, eps)| {
        let (g, b) = (g.as_deref(), b.as_deref());
        let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_bits((v.to_bits() >> 16) as u16)).collect();
        // The reference runs on the bf16 inputs (truncated above: any bf16 values will do).
        let xr: Vec<f32> = xb.iter().map(|v| bf16_value(v.to_bits()) as f32).collect();
        let (want, _, wr) = layer_norm64(&xr, rows, cols, g, b, eps);
        let y = ok("layer_norm_bf16", rt.layer_norm_bf16(&xb, rows, cols, g, b, eps))?;
        prop_assert_eq!(y.len(), x.len());
        let gmax = g.map_or(1.0, |g| g.iter().fold(0.0f64, |a, &v| a.max(f(v).abs())));
        for i in 0..x.len() {
            let row = i / cols;
            let xmax = xr[row * cols..(row + 1) * cols].iter().fold(0.0f64, |a, &v| a.max(f(v).abs()));
            let scale =
                want[i].abs().max(0.1 * xmax * wr[row] * gmax) + b.map_or(0.0, |b| f(b[i % cols]).abs());
            // One bf16 rounding of the output (2^-8 relative) and the f32 arithmetic before it.
            close("layer_norm_bf16", i, bf16_value(y[i].to_bits()), want[i], 4.0e-3 * scale)?;
        }
        let (want, _) = rms_norm64(&xr, rows, cols, g, eps);
        let y = ok("rms_norm_bf16", rt.rms_norm_bf16(&xb, rows, cols, g, eps))?;
        for i in 0..x.len() {
            close("rms_norm_bf16", i, bf16_value(y[i].to_bits()), want[i], 4.0e-3 * want[i].abs() + 1e-30)?;
        }
        Ok(())
    });
}

/// The `batch_norm` property on `rt`, `cases` cases.
pub fn batch_norm(rt: &ProductionGpuRuntime, cases: u32) {
    let s = (dim(5), dim(7), dim(40)).prop_flat_map(|(n, c, hw)| {
        (
            vec(finite(20.0), n * c * hw),
            Just((n, c, hw)),
            vec(finite(5.0), c),
            vec(0.01f32..9.0, c),
            proptest::option::of(vec(finite(3.0), c)),
            proptest::option::of(vec(finite(3.0), c)),
            0.0f32..1.0,
        )
    });
    check("batch_norm", cases, s, |(x, (n, c, hw), mean, var, g, b, momentum)| {
        let (g, b, eps) = (g.as_deref(), b.as_deref(), 1e-5f32);
        let at = |i: usize| (i / hw) % c;
        let gc = |ch: usize| g.map_or(1.0, |g| f(g[ch]));
        let bc = |ch: usize| b.map_or(0.0, |b| f(b[ch]));
        let y = ok("batch_norm", rt.batch_norm(&x, (n, c, hw), &mean, &var, g, b, eps))?;
        prop_assert_eq!(y.len(), x.len());
        for i in 0..x.len() {
            let ch = at(i);
            let term = (f(x[i]) - f(mean[ch])) / (f(var[ch]) + f(eps)).sqrt() * gc(ch);
            let scale = (f(x[i]).abs() + f(mean[ch]).abs()) / (f(var[ch]) + f(eps)).sqrt() * gc(ch).abs();
            close("batch_norm", i, f(y[i]), term + bc(ch), 1e-5 * (scale + bc(ch).abs()) + 1e-30)?;
        }
        if n * hw == 0 && c > 0 {
            return shape_err(
                "batch_norm_train with no samples",
                rt.batch_norm_train(&x, (n, c, hw), g, b, eps, None),
            );
        }
        let (mut rm, mut rv) = (mean.clone(), var.clone());
        let running = prism_gpu::runtime::RunningStats { mean: &mut rm, var: &mut rv, momentum };
        let (y, m, v) =
            ok("batch_norm_train", rt.batch_norm_train(&x, (n, c, hw), g, b, eps, Some(running)))?;
        let count = (n * hw) as f64;
        for ch in 0..c {
            let vals: Vec<f64> = (0..x.len()).filter(|&i| at(i) == ch).map(|i| f(x[i])).collect();
            let mu = vals.iter().sum::<f64>() / count;
            let var_b = vals.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / count;
            let mag = vals.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            close("batch mean", ch, f(m[ch]), mu, 1e-6 * mag)?;
            close("batch var", ch, f(v[ch]), var_b, 1e-5 * var_b + 1e-6 * mag * mag * 1e-3)?;
            let unbiased = if count > 1.0 { var_b * count / (count - 1.0) } else { var_b };
            let mo = f(momentum);
            close(
                "running mean",
                ch,
                f(rm[ch]),
                (1.0 - mo) * f(mean[ch]) + mo * mu,
                1e-5 * (f(mean[ch]).abs() + mag),
            )?;
            let want_rv = (1.0 - mo) * f(var[ch]) + mo * unbiased;
            close("running var", ch, f(rv[ch]), want_rv, 1e-5 * want_rv + 1e-9 * mag * mag)?;
            let rstd = 1.0 / (var_b + f(eps)).sqrt();
            for i in (0..x.len()).filter(|&i| at(i) == ch) {
                let want = (f(x[i]) - mu) * rstd * gc(ch) + bc(ch);
                let scale = (f(x[i]).abs() + mag) * rstd * gc(ch).abs() + bc(ch).abs();
                close("batch_norm_train", i, f(y[i]), want, 1e-5 * scale)?;
            }
        }
        Ok(())
    });
}

/// Maximum ignoring NaN (`-inf` for none) and the first index of it (0 when all are NaN).
fn max_argmax(x: &[f32]) -> (f32, usize) {
    let mut best: Option<(usize, f32)> = None;
    for (i, &v) in x.iter().enumerate() {
        if !v.is_nan() && best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.map_or((f32::NEG_INFINITY, 0), |(i, v)| (v, i))
}

/// The `reductions` property on `rt`, `cases` cases.
pub fn reductions(rt: &ProductionGpuRuntime, cases: u32) {
    let s = (
        vec(any_f32(1e3), 0..3000),
        vec(prop_oneof![8 => finite(1e4), 1 => Just(f32::NAN), 1 => Just(f32::NEG_INFINITY)], 1..600),
        vec(finite(1e3), 0..5000),
    );
    check("reductions", cases, s, |(x, mostly_nan, finite_x)| {
        for x in [&x, &mostly_nan] {
            let (want_max, want_arg) = max_argmax(x);
            exact("max", 0, ok("max", rt.max(x))?, f(want_max))?;
            if x.is_empty() {
                shape_err("argmax of nothing", rt.argmax(x))?;
            } else {
                prop_assert_eq!(ok("argmax", rt.argmax(x))?, want_arg);
            }
        }
        let all_nan = vec![f32::NAN; mostly_nan.len()];
        exact("max of NaNs", 0, ok("max", rt.max(&all_nan))?, f64::NEG_INFINITY)?;
        prop_assert_eq!(ok("argmax", rt.argmax(&all_nan))?, 0);
        let sum = finite_x.iter().map(|&v| f(v)).sum::<f64>();
        let mag = finite_x.iter().map(|&v| f(v).abs()).sum::<f64>();
        // Relative to the sum of the terms' magnitudes (cancellation is the data's, not the op's).
        close("sum", 0, f(ok("sum", rt.sum(&finite_x))?), sum, 1e-6 * mag + 1e-30)?;
        let mean = ok("mean", rt.mean(&finite_x))?;
        if finite_x.is_empty() {
            prop_assert!(mean.is_nan(), "mean of nothing is {mean}, not NaN");
        } else {
            let n = finite_x.len() as f64;
            close("mean", 0, f(mean), sum / n, 1e-6 * mag / n + 1e-30)?;
        }
        // A NaN or an infinity reaches the sum: it is not lost.
        let mut poisoned = finite_x.clone();
        poisoned.push(f32::INFINITY);
        exact("sum with +inf", 0, ok("sum", rt.sum(&poisoned))?, f64::INFINITY)?;
        poisoned.push(f32::NAN);
        prop_assert!(ok("sum", rt.sum(&poisoned))?.is_nan());
        Ok(())
    });
}

/// The `row_reductions` property on `rt`, `cases` cases.
pub fn row_reductions(rt: &ProductionGpuRuntime, cases: u32) {
    let s = (dim(30), 1..200usize).prop_flat_map(|(r, c)| {
        (vec(prop_oneof![10 => finite(1e3), 1 => Just(f32::NAN), 1 => Just(f32::INFINITY), 1 => Just(f32::NEG_INFINITY)], r * c), Just(r), Just(c))
    });
    check("row_reductions", cases, s, |(x, rows, cols)| {
        let (s, m) =
            (ok("row_sum", rt.row_sum(&x, rows, cols))?, ok("row_mean", rt.row_mean(&x, rows, cols))?);
        let (mx, am) =
            (ok("row_max", rt.row_max(&x, rows, cols))?, ok("row_argmax", rt.row_argmax(&x, rows, cols))?);
        prop_assert_eq!((s.len(), m.len(), mx.len(), am.len()), (rows, rows, rows, rows));
        for r in 0..rows {
            let row = &x[r * cols..(r + 1) * cols];
            let (want_max, want_arg) = max_argmax(row);
            exact("row_max", r, mx[r], f(want_max))?;
            prop_assert_eq!(am[r], want_arg, "row_argmax of row {}", r);
            let sum = row.iter().map(|&v| f(v)).sum::<f64>();
            let mag = row.iter().filter(|v| v.is_finite()).map(|&v| f(v).abs()).sum::<f64>();
            close("row_sum", r, f(s[r]), sum, 1e-5 * mag + 1e-30)?;
            close("row_mean", r, f(m[r]), sum / cols as f64, 1e-5 * mag / cols as f64 + 1e-30)?;
        }
        Ok(())
    });
}

/// The `gemv_transpose` property on `rt`, `cases` cases.
pub fn gemv_transpose(rt: &ProductionGpuRuntime, cases: u32) {
    let s = (dim(60), dim(60), 0..4usize, finite(3.0), prop_oneof![Just(0.0f32), finite(2.0)]).prop_flat_map(
        |(m, n, pad, alpha, beta)| {
            let lda = n.max(1) + pad;
            let a_len = if m == 0 { 0 } else { (m - 1) * lda + n };
            (
                Just(Gemv { m, n, lda, alpha, beta }),
                vec(finite(4.0), a_len + pad),
                vec(finite(4.0), m.max(n)),
                vec(finite(4.0), m.max(n)),
            )
        },
    );
    check("gemv_transpose", cases, s, |(d, a, xs, ys)| {
        for transposed in [false, true] {
            let (xn, yn) = if transposed { (d.m, d.n) } else { (d.n, d.m) };
            let (x, y) = (&xs[..xn], if d.beta == 0.0 { &[][..] } else { &ys[..yn] });
            let got = ok("gemv", if transposed { rt.gemv_t(d, &a, x, y) } else { rt.gemv(d, &a, x, y) })?;
            prop_assert_eq!(got.len(), yn);
            for o in 0..yn {
                let (mut dot, mut mag) = (0.0, 0.0);
                for p in 0..xn {
                    let v = if transposed { a[p * d.lda + o] } else { a[o * d.lda + p] };
                    dot += f(v) * f(x[p]);
                    mag += (f(v) * f(x[p])).abs();
                }
                let yo = if d.beta == 0.0 { 0.0 } else { f(d.beta) * f(y[o]) };
                let want = f(d.alpha) * dot + yo;
                // Relative to sum |alpha a x| + |beta y| (the runtime's stated bound).
                close(
                    if transposed { "gemv_t" } else { "gemv" },
                    o,
                    f(got[o]),
                    want,
                    1e-5 * (f(d.alpha).abs() * mag + yo.abs()) + 1e-30,
                )?;
            }
        }
        // A as a packed [m, lda] matrix, transposed exactly.
        let packed = &a[..d.m * d.lda.min(a.len() / d.m.max(1))];
        let cols = packed.len().checked_div(d.m).unwrap_or(0);
        let t = ok("transpose", rt.transpose(packed, d.m, cols))?;
        prop_assert_eq!(t.len(), packed.len());
        for i in 0..d.m {
            for j in 0..cols {
                prop_assert_eq!(t[j * d.m + i].to_bits(), packed[i * cols + j].to_bits());
            }
        }
        Ok(())
    });
}

/// `alpha * op(a) op(b) + beta * c` in f64 over `g`'s layout, and per element the magnitude
/// `|alpha| sum |a b| + |beta c|` that bounds its rounding error. Elements of C outside the
/// batch entries keep `c`.
fn gemm64(g: &Gemm, alpha: f64, beta: f64, a: &[f64], b: &[f64], c: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut out = c.to_vec();
    let mut mag = vec![0.0; c.len()];
    for z in 0..g.batch {
        for i in 0..g.m {
            for j in 0..g.n {
                let (mut dot, mut m) = (0.0, 0.0);
                for p in 0..g.k {
                    let x = a[z * g.stride_a + if g.trans_a { p * g.lda + i } else { i * g.lda + p }];
                    let y = b[z * g.stride_b + if g.trans_b { j * g.ldb + p } else { p * g.ldb + j }];
                    dot += x * y;
                    m += (x * y).abs();
                }
                let o = z * g.stride_c + i * g.ldc + j;
                let old = if beta == 0.0 { 0.0 } else { beta * c[o] };
                out[o] = alpha * dot + old;
                mag[o] = alpha.abs() * m + old.abs();
            }
        }
    }
    (out, mag)
}

/// A GEMM layout with random transposes, padded leading dimensions, batch strides (packed,
/// padded or 0 = broadcast for A and B), alpha and beta.
fn layout() -> impl Strategy<Value = Gemm> {
    (
        dim(33),
        dim(33),
        dim(40),
        any::<(bool, bool)>(),
        (0..3usize, 0..3usize, 0..3usize),
        0..4usize,
        (0..3usize, 0..3usize, 0..5usize),
    )
        .prop_flat_map(|(m, n, k, (ta, tb), (pa, pb, pc), batch, (sa, sb, sc))| {
            let g = Gemm::new(m, n, k).transposed(ta, tb);
            let (lda, ldb, ldc) = (g.a_dims().1 + pa, g.b_dims().1 + pb, n + pc);
            let span =
                |(r, c): (usize, usize), ld: usize| if r == 0 || c == 0 { 0 } else { (r - 1) * ld + c };
            let stride = |span: usize, s: usize| match s {
                0 => 0,
                1 => span,
                _ => span + 3,
            };
            let sa = stride(span(g.a_dims(), lda), sa);
            let sb = stride(span(g.b_dims(), ldb), sb);
            let sc = span((m, n), ldc) + sc; // C entries must not overlap
            (
                Just(g.leading_dims(lda, ldb, ldc).batched(batch, sa, sb, sc)),
                finite(2.0),
                prop_oneof![Just(0.0f32), finite(2.0)],
            )
                .prop_map(|(g, alpha, beta)| g.scaled(alpha, beta))
        })
}

/// Operands for `g`: A, B and C with their minimum lengths plus 0..3 spare elements.
fn operands(g: Gemm) -> impl Strategy<Value = (Gemm, Vec<f32>, Vec<f32>, Vec<f32>)> {
    let (la, lb, lc) = g.min_lens().expect("small layouts fit");
    (Just(g), vec(finite(2.0), la..la + 3), vec(finite(2.0), lb..lb + 3), vec(finite(2.0), lc..lc + 3))
}

/// The `gemm` property on `rt`, `cases` cases.
pub fn gemm(rt: &ProductionGpuRuntime, cases: u32) {
    check("gemm", cases, layout().prop_flat_map(operands), |(g, a, b, c0)| {
        let wide = |v: &[f32]| v.iter().map(|&x| f(x)).collect::<Vec<_>>();
        let (want, mag) = gemm64(&g, f(g.alpha), f(g.beta), &wide(&a), &wide(&b), &wide(&c0));
        let mut c = c0.clone();
        ok("gemm", rt.gemm(&g, &a, &b, &mut c))?;
        // f32 accumulation over k terms: (k + 2) ulps of the terms' magnitude.
        let ulps = (g.k + 2) as f64 * f64::from(f32::EPSILON);
        for i in 0..c.len() {
            close("gemm", i, f(c[i]), want[i], ulps * mag[i])?;
        }
        let packed = !g.trans_a && !g.trans_b && g.lda == g.k && g.ldb == g.n;
        if g.batch == 1 && packed && a.len() >= g.m * g.k && b.len() >= g.k * g.n {
            let a = &a[..g.m * g.k];
            let b = &b[..g.k * g.n];
            let p = ok("matmul", rt.matmul(a, b, g.m, g.n, g.k))?;
            let (want, mag) =
                gemm64(&Gemm::new(g.m, g.n, g.k), 1.0, 0.0, &wide(a), &wide(b), &vec![0.0; g.m * g.n]);
            for i in 0..p.len() {
                close("matmul", i, f(p[i]), want[i], ulps * mag[i])?;
            }
        }
        // The same layout with the inputs rounded to bf16 first (the reference rounds them here,
        // to nearest even by bit arithmetic), so the tolerance stays an f32 accumulation's.
        let bf = |v: &[f32]| -> Vec<f64> {
            v.iter()
                .map(|&x| {
                    let b = x.to_bits();
                    f(f32::from_bits((b + 0x7fff + ((b >> 16) & 1)) & 0xffff_0000))
                })
                .collect()
        };
        let (want, mag) = gemm64(&g, f(g.alpha), f(g.beta), &bf(&a), &bf(&b), &wide(&c0));
        let mut c = c0.clone();
        ok("gemm bf16", rt.gemm(&g.with_precision(Precision::Bf16), &a, &b, &mut c))?;
        for i in 0..c.len() {
            close("gemm bf16", i, f(c[i]), want[i], ulps * mag[i])?;
        }
        Ok(())
    });
}

/// The `gemm_f64` property on `rt`, `cases` cases.
pub fn gemm_f64(rt: &ProductionGpuRuntime, cases: u32) {
    let s = layout().prop_flat_map(|g| {
        let (la, lb, lc) = g.min_lens().expect("small layouts fit");
        (
            Just(g),
            vec(-2.0f64..2.0, la..la + 3),
            vec(-2.0f64..2.0, lb..lb + 3),
            vec(-2.0f64..2.0, lc..lc + 3),
            -2.0f64..2.0,
            prop_oneof![Just(0.0f64), -2.0f64..2.0],
        )
    });
    check("gemm_f64", cases, s, |(g, a, b, c0, alpha, beta)| {
        let (want, mag) = gemm64(&g, alpha, beta, &a, &b, &c0);
        let mut c = c0.clone();
        ok("gemm_f64", rt.gemm_f64(&g.with_f64_scales(alpha, beta), &a, &b, &mut c))?;
        let ulps = (g.k + 2) as f64 * f64::EPSILON;
        for i in 0..c.len() {
            close("gemm_f64", i, c[i], want[i], ulps * mag[i])?;
        }
        let packed = !g.trans_a && !g.trans_b && g.lda == g.k && g.ldb == g.n;
        if g.batch == 1 && packed && a.len() >= g.m * g.k && b.len() >= g.k * g.n {
            let (a, b) = (&a[..g.m * g.k], &b[..g.k * g.n]);
            let p = ok("matmul_f64", rt.matmul_f64(a, b, g.m, g.n, g.k))?;
            let (want, mag) = gemm64(&Gemm::new(g.m, g.n, g.k), 1.0, 0.0, a, b, &vec![0.0; g.m * g.n]);
            prop_assert_eq!(p.len(), g.m * g.n);
            for i in 0..p.len() {
                close("matmul_f64", i, p[i], want[i], ulps * mag[i])?;
            }
        }
        Ok(())
    });
}

/// The `gemm_layouts` property on `rt`, `cases` cases.
pub fn gemm_layouts(rt: &ProductionGpuRuntime, cases: u32) {
    // Random layouts, valid or not, with random operand lengths: a layout this test can see is
    // invalid must be refused; one it sees is valid must run; nothing may panic.
    let size = prop_oneof![6 => 0..40usize, 1 => huge()];
    let s = (
        size.clone(),
        size.clone(),
        size.clone(),
        any::<(bool, bool)>(),
        (size.clone(), size.clone(), size.clone()),
        prop_oneof![3 => 0..4usize, 1 => huge()],
        (size.clone(), size.clone(), size),
        (0..2000usize, 0..2000usize, 0..2000usize),
    );
    check(
        "gemm_layouts",
        cases,
        s,
        |(m, n, k, (ta, tb), (lda, ldb, ldc), batch, (sa, sb, sc), (la, lb, lc))| {
            let g =
                Gemm::new(m, n, k).transposed(ta, tb).leading_dims(lda, ldb, ldc).batched(batch, sa, sb, sc);
            let (a, b, mut c) = (vec![0.5f32; la], vec![0.25f32; lb], vec![1.0f32; lc]);
            let got = rt.gemm(&g, &a, &b, &mut c);
            // This test's own extents, in u128, saturating: two usize factors can exceed u128, and
            // any extent that large is too long for every buffer.
            let ext = |(r, cc): (usize, usize), ld: usize, s: usize| -> u128 {
                if batch == 0 || r == 0 || cc == 0 {
                    0
                } else {
                    (batch as u128 - 1)
                        .saturating_mul(s as u128)
                        .saturating_add((r as u128 - 1) * ld as u128)
                        .saturating_add(cc as u128)
                }
            };
            let (ad, bd) = (if ta { (k, m) } else { (m, k) }, if tb { (n, k) } else { (k, n) });
            let lim = i32::MAX as usize;
            let empty = m == 0 || n == 0 || batch == 0;
            let bad_dims =
                [m, n, k, lda, ldb, ldc].iter().any(|&v| v > lim) || lda < ad.1 || ldb < bd.1 || ldc < n;
            let c_one = ext((m, n), ldc, 0);
            let too_short = !empty
                && (ext(ad, lda, sa) > la as u128
                    || ext(bd, ldb, sb) > lb as u128
                    || ext((m, n), ldc, sc) > lc as u128
                    || (batch > 1 && (sc as u128) < c_one));
            if bad_dims || too_short {
                shape_err("an invalid gemm", got)?;
            } else {
                ok("a valid gemm", got)?;
                if !empty && k > 0 && la > 0 && lb > 0 {
                    // Every written element is 0.5 * 0.25 * k (+ beta 0 * c).
                    let o = (batch - 1) * sc + (m - 1) * ldc + n - 1;
                    prop_assert_eq!(c[o], 0.125 * k as f32);
                }
            }
            let mut c64 = vec![1.0f64; lc];
            let got = rt.gemm_f64(&g.with_f64_scales(1.0, 0.0), &vec![0.5; la], &vec![0.25; lb], &mut c64);
            if bad_dims || too_short {
                shape_err("an invalid gemm_f64", got)?;
            } else {
                ok("a valid gemm_f64", got)?;
            }
            Ok(())
        },
    );
}

/// The `random` property on `rt`, `cases` cases.
pub fn random(rt: &ProductionGpuRuntime, cases: u32) {
    let s = (0..2000usize, 0..300usize, any::<u64>(), any::<u64>(), finite(10.0), 0.01f32..5.0);
    check("random", cases, s, |(n, more, seed, offset, mean, std)| {
        let at = Philox { seed, offset };
        let u = ok("rand_uniform", rt.rand_uniform(n, at))?;
        prop_assert_eq!(u.len(), n);
        for (i, &v) in u.iter().enumerate() {
            prop_assert!(v > 0.0 && v <= 1.0, "uniform[{i}] = {v} outside (0, 1]");
        }
        // A fill is a prefix of a longer one, and the next fill continues where `after` says.
        let long = ok("rand_uniform", rt.rand_uniform(n + more, at))?;
        prop_assert_eq!(&long[..n], &u[..]);
        let whole = n.div_ceil(4) * 4;
        let next = ok("rand_uniform", rt.rand_uniform(more, at.after::<f32>(n)))?;
        let span = ok("rand_uniform", rt.rand_uniform(whole + more, at))?;
        prop_assert_eq!(&span[whole..], &next[..]);
        if n >= 16 {
            let distinct = u.iter().map(|v| v.to_bits()).collect::<std::collections::HashSet<_>>().len();
            prop_assert!(distinct > n / 2, "{distinct} distinct values in {n}");
        }
        // Normals: finite, and mean + std * z of the standard stream.
        let z = ok("rand_normal", rt.rand_normal(n, 0.0, 1.0, at))?;
        let y = ok("rand_normal", rt.rand_normal(n, mean, std, at))?;
        prop_assert_eq!((z.len(), y.len()), (n, n));
        for i in 0..n {
            prop_assert!(z[i].is_finite() && z[i].abs() < 10.0, "normal[{i}] = {}", z[i]);
            let want = f(mean) + f(std) * f(z[i]);
            close("rand_normal", i, f(y[i]), want, 4e-7 * (f(mean).abs() + (f(std) * f(z[i])).abs()) * 2.0)?;
        }
        Ok(())
    });
}

/// A reservoir case: `n`, a dense `[n, n]` matrix with about a third of its entries zero, `x`,
/// `w_in` `[n, n_in]`, `u`, leak and a seed.
type ReservoirCase = (usize, Vec<f32>, Vec<f32>, usize, Vec<f32>, Vec<f32>, f32, u64);

fn reservoir_case() -> impl Strategy<Value = ReservoirCase> {
    (dim(40), dim(9)).prop_flat_map(|(n, n_in)| {
        (
            Just(n),
            vec(prop_oneof![1 => Just(0.0f32), 2 => finite(1.0)], n * n),
            vec(finite(1.0), n),
            Just(n_in),
            vec(finite(1.0), n * n_in),
            vec(finite(1.0), n_in),
            0.0f32..1.0,
            any::<u64>(),
        )
    })
}

fn dense_to_csr(w: &[f32], n: usize) -> (Vec<i32>, Vec<i32>, Vec<f32>) {
    let (mut ptr, mut col, mut val) = (vec![0i32], Vec::new(), Vec::new());
    for i in 0..n {
        for j in 0..n {
            if w[i * n + j] != 0.0 {
                col.push(j as i32);
                val.push(w[i * n + j]);
            }
        }
        ptr.push(col.len() as i32);
    }
    (ptr, col, val)
}

/// `(W v, sum |W v| terms)` in f64.
fn matvec64(w: &[f32], v: &[f32], rows: usize, cols: usize) -> (Vec<f64>, Vec<f64>) {
    (0..rows)
        .map(|i| {
            (0..cols).fold((0.0, 0.0), |(s, m), j| {
                let t = f(w[i * cols + j]) * f(v[j]);
                (s + t, m + t.abs())
            })
        })
        .unzip()
}

/// The `neuromorphic` property on `rt`, `cases` cases.
pub fn neuromorphic(rt: &ProductionGpuRuntime, cases: u32) {
    let s = (
        reservoir_case(),
        vec(prop_oneof![any_f32(1.5), Just(1.0f32), Just(0.0f32)], 0..40),
        0..12usize,
        1..6usize,
        0..4usize,
    );
    check("neuromorphic", cases, s, |((n, w, x, n_in, w_in, u, leak, seed), rates, steps, wlen, p)| {
        let (ptr, col, val) = dense_to_csr(&w, n);
        let csr = Csr { row_ptr: &ptr, col_idx: &col, values: &val };
        // W_in u, W x (dense and CSR): dot products relative to their terms' magnitudes.
        let (want, mag) = matvec64(&w_in, &u, n, n_in);
        let got = ok("matvec_input", rt.matvec_input(&w_in, &u, n, n_in))?;
        prop_assert_eq!(got.len(), n);
        for i in 0..n {
            close("matvec_input", i, f(got[i]), want[i], 1e-6 * mag[i] + 1e-30)?;
        }
        let (wx, wmag) = matvec64(&w, &x, n, n);
        for (what, res) in [("dense", ReservoirWeights::Dense(&w)), ("csr", ReservoirWeights::Csr(csr))] {
            let got = ok("matvec_reservoir", rt.matvec_reservoir(res, &x))?;
            prop_assert_eq!(got.len(), n);
            for i in 0..n {
                close(what, i, f(got[i]), wx[i], 1e-6 * wmag[i] + 1e-30)?;
            }
            // One echo-state step: (1 - leak) x + leak tanh(W_in u + W x).
            let mut state = x.clone();
            ok("reservoir_step", rt.reservoir_step(&w_in, res, &u, &mut state, leak))?;
            for i in 0..n {
                let pre = want[i] + wx[i];
                let want = (1.0 - f(leak)) * f(x[i]) + f(leak) * pre.tanh();
                close("reservoir_step", i, f(state[i]), want, 1e-5 * (1.0 + mag[i] + wmag[i]))?;
            }
            // Power iteration: a finite, non-negative estimate, the same for both layouts.
            let r = ok("spectral_radius", rt.spectral_radius(res, n, 8, seed))?;
            prop_assert!(r.is_finite() && r >= 0.0, "spectral radius {}", r);
        }
        let drive = &u[..n_in.min(n)];
        if drive.len() == n {
            let mut state = x.clone();
            ok("leaky_integration", rt.leaky_integration(&mut state, drive, leak))?;
            for i in 0..n {
                let want = (1.0 - f(leak)) * f(x[i]) + f(leak) * f(drive[i]).tanh();
                close("leaky_integration", i, f(state[i]), want, 2e-6 * (f(x[i]).abs() + 1.0))?;
            }
        } else {
            shape_err("leaky_integration lengths", rt.leaky_integration(&mut x.clone(), drive, leak))?;
        }
        // Spikes: 0 or 1; never for rates <= 0 or NaN, always for rates >= 1; the same seed gives
        // the same train.
        let spikes = ok("spike_encode", rt.spike_encode(&rates, steps, seed))?;
        prop_assert_eq!(spikes.len(), rates.len() * steps);
        prop_assert_eq!(&spikes, &ok("spike_encode", rt.spike_encode(&rates, steps, seed))?);
        for (i, &s) in spikes.iter().enumerate() {
            let r = rates[i % rates.len()];
            prop_assert!(s == 0.0 || s == 1.0, "spike {s}");
            if r.is_nan() || r <= 0.0 {
                prop_assert_eq!(s, 0.0, "rate {} spiked", r);
            }
            if r >= 1.0 {
                prop_assert_eq!(s, 1.0, "rate {} did not spike", r);
            }
        }
        // Pattern correlation of the spike train against p templates of wlen steps.
        let nn = rates.len();
        let dims = Patterns { t: steps, n: nn, p, w: wlen };
        let templates: Vec<f32> = (0..p * wlen * nn).map(|i| ((i * 7919) % 13) as f32 - 6.0).collect();
        let got = rt.pattern_correlation(&spikes, &templates, dims);
        if wlen > steps {
            return shape_err("a window longer than the train", got);
        }
        let got = ok("pattern_correlation", got)?;
        let outs = steps - wlen + 1;
        prop_assert_eq!(got.len(), p * outs);
        for k in 0..p {
            for t in 0..outs {
                let want: f64 =
                    (0..wlen * nn).map(|j| f(templates[k * wlen * nn + j]) * f(spikes[t * nn + j])).sum();
                // Integer-valued terms: exact.
                exact("pattern_correlation", k * outs + t, got[k * outs + t], want)?;
            }
        }
        Ok(())
    });
}

/// The `bad_inputs` property on `rt`, `cases` cases.
pub fn bad_inputs(rt: &ProductionGpuRuntime, cases: u32) {
    // Lengths that do not fit the shapes, and shapes whose products overflow: every op refuses
    // them with a shape error before touching memory (never a panic or an allocation abort).
    let s = (
        0..64usize,
        0..64usize,
        1..8usize,
        huge(),
        usize::MAX / 2 + 1..=usize::MAX,
        vec(any_f32(10.0), 0..64),
    );
    check("bad_inputs", cases, s, |(r, c, off, big, past_half, x)| {
        let wrong = |len: usize| len != r * c;
        if wrong(x.len()) {
            shape_err("softmax", rt.softmax_rows(&x, r, c))?;
            shape_err("log_softmax", rt.log_softmax_rows(&x, r, c))?;
            shape_err("layer_norm", rt.layer_norm(&x, r, c, None, None, 1e-5))?;
            shape_err("rms_norm", rt.rms_norm(&x, r, c, None, 1e-5))?;
            shape_err("row_sum", rt.row_sum(&x, r, c))?;
            shape_err("row_argmax", rt.row_argmax(&x, r, c))?;
            shape_err("transpose", rt.transpose(&x, r, c))?;
            shape_err("matvec_input", rt.matvec_input(&x, &vec![1.0; c], r, c))?;
        }
        // Offsets: one operand longer or shorter than the other.
        let y = vec![1.0f32; x.len() + off];
        shape_err("add", rt.add(&x, &y))?;
        shape_err("div", rt.div(&y, &x))?;
        shape_err("axpy", rt.axpy(2.0, &x, &y))?;
        shape_err("activation_backward", rt.activation_backward(Activation::Gelu, &y, &x))?;
        if !x.is_empty() {
            shape_err("layer_norm gamma", rt.layer_norm(&x, 1, x.len(), Some(&y), None, 1e-5))?;
        }
        // Huge dimensions: products overflow or exceed what any input holds. (Where only the
        // output's size is checked, the sizes overflow: a product that fits would be allocated.)
        shape_err("softmax huge", rt.softmax_rows(&x, big, big))?;
        shape_err("softmax huge rows", rt.softmax_rows(&x, big, 2))?;
        shape_err("transpose huge", rt.transpose(&x, 3, big))?;
        shape_err("row_max huge", rt.row_max(&x, big, 3))?;
        shape_err("matmul huge", rt.matmul(&x, &x, big, big, 0))?;
        shape_err("matmul huge k", rt.matmul(&x, &x, 1, 1, big))?;
        shape_err("matmul_f64 huge", rt.matmul_f64(&[], &[], big, 3, 0))?;
        shape_err(
            "batch_norm huge",
            rt.batch_norm(&x, (big, 2, big), &[0.0; 2], &[1.0; 2], None, None, 1e-5),
        )?;
        shape_err("gemv huge", rt.gemv(Gemv::dense(big, 2), &x, &[1.0; 2], &[]))?;
        shape_err("gemv huge lda", rt.gemv(Gemv { lda: big, ..Gemv::dense(2, 1) }, &x, &[1.0], &[]))?;
        shape_err("spike_encode huge", rt.spike_encode(&[0.5; 3], past_half, 1))?;
        let p = Patterns { t: big, n: 3, p: 2, w: 1 };
        shape_err("pattern_correlation huge", rt.pattern_correlation(&x, &x, p))?;
        shape_err(
            "pattern_correlation huge p",
            rt.pattern_correlation(&[], &[], Patterns { t: 2, n: 0, p: past_half, w: 1 }),
        )?;
        shape_err("spectral_radius huge", rt.spectral_radius(ReservoirWeights::Dense(&x), big, 3, 1))?;
        let csr = Csr { row_ptr: &[0], col_idx: &[], values: &[] };
        shape_err("spectral_radius huge csr", rt.spectral_radius(ReservoirWeights::Csr(csr), big, 3, 1))?;
        let g = Gemm::new(2, 2, 2).batched(3, big, 0, 4);
        shape_err("gemm huge stride", rt.gemm(&g, &x, &x, &mut [0.0f32; 12]))?;
        shape_err("gemm huge m", rt.gemm(&Gemm::new(big, 1, 1), &x, &x, &mut [0.0f32; 4]))?;
        // Outputs past what an allocation may be (isize::MAX bytes) are errors, not aborts. (A
        // merely enormous one, say 4 TiB, is refused or not by the host's overcommit policy: with
        // overcommit it is reserved and the process dies filling it, so it is not tested.)
        refused("fill huge", rt.fill(past_half, 1.0))?;
        refused("rand_uniform huge", rt.rand_uniform(past_half, Philox::new(1)))?;
        refused("rand_normal huge", rt.rand_normal(past_half, 0.0, 1.0, Philox::new(1)))?;
        // Empty inputs give empty results.
        prop_assert!(ok("relu of nothing", rt.relu(&[]))?.is_empty());
        prop_assert!(ok("softmax of nothing", rt.softmax_rows(&[], 0, c))?.is_empty());
        prop_assert!(ok("matmul of nothing", rt.matmul(&[], &[], 0, c, 0))?.is_empty());
        Ok(())
    });
}
