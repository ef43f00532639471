//! Which entry points each kernel family defines: written by `build.rs` from each family's PTX (the
//! PTX nvcc builds beside the fatbin, or the checked-in `ptx/` without nvcc), so macro- and
//! template-made entry points count and nothing is kept by hand. `tests/catalogue.rs` checks the
//! families against `cuda/*.cu` and the entries against `ptx/`.

/// A kernel family: one `cuda/<name>.cu` source and the entry points it defines.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// The family name (the source's file stem).
    pub name: &'static str,
    /// Every `extern "C" __global__` entry point in the source.
    pub entries: &'static [&'static str],
}

/// Every built-in kernel family, sorted by name.
pub static FAMILIES: &[Family] = include!(concat!(env!("OUT_DIR"), "/kernel_catalogue.rs"));

/// The family defining the entry point `kernel`.
pub fn family_of(kernel: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.entries.contains(&kernel))
}
