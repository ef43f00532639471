//! cuBLASLt's logger (`cublasLtLoggerSetLevel`, `cublasLtLoggerOpenFile`, ...) for this crate's
//! cuBLASLt calls: one process-wide logger, off until a level or mask is set.
//!
//! Levels and mask bits are cuBLASLt's: 1 error, 2 trace (calls that launch kernels, with their
//! parameters), 3 hints, 4 info, 5 API trace (every call); `cublasLtLoggerSetLevel(n)` turns on
//! the first `n` of them (mask `2^n - 1`). A message is a line
//! `[cublasLt][<pid>][<level>][<function>] <message>`, written to the file given by
//! `cublasLtLoggerOpenFile` or `cublasLtLoggerSetFile` (standard output while neither is set and no
//! callback is), and handed to the callback of `cublasLtLoggerSetCallback` if one is set.
//! `cublasLtLoggerForceDisable` turns logging off for the rest of the process. The environment
//! variables cuBLASLt reads (`CUBLASLT_LOG_LEVEL`, ...) are not read.

use std::ffi::{c_char, c_int, CString};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;

use super::sys::{cublasLtLoggerCallback_t, cublasStatus_t as Status, FILE};

/// An error.
pub(crate) const ERROR: c_int = 1;
/// A call that launches kernels, with its parameters.
pub(crate) const TRACE: c_int = 2;
/// Every call.
pub(crate) const API: c_int = 5;

/// The mask bits of the enabled levels (0: off).
static MASK: AtomicI32 = AtomicI32::new(0);
/// Set once by `cublasLtLoggerForceDisable`.
static DISABLED: AtomicBool = AtomicBool::new(false);
/// Where messages go.
static SINKS: Mutex<Sinks> = Mutex::new(Sinks { output: Output::Stdout, callback: None });

struct Sinks {
    output: Output,
    callback: cublasLtLoggerCallback_t,
}

enum Output {
    /// Neither a file nor a stream was given.
    Stdout,
    /// From `cublasLtLoggerOpenFile`.
    File(std::fs::File),
    /// From `cublasLtLoggerSetFile`.
    Stream(CFile),
}

/// A C `FILE *` the caller of `cublasLtLoggerSetFile` keeps open.
struct CFile(*mut FILE);

// SAFETY: C stdio streams lock themselves for each call, so any thread may write through the
// pointer; `cublasLtLoggerSetFile`'s caller keeps the stream open while it is set.
unsafe impl Send for CFile {}

extern "C" {
    fn fputs(s: *const c_char, stream: *mut FILE) -> c_int;
    fn fflush(stream: *mut FILE) -> c_int;
}

/// Level names, by level.
const NAMES: [&str; 6] = ["Off", "Error", "Trace", "Hints", "Info", "Api"];

/// Whether messages of `level` are written now (one atomic load when logging is off).
pub(crate) fn enabled(level: c_int) -> bool {
    (1..=5).contains(&level)
        && MASK.load(Ordering::Relaxed) & (1 << (level - 1)) != 0
        && !DISABLED.load(Ordering::Relaxed)
}

/// Logs `message()` from `function` at `level`, if that level is enabled (`message` is not
/// called otherwise).
pub(crate) fn log(level: c_int, function: &str, message: impl FnOnce() -> String) {
    if !enabled(level) {
        return;
    }
    let message = message();
    let line =
        format!("[cublasLt][{}][{}][{function}] {message}\n", std::process::id(), NAMES[level as usize]);
    let mut sinks = SINKS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(callback) = sinks.callback {
        // Interior NULs would cut a C string: they are replaced.
        let c = |s: &str| CString::new(s.replace('\0', " ")).unwrap_or_default();
        let (f, m) = (c(function), c(&message));
        // SAFETY: the callback was given as a C function taking a level and two C strings,
        // which live across the call.
        unsafe { callback(level, f.as_ptr(), m.as_ptr()) };
    }
    // A failed write is dropped: logging never fails the call it describes.
    let has_callback = sinks.callback.is_some();
    match &mut sinks.output {
        Output::Stdout if !has_callback => {
            let _ = std::io::stdout().lock().write_all(line.as_bytes());
        }
        Output::Stdout => {}
        Output::File(file) => {
            let _ = file.write_all(line.as_bytes()).and_then(|()| file.flush());
        }
        Output::Stream(stream) => {
            let c = CString::new(line.replace('\0', " ")).unwrap_or_default();
            // SAFETY: the stream is open (`cublasLtLoggerSetFile`'s contract) and `c` is a C
            // string.
            unsafe {
                fputs(c.as_ptr(), stream.0);
                fflush(stream.0);
            }
        }
    }
}

