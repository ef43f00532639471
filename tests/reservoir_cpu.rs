//! `prism_gpu::reservoir` on the CPU fallback against f64 references written in the tests: states,
//! the ridge readout, the spectral radius of the built matrix, a leak-1 reservoir without input,
//! and the errors for bad configurations and inputs.

mod reservoir_common;

use prism_gpu::ops::activations::Activation;
use prism_gpu::reservoir::{mackey_glass, narma10, GpuReservoirComputer, ReservoirConfig};
use prism_gpu::ProductionGpuRuntime;
use reservoir_common::*;

fn small(seed: u64, connection_prob: f32) -> ReservoirConfig {
    ReservoirConfig {
        size: 37,
        input_size: 3,
        spectral_radius: 0.9,
        connection_prob,
        leak_rate: 0.7,
        input_scaling: 0.8,
        input_connectivity: 0.6,
        bias: 0.3,
        ridge: 1e-2,
        warmup: 11,
        seed,
        activation: Activation::Tanh,
    }
}

#[test]
fn states_match_an_f64_reference_dense_and_sparse() {
    let (mut rng, seed) = fresh();
    for p in [0.5, 0.1] {
        let mut esn = GpuReservoirComputer::with_runtime(small(seed, p), cpu()).unwrap();
        let inputs = rng.vec(3 * 53, -1.0, 1.0);
        let mut got = vec![f32::NAN; 37 * 53];
        got.copy_from_slice(&esn.process(&inputs).unwrap());
        let want = states(&esn, &inputs, &[0.0; 37]);
        let err = max_scaled_error(&got, &want, 1.0);
        assert!(err < 1e-5, "p {p}: states off by {err:e}");
        assert!(want.iter().any(|v| v.abs() > 0.1), "states are not trivially small");
        // The state carries on from where process left it.
        let more = rng.vec(3 * 5, -1.0, 1.0);
        let x0: Vec<f64> = got[52 * 37..].iter().map(|&v| f64::from(v)).collect();
        let err = max_scaled_error(&esn.process(&more).unwrap(), &states(&esn, &more, &x0), 1.0);
        assert!(err < 1e-5, "p {p}: continued states off by {err:e}");
    }
}

#[test]
fn ridge_readout_matches_an_f64_reference() {
    let (mut rng, seed) = fresh();
    for p in [0.4, 0.15] {
        let config = small(seed, p);
        let steps = 301; // more than one chunk of 256 steps, warmup across nothing else
        let inputs = rng.vec(3 * steps, -1.0, 1.0);
        let targets = rng.vec(2 * steps, -2.0, 2.0);
        let mut twin = GpuReservoirComputer::with_runtime(config.clone(), cpu()).unwrap();
        let x: Vec<f64> = twin.process(&inputs).unwrap().iter().map(|&v| f64::from(v)).collect();
        let want = ridge_readout(&inputs, &x, &targets, 3, 37, config.warmup, config.ridge);
        let mut esn = GpuReservoirComputer::with_runtime(config, cpu()).unwrap();
        esn.fit(&inputs, &targets).unwrap();
        let got = esn.readout().unwrap();
        let err = max_scaled_error(got, &want, max_abs(&want, 1e-3));
        assert!(err < 1e-5, "p {p}: readout off by {err:e} of its largest weight");
        // predict = W_out [1; u; x] on the continuing states.
        let more = rng.vec(3 * 7, -1.0, 1.0);
        let xs = twin.process(&more).unwrap();
        let pred = esn.predict(&more).unwrap();
        for t in 0..7 {
            for o in 0..2 {
                let row = &want[o * 41..(o + 1) * 41];
                let mut y = row[0];
                y += (0..3).map(|i| row[1 + i] * f64::from(more[t * 3 + i])).sum::<f64>();
                y += (0..37).map(|i| row[4 + i] * f64::from(xs[t * 37 + i])).sum::<f64>();
                let scale = row.iter().map(|w| w.abs()).sum::<f64>();
                let e = (f64::from(pred[t * 2 + o]) - y).abs() / scale;
                assert!(e < 1e-5, "p {p}: prediction {t},{o} off by {e:e}");
            }
        }
    }
}

#[test]
fn generate_feeds_the_output_back() {
    let (mut rng, seed) = fresh();
    let config = ReservoirConfig { input_size: 1, ..small(seed, 0.3) };
    let inputs = rng.vec(201, -1.0, 1.0);
    let mut esn = GpuReservoirComputer::with_runtime(config.clone(), cpu()).unwrap();
    free_run_matches(&mut esn, &inputs, 6, "free run");
}

