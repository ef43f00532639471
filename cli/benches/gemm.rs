//! `cargo bench --bench gemm --features bench-anchors [-- --full] [-- --gemm MxNxK,...]`: our GEMM
//! kernels beside cuBLAS, every precision, in one run (the `gemm` group of `prism-gpu bench`).

fn main() -> std::process::ExitCode {
    prism_gpu_cli::bench::suite::bench_main(prism_gpu_cli::bench::suite::Group::Gemm)
}
