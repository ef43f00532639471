//! The CPU Philox fills (`cpu::random`) and the runtime's `rand_uniform` / `rand_normal`
//! on the CPU fallback: conversions against f64 references built from the raw words,
//! statistics on 2^20 values (mean, variance, Kolmogorov-Smirnov, neighbour correlation),
//! determinism, prefixes and the offset advance. Seeds and offsets are fresh per run, printed.

use prism_gpu::ops::random::Philox;
use prism_gpu::raw::cpu::random as philox;
use prism_gpu::rng::SplitMix64;
use prism_gpu::ProductionGpuRuntime;

const N: usize = 1 << 20;

fn fresh(test: &str) -> Philox {
    let mut rng = SplitMix64::from_time();
    let at = Philox { seed: rng.next_u64(), offset: rng.next_u64() >> 8 };
    eprintln!("{test}: {at:?}");
    at
}

fn uniform_f32(n: usize, at: Philox) -> Vec<f32> {
    let mut v = vec![f32::NAN; n];
    philox::uniform_f32(&mut v, at);
    v
}

fn words(n: usize, at: Philox) -> Vec<u32> {
    let mut v = vec![0xdead_beef; n];
    philox::bits_u32(&mut v, at);
    v
}

/// Mean and (population) variance in f64.
fn moments(x: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = x.clone().count() as f64;
    let mean = x.clone().sum::<f64>() / n;
    (mean, x.map(|v| (v - mean).powi(2)).sum::<f64>() / n)
}

/// Kolmogorov-Smirnov statistic of `x` against the continuous CDF `cdf`.
fn ks(x: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let mut s = x.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len() as f64;
    s.iter().enumerate().fold(0.0, |d: f64, (i, &v)| {
        let f = cdf(v);
        d.max((f - i as f64 / n).abs()).max(((i + 1) as f64 / n - f).abs())
    })
}

/// The KS bound at significance 1e-7 for `n` samples (`sqrt(-ln(alpha / 2) / 2n)`): 0.0028 at 2^20.
/// A fresh seed every run makes the significance the rate of false failures; at 1e-4 one check of
/// several in the suite failed on a sound generator (f64 normals, distance 0.00227 against 0.00217,
/// p about 4e-5: 60 further seeds gave the null distribution). A biased generator's distance does
/// not shrink with n, so any bias above the bound still fails every run.
fn ks_bound(n: usize) -> f64 {
    (-(0.5e-7f64).ln() / (2.0 * n as f64)).sqrt()
}

/// Pearson correlation of neighbours `x[i]`, `x[i + 1]`.
fn neighbour_correlation(x: &[f64]) -> f64 {
    let (m, v) = moments(x.iter().copied());
    let c = x.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum::<f64>() / (x.len() - 1) as f64;
    c / v
}

/// The standard normal CDF through erfc (W. J. Cody's rational approximations are not needed at
/// KS resolution: Numerical Recipes' erfc, relative error below 1.2e-7).
fn normal_cdf(z: f64) -> f64 {
    let x = -z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let poly = -x * x - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    0.5 * if x >= 0.0 { erfc } else { 2.0 - erfc }
}

#[test]
fn uniform_f32_is_the_top_24_bits_plus_one_in_0_1() {
    let at = fresh("uniform_f32");
    let (u, w) = (uniform_f32(4099, at), words(4099, at));
    for (i, (&u, &w)) in u.iter().zip(&w).enumerate() {
        let want = (f64::from(w >> 8) + 1.0) / 16_777_216.0;
        assert_eq!(f64::from(u), want, "element {i}");
        assert!(u > 0.0 && u <= 1.0);
    }
    let mut d = vec![f64::NAN; 4099];
    philox::uniform_f64(&mut d, at);
    let mut q = vec![0u64; 4099];
    philox::bits_u64(&mut q, at);
    let w = words(2 * 4099, at);
    for (i, (&d, &q)) in d.iter().zip(&q).enumerate() {
        assert_eq!(q, u64::from(w[2 * i]) | u64::from(w[2 * i + 1]) << 32, "u64 {i}");
        assert_eq!(d, ((q >> 11) + 1) as f64 / (1u64 << 53) as f64, "f64 {i}");
        assert!(d > 0.0 && d <= 1.0);
    }
}

#[test]
fn uniform_statistics() {
    let at = fresh("uniform_statistics");
    let x: Vec<f64> = uniform_f32(N, at).into_iter().map(f64::from).collect();
    let (mean, var) = moments(x.iter().copied());
    // Standard errors: 0.29 / sqrt(N) = 2.8e-4 for the mean, 0.075 / sqrt(N) for the variance.
    assert!((mean - 0.5).abs() < 1.5e-3, "mean {mean}");
    assert!((var - 1.0 / 12.0).abs() < 4e-4, "variance {var}");
    let d = ks(&x, |v| v.clamp(0.0, 1.0));
    assert!(d < ks_bound(N), "KS {d} (bound {})", ks_bound(N));
    let r = neighbour_correlation(&x);
    assert!(r.abs() < 5.0 / (N as f64).sqrt(), "neighbour correlation {r}");
    // Every bit of the raw words is set half the time.
    let w = words(N, at);
    for bit in 0..32 {
        let ones = w.iter().filter(|&&v| v >> bit & 1 == 1).count() as f64 / N as f64;
        assert!((ones - 0.5).abs() < 5e-3, "bit {bit}: {ones}");
    }
}

