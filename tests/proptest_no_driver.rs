//! Property tests of the safe driver API with no usable driver: every call is an error, never a
//! panic, whatever its arguments. The process's driver is the test support's stub libcuda (every
//! entry point returns CUDA_ERROR_STUB_LIBRARY, as the toolkit's stub does), set through
//! `$PRISM_CUDA_DRIVER` before anything loads a driver, so this runs the same in CI and on a GPU
//! machine. Not built for the `legacy-gpu` engine (real cudarc panics without a driver).
#![cfg(not(feature = "legacy-gpu"))]

mod proptest_support;
mod support;

use std::sync::Once;

use prism_gpu::driver::result::{self, stream::StreamKind};
use prism_gpu::driver::{sys, CudaContext, CudaDevice};
use prism_gpu::ProductionGpuRuntime;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use proptest_support::check;

/// Points the process at the stub driver, once, before any test loads one.
fn stub_driver() {
    static SETUP: Once = Once::new();
    SETUP.call_once(|| {
        let stub = support::fake_libcuda(true);
        std::env::set_var(prism_gpu::sys::loader::DRIVER_ENV, &stub);
        // The process-wide driver is the stub (loaded now, under the override).
        let Err(e) = prism_gpu::probe() else { panic!("the stub driver probed as a working driver") };
        eprintln!("driver: {} ({e})", stub.display());
    });
}

fn is_err<T: std::fmt::Debug, E>(what: &str, r: Result<T, E>) -> Result<(), TestCaseError> {
    match r {
        Err(_) => Ok(()),
        Ok(v) => Err(TestCaseError::fail(format!("{what}: Ok({v:?}) without a driver"))),
    }
}

const CASES: u32 = 400;

#[test]
fn every_driver_call_is_an_error() {
    stub_driver();
    let ordinal = prop_oneof![
        0..4usize,
        Just(i32::MAX as usize),
        Just(i32::MAX as usize + 1),
        Just(usize::MAX),
        any::<usize>()
    ];
    let s = (ordinal, any::<u32>(), any::<i32>(), any::<usize>());
    check("driver_without_driver", CASES, s, |(ordinal, flags, raw, value)| {
        is_err("CudaContext::new", CudaContext::new(ordinal))?;
        is_err("CudaContext::new_non_primary", CudaContext::new_non_primary(ordinal, flags))?;
        is_err("CudaContext::device_count", CudaContext::device_count())?;
        is_err("CudaDevice::new", CudaDevice::new(ordinal))?;
        is_err("result::init", result::init())?;
        is_err("result::device::get", result::device::get(raw))?;
        is_err("result::device::get_count", result::device::get_count())?;
        is_err("result::mem_get_info", result::mem_get_info())?;
        is_err("result::ctx::get_current", result::ctx::get_current())?;
        is_err("result::ctx::synchronize", result::ctx::synchronize())?;
        is_err("result::ctx::set_limit", result::ctx::set_limit(sys::CUlimit::CU_LIMIT_STACK_SIZE, value))?;
        is_err("result::ctx::get_limit", result::ctx::get_limit(sys::CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE))?;
        is_err("result::stream::create", result::stream::create(StreamKind::NonBlocking))?;
        is_err(
            "result::stream::create_with_priority",
            result::stream::create_with_priority(StreamKind::Default, raw),
        )?;
        is_err("result::stream::get_priority_range", result::stream::get_priority_range())?;
        is_err("result::event::create", result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))?;
        is_err("probe", prism_gpu::probe())?;
        Ok(())
    });
}

#[test]
fn the_runtime_falls_back_and_refuses_device_work() {
    stub_driver();
    let s = (prop_oneof![0..4usize, any::<usize>()], "[a-z_]{0,24}");
    check("runtime_without_driver", CASES, s, |(ordinal, name)| {
        is_err(
            "ProductionGpuRuntime::with_device",
            ProductionGpuRuntime::with_device(ordinal).map(|r| r.describe()),
        )?;
        let rt = ProductionGpuRuntime::initialize()
            .map_err(|e| TestCaseError::fail(format!("initialize: {e}")))?;
        prop_assert!(!rt.is_gpu(), "a GPU runtime without a driver");
        prop_assert!(rt.describe().starts_with("CPU fallback"), "{}", rt.describe());
        for r in [rt.gpu().map(|_| ()), rt.context().map(|_| ()), rt.get_kernel(&name).map(|_| ())] {
            match r {
                Err(prism_gpu::Error::NoGpu { .. }) => {}
                other => prop_assert!(false, "expected NoGpu, got {:?}", other),
            }
        }
        // And it still computes, on the CPU.
        prop_assert_eq!(
            rt.add(&[1.5, -2.0], &[0.25, 0.5]).map_err(|e| TestCaseError::fail(e.to_string()))?,
            vec![1.75, -1.5]
        );
        Ok(())
    });
}