/// `cublasLtLoggerSetLevel`: levels `0..=5`, else `CUBLAS_STATUS_INVALID_VALUE`.
pub(crate) fn set_level(level: c_int) -> Status {
    if !(0..=5).contains(&level) {
        return Status::CUBLAS_STATUS_INVALID_VALUE;
    }
    MASK.store((1 << level) - 1, Ordering::Relaxed);
    Status::CUBLAS_STATUS_SUCCESS
}

/// `cublasLtLoggerSetMask`: masks `0..=31`, else `CUBLAS_STATUS_INVALID_VALUE`.
pub(crate) fn set_mask(mask: c_int) -> Status {
    if !(0..=31).contains(&mask) {
        return Status::CUBLAS_STATUS_INVALID_VALUE;
    }
    MASK.store(mask, Ordering::Relaxed);
    Status::CUBLAS_STATUS_SUCCESS
}

/// `cublasLtLoggerForceDisable`.
pub(crate) fn force_disable() -> Status {
    DISABLED.store(true, Ordering::Relaxed);
    Status::CUBLAS_STATUS_SUCCESS
}

/// `cublasLtLoggerSetCallback` (`None` removes it).
pub(crate) fn set_callback(callback: cublasLtLoggerCallback_t) -> Status {
    SINKS.lock().unwrap_or_else(|e| e.into_inner()).callback = callback;
    Status::CUBLAS_STATUS_SUCCESS
}

/// `cublasLtLoggerOpenFile`: creates (or truncates) the file at `path` and logs to it.
/// `CUBLAS_STATUS_INVALID_VALUE` when it cannot be opened.
pub(crate) fn open_file(path: &std::ffi::CStr) -> Status {
    let path = match path.to_str() {
        Ok(p) => std::path::PathBuf::from(p),
        Err(_) => return Status::CUBLAS_STATUS_INVALID_VALUE,
    };
    match std::fs::File::create(path) {
        Ok(file) => {
            SINKS.lock().unwrap_or_else(|e| e.into_inner()).output = Output::File(file);
            Status::CUBLAS_STATUS_SUCCESS
        }
        Err(_) => Status::CUBLAS_STATUS_INVALID_VALUE,
    }
}

/// `cublasLtLoggerSetFile`: logs to an open C stream (null: `CUBLAS_STATUS_INVALID_VALUE`).
///
/// # Safety
/// `file` must be an open stream that stays open while it is the logger's output.
pub(crate) unsafe fn set_file(file: *mut FILE) -> Status {
    if file.is_null() {
        return Status::CUBLAS_STATUS_INVALID_VALUE;
    }
    SINKS.lock().unwrap_or_else(|e| e.into_inner()).output = Output::Stream(CFile(file));
    Status::CUBLAS_STATUS_SUCCESS
}

#[cfg(test)]
mod tests {
    use std::ffi::{c_char, c_int, CStr, CString};
    use std::sync::Mutex;

    use super::super::sys;
    use sys::cublasStatus_t as Status;

    static SEEN: Mutex<Vec<(c_int, String, String)>> = Mutex::new(Vec::new());

    extern "C" fn record(level: c_int, function: *const c_char, message: *const c_char) {
        // SAFETY: the logger passes two C strings that live across the call.
        let (f, m) = unsafe { (CStr::from_ptr(function), CStr::from_ptr(message)) };
        SEEN.lock().unwrap().push((
            level,
            f.to_string_lossy().into_owned(),
            m.to_string_lossy().into_owned(),
        ));
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

        // SAFETY (every call below): plain values, or C strings and streams that outlive the call
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
}
