//! Checks of `prism_gpu::nn` and the runtime's neural-network operations, shared by `nn_cpu.rs`
//! (CPU fallback, CI) and `nn_gpu.rs` (a CUDA GPU). References are f64 code written here.
#![allow(dead_code)] // each test binary uses a different subset

use prism_gpu::nn::{Device, Layer, Network, Sequential, TrainingConfig};
use prism_gpu::ops::activations::Activation;
use prism_gpu::ops::nn::Optimizer;
use prism_gpu::rng::SplitMix64;
use prism_gpu::ProductionGpuRuntime;

/// A generator with a fresh seed, printed so that a failure can be replayed.
pub fn fresh_rng(test: &str) -> SplitMix64 {
    let seed = SplitMix64::from_time().next_u64();
    eprintln!("{test}: seed {seed:#x}");
    SplitMix64::new(seed)
}

/// Asserts `|got - want| <= tol * max(1, |want|)` for each element.
pub fn close(got: &[f32], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let e = (f64::from(g) - w).abs();
        assert!(e <= tol * w.abs().max(1.0), "{what}[{i}]: {g} vs {w} (error {e:e})");
    }
}

fn f64s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| f64::from(x)).collect()
}

// ---------------------------------------------------------------------------------------------
// the runtime's operations

/// Every check of the runtime's operations below, on `rt`, from a fresh generator named `test`.
pub fn runtime_ops(rt: &ProductionGpuRuntime, test: &str) {
    let mut rng = fresh_rng(test);
    bias_ops(rt, &mut rng);
    loss_ops(rt, &mut rng);
    dropout_and_gather(rt, &mut rng);
    optimizers(rt, &mut rng);
}

/// Bias add and bias gradient at odd shapes.
fn bias_ops(rt: &ProductionGpuRuntime, rng: &mut SplitMix64) {
    for (rows, cols) in [(1, 1), (3, 7), (129, 33), (1000, 10), (17, 513)] {
        let y0 = rng.vec(rows * cols, -2.0, 2.0);
        let bias = rng.vec(cols, -1.0, 1.0);
        let mut y = y0.clone();
        rt.bias_add(&mut y, &bias, rows, cols).unwrap();
        let want: Vec<f64> = (0..rows * cols).map(|i| f64::from(y0[i]) + f64::from(bias[i % cols])).collect();
        close(&y, &want, 1e-7, &format!("bias_add {rows}x{cols}"));
        let db = rt.bias_grad(&y0, rows, cols).unwrap();
        let mut want = vec![0.0f64; cols];
        let mut scale = vec![0.0f64; cols];
        for (i, &v) in y0.iter().enumerate() {
            want[i % cols] += f64::from(v);
            scale[i % cols] += f64::from(v).abs();
        }
        for c in 0..cols {
            let e = (f64::from(db[c]) - want[c]).abs();
            assert!(e <= 1e-5 * scale[c].max(1.0), "bias_grad {rows}x{cols}[{c}]: {} vs {}", db[c], want[c]);
        }
    }
    assert!(rt.bias_add(&mut [0.0; 6], &[1.0; 4], 2, 3).unwrap_err().to_string().contains("bias"));
    assert!(rt.bias_grad(&[0.0; 5], 2, 3).unwrap_err().to_string().contains("dy"));
}