#[test]
fn spectral_radius_is_the_configured_one() {
    let (_, seed) = fresh();
    for (n, p, rho) in [(97, 0.3, 0.9), (151, 0.05, 1.25)] {
        let config = ReservoirConfig { size: n, connection_prob: p, spectral_radius: rho, ..small(seed, p) };
        let esn = GpuReservoirComputer::with_runtime(config, cpu()).unwrap();
        assert_eq!(matches!(esn.recurrent(), prism_gpu::reservoir::Recurrent::Sparse { .. }), p < 0.2);
        let got = spectral_radius(&dense(esn.recurrent(), n), n, 1500, 6000, seed ^ 1);
        let err = (got - f64::from(rho)).abs();
        assert!(err < 1e-3, "n {n} p {p}: spectral radius {got} for {rho} (error {err:e})");
    }
}

#[test]
fn leak_one_without_input_decays() {
    let (mut rng, seed) = fresh();
    let config = ReservoirConfig { leak_rate: 1.0, bias: 0.0, spectral_radius: 0.6, ..small(seed, 0.3) };
    let mut esn = GpuReservoirComputer::with_runtime(config, cpu()).unwrap();
    // One pulse, then silence: x(t) = tanh(W x(t-1)) exactly, shrinking to 0.
    let mut inputs = rng.vec(3, 0.5, 1.0);
    inputs.extend(vec![0.0; 3 * 300]);
    let got = esn.process(&inputs).unwrap();
    let want = states(&esn, &inputs, &[0.0; 37]);
    assert!(max_scaled_error(&got, &want, 1.0) < 1e-6);
    let norm = |t: usize| got[t * 37..(t + 1) * 37].iter().map(|v| f64::from(*v).powi(2)).sum::<f64>().sqrt();
    assert!(norm(0) > 0.1, "the pulse moved the state ({})", norm(0));
    assert!(
        norm(300) < 1e-6 * norm(0),
        "after 300 silent steps the norm is {:e} of {:e}",
        norm(300),
        norm(0)
    );
    // With leak 1 the first state forgets nothing but has no past: tanh(W_in [0; u]).
    let w_in = esn.input_weights();
    for i in 0..37 {
        let s: f64 = (0..3).map(|j| f64::from(w_in[i * 4 + 1 + j]) * f64::from(inputs[j])).sum();
        assert!((f64::from(got[i]) - s.tanh()).abs() < 1e-6);
    }
}

#[test]
fn the_same_seed_builds_the_same_reservoir() {
    let (_, seed) = fresh();
    let a = GpuReservoirComputer::with_runtime(small(seed, 0.1), cpu()).unwrap();
    let b = GpuReservoirComputer::with_runtime(small(seed, 0.1), cpu()).unwrap();
    let c = GpuReservoirComputer::with_runtime(small(seed ^ 1, 0.1), cpu()).unwrap();
    assert_eq!(dense(a.recurrent(), 37), dense(b.recurrent(), 37));
    assert_eq!(a.input_weights(), b.input_weights());
    assert_ne!(dense(a.recurrent(), 37), dense(c.recurrent(), 37));
}

#[test]
fn bad_configurations_are_errors() {
    let good = small(1, 0.3);
    let bad: Vec<(&str, ReservoirConfig)> = vec![
        ("size 0", ReservoirConfig { size: 0, ..good.clone() }),
        ("input_size 0", ReservoirConfig { input_size: 0, ..good.clone() }),
        ("huge size", ReservoirConfig { size: usize::MAX / 2, ..good.clone() }),
        ("spectral radius 0", ReservoirConfig { spectral_radius: 0.0, ..good.clone() }),
        ("spectral radius NaN", ReservoirConfig { spectral_radius: f32::NAN, ..good.clone() }),
        ("leak 0", ReservoirConfig { leak_rate: 0.0, ..good.clone() }),
        ("leak 1.5", ReservoirConfig { leak_rate: 1.5, ..good.clone() }),
        ("connection 0", ReservoirConfig { connection_prob: 0.0, ..good.clone() }),
        ("connection 2", ReservoirConfig { connection_prob: 2.0, ..good.clone() }),
        ("input connectivity 0", ReservoirConfig { input_connectivity: 0.0, ..good.clone() }),
        ("input scaling -1", ReservoirConfig { input_scaling: -1.0, ..good.clone() }),
        ("bias inf", ReservoirConfig { bias: f32::INFINITY, ..good.clone() }),
        ("ridge -1", ReservoirConfig { ridge: -1.0, ..good.clone() }),
        ("relu", ReservoirConfig { activation: Activation::Relu, ..good.clone() }),
    ];
    for (what, config) in bad {
        assert!(config.validate().is_err(), "{what} validated");
        assert!(GpuReservoirComputer::with_runtime(config, cpu()).is_err(), "{what} built");
    }
    assert!(good.validate().is_ok());
}

