//! The whole benchmark suite behind `prism-gpu bench` and `cargo bench`: picks the groups and sizes,
//! runs them with progress lines, and returns the rows with where and when they were measured.
//! Without a GPU it times the CPU fallback only, labelled as such.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::report::Environment;
use super::{cpu, driver, gemm, kernels, Row, Settings};
use prism_gpu::driver::CudaContext;
use prism_gpu::{Error, Result};

/// A group of benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Launch, allocation and copies beside cudarc 0.19 and the raw driver loop; NVRTC's cache hit
    /// beside a cold compile.
    Driver,
    /// Memory-bound kernels beside a device-to-device copy.
    Kernels,
    /// GEMM, every precision, beside cuBLAS.
    Gemm,
    /// The cudarc `cublas` API on our kernels beside the real cuBLAS, the same caller code.
    Cublas,
    /// The cudarc `cublaslt` API (fused bias + GELU) on our kernels beside the real cuBLASLt and
    /// our own unfused GEMM + bias/activation pass.
    Cublaslt,
    /// All-reduce bandwidth over every visible GPU beside PyTorch's `torch.distributed` on the same
    /// NCCL, and data-parallel training throughput (not in the default set: it starts PyTorch).
    Nccl,
    /// The CPU fallback (what runs without a GPU).
    Cpu,
    /// GEMM on 100+ shapes per precision beside cuBLAS, with a summary (`--sweep`; not in the
    /// default set).
    Sweep,
}

impl Group {
    /// Every GPU group, in run order.
    pub const GPU: [Group; 5] = [Group::Driver, Group::Kernels, Group::Gemm, Group::Cublas, Group::Cublaslt];

    /// The group's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Group::Driver => "driver",
            Group::Kernels => "kernels",
            Group::Gemm => "gemm",
            Group::Cublas => "cublas",
            Group::Cublaslt => "cublaslt",
            Group::Nccl => "nccl",
            Group::Cpu => "cpu",
            Group::Sweep => super::sweep::GROUP,
        }
    }

    /// The group called `name`.
    pub fn parse(name: &str) -> Option<Group> {
        [
            Group::Driver,
            Group::Kernels,
            Group::Gemm,
            Group::Cublas,
            Group::Cublaslt,
            Group::Nccl,
            Group::Cpu,
            Group::Sweep,
        ]
        .into_iter()
        .find(|g| g.name() == name)
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Groups to run; empty means every GPU group (or the CPU group without a GPU).
    pub groups: Vec<Group>,
    /// The full run (target sizes, every GEMM shape, more repeats) instead of the short one.
    pub full: bool,
    /// GEMM shapes (m, n, k) instead of the run's default.
    pub gemm_shapes: Option<Vec<(usize, usize, usize)>>,
    /// Elements of the elementwise kernels instead of the run's default.
    pub elements: Option<usize>,
}

/// The short run's GEMM shapes: the target squares.
const QUICK_GEMM: &[(usize, usize, usize)] =
    &[(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192)];

