//! What the machine offers: the driver's version and its devices, or why nothing is usable.

use std::ffi::{c_char, c_int, CStr};
use std::fmt;

use crate::error::{check, Result};
use crate::sys::driver::{CUdevice, CUdevice_attribute};
use crate::sys::Driver;

/// A usable CUDA driver and its devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The driver's CUDA version as `cuDriverGetVersion` reports it (13000 is CUDA 13.0).
    pub driver_version: i32,
    /// Every device the driver sees, in ordinal order.
    pub devices: Vec<DeviceInfo>,
}

/// One device as the driver describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Ordinal, as passed to `CudaContext::new`.
    pub ordinal: usize,
    /// The marketing name (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// Device memory in bytes.
    pub total_memory: usize,
    /// Streaming multiprocessors.
    pub multiprocessors: i32,
}

/// Loads the process-wide driver and describes it and its devices, without panicking.
pub fn probe() -> Result<Probe> {
    probe_driver(crate::sys::driver_library()?)
}

/// [`probe`] against a given driver library.
pub fn probe_driver(driver: &Driver) -> Result<Probe> {
    // SAFETY: each call below passes valid out-pointers to locals and ordinals below the count the
    // driver reported, as cuda.h requires.
    unsafe {
        check("cuInit", driver.cuInit(0)?)?;
        let mut driver_version = 0;
        check("cuDriverGetVersion", driver.cuDriverGetVersion(&mut driver_version)?)?;
        let mut count: c_int = 0;
        check("cuDeviceGetCount", driver.cuDeviceGetCount(&mut count)?)?;
        let devices = (0..count).map(|ordinal| describe(driver, ordinal)).collect::<Result<_>>()?;
        Ok(Probe { driver_version, devices })
    }
}

/// # Safety
/// `ordinal` must be below the driver's device count, after `cuInit` succeeded.
unsafe fn describe(driver: &Driver, ordinal: c_int) -> Result<DeviceInfo> {
    // SAFETY: out-pointers are valid locals; the buffer length passed matches the buffer.
    unsafe {
        let mut device: CUdevice = 0;
        check("cuDeviceGet", driver.cuDeviceGet(&mut device, ordinal)?)?;
        let mut name = [0 as c_char; 256];
        check("cuDeviceGetName", driver.cuDeviceGetName(name.as_mut_ptr(), name.len() as c_int, device)?)?;
        let mut total_memory = 0usize;
        check("cuDeviceTotalMem_v2", driver.cuDeviceTotalMem_v2(&mut total_memory, device)?)?;
        let attribute = |attribute| -> Result<i32> {
            let mut value = 0;
            check("cuDeviceGetAttribute", driver.cuDeviceGetAttribute(&mut value, attribute, device)?)?;
            Ok(value)
        };
        Ok(DeviceInfo {
            ordinal: ordinal as usize,
            name: CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned(),
            compute_capability: (
                attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            total_memory,
            multiprocessors: attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        })
    }
}

impl fmt::Display for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (major, minor) = (self.driver_version / 1000, (self.driver_version % 1000) / 10);
        writeln!(
            f,
            "CUDA driver {major}.{minor} ({}), {} device(s)",
            self.driver_version,
            self.devices.len()
        )?;
        for d in &self.devices {
            writeln!(
                f,
                "  [{}] {}: compute capability {}.{}, {:.1} GiB, {} SMs",
                d.ordinal,
                d.name,
                d.compute_capability.0,
                d.compute_capability.1,
                d.total_memory as f64 / (1u64 << 30) as f64,
                d.multiprocessors
            )?;
        }
        Ok(())
    }
}
