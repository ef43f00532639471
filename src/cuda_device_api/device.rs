//! [`CudaDevice`]: cudarc 0.9–0.13's device object (a context, one stream, the loaded modules).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use crate::driver::{
    sys, CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, DriverError,
    ValidAsZeroBits,
};
use crate::nvrtc::Ptx;

/// One device as cudarc 0.9–0.13 modelled it: a context, the stream its work goes to, and the
/// modules loaded with [`load_ptx`](Self::load_ptx), whose kernels [`get_func`](Self::get_func)
/// hands out. Shared as `Arc<CudaDevice>`.
///
/// A thin layer over [`CudaContext`] and [`CudaStream`]: slices it allocates are ordinary
/// [`CudaSlice`]s on [`stream`](Self::stream), usable with the modern API too.
#[derive(Debug)]
pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    cu_device: sys::CUdevice,
    cu_ctx: sys::CUcontext,
    cu_stream: sys::CUstream,
    /// Module name -> kernel name -> kernel.
    modules: RwLock<HashMap<String, HashMap<String, CudaFunction>>>,
}

// SAFETY: the raw handles are copies of handles owned by `ctx` and `stream` (both Send + Sync),
// kept only to hand out by reference; the module table is behind a lock.
unsafe impl Send for CudaDevice {}
// SAFETY: as above.
unsafe impl Sync for CudaDevice {}

/// Live devices, so that [`CudaDevice::of_stream`] finds the device a slice was allocated by.
fn devices() -> &'static Mutex<Vec<Weak<CudaDevice>>> {
    static DEVICES: OnceLock<Mutex<Vec<Weak<CudaDevice>>>> = OnceLock::new();
    DEVICES.get_or_init(Mutex::default)
}

/// Kernel handle -> the device that loaded it, so [`LaunchAsync::launch`](super::LaunchAsync)
/// knows which stream to use.
fn launchers() -> &'static RwLock<HashMap<usize, Weak<CudaDevice>>> {
    static LAUNCHERS: OnceLock<RwLock<HashMap<usize, Weak<CudaDevice>>>> = OnceLock::new();
    LAUNCHERS.get_or_init(RwLock::default)
}

fn key(f: &CudaFunction) -> usize {
    f.cu_function() as usize
}

fn too_short() -> DriverError {
    DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE)
}

