//! Reaches cudarc only through `gpu-lib`; the workspace's `[patch.crates-io]` decides which cudarc.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    gpu_lib::run("patch-transitive")
}
