//! The kernel catalogue lists exactly the entry points `cuda/` defines, and every family is embedded.
//!
//! The definitions are read from `ptx/<family>.ptx.xz`: nvcc's own output for the sources (CI
//! regenerates it and fails on drift), so entry points made by macros or templates count too.

use prism_gpu::raw::kernels::{family_of, image, FAMILIES};
use std::collections::BTreeSet;
use std::path::Path;

/// Names of the `.visible .entry` functions of a PTX module.
fn ptx_entries(ptx: &str) -> BTreeSet<String> {
    ptx.lines()
        .filter_map(|l| l.strip_prefix(".visible .entry "))
        .map(|rest| rest.split('(').next().unwrap_or(rest).trim().to_string())
        .collect()
}

#[test]
fn ptx_entries_are_read_from_entry_lines_only() {
    let ptx = ".version 9.0\n.visible .entry prism_add_f32(\n\t.param .u64 a\n)\n.func helper(\n\
               .visible .entry gemm_x_nn(\n// .visible .entry commented(\n";
    assert_eq!(ptx_entries(ptx), ["gemm_x_nn", "prism_add_f32"].map(String::from).into());
}

#[test]
fn catalogue_matches_the_kernels_cuda_defines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources: Vec<String> = std::fs::read_dir(root.join("cuda"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .map(|p| p.file_stem().unwrap().to_str().unwrap().to_string())
        .collect();
    sources.sort();
    let listed: Vec<&str> = FAMILIES.iter().map(|f| f.name).collect();
    assert_eq!(listed, sources, "catalogue families differ from cuda/*.cu");
    for family in FAMILIES {
        let path = root.join("ptx").join(format!("{}.ptx.xz", family.name));
        let file = std::fs::File::open(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run scripts/regen)", path.display()));
        let mut bytes = Vec::new();
        lzma_rs::xz_decompress(&mut std::io::BufReader::new(file), &mut bytes).unwrap();
        let ptx = String::from_utf8(bytes).unwrap();
        let defined = ptx_entries(&ptx);
        assert!(!defined.is_empty(), "{} defines no entry point", family.name);
        let entries: BTreeSet<String> = family.entries.iter().map(|e| e.to_string()).collect();
        assert_eq!(entries, defined, "catalogue entries of {} differ from its kernels", family.name);
        let image = image(family.name).unwrap_or_else(|| panic!("family {} is not embedded", family.name));
        assert!(image.bytes.len() > 64, "family {} has an empty image", family.name);
    }
    assert_eq!(family_of("prism_add_f32").map(|f| f.name), Some("elementwise"));
    assert_eq!(family_of("matvec_reservoir_kernel").map(|f| f.name), Some("neuromorphic"));
    assert!(family_of("no_such_kernel").is_none());
}
