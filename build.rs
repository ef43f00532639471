//! Compiles the kernel families in `cuda/*.cu` and embeds them in the library.
//!
//! With nvcc (found through `NVCC`, `CUDA_PATH`/`CUDA_HOME`, `PATH`, or the toolkit that
//! `scripts/install-cuda-toolkit` puts in `.toolkit/`), each family becomes a fatbin holding SASS for
//! sm_80 and sm_90 plus compute_80 PTX. sm_86 and sm_89 run the sm_80 SASS natively (one major
//! revision: same instruction set), so Ampere, Ada and Hopper need no JIT and newer GPUs JIT the PTX;
//! `PRISM_CUDA_ARCHS="80;86;89;90"` builds SASS for exactly the listed architectures instead (PTX for
//! the oldest). A family whose first line is `// prism-targets: sm_90a` is built for sm_90a alone
//! (wgmma and TMA code). The device code is zstd-compressed (`--compress-mode=size`: a quarter of the
//! default's size; the driver inflates it at load). Without nvcc the checked-in `ptx/<family>.ptx.xz`
//! is decompressed and embedded instead, with a warning. `PRISM_REGEN_PTX=1` rewrites `ptx/` from the
//! PTX that the same nvcc run produced for the fatbin (scripts/regen does this).
//!
//! The PTX is shipped xz-compressed (decoded by lzma-rs, pure Rust): the GEMM families' PTX, long
//! runs of near-identical template instances, shrinks 23-fold (gzip: 6-fold), which keeps the
//! published crate well under the registry's size limit. Regeneration compresses with the `xz` tool
//! at fixed settings (one thread, so one block: the same bytes on every run of one xz release).
//! nvcc's own output is not deterministic: the same
//! source sometimes compiles to slightly different PTX (seen on `gemm_skinny`, about one run in six:
//! NVVM vectorises a few shared-memory loads differently). So `ptx/MANIFEST` records, per family, a
//! SHA-256 of what went into its PTX (nvcc's release, the flags, the family's source, every header)
//! and of the `.ptx.xz`; regeneration keeps a file whose inputs and bytes still match it, and CI's
//! drift check (`git status` after scripts/regen) fails exactly when a source changed without a
//! regeneration or a file was edited by hand.
//!
//! Output: `$OUT_DIR/kernel_images.rs`, one `(family, image, is_ptx)` entry per family.
//!
//! nvcc output is cached under `$PRISM_KERNEL_CACHE` (default: `<target dir>/prism-kernel-cache`),
//! keyed per family by a hash of nvcc, the flags, the family's source and every header in `cuda/`, so
//! `check`, `clippy`, `doc`, `test` and other profiles or feature sets share one compilation of the
//! kernels, and editing one family recompiles only that family.

use std::collections::hash_map::DefaultHasher;
use std::env;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest as _, Sha256};

/// The default targets: SASS for each listed architecture and PTX for the oldest.
const DEFAULT_SASS: &[&str] = &["80", "90"];
const NVCC_FLAGS: &[&str] = &["-O3", "-std=c++17", "--extended-lambda", "-Icuda", "--compress-mode=size"];

