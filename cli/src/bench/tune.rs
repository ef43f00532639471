//! `prism-gpu tune`: for each shape and precision, every kernel that can run it on device 0
//! ([`tuning::candidates_of`]), each timed with CUDA events (warm-up, median of repeats) and its
//! answer checked against the default plan's (relative Frobenius difference within twice the
//! precision's tolerance; a wrong candidate is reported and never chosen), then a tuning table of
//! the winners in the checked-in format (`tune/sm_90.txt`) and a summary: best against today's
//! choice and, with `bench-anchors`, against cuBLAS.
//!
//! A candidate whose first timed run takes more than [`SLOW`](tuning::SLOW) times the default's median is
//! reported as slow and not timed further (the small kernel on a large cube would take seconds).
//! An entry is written only where the best candidate beats the default by more than [`MARGIN`],
//! so the table holds what the built-in rules (and the table before the run) get wrong, not repeats
//! of what they get right.

use std::fmt::Write as _;

use half::{bf16, f16};

use super::gemm::{cublas::Anchor, narrow, Timed};
use super::Settings;
use prism_gpu::driver::{CudaSlice, CudaView, CudaViewMut, DeviceRepr};
use prism_gpu::raw::kernels::gemm::tuning::{
    self, Choice, Class, Entry, Outcome, Repeats, Table, Trial, Tuned, MARGIN,
};
use prism_gpu::raw::kernels::gemm::{Element, Gemm, Precision, Workspace};
use prism_gpu::rng::SplitMix64;
use prism_gpu::runtime::{GpuOps, ProductionGpuRuntime};
use prism_gpu::Result;

/// Candidates needing more workspace than this are skipped.
const MAX_WORKSPACE: usize = 2 << 30;

/// The default shapes (packed row-major, batch 1 unless a batch is given): the families issue 32
/// measured losing (decode against wide weights, the vocabulary projection, small cubes, a
/// convolution-like product, tall-skinny n = 64), the squares 1024-8192, and a 1B Llama's products
/// as candle issues them (x·Wᵀ at 8 and 512 tokens; the prefill's attention, f32 in candle, as 32
/// heads of scores q·Kᵀ and of weighted values).
pub fn default_shapes() -> Vec<Gemm> {
    let mut shapes = Vec::new();
    for m in [1, 8, 16, 32, 64] {
        for (n, k) in [(4096, 4096), (11008, 4096), (4096, 11008), (14336, 4096), (4096, 14336)] {
            shapes.push(Gemm::new(m, n, k));
        }
    }
    shapes.extend(
        [(128, 50257, 768), (192, 192, 192), (257, 257, 257), (320, 320, 320), (1568, 512, 4608)].map(nn),
    );
    shapes.extend([(8192, 64, 4096), (32768, 64, 1024)].map(nn));
    shapes.extend([1024, 2048, 4096, 8192].map(|s| Gemm::new(s, s, s)));
    for m in [8, 512] {
        for (n, k) in [(2048, 2048), (512, 2048), (8192, 2048), (2048, 8192)] {
            shapes.push(Gemm::new(m, n, k).transposed(false, true));
        }
    }
    shapes.push(packed_batch(Gemm::new(512, 512, 64).transposed(false, true), 32));
    shapes.push(packed_batch(Gemm::new(512, 64, 512), 32));
    shapes
}

fn nn((m, n, k): (usize, usize, usize)) -> Gemm {
    Gemm::new(m, n, k)
}

/// `g` over `batch` packed entries.
fn packed_batch(g: Gemm, batch: usize) -> Gemm {
    g.batched(batch, g.m * g.k, g.k * g.n, g.m * g.n)
}

/// Parses `MxNxK[:LAYOUT][*BATCH]` shapes, comma-separated: LAYOUT is nn (the default), nt, tn or
/// tt (t: that operand, A then B, stored transposed), BATCH a count of packed entries.
pub fn parse_shapes(list: &str) -> std::result::Result<Vec<Gemm>, String> {
    list.split(',')
        .map(|item| {
            let bad = || format!("`{item}` is not a shape MxNxK[:nn|nt|tn|tt][*BATCH]");
            let (rest, batch) = match item.split_once('*') {
                Some((rest, b)) => (rest, b.parse::<usize>().ok().filter(|&b| b > 0).ok_or_else(bad)?),
                None => (item, 1),
            };
            let (dims, layout) = rest.split_once(':').unwrap_or((rest, "nn"));
            let (trans_a, trans_b) = match layout {
                "nn" => (false, false),
                "nt" => (false, true),
                "tn" => (true, false),
                "tt" => (true, true),
                _ => return Err(bad()),
            };
            let (m, n, k) =
                super::suite::parse_shapes(dims).map_err(|_| bad())?.first().copied().ok_or_else(bad)?;
            Ok(packed_batch(Gemm::new(m, n, k).transposed(trans_a, trans_b), batch))
        })
        .collect()
}

