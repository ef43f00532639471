//! `cargo bench --bench kernels [-- --full]`: every memory-bound kernel against a device-to-device
//! copy of the same traffic, and the reservoir step on the GPU against the CPU fallback (the
//! `kernels` group of `prism-gpu bench`).

fn main() -> std::process::ExitCode {
    prism_gpu_cli::bench::suite::bench_main(prism_gpu_cli::bench::suite::Group::Kernels)
}
