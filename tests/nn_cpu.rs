//! `prism_gpu::nn` and the runtime's neural-network operations on the CPU fallback: f64
//! references, finite-difference gradients, a training run, bad input (IDX and safetensors files: nn_io_cpu.rs).

mod nn_checks;

use nn_checks as checks;
use prism_gpu::nn::{self, Device, Network, Sequential, Tensor, TrainingConfig};
use prism_gpu::ops::activations::Activation;
use prism_gpu::ops::nn::Optimizer;
use prism_gpu::rng::SplitMix64;
use prism_gpu::ProductionGpuRuntime;

#[test]
fn runtime_nn_ops_match_f64_references() {
    checks::runtime_ops(&ProductionGpuRuntime::cpu(), "runtime_nn_ops");
}

#[test]
fn layer_gradients_match_finite_differences() {
    let mut rng = checks::fresh_rng("finite_differences");
    let device = Device::cpu();
    for act in [Activation::Relu, Activation::Gelu, Activation::Sigmoid, Activation::Tanh] {
        let (inputs, classes, rows) = (6, 3, 9);
        let mut model = checks::small_model(&device, act, inputs, classes, rng.next_u64());
        let x = rng.vec(rows * inputs, -2.0, 2.0);
        let labels: Vec<u32> = (0..rows).map(|_| (rng.next_u64() % classes as u64) as u32).collect();
        let grads = checks::analytic_grads(&device, &mut model, &x, &labels);
        let params: Vec<f64> = model.params().to_vec().unwrap().iter().map(|&v| f64::from(v)).collect();
        let x64: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
        let layers = model.layers().to_vec();
        let h = 1e-6;
        let numeric: Vec<f64> = (0..params.len())
            .map(|i| {
                let (mut up, mut down) = (params.clone(), params.clone());
                up[i] += h;
                down[i] -= h;
                let lu = checks::reference_loss(&layers, &up, &x64, &labels, inputs);
                let ld = checks::reference_loss(&layers, &down, &x64, &labels, inputs);
                (lu - ld) / (2.0 * h)
            })
            .collect();
        let scale = numeric.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(scale > 1e-3, "{act:?}: gradients too small to test ({scale})");
        for (i, (&a, &n)) in grads.iter().zip(&numeric).enumerate() {
            let e = (f64::from(a) - n).abs();
            assert!(e <= 2e-4 * scale, "{act:?} parameter {i}: analytic {a} vs numeric {n} (scale {scale})");
        }
    }
}

#[test]
fn forward_matches_the_f64_reference_and_seeds_fix_the_weights() {
    let mut rng = checks::fresh_rng("forward");
    let device = Device::cpu();
    let seed = rng.next_u64();
    let mut a = checks::small_model(&device, Activation::Gelu, 11, 4, seed);
    let b = checks::small_model(&device, Activation::Gelu, 11, 4, seed);
    let c = checks::small_model(&device, Activation::Gelu, 11, 4, seed ^ 1);
    let pa = a.params().to_vec().unwrap();
    assert_eq!(pa, b.params().to_vec().unwrap(), "same seed, same weights");
    assert_ne!(pa, c.params().to_vec().unwrap(), "another seed, other weights");
    let bound = 1.0 / (11f32).sqrt();
    assert!(pa[..11 * 7 + 7].iter().all(|w| w.abs() <= bound), "first layer within ±1/sqrt(fan_in)");
    let rows = 13;
    let x = rng.vec(rows * 11, -1.0, 1.0);
    let xt = Tensor::from_vec(&device, x.clone(), &[rows, 11]).unwrap();
    let logits = a.forward(&xt.view(), false).unwrap();
    assert_eq!(logits.shape(), [rows, 4]);
    // The loss of the reference forward pass for label 0 on every row ties logits to it.
    let got = logits.to_vec().unwrap();
    let params: Vec<f64> = pa.iter().map(|&v| f64::from(v)).collect();
    let x64: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    for r in 0..rows {
        for class in 0..4u32 {
            let want = checks::reference_loss(a.layers(), &params, &x64[r * 11..(r + 1) * 11], &[class], 11);
            let row = &got[r * 4..(r + 1) * 4];
            let m = row.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            let lse = f64::from(m) + row.iter().map(|&v| f64::from(v - m).exp()).sum::<f64>().ln();
            let loss = lse - f64::from(row[class as usize]);
            assert!(
                (loss - want).abs() <= 1e-5 * want.abs().max(1.0),
                "row {r} class {class}: {loss} vs {want}"
            );
        }
    }
}

