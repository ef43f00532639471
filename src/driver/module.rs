//! [`CudaModule`] (loaded code) and [`CudaFunction`] (one kernel in it).

use std::collections::HashMap;
use std::ffi::{c_int, c_void, CString};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock};

use super::context::CudaContext;
use super::memory::CudaViewMut;
use super::result::{self, DriverError};
use super::stream::CudaStream;
use super::sys;
use super::tracking::SliceEvents;
use crate::nvrtc::{Ptx, PtxKind};

/// Bytes reserved for each of the JIT's info and error logs.
const JIT_LOG_BYTES: usize = 16 * 1024;

/// Loaded device code. Create with [`CudaContext::load_module`]; get kernels with
/// [`CudaModule::load_function`].
#[derive(Debug)]
pub struct CudaModule {
    pub(crate) cu_module: sys::CUmodule,
    pub(crate) ctx: Arc<CudaContext>,
    /// Kernel name -> number of parameters, read from the PTX text the module was loaded from
    /// (empty for binary images). Lets launches learn a kernel's exact parameter count without
    /// asking the driver for a parameter past the last one.
    pub(crate) ptx_param_counts: HashMap<String, usize>,
    /// The tracking events of each global handed out by [`CudaModule::get_global`], by address.
    /// Entries are never removed and each is boxed, so a reference to one lives as long as the
    /// module (views borrow the module).
    #[allow(clippy::redundant_allocation)] // views hold `&Arc`: the Arc itself needs a fixed address
    pub(crate) globals: Mutex<HashMap<sys::CUdeviceptr, Box<Arc<SliceEvents>>>>,
    /// The kernels looked up so far, by name. Frameworks such as candle look a kernel up before
    /// every launch: a hit costs no driver call, and the kernel's parameter list (asked of the
    /// driver at its first launch) is kept with it instead of being asked again.
    pub(crate) functions: Mutex<HashMap<String, (sys::CUfunction, Arc<KernelInfo>)>>,
}

// SAFETY: the handle is owned by this object; module calls are thread safe in the driver.
unsafe impl Send for CudaModule {}
// SAFETY: as above.
unsafe impl Sync for CudaModule {}

impl Drop for CudaModule {
    fn drop(&mut self) {
        self.ctx.release(|ctx| {
            // SAFETY: we own the module; every CudaFunction holds an Arc to it, so none is left.
            ctx.record_err(unsafe { result::module::unload(self.cu_module) });
        });
    }
}

/// A module that failed to load, with what the JIT compiler said about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleLoadError {
    /// The driver's error.
    pub error: DriverError,
    /// The JIT's error log followed by its info log (may be empty, e.g. for a cubin).
    pub log: String,
}

impl std::fmt::Display for ModuleLoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.log.is_empty() {
            write!(f, "loading the module failed: {}", self.error)
        } else {
            write!(f, "loading the module failed: {}\n{}", self.error, self.log)
        }
    }
}

impl std::error::Error for ModuleLoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl CudaContext {
    /// Loads PTX, a cubin or a fatbin into this context.
    #[doc(alias = "cuModuleLoadDataEx")]
    pub fn load_module(self: &Arc<Self>, ptx: Ptx) -> Result<Arc<CudaModule>, DriverError> {
        self.load_module_with_log(ptx).map_err(|e| e.error)
    }

