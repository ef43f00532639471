//! `prism_gpu::nccl` without a GPU: a missing NCCL is a typed error naming every library tried,
//! never a panic (opening named paths that do not exist: `tests/loader.rs`); with `$PRISM_NCCL_LIBRARY` naming a real libnccl (the toolkit's wheel ships one:
//! `.toolkit/nvidia/nccl/lib/libnccl.so.2`), the version is read without a GPU.
#![cfg(all(feature = "nccl", not(feature = "legacy-gpu")))]

use prism_gpu::nccl::sys::ncclResult_t;
use prism_gpu::nccl::{group_end, group_start, result, Id, NcclError};
use prism_gpu::sys::loader::{NCCL_ENV, NCCL_NAMES};
use prism_gpu::sys::LoadError;

#[test]
fn every_call_without_nccl_is_an_error_naming_the_libraries_tried() {
    match prism_gpu::sys::nccl_library() {
        Err(load) => {
            let LoadError::LibraryNotFound { tried, .. } = &load else { panic!("wrong error: {load:?}") };
            let expected: Vec<String> = std::env::var(NCCL_ENV)
                .ok()
                .filter(|v| !v.is_empty())
                .into_iter()
                .chain(NCCL_NAMES.iter().map(|n| n.to_string()))
                .collect();
            assert_eq!(tried.iter().map(|a| a.name.clone()).collect::<Vec<_>>(), expected);
            let errors = [
                Id::new().map(|_| ()).unwrap_err(),
                result::get_nccl_version().map(|_| ()).unwrap_err(),
                group_start().map(|_| ()).unwrap_err(),
                group_end().map(|_| ()).unwrap_err(),
            ];
            for err in errors {
                assert_eq!(err, NcclError(ncclResult_t::ncclSystemError));
                assert_eq!(err.load_error(), Some(load.clone()));
                let message = err.to_string();
                for name in &expected {
                    assert!(message.contains(name.as_str()), "{message} does not name {name}");
                }
                let _: &dyn std::error::Error = &err;
            }
        }
        Ok(_) => {
            // NCCL packs 2.28.9 as 22809 (NCCL_VERSION for 2.9 and later).
            let version = result::get_nccl_version().expect("the loaded NCCL reports its version");
            println!("NCCL version code {version}");
            assert!((20900..100000).contains(&version), "implausible NCCL version {version}");
            assert_eq!(NcclError(ncclResult_t::ncclSystemError).load_error(), None);
        }
    }
}

#[test]
fn statuses_read_as_cudarc_reads_them() {
    use prism_gpu::nccl::NcclStatus;
    assert_eq!(ncclResult_t::ncclSuccess.result(), Ok(NcclStatus::Success));
    assert_eq!(ncclResult_t::ncclInProgress.result(), Ok(NcclStatus::InProgress));
    assert_eq!(ncclResult_t::ncclInvalidArgument.result(), Err(NcclError(ncclResult_t::ncclInvalidArgument)));
    // A status newer than the bindings arrives as ncclInternalError, never as an invalid enum.
    assert_eq!(ncclResult_t::from_raw(9), None);
    assert_eq!(ncclResult_t::from_raw(4), Some(ncclResult_t::ncclInvalidArgument));
    assert!(NcclError(ncclResult_t::ncclInvalidUsage).to_string().starts_with("ncclInvalidUsage"));
}

#[test]
fn an_id_round_trips_through_its_bytes() {
    let mut bytes = [0 as std::ffi::c_char; 128];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (i * 7 % 251) as u8 as std::ffi::c_char;
    }
    assert_eq!(Id::uninit(bytes).internal(), &bytes);
}