struct Family {
    name: String,
    source: PathBuf,
    sass: Vec<String>,
    ptx: String,
}

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    for var in [
        "NVCC",
        "CUDA_PATH",
        "CUDA_HOME",
        "PATH",
        "NVCC_CCBIN",
        "PRISM_REGEN_PTX",
        "PRISM_KERNEL_CACHE",
        "PRISM_CUDA_ARCHS",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=cuda");
    println!("cargo:rerun-if-changed=ptx");
    println!("cargo:rerun-if-changed=.toolkit/nvidia/cu13/bin/nvcc");
    write_f32_constants(&root.join("cuda/random_polynomials.inc"), &out.join("random_polynomials.rs"));

    let families = families(&root.join("cuda"), &sass_targets());
    let nvcc = find_nvcc(&root);
    let regen_ptx = env::var_os("PRISM_REGEN_PTX").is_some_and(|v| v == "1");
    if regen_ptx && nvcc.is_none() {
        panic!("PRISM_REGEN_PTX=1 needs nvcc (run scripts/install-cuda-toolkit)");
    }
    if nvcc.is_none() {
        println!(
            "cargo:warning=nvcc not found (set NVCC or CUDA_PATH, or run scripts/install-cuda-toolkit): \
             embedding the checked-in ptx/*.ptx.xz, which the driver compiles at first load"
        );
    }

    // How the kernels were built (`prism_gpu::raw::kernels::BUILT_WITH`, quoted by `prism-gpu bench`).
    let kernels_from = match nvcc.as_deref() {
        Some(nvcc) => nvcc_release(nvcc),
        None => "checked-in PTX (no nvcc)".to_string(),
    };
    println!("cargo:rustc-env=PRISM_KERNELS_BUILT_WITH={kernels_from}");

    let cache = nvcc.as_deref().map(|nvcc| Cache::new(nvcc, &root, &out));
    let manifest = regen_ptx.then(|| Manifest::read(&root, &kernels_from));
    // Families compile in parallel: nvcc is single-threaded and the GEMM families are slow.
    let images: Vec<(PathBuf, bool, Option<String>)> = std::thread::scope(|scope| {
        let jobs: Vec<_> = families
            .iter()
            .map(|family| {
                let (nvcc, root, out, cache) = (nvcc.as_deref(), &root, &out, cache.as_ref());
                let manifest = manifest.as_ref();
                scope.spawn(move || build_family(family, nvcc, cache, root, out, manifest))
            })
            .collect();
        jobs.into_iter().map(|j| j.join().expect("kernel build thread panicked")).collect()
    });
    if let Some(manifest) = &manifest {
        let lines: Vec<&str> = images.iter().filter_map(|(_, _, line)| line.as_deref()).collect();
        manifest.write(&lines);
    }

    let mut table = String::from("// @generated by build.rs: the embedded kernel images.\n&[\n");
    for (family, (image, is_ptx, _)) in families.iter().zip(&images) {
        writeln!(table, "    ({:?}, include_bytes!({:?}), {is_ptx}),", family.name, image)
            .expect("writing to a String");
    }
    table.push_str("]\n");
    std::fs::write(out.join("kernel_images.rs"), table).expect("writing kernel_images.rs");

    // The catalogue (`prism_gpu::raw::kernels::FAMILIES`): each family's entry points as its PTX defines
    // them (the PTX embedded or built beside the fatbin), so macro- and template-made kernels count
    // and no list is kept by hand.
    let mut catalogue =
        String::from("// @generated by build.rs: each family's entry points, from its PTX.\n&[\n");
    for family in &families {
        let ptx = std::fs::read(out.join(format!("{}.ptx", family.name))).expect("reading a family's PTX");
        let ptx = String::from_utf8_lossy(&ptx);
        let entries = ptx_entries(&ptx);
        assert!(!entries.is_empty(), "cuda/{}.cu defines no kernel", family.name);
        writeln!(catalogue, "    Family {{ name: {:?}, entries: &{entries:?} }},", family.name)
            .expect("writing to a String");
    }
    catalogue.push_str("]\n");
    std::fs::write(out.join("kernel_catalogue.rs"), catalogue).expect("writing kernel_catalogue.rs");
}

/// The `PRISM_F32_BITS(NAME, 0x..., ...)` lines of a kernel header as Rust constants
/// (`pub(crate) const NAME: [u32; N]`), so the CPU fallback reads the kernels' own constants.
fn write_f32_constants(header: &Path, rust: &Path) {
    let text = std::fs::read_to_string(header).expect("reading a constants header");
    let mut consts = format!("// @generated by build.rs from {}.\n", header.display());
    for line in text.lines().filter_map(|l| l.trim().strip_prefix("PRISM_F32_BITS(")) {
        let fields: Vec<&str> = line.trim_end_matches(')').split(',').map(str::trim).collect();
        let (name, values) = fields.split_first().expect("a PRISM_F32_BITS line names its constant");
        assert!(
            !values.is_empty() && values.iter().all(|v| v.len() == 10 && v.starts_with("0x")),
            "{}: `{line}` is not a list of f32 bit patterns such as 0x3f800000",
            header.display()
        );
        writeln!(consts, "pub(crate) const {name}: [u32; {}] = [{}];", values.len(), values.join(", "))
            .expect("writing to a String");
    }
    std::fs::write(rust, consts).expect("writing the constants' Rust file");
}

