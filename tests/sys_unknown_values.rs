//! cudarc-style `sys::cu*` functions against a driver that hands back values the bindings do not
//! know: never undefined behaviour, and the caller's enum is left as it was. The only test in this
//! binary, because it points the process-wide driver at the fake before anything loads it.

mod support;

use prism_gpu::driver::sys;

#[test]
fn free_functions_check_enum_out_values_and_codes() {
    std::env::set_var(prism_gpu::sys::loader::DRIVER_ENV, support::fake_libcuda(false));
    let mut cache = sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_L1;
    let mut shared = sys::CUsharedconfig::CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE;
    let mut limit = 0usize;
    // SAFETY: valid out-pointers to locals.
    let (cache_code, shared_code, limit_code) = unsafe {
        (
            sys::cuCtxGetCacheConfig(&mut cache),
            sys::cuCtxGetSharedMemConfig(&mut shared),
            sys::cuCtxGetLimit(&mut limit, sys::CUlimit::CU_LIMIT_STACK_SIZE),
        )
    };
    // 7 is no CUfunc_cache: an error, and the caller's value untouched.
    assert_eq!(cache_code, sys::CUresult::CUDA_ERROR_UNKNOWN);
    assert_eq!(cache, sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_L1);
    // 1 is a known CUsharedconfig: written through.
    assert_eq!(shared_code, sys::CUresult::CUDA_SUCCESS);
    assert_eq!(shared, sys::CUsharedconfig::CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE);
    // The code 987654 is no CUresult.
    assert_eq!(limit_code, sys::CUresult::CUDA_ERROR_UNKNOWN);
}