    /// Like [`load_module`](Self::load_module), but a failure carries the JIT compiler's log.
    /// (A prism-gpu extension.)
    #[doc(alias = "cuModuleLoadDataEx")]
    pub fn load_module_with_log(self: &Arc<Self>, ptx: Ptx) -> Result<Arc<CudaModule>, ModuleLoadError> {
        let fail = |error: DriverError, log: String| ModuleLoadError { error, log };
        self.bind_to_thread().map_err(|e| fail(e, String::new()))?;
        let image: Vec<u8> = match ptx.0 {
            PtxKind::Image(chars) => {
                let mut bytes: Vec<u8> = chars.into_iter().map(|c| c as u8).collect();
                if bytes.last() != Some(&0) {
                    bytes.push(0);
                }
                bytes
            }
            PtxKind::Src(src) => match CString::new(src) {
                Ok(c) => c.into_bytes_with_nul(),
                Err(_) => {
                    return Err(fail(
                        DriverError(sys::CUresult::CUDA_ERROR_INVALID_PTX),
                        "the PTX source contains a NUL byte".into(),
                    ))
                }
            },
            PtxKind::File(path) => match std::fs::read(&path) {
                Ok(mut bytes) => {
                    // PTX text needs a terminating NUL; a trailing NUL is harmless for binaries.
                    bytes.push(0);
                    bytes
                }
                Err(e) => {
                    return Err(fail(
                        DriverError(sys::CUresult::CUDA_ERROR_FILE_NOT_FOUND),
                        format!("cannot read {}: {e}", path.display()),
                    ))
                }
            },
            PtxKind::Binary(bytes) => bytes,
        };
        if image.is_empty() {
            return Err(fail(DriverError(sys::CUresult::CUDA_ERROR_INVALID_IMAGE), "empty image".into()));
        }
        // SAFETY: `image` is a complete, NUL-terminated PTX text or a binary image, alive for the call.
        let (module, info, error) =
            unsafe { result::module::load_data_with_logs(image.as_ptr().cast::<c_void>(), JIT_LOG_BYTES) };
        match module {
            Ok(cu_module) => Ok(Arc::new(CudaModule {
                globals: Mutex::default(),
                functions: Mutex::default(),
                cu_module,
                ctx: self.clone(),
                ptx_param_counts: ptx_text(&image).map(ptx_param_counts).unwrap_or_default(),
            })),
            Err(e) => {
                let log = match (error.is_empty(), info.is_empty()) {
                    (false, false) => format!("{error}\n{info}"),
                    (false, true) => error,
                    (true, _) => info,
                };
                Err(fail(e, log))
            }
        }
    }
}

impl CudaModule {
    /// The kernel called `fn_name` (unmangled: declare it `extern "C"`).
    #[doc(alias = "cuModuleGetFunction")]
    pub fn load_function(self: &Arc<Self>, fn_name: &str) -> Result<CudaFunction, DriverError> {
        let cached = self.functions.lock().unwrap_or_else(|e| e.into_inner()).get(fn_name).cloned();
        let (cu_function, info) = match cached {
            Some(hit) => {
                // The errors a lookup would have returned: a parked error, a reset context.
                self.ctx.check_err()?;
                if self.ctx.is_stale() {
                    return Err(DriverError(sys::CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED));
                }
                hit
            }
            None => {
                let name = CString::new(fn_name)
                    .map_err(|_| DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))?;
                self.ctx.bind_to_thread()?;
                // SAFETY: the module is loaded for as long as `self` lives.
                let cu_function = unsafe { result::module::get_function(self.cu_module, name) }?;
                let info = Arc::new(KernelInfo { name: fn_name.to_string(), params: OnceLock::new() });
                let mut functions = self.functions.lock().unwrap_or_else(|e| e.into_inner());
                // A thread that raced us to the lookup wins; its entry is the same kernel.
                functions.entry(fn_name.to_string()).or_insert((cu_function, info)).clone()
            }
        };
        Ok(CudaFunction { cu_function, module: self.clone(), info })
    }

    /// The `__device__` / `__constant__` variable `name` as bytes, for copies on `stream`.
    ///
    /// cudarc 0.19's signature: the view comes from `&self`, so several views of one global can
    /// exist at once. They are device memory (never host references), and every view of a global
    /// shares that global's tracking events, as every view of one [`CudaSlice`](super::CudaSlice)
    /// shares the slice's: a write through any of them waits for the earlier reads and writes
    /// through all of them on other streams, so aliasing views are ordered, never racing.
    #[doc(alias = "cuModuleGetGlobal")]
    pub fn get_global<'a>(
        self: &'a Arc<Self>,
        name: &str,
        stream: &'a Arc<CudaStream>,
    ) -> Result<CudaViewMut<'a, u8>, DriverError> {
        let name = CString::new(name).map_err(|_| DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))?;
        if *stream.ctx != *self.ctx {
            return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT));
        }
        self.ctx.bind_to_thread()?;
        // SAFETY: the module is loaded for as long as `self` lives.
        let (ptr, len) = unsafe { result::module::get_global(self.cu_module, name) }?;
        let events = if self.ctx.is_event_tracking() { Some(self.global_events(ptr)) } else { None };
        Ok(CudaViewMut { ptr, len, events, stream, marker: PhantomData })
    }

    /// The tracking events of the global at `ptr`, shared by every view of it.
    fn global_events(&self, ptr: sys::CUdeviceptr) -> &Arc<SliceEvents> {
        let mut globals = self.globals.lock().unwrap_or_else(|e| e.into_inner());
        let entry: &Arc<SliceEvents> = globals.entry(ptr).or_default();
        let entry: *const Arc<SliceEvents> = entry;
        drop(globals);
        // SAFETY: the Arc lives in its own Box, which is never removed from the map, moved out
        // of, or replaced until the module drops (entries are only ever added), so it stays at
        // this address for as long as `&self` is borrowed; it is only read through `&`.
        unsafe { &*entry }
    }

    /// The raw handle (owned by this object: do not unload it).
    pub fn cu_module(&self) -> sys::CUmodule {
        self.cu_module
    }

    /// The context the module is loaded in.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
}