/// Fused softmax cross-entropy and MSE against f64 references.
fn loss_ops(rt: &ProductionGpuRuntime, rng: &mut SplitMix64) {
    for (rows, cols) in [(1, 1), (5, 3), (128, 10), (33, 100), (7, 1000)] {
        let x = rng.vec(rows * cols, -8.0, 8.0);
        let labels: Vec<i32> = (0..rows).map(|_| (rng.next_u64() % cols as u64) as i32).collect();
        let scale = 1.0 / rows as f32;
        let out = rt.softmax_cross_entropy(&x, &labels, rows, cols, scale).unwrap();
        let (mut loss, mut correct, mut grad) = (vec![], vec![], vec![]);
        for r in 0..rows {
            let row = &x[r * cols..(r + 1) * cols];
            let m = row.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(f64::from(v)));
            let s: f64 = row.iter().map(|&v| (f64::from(v) - m).exp()).sum();
            let l = labels[r] as usize;
            loss.push(m + s.ln() - f64::from(row[l]));
            let first_max = row.iter().position(|&v| f64::from(v) == m).unwrap();
            correct.push(if first_max == l { 1.0 } else { 0.0 });
            for (c, &v) in row.iter().enumerate() {
                let p = (f64::from(v) - m).exp() / s;
                grad.push((p - if c == l { 1.0 } else { 0.0 }) * f64::from(scale));
            }
        }
        close(&out.loss, &loss, 2e-6, &format!("xent loss {rows}x{cols}"));
        close(&out.correct, &correct, 0.0, &format!("xent correct {rows}x{cols}"));
        close(&out.grad, &grad, 1e-6, &format!("xent grad {rows}x{cols}"));

        let target = rng.vec(rows * cols, -1.0, 1.0);
        let gs = 1.0 / (rows * cols) as f32;
        let (l, g) = rt.mse_loss(&x, &target, rows, cols, gs).unwrap();
        let want_g: Vec<f64> = x
            .iter()
            .zip(&target)
            .map(|(&p, &t)| 2.0 * (f64::from(p) - f64::from(t)) * f64::from(gs))
            .collect();
        let want_l: Vec<f64> = (0..rows)
            .map(|r| {
                (0..cols)
                    .map(|c| (f64::from(x[r * cols + c]) - f64::from(target[r * cols + c])).powi(2))
                    .sum::<f64>()
                    / cols as f64
            })
            .collect();
        close(&l, &want_l, 2e-6, &format!("mse loss {rows}x{cols}"));
        close(&g, &want_g, 1e-6, &format!("mse grad {rows}x{cols}"));
    }
    let err = rt.softmax_cross_entropy(&[0.0; 6], &[0, 3], 2, 3, 1.0).unwrap_err().to_string();
    assert!(err.contains("label 3"), "{err}");
    let err = rt.softmax_cross_entropy(&[0.0; 6], &[0, -1], 2, 3, 1.0).unwrap_err().to_string();
    assert!(err.contains("label -1"), "{err}");
}

/// Dropout and row gathers (exact).
fn dropout_and_gather(rt: &ProductionGpuRuntime, rng: &mut SplitMix64) {
    let n = 100_003;
    let x = rng.vec(n, -3.0, 3.0);
    let u = rng.vec(n, 0.0, 1.0);
    for p in [0.0f32, 0.25, 0.9] {
        let y = rt.dropout(&x, &u, p).unwrap();
        let scale = 1.0 / (1.0 - p);
        let want: Vec<f64> =
            x.iter().zip(&u).map(|(&v, &r)| if r > p { f64::from(v * scale) } else { 0.0 }).collect();
        close(&y, &want, 0.0, &format!("dropout p {p}"));
    }
    assert!(rt.dropout(&x, &u, 1.0).is_err());
    assert!(rt.dropout(&x, &u[1..], 0.5).is_err());
    let (rows, cols) = (301, 7);
    let src = rng.vec(rows * cols, -1.0, 1.0);
    let index: Vec<u32> = (0..257)
        .map(|i| if i == 5 { rows as u32 + 3 } else { (rng.next_u64() % rows as u64) as u32 })
        .collect();
    let got = rt.gather_rows(&src, &index, cols).unwrap();
    for (r, &i) in index.iter().enumerate() {
        for c in 0..cols {
            let want = if (i as usize) < rows { src[i as usize * cols + c] } else { 0.0 };
            assert_eq!(got[r * cols + c], want, "gather row {r} col {c}");
        }
    }
    let labels: Vec<i32> = (0..rows as i32).map(|i| i * 3 - 7).collect();
    let got = rt.gather_rows(&labels, &index, 1).unwrap();
    for (r, &i) in index.iter().enumerate() {
        assert_eq!(got[r], if (i as usize) < rows { labels[i as usize] } else { 0 });
    }
}

