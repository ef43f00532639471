//! The `nccl` group: all-reduce bandwidth over every visible GPU through `prism_gpu::nccl`, beside
//! NCCL driven by PyTorch's `torch.distributed` in the same run, and data-parallel training
//! throughput (`prism_gpu::nn::DataParallel` on every GPU beside `Network::train` on one; on one
//! GPU, a replica of one beside it).
//!
//! All-reduce: in-place float32 sums from 1 KiB to 1 GiB, one rank per GPU. Ours runs one thread
//! per rank (`Comm::from_rank`, a stream of its own per GPU); PyTorch one process per rank
//! (`cli/scripts/nccl_allreduce_torch.py`, embedded here, started with `python3`). Both time `inner`
//! back-to-back all-reduces per sample with CUDA events, every rank starting each sample together,
//! after warm-up samples; a sample is the slowest rank's time per all-reduce and the figure is the
//! median sample. Reported as NCCL's bandwidths: algBw = bytes / time, and busBw = algBw × 2(n-1)/n
//! (what each link carries in a ring), which is 0 for a single rank: one GPU gets algBw rows only.
//! Without python3 or PyTorch (or when the script fails) the anchor column says why.
//!
//! NCCL reads `NCCL_NVLS_ENABLE` when communicators are made: this group refuses to run unless it
//! is `0` (the `prism-gpu` binary sets it first thing), and passes it to the PyTorch processes.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use prism_gpu::driver::sys::CUevent_flags;
use prism_gpu::driver::CudaContext;
use prism_gpu::nccl::{Comm, Id, ReduceOp};
use prism_gpu::nn::{DataParallel, Device, Network, Sequential, TrainingConfig};
use prism_gpu::rng::SplitMix64;
use prism_gpu::{Error, Result};

use super::{Measured, Row, Settings};

/// The PyTorch side, carried in the binary so nothing needs to travel beside it.
const TORCH_SCRIPT: &str = include_str!("../../scripts/nccl_allreduce_torch.py");
/// NCCL's switch for NVLink multicast, which must stay off.
pub const NVLS_OFF: (&str, &str) = ("NCCL_NVLS_ENABLE", "0");
/// The PyTorch run is stopped after this long (a rank that never joins would hang NCCL).
const TORCH_DEADLINE: Duration = Duration::from_secs(900);

/// All-reduce sizes in bytes: 1 KiB to 1 GiB, every power of 4 (quick) or of 2 (full).
pub fn sizes(full: bool) -> Vec<usize> {
    let step = if full { 1 } else { 2 };
    (10..=30).step_by(step).map(|p| 1usize << p).collect()
}

/// All-reduces per timed sample: about 256 MiB of data, between 1 and 100, so that small sizes
/// are not timed by the events' resolution.
fn inner(bytes: usize) -> usize {
    ((256usize << 20) / bytes).clamp(1, 100)
}

/// Runs the group on every visible GPU; `note` receives lines for the progress output.
pub fn run(settings: Settings, full: bool, note: &mut dyn FnMut(&str)) -> Result<Vec<Row>> {
    if std::env::var(NVLS_OFF.0).as_deref() != Ok(NVLS_OFF.1) {
        return Err(Error::Shape {
            op: "bench nccl",
            expected: format!("{}={} in the environment (NVLink multicast off)", NVLS_OFF.0, NVLS_OFF.1),
            got: format!("{:?}", std::env::var(NVLS_OFF.0).ok()),
        });
    }
    let world = usize::try_from(CudaContext::device_count()?).unwrap_or(0);
    let plan: Vec<(usize, usize)> = sizes(full).into_iter().map(|b| (b, inner(b))).collect();
    note(&format!("nccl: all-reduce over {world} GPU(s), {} sizes, ours then PyTorch", plan.len()));
    if world == 1 {
        note("nccl: one GPU: busBw = algBw x 2(n-1)/n is 0 for n = 1, so only algBw is reported");
    }
    let ours = all_reduce_ours(world, &plan, settings)?;
    let (anchor, theirs) = match all_reduce_torch(world, &plan, settings) {
        Ok((name, samples)) => (name, Some(samples)),
        Err(why) => {
            note(&format!("nccl: PyTorch anchor not run: {why}"));
            (format!("PyTorch: not run ({why})"), None)
        }
    };
    let mut rows = Vec::new();
    for (i, &(bytes, _)) in plan.iter().enumerate() {
        let ms = Measured::from_samples(ours[i].clone()).median_ms;
        let anchor_ms = theirs.as_ref().map(|t| Measured::from_samples(t[i].clone()).median_ms);
        let bandwidth = |bus: bool, ms: f64| {
            let alg = super::gigabytes_per_second(bytes as f64, ms);
            if bus {
                alg * 2.0 * (world as f64 - 1.0) / world as f64
            } else {
                alg
            }
        };
        let kinds: &[bool] = if world > 1 { &[true, false] } else { &[false] };
        for &bus in kinds {
            let kind = if bus { "busBw" } else { "algBw" };
            rows.push(Row {
                group: "nccl".into(),
                name: format!("all_reduce f32 {} {kind}, {world} GPU(s)", size_label(bytes)),
                series: Some((format!("all_reduce {kind}"), bytes as f64)),
                ours: bandwidth(bus, ms),
                anchor: anchor.clone(),
                anchor_value: anchor_ms.map(|t| bandwidth(bus, t)),
                unit: "GB/s".into(),
                higher_is_better: true,
                kernel: None,
            });
        }
    }
    rows.push(training_throughput(world, note)?);
    Ok(rows)
}

