//! The CPU Philox fills (`cpu::random`) and the runtime's `rand_uniform` / `rand_normal`
//! on the CPU fallback: conversions against f64 references built from the raw words (the f32
//! normal against a ziggurat in f64 built here from Marsaglia & Tsang's published constants),
//! statistics on 2^20 values (mean, variance, Kolmogorov-Smirnov, neighbour correlation) and on
//! 10^7 f32 normals (moments, chi-square against the normal CDF with tail bins, the ziggurat's
//! paths counted), determinism, prefixes and the offset advance. Seeds and offsets are fresh per
//! run, printed.

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

/// The KS bound at significance 1e-4 for `n` samples (`sqrt(-ln(alpha / 2) / 2n)`).
fn ks_bound(n: usize) -> f64 {
    (-(0.5e-4f64).ln() / (2.0 * n as f64)).sqrt()
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

/// The f32 normal's ziggurat in f64, independent of the kernel's tables: 256 layers of area `V`
/// above the base point `R` (Marsaglia & Tsang, "The ziggurat method for generating random
/// variables", J. Stat. Softw. 5(8), 2000, the constants of their 256-layer generator), the layer
/// edges by their recurrence `x_{i+1} = f^-1(v / x_i + f(x_i))`, `f(x) = exp(-x^2 / 2)`.
struct Ziggurat {
    /// `x_0 = v / f(r)`, `x_1 = r`, ..., `x_256 = 0`.
    x: Vec<f64>,
}

const R: f64 = 3.654_152_885_361_009;
const V: f64 = 4.928_673_233_99e-3;

/// Which way a word went.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Path {
    Fast,
    Wedge,
    Tail,
}

impl Ziggurat {
    fn new() -> Self {
        let f = |x: f64| (-x * x / 2.0).exp();
        let mut x = vec![V / f(R), R];
        while x.len() < 256 {
            let last = x[x.len() - 1];
            x.push((-2.0 * (V / last + f(last)).ln()).sqrt());
        }
        x.push(0.0);
        Ziggurat { x }
    }

    /// A word's layer, sign (+1 or -1) and fraction in [0, 1): bits 0-7, bit 8, bits 9-31.
    fn split(w: u32) -> (usize, f64, f64) {
        let sign = if w >> 8 & 1 == 1 { -1.0 } else { 1.0 };
        ((w & 255) as usize, sign, f64::from(w >> 9) / f64::from(1u32 << 23))
    }

    /// The path of a main-stream word.
    fn path(&self, w: u32) -> Path {
        let (layer, _, u) = Self::split(w);
        if u < self.x[layer + 1] / self.x[layer] {
            Path::Fast
        } else if layer == 0 {
            Path::Tail
        } else {
            Path::Wedge
        }
    }

    /// Element `e`'s standard normal of the block at `counter` whose word is `w`, in f64: the fast
    /// path, or the retry blocks `(counter[0..3], 4t + e)`, t = 1, 2, ...: a wedge's height from
    /// word 0's top 24 bits (uniform in [0, 1)) and the next word from word 1; a tail round's u1,
    /// u2 from words 0 and 1 (top 24 bits plus one, in (0, 1]). `None` when a decision is too
    /// close to call in f32 (within 1e-5 relative), so the f32 code may take either way.
    fn normal(&self, counter: [u32; 4], key: [u32; 2], e: u32, w: u32) -> Option<f64> {
        let f = |x: f64| (-x * x / 2.0).exp();
        let (mut layer, sign, mut u) = Self::split(w);
        let mut t = 1;
        loop {
            let x = u * self.x[layer];
            let edge = self.x[layer + 1] / self.x[layer];
            if (u - edge).abs() < 1e-6 {
                return None;
            }
            if u < edge {
                return Some(sign * x);
            }
            let mut next = || {
                let b = philox::philox4x32_10([counter[0], counter[1], counter[2], 4 * t + e], key);
                t += 1;
                b
            };
            if layer == 0 {
                loop {
                    let b = next();
                    let unit = |w: u32| (f64::from(w >> 8) + 1.0) / 16_777_216.0;
                    let (xt, y2) = (-unit(b[0]).ln() / R, -2.0 * unit(b[1]).ln());
                    if (y2 - xt * xt).abs() < 1e-5 * y2.max(1e-3) {
                        return None;
                    }
                    if y2 > xt * xt {
                        return Some(sign * (R + xt));
                    }
                }
            }
            let b = next();
            let (lo, hi) = (f(self.x[layer]), f(self.x[layer + 1]));
            let y = lo + f64::from(b[0] >> 8) / 16_777_216.0 * (hi - lo);
            if (y - f(x)).abs() < 1e-5 * f(x) {
                return None;
            }
            if y < f(x) {
                return Some(sign * x);
            }
            (layer, _, u) = Self::split(b[1]);
        }
    }
}

