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