/// Three steps of each optimiser against the update written out in f64.
fn optimizers(rt: &ProductionGpuRuntime, rng: &mut SplitMix64) {
    let n = 10_007;
    let rules = [
        Optimizer::Sgd { momentum: 0.9, weight_decay: 0.01 },
        Optimizer::Sgd { momentum: 0.0, weight_decay: 0.0 },
        Optimizer::Adam { beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.0 },
        Optimizer::Adam { beta1: 0.8, beta2: 0.99, eps: 1e-6, weight_decay: 0.05 },
        Optimizer::AdamW { beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.01 },
    ];
    for opt in rules {
        let lr = 0.01f32;
        let mut p = rng.vec(n, -1.0, 1.0);
        let mut state = vec![0.0f32; opt.state_len(n).unwrap()];
        let mut rp = f64s(&p);
        let (mut m, mut v) = (vec![0.0f64; n], vec![0.0f64; n]);
        for t in 1..=3u64 {
            let g = rng.vec(n, -1.0, 1.0);
            rt.optimizer_step(opt, lr, t, &mut p, &g, &mut state).unwrap();
            let lr = f64::from(lr);
            for i in 0..n {
                let gi = f64::from(g[i]);
                match opt {
                    Optimizer::Sgd { momentum, weight_decay } => {
                        let grad = gi + f64::from(weight_decay) * rp[i];
                        m[i] = f64::from(momentum) * m[i] + grad;
                        rp[i] -= lr * m[i];
                    }
                    Optimizer::Adam { beta1, beta2, eps, weight_decay }
                    | Optimizer::AdamW { beta1, beta2, eps, weight_decay } => {
                        let decoupled = matches!(opt, Optimizer::AdamW { .. });
                        let (b1, b2, wd) = (f64::from(beta1), f64::from(beta2), f64::from(weight_decay));
                        let grad = if decoupled { gi } else { gi + wd * rp[i] };
                        if decoupled {
                            rp[i] *= 1.0 - lr * wd;
                        }
                        m[i] = b1 * m[i] + (1.0 - b1) * grad;
                        v[i] = b2 * v[i] + (1.0 - b2) * grad * grad;
                        let mhat = m[i] / (1.0 - b1.powi(t as i32));
                        let vhat = v[i] / (1.0 - b2.powi(t as i32));
                        rp[i] -= lr * mhat / (vhat.sqrt() + f64::from(eps));
                    }
                }
            }
            close(&p, &rp, 2e-6, &format!("{opt:?} step {t}"));
        }
    }
    let mut p = vec![1.0f32; 4];
    let mut s = vec![0.0f32; 8];
    assert!(rt.optimizer_step(Optimizer::ADAM, 0.1, 0, &mut p, &[0.0; 4], &mut s).is_err(), "step 0");
    assert!(
        rt.optimizer_step(Optimizer::ADAM, 0.1, 1, &mut p, &[0.0; 4], &mut s[..4]).is_err(),
        "short state"
    );
}

// ---------------------------------------------------------------------------------------------
// models

/// A small model `inputs -> 7 -> 5 -> classes` with `act` between the dense layers.
pub fn small_model(device: &Device, act: Activation, inputs: usize, classes: usize, seed: u64) -> Sequential {
    Sequential::builder(inputs)
        .linear(7)
        .activation(act)
        .linear(5)
        .activation(act)
        .linear(classes)
        .build(device, seed)
        .unwrap()
}

fn act64(act: Activation, x: f64) -> f64 {
    match act {
        Activation::Relu => x.max(0.0),
        Activation::LeakyRelu(s) => {
            if x > 0.0 {
                x
            } else {
                f64::from(s) * x
            }
        }
        Activation::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        Activation::Tanh => x.tanh(),
        Activation::Gelu => {
            let k = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
        }
    }
}