/// The names of a PTX module's kernels (its `.visible .entry` lines), in the order defined.
fn ptx_entries(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter_map(|line| line.strip_prefix(".visible .entry "))
        .map(|rest| rest.split('(').next().unwrap_or(rest).trim())
        .collect()
}

/// The SASS architectures of a family without targets of its own, oldest first: `PRISM_CUDA_ARCHS`
/// (`80;86;89;90`, commas, spaces and `sm_` allowed), else [`DEFAULT_SASS`].
fn sass_targets() -> Vec<String> {
    let mut archs: Vec<String> = match env::var("PRISM_CUDA_ARCHS") {
        Ok(list) if !list.trim().is_empty() => list
            .split([';', ',', ' '])
            .map(|a| a.trim().trim_start_matches("sm_"))
            .filter(|a| !a.is_empty())
            .map(|a| {
                assert!(
                    a.len() >= 2 && a.bytes().all(|b| b.is_ascii_digit()),
                    "PRISM_CUDA_ARCHS: `{a}` is not an architecture such as 80 or 90"
                );
                a.to_string()
            })
            .collect(),
        _ => DEFAULT_SASS.iter().map(|a| a.to_string()).collect(),
    };
    assert!(!archs.is_empty(), "PRISM_CUDA_ARCHS names no architecture");
    archs.sort_by_key(|a| a.parse::<u32>().expect("checked above: digits"));
    archs.dedup();
    archs
}

