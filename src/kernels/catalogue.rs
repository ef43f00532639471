//! Which entry points each kernel family defines. Kept by hand beside the typed launchers; a test
//! checks it against the `extern "C" __global__` definitions in `cuda/`.

/// A kernel family: one `cuda/<name>.cu` source and the entry points it defines.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// The family name (the source's file stem).
    pub name: &'static str,
    /// Every `extern "C" __global__` entry point in the source.
    pub entries: &'static [&'static str],
}

/// Every built-in kernel family.
pub static FAMILIES: &[Family] = &[Family {
    name: "elementwise",
    entries: &[
        "prism_add_f32",
        "prism_sub_f32",
        "prism_mul_f32",
        "prism_div_f32",
        "prism_axpy_f32",
        "prism_scale_f32",
        "prism_fill_f32",
    ],
}];

/// The family defining the entry point `kernel`.
pub fn family_of(kernel: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.entries.contains(&kernel))
}