/// Runs the suite; `progress` receives a line as each group starts and ends.
pub fn run(
    options: &Options,
    command: &str,
    mut progress: impl FnMut(&str),
) -> Result<(Environment, Vec<Row>)> {
    let settings = if options.full { Settings::FULL } else { Settings::QUICK };
    let gpu = CudaContext::new(0);
    let mut env = environment(command, gpu.as_ref().ok());
    let groups: Vec<Group> = match (&options.groups[..], &gpu) {
        ([], Ok(_)) => Group::GPU.to_vec(),
        ([], Err(_)) => vec![Group::Cpu],
        (picked, _) => picked.to_vec(),
    };
    if let Err(err) = &gpu {
        if groups.iter().any(|g| *g != Group::Cpu) {
            return Err(Error::NoGpu { op: "bench (GPU groups)", reason: err.to_string() });
        }
        env.device = "no GPU: the CPU fallback is timed, nothing is compared".to_string();
    }
    let mut rows = Vec::new();
    let started = Instant::now();
    for (i, group) in groups.iter().enumerate() {
        progress(&format!("[{}/{}] {} ...", i + 1, groups.len(), group.name()));
        let before = rows.len();
        let t = Instant::now();
        match group {
            Group::Driver => {
                rows.extend(driver::run(0, settings)?);
                #[cfg(not(feature = "legacy-gpu"))]
                rows.extend(super::nvrtc::run(settings)?);
            }
            Group::Kernels => {
                let ctx = gpu.as_ref().map_err(|e| Error::Driver(*e))?;
                let mut sizes = kernels::Sizes::default();
                if !options.full {
                    sizes.elements = 1 << 26;
                    sizes.rows = vec![(4096, 8192), (256, 65_536)];
                    sizes.gemv = 8192;
                    sizes.transpose = 4096;
                }
                if let Some(n) = options.elements {
                    sizes.elements = n;
                }
                rows.extend(kernels::run(&ctx.default_stream(), settings, &sizes)?);
            }
            Group::Gemm => {
                let shapes = match (&options.gemm_shapes, options.full) {
                    (Some(shapes), _) => &shapes[..],
                    (None, true) => gemm::SHAPES,
                    (None, false) => QUICK_GEMM,
                };
                rows.extend(gemm::run(settings, shapes, gemm::PRECISIONS, gemm::Table::Gemm)?);
                rows.extend(gemm::run_dgemm(settings, gemm::DGEMM_SHAPES, gemm::Table::Gemm)?);
            }
            #[cfg(all(feature = "cublas", not(feature = "legacy-gpu")))]
            Group::Cublas => {
                rows.extend(super::cublas_api::run(settings, &super::cublas_api::cases(options.full))?)
            }
            #[cfg(not(all(feature = "cublas", not(feature = "legacy-gpu"))))]
            Group::Cublas => {
                progress("cublas: this build has no prism_gpu::cublas (feature cublas, our engine)")
            }
            #[cfg(all(feature = "cublaslt", not(feature = "legacy-gpu")))]
            Group::Cublaslt => {
                rows.extend(super::cublaslt_api::run(settings, &super::cublaslt_api::cases())?)
            }
            #[cfg(not(all(feature = "cublaslt", not(feature = "legacy-gpu"))))]
            Group::Cublaslt => {
                progress("cublaslt: this build has no prism_gpu::cublaslt (feature cublaslt, our engine)")
            }
            #[cfg(all(feature = "nccl", not(feature = "legacy-gpu")))]
            Group::Nccl => rows.extend(super::nccl::run(settings, options.full, &mut progress)?),
            #[cfg(not(all(feature = "nccl", not(feature = "legacy-gpu"))))]
            Group::Nccl => progress("nccl: this build has no prism_gpu::nccl (feature nccl, our engine)"),
            Group::Cpu => rows.extend(cpu::run(settings, options.full)?),
            Group::Sweep => rows.extend(super::sweep::run(settings)?),
        }
        progress(&format!(
            "[{}/{}] {}: {} figures in {:.1} s (total {:.1} s)",
            i + 1,
            groups.len(),
            group.name(),
            rows.len() - before,
            t.elapsed().as_secs_f64(),
            started.elapsed().as_secs_f64()
        ));
    }
    Ok((env, rows))
}

/// Parses `prism-gpu bench`'s options: `--full`, `--groups a,b`, `--sweep` (the sweep group),
/// `--gemm MxNxK,...`, `--elements N`, `--out DIR`; returns the options and the output folder.
pub fn parse_args(args: &[&str]) -> std::result::Result<(Options, PathBuf), String> {
    let mut options = Options { groups: Vec::new(), full: false, gemm_shapes: None, elements: None };
    let mut out = PathBuf::from("target/bench");
    let mut args = args.iter();
    while let Some(&arg) = args.next() {
        let mut value = || args.next().copied().ok_or_else(|| format!("{arg} needs a value"));
        match arg {
            "--full" => options.full = true,
            "--sweep" => options.groups.push(Group::Sweep),
            "--groups" => {
                for g in value()?.split(',') {
                    options.groups.push(Group::parse(g).ok_or_else(|| format!("unknown group `{g}`"))?);
                }
            }
            "--gemm" => options.gemm_shapes = Some(parse_shapes(value()?)?),
            "--elements" => {
                let n = value()?;
                options.elements = Some(match n.parse::<usize>() {
                    Ok(count) if count > 0 => count,
                    _ => return Err(format!("`{n}` is not a count of at least 1")),
                });
            }
            "--out" => out = PathBuf::from(value()?),
            other => return Err(format!("unknown bench option `{other}`")),
        }
    }
    // `--sweep` and `--groups` add to one list, in the order given; each group runs once.
    let given = std::mem::take(&mut options.groups);
    for g in given {
        if !options.groups.contains(&g) {
            options.groups.push(g);
        }
    }
    Ok((options, out))
}

/// GEMM shapes `MxNxK,...` (each side at least 1).
pub fn parse_shapes(list: &str) -> std::result::Result<Vec<(usize, usize, usize)>, String> {
    list.split(',')
        .map(|s| match s.split('x').map(str::parse).collect::<Result<Vec<usize>, _>>() {
            Ok(d) if d.len() == 3 && d.iter().all(|&x| x > 0) => Ok((d[0], d[1], d[2])),
            _ => Err(format!("`{s}` is not a GEMM shape MxNxK")),
        })
        .collect()
}

/// Runs the suite with progress on stderr, prints the Markdown table, and writes `bench.md`,
/// `bench.json` and the SVG plots into `out`.
pub fn run_and_write(options: &Options, out: &Path, command: &str) -> ExitCode {
    let (env, rows) = match run(options, command, |line| eprintln!("{line}")) {
        Ok(result) => result,
        Err(err) => {
            eprintln!("bench failed: {err}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", super::report::markdown(&env, &rows));
    match write_outputs(&env, &rows, out, true) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("writing the results to {} failed: {err}", out.display());
            ExitCode::FAILURE
        }
    }
}