/// `1 KiB`, `256 MiB`, `1 GiB`.
fn size_label(bytes: usize) -> String {
    match bytes.trailing_zeros() {
        30.. => format!("{} GiB", bytes >> 30),
        20.. => format!("{} MiB", bytes >> 20),
        10.. => format!("{} KiB", bytes >> 10),
        _ => format!("{bytes} B"),
    }
}

/// Our all-reduce, one thread per rank: for each size of `plan`, the samples (milliseconds per
/// all-reduce on the slowest rank).
fn all_reduce_ours(world: usize, plan: &[(usize, usize)], settings: Settings) -> Result<Vec<Vec<f64>>> {
    let id = Id::new()?;
    let barrier = Arc::new(Barrier::new(world));
    let per_rank = std::thread::scope(|s| {
        let handles: Vec<_> = (0..world)
            .map(|rank| {
                let barrier = barrier.clone();
                s.spawn(move || rank_samples(rank, world, id, plan, settings, &barrier))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a rank's thread panicked")).collect::<Vec<_>>()
    });
    let per_rank = per_rank.into_iter().collect::<Result<Vec<_>>>()?;
    // The slowest rank of each sample.
    Ok((0..plan.len())
        .map(|i| {
            (0..per_rank[0][i].len()).map(|k| per_rank.iter().map(|r| r[i][k]).fold(0.0, f64::max)).collect()
        })
        .collect())
}

/// One rank's samples for every size of `plan` (see [`all_reduce_ours`]).
fn rank_samples(
    rank: usize,
    world: usize,
    id: Id,
    plan: &[(usize, usize)],
    settings: Settings,
    barrier: &Barrier,
) -> Result<Vec<Vec<f64>>> {
    let ctx = CudaContext::new(rank)?;
    let stream = ctx.new_stream()?;
    let comm = Comm::from_rank(stream.clone(), rank, world, id)?;
    // The collective works: ranks 1..n summed.
    let check = stream.clone_htod(&vec![(rank + 1) as f32; 1024])?;
    let mut sum = stream.alloc_zeros::<f32>(1024)?;
    comm.all_reduce(&check, &mut sum, &ReduceOp::Sum)?;
    let expected = (world * (world + 1) / 2) as f32;
    if stream.clone_dtoh(&sum)?.iter().any(|&v| v != expected) {
        return Err(Error::Shape {
            op: "bench nccl",
            expected: format!("all_reduce sums of {expected}"),
            got: "other values".into(),
        });
    }
    let largest = plan.iter().map(|&(b, _)| b / 4).max().unwrap_or(0);
    let mut buffer = stream.alloc_zeros::<f32>(largest)?;
    let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let (start, end) = (ctx.new_event(flags)?, ctx.new_event(flags)?);
    let mut all = Vec::with_capacity(plan.len());
    for &(bytes, inner) in plan {
        let mut data = buffer.slice_mut(0..bytes / 4);
        for _ in 0..settings.warmup * inner {
            comm.all_reduce_in_place(&mut data, &ReduceOp::Sum)?;
        }
        stream.synchronize()?;
        let mut samples = Vec::with_capacity(settings.repeats);
        for _ in 0..settings.repeats.max(1) {
            barrier.wait();
            start.record(&stream)?;
            for _ in 0..inner {
                comm.all_reduce_in_place(&mut data, &ReduceOp::Sum)?;
            }
            end.record(&stream)?;
            end.synchronize()?;
            samples.push(f64::from(start.elapsed_ms(&end)?) / inner as f64);
        }
        all.push(samples);
    }
    Ok(all)
}

/// PyTorch's all-reduce through the embedded script: the anchor's name and, for each size of
/// `plan`, its samples; or why it could not run.
fn all_reduce_torch(
    world: usize,
    plan: &[(usize, usize)],
    settings: Settings,
) -> std::result::Result<(String, Vec<Vec<f64>>), String> {
    let script = std::env::temp_dir().join(format!("prism-nccl-allreduce-{}.py", std::process::id()));
    std::fs::write(&script, TORCH_SCRIPT).map_err(|e| format!("writing {}: {e}", script.display()))?;
    let plan_arg = plan.iter().map(|(b, i)| format!("{b}:{i}")).collect::<Vec<_>>().join(",");
    let output = run_with_deadline(
        Command::new("python3")
            .arg(&script)
            .args(["--world", &world.to_string(), "--plan", &plan_arg])
            .args([
                "--warmup",
                &settings.warmup.to_string(),
                "--repeats",
                &settings.repeats.max(1).to_string(),
            ])
            .env(NVLS_OFF.0, NVLS_OFF.1)
            .env("PYTHONUNBUFFERED", "1"),
    );
    let _ = std::fs::remove_file(&script);
    let (success, stdout, stderr) = output?;
    parse_torch(&stdout, plan).map_err(|why| {
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        if success {
            why
        } else {
            format!("{why}; python3's last words: {last}")
        }
    })
}

/// Runs `command`, collecting its output, and kills it (that process, by its handle) if it runs
/// past [`TORCH_DEADLINE`]: (exit success, stdout, stderr), or why it could not start or finish.
fn run_with_deadline(command: &mut Command) -> std::result::Result<(bool, String, String), String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("python3 could not be started: {e}"))?;
    let read = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = read(Box::new(child.stdout.take().expect("piped")));
    let stderr = read(Box::new(child.stderr.take().expect("piped")));
    let started = Instant::now();
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) => break Some(status),
            None if started.elapsed() > TORCH_DEADLINE => break None,
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let (stdout, stderr) = (stdout.join().unwrap_or_default(), stderr.join().unwrap_or_default());
    match status {
        Some(s) => Ok((s.success(), stdout, stderr)),
        None => Err(format!("python3 ran past {TORCH_DEADLINE:?} and was stopped")),
    }
}