#[test]
fn mse_loss_and_gradient_on_tensors() {
    let mut rng = checks::fresh_rng("mse");
    let device = Device::cpu();
    let (rows, cols) = (7, 5);
    let (p, t) = (rng.vec(rows * cols, -2.0, 2.0), rng.vec(rows * cols, -2.0, 2.0));
    let pt = Tensor::from_vec(&device, p.clone(), &[rows, cols]).unwrap();
    let tt = Tensor::from_vec(&device, t.clone(), &[rows, cols]).unwrap();
    let out = nn::mse(&device, &pt, &tt).unwrap();
    let want: f64 =
        p.iter().zip(&t).map(|(&a, &b)| f64::from(a - b).powi(2)).sum::<f64>() / (rows * cols) as f64;
    let got = f64::from(out.mean_loss(&device).unwrap());
    assert!((got - want).abs() <= 1e-6 * want, "{got} vs {want}");
    let wrong = Tensor::from_vec(&device, t, &[cols, rows]).unwrap();
    assert!(nn::mse(&device, &pt, &wrong).unwrap_err().to_string().contains("target"));
}

#[test]
fn training_reduces_the_loss() {
    checks::training_reduces_loss(false, &mut checks::fresh_rng("training"));
}

#[test]
fn the_batch_order_is_a_seeded_permutation() {
    let a = nn::batch_order(1000, true, &mut SplitMix64::new(5));
    let b = nn::batch_order(1000, true, &mut SplitMix64::new(5));
    let c = nn::batch_order(1000, true, &mut SplitMix64::new(6));
    assert_eq!(a, b);
    assert_ne!(a, c);
    let mut sorted = a.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..1000).collect::<Vec<u32>>());
    assert_ne!(a, sorted, "shuffled");
    assert_eq!(nn::batch_order(4, false, &mut SplitMix64::new(5)), [0, 1, 2, 3]);
}

#[test]
fn bad_input_is_an_error_and_leaves_the_model_alone() {
    let device = Device::cpu();
    let model = Sequential::builder(3).linear(4).tanh().linear(2).build(&device, 1).unwrap();
    let before = model.params().to_vec().unwrap();
    let mut net = Network::new(model);
    let config = TrainingConfig { epochs: 1, batch_size: 2, use_gpu: false, ..Default::default() };
    let data = vec![0.5f32; 12];
    let err = |r: prism_gpu::Result<nn::History>| r.unwrap_err().to_string();
    let e = err(net.train(&[], &[], &config));
    assert!(e.contains("Network::train") && e.contains("0 values"), "{e}");
    let e = err(net.train(&data[..11], &[0, 1, 0, 1], &config));
    assert!(e.contains("11 values"), "{e}");
    let e = err(net.train(&data, &[0, 1, 0], &config));
    assert!(e.contains("3 labels"), "{e}");
    let e = err(net.train(&data, &[0, 1, 2, 1], &config));
    assert!(e.contains("label 2 at index 2"), "{e}");
    let mut nan = data.clone();
    nan[7] = f32::NAN;
    let e = err(net.train(&nan, &[0, 1, 0, 1], &config));
    assert!(e.contains("finite") && e.contains("index 7"), "{e}");
    let mut inf = data.clone();
    inf[0] = f32::INFINITY;
    assert!(net.train(&inf, &[0, 1, 0, 1], &config).is_err());
    assert!(net.train(&data, &[0, 1, 0, 1], &TrainingConfig { batch_size: 0, ..config.clone() }).is_err());
    assert!(net
        .train(&data, &[0, 1, 0, 1], &TrainingConfig { learning_rate: f32::NAN, ..config.clone() })
        .is_err());
    assert_eq!(net.model().params().to_vec().unwrap(), before, "no step ran");
    assert_eq!(net.steps(), 0);
    assert!(net.evaluate(&data, &[0, 1, 5, 1], 2).is_err());

    // Shape errors name the operation and the shapes.
    let m = net.model_mut();
    let x = Tensor::from_vec(&device, vec![0.0; 8], &[2, 4]).unwrap();
    let e = m.forward(&x.view(), true).unwrap_err().to_string();
    assert!(e.contains("Sequential::forward") && e.contains("[batch, 3]") && e.contains("[2, 4]"), "{e}");
    let x = Tensor::from_vec(&device, vec![0.0; 6], &[2, 3]).unwrap();
    let dy = Tensor::from_vec(&device, vec![0.0; 4], &[2, 2]).unwrap();
    let e = m.backward(&x.view(), dy).unwrap_err().to_string();
    assert!(e.contains("training forward pass first"), "{e}");
    let e = Tensor::from_vec(&device, vec![0.0; 5], &[2, 3]).unwrap_err().to_string();
    assert!(e.contains("Tensor::from_vec") && e.contains("6 elements"), "{e}");
    assert!(Tensor::from_vec(&device, vec![0.0; 6], &[2, 3]).unwrap().reshape(&[4, 2]).is_err());
    assert!(x.rows(1, 2).is_err());
    assert_eq!(x.rows(1, 1).unwrap().shape(), [1, 3]);
    assert!(Sequential::builder(3).build(&device, 0).is_err(), "no layers");
    assert!(Sequential::builder(3).linear(0).build(&device, 0).is_err(), "no outputs");
    assert!(Sequential::builder(3).dropout(1.0).linear(2).build(&device, 0).is_err(), "dropout rate");
    let e = nn::Labels::new(&device, &[0, 9], 3).unwrap_err().to_string();
    assert!(e.contains("label 9 at index 1"), "{e}");

    // A CUDA graph needs a GPU.
    let y = nn::Labels::new(&device, &[0, 1], 2).unwrap();
    let e = net.capture_step(&x.view(), &y, Optimizer::ADAM, 1e-3).unwrap_err().to_string();
    assert!(e.contains("CPU fallback"), "{e}");
    assert_eq!(net.steps(), 0);
}

