//! Fashion-MNIST with an MLP 784-512-256-10 (ReLU), Adam 1e-3, batch 128, 10 epochs: loss and
//! accuracy per epoch, the final test accuracy, and an SVG plot of both.
//!
//! ```text
//! cargo run --release --example real_gpu_neural_network            # a GPU (CPU fallback without one)
//! cargo run --release --example real_gpu_neural_network -- --cpu   # the CPU fallback
//! cargo run --release --example real_gpu_neural_network -- --bench # time training steps and epochs
//! ```
//! Options: `--epochs N`, `--batch N`, `--seed N`, `--tf32`, `--graph` (train with the step
//! captured once as a CUDA graph and replayed), `--data DIR` (default
//! `/usr/share/datasets/fashion-mnist`, from Debian's `dataset-fashion-mnist` package:
//! `apt-get install dataset-fashion-mnist`), `--plot FILE` (default
//! `target/real_gpu_neural_network.svg`), `--bench` (step times at batch 128 and 1024 on random
//! data: on the default stream, on a stream of its own, and captured once as a CUDA graph and
//! replayed; then the training run's epoch throughput).

use std::error::Error;
use std::time::Instant;

use plotters::prelude::*;
use prism_gpu::nn::{idx, Device, History, Labels, Network, Sequential, Tensor, TrainingConfig};
use prism_gpu::ops::nn::Optimizer;
use prism_gpu::rng::SplitMix64;
use prism_gpu::Precision;

struct Args {
    cpu: bool,
    bench: bool,
    graph: bool,
    tf32: bool,
    epochs: usize,
    batch: usize,
    seed: u64,
    data: String,
    plot: String,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        cpu: false,
        bench: false,
        graph: false,
        tf32: false,
        epochs: 10,
        batch: 128,
        seed: 42,
        data: idx::FASHION_MNIST_DIR.into(),
        plot: "target/real_gpu_neural_network.svg".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--cpu" => a.cpu = true,
            "--bench" => a.bench = true,
            "--graph" => a.graph = true,
            "--tf32" => a.tf32 = true,
            "--epochs" => a.epochs = value("--epochs")?.parse().map_err(|e| format!("--epochs: {e}"))?,
            "--batch" => a.batch = value("--batch")?.parse().map_err(|e| format!("--batch: {e}"))?,
            "--seed" => a.seed = value("--seed")?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--data" => a.data = value("--data")?,
            "--plot" => a.plot = value("--plot")?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

fn mlp(device: &Device, seed: u64) -> prism_gpu::Result<Sequential> {
    Sequential::builder(784).linear(512).relu().linear(256).relu().linear(10).build(device, seed)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = args()?;
    let data = match idx::load_dir(&args.data) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("Fashion-MNIST not found ({e}).\nInstall it with `apt-get install dataset-fashion-mnist` or pass --data DIR.");
            std::process::exit(2);
        }
    };
    let device = if args.cpu { Device::cpu() } else { Device::auto() };
    println!("device: {}", device.describe());
    println!(
        "Fashion-MNIST: {} training and {} test images of {}x{}",
        data.train_images.count, data.test_images.count, data.train_images.rows, data.train_images.cols
    );
    let precision = if args.tf32 { Precision::Tf32 } else { Precision::F32 };
    if args.bench {
        let graphs = if device.is_gpu() { Some(Device::gpu_for_graphs(0)?) } else { None };
        for batch in [128, 1024] {
            let us = step_time(&device, batch, precision, args.seed, false)?;
            print!("one training step (forward, loss, backward, Adam) at batch {batch}: {us:.1} us");
            if let Some(g) = &graphs {
                let own = step_time(g, batch, precision, args.seed, false)?;
                let replay = step_time(g, batch, precision, args.seed, true)?;
                print!(", on a stream of its own {own:.1} us, replayed as a CUDA graph {replay:.1} us");
            }
            println!();
        }
    }

    let mut net = Network::new(mlp(&device, args.seed)?);
    let config = TrainingConfig {
        epochs: args.epochs,
        batch_size: args.batch,
        learning_rate: 1e-3,
        use_gpu: !args.cpu,
        prefer_gpu: true,
        seed: args.seed,
        optimizer: Optimizer::ADAM,
        precision,
        progress: true,
        cuda_graph: args.graph,
        ..Default::default()
    };
    let start = Instant::now();
    let history = net.train_with_test(
        &data.train_images.pixels,
        &data.train_labels,
        Some((&data.test_images.pixels, &data.test_labels)),
        &config,
    )?;
    println!("trained on {} in {:.1} s", history.device, start.elapsed().as_secs_f64());
    println!("epoch  train loss  train acc  test loss  test acc  samples/s");
    for e in &history.epochs {
        println!(
            "{:>5}  {:>10.4}  {:>9.4}  {:>9.4}  {:>8.4}  {:>9.0}",
            e.epoch,
            e.loss,
            e.accuracy,
            e.test_loss.unwrap_or(f32::NAN),
            e.test_accuracy.unwrap_or(f32::NAN),
            data.train_images.count as f64 / e.seconds
        );
    }
    let last = history.epochs.last().ok_or("no epochs were run")?;
    println!("final test accuracy: {:.4}", last.test_accuracy.unwrap_or(f32::NAN));
    plot(&history, &args.plot)?;
    println!("plot: {}", args.plot);
    Ok(())
}

