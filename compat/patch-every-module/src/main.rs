//! Reaches cudarc through a line with every module feature prism-gpu provides; the workspace's
//! `[patch.crates-io]` makes it prism-gpu. Each module's entry point is linked in.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _entry_points = (
        cudarc::cublas::CudaBlas::new,
        cudarc::cublaslt::CudaBlasLT::new,
        cudarc::curand::CudaRng::new,
        cudarc::nccl::Id::new,
    );
    let _element_types = (
        std::mem::size_of::<cudarc::driver::CudaSlice<half::f16>>(),
        <float8::F8E4M3 as cudarc::types::CudaTypeName>::NAME,
        <float4::F4E2M1 as cudarc::types::CudaTypeName>::NAME,
    );
    gpu_lib::run("patch-every-module")
}