/// What to tune.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Shapes, layouts and batches (packed; f32 until each precision is set).
    pub shapes: Vec<Gemm>,
    /// Precisions.
    pub precisions: Vec<Tuned>,
    /// Where to write the table (none: only the summary).
    pub out: Option<std::path::PathBuf>,
    /// A checked-in table to merge the run's entries into ([`merge`]).
    pub merge_into: Option<std::path::PathBuf>,
    /// Where to write every timed candidate's figure ([`candidate_lines`]).
    pub candidates: Option<std::path::PathBuf>,
    /// Warm-up and repeats per candidate.
    pub settings: Settings,
}

/// Parses `prism-gpu tune`'s options: `--shapes MxNxK[:LAYOUT][*BATCH],...` ([`parse_shapes`]; `sweep`:
/// the sweep's shapes), `--precisions f32,tf32,bf16,f16,f64`, `--out PATH`, `--merge-into TABLE`,
/// `--candidates PATH`, `--repeats N`.
pub fn parse_args(args: &[&str]) -> std::result::Result<Options, String> {
    let mut options = Options {
        shapes: default_shapes(),
        precisions: Tuned::ALL.to_vec(),
        out: None,
        merge_into: None,
        candidates: None,
        settings: Settings { warmup: 2, repeats: 7 },
    };
    let mut args = args.iter();
    while let Some(&arg) = args.next() {
        let value = args.next().copied().ok_or_else(|| format!("{arg} needs a value"))?;
        match arg {
            "--shapes" if value == "sweep" => {
                options.shapes = super::sweep::shapes().into_iter().map(nn).collect()
            }
            "--shapes" => options.shapes = parse_shapes(value)?,
            "--precisions" => {
                options.precisions = value
                    .split(',')
                    .map(|p| {
                        Tuned::parse(p)
                            .ok_or_else(|| format!("unknown precision `{p}` (f32 tf32 bf16 f16 f64)"))
                    })
                    .collect::<std::result::Result<_, _>>()?
            }
            "--out" => options.out = Some(value.into()),
            "--merge-into" => options.merge_into = Some(value.into()),
            "--candidates" => options.candidates = Some(value.into()),
            "--repeats" => {
                options.settings.repeats = value
                    .parse()
                    .ok()
                    .filter(|&r| r > 0)
                    .ok_or_else(|| format!("--repeats {value}: a count >= 1"))?
            }
            _ => return Err(format!("unknown option `{arg}`")),
        }
    }
    Ok(options)
}

/// One shape at one precision, tuned, with cuBLAS's time beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The tuner's verdict.
    pub outcome: Outcome,
    /// cuBLAS's median milliseconds (with `bench-anchors`).
    pub cublas: Option<f64>,
}

