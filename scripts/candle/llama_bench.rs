//! A Llama decoder of about 1.2B parameters (Llama 3.2 1B's shapes, random bf16 weights, no
//! download) on candle-transformers, timed on CUDA device 0: prefill of 512 tokens, then greedy
//! decode at batch 1 and 8 (each step's next tokens copied to the host, as a sampler would).
//! Built twice by scripts/candle-check (against prism-gpu and against the real cudarc); prints
//! `RESULT <name> <tokens per second>` lines for the runner's table.
//!
//! `LLAMA_PROFILE=prefill|decode1|decode8` runs that phase once more after a warm-up between
//! `cuProfilerStart` and `cuProfilerStop`, for `ncu --profile-from-start off` (candle-run profile).
use std::time::Instant;

use candle_core::{DType, Device, IndexOp, Result, Tensor};
use candle_nn::{VarBuilder, VarMap};
use candle_transformers::models::llama::{Cache, Config, Llama};

const PREFILL: usize = 512;
const DECODE_STEPS: usize = 64;
const REPEATS: usize = 5;

fn config() -> Config {
    Config {
        hidden_size: 2048,
        intermediate_size: 8192,
        vocab_size: 128_256,
        num_hidden_layers: 16,
        num_attention_heads: 32,
        num_key_value_heads: 8,
        use_flash_attn: false,
        rms_norm_eps: 1e-5,
        rope_theta: 500_000.0,
        bos_token_id: None,
        eos_token_id: None,
        rope_scaling: None,
        max_position_embeddings: 2048,
        tie_word_embeddings: true,
    }
}

/// Token ids that are not all one value: a multiplicative sequence over the vocabulary.
fn prompt(batch: usize, len: usize, vocab: usize, device: &Device) -> Result<Tensor> {
    let ids: Vec<u32> = (0..batch * len).map(|i| ((i as u64 * 2_654_435_761 + 17) % vocab as u64) as u32).collect();
    Tensor::from_vec(ids, (batch, len), device)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seconds of a prefill of `tokens` tokens per sequence, from an empty cache.
fn prefill(model: &Llama, cfg: &Config, batch: usize, tokens: usize, device: &Device) -> Result<(f64, Cache, Tensor)> {
    let mut cache = Cache::new(true, DType::BF16, cfg, device)?;
    let input = prompt(batch, tokens, cfg.vocab_size, device)?;
    device.synchronize()?;
    let start = Instant::now();
    let logits = model.forward(&input, 0, &mut cache)?;
    let next = logits.argmax(candle_core::D::Minus1)?;
    let _host: Vec<u32> = next.to_vec1()?;
    Ok((start.elapsed().as_secs_f64(), cache, next))
}

/// Tokens per second of `steps` steps of greedy decoding, `batch` sequences after a prompt of
/// `context` tokens; `around` runs just before the first step and just after the last.
fn decode(
    model: &Llama,
    cfg: &Config,
    batch: usize,
    context: usize,
    steps: usize,
    around: &dyn Fn(bool),
    device: &Device,
) -> Result<f64> {
    let (_, mut cache, mut next) = prefill(model, cfg, batch, context, device)?;
    around(true);
    let start = Instant::now();
    for step in 0..steps {
        let input = next.reshape((batch, 1))?;
        let logits = model.forward(&input, context + step, &mut cache)?;
        next = logits.argmax(candle_core::D::Minus1)?;
        let host: Vec<u32> = next.to_vec1()?;
        next = Tensor::from_vec(host, batch, device)?;
    }
    let seconds = start.elapsed().as_secs_f64();
    around(false);
    Ok((batch * steps) as f64 / seconds)
}

/// Starts (`true`) or stops the driver's profiler, for ncu's `--profile-from-start off`; looked up in
/// libcuda by name, as each side links a different cudarc.
fn profiler(start: bool) {
    let name: &[u8] = if start { b"cuProfilerStart\0" } else { b"cuProfilerStop\0" };
    // SAFETY: dlopen / dlsym get NUL-terminated names; the symbol, when found, is the driver's
    // `CUresult cuProfilerStart(void)` / `cuProfilerStop(void)`, called with its own signature.
    unsafe {
        let lib = libc::dlopen(b"libcuda.so.1\0".as_ptr().cast(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        assert!(!lib.is_null(), "libcuda.so.1 is not loaded");
        let f = libc::dlsym(lib, name.as_ptr().cast());
        assert!(!f.is_null(), "no profiler entry in libcuda");
        let f: extern "C" fn() -> i32 = std::mem::transmute(f);
        assert_eq!(f(), 0, "profiler start / stop failed");
    }
}

/// One phase between profiler start and stop, after a warm-up run of it.
fn profile(phase: &str, model: &Llama, cfg: &Config, device: &Device) -> Result<()> {
    let decode_steps = 4;
    match phase {
        "prefill" => {
            prefill(model, cfg, 1, PREFILL, device)?;
            profiler(true);
            let (seconds, _, _) = prefill(model, cfg, 1, PREFILL, device)?;
            profiler(false);
            println!("profiled prefill of {PREFILL} tokens: {:.2} ms", seconds * 1e3);
        }
        "decode1" | "decode8" => {
            let batch = if phase == "decode1" { 1 } else { 8 };
            decode(model, cfg, batch, 128, decode_steps, &|_| {}, device)?;
            let rate = decode(model, cfg, batch, 128, decode_steps, &profiler, device)?;
            println!("profiled {decode_steps} decode steps at batch {batch}: {:.2} ms a step", batch as f64 / rate * 1e3);
        }
        _ => panic!("LLAMA_PROFILE is prefill, decode1 or decode8, not {phase}"),
    }
    Ok(())
}

fn main() -> Result<()> {
    let device = Device::new_cuda(0)?;
    let cfg = config();
    let varmap = VarMap::new();
    let model = Llama::load(VarBuilder::from_varmap(&varmap, DType::BF16, &device), &cfg)?;
    let params: usize = varmap.all_vars().iter().map(|v| v.elem_count()).sum();
    println!("llama: {:.2}B parameters, bf16, {} layers", params as f64 / 1e9, cfg.num_hidden_layers);
    // A finite answer, so that a broken kernel is not timed as a fast one.
    let (_, mut cache, _) = prefill(&model, &cfg, 1, 16, &device)?;
    let logits = model.forward(&prompt(1, 1, cfg.vocab_size, &device)?, 16, &mut cache)?;
    let sum: f32 = logits.i(0)?.abs()?.sum_all()?.to_scalar()?;
    assert!(sum.is_finite() && sum > 0.0, "logits sum {sum}");

    if let Ok(phase) = std::env::var("LLAMA_PROFILE") {
        return profile(&phase, &model, &cfg, &device);
    }
    prefill(&model, &cfg, 1, PREFILL, &device)?; // warm-up
    let seconds = median((0..REPEATS).map(|_| prefill(&model, &cfg, 1, PREFILL, &device).map(|r| r.0)).collect::<Result<_>>()?);
    println!("RESULT prefill_512_tokens_per_s {:.1}", PREFILL as f64 / seconds);
    for batch in [1, 8] {
        let run = || decode(&model, &cfg, batch, 128, DECODE_STEPS, &|_| {}, &device);
        run()?; // warm-up
        let rate = median((0..REPEATS).map(|_| run()).collect::<Result<_>>()?);
        println!("RESULT decode_batch{batch}_tokens_per_s {rate:.1}");
    }
    Ok(())
}
