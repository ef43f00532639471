//! `prism_gpu::nn::DataParallel` on the GPUs of one host, against plain training on one GPU with
//! the same seed, model and global batch, in worlds of 1, 2 and all visible GPUs (each in a child
//! process with `NCCL_NVLS_ENABLE=0`, see `nccl_worlds`; larger worlds than GPUs are skipped with a
//! line saying so):
//! - a world of one trains bit for bit as `Network::train` does (the same kernels in the same
//!   order; the all-reduce of one rank leaves the gradients as they are);
//! - in larger worlds every replica holds the same parameters, bit for bit, after training, and the
//!   final loss and accuracy match one GPU's within the tolerances below (the gradient sums then
//!   run in another order, so the runs drift apart by rounding only).
//!
//! Run on the GPU machine: `cargo test --release --features nccl --test nccl_data_parallel_gpu --
//! --include-ignored`.
#![cfg(all(feature = "nccl", not(feature = "legacy-gpu")))]

mod nccl_worlds;
mod nn_checks;

use prism_gpu::nn::{DataParallel, Device, History, Network, Sequential, TrainingConfig};
use prism_gpu::rng::SplitMix64;

/// Largest difference of the final epoch's mean training loss, relative, from one GPU's.
const LOSS_TOLERANCE: f32 = 0.02;
/// Largest difference of the final test accuracy from one GPU's (2 of every 100 test samples).
const ACCURACY_TOLERANCE: f32 = 0.02;

#[test]
#[ignore = "needs a CUDA GPU"]
fn data_parallel_training_matches_one_gpu() {
    nccl_worlds::in_one_process("data_parallel_training_matches_one_gpu", |world, seed| {
        let mut rng = SplitMix64::new(seed);
        // Overlapping classes, so that accuracy is well below 1 and can differ.
        // One draw split in two: each call of `blobs` picks new class centres, so a second draw
        // would be a test set of other classes.
        let (all_data, all_labels) = nn_checks::blobs(&mut rng, 7000, 8, 6);
        let (data, test_data) = all_data.split_at(6000 * 8);
        let (labels, test_labels) = all_labels.split_at(6000);
        let model_seed = rng.next_u64();
        let build = |device: &Device| {
            Sequential::builder(8)
                .linear(64)
                .relu()
                .linear(32)
                .gelu()
                .linear(6)
                .build(device, model_seed)
                .unwrap()
        };
        let config = TrainingConfig {
            epochs: 4,
            // Not a multiple of 2 or 4: the shards of a batch differ by a row; the epoch's last
            // batch has 6000 % 257 = 89 rows.
            batch_size: 257,
            learning_rate: 2e-3,
            prefer_gpu: false,
            seed: rng.next_u64(),
            ..Default::default()
        };
        let test = Some((test_data, test_labels));

        let gpu = Device::gpu(0).expect("a CUDA GPU");
        let mut single = Network::new(build(&gpu));
        let one = single.train_with_test(data, labels, test, &config).unwrap();
        let mut parallel = DataParallel::new(&build(&gpu), &(0..world).collect::<Vec<_>>()).unwrap();
        assert_eq!(parallel.world_size(), world);
        let many = parallel.train(data, labels, test, &config).unwrap();
        println!("world {world}\n  one GPU:  {}\n  parallel: {}", summary(&one), summary(&many));
        println!("  {}", many.device);

        let replicas: Vec<Vec<f32>> =
            parallel.replicas().iter().map(|r| r.model().params().to_vec().unwrap()).collect();
        for (r, params) in replicas.iter().enumerate() {
            assert!(params.iter().all(|p| p.is_finite()), "replica {r}: non-finite parameters");
            assert!(params == &replicas[0], "replica {r} differs from replica 0 after training");
            assert_eq!(parallel.replicas()[r].steps(), single.steps(), "replica {r}: optimiser steps");
        }
        let reference = single.model().params().to_vec().unwrap();
        assert!(reference != build(&Device::cpu()).params().to_vec().unwrap(), "training moved nothing");
        if world == 1 {
            assert!(replicas[0] == reference, "a world of one must train bit for bit as one GPU");
            for (a, b) in many.epochs.iter().zip(&one.epochs) {
                let figures =
                    |e: &prism_gpu::nn::EpochStats| (e.loss, e.accuracy, e.test_loss, e.test_accuracy);
                assert_eq!(figures(a), figures(b), "epoch {}: figures differ", a.epoch);
            }
            return;
        }
        let (a, b) = (many.epochs.last().unwrap(), one.epochs.last().unwrap());
        assert!(
            (a.loss - b.loss).abs() <= LOSS_TOLERANCE * b.loss,
            "final loss {} vs one GPU's {}",
            a.loss,
            b.loss
        );
        let (ta, tb) = (a.test_accuracy.unwrap(), b.test_accuracy.unwrap());
        assert!((ta - tb).abs() <= ACCURACY_TOLERANCE, "test accuracy {ta} vs one GPU's {tb}");
        let drift = replicas[0].iter().zip(&reference).map(|(p, q)| (p - q).abs()).fold(0.0f32, f32::max);
        println!("  largest parameter difference from one GPU: {drift:e}");
    });
}

fn summary(h: &History) -> String {
    h.epochs
        .iter()
        .map(|e| {
            format!(
                "[loss {:.5} acc {:.4} test {:.4}]",
                e.loss,
                e.accuracy,
                e.test_accuracy.unwrap_or(f32::NAN)
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}
