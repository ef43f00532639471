//! The fault the fault tests plant (`fault_gpu.rs`, `nccl_fault_gpu.rs`): a kernel that writes
//! through an address no allocation covers, which the driver reports as
//! `CUDA_ERROR_ILLEGAL_ADDRESS` and which poisons the context for the rest of the process.

use std::sync::Arc;

use prism_gpu::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use prism_gpu::nvrtc::compile_ptx;

const WRITE_FAR: &str = r#"
extern "C" __global__ void write_far(float *x, unsigned long long far) {
    // `far` bytes past a live buffer: an address no allocation covers.
    *(volatile float *)((char *)x + far) = 1.0f;
}
"#;

/// Launches, on `stream`, one thread that writes 64 TiB past `x`. Returns the kernel, which the
/// caller keeps (its module stays loaded) for as long as it likes; the fault shows at the next
/// call that waits on the stream.
pub fn launch_illegal_write(stream: &Arc<CudaStream>, x: &mut CudaSlice<f32>) -> CudaFunction {
    let module = stream.context().load_module(compile_ptx(WRITE_FAR).unwrap()).unwrap();
    let f = module.load_function("write_far").unwrap();
    let far: u64 = 1 << 46;
    let mut launch = stream.launch_builder(&f);
    launch.arg(x).arg(&far);
    // SAFETY: deliberately not: the kernel writes outside every allocation, which the driver
    // reports as CUDA_ERROR_ILLEGAL_ADDRESS (the fault the tests plant).
    unsafe { launch.launch(LaunchConfig::for_num_elems(1)) }.unwrap();
    f
}