/// Tunes every shape at every precision on device 0; `progress` gets each report as it is made.
pub fn run(options: &Options, mut progress: impl FnMut(&Report)) -> Result<Vec<Report>> {
    let runtime = ProductionGpuRuntime::with_device(0)?;
    let ops = runtime.gpu()?;
    let mut anchor = Anchor::new();
    let mut rng = SplitMix64::from_time();
    let mut outcomes = Vec::new();
    for &g in &options.shapes {
        let (m, n, k) = (g.m, g.n, g.k);
        let a = rng.vec(g.batch * m * k, -1.0, 1.0);
        let b = rng.vec(g.batch * k * n, -1.0, 1.0);
        for &precision in &options.precisions {
            let inner = ((1e9 / g.flops()) as usize).clamp(1, 50);
            let settings = options.settings;
            let timed = Timed { a: &a, b: &b, settings, inner };
            let outcome = match precision {
                Tuned::Gemm(p @ (Precision::F32 | Precision::Tf32)) => {
                    tune::<f32>(ops, &g.with_precision(p), timed)?
                }
                Tuned::Gemm(p @ Precision::Bf16) => tune::<bf16>(ops, &g.with_precision(p), timed)?,
                Tuned::Gemm(p @ Precision::F16) => tune::<f16>(ops, &g.with_precision(p), timed)?,
                Tuned::F64 => tune_f64(ops, &g, timed)?,
            };
            let cublas = match precision {
                Tuned::Gemm(p) => anchor.time(p, &g.with_precision(p), timed, false).map(|t| t.0),
                Tuned::F64 if g.trans_a || g.trans_b || g.batch > 1 => {
                    Err("cuBLAS's DGEMM is timed on packed NN products only".to_string())
                }
                Tuned::F64 => {
                    let wide = |x: &[f32]| x.iter().map(|&v| f64::from(v)).collect::<Vec<_>>();
                    anchor.time_dgemm((m, n, k), &wide(&a), &wide(&b), settings, inner, false).map(|t| t.0)
                }
            };
            let report = Report { outcome, cublas: cublas.ok().map(|ms| ms / inner as f64) };
            progress(&report);
            outcomes.push(report);
        }
    }
    Ok(outcomes)
}

/// The table of `reports`: an entry for each best candidate that beat the default by more than
/// [`MARGIN`].
pub fn table_of(reports: &[Report]) -> Table {
    let entries = reports
        .iter()
        .filter(|r| r.outcome.worth_an_entry())
        .map(|r| Entry { class: r.outcome.class, choice: r.outcome.best.0 })
        .collect();
    Table { entries }
}

/// Times every candidate of `g` with `T` data; milliseconds are per GEMM.
fn tune<T: Element>(ops: &GpuOps, g: &Gemm, timed: Timed) -> Result<Outcome> {
    let (kernels, stream) = (ops.kernels(), ops.stream());
    let (da, db) = (ops.upload(&narrow::<T>(timed.a))?, ops.upload(&narrow::<T>(timed.b))?);
    let default = tuning::plan_of::<T, T>(kernels, stream, g, &da.as_view(), &db.as_view())?;
    let candidates =
        tuning::candidates_of::<T, T>(kernels, stream, g, &da.as_view(), &db.as_view(), MAX_WORKSPACE)?;
    let workspace = Workspace::default();
    let operands = Operands { a: &da, b: &db, g, class: Class::of(g, Tuned::Gemm(g.precision)) };
    operands.judge(
        ops,
        timed,
        Choice::Kernel(default.kernel),
        candidates.iter().map(|p| Choice::Kernel(p.kernel)),
        2.0 * g.precision.tolerance(),
        |x| f64::from(x.to_f32()),
        |choice, a, b, c| {
            let Choice::Kernel(kernel) = choice else { unreachable!("a GEMM's candidates are kernels") };
            tuning::gemm_with_kernel(kernels, stream, &workspace, g, kernel, a, b, c)
        },
    )
}

/// [`tune`] for the f64 GEMM (its kernels and slicings of k).
fn tune_f64(ops: &GpuOps, g: &Gemm, timed: Timed) -> Result<Outcome> {
    let (kernels, stream) = (ops.kernels(), ops.stream());
    let wide = |x: &[f32]| x.iter().map(|&v| f64::from(v)).collect::<Vec<f64>>();
    let (da, db) = (ops.upload(&wide(timed.a))?, ops.upload(&wide(timed.b))?);
    let g64 = g.with_f64_scales(1.0, 0.0);
    let workspace = Workspace::default();
    let operands = Operands { a: &da, b: &db, g, class: Class::of(g, Tuned::F64) };
    operands.judge(
        ops,
        timed,
        Choice::F64(tuning::plan_f64(kernels, g)?),
        tuning::candidates_f64(kernels, g)?.into_iter().map(Choice::F64),
        1e-12,
        |x| x,
        |choice, a, b, c| {
            let Choice::F64(plan) = choice else { unreachable!("an f64 GEMM's candidates are f64 kernels") };
            tuning::gemm_f64_with_plan(kernels, stream, &workspace, &g64, plan, a, b, c)
        },
    )
}

