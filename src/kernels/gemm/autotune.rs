//! Tuning on first use, off by default: with `PRISM_AUTOTUNE=1`, a GEMM whose class the checked-in
//! table ([`super::table`]) does not reach is tuned the first time it runs: every candidate kernel
//! ([`super::tuning::candidates`]) is timed on the caller's A and B into a scratch C, its answer
//! checked against the rules' plan's, and the fastest correct one is kept, in memory and in an
//! on-disk table per device, which later processes read. A kept entry reaches the shapes within
//! [`REACH`](super::table::REACH) of its own, as the checked-in table's do, so a workload whose
//! sizes drift a little is tuned once per class, not once per size.
//!
//! - The first call of a class waits for the tuning (it synchronizes the stream and times dozens
//!   of launches: milliseconds for small products, about a second for the largest); later calls,
//!   and later processes, pay a table look-up.
//! - Nothing is tuned while the stream captures a graph (timing needs synchronization); such a GEMM
//!   takes the rules' plan, and is tuned when it runs outside a capture.
//! - Tuning that cannot run (no memory for the scratch C, a failed launch) leaves the GEMM to the
//!   rules; a candidate that fails or gives a wrong answer is never kept.
//! - The file, `<folder>/<device>.txt` in the checked-in table's format, is written to a temporary
//!   file and renamed over the old one (readers see a whole table); entries other processes added
//!   meanwhile are merged first. A file that does not parse is ignored and rewritten.
//!
//! Configuration, read once per process: `PRISM_AUTOTUNE` (`1` turns it on) and
//! `PRISM_AUTOTUNE_DIR` (the folder; `off` or empty keeps the choices in memory only; default
//! `$XDG_CACHE_HOME/prism-gpu/gemm-tune`, else `~/.cache/prism-gpu/gemm-tune`).

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::dispatch::{Device, Kernel, TmaReady};
use super::double::PlanF64;
use super::table::{self, Choice, Class, Entry, Table, Tuned};
use super::tuning::{Repeats, Trial};
use super::{Call, Element, Gemm, GemmF64, RawEpilogue, Workspace};
use crate::driver::sys::{CUevent_flags, CUstreamCaptureStatus};
use crate::driver::{CudaSlice, CudaStream, DeviceRepr};
use crate::error::Result;
use crate::kernels::args::CheckedPtrMut as _;
use crate::kernels::Kernels;

/// The variable that turns tuning on first use on (`1`).
pub const VAR: &str = "PRISM_AUTOTUNE";
/// The variable naming the folder of the tuned tables (`off` or empty: memory only).
pub const DIR_VAR: &str = "PRISM_AUTOTUNE_DIR";

/// Candidates needing more workspace than this are not tried.
const MAX_WORKSPACE: usize = 1 << 30;
/// Each candidate: one untimed sample, then the median of these timed samples.
const REPEATS: Repeats = Repeats { warmup: 1, repeats: 5 };
/// Launches per sample: enough for a small product's sample to be well above the events'
/// resolution (about 2e8 flops), at most this many.
const MAX_INNER: usize = 16;

/// Tuning on first use, as the environment describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `PRISM_AUTOTUNE=1`.
    pub enabled: bool,
    /// The folder of the tuned tables (`None`: memory only).
    pub dir: Option<PathBuf>,
}

impl Config {
    /// The configuration `PRISM_AUTOTUNE` and `PRISM_AUTOTUNE_DIR` describe (module docs).
    pub fn from_env() -> Config {
        Config::from_vars(|name| std::env::var_os(name))
    }

    fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Config {
        Config {
            enabled: var(VAR).is_some_and(|v| v == "1"),
            dir: crate::cache_dir::folder(&var, DIR_VAR, "gemm-tune"),
        }
    }

    /// The process's configuration, read from the environment when first used.
    pub fn global() -> &'static Config {
        static GLOBAL: OnceLock<Config> = OnceLock::new();
        GLOBAL.get_or_init(Config::from_env)
    }
}

/// The tables tuned in this process (with what was on disk), by device key.
static TUNED: Mutex<Option<HashMap<String, Table>>> = Mutex::new(None);

/// The kernel tuned on first use for `call`'s GEMM, or `None` where the rules decide: tuning is
/// off, the checked-in table reaches the class, the stream is capturing, or tuning could not run.
/// Tunes the class when neither this process nor the on-disk table has it yet.
///
/// # Safety
/// As [`super::run`] for `call` (validated, non-empty, k >= 1).
pub(super) unsafe fn kernel<TIn: Element, TOut: Element>(
    call: &Call<'_>,
    device: &Device,
    tma: TmaReady,
) -> Option<Kernel> {
    let class = Class::of(call.g, Tuned::Gemm(call.precision));
    let tune = || {
        // SAFETY: the caller's obligations for `call`.
        unsafe { tune_gemm::<TIn, TOut>(call, device, tma) }
    };
    match choice(call.kernels, call.stream, device, class, tune) {
        Some(Choice::Kernel(kernel)) => Some(kernel),
        _ => None,
    }
}

