//! The kernel catalogue lists exactly the entry points `cuda/` defines, and every family is embedded.

use prism_gpu::kernels::{family_of, image, FAMILIES};
use std::collections::BTreeSet;
use std::path::Path;

/// Entry points defined in a CUDA source: `extern "C" __global__` (or our `PRISM_KERNEL` macro for
/// it) followed by a return type and the name. Comments are stripped first.
fn defined_entries(source: &str) -> BTreeSet<String> {
    let code: String = source
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .filter(|l| !l.trim_start().starts_with("#define"))
        .collect::<Vec<_>>()
        .join("\n");
    let code = code.replace("extern \"C\" __global__", " PRISM_KERNEL ");
    let mut entries = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("PRISM_KERNEL") {
        rest = &rest[at + "PRISM_KERNEL".len()..];
        // Skip `__launch_bounds__(...)` and similar attributes: the name is the last word before
        // the first parenthesis that follows a plain identifier.
        let mut head = &rest[..rest.find('(').expect("an entry point has a parameter list")];
        while head.trim_end().ends_with("__launch_bounds__") {
            let open = head.len();
            let close = open + rest[open..].find(')').expect("attribute arguments close");
            rest = &rest[close + 1..];
            head = &rest[..rest.find('(').expect("an entry point has a parameter list")];
        }
        let words: Vec<&str> = head.split_whitespace().collect();
        let name = words.last().expect("an entry point has a name").trim_start_matches('*');
        entries.insert(name.to_string());
    }
    entries
}

#[test]
fn the_scanner_finds_both_spellings() {
    let src = "// PRISM_KERNEL void commented(int)\nPRISM_KERNEL void a_f32(float *x) {}\n\
               extern \"C\" __global__ void __launch_bounds__(256) b(int n) {}\n";
    assert_eq!(defined_entries(src), ["a_f32", "b"].map(String::from).into());
}

#[test]
fn catalogue_matches_the_cuda_sources() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("cuda");
    let mut sources: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .collect();
    sources.sort();
    assert!(!sources.is_empty());
    for path in &sources {
        let family = path.file_stem().unwrap().to_str().unwrap();
        let defined = defined_entries(&std::fs::read_to_string(path).unwrap());
        let listed: BTreeSet<String> = FAMILIES
            .iter()
            .find(|f| f.name == family)
            .unwrap_or_else(|| panic!("family {family} is missing from the catalogue"))
            .entries
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(listed, defined, "catalogue entries of {family} differ from {}", path.display());
        let image = image(family).unwrap_or_else(|| panic!("family {family} is not embedded"));
        assert!(image.bytes.len() > 64, "family {family} has an empty image");
    }
    assert_eq!(FAMILIES.len(), sources.len(), "the catalogue lists a family with no source");
    assert_eq!(family_of("prism_add_f32").map(|f| f.name), Some("elementwise"));
    assert!(family_of("no_such_kernel").is_none());
}