/// One shape's operands on the device, and the class its entry would tune.
struct Operands<'a, T: DeviceRepr> {
    a: &'a CudaSlice<T>,
    b: &'a CudaSlice<T>,
    g: &'a Gemm,
    class: Class,
}

impl<T: DeviceRepr + Copy> Operands<'_, T> {
    /// The fastest correct of `default` and `candidates` ([`Trial::judge`]), each run by
    /// `launch(choice, A, B, C)` into a scratch C (beta 0) and timed per GEMM; answers are compared
    /// as f64 through `widen`.
    #[allow(clippy::too_many_arguments)] // the candidates and how to run and read them
    fn judge(
        &self,
        ops: &GpuOps,
        timed: Timed,
        default: Choice,
        candidates: impl Iterator<Item = Choice>,
        tolerance: f64,
        widen: impl Fn(T) -> f64,
        launch: impl Fn(Choice, &CudaView<T>, &CudaView<T>, &mut CudaViewMut<T>) -> Result<()>,
    ) -> Result<Outcome> {
        let g = self.g;
        // SAFETY: with beta == 0 every GEMM writes all batch x m x n elements before anything
        // reads them.
        let mut dc: CudaSlice<T> = unsafe { ops.stream().alloc(g.batch * g.m * g.n) }?;
        let time = |choice, repeats: Repeats, dc: &mut CudaSlice<T>| {
            let (a, b) = (self.a.as_view(), self.b.as_view());
            Timed { settings: Settings { warmup: repeats.warmup, repeats: repeats.repeats }, ..timed }
                .time(ops.stream(), || launch(choice, &a, &b, &mut dc.as_view_mut()))
                .map(|t| t.median_ms / timed.inner as f64)
        };
        let answer = |dc: &CudaSlice<T>| Ok(ops.download(dc)?.into_iter().map(&widen).collect());
        let trial =
            Trial { class: self.class, batch: g.batch, repeats: repeats(timed.settings), screen: true };
        trial.judge(default, candidates, tolerance, &mut dc, time, answer)
    }
}

/// The tuner's repeats for the bench's settings.
fn repeats(settings: Settings) -> Repeats {
    Repeats { warmup: settings.warmup, repeats: settings.repeats }
}

/// One outcome as a summary line.
pub fn line(report: &Report) -> String {
    let o = &report.outcome;
    let (m, n, k) = o.class.shape;
    let batch = if o.batch > 1 { format!("*{}", o.batch) } else { String::new() };
    let mut out = format!(
        "{:<4} {m}x{n}x{k}:{}{batch}: default {} {:.1} TFLOP/s; best {} {:.1} TFLOP/s ({:.2}x)",
        o.class.precision.name(),
        layout(o),
        o.default.0,
        tflops(o, o.default.1),
        o.best.0,
        tflops(o, o.best.1),
        o.default.1 / o.best.1
    );
    if let Some(cublas) = report.cublas {
        let _ =
            write!(out, "; cuBLAS {:.1} TFLOP/s, best/cuBLAS {:.2}x", tflops(o, cublas), cublas / o.best.1);
    }
    let _ = write!(out, "; {} timed", o.timings.len());
    for (name, why) in &o.rejected {
        if why.starts_with("WRONG") || why.starts_with("failed") {
            let _ = write!(out, "\n    {name}: {why}");
        }
    }
    let slow = o.rejected.iter().filter(|(_, why)| why.starts_with("slow")).count();
    if slow > 0 {
        let _ = write!(out, ", {slow} slow");
    }
    out
}

/// Every timed candidate of `report`, one line each: shape, layout, precision, candidate,
/// milliseconds per GEMM, TFLOP/s, and its time over the fastest's (tab-separated).
pub fn candidate_lines(report: &Report) -> String {
    let o = &report.outcome;
    let (m, n, k) = o.class.shape;
    let mut out = String::new();
    for (name, ms) in &o.timings {
        let _ = writeln!(
            out,
            "{m}x{n}x{k}*{}\t{}\t{}\t{name}\t{ms:.5}\t{:.2}\t{:.3}",
            o.batch,
            layout(o),
            o.class.precision.name(),
            tflops(o, *ms),
            ms / o.best.1
        );
    }
    out
}

/// `o`'s layout as the table writes it: `nn`, `nt`, `tn` or `tt`.
fn layout(o: &Outcome) -> String {
    [o.class.trans_a, o.class.trans_b].map(|t| if t { 't' } else { 'n' }).iter().collect()
}