/// The counter of block `b` of the fill at `at`, as four little-endian words.
fn counter(at: Philox, b: u64) -> [u32; 4] {
    let c = u128::from(at.offset) + u128::from(b);
    [c as u32, (c >> 32) as u32, (c >> 64) as u32, (c >> 96) as u32]
}

#[test]
fn normal_is_a_ziggurat_on_each_word() {
    let at = fresh("normal_ziggurat");
    let (n, mean, std) = ((1 << 18) + 3, -1.25f32, 2.5f32);
    let mut z = vec![f32::NAN; n];
    philox::normal_f32(&mut z, at, mean, std, false);
    let mut ln = vec![f32::NAN; n];
    philox::normal_f32(&mut ln, at, mean, std, true);
    let w = words(n, at);
    let zig = Ziggurat::new();
    let key = [at.seed as u32, (at.seed >> 32) as u32];
    let mut paths = [0usize; 3];
    let mut too_close = 0;
    for i in 0..n {
        let path = zig.path(w[i]);
        paths[path as usize] += 1;
        let Some(zi) = zig.normal(counter(at, (i / 4) as u64), key, (i % 4) as u32, w[i]) else {
            too_close += 1;
            continue;
        };
        let want = f64::from(mean) + f64::from(std) * zi;
        // f32 arithmetic: the value j W (two roundings) or the tail's r + (-2 ln u1) / 2r (a few),
        // scaled by std, and one rounding of mean + std z.
        let eps = f64::from(f32::EPSILON);
        let tol = 2.0 * eps * want.abs() + 8.0 * eps * f64::from(std) * zi.abs().max(1e-30) + 1e-37;
        assert!(
            (f64::from(z[i]) - want).abs() <= tol,
            "normal {i} ({path:?}, word {:#010x}): {} vs {want} (tolerance {tol:.2e})",
            w[i],
            z[i]
        );
        let want_ln = want.exp();
        assert!((f64::from(ln[i]) - want_ln).abs() <= (tol + 2.0 * eps) * want_ln, "log-normal {i}");
    }
    eprintln!("paths: fast {} wedge {} tail {}; {too_close} too close to call", paths[0], paths[1], paths[2]);
    // Expected: wedge 1.47% (3800), tail 0.026% (67).
    assert!(paths[1] > 3000 && paths[2] > 30, "the slow paths ran: {paths:?}");
    assert!(too_close < 10, "{too_close} decisions too close to call");
}