/// Every `cuda/*.cu`, sorted by name, with the targets its first line asks for (else `sass`, and PTX
/// for the oldest of them).
fn families(dir: &Path, sass: &[String]) -> Vec<Family> {
    let mut families: Vec<Family> = std::fs::read_dir(dir)
        .expect("reading cuda/")
        .map(|e| e.expect("reading cuda/").path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .map(|source| {
            println!("cargo:rerun-if-changed={}", source.display());
            let text = std::fs::read_to_string(&source).expect("reading a kernel source");
            let name = source.file_stem().expect("a .cu file has a stem").to_string_lossy().into_owned();
            match text.lines().next().and_then(|l| l.trim().strip_prefix("// prism-targets:")) {
                Some(arch) => {
                    let arch = arch.trim().trim_start_matches("sm_").to_string();
                    Family { name, source, sass: vec![arch.clone()], ptx: arch }
                }
                None => Family { name, source, sass: sass.to_vec(), ptx: sass[0].clone() },
            }
        })
        .collect();
    families.sort_by(|a, b| a.name.cmp(&b.name));
    for header in std::fs::read_dir(dir).expect("reading cuda/").flatten() {
        println!("cargo:rerun-if-changed={}", header.path().display());
    }
    families
}

/// Builds one family's image into `out`; returns its path, whether it is PTX text, and (when
/// regenerating `ptx/`) the family's manifest line.
fn build_family(
    family: &Family,
    nvcc: Option<&Path>,
    cache: Option<&Cache>,
    root: &Path,
    out: &Path,
    manifest: Option<&Manifest>,
) -> (PathBuf, bool, Option<String>) {
    let checked_in = root.join("ptx").join(format!("{}.ptx.xz", family.name));
    let Some(nvcc) = nvcc else {
        let mut ptx = unxz(&checked_in);
        // PTX handed to cuModuleLoadData must be NUL-terminated.
        ptx.push(0);
        let image = out.join(format!("{}.ptx", family.name));
        std::fs::write(&image, ptx).expect("writing embedded PTX");
        return (image, true, None);
    };
    let image = out.join(format!("{}.fatbin", family.name));
    let ptx = out.join(format!("{}.ptx", family.name));
    let mut gencode: Vec<String> =
        family.sass.iter().map(|arch| format!("-gencode=arch=compute_{arch},code=sm_{arch}")).collect();
    gencode.push(format!("-gencode=arch=compute_{0},code=compute_{0}", family.ptx));
    let cached = cache.map(|c| c.entry(family, &gencode));
    let hit = cached.as_ref().is_some_and(|entry| {
        std::fs::copy(entry.with_extension("fatbin"), &image).is_ok()
            && std::fs::copy(entry.with_extension("ptx"), &ptx).is_ok()
    });
    if !hit {
        compile(nvcc, family, &gencode, root, out, &image, &ptx);
        if let Some(entry) = cached {
            for (file, ext) in [(&image, "fatbin"), (&ptx, "ptx")] {
                // Copy then rename, so a concurrent build never sees a partial file.
                let partial = entry.with_extension(format!("partial{}", std::process::id()));
                if std::fs::copy(file, &partial).is_ok() {
                    let _ = std::fs::rename(&partial, entry.with_extension(ext));
                }
            }
        }
    }
    let line = manifest.map(|manifest| {
        let inputs = manifest.inputs_digest(family);
        let current = std::fs::read(&checked_in).ok().map(|bytes| hex(&Sha256::digest(bytes)));
        let file = match current {
            Some(file) if manifest.lists(&family.name, &inputs, &file) => file,
            _ => {
                let text = std::fs::read_to_string(&ptx).expect("reading generated PTX");
                let xz = xz(path_independent(&text).as_bytes());
                std::fs::write(&checked_in, &xz).expect("writing ptx/*.ptx.xz");
                hex(&Sha256::digest(&xz))
            }
        };
        format!("{} {inputs} {file}", family.name)
    });
    (image, false, line)
}

/// `ptx/MANIFEST`: one line per family, `<family> <SHA-256 of its inputs> <SHA-256 of its .ptx.xz>`.
struct Manifest {
    path: PathBuf,
    lines: Vec<String>,
    /// The hash of what every family's PTX depends on besides its own source: nvcc's release, the
    /// flags and every header in `cuda/` (never paths, which differ between checkouts).
    shared_inputs: Sha256,
}

/// Feeds `part` to `hasher` behind its length, so that no two sequences of parts hash alike.
fn hash_part(hasher: &mut Sha256, part: &[u8]) {
    hasher.update((part.len() as u64).to_le_bytes());
    hasher.update(part);
}

impl Manifest {
    fn read(root: &Path, nvcc_release: &str) -> Self {
        let path = root.join("ptx").join("MANIFEST");
        let lines = std::fs::read_to_string(&path).unwrap_or_default().lines().map(str::to_string).collect();
        let mut shared_inputs = Sha256::new();
        hash_part(&mut shared_inputs, nvcc_release.as_bytes());
        for flag in NVCC_FLAGS {
            hash_part(&mut shared_inputs, flag.as_bytes());
        }
        for header in headers(root) {
            let name =
                header.file_name().expect("a directory entry has a name").to_string_lossy().into_owned();
            let bytes =
                std::fs::read(&header).unwrap_or_else(|e| panic!("reading {}: {e}", header.display()));
            hash_part(&mut shared_inputs, name.as_bytes());
            hash_part(&mut shared_inputs, &bytes);
        }
        Manifest { path, lines, shared_inputs }
    }

    /// SHA-256 (hex) of the shared inputs, the family's PTX architecture and its source.
    fn inputs_digest(&self, family: &Family) -> String {
        let source = std::fs::read(&family.source)
            .unwrap_or_else(|e| panic!("reading {}: {e}", family.source.display()));
        let mut hasher = self.shared_inputs.clone();
        hash_part(&mut hasher, family.ptx.as_bytes());
        hash_part(&mut hasher, &source);
        hex(&hasher.finalize())
    }

    fn lists(&self, family: &str, inputs: &str, file: &str) -> bool {
        self.lines.iter().any(|line| *line == format!("{family} {inputs} {file}"))
    }

    fn write(&self, lines: &[&str]) {
        let mut text = String::from(
            "# Written by scripts/regen (build.rs): <family> <SHA-256 of its PTX's inputs> <SHA-256 of ptx/<family>.ptx.xz>\n",
        );
        for line in lines {
            text.push_str(line);
            text.push('\n');
        }
        std::fs::write(&self.path, text).expect("writing ptx/MANIFEST");
    }
}

fn hex(digest: &[u8]) -> String {
    digest.iter().fold(String::with_capacity(2 * digest.len()), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// One nvcc run for `family`: the fatbin into `image`, and into `ptx` the PTX of the family's PTX
/// target, which nvcc generates for the fatbin anyway (`--keep`) and which is byte for byte what
/// `nvcc -ptx` gives, so `scripts/regen` costs no second compilation.
fn compile(
    nvcc: &Path,
    family: &Family,
    gencode: &[String],
    root: &Path,
    out: &Path,
    image: &Path,
    ptx: &Path,
) {
    let keep = out.join(format!("{}.keep", family.name));
    let _ = std::fs::remove_dir_all(&keep);
    std::fs::create_dir_all(&keep).expect("creating nvcc's --keep-dir");
    let mut cmd = Command::new(nvcc);
    cmd.current_dir(root)
        .args(NVCC_FLAGS)
        .arg("-fatbin")
        .args(gencode)
        .arg("--keep")
        .arg("--keep-dir")
        .arg(&keep);
    run(cmd.arg("-o").arg(image).arg(&family.source));
    // nvcc names the file after its virtual architecture only when it compiled for several.
    let kept = [format!("{}.compute_{}.ptx", family.name, family.ptx), format!("{}.ptx", family.name)]
        .map(|name| keep.join(name))
        .into_iter()
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            panic!("nvcc --keep left no PTX for compute_{} in {}", family.ptx, keep.display())
        });
    std::fs::rename(&kept, ptx).unwrap_or_else(|e| panic!("moving {}: {e}", kept.display()));
    let _ = std::fs::remove_dir_all(&keep);
}

/// The decompressed contents of a checked-in `ptx/<family>.ptx.xz`.
fn unxz(path: &Path) -> Vec<u8> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| {
        panic!("no nvcc and no {}: {e} (run scripts/regen with the toolkit)", path.display())
    });
    let mut ptx = Vec::new();
    lzma_rs::xz_decompress(&mut std::io::BufReader::new(file), &mut ptx)
        .unwrap_or_else(|e| panic!("{}: not a valid xz file: {e} (run scripts/regen)", path.display()));
    ptx
}