/// The model's forward pass and mean cross-entropy in f64, from its layer list and `params`.
pub fn reference_loss(layers: &[Layer], params: &[f64], x: &[f64], labels: &[u32], inputs: usize) -> f64 {
    let rows = labels.len();
    let mut h = x.to_vec();
    let mut width = inputs;
    for layer in layers {
        match layer {
            Layer::Linear(l) => {
                let (w, b) = (&params[l.weight_range()], &params[l.bias_range()]);
                let mut y = vec![0.0; rows * l.outputs];
                for r in 0..rows {
                    for o in 0..l.outputs {
                        y[r * l.outputs + o] = b[o]
                            + (0..l.inputs).map(|i| h[r * l.inputs + i] * w[i * l.outputs + o]).sum::<f64>();
                    }
                }
                h = y;
                width = l.outputs;
            }
            Layer::Activation(a) => h.iter_mut().for_each(|v| *v = act64(*a, *v)),
            Layer::Dropout(_) => {}
        }
    }
    (0..rows)
        .map(|r| {
            let row = &h[r * width..(r + 1) * width];
            let m = row.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v));
            m + row.iter().map(|v| (v - m).exp()).sum::<f64>().ln() - row[labels[r] as usize]
        })
        .sum::<f64>()
        / rows as f64
}

/// The analytic gradients of `model` on a batch (forward, fused cross-entropy, backward).
pub fn analytic_grads(device: &Device, model: &mut Sequential, x: &[f32], labels: &[u32]) -> Vec<f32> {
    let rows = labels.len();
    let xt = prism_gpu::nn::Tensor::from_vec(device, x.to_vec(), &[rows, model.inputs()]).unwrap();
    let logits = model.forward(&xt.view(), true).unwrap();
    let y = prism_gpu::nn::Labels::new(device, labels, model.outputs()).unwrap();
    let out = prism_gpu::nn::softmax_cross_entropy(device, &logits, &y).unwrap();
    model.backward(&xt.view(), out.grad).unwrap();
    model.grads().to_vec().unwrap()
}

/// Synthetic classification data: `classes` Gaussian-ish blobs in `dims` dimensions.
pub fn blobs(rng: &mut SplitMix64, n: usize, dims: usize, classes: usize) -> (Vec<f32>, Vec<u32>) {
    let centres: Vec<Vec<f32>> = (0..classes).map(|_| rng.vec(dims, -2.0, 2.0)).collect();
    let mut data = Vec::with_capacity(n * dims);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let c = (rng.next_u64() % classes as u64) as usize;
        labels.push(c as u32);
        data.extend(centres[c].iter().map(|&m| m + rng.uniform(-1.0, 1.0) + rng.uniform(-1.0, 1.0)));
    }
    (data, labels)
}

/// A short training run whose loss must fall and whose accuracy must be high.
pub fn training_reduces_loss(use_gpu: bool, rng: &mut SplitMix64) {
    let (data, labels) = blobs(rng, 3001, 20, 4);
    let device = if use_gpu { Device::gpu(0).unwrap() } else { Device::cpu() };
    let model = Sequential::builder(20).linear(32).relu().dropout(0.1).linear(4).build(&device, 3).unwrap();
    let mut net = Network::new(model);
    let config = TrainingConfig {
        epochs: 6,
        batch_size: 64,
        learning_rate: 3e-3,
        use_gpu,
        prefer_gpu: false,
        seed: 11,
        ..Default::default()
    };
    let history =
        net.train_with_test(&data, &labels, Some((&data[..20 * 500], &labels[..500])), &config).unwrap();
    let (first, last) = (&history.epochs[0], history.epochs.last().unwrap());
    eprintln!("{}: {history:?}", history.device);
    assert_eq!(history.epochs.len(), 6);
    assert!(last.loss < 0.5 * first.loss, "loss {} -> {}", first.loss, last.loss);
    assert!(last.accuracy > 0.9, "accuracy {}", last.accuracy);
    assert!(last.test_accuracy.unwrap() > 0.9, "test accuracy {:?}", last.test_accuracy);
    assert_eq!(net.steps(), 6 * 3001u64.div_ceil(64));
}