impl CudaDevice {
    fn register(ctx: Arc<CudaContext>, stream: Arc<CudaStream>) -> Arc<Self> {
        let device = Arc::new(CudaDevice {
            cu_device: ctx.cu_device(),
            cu_ctx: ctx.cu_ctx(),
            cu_stream: stream.cu_stream(),
            ctx,
            stream,
            modules: RwLock::default(),
        });
        let mut live = devices().lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|d| d.strong_count() > 0);
        live.push(Arc::downgrade(&device));
        device
    }

    /// Device `ordinal`'s primary context, with work going to its default stream.
    ///
    /// Returns an error (never panics) when no driver can be loaded or there is no such device.
    pub fn new(ordinal: usize) -> Result<Arc<Self>, DriverError> {
        let ctx = CudaContext::new(ordinal)?;
        let stream = ctx.default_stream();
        Ok(Self::register(ctx, stream))
    }

    /// Like [`new`](Self::new), with work going to a new stream of its own.
    pub fn new_with_stream(ordinal: usize) -> Result<Arc<Self>, DriverError> {
        let ctx = CudaContext::new(ordinal)?;
        let stream = ctx.new_stream()?;
        Ok(Self::register(ctx, stream))
    }

    /// The device whose work goes to `stream`: the live [`CudaDevice`] using it if there is one
    /// (so its loaded modules come along), otherwise a new one around it. (A prism-gpu extension;
    /// `CudaSlice::device()` uses it.)
    pub fn of_stream(stream: &Arc<CudaStream>) -> Arc<Self> {
        let found = devices()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter_map(Weak::upgrade)
            .find(|d| Arc::ptr_eq(&d.stream, stream));
        found.unwrap_or_else(|| Self::register(stream.context().clone(), stream.clone()))
    }

    /// The device that loaded `f` with [`load_ptx`](Self::load_ptx), if it is still alive.
    pub(crate) fn of_function(f: &CudaFunction) -> Option<Arc<Self>> {
        launchers().read().unwrap_or_else(|e| e.into_inner()).get(&key(f)).and_then(Weak::upgrade)
    }

    /// The number of CUDA devices.
    pub fn count() -> Result<i32, DriverError> {
        CudaContext::device_count()
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    /// The device's name.
    pub fn name(&self) -> Result<String, DriverError> {
        self.ctx.name()
    }

    /// One device attribute.
    pub fn attribute(&self, attrib: sys::CUdevice_attribute) -> Result<i32, DriverError> {
        self.ctx.attribute(attrib)
    }

    /// The raw device handle.
    pub fn cu_device(&self) -> &sys::CUdevice {
        &self.cu_device
    }

    /// The raw context handle (owned by the context: do not release it).
    pub fn cu_primary_ctx(&self) -> &sys::CUcontext {
        &self.cu_ctx
    }

    /// The raw handle of the stream work goes to (do not destroy it).
    pub fn cu_stream(&self) -> &sys::CUstream {
        &self.cu_stream
    }

    /// The modern context underneath. (A prism-gpu extension.)
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The modern stream work goes to. (A prism-gpu extension.)
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Makes the device's context current on the calling thread.
    pub fn bind_to_thread(&self) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()
    }

    /// Waits for the work submitted to the device's stream.
    pub fn synchronize(self: &Arc<Self>) -> Result<(), DriverError> {
        self.stream.synchronize()
    }

    /// An empty slice (no allocation).
    pub fn null<T>(self: &Arc<Self>) -> Result<CudaSlice<T>, DriverError> {
        self.stream.null()
    }

    /// Allocates `len` values of `T` on the device's stream.
    ///
    /// # Safety
    /// The memory is uninitialised: write it before reading it as `T`.
    pub unsafe fn alloc<T: DeviceRepr>(self: &Arc<Self>, len: usize) -> Result<CudaSlice<T>, DriverError> {
        // SAFETY: forwarded to the caller.
        unsafe { self.stream.alloc(len) }
    }

    /// Allocates `len` zeroed values of `T`.
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
        self: &Arc<Self>,
        len: usize,
    ) -> Result<CudaSlice<T>, DriverError> {
        self.stream.alloc_zeros(len)
    }

    /// Sets every byte of `dst` to zero.
    pub fn memset_zeros<T: DeviceRepr + ValidAsZeroBits, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        self.stream.memset_zeros(dst)
    }

    /// Copies `src` into a new slice, taking the `Vec` (cudarc kept it alive for the copy).
    pub fn htod_copy<T: DeviceRepr + Unpin>(
        self: &Arc<Self>,
        src: Vec<T>,
    ) -> Result<CudaSlice<T>, DriverError> {
        self.stream.clone_htod(&src)
    }

    /// Copies `src` into `dst`; `CUDA_ERROR_INVALID_VALUE` if `dst` is shorter.
    pub fn htod_copy_into<T: DeviceRepr + Unpin>(
        self: &Arc<Self>,
        src: Vec<T>,
        dst: &mut CudaSlice<T>,
    ) -> Result<(), DriverError> {
        self.htod_sync_copy_into(&src, dst)
    }

    /// Copies `src` into a new slice and waits for the copy.
    pub fn htod_sync_copy<T: DeviceRepr>(self: &Arc<Self>, src: &[T]) -> Result<CudaSlice<T>, DriverError> {
        let dst = self.stream.clone_htod(src)?;
        self.stream.synchronize()?;
        Ok(dst)
    }

    /// Copies `src` into `dst` and waits for the copy; `CUDA_ERROR_INVALID_VALUE` if `dst` is shorter.
    pub fn htod_sync_copy_into<T: DeviceRepr, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        src: &[T],
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        if dst.len() < src.len() {
            return Err(too_short());
        }
        self.stream.memcpy_htod(src, dst)?;
        self.stream.synchronize()
    }

    /// Copies device memory into a new `Vec`.
    pub fn dtoh_sync_copy<T: DeviceRepr, Src: DevicePtr<T>>(
        self: &Arc<Self>,
        src: &Src,
    ) -> Result<Vec<T>, DriverError> {
        let dst = self.stream.clone_dtoh(src)?;
        self.stream.synchronize()?;
        Ok(dst)
    }

    /// Copies device memory into `dst`; `CUDA_ERROR_INVALID_VALUE` if `dst` is shorter.
    pub fn dtoh_sync_copy_into<T: DeviceRepr, Src: DevicePtr<T>>(
        self: &Arc<Self>,
        src: &Src,
        dst: &mut [T],
    ) -> Result<(), DriverError> {
        if dst.len() < src.len() {
            return Err(too_short());
        }
        self.stream.memcpy_dtoh(src, dst)?;
        self.stream.synchronize()
    }

    /// Copies device memory into device memory; `CUDA_ERROR_INVALID_VALUE` if `dst` is shorter.
    pub fn dtod_copy<T: DeviceRepr, Src: DevicePtr<T>, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        src: &Src,
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        if dst.len() < src.len() {
            return Err(too_short());
        }
        self.stream.memcpy_dtod(src, dst)
    }

    /// Copies `src` back into a `Vec` and frees it.
    pub fn sync_reclaim<T: Clone + Default + DeviceRepr + Unpin>(
        self: &Arc<Self>,
        src: CudaSlice<T>,
    ) -> Result<Vec<T>, DriverError> {
        self.dtoh_sync_copy(&src)
    }

    /// Takes ownership of an existing allocation, freed in the device stream's order.
    ///
    /// # Safety
    /// As for the modern `CudaStream::upgrade_device_ptr`.
    pub unsafe fn upgrade_device_ptr<T>(
        self: &Arc<Self>,
        cu_device_ptr: sys::CUdeviceptr,
        len: usize,
    ) -> CudaSlice<T> {
        // SAFETY: forwarded to the caller.
        unsafe { self.stream.upgrade_device_ptr(cu_device_ptr, len) }
    }

    /// Loads `ptx` as module `module_name` and gets its kernels `func_names`, for
    /// [`get_func`](Self::get_func). Loading under a name already used replaces that module.
    pub fn load_ptx(
        self: &Arc<Self>,
        ptx: Ptx,
        module_name: &str,
        func_names: &[&'static str],
    ) -> Result<(), DriverError> {
        let module = self.ctx.load_module(ptx)?;
        let functions = func_names
            .iter()
            .map(|&name| Ok((name.to_string(), module.load_function(name)?)))
            .collect::<Result<HashMap<_, _>, DriverError>>()?;
        let mut launchers = launchers().write().unwrap_or_else(|e| e.into_inner());
        launchers.retain(|_, d| d.strong_count() > 0);
        for f in functions.values() {
            launchers.insert(key(f), Arc::downgrade(self));
        }
        let mut modules = self.modules.write().unwrap_or_else(|e| e.into_inner());
        if let Some(old) = modules.insert(module_name.to_string(), functions) {
            // The replaced module unloads once its last kernel is dropped; a later module could
            // then get the same handles, so they must not lead back here.
            for f in old.values() {
                launchers.remove(&key(f));
            }
        }
        Ok(())
    }

    /// The kernel `func_name` of module `module_name`, if [`load_ptx`](Self::load_ptx) loaded it.
    pub fn get_func(&self, module_name: &str, func_name: &str) -> Option<CudaFunction> {
        let modules = self.modules.read().unwrap_or_else(|e| e.into_inner());
        modules.get(module_name)?.get(func_name).cloned()
    }

    /// Whether [`get_func`](Self::get_func) would find the kernel.
    pub fn has_func(&self, module_name: &str, func_name: &str) -> bool {
        let modules = self.modules.read().unwrap_or_else(|e| e.into_inner());
        modules.get(module_name).is_some_and(|m| m.contains_key(func_name))
    }

    /// A new stream that first waits for the work submitted to the device's stream so far.
    pub fn fork_default_stream(self: &Arc<Self>) -> Result<CudaStream, DriverError> {
        let stream = self.stream.fork()?;
        // A freshly forked stream has no other owner.
        Arc::try_unwrap(stream).map_err(|_| DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))
    }

    /// Makes later work on the device's stream wait for the work submitted to `stream` so far.
    pub fn wait_for(self: &Arc<Self>, stream: &CudaStream) -> Result<(), DriverError> {
        self.stream.join(stream)
    }
}

#[cfg(not(feature = "legacy-gpu"))]
impl<T> CudaSlice<T> {
    /// The [`CudaDevice`] whose stream the slice lives on (cudarc 0.9–0.13).
    pub fn device(&self) -> Arc<CudaDevice> {
        CudaDevice::of_stream(self.stream())
    }
}

/// `CudaSlice::device()` of cudarc 0.9–0.13, for the cudarc engine (whose `CudaSlice` is cudarc's).
#[cfg(feature = "legacy-gpu")]
pub trait SliceDevice {
    /// The [`CudaDevice`] whose stream the slice lives on.
    fn device(&self) -> Arc<CudaDevice>;
}

#[cfg(feature = "legacy-gpu")]
impl<T> SliceDevice for CudaSlice<T> {
    fn device(&self) -> Arc<CudaDevice> {
        CudaDevice::of_stream(self.stream())
    }
}