/// `data` compressed by the `xz` tool at fixed settings: the strongest preset, and one thread, which
/// writes a single block whatever the machine's cores (threaded xz cuts the stream by core count).
fn xz(data: &[u8]) -> Vec<u8> {
    let mut child = Command::new("xz")
        .args(["--format=xz", "--check=crc64", "-9e", "--threads=1", "--stdout"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("regenerating ptx/ needs the xz tool (xz-utils): {e}"));
    let mut stdin = child.stdin.take().expect("xz's stdin is piped");
    // Feed the input from another thread: xz writes while it reads, and both pipes are bounded.
    let compressed = std::thread::scope(|scope| {
        scope.spawn(move || stdin.write_all(data).expect("writing to xz"));
        child.wait_with_output().expect("running xz")
    });
    assert!(compressed.status.success(), "xz failed: {}", compressed.status);
    compressed.stdout
}

/// nvcc names internal-linkage symbols (`_INTERNAL_<8 hex digits>_...`, anonymous namespaces
/// `_GLOBAL__N__<8 hex digits>_...`) with a hash of the source's absolute path, so the same source
/// gives different PTX in different checkouts. The symbols are private to the module: zeroing the
/// hash keeps every reference consistent and the checked-in file the same everywhere.
fn path_independent(ptx: &str) -> String {
    let mut out = ptx.to_string();
    for mark in ["_INTERNAL_", "_GLOBAL__N__"] {
        let mut normalised = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(at) = rest.find(mark) {
            let (before, after) = rest.split_at(at + mark.len());
            normalised.push_str(before);
            let hash = after.as_bytes().get(..9);
            if hash.is_some_and(|h| h[..8].iter().all(u8::is_ascii_hexdigit) && h[8] == b'_') {
                normalised.push_str("00000000");
                rest = &after[8..];
            } else {
                rest = after;
            }
        }
        normalised.push_str(rest);
        out = normalised;
    }
    out
}

/// `nvcc <release>` from `nvcc --version` (its last line names the build).
fn nvcc_release(nvcc: &Path) -> String {
    Command::new(nvcc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout).lines().rev().find(|l| l.contains("Build")).map(str::to_string)
        })
        .map_or_else(|| format!("nvcc at {}", nvcc.display()), |build| format!("nvcc {}", build.trim()))
}

