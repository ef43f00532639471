//! `prism_gpu::nn`'s file formats (feature `nn-io`): IDX data sets, plain and gzipped, and
//! safetensors weights, on the CPU fallback.
#![cfg(feature = "nn-io")]

mod nn_checks;

use nn_checks as checks;
use prism_gpu::nn::{idx, Device, Network, Sequential, TrainingConfig};
use prism_gpu::ops::activations::Activation;

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