/// Median time of one training step at `batch` on random data already on the device, run
/// eagerly or (`graph`) captured once and replayed.
fn step_time(
    device: &Device,
    batch: usize,
    precision: Precision,
    seed: u64,
    graph: bool,
) -> Result<f64, Box<dyn Error>> {
    let mut rng = SplitMix64::new(seed);
    let x = Tensor::from_vec(device, rng.vec(batch * 784, 0.0, 1.0), &[batch, 784])?;
    let labels: Vec<u32> = (0..batch).map(|_| (rng.next_u64() % 10) as u32).collect();
    let y = Labels::new(device, &labels, 10)?;
    let mut net = Network::new(mlp(device, seed)?);
    net.model_mut().set_precision(precision);
    let sync = |net: &Network| net.model().params().to_vec().map(|_| ());
    let captured = if graph { Some(net.capture_step(&x.view(), &y, Optimizer::ADAM, 1e-3)?) } else { None };
    let step = |net: &mut Network| match &captured {
        Some(c) => net.replay(c),
        None => net.train_step(&x.view(), &y, Optimizer::ADAM, 1e-3),
    };
    for _ in 0..20 {
        step(&mut net)?;
    }
    sync(&net)?;
    let mut times = Vec::new();
    for _ in 0..7 {
        let start = Instant::now();
        for _ in 0..100 {
            step(&mut net)?;
        }
        sync(&net)?;
        times.push(start.elapsed().as_secs_f64() * 1e6 / 100.0);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Loss (left) and accuracy (right) per epoch, training and test, as an SVG file.
fn plot(history: &History, path: &str) -> Result<(), Box<dyn Error>> {
    if let Some(dir) = std::path::Path::new(path).parent() {
        std::fs::create_dir_all(dir)?;
    }
    let root = SVGBackend::new(path, (1000, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(500);
    let epochs = history.epochs.len() as f64;
    let series = |f: &dyn Fn(&prism_gpu::nn::EpochStats) -> Option<f32>| -> Vec<(f64, f64)> {
        history.epochs.iter().filter_map(|e| f(e).map(|v| (e.epoch as f64, f64::from(v)))).collect()
    };
    let panels = [
        (&left, "loss", series(&|e| Some(e.loss)), series(&|e| e.test_loss)),
        (&right, "accuracy", series(&|e| Some(e.accuracy)), series(&|e| e.test_accuracy)),
    ];
    for (area, name, train, test) in panels {
        let values = train.iter().chain(&test).map(|p| p.1);
        let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
        let pad = ((hi - lo) * 0.1).max(1e-3);
        let mut chart = ChartBuilder::on(area)
            .caption(format!("{name} per epoch ({})", history.device), ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(0.5..epochs + 0.5, (lo - pad)..(hi + pad))?;
        chart.configure_mesh().x_desc("epoch").y_desc(name).draw()?;
        chart
            .draw_series(LineSeries::new(train, BLUE.stroke_width(2)))?
            .label("train")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLUE));
        chart
            .draw_series(LineSeries::new(test, RED.stroke_width(2)))?
            .label("test")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], RED));
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    }
    root.present()?;
    Ok(())
}
