//! `cargo bench --bench driver --features bench-anchors [-- --full]`: launch submission and round
//! trip, allocation and 1 GiB copies through our engine, beside cudarc 0.19 and the raw bindings in
//! a plain loop, in one run (the `driver` group of `prism-gpu bench`).

fn main() -> std::process::ExitCode {
    prism_gpu_cli::bench::suite::bench_main(prism_gpu_cli::bench::suite::Group::Driver)
}