/// A kernel of a loaded module; launch it with [`CudaStream::launch_builder`]. Keeps its module
/// loaded.
#[derive(Debug, Clone)]
pub struct CudaFunction {
    pub(crate) cu_function: sys::CUfunction,
    pub(crate) module: Arc<CudaModule>,
    /// Shared by every clone: the name and, once a launch has asked, the parameter list.
    pub(crate) info: Arc<KernelInfo>,
}

/// What launches need to know about a kernel, worked out once and shared by its clones.
#[derive(Debug)]
pub(crate) struct KernelInfo {
    pub(crate) name: String,
    pub(crate) params: OnceLock<Params>,
}

/// A kernel's parameter sizes as far as the driver can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Params {
    /// The driver cannot tell (it has no `cuFuncGetParamInfo`): launches are not checked.
    Unknown,
    /// Every parameter's size.
    Exact(Vec<usize>),
    /// The sizes of the first parameters; there may be more. (A binary image on a driver without
    /// a parameter count: only indices known to exist are queried, so that a correct program never
    /// makes a failing driver call, which compute-sanitizer would report.)
    AtLeast(Vec<usize>),
}

/// The PTX text of a module image, if it is one (binary images are ELF or fatbin containers).
fn ptx_text(image: &[u8]) -> Option<&str> {
    let end = image.iter().position(|&b| b == 0).unwrap_or(image.len());
    std::str::from_utf8(&image[..end]).ok().filter(|text| text.contains(".entry"))
}

/// PTX text without its `//` and `/* */` comments.
fn strip_ptx_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('/') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("//") {
            rest = tail.find('\n').map_or("", |j| &tail[j..]);
        } else if let Some(body) = tail.strip_prefix("/*") {
            rest = body.find("*/").map_or("", |j| &body[j + 2..]);
            out.push(' ');
        } else {
            out.push('/');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// Kernel name -> number of `.param`s, for every `.entry` of a PTX text.
pub(crate) fn ptx_param_counts(text: &str) -> HashMap<String, usize> {
    let text = strip_ptx_comments(text);
    let is_name = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%' | '.');
    let mut counts = HashMap::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find(".entry") {
        let after = &rest[i + ".entry".len()..];
        rest = after;
        if !after.starts_with(char::is_whitespace) {
            continue; // some other directive that starts with `.entry`
        }
        let after = after.trim_start();
        let name_len = after.find(|c: char| !is_name(c)).unwrap_or(after.len());
        let (name, tail) = after.split_at(name_len);
        if name.is_empty() {
            continue;
        }
        let tail = tail.trim_start();
        let count = match tail.strip_prefix('(') {
            Some(list) => {
                let list = &list[..list.find(')').unwrap_or(list.len())];
                list.split(|c: char| c.is_whitespace() || c == ',').filter(|t| *t == ".param").count()
            }
            None => 0,
        };
        counts.insert(name.to_string(), count);
    }
    counts
}

// SAFETY: the handle belongs to the module this object keeps alive; function calls are thread safe.
unsafe impl Send for CudaFunction {}
// SAFETY: as above.
unsafe impl Sync for CudaFunction {}

fn to_c_int(v: u32) -> Result<c_int, DriverError> {
    c_int::try_from(v).map_err(|_| DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))
}

