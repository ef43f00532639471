//! Reaches cudarc through candle-core's dependency line and through `gpu-lib`; the workspace's
//! `[patch.crates-io]` makes both prism-gpu. The modules the line names are linked in.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _entry_points = (
        cudarc::cublas::CudaBlas::new,
        cudarc::cublaslt::CudaBlasLT::new,
        cudarc::curand::CudaRng::new,
    );
    gpu_lib::run("patch-candle-line")
}
