//! The Philox kernel (`cuda/random.cu`) and `prism_gpu::curand` on a GPU against the CPU Philox
//! (`cpu::random`): uniform values, bits and f32 normals bit for bit,
//! f64 normals within 4 ulp, odd lengths and lengths that are not multiples of 4, unaligned
//! views, a counter that carries past 2^64, outputs poisoned first. Run on a machine with a CUDA
//! GPU: `cargo test --release --test random_gpu -- --include-ignored`.
#![cfg(all(feature = "curand", not(feature = "legacy-gpu")))] // prism_gpu::curand is our engine's

use prism_gpu::curand::CudaRng;
use prism_gpu::driver::{CudaContext, CudaSlice, CudaStream, DeviceRepr};
use prism_gpu::ops::random::{Normal, NormalElement, Philox};
use prism_gpu::raw::cpu::random as cpu;
use prism_gpu::raw::kernels::random;
use prism_gpu::raw::kernels::Kernels;
use prism_gpu::rng::SplitMix64;
use prism_gpu::ProductionGpuRuntime;
use std::sync::Arc;

const LENGTHS: [usize; 8] = [1, 2, 3, 5, 7, 4097, 65_538, 1_000_003];

fn setup() -> (Arc<CudaStream>, Kernels) {
    let ctx = CudaContext::new(0).expect("a usable CUDA GPU");
    (ctx.default_stream(), Kernels::new(ctx).unwrap())
}

fn fresh(test: &str) -> Philox {
    let mut rng = SplitMix64::from_time();
    let at = Philox { seed: rng.next_u64(), offset: rng.next_u64() };
    eprintln!("{test}: {at:?}");
    at
}

fn poisoned<T: DeviceRepr + Copy>(s: &Arc<CudaStream>, n: usize, poison: T) -> CudaSlice<T> {
    s.clone_htod(&vec![poison; n]).unwrap()
}

/// Distance in units in the last place between two finite f64 of one sign (0 and -0 equal).
/// The GPU's normal (`log`: log-normal) fill of `N(mean, std^2)` at `at` into a buffer poisoned
/// with `nan`, as long as `want` (the CPU's), each element `close` to the CPU's.
fn normal_matches<T: NormalElement + Copy + std::fmt::Display>(
    (s, k): (&Arc<CudaStream>, &Kernels),
    at: Philox,
    (log, mean, std): (bool, T, T),
    (nan, want): (T, &[T]),
    close: impl Fn(T, T) -> bool,
    what: &str,
) {
    let draw = if log { Normal::LogNormal { mean, std } } else { Normal::Normal { mean, std } };
    let mut g = poisoned(s, want.len(), nan);
    random::normal(k, s, &mut g.as_view_mut(), at, draw).unwrap();
    for (i, (&a, &b)) in s.clone_dtoh(&g).unwrap().iter().zip(want).enumerate() {
        assert!(close(a, b), "{what} [{i}]: {a} vs {b}");
    }
}

fn ulps_f64(a: f64, b: f64) -> u64 {
    if a == b {
        return 0;
    }
    let key =
        |x: f64| if x.is_sign_negative() { -((x.abs().to_bits()) as i128) } else { x.to_bits() as i128 };
    key(a).abs_diff(key(b)) as u64
}