/// [`kernel`] for the f64 GEMM on `[A, B, C]`.
///
/// # Safety
/// As [`super::double::run`] for `g` and the operands (validated, non-empty).
pub(super) unsafe fn plan_f64(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    g: &GemmF64,
    operands: [u64; 3],
    device: &Device,
) -> Option<PlanF64> {
    if g.layout.k == 0 {
        return None;
    }
    let class = Class::of(&g.layout, Tuned::F64);
    let tune = || {
        // SAFETY: the caller's obligations.
        unsafe { tune_f64(kernels, stream, g, operands, device) }
    };
    match choice(kernels, stream, device, class, tune) {
        Some(Choice::F64(plan)) => Some(plan),
        _ => None,
    }
}

/// The choice for `class` on `kernels`' device: the one kept in this process or on disk, else
/// `tune()`'s, kept (not while `stream` captures a graph, nor when tuning fails); `None` where tuning
/// is off or the checked-in table reaches the class.
fn choice(
    kernels: &Kernels,
    stream: &CudaStream,
    device: &Device,
    class: Class,
    tune: impl FnOnce() -> Result<Choice>,
) -> Option<Choice> {
    let config = Config::global();
    let key = wanted(config, kernels, device, &class)?;
    if let Some(known) = known(config, &key, &class) {
        return Some(known);
    }
    if capturing(stream) {
        return None;
    }
    let choice = tune().ok()?;
    remember(config, &key, device, Entry { class, choice });
    Some(choice)
}

/// The device's key in the tuned tables when `class` is tuned on first use: tuning is on and the
/// checked-in table does not reach the class. The key is read from the driver once per device.
fn wanted(config: &Config, kernels: &Kernels, device: &Device, class: &Class) -> Option<String> {
    static KEYS: Mutex<BTreeMap<usize, String>> = Mutex::new(BTreeMap::new());
    if !config.enabled || table::for_device(device).nearest(class).is_some() {
        return None;
    }
    let ordinal = kernels.context().ordinal();
    let mut keys = KEYS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(key) = keys.get(&ordinal) {
        return Some(key.clone());
    }
    let key = device_key(device.capability, &kernels.context().name().ok()?);
    Some(keys.entry(ordinal).or_insert(key).clone())
}

