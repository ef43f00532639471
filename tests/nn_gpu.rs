//! `prism_gpu::nn` and the runtime's neural-network operations on a GPU: the CPU checks of
//! `nn_cpu.rs` on the device, and GPU against the CPU path (same seed: same weights, same batch
//! order, same dropout masks). Run on a machine with a CUDA GPU:
//! `cargo test --release --test nn_gpu -- --include-ignored`.

mod nn_checks;

use nn_checks as checks;
use prism_gpu::nn::{Device, Labels, Network, Sequential, Tensor, TrainingConfig};
use prism_gpu::ops::activations::Activation;
use prism_gpu::raw::kernels::nn::LossRows;
use prism_gpu::ProductionGpuRuntime;

/// Parameters after the same steps taken two ways: Adam's `m / sqrt(v)` turns a one-ulp
/// difference in a near-zero gradient into a full step of `lr` either way, so single parameters
/// may differ by up to `2 lr` per step; on average they must agree to 1e-5.
fn assert_params_close(a: &[f32], b: &[f32], steps: u64, lr: f32) {
    let mean = a.iter().zip(b).map(|(p, q)| f64::from((p - q).abs())).sum::<f64>() / a.len() as f64;
    let worst = a.iter().zip(b).map(|(p, q)| (p - q).abs()).fold(0.0f32, f32::max);
    eprintln!("parameters: mean |difference| {mean:e}, largest {worst:e}");
    assert!(mean <= 1e-5, "mean |difference| {mean:e}");
    assert!(worst <= 2.0 * lr * steps as f32, "largest difference {worst:e}");
}

