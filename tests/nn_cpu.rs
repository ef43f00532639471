//! `prism_gpu::nn` and the runtime's neural-network operations on the CPU fallback: f64
//! references, finite-difference gradients, a training run, bad input, IDX files.

mod nn_checks;

use nn_checks as checks;
use prism_gpu::nn::{self, idx, Activation, Device, Network, Optimizer, Sequential, Tensor, TrainingConfig};
use prism_gpu::rng::SplitMix64;
use prism_gpu::ProductionGpuRuntime;

#[test]
fn runtime_nn_ops_match_f64_references() {
    let rt = ProductionGpuRuntime::cpu();
    let mut rng = checks::fresh_rng("runtime_nn_ops");
    checks::bias_ops(&rt, &mut rng);
    checks::loss_ops(&rt, &mut rng);
    checks::dropout_and_gather(&rt, &mut rng);
    checks::optimizers(&rt, &mut rng);
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

// ---------------------------------------------------------------------------------------------
// IDX files

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("idx-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn idx_files_plain_and_gzipped_round_trip() {
    let mut rng = checks::fresh_rng("idx");
    let dir = temp_dir("roundtrip");
    let (n, r, c) = (5, 3, 4);
    let pixels: Vec<u8> = (0..n * r * c).map(|_| rng.next_u64() as u8).collect();
    let labels: Vec<u8> = (0..n).map(|_| (rng.next_u64() % 10) as u8).collect();
    let images = idx::encode_u8(&[n, r, c], &pixels).unwrap();
    let label_file = idx::encode_u8(&[n], &labels).unwrap();
    std::fs::write(dir.join("train-images-idx3-ubyte.gz"), gzip(&images)).unwrap();
    std::fs::write(dir.join("train-labels-idx1-ubyte"), &label_file).unwrap();
    std::fs::write(dir.join("t10k-images-idx3-ubyte"), &images).unwrap();
    std::fs::write(dir.join("t10k-labels-idx1-ubyte.gz"), gzip(&label_file)).unwrap();
    let set = idx::load_dir(&dir).unwrap();
    for im in [&set.train_images, &set.test_images] {
        assert_eq!((im.count, im.rows, im.cols, im.features()), (n, r, c, r * c));
        for (got, &b) in im.pixels.iter().zip(&pixels) {
            assert_eq!(*got, f32::from(b) / 255.0);
        }
    }
    let want: Vec<u32> = labels.iter().map(|&l| u32::from(l)).collect();
    assert_eq!(set.train_labels, want);
    assert_eq!(set.test_labels, want);

    // A label file with fewer labels than images is refused.
    std::fs::write(
        dir.join("t10k-labels-idx1-ubyte.gz"),
        gzip(&idx::encode_u8(&[n - 1], &labels[1..]).unwrap()),
    )
    .unwrap();
    let e = idx::load_dir(&dir).unwrap_err().to_string();
    assert!(e.contains("5 images but 4 labels"), "{e}");
}

#[test]
fn bad_idx_files_are_errors() {
    let good = idx::encode_u8(&[2, 2], &[1, 2, 3, 4]).unwrap();
    assert_eq!(idx::parse(&good).unwrap().dims, [2, 2]);
    let e = |b: &[u8]| idx::parse(b).unwrap_err().to_string();
    assert!(e(&good[..good.len() - 1]).contains("need 4 bytes"));
    assert!(e(&[good.as_slice(), &[9]].concat()).contains("need 4 bytes"));
    assert!(e(&good[..3]).contains("shorter"));
    assert!(e(&[1, 0, 8, 1, 0, 0, 0, 0]).contains("two zero bytes"));
    assert!(e(&[0, 0, 0x0d, 1, 0, 0, 0, 0]).contains("element type 0x0d"));
    assert!(e(&[0, 0, 8, 2, 0, 0, 0, 1]).contains("header"));
    assert!(e(&[0, 0, 8, 0]).contains("no dimensions"));
    assert!(e(&[0, 0, 8, 4, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255])
        .contains("overflow"));
    assert!(e(&[0x1f, 0x8b, 1, 2, 3]).contains("gzip"));
    assert!(idx::Images::parse(&good).unwrap_err().to_string().contains("3 dimensions"));
    assert!(idx::parse_labels(&good).unwrap_err().to_string().contains("1 dimension"));
    assert!(idx::encode_u8(&[2, 3], &[0; 5]).is_err());
    let missing = idx::read("/nonexistent/train-images-idx3-ubyte").unwrap_err().to_string();
    assert!(missing.contains("/nonexistent/train-images-idx3-ubyte"), "{missing}");
}

#[test]
fn training_on_a_small_idx_data_set() {
    // Two classes of 4x4 images: bright top half or bright bottom half, written as IDX and read back.
    let mut rng = checks::fresh_rng("idx_training");
    let n = 400;
    let mut pixels = Vec::with_capacity(n * 16);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let class = (rng.next_u64() % 2) as u8;
        labels.push(class);
        for p in 0..16 {
            let bright = (p < 8) == (class == 0);
            pixels.push(if bright {
                150 + (rng.next_u64() % 100) as u8
            } else {
                (rng.next_u64() % 100) as u8
            });
        }
    }
    let images = idx::Images::parse(&gzip(&idx::encode_u8(&[n, 4, 4], &pixels).unwrap())).unwrap();
    let labels = idx::parse_labels(&idx::encode_u8(&[n], &labels).unwrap()).unwrap();
    let model =
        Sequential::builder(images.features()).linear(8).relu().linear(2).build(&Device::cpu(), 2).unwrap();
    let mut net = Network::new(model);
    let config = TrainingConfig {
        epochs: 5,
        batch_size: 32,
        learning_rate: 1e-2,
        use_gpu: false,
        ..Default::default()
    };
    let history = net.train(&images.pixels, &labels, &config).unwrap();
    let (loss, acc) = net.evaluate(&images.pixels, &labels, 64).unwrap();
    assert!(history.epochs[4].loss < history.epochs[0].loss, "{history:?}");
    assert!(acc > 0.95, "accuracy {acc}, loss {loss}");
    let predicted = net.predict(&images.pixels).unwrap();
    let agree = predicted.iter().zip(&labels).filter(|(p, l)| p == l).count();
    assert!((agree as f32 / n as f32 - acc).abs() < 1e-6, "predict agrees with evaluate");
}

