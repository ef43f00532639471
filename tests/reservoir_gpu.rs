//! `prism_gpu::reservoir` on a GPU: the same states and readout as the CPU fallback and as the f64
//! references of `reservoir_common`, the spectral radius, the free run, spike input, f32 -> f64.

mod reservoir_common;

use std::sync::Arc;

use prism_gpu::ops::activations::Activation;
use prism_gpu::reservoir::{GpuReservoirComputer, ReservoirConfig};
use prism_gpu::ProductionGpuRuntime;
use reservoir_common::*;

fn gpu() -> Arc<ProductionGpuRuntime> {
    Arc::new(ProductionGpuRuntime::with_device(0).expect("a usable CUDA GPU"))
}

fn config(seed: u64, connection_prob: f32) -> ReservoirConfig {
    ReservoirConfig {
        size: 301,
        input_size: 3,
        spectral_radius: 0.95,
        connection_prob,
        leak_rate: 0.6,
        input_scaling: 0.9,
        input_connectivity: 0.7,
        bias: 0.4,
        ridge: 1e-3,
        warmup: 29,
        seed,
        activation: Activation::Tanh,
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_states_and_readout_match_the_cpu_and_f64_references() {
    let (mut rng, seed) = fresh();
    let (g, c) = (gpu(), cpu());
    for p in [0.3, 0.05] {
        let cfg = config(seed, p);
        let (n, steps) = (cfg.size, 613);
        let mut on_gpu = GpuReservoirComputer::with_runtime(cfg.clone(), g.clone()).unwrap();
        let mut on_cpu = GpuReservoirComputer::with_runtime(cfg.clone(), c.clone()).unwrap();
        assert!(on_gpu.is_gpu() && !on_cpu.is_gpu());
        assert_eq!(on_gpu.input_weights(), on_cpu.input_weights(), "input weights are drawn on the host");
        let (wg, wc) = (dense(on_gpu.recurrent(), n), dense(on_cpu.recurrent(), n));
        let scale = max_abs(&wc, 1e-6);
        let werr = wg.iter().zip(&wc).map(|(a, b)| (a - b).abs() / scale).fold(0.0, f64::max);
        assert!(werr < 1e-4, "p {p}: GPU and CPU recurrent matrices differ by {werr:e}");

        let inputs = rng.vec(3 * steps, -1.0, 1.0);
        let targets = rng.vec(2 * steps, -1.0, 1.0);
        let mut xs = vec![f32::NAN; n * steps];
        xs.copy_from_slice(&on_gpu.process(&inputs).unwrap());
        let want = states(&on_gpu, &inputs, &vec![0.0; n]);
        let err = max_scaled_error(&xs, &want, 1.0);
        assert!(err < 1e-4, "p {p}: GPU states off the f64 reference by {err:e}");
        let xc = on_cpu.process(&inputs).unwrap();
        let diff = xs.iter().zip(&xc).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(diff < 1e-4, "p {p}: GPU and CPU states differ by {diff:e}");

        // The readout from the GPU's own states against the f64 normal equations.
        on_gpu.reset().unwrap();
        on_gpu.fit(&inputs, &targets).unwrap();
        let x64: Vec<f64> = xs.iter().map(|&v| f64::from(v)).collect();
        let want = ridge_readout(&inputs, &x64, &targets, 3, n, cfg.warmup, cfg.ridge);
        let err = max_scaled_error(on_gpu.readout().unwrap(), &want, max_abs(&want, 1e-3));
        assert!(err < 1e-4, "p {p}: GPU readout off the f64 reference by {err:e}");

        on_cpu.reset().unwrap();
        on_cpu.fit(&inputs, &targets).unwrap();
        let more = rng.vec(3 * 37, -1.0, 1.0);
        let (yg, yc) = (on_gpu.predict(&more).unwrap(), on_cpu.predict(&more).unwrap());
        let yscale = yc.iter().fold(1e-3f32, |m, v| m.max(v.abs()));
        let diff = yg.iter().zip(&yc).map(|(a, b)| (a - b).abs() / yscale).fold(0.0, f32::max);
        assert!(diff < 1e-3, "p {p}: GPU and CPU predictions differ by {diff:e} of their scale");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_spectral_radius_is_the_configured_one() {
    let (_, seed) = fresh();
    for (n, p, rho) in [(157, 0.3, 0.9), (211, 0.05, 1.2)] {
        let cfg = ReservoirConfig { size: n, connection_prob: p, spectral_radius: rho, ..config(seed, p) };
        let esn = GpuReservoirComputer::with_runtime(cfg, gpu()).unwrap();
        let got = spectral_radius(&dense(esn.recurrent(), n), n, 1500, 6000, seed ^ 1);
        let err = (got - f64::from(rho)).abs();
        assert!(err < 1e-3, "n {n} p {p}: spectral radius {got} for {rho} (error {err:e})");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_free_run_feeds_the_output_back() {
    let (mut rng, seed) = fresh();
    let cfg = ReservoirConfig { input_size: 1, ..config(seed, 0.3) };
    let inputs = rng.vec(401, -1.0, 1.0);
    let mut esn = GpuReservoirComputer::with_runtime(cfg, gpu()).unwrap();
    free_run_matches(&mut esn, &inputs, 9, "GPU free run");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_spikes_match_the_cpu_and_process_gpu_runs() {
    let (_, seed) = fresh();
    let mut on_gpu = GpuReservoirComputer::with_runtime(config(seed, 0.1), gpu()).unwrap();
    let on_cpu = GpuReservoirComputer::with_runtime(config(seed, 0.1), cpu()).unwrap();
    let rates = [0.1, 0.45, 0.8];
    let spikes = on_gpu.encode_spikes(&rates, 257).unwrap();
    assert_eq!(spikes, on_cpu.encode_spikes(&rates, 257).unwrap());
    let xs = on_gpu.process_gpu(&spikes).unwrap();
    let want = states(&on_gpu, &spikes, &[0.0; 301]);
    assert!(max_scaled_error(&xs, &want, 1.0) < 1e-4);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_f32_to_f64_is_exact() {
    let (mut rng, _) = fresh();
    let x = rng.vec(100_003, -1e3, 1e3);
    let y = gpu().f32_to_f64(&x).unwrap();
    assert_eq!(y.len(), x.len());
    assert!(x.iter().zip(&y).all(|(&a, &b)| f64::from(a) == b));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_batch_matches_its_members_on_the_cpu() {
    use prism_gpu::reservoir::ReservoirBatch;
    let (mut rng, seed) = fresh();
    for leaks in [[0.6, 0.6, 0.6, 0.6], [0.2, 0.5, 0.8, 1.0]] {
        let configs: Vec<ReservoirConfig> = leaks
            .iter()
            .enumerate()
            .map(|(i, &leak_rate)| ReservoirConfig {
                leak_rate,
                spectral_radius: 0.8 + 0.1 * i as f32,
                connection_prob: if i % 2 == 0 { 0.3 } else { 0.05 },
                ..config(seed + i as u64, 0.3)
            })
            .collect();
        let mut batch = ReservoirBatch::new(&configs, gpu()).unwrap();
        let steps = 389;
        let inputs = rng.vec(3 * steps, -1.0, 1.0);
        let targets = rng.vec(2 * steps, -1.0, 1.0);
        let states_b = batch.process(&inputs).unwrap();
        batch.reset().unwrap();
        batch.fit(&inputs, &targets).unwrap();
        let more = rng.vec(3 * 41, -1.0, 1.0);
        let pred_b = batch.predict(&more).unwrap();
        for (i, cfg) in configs.iter().enumerate() {
            let member = &batch.members()[i];
            let n = cfg.size;
            let want = states(member, &inputs, &vec![0.0; n]);
            let err = max_scaled_error(&states_b[i], &want, 1.0);
            assert!(err < 1e-4, "leaks {leaks:?} member {i}: batched states off by {err:e}");
            let x64: Vec<f64> = states_b[i].iter().map(|&v| f64::from(v)).collect();
            let w = ridge_readout(&inputs, &x64, &targets, 3, n, cfg.warmup, cfg.ridge);
            let err = max_scaled_error(member.readout().unwrap(), &w, max_abs(&w, 1e-3));
            assert!(err < 1e-4, "leaks {leaks:?} member {i}: batched readout off by {err:e}");
            let mut alone = GpuReservoirComputer::with_runtime(cfg.clone(), cpu()).unwrap();
            alone.fit(&inputs, &targets).unwrap();
            let yc = alone.predict(&more).unwrap();
            let scale = yc.iter().fold(1e-3f32, |m, v| m.max(v.abs()));
            let diff = pred_b[i].iter().zip(&yc).map(|(a, b)| (a - b).abs() / scale).fold(0.0, f32::max);
            assert!(diff < 1e-3, "leaks {leaks:?} member {i}: batched predictions off the CPU by {diff:e}");
        }
    }
}

/// A batch against a loop of the same reservoirs alone on the GPU, for sparse and dense members,
/// equal and different leak rates, odd and even sizes (the kernels' scalar and vector paths), one,
/// three and sixteen members, sequences of two chunks and a continuation. Tolerances: the
/// recurrent matrices, input weights and states bit for bit (the batched kernels reduce each
/// member's rows as the member's own kernels do, and the power iterations are the same
/// arithmetic); the readouts within 1e-6 of their largest weight (each member's Gram matrix is one
/// slice of a batched f64 GEMM instead of its own GEMM); the predictions within 1e-5 of
/// `sum |W_out|` per output (the state part is one batched f32 GEMM).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_batch_is_the_loop_of_its_members() {
    use prism_gpu::reservoir::ReservoirBatch;
    let (mut rng, seed) = fresh();
    let g = gpu();
    for (n, b, equal_leaks) in
        [(37, 1, true), (37, 3, false), (64, 3, true), (301, 16, false), (1000, 16, false)]
    {
        let configs: Vec<ReservoirConfig> = (0..b)
            .map(|i| ReservoirConfig {
                size: n,
                leak_rate: if equal_leaks { 0.6 } else { 0.25 * (1 + i % 4) as f32 },
                spectral_radius: 0.8 + 0.1 * (i % 3) as f32,
                // Dense and CSR members (below SPARSE_BELOW); 0.1 keeps a 37-unit sparse member's
                // graph cyclic, so its spectral radius is not 0.
                connection_prob: if i % 2 == 0 { 0.3 } else { 0.1 },
                ridge: 1e-3 * (1 + i % 5) as f64,
                ..config(seed.wrapping_add(i as u64), 0.3)
            })
            .collect();
        let what = format!("n {n}, {b} members, equal leaks {equal_leaks}");
        let steps = 389; // two chunks
        let inputs = rng.vec(3 * steps, -1.0, 1.0);
        let targets = rng.vec(2 * steps, -1.0, 1.0);
        let more = rng.vec(3 * 41, -1.0, 1.0);
        let mut batch = ReservoirBatch::new(&configs, g.clone()).unwrap();
        let xb = batch.process(&inputs).unwrap();
        let xb_more = batch.process(&more).unwrap();
        batch.reset().unwrap();
        batch.fit(&inputs, &targets).unwrap();
        let yb = batch.predict(&more).unwrap();
        for (i, cfg) in configs.iter().enumerate() {
            let member = &batch.members()[i];
            let mut alone = GpuReservoirComputer::with_runtime(cfg.clone(), g.clone()).unwrap();
            assert!(
                dense(alone.recurrent(), n) == dense(member.recurrent(), n),
                "{what}, member {i}: recurrent matrices differ (spectral radius estimates differ)"
            );
            assert_eq!(alone.input_weights(), member.input_weights(), "{what}, member {i}: input weights");
            for (part, (got, want)) in
                [(&xb[i], alone.process(&inputs).unwrap()), (&xb_more[i], alone.process(&more).unwrap())]
                    .into_iter()
                    .enumerate()
            {
                assert_eq!(got.len(), want.len());
                if let Some(k) = got.iter().zip(&want).position(|(a, w)| a.to_bits() != w.to_bits()) {
                    panic!(
                        "{what}, member {i}, sequence {part}: state {k} (step {}, unit {}) is {} batched, {} alone",
                        k / n,
                        k % n,
                        got[k],
                        want[k]
                    );
                }
            }
            alone.reset().unwrap();
            alone.fit(&inputs, &targets).unwrap();
            let (wb, wa) = (member.readout().unwrap(), alone.readout().unwrap().to_vec());
            let wa64: Vec<f64> = wa.iter().map(|&v| f64::from(v)).collect();
            let err = max_scaled_error(wb, &wa64, max_abs(&wa64, 1e-3));
            assert!(err < 1e-6, "{what}, member {i}: batched readout off the loop's by {err:e}");
            let ya = alone.predict(&more).unwrap();
            let f = cfg.features();
            let mut worst = 0.0f64;
            for (o, w) in wa.chunks_exact(f).enumerate() {
                let scale = w.iter().map(|v| f64::from(v.abs())).sum::<f64>().max(1e-3);
                for (p, q) in yb[i].iter().skip(o).step_by(2).zip(ya.iter().skip(o).step_by(2)) {
                    worst = worst.max(f64::from((p - q).abs()) / scale);
                }
            }
            assert!(worst < 1e-5, "{what}, member {i}: batched predictions off the loop's by {worst:e}");
        }
    }
}
