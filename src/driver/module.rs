//! [`CudaModule`] (loaded code) and [`CudaFunction`] (one kernel in it).

use std::ffi::{c_int, c_void, CString};
use std::marker::PhantomData;
use std::sync::Arc;

use super::context::CudaContext;
use super::memory::CudaViewMut;
use super::result::{self, DriverError};
use super::stream::CudaStream;
use super::sys;
use crate::nvrtc::{Ptx, PtxKind};

/// Bytes reserved for each of the JIT's info and error logs.
const JIT_LOG_BYTES: usize = 16 * 1024;

/// Loaded device code. Create with [`CudaContext::load_module`]; get kernels with
/// [`CudaModule::load_function`].
#[derive(Debug)]
pub struct CudaModule {
    pub(crate) cu_module: sys::CUmodule,
    pub(crate) ctx: Arc<CudaContext>,
}

// SAFETY: the handle is owned by this object; module calls are thread safe in the driver.
unsafe impl Send for CudaModule {}
// SAFETY: as above.
unsafe impl Sync for CudaModule {}

impl Drop for CudaModule {
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
        // SAFETY: we own the module; every CudaFunction holds an Arc to it, so none is left.
        self.ctx.record_err(unsafe { result::module::unload(self.cu_module) });
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

impl From<ModuleLoadError> for DriverError {
    fn from(e: ModuleLoadError) -> Self {
        e.error
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
            Ok(cu_module) => Ok(Arc::new(CudaModule { cu_module, ctx: self.clone() })),
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
        let name = CString::new(fn_name).map_err(|_| DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))?;
        self.ctx.bind_to_thread()?;
        // SAFETY: the module is loaded for as long as `self` lives.
        let cu_function = unsafe { result::module::get_function(self.cu_module, name) }?;
        Ok(CudaFunction { cu_function, module: self.clone() })
    }

    /// The `__device__` / `__constant__` variable `name` as bytes, for copies on `stream`.
    #[doc(alias = "cuModuleGetGlobal")]
    pub fn get_global<'a>(
        self: &'a Arc<Self>,
        name: &str,
        stream: &'a Arc<CudaStream>,
    ) -> Result<CudaViewMut<'a, u8>, DriverError> {
        let name = CString::new(name).map_err(|_| DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))?;
        self.ctx.bind_to_thread()?;
        // SAFETY: the module is loaded for as long as `self` lives.
        let (ptr, len) = unsafe { result::module::get_global(self.cu_module, name) }?;
        Ok(CudaViewMut { ptr, len, events: None, stream, marker: PhantomData })
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
}

// SAFETY: the handle belongs to the module this object keeps alive; function calls are thread safe.
unsafe impl Send for CudaFunction {}
// SAFETY: as above.
unsafe impl Sync for CudaFunction {}

fn to_c_int(v: u32) -> Result<c_int, DriverError> {
    c_int::try_from(v).map_err(|_| DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))
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

    /// The byte size of each of the kernel's parameters, in order (`cuFuncGetParamInfo`,
    /// CUDA 12.4+ drivers). A prism-gpu extension.
    #[doc(alias = "cuFuncGetParamInfo")]
    pub fn param_sizes(&self) -> Result<Vec<usize>, DriverError> {
        self.module.ctx.bind_to_thread()?;
        let mut sizes = Vec::new();
        loop {
            // SAFETY: the function's module is loaded.
            match unsafe { result::function::get_param_info(self.cu_function, sizes.len()) } {
                Ok((_, size)) => sizes.push(size),
                Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE)) => return Ok(sizes),
                Err(e) => return Err(e),
            }
        }
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
                flags.0,
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
                flags.0,
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

    /// Registers per thread.
    pub fn num_regs(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)
    }

    /// Static shared memory per block, in bytes.
    pub fn shared_size_bytes(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
    }

    /// Constant memory used, in bytes.
    pub fn const_size_bytes(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)
    }

    /// Local memory per thread, in bytes.
    pub fn local_size_bytes(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
    }

    /// The most threads a block of this kernel can have.
    pub fn max_threads_per_block(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
    }

    /// The PTX version it was compiled for (major * 10 + minor).
    pub fn ptx_version(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PTX_VERSION)
    }

    /// The binary architecture it was compiled for (major * 10 + minor).
    pub fn binary_version(&self) -> Result<i32, DriverError> {
        self.get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_BINARY_VERSION)
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