/// Compiled fatbins and their PTX, keyed by everything that goes into them.
struct Cache {
    dir: PathBuf,
    /// Hash of nvcc (path, size, modification time), the flags and every header (`*.cuh`) in `cuda/`.
    shared_inputs: u64,
}

impl Cache {
    fn new(nvcc: &Path, root: &Path, out: &Path) -> Self {
        // OUT_DIR is <target>/<profile>/build/<package>-<hash>/out.
        let dir = env::var_os("PRISM_KERNEL_CACHE")
            .map(PathBuf::from)
            .or_else(|| out.ancestors().nth(4).map(|target| target.join("prism-kernel-cache")))
            .unwrap_or_else(|| out.join("kernel-cache"));
        let _ = std::fs::create_dir_all(&dir);
        let mut hasher = DefaultHasher::new();
        nvcc.hash(&mut hasher);
        if let Ok(meta) = std::fs::metadata(nvcc) {
            meta.len().hash(&mut hasher);
            meta.modified().ok().hash(&mut hasher);
        }
        NVCC_FLAGS.hash(&mut hasher);
        // A family's source includes headers only (never another `.cu`), so the headers and its own
        // source are all that can change its image.
        for file in headers(root) {
            file.file_name().hash(&mut hasher);
            std::fs::read(&file).unwrap_or_default().hash(&mut hasher);
        }
        Cache { dir, shared_inputs: hasher.finish() }
    }

    /// Where `family` built with `gencode` is (or will be) cached: the path without its extension
    /// (`.fatbin`, `.ptx`).
    fn entry(&self, family: &Family, gencode: &[String]) -> PathBuf {
        let mut hasher = DefaultHasher::new();
        let source = std::fs::read(&family.source).unwrap_or_default();
        (self.shared_inputs, &family.name, source, gencode).hash(&mut hasher);
        self.dir.join(format!("{}-{:016x}", family.name, hasher.finish()))
    }
}

/// Every file of `cuda/` that is not a family (`*.cu`): the headers the families include, sorted.
fn headers(root: &Path) -> Vec<PathBuf> {
    let mut headers: Vec<PathBuf> = std::fs::read_dir(root.join("cuda"))
        .expect("reading cuda/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_none_or(|e| e != "cu"))
        .collect();
    headers.sort();
    headers
}

fn run(cmd: &mut Command) {
    let output = cmd.output().unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    if !output.status.success() {
        panic!(
            "{cmd:?} failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// nvcc from `NVCC`, `CUDA_PATH`/`CUDA_HOME`, `PATH`, then the repository's `.toolkit/`.
fn find_nvcc(root: &Path) -> Option<PathBuf> {
    let exe = if cfg!(windows) { "nvcc.exe" } else { "nvcc" };
    let from_env = env::var_os("NVCC").map(PathBuf::from);
    let from_cuda = ["CUDA_PATH", "CUDA_HOME"]
        .iter()
        .filter_map(env::var_os)
        .map(|p| PathBuf::from(p).join("bin").join(exe));
    let from_path = env::var_os("PATH")
        .map(|p| env::split_paths(&p).map(|d| d.join(exe)).collect::<Vec<_>>())
        .unwrap_or_default();
    let local = root.join(".toolkit/nvidia/cu13/bin").join(exe);
    from_env.into_iter().chain(from_cuda).chain(from_path).chain([local]).find(|p| p.is_file())
}