/// Whether `stream` is capturing a graph (or its state cannot be read): no timing then.
fn capturing(stream: &CudaStream) -> bool {
    !stream.capture_status().is_ok_and(|s| s == CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}

/// A device's key: its architecture and name, as a file name (`sm_90-NVIDIA_H100_80GB_HBM3`).
fn device_key((major, minor): (i32, i32), name: &str) -> String {
    let name: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    format!("sm_{major}{minor}-{name}")
}

/// The tuned table's file for `key` in `dir`.
fn file(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.txt"))
}

/// The choice of the tuned entry nearest `class` for device `key` (this process's, with the file's
/// read on first use).
fn known(config: &Config, key: &str, class: &Class) -> Option<Choice> {
    let mut tuned = TUNED.lock().unwrap_or_else(|e| e.into_inner());
    let tables = tuned.get_or_insert_with(HashMap::new);
    let table = tables.entry(key.to_string()).or_insert_with(|| match &config.dir {
        Some(dir) => read(&file(dir, key)),
        None => Table::default(),
    });
    table.nearest(class).map(|e| e.choice)
}

/// The table in `path`; empty when it is missing or does not parse.
fn read(path: &Path) -> Table {
    fs::read_to_string(path).ok().and_then(|text| Table::parse(&text).ok()).unwrap_or_default()
}

/// Adds `entry` to device `key`'s table, and to its file (merged with what other processes wrote
/// since): a file that cannot be written leaves the entry in memory only.
fn remember(config: &Config, key: &str, device: &Device, entry: Entry) {
    let mut tuned = TUNED.lock().unwrap_or_else(|e| e.into_inner());
    let table = tuned.get_or_insert_with(HashMap::new).entry(key.to_string()).or_default();
    add(table, entry);
    if let Some(dir) = &config.dir {
        let path = file(dir, key);
        let mut merged = read(&path);
        for entry in &table.entries {
            add(&mut merged, *entry);
        }
        let header = format!(
            "GEMM kernels tuned on first use (PRISM_AUTOTUNE=1) by prism-gpu {} on compute capability \
             {}.{}: the checked-in table's format (tune/sm_90.txt), one measured class per line.",
            env!("CARGO_PKG_VERSION"),
            device.capability.0,
            device.capability.1
        );
        // Losing the file only costs a tuning run in a later process.
        let _ = write_whole(&path, &merged.to_text(&header));
    }
}

/// `entry` appended to `table` unless `table` has its class already.
fn add(table: &mut Table, entry: Entry) {
    if !table.entries.iter().any(|e| e.class == entry.class) {
        table.entries.push(entry);
    }
}

/// Writes `text` to `path` through a temporary file in the same folder renamed over it.
fn write_whole(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let temp = dir.join(format!(".tmp-{}-{:?}", std::process::id(), std::thread::current().id()));
    let written = fs::write(&temp, text).and_then(|()| fs::rename(&temp, path));
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}

/// Tunes `call`'s GEMM into a scratch C (packed, beta 0, no epilogue): the fastest correct
/// candidate.
///
/// # Safety
/// As [`kernel`].
unsafe fn tune_gemm<TIn: Element, TOut: Element>(
    call: &Call<'_>,
    device: &Device,
    tma: TmaReady,
) -> Result<Choice> {
    let g = call.g;
    let packed = Gemm { beta: 0.0, ldc: g.n, stride_c: g.m * g.n, ..*g };
    let default = super::dispatch::plan(&packed, call.precision, device, tma)?.kernel;
    let candidates = super::tuning::candidates(&packed, call.precision, device, tma, MAX_WORKSPACE);
    let none = RawEpilogue::default();
    let scratch = |kernel: Kernel, c: u64| {
        let call =
            Call { g: &packed, operands: [call.operands[0], call.operands[1], c], epilogue: &none, ..*call };
        // SAFETY: A and B are the caller's (its obligations); C is the scratch of batch x m x n
        // elements that `packed` (packed C) writes; `run` resolves `kernel` before launching.
        unsafe { super::run::<TIn, TOut>(&call, Some(kernel)) }
    };
    let trial = Trial {
        class: Class::of(g, Tuned::Gemm(call.precision)),
        batch: g.batch,
        repeats: REPEATS,
        screen: true,
    };
    time_candidates::<TOut>(
        call.stream,
        &trial,
        g,
        Choice::Kernel(default),
        candidates.iter().map(|plan| Choice::Kernel(plan.kernel)),
        2.0 * call.precision.tolerance(),
        |x| f64::from(x.to_f32()),
        |choice, c| match choice {
            Choice::Kernel(kernel) => scratch(kernel, c),
            Choice::F64(_) => unreachable!("an f32-family GEMM's candidates are kernels"),
        },
    )
}

/// [`tune_gemm`] for the f64 GEMM.
///
/// # Safety
/// As [`plan_f64`].
unsafe fn tune_f64(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    g: &GemmF64,
    [pa, pb, _]: [u64; 3],
    device: &Device,
) -> Result<Choice> {
    let l = &g.layout;
    let packed = GemmF64 { layout: Gemm { ldc: l.n, stride_c: l.m * l.n, ..*l }, beta: 0.0, ..*g };
    let workspace = Workspace::default();
    let scratch = |plan: PlanF64, c: u64| {
        // SAFETY: A and B are the caller's (its obligations); C is the scratch of batch x m x n
        // elements that `packed` writes; `run` checks `plan` before launching.
        unsafe { super::double::run(kernels, stream, &workspace, &packed, [pa, pb, c], Some(plan)) }
    };
    let trial = Trial { class: Class::of(l, Tuned::F64), batch: l.batch, repeats: REPEATS, screen: true };
    time_candidates::<f64>(
        stream,
        &trial,
        l,
        Choice::F64(super::double::tuned(l, device)),
        super::double::candidates(l, device).into_iter().map(Choice::F64),
        1e-12,
        |x| x,
        |choice, c| match choice {
            Choice::F64(plan) => scratch(plan, c),
            Choice::Kernel(_) => unreachable!("an f64 GEMM's candidates are f64 plans"),
        },
    )
}

/// Judges the candidates of `trial` (the fastest correct one), each run by `launch(choice, C)`
/// into a scratch C of `g.batch x g.m x g.n` elements of `T`, timed with CUDA events on `stream`.
#[allow(clippy::too_many_arguments)] // the trial, its candidates and how to run and read them
fn time_candidates<T: DeviceRepr + Copy>(
    stream: &Arc<CudaStream>,
    trial: &Trial,
    g: &Gemm,
    default: Choice,
    candidates: impl Iterator<Item = Choice>,
    tolerance: f64,
    widen: impl Fn(T) -> f64,
    launch: impl Fn(Choice, u64) -> Result<()>,
) -> Result<Choice> {
    let len = g.batch.checked_mul(g.m).and_then(|x| x.checked_mul(g.n)).ok_or(crate::Error::Shape {
        op: "gemm autotune",
        expected: "a scratch C of batch x m x n elements within usize".into(),
        got: format!("{} x {} x {}", g.batch, g.m, g.n),
    })?;
    // SAFETY: every candidate writes all batch x m x n elements (beta 0) before `answer` reads them.
    let mut c: CudaSlice<T> = unsafe { stream.alloc(len) }?;
    let inner = ((2e8 / g.flops()) as usize).clamp(1, MAX_INNER);
    let ctx = stream.context();
    let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let (start, end) = (ctx.new_event(flags)?, ctx.new_event(flags)?);
    let time = |choice: Choice, repeats: Repeats, c: &mut CudaSlice<T>| -> Result<f64> {
        let (pc, _write) = c.checked_ptr_mut(stream)?;
        for _ in 0..repeats.warmup * inner {
            launch(choice, pc)?;
        }
        let mut samples = Vec::with_capacity(repeats.repeats);
        for _ in 0..repeats.repeats.max(1) {
            start.record(stream)?;
            for _ in 0..inner {
                launch(choice, pc)?;
            }
            end.record(stream)?;
            samples.push(f64::from(start.elapsed_ms(&end)?) / inner as f64);
        }
        samples.sort_by(f64::total_cmp);
        Ok(samples[samples.len() / 2])
    };
    let answer = |c: &CudaSlice<T>| Ok(stream.clone_dtoh(c)?.into_iter().map(&widen).collect());
    Ok(trial.judge(default, candidates, tolerance, &mut c, time, answer)?.best.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(set: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| set.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
    }

    #[test]
    fn the_environment_turns_it_on_and_names_the_folder() {
        let home = [("HOME", "/home/u")];
        assert_eq!(
            Config::from_vars(vars(&home)),
            Config { enabled: false, dir: Some("/home/u/.cache/prism-gpu/gemm-tune".into()) }
        );
        let on = [("HOME", "/home/u"), (VAR, "1"), ("XDG_CACHE_HOME", "/xdg")];
        assert_eq!(
            Config::from_vars(vars(&on)),
            Config { enabled: true, dir: Some("/xdg/prism-gpu/gemm-tune".into()) }
        );
        for value in ["0", "yes", "true", ""] {
            assert!(!Config::from_vars(vars(&[(VAR, value)])).enabled, "{value:?}");
        }
        assert_eq!(Config::from_vars(vars(&[(VAR, "1"), (DIR_VAR, "off")])).dir, None);
        assert_eq!(Config::from_vars(vars(&[(DIR_VAR, "")])).dir, None);
        assert_eq!(Config::from_vars(vars(&[(DIR_VAR, "/t/x")])).dir, Some("/t/x".into()));
    }

    #[test]
    fn device_keys_are_file_names() {
        assert_eq!(device_key((9, 0), "NVIDIA H100 80GB HBM3"), "sm_90-NVIDIA_H100_80GB_HBM3");
        assert_eq!(device_key((12, 1), "a/b\\c"), "sm_121-a_b_c");
    }

    #[test]
    fn the_file_keeps_every_process_s_entries() {
        let dir = std::env::temp_dir().join(format!("prism-autotune-test-{}", std::process::id()));
        let path = file(&dir, "sm_90-test");
        let entry =
            |m: usize, choice: &str| -> Entry { format!("f32 nn 1 {m} 64 64 -> {choice}").parse().unwrap() };
        // Another process wrote one entry; this one adds two, one of them the same class.
        let theirs = Table { entries: vec![entry(100, "simt64")] };
        write_whole(&path, &theirs.to_text("theirs")).unwrap();
        let mut ours = Table::default();
        for e in [entry(100, "simt"), entry(300, "simt32")] {
            add(&mut ours, e);
        }
        let mut merged = read(&path);
        for e in &ours.entries {
            add(&mut merged, *e);
        }
        write_whole(&path, &merged.to_text("merged")).unwrap();
        assert_eq!(read(&path).entries, vec![entry(100, "simt64"), entry(300, "simt32")]);
        // No temporary file is left; a damaged file reads as empty.
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::write(&path, "f32 nn 1 100 64 -> simt\n").unwrap();
        assert_eq!(read(&path), Table::default());
        assert_eq!(read(&dir.join("missing.txt")), Table::default());
        fs::remove_dir_all(&dir).unwrap();
    }
}
