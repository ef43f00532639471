//! The run-time loader against a fake libcuda: no GPU needed.

mod support;

use prism_gpu::sys::driver::{CUfunc_cache, CUlimit, CUresult};
use prism_gpu::sys::{Driver, LoadError, Nccl};
use prism_gpu::{probe_driver, Error};
use std::ffi::CStr;

fn open(path: &std::path::Path) -> Driver {
    // SAFETY: the path is the fake libcuda built by the test support from tests/support/fake_libcuda.c:
    // it has no initialisers and every symbol it exports has its cuda.h signature.
    unsafe { Driver::open(&[path.to_string_lossy().into_owned()]) }.expect("the fake driver loads")
}

/// Opening `names`, none of which exists, fails naming `library` and every path tried, each with
/// its reason.
fn missing<L>(open: unsafe fn(&[String]) -> Result<L, LoadError>, library_name: &str, names: [&str; 2]) {
    let names = names.map(String::from);
    // SAFETY: neither name exists, so nothing is opened and no initialiser runs.
    let Err(err) = (unsafe { open(&names) }) else { panic!("a nonexistent library loaded") };
    let LoadError::LibraryNotFound { library, tried } = &err else { panic!("wrong error: {err:?}") };
    assert_eq!(*library, library_name);
    assert_eq!(tried.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), names);
    assert!(tried.iter().all(|a| !a.reason.is_empty()));
    let message = err.to_string();
    assert!(names.iter().all(|name| message.contains(name.as_str())));
}

#[test]
fn a_missing_library_names_every_path_tried() {
    let driver = ["/nonexistent/libcuda.so.1", "libcuda-not-installed.so.7"];
    missing(Driver::open, "the CUDA driver library (libcuda)", driver);
    let nccl = ["/nonexistent/libnccl.so.2", "libnccl-not-installed.so.9"];
    missing(Nccl::open, "the NCCL library (libnccl)", nccl);
}

#[test]
fn the_environment_override_is_tried_first() {
    // Read under a name nothing else in this binary uses, so no other test races on it.
    std::env::set_var("PRISM_TEST_DRIVER_OVERRIDE", "/opt/custom/libcuda.so");
    let names =
        prism_gpu::sys::loader::candidates("PRISM_TEST_DRIVER_OVERRIDE", &["libcuda.so.1", "libcuda.so"]);
    assert_eq!(names, ["/opt/custom/libcuda.so", "libcuda.so.1", "libcuda.so"]);
    std::env::set_var("PRISM_TEST_DRIVER_OVERRIDE", "");
    let names = prism_gpu::sys::loader::candidates("PRISM_TEST_DRIVER_OVERRIDE", &["libcuda.so.1"]);
    assert_eq!(names, ["libcuda.so.1"]);
}

#[test]
fn a_missing_symbol_is_an_error_naming_it_and_the_rest_still_works() {
    let driver = open(&support::fake_libcuda(false));
    let mut ptr = 0;
    // SAFETY: the out-pointer is a valid local; the fake lacks this symbol, so nothing is called.
    let missing = unsafe { driver.cuMemAlloc_v2(&mut ptr, 1024) };
    assert_eq!(missing, Err(LoadError::MissingSymbol("cuMemAlloc_v2")));
    assert!(missing.unwrap_err().to_string().contains("cuMemAlloc_v2"));
    let mut version = 0;
    // SAFETY: valid out-pointer.
    let result = unsafe { driver.cuDriverGetVersion(&mut version) };
    assert_eq!(result, Ok(CUresult::CUDA_SUCCESS));
    assert_eq!(version, 12080);
    let exported: Vec<_> =
        driver.entry_points().iter().filter(|(_, present)| *present).map(|(n, _)| *n).collect();
    assert!(exported.contains(&"cuInit") && !exported.contains(&"cuMemAlloc_v2"), "{exported:?}");
}

#[test]
fn error_names_and_strings_come_from_the_driver_and_the_bindings() {
    let driver = open(&support::fake_libcuda(false));
    let (mut name, mut text) = (std::ptr::null(), std::ptr::null());
    // SAFETY: valid out-pointers; the fake returns static strings.
    unsafe {
        assert_eq!(
            driver.cuGetErrorName(CUresult::CUDA_ERROR_OUT_OF_MEMORY, &mut name),
            Ok(CUresult::CUDA_SUCCESS)
        );
        assert_eq!(
            driver.cuGetErrorString(CUresult::CUDA_ERROR_OUT_OF_MEMORY, &mut text),
            Ok(CUresult::CUDA_SUCCESS)
        );
        assert_eq!(CStr::from_ptr(name).to_str(), Ok("CUDA_ERROR_OUT_OF_MEMORY"));
        assert_eq!(CStr::from_ptr(text).to_str(), Ok("out of memory"));
    }
    assert_eq!(CUresult::CUDA_ERROR_OUT_OF_MEMORY.name(), "CUDA_ERROR_OUT_OF_MEMORY");
    assert_eq!(CUresult::CUDA_ERROR_STUB_LIBRARY.name(), "CUDA_ERROR_STUB_LIBRARY");
}

#[test]
fn values_the_bindings_do_not_know_cross_as_integers() {
    let driver = open(&support::fake_libcuda(false));
    let (mut config, mut limit) = (0u32, 0usize);
    // SAFETY: valid out-pointers to locals of the integer types the table takes.
    unsafe {
        // The fake returns the code 987654, which CUresult lacks: it arrives as CUDA_ERROR_UNKNOWN.
        assert_eq!(
            driver.cuCtxGetLimit(&mut limit, CUlimit::CU_LIMIT_STACK_SIZE),
            Ok(CUresult::CUDA_ERROR_UNKNOWN)
        );
        // The fake writes the cache configuration 7, which CUfunc_cache lacks: the table hands the
        // integer back and the checked conversion refuses it.
        assert_eq!(driver.cuCtxGetCacheConfig(&mut config), Ok(CUresult::CUDA_SUCCESS));
    }
    assert_eq!(config, 7);
    assert_eq!(CUfunc_cache::from_raw(config), None);
}

#[test]
fn probe_describes_the_fake_devices() {
    let probe = probe_driver(&open(&support::fake_libcuda(false))).expect("probing the fake driver");
    assert_eq!(probe.driver_version, 12080);
    let names: Vec<_> = probe.devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["Fake GPU Zero", "Fake GPU One"]);
    assert_eq!(probe.devices[0].compute_capability, (9, 0));
    assert_eq!(probe.devices[1].compute_capability, (8, 0));
    assert_eq!(probe.devices[1].total_memory, 2 << 30);
    assert_eq!(probe.devices[0].multiprocessors, 132);
    let shown = probe.to_string();
    assert!(shown.contains("CUDA driver 12.8") && shown.contains("Fake GPU One"), "{shown}");
}

#[test]
fn a_stub_driver_is_a_clear_error() {
    let err = probe_driver(&open(&support::fake_libcuda(true))).unwrap_err();
    assert!(
        matches!(err, Error::DriverCall { call: "cuInit", result: CUresult::CUDA_ERROR_STUB_LIBRARY }),
        "{err:?}"
    );
    assert!(err.to_string().contains("CUDA_ERROR_STUB_LIBRARY"), "{err}");
}
