//! The built-in kernels: images embedded at build time (see `build.rs`) and the catalogue of the
//! entry points each family defines.

pub mod activations;
pub mod args;
pub mod asum;
mod catalogue;
pub mod convert;
pub mod elementwise;
pub mod gemm;
pub mod gemv;
pub mod grid;
mod modules;
pub mod neuromorphic;
pub mod nn;
pub mod norms;
pub mod random;
pub mod reductions;
pub mod rows;
pub mod softmax;
pub mod transpose;
pub mod workspace;

use crate::spec::shape;
pub use catalogue::{family_of, Family, FAMILIES};
pub use modules::Kernels;

/// The embedded image of one kernel family: a fatbin from nvcc, or checked-in PTX text.
#[derive(Debug, Clone, Copy)]
pub struct KernelImage {
    /// Family name: the stem of its `cuda/<family>.cu` source.
    pub family: &'static str,
    /// The bytes `cuModuleLoadData` takes (PTX is NUL-terminated).
    pub bytes: &'static [u8],
    /// `true` for PTX text (JIT-compiled by the driver at load), `false` for an nvcc fatbin.
    pub is_ptx: bool,
}

/// How the embedded kernels were built: `nvcc <release>`, or `checked-in PTX (no nvcc)` when the
/// build found no nvcc and embedded `ptx/` (the driver then compiles it at first load).
pub const BUILT_WITH: &str = env!("PRISM_KERNELS_BUILT_WITH");

static IMAGES: &[(&str, &[u8], bool)] = include!(concat!(env!("OUT_DIR"), "/kernel_images.rs"));

/// Every embedded image, sorted by family name.
pub(crate) fn images() -> impl Iterator<Item = KernelImage> {
    IMAGES.iter().map(|&(family, bytes, is_ptx)| KernelImage { family, bytes, is_ptx })
}

/// The embedded image of `family`, if the crate was built with it.
pub fn image(family: &str) -> Option<KernelImage> {
    images().find(|i| i.family == family)
}

/// Launches a built-in kernel with `config` and its arguments in the kernel's order, each pushed
/// with [`PushKernelArg::arg`](crate::driver::PushKernelArg::arg), as a `Result<()>` (an unknown
/// kernel, a refused launch): `launch!(kernels, stream, name, config, [args...])` looks the kernel
/// up by name, `launch!(stream, &function, config, [args...])` takes one already looked up. The
/// arguments may come in several groups, `[args...] if condition` for those that the kernel takes
/// only when the condition holds (an entry point's optional trailing or middle arguments):
/// `launch!(stream, &function, config, [&m, &n], [&bias] if fused, [&c])`. `launch!(@dependent(cond)
/// stream, &function, ...)` launches, when `cond` holds, a kernel that waits for the work before
/// it itself as a programmatic dependent of that work
/// ([`LaunchArgs::launch_dependent`](crate::driver::LaunchArgs::launch_dependent)).
///
/// It expands to a call of the unsafe `LaunchArgs::launch`, so it stands in an `unsafe` block
/// whose `SAFETY` comment says why the arguments are what the kernel takes and why the buffers
/// hold what it reads and writes.
macro_rules! launch {
    (@push $launch:ident, [$($arg:expr),*]) => {
        $( $crate::driver::PushKernelArg::arg(&mut $launch, $arg); )*
    };
    (@push $launch:ident, [$($arg:expr),*] if $condition:expr) => {
        if $condition {
            $( $crate::driver::PushKernelArg::arg(&mut $launch, $arg); )*
        }
    };
    (@dependent($dependent:expr) $stream:expr, $function:expr, $config:expr, $([$($arg:expr),* $(,)?] $(if $condition:expr)?),+ $(,)?) => {{
        let mut launch = $stream.launch_builder($function);
        $( $crate::kernels::launch!(@push launch, [$($arg),*] $(if $condition)?); )+
        let launched = if $dependent {
            $crate::kernels::launch_dependent(&mut launch, $config)
        } else {
            launch.launch($config).map(drop)
        };
        launched.map_err($crate::error::Error::from)
    }};
    ($stream:expr, $function:expr, $config:expr, $([$($arg:expr),* $(,)?] $(if $condition:expr)?),+ $(,)?) => {
        $crate::kernels::launch!(@dependent(false) $stream, $function, $config, $([$($arg),*] $(if $condition)?),+)
    };
    ($kernels:expr, $stream:expr, $name:expr, $config:expr, $([$($arg:expr),* $(,)?] $(if $condition:expr)?),+ $(,)?) => {
        match $kernels.function($name) {
            Ok(function) => {
                $crate::kernels::launch!($stream, &function, $config, $([$($arg),*] $(if $condition)?),+)
            }
            Err(e) => Err(e),
        }
    };
}
pub(crate) use launch;

/// Submits `launch` as a programmatic dependent of the work before it on its stream
/// (`launch!(@dependent(true) ...)`).
///
/// # Safety
/// As [`LaunchArgs::launch_dependent`](crate::driver::LaunchArgs::launch_dependent).
#[cfg(not(feature = "legacy-gpu"))]
pub(crate) unsafe fn launch_dependent(
    launch: &mut crate::driver::LaunchArgs<'_>,
    config: crate::driver::LaunchConfig,
) -> std::result::Result<(), crate::driver::DriverError> {
    // SAFETY: the caller's obligations.
    unsafe { launch.launch_dependent(config) }.map(drop)
}

/// cudarc (`legacy-gpu`) has no dependent launch: a plain one (the kernel's wait is then a no-op).
///
/// # Safety
/// As `LaunchArgs::launch`.
#[cfg(feature = "legacy-gpu")]
pub(crate) unsafe fn launch_dependent(
    launch: &mut crate::driver::LaunchArgs<'_>,
    config: crate::driver::LaunchConfig,
) -> std::result::Result<(), crate::driver::DriverError> {
    // SAFETY: the caller's obligations.
    unsafe { launch.launch(config) }.map(drop)
}