// ---------------------------------------------------------------------------------------------
// safetensors

#[test]
fn weights_round_trip_through_safetensors_in_pytorch_layout() {
    let mut rng = checks::fresh_rng("safetensors");
    let device = Device::cpu();
    let a = checks::small_model(&device, Activation::Relu, 6, 3, rng.next_u64());
    let mut b = checks::small_model(&device, Activation::Relu, 6, 3, rng.next_u64());
    assert_ne!(a.params().to_vec().unwrap(), b.params().to_vec().unwrap());
    let path = temp_dir("safetensors").join("model.safetensors");
    a.save_safetensors(&path).unwrap();
    b.load_safetensors(&path).unwrap();
    assert_eq!(a.params().to_vec().unwrap(), b.params().to_vec().unwrap());

    // PyTorch's layout: "0.weight" is [outputs, inputs], so element (o, i) is W[i, o] of ours.
    let bytes = a.to_safetensors().unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let w = file.tensor("0.weight").unwrap();
    assert_eq!(w.shape(), [7, 6]);
    let params = a.params().to_vec().unwrap();
    let (o, i) = (4, 5);
    let at = (o * 6 + i) * 4;
    let got = f32::from_le_bytes(w.data()[at..at + 4].try_into().unwrap());
    assert_eq!(got, params[i * 7 + o]);
    assert_eq!(file.tensor("4.bias").unwrap().shape(), [3], "layer indices count the activations");

    // A model of another shape is refused, and keeps its weights.
    let mut other = checks::small_model(&device, Activation::Relu, 5, 3, 1);
    let before = other.params().to_vec().unwrap();
    let e = other.load_safetensors_bytes(&bytes).unwrap_err().to_string();
    assert!(e.contains("0.weight") && e.contains("[7, 5]"), "{e}");
    assert_eq!(other.params().to_vec().unwrap(), before);
    assert!(other.load_safetensors_bytes(b"not a safetensors file").is_err());
    assert!(other
        .load_safetensors("/nonexistent/model.safetensors")
        .unwrap_err()
        .to_string()
        .contains("/nonexistent"));
}