/// TFLOP/s of `o`'s product (every batch entry) done in `ms` milliseconds.
fn tflops(o: &Outcome, ms: f64) -> f64 {
    let (m, n, k) = o.class.shape;
    2.0 * m as f64 * n as f64 * k as f64 * o.batch as f64 / (ms * 1e-3) / 1e12
}

/// The table file's header: the format, and where and when it was measured.
pub fn header(device: &str, command: &str) -> String {
    format!(
        "prism-gpu GEMM tuning table, read by the dispatcher (src/kernels/gemm/table.rs) and written by\n\
         `prism-gpu tune`. One tuned shape per line:\n\
         \n  precision layout batch m n k -> kernel\n\n\
         precision: f32 tf32 bf16 f16 f64. layout: nn nt tn tt (t: that operand stored transposed, A then B).\n\
         batch: 1 (one product) or many. m n k: the shape measured.\n\
         kernel: small | simt | simt64 | simt64x64 | simt32 | mma | splitk mma|simt64|sm90 bn=B splits=S\n        | skinny rows=R splits=S | gemv cols=C\n        \
         | sm90 bn=256|192|128|64 a=inplace|transpose|repitch b=inplace|transpose|repitch\n        \
         | sm90 bn=256|192|128|64 tail splits=S (192: bf16 / f16)\n        \
         (f64: simt | dmma [tile=128|64|32|32x32] [splits=S] | skinny rows=R [splits=S])\n\
         A GEMM uses the entry of its precision, layout and batch class whose m, n and k are each within a\n\
         factor of 1.25 of its own, the nearest by the sum of |ln(ours / entry's)| over m, n, k (the first in\n\
         the file on a tie), when the device can run that kernel for it; otherwise the built-in rules.\n\
         \n\
         Measured on {device} by `{command}`; entries only where the best kernel beat the shape's plan\n\
         before the run (the built-in rules and this table) by more than {:.0}%.",
        MARGIN * 100.0
    )
}

/// `table`'s text with `new`'s entries merged in: lines of a class `new` holds are dropped, then
/// `new`'s entries follow under `header` (each line prefixed with `# `); comments and the other
/// entries stay as they were. An entry the run found no better than the rules is not added, so a
/// class the rules now get right keeps its old entry; the result parses ([`Table::parse`]) when
/// `table` did.
pub fn merge(table: &str, new: &Table, header: &str) -> String {
    let replaced = |line: &str| {
        let entry = line.split('#').next().unwrap_or_default().trim();
        entry.parse::<Entry>().is_ok_and(|e| new.entries.iter().any(|n| n.class == e.class))
    };
    let mut out: String = table.lines().filter(|l| !replaced(l)).map(|l| format!("{l}\n")).collect();
    if !new.entries.is_empty() {
        out.push('\n');
        out.push_str(&new.to_text(header));
    }
    out
}

/// The geometric mean of `ratios` (1 for none).
fn geomean(ratios: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = ratios.fold((0.0, 0usize), |(sum, count), r| (sum + r.ln(), count + 1));
    if count == 0 {
        1.0
    } else {
        (sum / count as f64).exp()
    }
}

/// Per precision, a Markdown table: the shapes tuned, the default's and the best's speed against
/// cuBLAS (geometric mean and minimum over the shapes cuBLAS was timed on) and best / default.
pub fn summary(reports: &[Report]) -> String {
    let mut out = String::from(
        "| precision | shapes | default / cuBLAS (mean, min) | best / cuBLAS (mean, min) | best / default |\n|---|---|---|---|---|\n",
    );
    for precision in Tuned::ALL {
        let of: Vec<&Report> = reports.iter().filter(|r| r.outcome.class.precision == precision).collect();
        if of.is_empty() {
            continue;
        }
        let against = |ms: fn(&Outcome) -> f64| {
            let ratios: Vec<f64> = of.iter().filter_map(|r| Some(r.cublas? / ms(&r.outcome))).collect();
            match ratios.iter().copied().reduce(f64::min) {
                Some(min) => format!("{:.2}x, {min:.2}x", geomean(ratios.into_iter())),
                None => "-".to_string(),
            }
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.2}x |",
            precision.name(),
            of.len(),
            against(|o| o.default.1),
            against(|o| o.best.1),
            geomean(of.iter().map(|r| r.outcome.default.1 / r.outcome.best.1))
        );
    }
    out
}