/// Moments, a chi-square over bins reaching into the tails, and the ziggurat's paths on 10^7
/// f32 normals against the standard normal.
#[test]
fn normal_f32_statistics_on_ten_million() {
    let at = fresh("normal_f32_ten_million");
    let n = 10_000_001;
    let mut z = vec![f32::NAN; n];
    philox::normal_f32(&mut z, at, 0.0, 1.0, false);
    let nf = n as f64;
    let mut m = [0.0f64; 4];
    for &v in &z {
        let v = f64::from(v);
        m[0] += v;
    }
    let mean = m[0] / nf;
    for &v in &z {
        let d = f64::from(v) - mean;
        m[1] += d * d;
        m[2] += d * d * d;
        m[3] += d * d * d * d;
    }
    let var = m[1] / nf;
    let skew = m[2] / nf / var.powf(1.5);
    let kurt = m[3] / nf / (var * var) - 3.0;
    eprintln!("mean {mean:.2e} variance {var:.6} skewness {skew:.2e} excess kurtosis {kurt:.2e}");
    // Five standard errors: 1/sqrt(n), sqrt(2/n), sqrt(6/n), sqrt(24/n).
    let se = |k: f64| 5.0 * (k / nf).sqrt();
    assert!(mean.abs() < se(1.0), "mean {mean}");
    assert!((var - 1.0).abs() < se(2.0), "variance {var}");
    assert!(skew.abs() < se(6.0), "skewness {skew}");
    assert!(kurt.abs() < se(24.0), "excess kurtosis {kurt}");

    // Chi-square: (-inf, -4.5], (-4.5, -4], (-4, -3.5], (-3.5, -3], steps of 0.1 to 3, then the
    // mirror image. The outer bins expect 34 and 285 values, so the tails are tested too.
    let mut edges = vec![-4.5, -4.0, -3.5];
    edges.extend((0..=60).map(|k| -3.0 + 0.1 * f64::from(k)));
    edges.extend([3.5, 4.0, 4.5]);
    let mut counts = vec![0u64; edges.len() + 1];
    for &v in &z {
        counts[edges.partition_point(|&e| e < f64::from(v))] += 1;
    }
    let cdf = |k: usize| {
        if k == 0 {
            0.0
        } else if k > edges.len() {
            1.0
        } else {
            normal_cdf(edges[k - 1])
        }
    };
    let chi2: f64 = (0..counts.len())
        .map(|k| {
            let expect = nf * (cdf(k + 1) - cdf(k));
            (counts[k] as f64 - expect).powi(2) / expect
        })
        .sum();
    // Wilson-Hilferty's quantile at 1 - 1e-4 (z = 3.719).
    let df = (counts.len() - 1) as f64;
    let bound = df * (1.0 - 2.0 / (9.0 * df) + 3.719 * (2.0 / (9.0 * df)).sqrt()).powi(3);
    let beyond = |c: f64| z.iter().filter(|v| f64::from(v.abs()) > c).count();
    eprintln!(
        "chi-square {chi2:.1} over {} bins (bound {bound:.1}); |z| > 3: {}, > 4: {}, > 4.5: {}, largest {}",
        counts.len(),
        beyond(3.0),
        beyond(4.0),
        beyond(4.5),
        z.iter().fold(0.0f32, |a, v| a.max(v.abs()))
    );
    assert!(chi2 < bound, "chi-square {chi2} over {} bins (bound {bound})", counts.len());
    for c in [3.0, 4.0, 4.5] {
        let p = 2.0 * normal_cdf(-c);
        let (got, want) = (beyond(c) as f64, nf * p);
        assert!((got - want).abs() < 5.0 * want.sqrt(), "|z| > {c}: {got} vs {want:.0}");
    }

    // The paths the main-stream words take, against the ziggurat's areas.
    let zig = Ziggurat::new();
    let mut paths = [0usize; 3];
    for w in words(n, at) {
        paths[zig.path(w) as usize] += 1;
    }
    let edge = |i: usize| zig.x[i + 1] / zig.x[i];
    let p_tail = (1.0 - edge(0)) / 256.0;
    let p_wedge = (1..256).map(|i| 1.0 - edge(i)).sum::<f64>() / 256.0;
    eprintln!(
        "paths: fast {} wedge {} tail {} (expected wedge {:.0}, tail {:.0})",
        paths[0],
        paths[1],
        paths[2],
        nf * p_wedge,
        nf * p_tail
    );
    for (got, p) in [(paths[1], p_wedge), (paths[2], p_tail)] {
        assert!((got as f64 - nf * p).abs() < 5.0 * (nf * p).sqrt(), "path count {got} vs {:.0}", nf * p);
    }

    // The checksum notes/philox-normal prints for the kernel's fill at seed 42, offset 7,
    // N(0.5, 2^2): FNV-1a (64 bits) over the first 2^20 values' bit patterns, little-endian.
    let mut first = vec![f32::NAN; 1 << 20];
    philox::normal_f32(&mut first, Philox { seed: 42, offset: 7 }, 0.5, 2.0, false);
    let checksum = first
        .iter()
        .flat_map(|v| v.to_bits().to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3));
    eprintln!("checksum of the first 2^20 f32 normals at seed 42, offset 7, N(0.5, 4): {checksum:#018x}");
    assert!(first.iter().all(|v| v.is_finite()));
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
