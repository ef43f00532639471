//! cuBLASLt's logger (`cublaslt::sys::cublasLtLogger*`) on the CPU: levels, masks, a file, a C
//! stream, a callback and the final disable, seen through `cublasLtCreate` failing without a current
//! context (no GPU needed). Its own test binary, since the logger is process-wide and the disable
//! lasts for the process.
#![cfg(all(feature = "cublaslt", not(feature = "legacy-gpu")))] // our logger, not libcublasLt's

use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::Mutex;

use prism_gpu::cublaslt::sys;
use sys::cublasStatus_t as Status;

static SEEN: Mutex<Vec<(c_int, String, String)>> = Mutex::new(Vec::new());

extern "C" fn record(level: c_int, function: *const c_char, message: *const c_char) {
    // SAFETY: the logger passes two C strings that live across the call.
    let (f, m) = unsafe { (CStr::from_ptr(function), CStr::from_ptr(message)) };
    SEEN.lock().unwrap().push((level, f.to_string_lossy().into_owned(), m.to_string_lossy().into_owned()));
}

extern "C" {
    fn fopen(path: *const c_char, mode: *const c_char) -> *mut sys::FILE;
    fn fclose(stream: *mut sys::FILE) -> c_int;
}

/// A cublasLtCreate with no current context: it fails, and the logger says so.
fn failed_create() -> Status {
    let mut handle = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    let status = unsafe { sys::cublasLtCreate(&mut handle) };
    assert!(handle.is_null());
    status
}

fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_owned).collect()
}

/// The whole logger in one test, since its state is process-wide (the disable is last).
#[test]
fn logger_levels_outputs_and_disable() {
    let dir = std::env::temp_dir().join(format!("prism-cublaslt-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("open_file.log");
    let c_path = CString::new(path.to_str().unwrap()).unwrap();

    // SAFETY: every call below passes plain values, or C strings and streams that outlive the call
    // and (for the stream) its use as the logger's output, which ends before it is closed.
    unsafe {
        assert_eq!(sys::cublasLtLoggerSetLevel(6), Status::CUBLAS_STATUS_INVALID_VALUE);
        assert_eq!(sys::cublasLtLoggerSetMask(32), Status::CUBLAS_STATUS_INVALID_VALUE);
        assert_eq!(sys::cublasLtLoggerOpenFile(std::ptr::null()), Status::CUBLAS_STATUS_INVALID_VALUE);
        let missing = CString::new(dir.join("no/such/dir/x.log").to_str().unwrap()).unwrap();
        assert_eq!(sys::cublasLtLoggerOpenFile(missing.as_ptr()), Status::CUBLAS_STATUS_INVALID_VALUE);

        // Level 5: the API trace and the error of a create without a context.
        assert_eq!(sys::cublasLtLoggerOpenFile(c_path.as_ptr()), Status::CUBLAS_STATUS_SUCCESS);
        assert_eq!(sys::cublasLtLoggerSetLevel(5), Status::CUBLAS_STATUS_SUCCESS);
        assert_ne!(failed_create(), Status::CUBLAS_STATUS_SUCCESS);
        let first = lines(&path);
        let pid = std::process::id();
        assert!(
            first.iter().any(|l| l.starts_with(&format!("[cublasLt][{pid}][Api][cublasLtCreate] "))),
            "{first:?}"
        );
        assert!(
            first.iter().any(|l| l.starts_with(&format!("[cublasLt][{pid}][Error][cublasLtCreate] "))),
            "{first:?}"
        );

        // Level 1: errors only.
        assert_eq!(sys::cublasLtLoggerSetLevel(1), Status::CUBLAS_STATUS_SUCCESS);
        failed_create();
        let second = lines(&path);
        assert_eq!(second.len(), first.len() + 1, "{second:?}");
        assert!(second.last().unwrap().contains("[Error][cublasLtCreate]"));

        // Mask 16: the API trace only.
        assert_eq!(sys::cublasLtLoggerSetMask(16), Status::CUBLAS_STATUS_SUCCESS);
        failed_create();
        let third = lines(&path);
        assert_eq!(third.len(), second.len() + 1, "{third:?}");
        assert!(third.last().unwrap().contains("[Api][cublasLtCreate]"));

        // A callback sees the level, the function and the message.
        assert_eq!(sys::cublasLtLoggerSetLevel(1), Status::CUBLAS_STATUS_SUCCESS);
        assert_eq!(sys::cublasLtLoggerSetCallback(Some(record)), Status::CUBLAS_STATUS_SUCCESS);
        failed_create();
        {
            let seen = SEEN.lock().unwrap();
            assert_eq!(seen.len(), 1, "{seen:?}");
            assert_eq!((seen[0].0, seen[0].1.as_str()), (1, "cublasLtCreate"));
            assert!(!seen[0].2.is_empty());
        }
        assert_eq!(sys::cublasLtLoggerSetCallback(None), Status::CUBLAS_STATUS_SUCCESS);
        let fourth = lines(&path);
        assert_eq!(fourth.len(), third.len() + 1, "the file is written beside the callback");

        // A C stream.
        let stream_path = dir.join("set_file.log");
        let c_stream_path = CString::new(stream_path.to_str().unwrap()).unwrap();
        let stream = fopen(c_stream_path.as_ptr(), c"w".as_ptr());
        assert!(!stream.is_null());
        assert_eq!(sys::cublasLtLoggerSetFile(std::ptr::null_mut()), Status::CUBLAS_STATUS_INVALID_VALUE);
        assert_eq!(sys::cublasLtLoggerSetFile(stream), Status::CUBLAS_STATUS_SUCCESS);
        failed_create();
        assert_eq!(lines(&stream_path).len(), 1);
        assert_eq!(lines(&path), fourth, "the opened file is no longer written");

        // Mask 0: nothing.
        assert_eq!(sys::cublasLtLoggerSetMask(0), Status::CUBLAS_STATUS_SUCCESS);
        failed_create();
        assert_eq!(lines(&stream_path).len(), 1);

        // Disabled for good: a later level changes nothing.
        assert_eq!(sys::cublasLtLoggerForceDisable(), Status::CUBLAS_STATUS_SUCCESS);
        assert_eq!(sys::cublasLtLoggerSetLevel(5), Status::CUBLAS_STATUS_SUCCESS);
        failed_create();
        assert_eq!(lines(&stream_path).len(), 1);
        assert_eq!(sys::cublasLtLoggerOpenFile(c_path.as_ptr()), Status::CUBLAS_STATUS_SUCCESS);
        assert_eq!(fclose(stream), 0);
    }
    assert_eq!(SEEN.lock().unwrap().len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}