/// Writes the table (if asked) and prints the summary; the exit status fails when a candidate
/// gave a wrong answer.
pub fn run_and_write(options: &Options, command: &str) -> std::process::ExitCode {
    let device = prism_gpu::driver::CudaContext::new(0)
        .and_then(|ctx| ctx.name())
        .unwrap_or_else(|e| format!("no device ({e})"));
    // The table is rewritten after each report, so a run cut short keeps what it measured.
    let mut so_far = Vec::new();
    let mut written = Ok(());
    let write = |reports: &[Report]| match &options.out {
        Some(path) => std::fs::write(path, table_of(reports).to_text(&header(&device, command)))
            .map_err(|e| format!("could not write {}: {e}", path.display())),
        None => Ok(()),
    };
    let mut candidates = String::from("shape\tlayout\tprecision\tcandidate\tms\tTFLOP/s\tover best\n");
    let result = run(options, |report| {
        println!("{}", line(report));
        so_far.push(report.clone());
        candidates.push_str(&candidate_lines(report));
        if written.is_ok() {
            written = write(&so_far);
        }
        if let (Some(path), Ok(())) = (&options.candidates, &written) {
            written = std::fs::write(path, &candidates)
                .map_err(|e| format!("could not write {}: {e}", path.display()));
        }
    });
    let outcomes = match result {
        Ok(done) => done,
        Err(e) => {
            eprintln!("tune failed: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let table = table_of(&outcomes);
    println!(
        "\n{} shapes x precisions, {} table entries; best / default geometric mean {:.3}x\n\n{}",
        outcomes.len(),
        table.entries.len(),
        geomean(outcomes.iter().map(|r| r.outcome.default.1 / r.outcome.best.1)),
        summary(&outcomes)
    );
    let wrong =
        outcomes.iter().flat_map(|r| &r.outcome.rejected).filter(|(_, why)| why.starts_with("WRONG")).count();
    if let Err(why) = written.and_then(|()| write(&outcomes)) {
        eprintln!("{why}");
        return std::process::ExitCode::FAILURE;
    }
    if let Some(path) = &options.out {
        println!("wrote {}", path.display());
    }
    if let Some(path) = &options.merge_into {
        let merged = std::fs::read_to_string(path).and_then(|old| {
            let note = format!(
                "Measured on {device} by `{command}`; entries where the best beat the shape's plan before the run \
                 (the rules and this table) by more than {:.0}%.",
                MARGIN * 100.0
            );
            std::fs::write(path, merge(&old, &table, &note))
        });
        match merged {
            Ok(()) => println!("merged {} entries into {}", table.entries.len(), path.display()),
            Err(e) => {
                eprintln!("could not merge into {}: {e}", path.display());
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    if wrong > 0 {
        eprintln!("{wrong} candidate(s) gave a WRONG answer (listed above): a kernel bug to fix");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_shapes_cover_the_losing_families() {
        let shapes = default_shapes();
        let nn = |(m, n, k)| shapes.contains(&Gemm::new(m, n, k));
        for m in [1, 8, 16, 32, 64] {
            assert!(nn((m, 14336, 4096)) && nn((m, 4096, 11008)), "decode m = {m}");
        }
        for s in [(128, 50257, 768), (257, 257, 257), (1568, 512, 4608), (8192, 64, 4096), (8192, 8192, 8192)]
        {
            assert!(nn(s), "{s:?}");
        }
        // candle's x·Wᵀ and its batched attention.
        assert!(shapes.contains(&Gemm::new(512, 8192, 2048).transposed(false, true)));
        assert!(shapes.iter().any(|g| g.batch == 32 && g.trans_b && (g.m, g.n, g.k) == (512, 512, 64)));
    }

    #[test]
    fn options_parse() {
        let o = parse_args(&[
            "--shapes",
            "1x4096x4096,257x257x257:tn,512x64x512*32",
            "--precisions",
            "bf16,f64",
            "--out",
            "t.txt",
            "--candidates",
            "c.tsv",
        ])
        .unwrap();
        let batch = Gemm::new(512, 64, 512).batched(32, 512 * 512, 512 * 64, 512 * 64);
        assert_eq!(
            o.shapes,
            vec![Gemm::new(1, 4096, 4096), Gemm::new(257, 257, 257).transposed(true, false), batch]
        );
        assert_eq!(o.precisions, vec![Tuned::Gemm(Precision::Bf16), Tuned::F64]);
        assert_eq!(o.out.as_deref(), Some(std::path::Path::new("t.txt")));
        assert_eq!(o.candidates.as_deref(), Some(std::path::Path::new("c.tsv")));
        assert!(parse_args(&["--precisions", "f8"]).unwrap_err().contains("unknown precision `f8`"));
        assert!(parse_args(&["--shapes"]).unwrap_err().contains("needs a value"));
        assert!(parse_args(&["--fast", "1"]).unwrap_err().contains("unknown option"));
        for bad in ["1x2", "1x2x3:nx", "1x2x3*0", "1x2x3*", "0x2x3:nt"] {
            assert!(parse_args(&["--shapes", bad]).unwrap_err().contains("is not a shape"), "{bad}");
        }
    }

    #[test]
    fn merged_tables_replace_a_class_and_keep_the_rest() {
        let old = "# header\n\nf32 nn 1 8 4096 4096 -> skinny rows=8 splits=8\n\
                   bf16 nn 1 64 64 64 -> small   # why\n";
        let new = Table::parse("bf16 nn 1 64 64 64 -> mma\ntf32 nt many 9 9 9 -> simt64\n").unwrap();
        let merged = merge(old, &new, "run 2\nsecond line");
        assert_eq!(
            merged,
            "# header\n\nf32 nn 1 8 4096 4096 -> skinny rows=8 splits=8\n\n# run 2\n# second line\n\
             bf16 nn 1 64 64 64 -> mma\ntf32 nt many 9 9 9 -> simt64\n"
        );
        assert_eq!(Table::parse(&merged).unwrap().entries.len(), 3);
        assert_eq!(merge(old, &Table::default(), "nothing"), old);
        let sweep = parse_args(&["--shapes", "sweep", "--merge-into", "t.txt"]).unwrap();
        assert_eq!(sweep.shapes.len(), super::super::sweep::shapes().len());
        assert_eq!(sweep.merge_into.as_deref(), Some(std::path::Path::new("t.txt")));
    }

    #[test]
    fn the_summary_compares_with_cublas_per_precision() {
        let report = |precision, default_ms: f64, best_ms: f64, cublas: Option<f64>| Report {
            outcome: Outcome {
                class: Class::of(&Gemm::new(8, 8, 8), precision),
                batch: 1,
                default: ("simt".into(), default_ms),
                best: (Choice::Kernel(tuning::Kernel::Small), best_ms),
                timings: vec![("simt".into(), default_ms), ("small".into(), best_ms)],
                rejected: Vec::new(),
            },
            cublas,
        };
        let f32 = Tuned::Gemm(Precision::F32);
        let text = summary(&[
            report(f32, 2.0, 1.0, Some(1.0)),
            report(f32, 4.0, 4.0, Some(1.0)),
            report(Tuned::F64, 1.0, 1.0, None),
        ]);
        // f32: default / cuBLAS 0.5 and 0.25 (mean 0.35), best 1 and 0.25 (0.5), best / default 2 and 1.
        assert!(text.contains("| f32 | 2 | 0.35x, 0.25x | 0.50x, 0.25x | 1.41x |"), "{text}");
        assert!(text.contains("| f64 | 1 | - | - | 1.00x |"), "{text}");
        assert!(!text.contains("bf16"), "{text}");
        // 2 x 8^3 flops in 2 ms and 1 ms: 5.12e-7 and 1.024e-6 TFLOP/s, 2x and 1x the best.
        let lines = candidate_lines(&report(f32, 2.0, 1.0, None));
        assert_eq!(
            lines,
            "8x8x8*1\tnn\tf32\tsimt\t2.00000\t0.00\t2.000\n8x8x8*1\tnn\tf32\tsmall\t1.00000\t0.00\t1.000\n"
        );
    }

    #[test]
    fn the_written_header_parses_as_comments() {
        let table = Table::parse(&Table::default().to_text(&header("H100", "prism-gpu tune"))).unwrap();
        assert!(table.entries.is_empty());
    }
}
