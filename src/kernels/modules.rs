//! Loading the built-in kernel families into a context, once each, on first use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::driver::{sys::CUdevice_attribute, CudaContext, CudaFunction, CudaModule};
use crate::error::{Error, Result};
use crate::kernels::{family_of, image};
use crate::nvrtc::Ptx;

/// The built-in kernels of one context: families are loaded lazily and their functions cached.
pub struct Kernels {
    ctx: Arc<CudaContext>,
    multiprocessors: u32,
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
    functions: Mutex<HashMap<&'static str, CudaFunction>>,
}

impl Kernels {
    /// Kernels for `ctx`; nothing is loaded until a kernel is asked for.
    pub fn new(ctx: Arc<CudaContext>) -> Result<Self> {
        let multiprocessors = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        Ok(Self {
            ctx,
            multiprocessors: multiprocessors.max(1) as u32,
            modules: Mutex::default(),
            functions: Mutex::default(),
        })
    }

    /// The context the kernels load into.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The device's streaming multiprocessor count (grid sizing uses it).
    pub(crate) fn multiprocessors(&self) -> u32 {
        self.multiprocessors
    }

    /// The module of `family`, loading its embedded image on first use.
    pub(crate) fn module(&self, family: &'static str) -> Result<Arc<CudaModule>> {
        let mut modules = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(module) = modules.get(family) {
            return Ok(module.clone());
        }
        let image = image(family).ok_or_else(|| Error::UnknownKernel(format!("family {family}")))?;
        let module = load_image(&self.ctx, family, image.bytes)?;
        modules.insert(family, module.clone());
        Ok(module)
    }

    /// The built-in kernel `name` (any entry point of the catalogue).
    #[doc(alias = "get_kernel")]
    pub fn function(&self, name: &str) -> Result<CudaFunction> {
        let family = family_of(name).ok_or_else(|| Error::UnknownKernel(name.to_string()))?;
        let entry = *family.entries.iter().find(|e| **e == name).expect("family_of found it");
        if let Some(f) = self.functions.lock().unwrap_or_else(|e| e.into_inner()).get(entry) {
            return Ok(f.clone());
        }
        let function = self.module(family.name)?.load_function(entry)?;
        self.functions.lock().unwrap_or_else(|e| e.into_inner()).insert(entry, function.clone());
        Ok(function)
    }
}

#[cfg(not(feature = "legacy-gpu"))]
fn load_image(ctx: &Arc<CudaContext>, family: &'static str, bytes: &[u8]) -> Result<Arc<CudaModule>> {
    ctx.load_module_with_log(Ptx::from_binary(bytes.to_vec())).map_err(|e| Error::ModuleLoad {
        family,
        error: e.error,
        log: e.log,
    })
}

// cudarc has no way to return the JIT log.
#[cfg(feature = "legacy-gpu")]
fn load_image(ctx: &Arc<CudaContext>, family: &'static str, bytes: &[u8]) -> Result<Arc<CudaModule>> {
    ctx.load_module(Ptx::from_binary(bytes.to_vec())).map_err(|error| Error::ModuleLoad {
        family,
        error,
        log: String::new(),
    })
}