#[test]
fn bad_inputs_are_errors() {
    let mut esn = GpuReservoirComputer::with_runtime(small(3, 0.3), cpu()).unwrap();
    assert!(esn.process(&[]).is_err(), "empty");
    assert!(esn.process(&[0.5; 7]).is_err(), "not whole steps of 3");
    assert!(esn.process(&[0.5, f32::NAN, 0.5]).is_err(), "NaN");
    assert!(esn.predict(&[0.5; 30]).is_err(), "predict before fit");
    assert!(esn.generate(3).is_err(), "generate before fit");
    let inputs = vec![0.25; 3 * 40];
    assert!(esn.fit(&inputs, &[1.0; 41]).is_err(), "targets not whole steps");
    assert!(esn.fit(&inputs[..3 * 11], &[1.0; 11]).is_err(), "no steps after the warmup");
    assert!(esn.fit(&inputs, &[f32::INFINITY; 40]).is_err(), "infinite targets");
    assert!(esn.encode_spikes(&[0.5; 2], 4).is_err(), "rates for 2 of 3 inputs");
    esn.fit(&inputs, &[1.0; 80]).unwrap();
    assert!(esn.generate(3).is_err(), "2 outputs cannot feed 3 inputs");
    assert!(esn.process_gpu(&inputs).is_err(), "process_gpu on the CPU fallback");
}

#[test]
fn reset_zeroes_the_state_and_spikes_are_binary() {
    let mut esn = GpuReservoirComputer::with_runtime(small(5, 0.3), cpu()).unwrap();
    let spikes = esn.encode_spikes(&[0.2, 0.5, 0.9], 400).unwrap();
    assert_eq!(spikes.len(), 1200);
    assert!(spikes.iter().all(|&s| s == 0.0 || s == 1.0));
    let rate = spikes.chunks_exact(3).map(|s| f64::from(s[2])).sum::<f64>() / 400.0;
    assert!((rate - 0.9).abs() < 0.06, "rate {rate}");
    let first = esn.process(&spikes).unwrap();
    assert!(esn.state().unwrap().iter().any(|&v| v != 0.0));
    esn.reset().unwrap();
    assert!(esn.state().unwrap().iter().all(|&v| v == 0.0));
    assert_eq!(esn.process(&spikes).unwrap(), first);
}

#[test]
fn mackey_glass_matches_a_fine_euler_integration() {
    // Euler with step 1e-3 (history x0), an independent integrator; chaos is slow over 60 units.
    let h = 1e-3;
    let lag = 17_000;
    let mut xs = vec![1.2; lag + 1];
    let mut x = 1.2;
    for s in 0..60_000 {
        let xd = xs[s];
        x += h * (0.2 * xd / (1.0 + f64::powi(xd, 10)) - 0.1 * x);
        xs.push(x);
    }
    let got = mackey_glass(61, 17, 1.2);
    for t in 0..=60 {
        let want = xs[lag + t * 1000];
        assert!((got[t] - want).abs() < 2e-3, "t {t}: {} vs {want}", got[t]);
    }
    let (u, y) = narma10(500, 9);
    assert_eq!((u.len(), y.len()), (500, 500));
    assert!(u.iter().all(|&v| (0.0..0.5).contains(&v)));
    // y[t] = y(t + 1) from the recurrence on the returned series.
    for t in 10..499 {
        let prev = y[t - 1];
        let sum: f64 = (t - 10..t).map(|i| y[i]).sum();
        let want = 0.3 * prev + 0.05 * prev * sum + 1.5 * u[t - 9] * u[t] + 0.1;
        assert!((y[t] - want).abs() < 1e-12, "narma10 at {t}");
    }
}

#[test]
fn f32_to_f64_is_exact() {
    let (mut rng, _) = fresh();
    let x = rng.vec(1001, -3.0, 3.0);
    let y = ProductionGpuRuntime::cpu().f32_to_f64(&x).unwrap();
    assert!(x.iter().zip(&y).all(|(&a, &b)| f64::from(a) == b));
}

#[test]
fn a_batch_on_the_cpu_is_its_members_and_checks_its_configs() {
    use prism_gpu::reservoir::ReservoirBatch;
    let (mut rng, seed) = fresh();
    let configs: Vec<ReservoirConfig> =
        (0..3).map(|i| ReservoirConfig { leak_rate: 0.3 + 0.3 * i as f32, ..small(seed + i, 0.3) }).collect();
    let mut batch = ReservoirBatch::new(&configs, cpu()).unwrap();
    let inputs = rng.vec(3 * 80, -1.0, 1.0);
    let targets = rng.vec(80, -1.0, 1.0);
    batch.fit(&inputs, &targets).unwrap();
    let more = rng.vec(3 * 9, -1.0, 1.0);
    let got = batch.predict(&more).unwrap();
    for (i, config) in configs.iter().enumerate() {
        let mut alone = GpuReservoirComputer::with_runtime(config.clone(), cpu()).unwrap();
        alone.fit(&inputs, &targets).unwrap();
        assert_eq!(got[i], alone.predict(&more).unwrap(), "member {i}");
    }
    assert!(ReservoirBatch::new(&[], cpu()).is_err(), "no members");
    let mixed = [small(1, 0.3), ReservoirConfig { size: 38, ..small(2, 0.3) }];
    assert!(ReservoirBatch::new(&mixed, cpu()).is_err(), "members of different sizes");
}