/// Writes `bench.md`, the SVG plots and (with `with_json`) `bench.json` into `out`.
fn write_outputs(
    env: &Environment,
    rows: &[Row],
    out: &Path,
    with_json: bool,
) -> std::result::Result<(), String> {
    let write =
        |name: &str, text: &str| std::fs::write(out.join(name), text).map_err(|e| format!("{name}: {e}"));
    std::fs::create_dir_all(out).map_err(|e| e.to_string())?;
    write("bench.md", &super::report::markdown(env, rows))?;
    if with_json {
        write("bench.json", &super::report::json(env, rows))?;
    }
    for (stem, svg) in super::plot::svgs(rows)? {
        write(&format!("{stem}.svg"), &svg)?;
    }
    eprintln!(
        "wrote bench.md{} and the plots in {}",
        if with_json { ", bench.json" } else { "" },
        out.display()
    );
    Ok(())
}

/// Redraws `bench.md` and the plots from a `bench.json` (into `out`, default: the JSON's folder).
pub fn replot(json: &Path, out: Option<&Path>) -> ExitCode {
    let out = out.map_or_else(|| json.parent().unwrap_or(Path::new(".")).to_path_buf(), Path::to_path_buf);
    let result = std::fs::read_to_string(json)
        .map_err(|e| format!("reading {}: {e}", json.display()))
        .and_then(|text| super::report::from_json(&text))
        .and_then(|(env, rows)| write_outputs(&env, &rows, &out, false));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("replot failed: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The `main` of a `cargo bench` target for `group`: the command line's own options (after
/// cargo's `--bench`) with the group fixed, results under `target/bench/<group>`.
pub fn bench_main(group: Group) -> ExitCode {
    let given: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let out = format!("target/bench/{}", group.name());
    let mut args: Vec<&str> = vec!["--groups", group.name(), "--out", &out];
    args.extend(given.iter().map(String::as_str));
    match parse_args(&args) {
        Ok((options, out)) => run_and_write(
            &options,
            &out,
            &format!("cargo bench --bench {} -- {}", group.name(), given.join(" ")),
        ),
        Err(why) => {
            eprintln!("{why}");
            ExitCode::from(2)
        }
    }
}

/// Where the figures come from: device, driver, kernel compiler, date, commit.
fn environment(command: &str, ctx: Option<&std::sync::Arc<CudaContext>>) -> Environment {
    let device =
        ctx.map_or_else(|| "no GPU".to_string(), |c| c.name().unwrap_or_else(|e| format!("unnamed ({e})")));
    let driver = match prism_gpu::probe() {
        Ok(p) => format!("{}.{}", p.driver_version / 1000, p.driver_version % 1000 / 10),
        Err(e) => format!("none ({e})"),
    };
    Environment {
        device,
        driver,
        toolkit: prism_gpu::raw::kernels::BUILT_WITH.to_string(),
        date: utc_now(),
        commit: env!("PRISM_COMMIT").to_string(),
        command: command.to_string(),
    }
}

/// The current UTC time as `YYYY-MM-DD HH:MM UTC`.
fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", rem / 3600, rem % 3600 / 60)
}

/// Gregorian (year, month, day) of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_414), (2025, 11, 22));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn groups_parse_by_name() {
        assert_eq!(Group::parse("gemm"), Some(Group::Gemm));
        assert_eq!(Group::parse("cpu"), Some(Group::Cpu));
        assert_eq!(Group::parse("nccl"), Some(Group::Nccl));
        assert!(!Group::GPU.contains(&Group::Nccl), "the default run starts no PyTorch");
        assert_eq!(Group::parse("nope"), None);
        assert_eq!(Group::parse("sweep"), Some(Group::Sweep));
        assert!(!Group::GPU.contains(&Group::Sweep), "the sweep runs only when asked for");
        let (options, _) = parse_args(&["--sweep", "--out", "x"]).unwrap();
        assert_eq!(options.groups, vec![Group::Sweep]);
        let (options, _) = parse_args(&["--sweep", "--groups", "gemm,sweep"]).unwrap();
        assert_eq!(options.groups, vec![Group::Sweep, Group::Gemm]);
    }

    #[test]
    fn sizes_must_be_positive_counts() {
        assert_eq!(parse_args(&["--elements", "1000003"]).unwrap().0.elements, Some(1_000_003));
        for bad in ["0", "-4", "abc", ""] {
            assert!(parse_args(&["--elements", bad]).is_err(), "--elements {bad:?}");
        }
        assert!(parse_args(&["--gemm", "0x5x5"]).is_err());
        assert!(parse_args(&["--gemm", "5x5"]).is_err());
        assert_eq!(parse_args(&["--gemm", "3x4x5"]).unwrap().0.gemm_shapes, Some(vec![(3, 4, 5)]));
    }

    #[test]
    fn without_a_gpu_the_cpu_group_runs_and_gpu_groups_are_refused() {
        if CudaContext::new(0).is_ok() {
            return; // this machine has a GPU: the fallback path is not what runs here
        }
        let options = Options { groups: vec![Group::Gemm], full: false, gemm_shapes: None, elements: None };
        assert!(matches!(run(&options, "test", |_| {}), Err(Error::NoGpu { .. })));
    }
}