#[test]
fn normal_is_box_muller_on_the_word_pairs() {
    let at = fresh("normal_box_muller");
    let (n, mean, std) = (4097, -1.25f32, 2.5f32);
    let mut z = vec![f32::NAN; n];
    philox::normal_f32(&mut z, at, mean, std, false);
    let mut ln = vec![f32::NAN; n];
    philox::normal_f32(&mut ln, at, mean, std, true);
    let w = words(n + 1, at);
    for i in 0..n {
        let pair = i & !1;
        // The top 24 bits of each word: u = (bits + 1) 2^-24 in (0, 1], turns = bits 2^-24.
        let top = |w: u32| f64::from(w >> 8) / 16_777_216.0;
        let r = (-2.0 * (top(w[pair]) + 1.0 / 16_777_216.0).ln()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * top(w[pair + 1]);
        let zi = if i % 2 == 0 { r * theta.cos() } else { r * theta.sin() };
        let want = f64::from(mean) + f64::from(std) * zi;
        // f32 arithmetic: a few roundings of the radius and of the angle's sine / cosine (scaled
        // by std * r), one of the result.
        let eps = f64::from(f32::EPSILON);
        let tol = 2.0 * eps * want.abs() + 6.0 * eps * f64::from(std) * r;
        assert!(
            (f64::from(z[i]) - want).abs() <= tol,
            "normal {i}: {} vs {want} (tolerance {tol:.2e})",
            z[i]
        );
        let want_ln = want.exp();
        assert!((f64::from(ln[i]) - want_ln).abs() <= (tol + 2.0 * eps) * want_ln, "log-normal {i}");
    }
}

#[test]
fn normal_statistics() {
    let at = fresh("normal_statistics");
    for n in [N, N + 1] {
        let mut z = vec![f32::NAN; n];
        philox::normal_f32(&mut z, at, 0.0, 1.0, false);
        let x: Vec<f64> = z.iter().map(|&v| f64::from(v)).collect();
        let (mean, var) = moments(x.iter().copied());
        assert!(mean.abs() < 5e-3, "mean {mean}");
        assert!((var - 1.0).abs() < 7e-3, "variance {var}");
        let d = ks(&x, normal_cdf);
        assert!(d < ks_bound(n), "KS {d} (bound {})", ks_bound(n));
        let r = neighbour_correlation(&x);
        assert!(r.abs() < 5.0 / (n as f64).sqrt(), "neighbour correlation {r}");
    }
    let mut d = vec![f64::NAN; N - 1];
    philox::normal_f64(&mut d, at, 3.0, 0.5, false);
    let (mean, var) = moments(d.iter().copied());
    assert!((mean - 3.0).abs() < 2.5e-3 && (var - 0.25).abs() < 2e-3, "f64: mean {mean}, variance {var}");
    assert!(ks(&d, |v| normal_cdf((v - 3.0) / 0.5)) < ks_bound(N - 1));
    philox::normal_f64(&mut d, at, 3.0, 0.5, true);
    let (mean, var) = moments(d.iter().map(|v| v.ln()));
    assert!((mean - 3.0).abs() < 2.5e-3 && (var - 0.25).abs() < 2e-3, "log-normal f64: {mean}, {var}");
}

#[test]
fn fills_are_deterministic_prefixes_and_the_offset_advances() {
    let at = fresh("determinism");
    let long = uniform_f32(1003, at);
    assert_eq!(uniform_f32(1003, at), long);
    // Element i depends only on (seed, offset, i): shorter fills are prefixes, at any length.
    for n in [1, 2, 3, 5, 998] {
        assert_eq!(uniform_f32(n, at), long[..n]);
        let (mut a, mut b) = (vec![f32::NAN; n], vec![f32::NAN; n + 1]);
        philox::normal_f32(&mut a, at, 0.0, 1.0, false);
        philox::normal_f32(&mut b, at, 0.0, 1.0, false);
        assert_eq!(a, b[..n], "odd-length normal {n}");
    }
    // A fill of 10 consumes 3 blocks: the next fill continues at element 12.
    let next = at.after::<f32>(10);
    assert_eq!(next, Philox { seed: at.seed, offset: at.offset + 3 });
    assert_eq!(uniform_f32(20, next), long[12..32]);
    assert_ne!(uniform_f32(20, next), uniform_f32(20, at));
    // Another seed gives other numbers.
    assert_ne!(uniform_f32(16, Philox { seed: at.seed ^ 1, ..at }), long[..16]);
}

#[test]
fn the_runtime_fallback_fills_from_the_cpu_philox() {
    let at = fresh("runtime");
    let rt = ProductionGpuRuntime::cpu();
    assert_eq!(rt.rand_uniform(1001, at).unwrap(), uniform_f32(1001, at));
    let mut want = vec![f32::NAN; 1001];
    philox::normal_f32(&mut want, at, 0.5, 2.0, false);
    assert_eq!(rt.rand_normal(1001, 0.5, 2.0, at).unwrap(), want);
    assert!(rt.rand_uniform(0, at).unwrap().is_empty());
}
