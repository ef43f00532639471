//! The layer rule, checked on the source: every `crate::` path in `src/**/*.rs` points down (or
//! sideways, within its layer), never up. It reads the files only: no GPU, no driver.
//!
//! The layers, bottom to top, read from the code (a module may use its own layer and the layers
//! below it):
//!
//! | rank | modules | what they are |
//! |---|---|---|
//! | 0 | `types`, `unprovided` | cudarc's `types` (CUDA C++ type names); the compile errors for the modules we do not provide |
//! | 1 | `sys` | the generated bindings and the run-time loader |
//! | 2 | `nvrtc` | cudarc-shaped runtime compilation, on `sys` |
//! | 3 | `driver`, `cuda_device_api` | the cudarc-0.19-shaped safe driver API; the cudarc 0.9–0.13 `CudaDevice` API written over it, which `driver` re-exports under cudarc's paths |
//! | 4 | `nccl` | cudarc-shaped NCCL over the driver API |
//! | 5 | `error`, `probe` | the crate's `Error` (it wraps the driver's, NVRTC's and NCCL's errors); what the machine offers |
//! | 6 | `spec` | the operations' vocabulary: which activation, reduction, optimiser, the dimensions, the shape checks |
//! | 7 | `kernels`, `cpu` | the GPU launchers of the built-in kernels; the CPU fallback |
//! | 8 | `cublas`, `curand` | cudarc-shaped cuBLAS and cuRAND on the built-in kernels |
//! | 9 | `cublaslt` | cudarc-shaped cuBLASLt, on `cublas`'s handle and the kernels |
//! | 10 | `ops` | each operation defined once: its check, its launch (kernels) and its CPU body (cpu) |
//! | 11 | `runtime` | `ProductionGpuRuntime`: each operation on the GPU or the CPU fallback |
//! | 12 | `nn`, `reservoir`, `rng` | the application layers on the runtime; the seedable generator for inputs and initialisation |
//!
//! So a `pub use` of a type from a layer above is an upward path too, and fails here. The crate
//! root (`src/lib.rs`) is above every layer: it curates the re-exports at `prism_gpu::` and, with
//! the `legacy-gpu` engine, writes `driver` as the real cudarc's plus the `CudaDevice` API. Paths
//! inside comments, and unit tests (`#[cfg(test)] mod ...`), which may reach across layers to test
//! how they meet, are not checked. A `crate::Name` re-exported at the root counts as a path into
//! the module it is re-exported from.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, bottom to top; the index is the rank.
const LAYERS: &[&[&str]] = &[
    &["types", "unprovided", "cache_dir"],
    &["sys"],
    &["nvrtc"],
    &["driver", "cuda_device_api"],
    &["nccl"],
    &["error", "probe"],
    &["spec"],
    &["kernels", "cpu"],
    &["cublas", "curand"],
    &["cublaslt"],
    &["ops"],
    &["runtime"],
    &["nn", "reservoir", "rng"],
];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read src/") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `text` with comments and the contents of string and char literals blanked (same length, same
/// line breaks), so that offsets still give line numbers.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
                blank(&mut out, i, end);
                i = end;
            }
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#')) && (i == 0 || !is_ident(b[i - 1])) => {
                // A raw string r"..." or r#"..."#.
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let start = i + 2 + hashes;
                let end = text[start..].find(&close).map_or(b.len(), |p| start + p + close.len());
                blank(&mut out, start, end);
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                blank(&mut out, i + 1, j.min(b.len()));
                i = j + 1;
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\') => {
                // A char literal ('x', '\n', '\''), not a lifetime.
                let end = b[i + 2..].iter().position(|&c| c == b'\'').map_or(b.len(), |p| i + 2 + p + 1);
                blank(&mut out, i + 1, end.saturating_sub(1));
                i = end;
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8 (only ASCII replaced whole characters)")
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// `code` with every `#[cfg(test)] mod name { ... }` blanked.
fn without_unit_tests(code: &str) -> String {
    let mut out = code.as_bytes().to_vec();
    let mut from = 0;
    while let Some(p) = code[from..].find("#[cfg(test)]") {
        let at = from + p;
        from = at + 1;
        let rest = code[at + "#[cfg(test)]".len()..].trim_start();
        let is_mod =
            rest.starts_with("mod ") || rest.starts_with("pub(crate) mod ") || rest.starts_with("pub mod ");
        let Some(open) = code[at..].find('{').map(|o| at + o) else { continue };
        if !is_mod || code[at..open].contains(';') {
            continue;
        }
        let mut depth = 0usize;
        let mut end = code.len();
        for (k, c) in code[open..].bytes().enumerate() {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        for c in &mut out[at..end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        from = end;
    }
    String::from_utf8(out).expect("blanking keeps UTF-8")
}

/// The first segments of every `crate::` path in `code`, with their byte offsets; a group
/// `crate::{a::b, c}` gives `a` and `c`.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let b = code.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("crate::") {
        let at = from + p;
        from = at + "crate::".len();
        // `$crate::` (macros) and `prism_crate::` are not this crate's paths from here.
        if at > 0 && (is_ident(b[at - 1]) || b[at - 1] == b'$') {
            continue;
        }
        let rest = &code[from..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1usize;
            let mut item_start = true;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => item_start = true,
                    c if depth == 1 && item_start && (c.is_ascii_alphabetic() || c == '_') => {
                        let name: String = group[k..]
                            .chars()
                            .take_while(|&c| c.is_ascii_alphanumeric() || c == '_')
                            .collect();
                        found.push((from + 1 + k, name));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name: String = rest.chars().take_while(|&c| c.is_ascii_alphanumeric() || c == '_').collect();
            if !name.is_empty() {
                found.push((at, name));
            }
        }
    }
    found
}

/// The root's re-exports (`pub use module::{Name, ...};` in `src/lib.rs`): name -> module.
fn root_reexports(lib: &str) -> HashMap<String, String> {
    let code = code_only(lib);
    let mut map = HashMap::new();
    // Top-level statements only: they start unindented.
    for (at, _) in code.match_indices("\npub use ") {
        let stmt = &code[at + 1..];
        let stmt = &stmt[..stmt.find(';').unwrap_or(stmt.len())];
        let Some(path) = stmt.strip_prefix("pub use ") else { continue };
        let Some((module, names)) = path.split_once("::") else { continue };
        if rank(module.trim()).is_none() {
            continue; // another crate's module (`pub use cudarc::cublas` with `legacy-gpu`)
        }
        let names = names.trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.trim();
            let name = name.rsplit(" as ").next().unwrap_or(name).trim();
            if !name.is_empty() && name != "*" && name != "self" {
                map.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    map
}

/// The upward paths: `file:line: module (rank) -> target (rank): the line`.
fn upward_paths(src: &Path) -> Vec<String> {
    let lib = fs::read_to_string(src.join("lib.rs")).expect("read src/lib.rs");
    let reexports = root_reexports(&lib);
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut errors = Vec::new();
    for file in files {
        let relative = file.strip_prefix(src).expect("under src/");
        let Some(first) = relative.components().next() else { continue };
        let module = first.as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
        if module == "lib" {
            continue; // the root curates re-exports from every layer
        }
        let from = rank(&module).unwrap_or_else(|| {
            panic!("src/{module}: a top-level module this test does not place: add it to LAYERS")
        });
        let text = fs::read_to_string(&file).expect("read a source file");
        let code = without_unit_tests(&code_only(&text));
        for (offset, first) in crate_paths(&code) {
            let target = reexports.get(&first).cloned().unwrap_or(first);
            if target == module || target == "self" || target == "super" {
                continue;
            }
            let Some(to) = rank(&target) else {
                errors.push(format!(
                    "src/{}: `crate::{target}` is not a module this test places",
                    relative.display()
                ));
                continue;
            };
            if to > from {
                let line = code[..offset].matches('\n').count() + 1;
                let source = text.lines().nth(line - 1).unwrap_or("").trim();
                errors.push(format!(
                    "src/{}:{line}: {module} (layer {from}) -> {target} (layer {to}), which is above it: {source}",
                    relative.display()
                ));
            }
        }
    }
    errors
}

#[test]
fn imports_point_down_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let errors = upward_paths(&src);
    assert!(errors.is_empty(), "{} path(s) point up the layers:\n{}", errors.len(), errors.join("\n"));
}

#[test]
fn every_top_level_module_has_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for entry in fs::read_dir(&src).expect("read src/") {
        let name = entry
            .expect("a directory entry")
            .file_name()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        assert!(name == "lib" || rank(&name).is_some(), "src/{name} is in no layer: add it to LAYERS");
    }
}

#[test]
fn the_checker_sees_upward_paths() {
    // The parser itself: a group, a plain path, a path in a comment, one in a string, a unit test.
    let code = code_only(
        "use crate::{error::Result, ops::Map};\n// crate::runtime\nlet s = \"crate::nn\";\n\
         fn f() -> crate::runtime::X {}\n#[cfg(test)]\nmod tests {\n    use crate::nn;\n}\n",
    );
    let code = without_unit_tests(&code);
    let names: Vec<String> = crate_paths(&code).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["error", "ops", "runtime"]);
    assert!(rank("ops") > rank("kernels") && rank("kernels") > rank("spec"));
    assert!(rank("runtime") > rank("ops") && rank("nn") > rank("runtime"));
    assert_eq!(rank("kernels"), rank("cpu"));
}