/// Whether log-normal values `got = exp(x')` and `want = exp(x)` agree as far as their normals may:
/// `x` and `x'` within `ulps` ulp (`ulp(x) <= eps |x|`) plus one rounding of each `exp`. An
/// error of `d` in `x` is a relative error of `d` in `exp(x)`, which is many ulp of the result
/// when `|x|` is large, so an ulp bound on the results themselves would be wrong.
fn log_normal_close(got: f64, want: f64, ulps: u32, eps: f64) -> bool {
    let x = want.ln();
    let relative = f64::from(ulps) * eps * x.abs() + 2.0 * eps;
    (got - want).abs() <= relative * want
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn uniform_and_bits_equal_the_cpu_bit_for_bit() {
    let (s, k) = setup();
    let mut at = fresh("uniform");
    for n in LENGTHS {
        let mut g = poisoned(&s, n, f32::NAN);
        let next = random::uniform(&k, &s, &mut g.as_view_mut(), at).unwrap();
        let mut want = vec![f32::NAN; n];
        cpu::uniform_f32(&mut want, at);
        let got = s.clone_dtoh(&g).unwrap();
        assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "f32 n {n}");

        let mut g = poisoned(&s, n, f64::NAN);
        random::uniform(&k, &s, &mut g.as_view_mut(), at).unwrap();
        let mut want = vec![f64::NAN; n];
        cpu::uniform_f64(&mut want, at);
        assert!(
            s.clone_dtoh(&g).unwrap().iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()),
            "f64 n {n}"
        );

        let mut g = poisoned(&s, n, 0u32);
        random::uniform(&k, &s, &mut g.as_view_mut(), at).unwrap();
        let mut want = vec![0u32; n];
        cpu::bits_u32(&mut want, at);
        assert_eq!(s.clone_dtoh(&g).unwrap(), want, "u32 n {n}");

        let mut g = poisoned(&s, n, 0u64);
        random::uniform(&k, &s, &mut g.as_view_mut(), at).unwrap();
        let mut want = vec![0u64; n];
        cpu::bits_u64(&mut want, at);
        assert_eq!(s.clone_dtoh(&g).unwrap(), want, "u64 n {n}");
        at = next;
    }
    // A counter that carries past 2^64, and an unaligned view (scalar stores).
    let at = Philox { seed: at.seed, offset: u64::MAX - 3 };
    let mut g = poisoned(&s, 1001, f32::NAN);
    random::uniform(&k, &s, &mut g.slice_mut(1..1000), at).unwrap();
    let mut want = vec![f32::NAN; 999];
    cpu::uniform_f32(&mut want, at);
    let got = s.clone_dtoh(&g).unwrap();
    assert!(got[0].is_nan() && got[1000].is_nan(), "writes stay inside the view");
    assert!(got[1..1000].iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "unaligned view");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn normals_equal_the_cpu() {
    let (s, k) = setup();
    let at = fresh("normal");
    for n in LENGTHS {
        for (log, mean, std) in [(false, 0.0f32, 1.0f32), (true, 0.25, 0.75)] {
            let mut want = vec![f32::NAN; n];
            cpu::normal_f32(&mut want, at, mean, std, log);
            // f32 normals are the same IEEE operations on both sides: bit for bit. The log-normal
            // exponentiates with each side's own f64 exp.
            let close = |a: f32, b: f32| {
                let eps = f64::from(f32::EPSILON);
                a.is_finite()
                    && if log {
                        log_normal_close(a.into(), b.into(), 0, eps)
                    } else {
                        a.to_bits() == b.to_bits()
                    }
            };
            let what = format!("f32 log {log} n {n}");
            normal_matches((&s, &k), at, (log, mean, std), (f32::NAN, &want), close, &what);
            let (mean, std) = (f64::from(mean), f64::from(std));
            let mut want = vec![f64::NAN; n];
            cpu::normal_f64(&mut want, at, mean, std, log);
            let close = |a: f64, b: f64| {
                a.is_finite()
                    && if log { log_normal_close(a, b, 4, f64::EPSILON) } else { ulps_f64(a, b) <= 4 }
            };
            let what = format!("f64 log {log} n {n}");
            normal_matches((&s, &k), at, (log, mean, std), (f64::NAN, &want), close, &what);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_rng_behaves_as_cudarc_callers_expect() {
    let (s, _) = setup();
    let seed = fresh("cuda_rng").seed;
    let mut rng = CudaRng::new(seed, s.clone()).unwrap();
    let mut a = poisoned(&s, 1001, f32::NAN);
    rng.fill_with_uniform(&mut a).unwrap();
    let first = s.clone_dtoh(&a).unwrap();
    assert!(first.iter().all(|&u| u > 0.0 && u <= 1.0));
    let mut want = vec![f32::NAN; 1001];
    cpu::uniform_f32(&mut want, Philox::new(seed));
    assert_eq!(first, want);
    // Consecutive fills differ: the second starts where the first ended.
    rng.fill_with_uniform(&mut a).unwrap();
    cpu::uniform_f32(&mut want, Philox::new(seed).after::<f32>(1001));
    assert_eq!(s.clone_dtoh(&a).unwrap(), want);
    // set_seed + set_offset(0) replays.
    rng.set_seed(seed).unwrap();
    rng.set_offset(0).unwrap();
    rng.fill_with_uniform(&mut a).unwrap();
    assert_eq!(s.clone_dtoh(&a).unwrap(), first);

    let mut bits = poisoned(&s, 999, 0u32);
    rng.fill_with_uniform(&mut bits).unwrap();
    assert!(s.clone_dtoh(&bits).unwrap().iter().any(|&w| w != 0), "u32 not all zero");
    let mut wide = poisoned(&s, 999, 0u64);
    rng.fill_with_uniform(&mut wide).unwrap();
    assert!(s.clone_dtoh(&wide).unwrap().iter().any(|&w| w >> 32 != 0));

    // Odd-length normals (cuRAND refuses them), in views too.
    let mut z = poisoned(&s, 1001, f64::NAN);
    rng.fill_with_normal(&mut z, -1.0, 2.0).unwrap();
    rng.fill_with_log_normal(&mut z.slice_mut(3..10), 0.0, 1.0).unwrap();
    let z = s.clone_dtoh(&z).unwrap();
    assert!(z.iter().all(|v| v.is_finite()) && z[3..10].iter().all(|&v| v > 0.0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn runtime_fills_equal_the_fallback() {
    let gpu = ProductionGpuRuntime::with_device(0).expect("a usable CUDA GPU");
    let cpu = ProductionGpuRuntime::cpu();
    let at = fresh("runtime");
    for n in [1, 6, 4099, 1_000_003] {
        assert_eq!(gpu.rand_uniform(n, at).unwrap(), cpu.rand_uniform(n, at).unwrap(), "uniform n {n}");
        let (g, c) = (gpu.rand_normal(n, 0.5, 3.0, at).unwrap(), cpu.rand_normal(n, 0.5, 3.0, at).unwrap());
        assert!(g.iter().zip(&c).all(|(a, b)| a.to_bits() == b.to_bits()), "normal n {n}");
    }
}