fn gpu() -> Device {
    Device::gpu(0).expect("a usable CUDA GPU")
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn runtime_nn_ops_match_f64_references_on_the_gpu() {
    let rt = ProductionGpuRuntime::with_device(0).expect("a usable CUDA GPU");
    checks::runtime_ops(&rt, "runtime_nn_ops_gpu");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_out_of_range_label_on_the_device_gives_nan_not_a_stray_read() {
    let device = gpu();
    let ops = device.runtime().gpu().unwrap();
    let logits = ops.upload(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let labels = ops.upload(&[2i32, 7]).unwrap();
    let mut loss = ops.upload(&[0.0f32; 2]).unwrap();
    let mut correct = ops.upload(&[0.0f32; 2]).unwrap();
    let mut grad = ops.upload(&[0.0f32; 6]).unwrap();
    let out =
        LossRows { loss: &mut loss.as_view_mut(), grad: Some(&mut grad.as_view_mut()), grad_scale: 0.5 };
    ops.softmax_xent(&logits.as_view(), &labels.as_view(), out, &mut correct.as_view_mut(), 2, 3).unwrap();
    let loss = ops.download(&loss).unwrap();
    let grad = ops.download(&grad).unwrap();
    assert!(loss[0].is_finite() && loss[1].is_nan(), "{loss:?}");
    assert!(grad[..3].iter().all(|g| g.is_finite()) && grad[3..].iter().all(|g| g.is_nan()), "{grad:?}");
    assert_eq!(ops.download(&correct).unwrap(), [1.0, 0.0]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_and_cpu_give_the_same_weights_outputs_and_gradients() {
    let mut rng = checks::fresh_rng("gpu_vs_cpu_layers");
    let (gpu, cpu) = (gpu(), Device::cpu());
    for act in [Activation::Relu, Activation::Gelu, Activation::Sigmoid, Activation::Tanh] {
        let seed = rng.next_u64();
        let build = |d: &Device| {
            Sequential::builder(37)
                .linear(65)
                .activation(act)
                .dropout(0.3)
                .linear(33)
                .activation(act)
                .linear(10)
                .build(d, seed)
                .unwrap()
        };
        let (mut mg, mut mc) = (build(&gpu), build(&cpu));
        assert_eq!(
            mg.params().to_vec().unwrap(),
            mc.params().to_vec().unwrap(),
            "{act:?}: same initial weights"
        );
        let rows = 129;
        let x = rng.vec(rows * 37, -2.0, 2.0);
        let labels: Vec<u32> = (0..rows).map(|_| (rng.next_u64() % 10) as u32).collect();
        let gg = checks::analytic_grads(&gpu, &mut mg, &x, &labels);
        let gc = checks::analytic_grads(&cpu, &mut mc, &x, &labels);
        let scale = gc.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        assert!(scale > 1e-4, "{act:?}: gradients too small to compare");
        for (i, (a, b)) in gg.iter().zip(&gc).enumerate() {
            assert!(
                (a - b).abs() <= 1e-4 * scale,
                "{act:?} gradient {i}: GPU {a} vs CPU {b} (scale {scale})"
            );
        }
        let xt = |d: &Device| Tensor::from_vec(d, x.clone(), &[rows, 37]).unwrap();
        let (og, oc) =
            (mg.forward(&xt(&gpu).view(), false).unwrap(), mc.forward(&xt(&cpu).view(), false).unwrap());
        let (og, oc) = (og.to_vec().unwrap(), oc.to_vec().unwrap());
        for (i, (a, b)) in og.iter().zip(&oc).enumerate() {
            assert!((a - b).abs() <= 1e-4 * b.abs().max(1.0), "{act:?} output {i}: GPU {a} vs CPU {b}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn training_reduces_the_loss_on_the_gpu() {
    checks::training_reduces_loss(true, &mut checks::fresh_rng("training_gpu"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_and_cpu_training_runs_agree() {
    let mut rng = checks::fresh_rng("gpu_vs_cpu_training");
    let (data, labels) = checks::blobs(&mut rng, 2000, 30, 5);
    let run = |use_gpu: bool| {
        let device = if use_gpu { gpu() } else { Device::cpu() };
        let model = Sequential::builder(30).linear(64).relu().linear(5).build(&device, 9).unwrap();
        let mut net = Network::new(model);
        let config = TrainingConfig {
            epochs: 3,
            batch_size: 100,
            learning_rate: 1e-3,
            use_gpu,
            prefer_gpu: false,
            seed: 4,
            ..Default::default()
        };
        let h = net.train(&data, &labels, &config).unwrap();
        assert_eq!(net.model().device().is_gpu(), use_gpu);
        h
    };
    let (g, c) = (run(true), run(false));
    eprintln!("GPU {g:?}\nCPU {c:?}");
    // Same weights, batches and arithmetic up to f32 summation order: the first epoch's mean
    // loss agrees closely, the later ones within a small drift.
    for (eg, ec) in g.epochs.iter().zip(&c.epochs) {
        let tol = if eg.epoch == 1 { 1e-3 } else { 2e-2 };
        assert!(
            (eg.loss - ec.loss).abs() <= tol * ec.loss.max(1e-3),
            "epoch {}: GPU loss {} vs CPU {}",
            eg.epoch,
            eg.loss,
            ec.loss
        );
        assert!(
            (eg.accuracy - ec.accuracy).abs() <= 0.01,
            "epoch {}: accuracy {} vs {}",
            eg.epoch,
            eg.accuracy,
            ec.accuracy
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_training_step_queues_on_the_device_and_evaluation_matches_the_cpu() {
    let mut rng = checks::fresh_rng("train_step_gpu");
    let device = gpu();
    let (data, labels) = checks::blobs(&mut rng, 512, 16, 3);
    let model = Sequential::builder(16).linear(24).gelu().linear(3).build(&device, 5).unwrap();
    let mut net = Network::new(model);
    let x = Tensor::from_vec(&device, data.clone(), &[512, 16]).unwrap();
    let y = Labels::new(&device, &labels[..256], 3).unwrap();
    let (before, _) = net.evaluate(&data, &labels, 100).unwrap();
    for _ in 0..50 {
        net.train_step(&x.rows(0, 256).unwrap(), &y, prism_gpu::ops::nn::Optimizer::ADAM, 1e-2).unwrap();
    }
    let (after, acc) = net.evaluate(&data, &labels, 100).unwrap();
    assert!(after < before, "loss {before} -> {after}");
    // The same weights on the CPU evaluate to the same figures.
    let params = net.model().params().to_vec().unwrap();
    let mut cpu =
        Network::new(Sequential::builder(16).linear(24).gelu().linear(3).build(&Device::cpu(), 5).unwrap());
    cpu.model_mut().set_params(params).unwrap();
    let (cl, ca) = cpu.evaluate(&data, &labels, 100).unwrap();
    assert!((cl - after).abs() <= 1e-4 * after.max(1.0), "loss GPU {after} vs CPU {cl}");
    assert!((ca - acc).abs() <= 2.0 / 512.0, "accuracy GPU {acc} vs CPU {ca}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_scheduled_optimizer_step_matches_the_host_scheduled_one() {
    use prism_gpu::ops::nn::Optimizer;
    let mut rng = checks::fresh_rng("scheduled_optimizer");
    let device = Device::gpu_for_graphs(0).expect("a usable CUDA GPU");
    let ops = device.runtime().gpu().unwrap();
    let n = 50_001;
    for opt in [
        Optimizer::ADAM,
        Optimizer::ADAMW,
        Optimizer::Adam { beta1: 0.8, beta2: 0.95, eps: 1e-6, weight_decay: 0.1 },
    ] {
        let p0 = rng.vec(n, -1.0, 1.0);
        let (mut pa, mut pb) = (ops.upload(&p0).unwrap(), ops.upload(&p0).unwrap());
        let (mut sa, mut sb) =
            (ops.upload(&vec![0.0f32; 2 * n]).unwrap(), ops.upload(&vec![0.0f32; 2 * n]).unwrap());
        let mut sched = ops.upload(&[0.0f32; 4]).unwrap();
        for t in 1..=5u64 {
            let g = ops.upload(&rng.vec(n, -1.0, 1.0)).unwrap();
            ops.optimizer_step(opt, 1e-2, t, &mut pa.as_view_mut(), &g.as_view(), &mut sa.as_view_mut())
                .unwrap();
            ops.optimizer_step_scheduled(
                opt,
                1e-2,
                &mut pb.as_view_mut(),
                &g.as_view(),
                &mut sb.as_view_mut(),
                &mut sched.as_view_mut(),
            )
            .unwrap();
        }
        let (a, b) = (ops.download(&pa).unwrap(), ops.download(&pb).unwrap());
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert!(
                (x - y).abs() <= 1e-6 * x.abs().max(1.0),
                "{opt:?}[{i}]: host-scheduled {x} vs device-scheduled {y}"
            );
        }
        assert_eq!(ops.download(&sched).unwrap()[0], 5.0, "step count");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_captured_step_replays_like_eager_steps() {
    use prism_gpu::ops::nn::Optimizer;
    let mut rng = checks::fresh_rng("captured_step");
    let device = Device::gpu_for_graphs(0).expect("a usable CUDA GPU");
    let (data, labels) = checks::blobs(&mut rng, 256, 40, 6);
    let build =
        || Sequential::builder(40).linear(64).relu().linear(32).gelu().linear(6).build(&device, 21).unwrap();
    let x = Tensor::from_vec(&device, data, &[256, 40]).unwrap();
    let y = Labels::new(&device, &labels, 6).unwrap();
    let (mut eager, mut graphed) = (Network::new(build()), Network::new(build()));
    let captured = graphed.capture_step(&x.view(), &y, Optimizer::ADAM, 1e-3).unwrap();
    for _ in 0..10 {
        graphed.replay(&captured).unwrap();
    }
    eager.train_step(&x.view(), &y, Optimizer::ADAM, 1e-3).unwrap();
    for _ in 0..10 {
        eager.train_step(&x.view(), &y, Optimizer::ADAM, 1e-3).unwrap();
    }
    // An eager step between replays keeps the device's step count in line.
    graphed.train_step(&x.view(), &y, Optimizer::ADAM, 1e-3).unwrap();
    graphed.replay(&captured).unwrap();
    eager.train_step(&x.view(), &y, Optimizer::ADAM, 1e-3).unwrap();
    eager.train_step(&x.view(), &y, Optimizer::ADAM, 1e-3).unwrap();
    assert_eq!(graphed.steps(), 13);
    assert_eq!(eager.steps(), 13);
    let (a, b) = (eager.model().params().to_vec().unwrap(), graphed.model().params().to_vec().unwrap());
    assert_params_close(&a, &b, 13, 1e-3);
    let initial = build().params().to_vec().unwrap();
    assert!(b.iter().zip(&initial).any(|(p, q)| p != q), "the replays changed the weights");

    // Capturing needs a stream of its own and no dropout; replaced parameters void a capture.
    let mut on_default = Network::new(Sequential::builder(40).linear(6).build(&gpu(), 1).unwrap());
    let xd = Tensor::from_vec(&gpu(), vec![0.5; 40 * 4], &[4, 40]).unwrap();
    let yd = Labels::new(on_default.model().device(), &[0, 1, 2, 3], 6).unwrap();
    let e = on_default.capture_step(&xd.view(), &yd, Optimizer::ADAM, 1e-3).unwrap_err().to_string();
    assert!(e.contains("gpu_for_graphs"), "{e}");
    assert_eq!(on_default.steps(), 0, "nothing ran");
    let mut dropout =
        Network::new(Sequential::builder(40).linear(8).dropout(0.5).linear(6).build(&device, 1).unwrap());
    assert!(dropout
        .capture_step(&x.view(), &y, Optimizer::ADAM, 1e-3)
        .unwrap_err()
        .to_string()
        .contains("dropout"));
    let params = graphed.model().params().to_vec().unwrap();
    graphed.model_mut().set_params(params).unwrap();
    assert!(graphed.replay(&captured).is_err());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn training_with_a_captured_step_matches_eager_training() {
    let mut rng = checks::fresh_rng("graph_training");
    let (data, labels) = checks::blobs(&mut rng, 1000, 24, 4);
    let run = |cuda_graph: bool| {
        let model = Sequential::builder(24).linear(48).relu().linear(4).build(&Device::cpu(), 8).unwrap();
        let mut net = Network::new(model);
        let config = TrainingConfig {
            epochs: 3,
            batch_size: 64,
            use_gpu: true,
            prefer_gpu: false,
            seed: 2,
            cuda_graph,
            ..Default::default()
        };
        let h = net.train(&data, &labels, &config).unwrap();
        assert_eq!(net.model().device().for_graphs(), cuda_graph);
        (h, net.model().params().to_vec().unwrap(), net.steps())
    };
    let ((he, pe, se), (hg, pg, sg)) = (run(false), run(true));
    eprintln!("eager {he:?}\ngraph {hg:?}");
    assert_eq!(se, sg);
    assert_eq!(se, 3 * 1000u64.div_ceil(64));
    for (a, b) in he.epochs.iter().zip(&hg.epochs) {
        assert!(
            (a.loss - b.loss).abs() <= 1e-4 * a.loss,
            "epoch {}: eager loss {} vs graph {}",
            a.epoch,
            a.loss,
            b.loss
        );
        assert!(
            (a.accuracy - b.accuracy).abs() <= 2.0 / 1000.0,
            "epoch {}: accuracy {} vs {}",
            a.epoch,
            a.accuracy,
            b.accuracy
        );
    }
    assert_params_close(&pe, &pg, se, 1e-3);
}