#[test]
fn requiring_a_gpu_without_one_is_an_error_and_preferring_one_falls_back() {
    if ProductionGpuRuntime::with_device(0).is_ok() {
        eprintln!("skipped: this machine has a GPU");
        return;
    }
    let device = Device::cpu();
    let model = Sequential::builder(2).linear(2).build(&device, 1).unwrap();
    let mut net = Network::new(model);
    let data = [0.0f32, 1.0, 1.0, 0.0];
    let strict =
        TrainingConfig { epochs: 1, batch_size: 2, use_gpu: true, prefer_gpu: false, ..Default::default() };
    assert!(net.train(&data, &[0, 1], &strict).is_err());
    let soft = TrainingConfig { prefer_gpu: true, ..strict };
    let history = net.train(&data, &[0, 1], &soft).unwrap();
    assert!(history.device.contains("CPU"), "{}", history.device);
}

#[test]
fn the_cuda_graph_option_changes_nothing_on_the_cpu() {
    let mut rng = checks::fresh_rng("cuda_graph_cpu");
    let (data, labels) = checks::blobs(&mut rng, 300, 8, 3);
    let run = |cuda_graph: bool| {
        let mut net = Network::new(
            Sequential::builder(8).linear(16).relu().linear(3).build(&Device::cpu(), 4).unwrap(),
        );
        let config =
            TrainingConfig { epochs: 2, batch_size: 32, use_gpu: false, cuda_graph, ..Default::default() };
        let h = net.train(&data, &labels, &config).unwrap();
        let figures: Vec<(f32, f32)> = h.epochs.iter().map(|e| (e.loss, e.accuracy)).collect();
        (figures, net.model().params().to_vec().unwrap())
    };
    assert_eq!(run(false), run(true));
}

#[test]
fn optimizer_state_sizes() {
    assert_eq!(Optimizer::ADAM.state_len(10).unwrap(), 20);
    assert_eq!(Optimizer::Sgd { momentum: 0.9, weight_decay: 0.0 }.state_len(10).unwrap(), 10);
    assert!(Optimizer::ADAMW.state_len(usize::MAX).is_err());
}

#[test]
fn a_bias_gradient_too_large_to_allocate_is_an_error() {
    // No rows: `dy` is empty whatever `cols` is, so only the allocation can refuse it.
    let rt = ProductionGpuRuntime::cpu();
    let err = rt.bias_grad(&[], 0, usize::MAX).expect_err("usize::MAX columns cannot be allocated");
    assert!(err.to_string().contains("bias_grad"), "{err}");
    assert_eq!(rt.bias_grad(&[1.0, 2.0, 3.0, 4.0], 2, 2).unwrap(), [4.0, 6.0]);
}