/// `CudaFunction`'s getters of one attribute each: `name = CU_FUNC_ATTRIBUTE_...`, read with
/// [`CudaFunction::get_attribute`].
macro_rules! attribute_getters {
    ($($(#[$doc:meta])* $name:ident = $attribute:ident;)+) => {$(
        $(#[$doc])*
        pub fn $name(&self) -> Result<i32, DriverError> {
            self.get_attribute(sys::CUfunction_attribute::$attribute)
        }
    )+};
}

impl CudaFunction {
    /// The raw handle (valid while this function's module is loaded).
    pub fn cu_function(&self) -> sys::CUfunction {
        self.cu_function
    }

    /// The module this kernel belongs to.
    pub fn module(&self) -> &Arc<CudaModule> {
        &self.module
    }

    /// The kernel's name, as given to [`CudaModule::load_function`]. A prism-gpu extension.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// The byte size of each of the kernel's parameters, in order (`cuFuncGetParamInfo`,
    /// CUDA 12.4+ drivers). A prism-gpu extension.
    ///
    /// For a module loaded from PTX the count comes from the PTX text; for a binary image the
    /// driver is asked for parameters until it answers `CUDA_ERROR_INVALID_VALUE` (which
    /// compute-sanitizer reports as a failed call).
    #[doc(alias = "cuFuncGetParamInfo")]
    pub fn param_sizes(&self) -> Result<Vec<usize>, DriverError> {
        self.module.ctx.bind_to_thread()?;
        let count = self.module.ptx_param_counts.get(&self.info.name).copied();
        self.probe_params(0, count.unwrap_or(usize::MAX)).map(|(sizes, _)| sizes)
    }

    /// Sizes of parameters `from..to` (stopping early past the last one, with `false`), or
    /// `CUDA_ERROR_NOT_FOUND` when the driver has no `cuFuncGetParamInfo`.
    pub(crate) fn probe_params(&self, from: usize, to: usize) -> Result<(Vec<usize>, bool), DriverError> {
        let mut sizes = Vec::new();
        for index in from..to {
            // SAFETY: the function's module is loaded.
            match unsafe { result::function::get_param_info(self.cu_function, index) } {
                Ok((_, size)) => sizes.push(size),
                Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE)) => return Ok((sizes, false)),
                Err(e) => return Err(e),
            }
        }
        Ok((sizes, true))
    }

    /// The parameter list launches check against, worked out on the first launch (with `pushed`
    /// arguments) and cached. `None` when the driver could not be asked this time.
    pub(crate) fn params(&self, pushed: usize) -> Option<&Params> {
        if let Some(params) = self.info.params.get() {
            return Some(params);
        }
        self.module.ctx.bind_to_thread().ok()?;
        let count = self.module.ptx_param_counts.get(&self.info.name).copied();
        let params = match self.probe_params(0, count.unwrap_or(pushed)) {
            // Without a count from the PTX, only the first `pushed` are known to exist.
            Ok((sizes, true)) if count.is_none() => Params::AtLeast(sizes),
            // Either every parameter, or the driver said where the list ends.
            Ok((sizes, _)) => Params::Exact(sizes),
            Err(DriverError(
                sys::CUresult::CUDA_ERROR_NOT_FOUND | sys::CUresult::CUDA_ERROR_NOT_SUPPORTED,
            )) => Params::Unknown,
            Err(_) => return None,
        };
        Some(self.info.params.get_or_init(|| params))
    }

    /// Dynamic shared memory available per block for `num_blocks` blocks of `block_size` threads.
    #[doc(alias = "cuOccupancyAvailableDynamicSMemPerBlock")]
    pub fn occupancy_available_dynamic_smem_per_block(
        &self,
        num_blocks: u32,
        block_size: u32,
    ) -> Result<usize, DriverError> {
        self.module.ctx.bind_to_thread()?;
        // SAFETY: the function's module is loaded.
        unsafe {
            result::occupancy::available_dynamic_shared_mem_per_block(
                self.cu_function,
                to_c_int(num_blocks)?,
                to_c_int(block_size)?,
            )
        }
    }

    /// Resident blocks per multiprocessor at `block_size` threads and `dynamic_smem_size` bytes.
    #[doc(alias = "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags")]
    pub fn occupancy_max_active_blocks_per_multiprocessor(
        &self,
        block_size: u32,
        dynamic_smem_size: usize,
        flags: Option<sys::CUoccupancy_flags_enum>,
    ) -> Result<u32, DriverError> {
        let flags = flags.unwrap_or(sys::CUoccupancy_flags_enum::CU_OCCUPANCY_DEFAULT);
        self.module.ctx.bind_to_thread()?;
        // SAFETY: the function's module is loaded.
        let blocks = unsafe {
            result::occupancy::max_active_block_per_multiprocessor_with_flags(
                self.cu_function,
                to_c_int(block_size)?,
                dynamic_smem_size,
                flags as u32,
            )
        }?;
        Ok(blocks as u32)
    }

    /// `(min_grid_size, block_size)` maximising occupancy; `block_size_to_dynamic_smem_size`
    /// gives the dynamic shared memory a block size needs.
    #[doc(alias = "cuOccupancyMaxPotentialBlockSizeWithFlags")]
    pub fn occupancy_max_potential_block_size(
        &self,
        block_size_to_dynamic_smem_size: extern "C" fn(block_size: c_int) -> usize,
        dynamic_smem_size: usize,
        block_size_limit: u32,
        flags: Option<sys::CUoccupancy_flags_enum>,
    ) -> Result<(u32, u32), DriverError> {
        let flags = flags.unwrap_or(sys::CUoccupancy_flags_enum::CU_OCCUPANCY_DEFAULT);
        self.module.ctx.bind_to_thread()?;
        // SAFETY: the function's module is loaded; the callback is a safe extern "C" fn.
        let (grid, block) = unsafe {
            result::occupancy::max_potential_block_size_with_flags(
                self.cu_function,
                Some(block_size_to_dynamic_smem_size),
                dynamic_smem_size,
                to_c_int(block_size_limit)?,
                flags as u32,
            )
        }?;
        Ok((grid as u32, block as u32))
    }

    /// Reads a function attribute.
    #[doc(alias = "cuFuncGetAttribute")]
    pub fn get_attribute(&self, attribute: sys::CUfunction_attribute) -> Result<i32, DriverError> {
        self.module.ctx.bind_to_thread()?;
        // SAFETY: the function's module is loaded.
        unsafe { result::function::get_function_attribute(self.cu_function, attribute) }
    }

    attribute_getters! {
        /// Registers per thread.
        num_regs = CU_FUNC_ATTRIBUTE_NUM_REGS;
        /// Static shared memory per block, in bytes.
        shared_size_bytes = CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES;
        /// Constant memory used, in bytes.
        const_size_bytes = CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES;
        /// Local memory per thread, in bytes.
        local_size_bytes = CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES;
        /// The most threads a block of this kernel can have.
        max_threads_per_block = CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
        /// The PTX version it was compiled for (major * 10 + minor).
        ptx_version = CU_FUNC_ATTRIBUTE_PTX_VERSION;
        /// The binary architecture it was compiled for (major * 10 + minor).
        binary_version = CU_FUNC_ATTRIBUTE_BINARY_VERSION;
    }

    /// Sets a function attribute (e.g. the maximum dynamic shared memory).
    #[doc(alias = "cuFuncSetAttribute")]
    pub fn set_attribute(&self, attribute: sys::CUfunction_attribute, value: i32) -> Result<(), DriverError> {
        self.module.ctx.bind_to_thread()?;
        // SAFETY: the function's module is loaded.
        unsafe { result::function::set_function_attribute(self.cu_function, attribute, value) }
    }

    /// Sets the kernel's L1/shared memory preference.
    #[doc(alias = "cuFuncSetCacheConfig")]
    pub fn set_function_cache_config(&self, config: sys::CUfunc_cache) -> Result<(), DriverError> {
        self.module.ctx.bind_to_thread()?;
        // SAFETY: the function's module is loaded.
        unsafe { result::function::set_function_cache_config(self.cu_function, config) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = r#"//
// Generated by NVIDIA NVVM Compiler
.version 9.0
.target sm_80
.address_size 64

	// .globl	affine
.func  (.param .b32 func_retval0) helper(
	.param .b32 helper_param_0
)
{ ret; }

.visible .entry affine(
	.param .u64 .ptr .align 1 affine_param_0,
	.param .u64 .ptr .align 1 affine_param_1, // .param in a comment
	.param .f32 affine_param_2,
	.param .f32 affine_param_3,
	.param .u32 affine_param_4
)
.maxntid 256, 1, 1
{ ret; }
/* .visible .entry commented_out(.param .u32 x) */
.visible .entry empty()
{ ret; }
.entry bare
{ ret; }
.weak .entry with_struct(.param .align 8 .b8 with_struct_param_0[24],.param .u8 with_struct_param_1)
{ ret; }
.entryish not_a_kernel
"#;

    #[test]
    fn ptx_entries_give_their_parameter_counts() {
        let counts = ptx_param_counts(PTX);
        let mut got: Vec<_> = counts.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        got.sort();
        assert_eq!(got, [("affine", 5), ("bare", 0), ("empty", 0), ("with_struct", 2)]);
    }

    #[test]
    fn only_ptx_text_is_parsed() {
        let mut image = PTX.as_bytes().to_vec();
        image.push(0);
        assert!(ptx_text(&image).is_some());
        let elf = b"\x7fELF\x02\x01\x01\0\0\0.entry x()";
        assert!(ptx_text(elf).is_none(), "text after the first NUL is not PTX");
        let fatbin = [0x50u8, 0xed, 0x55, 0xba, 0x01, 0x00];
        assert!(ptx_text(&fatbin).is_none());
        assert!(ptx_text(b".version 9.0\n.target sm_80\n").is_none(), "no kernels, nothing to learn");
    }

    #[test]
    fn comments_are_removed_but_division_is_kept() {
        assert_eq!(strip_ptx_comments("a // b\nc /* d */ e / f"), "a \nc   e / f");
        assert_eq!(strip_ptx_comments("x /* unterminated"), "x  ");
    }
}