/// The anchor's name and samples per size from the script's JSON lines, in `plan`'s order.
fn parse_torch(
    stdout: &str,
    plan: &[(usize, usize)],
) -> std::result::Result<(String, Vec<Vec<f64>>), String> {
    let mut name = None;
    let mut by_size = std::collections::HashMap::new();
    for line in stdout.lines().filter(|l| l.starts_with('{')) {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("bad JSON line {line:?}: {e}"))?;
        if let Some(error) = v.get("error").and_then(|e| e.as_str()) {
            return Err(error.to_string());
        }
        if let (Some(torch), Some(nccl)) = (v.get("torch"), v.get("nccl")) {
            let text = |x: &serde_json::Value| x.as_str().map_or_else(|| x.to_string(), str::to_string);
            name = Some(format!("PyTorch {} torch.distributed (NCCL {})", text(torch), text(nccl)));
        }
        if let (Some(bytes), Some(samples)) =
            (v.get("bytes").and_then(|b| b.as_u64()), v.get("samples_ms").and_then(|s| s.as_array()))
        {
            let samples: Vec<f64> = samples.iter().filter_map(|s| s.as_f64()).collect();
            by_size.insert(bytes, samples);
        }
    }
    let name = name.ok_or("the script printed no version line")?;
    let samples = plan
        .iter()
        .map(|&(b, _)| match by_size.remove(&(b as u64)) {
            Some(s) if !s.is_empty() => Ok(s),
            _ => Err(format!("the script printed no samples for {}", size_label(b))),
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok((name, samples))
}

/// Samples per second of data-parallel training on every GPU beside plain training on one, at a
/// per-GPU batch that fills a GPU (the global batch grows with the GPUs): the second epoch of two,
/// so that the first one's kernel loads and allocations are not timed. On one GPU this is
/// `DataParallel` of one replica beside `Network::train`: what the all-reduce and the sharding cost.
fn training_throughput(world: usize, note: &mut dyn FnMut(&str)) -> Result<Row> {
    const PER_GPU_BATCH: usize = 4096;
    const STEPS: usize = 16;
    const INPUTS: usize = 256;
    let mut rng = SplitMix64::new(7);
    let samples_per_second = |gpus: usize, parallel: bool, rng: &mut SplitMix64| -> Result<f64> {
        let n = PER_GPU_BATCH * gpus * STEPS;
        let data = rng.vec(n * INPUTS, -1.0, 1.0);
        let labels: Vec<u32> = (0..n).map(|_| (rng.next_u64() % 10) as u32).collect();
        let gpu = Device::gpu(0)?;
        let model =
            Sequential::builder(INPUTS).linear(2048).relu().linear(2048).relu().linear(10).build(&gpu, 3)?;
        let config = TrainingConfig {
            epochs: 2,
            batch_size: PER_GPU_BATCH * gpus,
            prefer_gpu: false,
            ..Default::default()
        };
        let history = if parallel {
            DataParallel::new(&model, &(0..gpus).collect::<Vec<_>>())?.train(&data, &labels, None, &config)?
        } else {
            Network::new(model).train(&data, &labels, &config)?
        };
        let seconds = history.epochs.last().map_or(f64::NAN, |e| e.seconds);
        Ok(n as f64 / seconds)
    };
    note(&format!("nccl: training throughput, 1 GPU then {world} data-parallel, {PER_GPU_BATCH} samples per GPU per step"));
    let one = samples_per_second(1, false, &mut rng)?;
    let all = samples_per_second(world, true, &mut rng)?;
    Ok(Row {
        group: "nccl".into(),
        name: format!("data-parallel training, {world} GPU(s), batch {PER_GPU_BATCH}/GPU (ratio: scaling)"),
        series: None,
        ours: all,
        anchor: "Network::train on 1 GPU".into(),
        anchor_value: Some(one),
        unit: "samples/s".into(),
        higher_is_better: true,
        kernel: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_run_from_a_kibibyte_to_a_gibibyte() {
        let quick = sizes(false);
        assert_eq!((quick[0], *quick.last().unwrap(), quick.len()), (1 << 10, 1 << 30, 11));
        assert_eq!(sizes(true).len(), 21);
        assert_eq!((inner(1 << 10), inner(1 << 28), inner(1 << 30)), (100, 1, 1));
        assert_eq!(size_label(1 << 10), "1 KiB");
        assert_eq!(size_label(256 << 20), "256 MiB");
        assert_eq!(size_label(1 << 30), "1 GiB");
    }

    #[test]
    fn the_scripts_lines_parse_and_its_errors_are_reported() {
        let plan = [(1024, 100), (4096, 100)];
        let out = "noise\n{\"torch\": \"2.11.0\", \"nccl\": \"2.28.9\", \"world\": 2}\n\
                   {\"bytes\": 1024, \"samples_ms\": [0.02, 0.01]}\n{\"bytes\": 4096, \"samples_ms\": [0.03]}\n";
        let (name, samples) = parse_torch(out, &plan).unwrap();
        assert_eq!(name, "PyTorch 2.11.0 torch.distributed (NCCL 2.28.9)");
        assert_eq!(samples, [vec![0.02, 0.01], vec![0.03]]);
        let missing = parse_torch(&out.replace("{\"bytes\": 4096, \"samples_ms\": [0.03]}", ""), &plan);
        assert_eq!(missing.unwrap_err(), "the script printed no samples for 4 KiB");
        let error = parse_torch("{\"error\": \"PyTorch is not installed (x)\"}\n", &plan);
        assert_eq!(error.unwrap_err(), "PyTorch is not installed (x)");
    }

    #[test]
    fn without_torch_the_script_says_so() {
        // Where python3 runs without PyTorch (CI, this repository's build machines), the script's
        // own check answers; where PyTorch is installed, nothing is asserted here.
        let has_torch = Command::new("python3").args(["-c", "import torch"]).output();
        match has_torch {
            Ok(out) if !out.status.success() => {
                let plan = [(1024, 1)];
                let err = all_reduce_torch(1, &plan, Settings { warmup: 1, repeats: 1 }).unwrap_err();
                assert!(err.starts_with("PyTorch is not installed"), "{err}");
            }
            Ok(_) => eprintln!("skipped: PyTorch is installed here"),
            Err(e) => eprintln!("skipped: python3 cannot be started ({e})"),
        }
    }
}
