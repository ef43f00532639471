//! Host-side checks of the cudarc 0.9–0.13 `CudaDevice` API: which argument tuples `LaunchAsync`
//! takes (a wrong impl fails to compile), and its raw-pointer type. No GPU needed.

use std::ffi::c_void;

use prism_gpu::driver::legacy::RawDevicePtr;
use prism_gpu::driver::{CudaFunction, CudaSlice, CudaView, CudaViewMut, LaunchAsync};

/// Compiles only if `CudaFunction` launches with `P`.
fn launchable<P>()
where
    CudaFunction: LaunchAsync<P>,
{
}

#[test]
fn launch_async_takes_the_tuples_cudarc_0_13_took() {
    launchable::<(&mut CudaSlice<f32>,)>();
    launchable::<(&mut CudaSlice<f32>, &CudaSlice<f32>, f32, f32, u32)>();
    launchable::<(&mut CudaViewMut<'static, u8>, &CudaView<'static, i64>, half::f16, half::bf16, [u32; 3])>();
    launchable::<(bool, i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f64)>();
    launchable::<&mut [*mut c_void]>();
    #[rustfmt::skip]
    launchable::<(
        &mut CudaSlice<f32>, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32,
        f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, u64,
    )>();
}

#[test]
fn raw_device_pointers_dereference_to_the_address() {
    let p = RawDevicePtr(0x7f00_1234_5600);
    assert_eq!(*p, 0x7f00_1234_5600);
    let by_ref: &u64 = &p;
    assert_eq!(*by_ref + 4, 0x7f00_1234_5604);
}
