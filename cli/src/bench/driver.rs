//! Driver-level costs: kernel launch submission and round trip, allocation, and 1 GiB host/device
//! copies. Each is measured three ways in the same run: through our `driver` API, through the raw
//! bindings ([`prism_gpu::sys::driver_library()`]) in a plain loop, and (with the `bench-anchors` feature)
//! through cudarc 0.19.

use std::ffi::{c_void, CString};
use std::sync::Arc;
use std::time::Instant;

use super::{gigabytes_per_second, time_host, Row, Settings};
use prism_gpu::driver::{CudaContext, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use prism_gpu::nvrtc::Ptx;
use prism_gpu::sys::driver::{CUdeviceptr, CUfunction, CUmodule, CUresult};
use prism_gpu::sys::{Driver, LoadError};
use prism_gpu::Result;

/// A kernel that returns at once, with the two parameters of a typical launch (a pointer, a count).
const NOOP_PTX: &str = "
.version 7.0
.target sm_52
.address_size 64
.visible .entry noop(.param .u64 noop_param_0, .param .u32 noop_param_1)
{
	ret;
}
";

/// candle's element-wise kernels' parameter list (element count, dimension count, a pointer to
/// dims and strides or null, two inputs, the output), with a body that returns at once.
const OP6_PTX: &str = "
.version 7.0
.target sm_52
.address_size 64
.visible .entry op6(.param .u64 p0, .param .u64 p1, .param .u64 p2, .param .u64 p3, .param .u64 p4,
    .param .u64 p5)
{
	ret;
}
";
/// The per-thread default stream's handle (`CU_STREAM_PER_THREAD`), on which candle runs.
const PER_THREAD_STREAM: usize = 0x2;
/// The output of each op in the candle pattern: 1 Mi f32, as candle's `binary_mul` bench.
const OP_OUTPUT_BYTES: usize = 4 << 20;

/// Launches per timed sample of the submission benchmark: few enough that the device's launch
/// queue never fills, so the host's cost of a submission is what is timed, not the device's
/// rate of running empty kernels.
const SUBMITS: usize = 500;
/// Launch + synchronise round trips per timed repeat.
const ROUND_TRIPS: usize = 2_000;
/// Allocations per timed repeat.
const ALLOCS: usize = 2_000;
/// The allocation size.
const ALLOC_BYTES: usize = 4 << 20;
/// The copy size.
const COPY_BYTES: usize = 1 << 30;

/// One measurement three ways: ours, the raw bindings, cudarc (when built with `bench-anchors`).
struct Triple {
    ours: f64,
    raw: f64,
    cudarc: Option<f64>,
}

fn push_rows(rows: &mut Vec<Row>, name: &str, unit: &str, higher_is_better: bool, t: Triple) {
    let row = |anchor: &str, value: Option<f64>| Row {
        group: "driver".into(),
        name: name.into(),
        series: None,
        ours: t.ours,
        anchor: anchor.into(),
        anchor_value: value,
        unit: unit.into(),
        higher_is_better,
        kernel: None,
    };
    if cfg!(feature = "bench-anchors") {
        rows.push(row("cudarc 0.19", t.cudarc));
    }
    rows.push(row("raw driver loop", Some(t.raw)));
}

/// A cudarc call's error as ours (the anchor's `DriverError` is cudarc's type on either engine).
#[cfg(feature = "bench-anchors")]
fn anchor<T>(result: std::result::Result<T, cudarc::driver::DriverError>) -> Result<T> {
    result.map_err(|e| prism_gpu::Error::DriverCall {
        call: "cudarc 0.19 (anchor)",
        result: CUresult::from_raw(e.0 as u32).unwrap_or(CUresult::CUDA_ERROR_UNKNOWN),
    })
}

/// A raw driver call's result as ours.
fn raw(call: &'static str, result: std::result::Result<CUresult, LoadError>) -> Result<()> {
    match result? {
        CUresult::CUDA_SUCCESS => Ok(()),
        result => Err(prism_gpu::Error::DriverCall { call, result }),
    }
}

/// Microseconds per operation from `repeat` (which does `ops` operations).
fn per_op_us(settings: Settings, ops: usize, repeat: impl FnMut(usize) -> Result<()>) -> Result<f64> {
    Ok(time_host(settings, repeat)?.median_ms * 1e3 / ops as f64)
}

/// Runs every driver benchmark on device `ordinal`. Launch and allocation figures are
/// microseconds per operation (lower is better), copies GB/s.
pub fn run(ordinal: usize, settings: Settings) -> Result<Vec<Row>> {
    let ctx = CudaContext::new(ordinal)?;
    let stream = ctx.default_stream();
    let d = prism_gpu::sys::driver_library()?;
    let mut rows = Vec::new();
    launches(&stream, d, settings, &mut rows)?;
    candle_pattern(&ctx, d, settings, &mut rows)?;
    allocations(&stream, d, settings, &mut rows)?;
    copies(&stream, d, Settings { warmup: 1, repeats: settings.repeats.min(5) }, &mut rows)?;
    Ok(rows)
}

/// The no-op kernel loaded through the raw bindings; unloaded on drop.
struct RawKernel<'d> {
    d: &'d Driver,
    module: CUmodule,
    function: CUfunction,
}

impl<'d> RawKernel<'d> {
    fn load(d: &'d Driver) -> Result<Self> {
        let text = CString::new(NOOP_PTX).expect("no NUL in the PTX");
        let mut module = std::ptr::null_mut();
        // SAFETY: a NUL-terminated PTX text and a valid out-pointer; a context is current.
        raw("cuModuleLoadData", unsafe { d.cuModuleLoadData(&mut module, text.as_ptr().cast()) })?;
        let mut kernel = RawKernel { d, module, function: std::ptr::null_mut() };
        let mut function = std::ptr::null_mut();
        // SAFETY: the module is loaded; the name is NUL-terminated.
        raw("cuModuleGetFunction", unsafe {
            d.cuModuleGetFunction(&mut function, module, c"noop".as_ptr())
        })?;
        kernel.function = function;
        Ok(kernel)
    }

    /// Submits one launch on the null stream.
    fn launch(&self, params: &mut [*mut c_void; 2]) -> Result<()> {
        // SAFETY: the function is loaded; `params` points at a u64 and a u32 matching its parameters.
        let result = unsafe {
            self.d.cuLaunchKernel(
                self.function,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                std::ptr::null_mut(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        raw("cuLaunchKernel", result)
    }

    fn sync(&self) -> Result<()> {
        // SAFETY: no arguments; waits for the current context.
        raw("cuCtxSynchronize", unsafe { self.d.cuCtxSynchronize() })
    }
}

impl Drop for RawKernel<'_> {
    fn drop(&mut self) {
        // SAFETY: we loaded the module and no launch of it is pending after the benchmarks' syncs.
        let _ = unsafe { self.d.cuModuleUnload(self.module) };
    }
}

fn launches(stream: &Arc<CudaStream>, d: &Driver, settings: Settings, rows: &mut Vec<Row>) -> Result<()> {
    let ctx = stream.context();
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    let noop = ctx.load_module(Ptx::from_src(NOOP_PTX))?.load_function("noop")?;
    let buffer: CudaSlice<f32> = stream.alloc_zeros(256)?;
    let n = 256u32;
    let ours = |count: usize, sync_each: bool| -> Result<()> {
        for _ in 0..count {
            // SAFETY: the no-op kernel takes a pointer and a u32 and touches neither.
            unsafe { stream.launch_builder(&noop).arg(&buffer).arg(&n).launch(cfg) }?;
            if sync_each {
                stream.synchronize()?;
            }
        }
        Ok(())
    };

    let kernel = RawKernel::load(d)?;
    let (mut ptr, mut count): (CUdeviceptr, u32) = (0, 256);
    // SAFETY: a valid out-pointer; freed below.
    raw("cuMemAlloc_v2", unsafe { d.cuMemAlloc_v2(&mut ptr, 1024) })?;
    let raw_buffer = ptr;
    let mut params =
        [(&mut ptr as *mut CUdeviceptr).cast::<c_void>(), (&mut count as *mut u32).cast::<c_void>()];
    let mut raw_loop = |count: usize, sync_each: bool| -> Result<()> {
        for _ in 0..count {
            kernel.launch(&mut params)?;
            if sync_each {
                kernel.sync()?;
            }
        }
        Ok(())
    };

    #[cfg(feature = "bench-anchors")]
    let anchor = {
        use cudarc::driver::PushKernelArg as _;
        let cctx = anchor(cudarc::driver::CudaContext::new(ctx.ordinal()))?;
        let cstream = cctx.default_stream();
        let cnoop =
            anchor(anchor(cctx.load_module(cudarc::nvrtc::Ptx::from_src(NOOP_PTX)))?.load_function("noop"))?;
        let cbuffer: cudarc::driver::CudaSlice<f32> = anchor(cstream.alloc_zeros(256))?;
        let ccfg =
            cudarc::driver::LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
        move |count: usize, sync_each: bool| -> Result<()> {
            for _ in 0..count {
                // SAFETY: as for ours.
                anchor(unsafe { cstream.launch_builder(&cnoop).arg(&cbuffer).arg(&n).launch(ccfg) })?;
                if sync_each {
                    anchor(cstream.synchronize())?;
                }
            }
            Ok(())
        }
    };

    for (name, count, sync_each) in [
        ("launch submit, empty kernel (2 args), per launch", SUBMITS, false),
        ("launch + sync round trip, empty kernel", ROUND_TRIPS, true),
    ] {
        let mut engines: Vec<Engine<'_>> =
            vec![Box::new(|| ours(count, sync_each)), Box::new(|| raw_loop(count, sync_each))];
        #[cfg(feature = "bench-anchors")]
        engines.push(Box::new(|| anchor(count, sync_each)));
        let us = interleaved_host_us(ctx, settings, count, &mut engines)?;
        push_rows(rows, name, "us", false, Triple { ours: us[0], raw: us[1], cudarc: us.get(2).copied() });
    }
    // SAFETY: allocated above; the launches that used it have finished.
    raw("cuMemFree_v2", unsafe { d.cuMemFree_v2(raw_buffer) })
}

/// candle's host work per element-wise op, on the per-thread stream as candle's `CudaDevice` has
/// it (event tracking on, cudarc's default): look the kernel up (candle does per launch), allocate
/// the output in stream order, launch with candle's six arguments, drop the previous op's output.
/// The kernel returns at once, so this times the host side. Per op, microseconds.
fn candle_pattern(ctx: &Arc<CudaContext>, d: &Driver, settings: Settings, rows: &mut Vec<Row>) -> Result<()> {
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    let (numel, dims) = ((OP_OUTPUT_BYTES / 4) as u64, 1u64);
    let module = ctx.load_module(Ptx::from_src(OP6_PTX))?;
    let stream = ctx.per_thread_stream();
    let lhs: CudaSlice<f32> = stream.alloc_zeros(256)?;
    let rhs: CudaSlice<f32> = stream.alloc_zeros(256)?;
    let ours = |count: usize| -> Result<()> {
        let mut previous: Option<CudaSlice<f32>> = None;
        for _ in 0..count {
            let op = module.load_function("op6")?;
            // SAFETY: the kernel never reads its output.
            let mut out: CudaSlice<f32> = unsafe { stream.alloc(OP_OUTPUT_BYTES / 4) }?;
            let null = 0u64;
            // SAFETY: six 8-byte parameters, none dereferenced by the kernel.
            unsafe {
                stream
                    .launch_builder(&op)
                    .arg(&numel)
                    .arg(&dims)
                    .arg(&null)
                    .arg(&lhs)
                    .arg(&rhs)
                    .arg(&mut out)
                    .launch(cfg)
            }?;
            previous = Some(out);
        }
        drop(previous);
        Ok(())
    };

    let text = CString::new(OP6_PTX).expect("no NUL in the PTX");
    let mut raw_module: CUmodule = std::ptr::null_mut();
    // SAFETY: a NUL-terminated PTX text and a valid out-pointer; the context is current.
    raw("cuModuleLoadData", unsafe { d.cuModuleLoadData(&mut raw_module, text.as_ptr().cast()) })?;
    let pts = PER_THREAD_STREAM as prism_gpu::sys::driver::CUstream;
    let raw_loop = |count: usize| -> Result<()> {
        let mut previous: CUdeviceptr = 0;
        for _ in 0..count {
            let mut function: CUfunction = std::ptr::null_mut();
            // SAFETY: the module is loaded; the name is NUL-terminated.
            raw("cuModuleGetFunction", unsafe {
                d.cuModuleGetFunction(&mut function, raw_module, c"op6".as_ptr())
            })?;
            let mut out: CUdeviceptr = 0;
            // SAFETY: a valid out-pointer; freed in stream order below.
            raw("cuMemAllocAsync", unsafe { d.cuMemAllocAsync(&mut out, OP_OUTPUT_BYTES, pts) })?;
            let (mut a, mut b, mut c, mut x, mut y) = (numel, dims, 0u64, 0u64, 0u64);
            let mut params =
                [&mut a, &mut b, &mut c, &mut x, &mut y, &mut out].map(|v| (v as *mut u64).cast::<c_void>());
            // SAFETY: six 8-byte values for the kernel's six 8-byte parameters.
            raw("cuLaunchKernel", unsafe {
                d.cuLaunchKernel(
                    function,
                    1,
                    1,
                    1,
                    1,
                    1,
                    1,
                    0,
                    pts,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            })?;
            if previous != 0 {
                // SAFETY: allocated above in this stream's order; the kernel never touches it.
                raw("cuMemFreeAsync", unsafe { d.cuMemFreeAsync(previous, pts) })?;
            }
            previous = out;
        }
        // SAFETY: as above.
        raw("cuMemFreeAsync", unsafe { d.cuMemFreeAsync(previous, pts) })
    };

    #[cfg(feature = "bench-anchors")]
    let anchor = {
        use cudarc::driver::PushKernelArg as _;
        let cctx = anchor(cudarc::driver::CudaContext::new(ctx.ordinal()))?;
        let cstream = cctx.per_thread_stream();
        let cmodule = anchor(cctx.load_module(cudarc::nvrtc::Ptx::from_src(OP6_PTX)))?;
        let clhs: cudarc::driver::CudaSlice<f32> = anchor(cstream.alloc_zeros(256))?;
        let crhs: cudarc::driver::CudaSlice<f32> = anchor(cstream.alloc_zeros(256))?;
        let ccfg =
            cudarc::driver::LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
        move |count: usize| -> Result<()> {
            let mut previous: Option<cudarc::driver::CudaSlice<f32>> = None;
            for _ in 0..count {
                let op = anchor(cmodule.load_function("op6"))?;
                // SAFETY: as for ours.
                let mut out: cudarc::driver::CudaSlice<f32> =
                    anchor(unsafe { cstream.alloc(OP_OUTPUT_BYTES / 4) })?;
                let null = 0u64;
                // SAFETY: as for ours.
                anchor(unsafe {
                    cstream
                        .launch_builder(&op)
                        .arg(&numel)
                        .arg(&dims)
                        .arg(&null)
                        .arg(&clhs)
                        .arg(&crhs)
                        .arg(&mut out)
                        .launch(ccfg)
                })?;
                previous = Some(out);
            }
            drop(previous);
            Ok(())
        }
    };

    let mut engines: Vec<Engine<'_>> = vec![Box::new(|| ours(SUBMITS)), Box::new(|| raw_loop(SUBMITS))];
    #[cfg(feature = "bench-anchors")]
    engines.push(Box::new(|| anchor(SUBMITS)));
    let us = interleaved_host_us(ctx, settings, SUBMITS, &mut engines)?;
    let name = "candle op pattern (per-thread stream): look up, alloc 4 MiB, 6-arg launch, free, per op";
    push_rows(rows, name, "us", false, Triple { ours: us[0], raw: us[1], cudarc: us.get(2).copied() });
    // SAFETY: loaded above; the launches that used it have finished (synchronised above).
    raw("cuModuleUnload", unsafe { d.cuModuleUnload(raw_module) })
}

fn allocations(stream: &Arc<CudaStream>, d: &Driver, settings: Settings, rows: &mut Vec<Row>) -> Result<()> {
    for zeroed in [true, false] {
        let ours = per_op_us(settings, ALLOCS, |_| {
            for _ in 0..ALLOCS {
                let slice: CudaSlice<u8> =
                    // SAFETY: the memory is never read.
                    if zeroed { stream.alloc_zeros(ALLOC_BYTES)? } else { unsafe { stream.alloc(ALLOC_BYTES) }? };
                drop(slice);
            }
            Ok(stream.synchronize()?)
        })?;
        let raw_us = per_op_us(settings, ALLOCS, |_| {
            let null = std::ptr::null_mut();
            for _ in 0..ALLOCS {
                let mut ptr: CUdeviceptr = 0;
                // SAFETY: a valid out-pointer; the memory is freed below in stream order.
                raw("cuMemAllocAsync", unsafe { d.cuMemAllocAsync(&mut ptr, ALLOC_BYTES, null) })?;
                if zeroed {
                    // SAFETY: `ptr` holds ALLOC_BYTES bytes.
                    raw("cuMemsetD8Async", unsafe { d.cuMemsetD8Async(ptr, 0, ALLOC_BYTES, null) })?;
                }
                // SAFETY: allocated above, used only in this stream's order.
                raw("cuMemFreeAsync", unsafe { d.cuMemFreeAsync(ptr, null) })?;
            }
            // SAFETY: no arguments.
            raw("cuCtxSynchronize", unsafe { d.cuCtxSynchronize() })
        })?;
        #[cfg(feature = "bench-anchors")]
        let cudarc = {
            let cctx = anchor(cudarc::driver::CudaContext::new(stream.context().ordinal()))?;
            let cstream = cctx.default_stream();
            Some(per_op_us(settings, ALLOCS, |_| {
                for _ in 0..ALLOCS {
                    let slice: cudarc::driver::CudaSlice<u8> =
                        // SAFETY: the memory is never read.
                        anchor(if zeroed { cstream.alloc_zeros(ALLOC_BYTES) } else { unsafe { cstream.alloc(ALLOC_BYTES) } })?;
                    drop(slice);
                }
                anchor(cstream.synchronize())
            })?)
        };
        #[cfg(not(feature = "bench-anchors"))]
        let cudarc = None;
        let name = if zeroed { "alloc_zeros + free, 4 MiB" } else { "alloc + free, 4 MiB" };
        push_rows(rows, name, "us", false, Triple { ours, raw: raw_us, cudarc });
    }
    Ok(())
}

/// Where a copy's host side lives.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Host {
    /// A `Vec` allocated before timing (pages already touched).
    Pageable,
    /// A new `Vec` per copy (device to host only; includes its page faults).
    FreshVec,
    /// Page-locked memory.
    Pinned,
}

/// The engines a launch or copy is timed with: ours (0), the raw bindings (1), cudarc (2).
const ENGINES: usize = if cfg!(feature = "bench-anchors") { 3 } else { 2 };

/// The median of each engine's samples, the engines taking turns in every round (after the
/// warm-up rounds), so that drifting clocks and the state of the host's memory (which a fresh
/// `Vec`'s page faults depend on) affect all alike.
fn interleaved_medians(settings: Settings, mut sample: impl FnMut(usize) -> Result<f64>) -> Result<Vec<f64>> {
    let mut samples = vec![Vec::new(); ENGINES];
    for round in 0..settings.warmup + settings.repeats.max(1) {
        for (engine, values) in samples.iter_mut().enumerate() {
            let value = sample(engine)?;
            if round >= settings.warmup {
                values.push(value);
            }
        }
    }
    Ok(samples
        .into_iter()
        .map(|mut v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect())
}

/// One engine's run of a host-timed benchmark (ours, the raw bindings, cudarc: [`ENGINES`]).
type Engine<'a> = Box<dyn FnMut() -> Result<()> + 'a>;

/// Microseconds per operation of each engine's run of `ops` operations, the engines taking turns
/// ([`interleaved_medians`]); each sample starts and ends with the device idle, the waits untimed.
fn interleaved_host_us(
    ctx: &CudaContext,
    settings: Settings,
    ops: usize,
    engines: &mut [Engine<'_>],
) -> Result<Vec<f64>> {
    interleaved_medians(settings, |engine| {
        ctx.synchronize()?;
        let start = Instant::now();
        engines[engine]()?;
        let us = start.elapsed().as_secs_f64() * 1e6 / ops as f64;
        ctx.synchronize()?;
        Ok(us)
    })
}

/// GB/s of one timed 1 GiB copy.
fn copy_gbps(copy: impl FnOnce() -> Result<()>) -> Result<f64> {
    let start = Instant::now();
    copy()?;
    Ok(gigabytes_per_second(COPY_BYTES as f64, start.elapsed().as_secs_f64() * 1e3))
}

fn copies(stream: &Arc<CudaStream>, d: &Driver, settings: Settings, rows: &mut Vec<Row>) -> Result<()> {
    let ctx = stream.context();
    let mut host: Vec<u8> = (0..COPY_BYTES).map(|i| (i * 7 + 3) as u8).collect();
    let mut dev: CudaSlice<u8> = stream.alloc_zeros(COPY_BYTES)?;
    // SAFETY: written below before any read.
    let mut pinned = unsafe { ctx.alloc_pinned::<u8>(COPY_BYTES) }?;
    pinned.as_mut_slice()?.copy_from_slice(&host);
    let raw_mem = RawCopyMemory::new(d)?;
    // SAFETY: the allocation holds COPY_BYTES bytes and nothing else uses it.
    unsafe { std::slice::from_raw_parts_mut(raw_mem.pinned.cast::<u8>(), COPY_BYTES) }.copy_from_slice(&host);
    #[cfg(feature = "bench-anchors")]
    let (cstream, mut cdev, mut cpinned) = {
        let cctx = anchor(cudarc::driver::CudaContext::new(ctx.ordinal()))?;
        let cstream = cctx.default_stream();
        let cdev: cudarc::driver::CudaSlice<u8> = anchor(cstream.alloc_zeros(COPY_BYTES))?;
        // SAFETY: written below before any read.
        let mut cpinned = anchor(unsafe { cctx.alloc_pinned::<u8>(COPY_BYTES) })?;
        anchor(cpinned.as_mut_slice())?.copy_from_slice(&host);
        (cstream, cdev, cpinned)
    };

    let cases = [
        ("pageable host -> device, 1 GiB", Host::Pageable, true),
        ("pageable device -> host, 1 GiB, into an existing Vec", Host::Pageable, false),
        ("pageable device -> host, 1 GiB, into a fresh Vec", Host::FreshVec, false),
        ("pinned host -> device, 1 GiB", Host::Pinned, true),
        ("pinned device -> host, 1 GiB", Host::Pinned, false),
    ];
    for (name, kind, up) in cases {
        // Fresh Vecs are kept until the measurement ends, so freeing them is not timed.
        let mut kept: Vec<Vec<u8>> = Vec::new();
        let gbps = interleaved_medians(settings, |engine| {
            copy_gbps(|| {
                match (engine, kind, up) {
                    (0, Host::Pinned, true) => stream.memcpy_htod(&pinned, &mut dev)?,
                    (0, Host::Pinned, false) => stream.memcpy_dtoh(&dev, &mut pinned)?,
                    (0, _, true) => stream.memcpy_htod(&host, &mut dev)?,
                    (0, Host::FreshVec, false) => kept.push(stream.clone_dtoh(&dev)?),
                    (0, _, false) => stream.memcpy_dtoh(&dev, &mut host)?,
                    (1, _, _) => {
                        let mut fresh = Vec::<u8>::new();
                        let h: *mut c_void = match kind {
                            Host::Pinned => raw_mem.pinned,
                            Host::Pageable => host.as_mut_ptr().cast(),
                            Host::FreshVec => {
                                fresh.reserve_exact(COPY_BYTES);
                                fresh.as_mut_ptr().cast()
                            }
                        };
                        // SAFETY: `h` and `raw_mem.dev` hold COPY_BYTES bytes; the synchronous copies
                        // finish before returning, after which the fresh Vec's bytes are initialised.
                        unsafe {
                            if up {
                                raw("cuMemcpyHtoD_v2", d.cuMemcpyHtoD_v2(raw_mem.dev, h, COPY_BYTES))?;
                            } else {
                                raw("cuMemcpyDtoH_v2", d.cuMemcpyDtoH_v2(h, raw_mem.dev, COPY_BYTES))?;
                            }
                            if kind == Host::FreshVec {
                                fresh.set_len(COPY_BYTES);
                                kept.push(fresh);
                            }
                        }
                        return Ok(());
                    }
                    #[cfg(feature = "bench-anchors")]
                    (_, Host::Pinned, true) => anchor(cstream.memcpy_htod(&cpinned, &mut cdev))?,
                    #[cfg(feature = "bench-anchors")]
                    (_, Host::Pinned, false) => anchor(cstream.memcpy_dtoh(&cdev, &mut cpinned))?,
                    #[cfg(feature = "bench-anchors")]
                    (_, _, true) => anchor(cstream.memcpy_htod(&host, &mut cdev))?,
                    #[cfg(feature = "bench-anchors")]
                    (_, Host::FreshVec, false) => kept.push(anchor(cstream.clone_dtoh(&cdev))?),
                    #[cfg(feature = "bench-anchors")]
                    (_, _, false) => anchor(cstream.memcpy_dtoh(&cdev, &mut host))?,
                    #[cfg(not(feature = "bench-anchors"))]
                    _ => unreachable!("two engines without the anchors"),
                }
                #[cfg(feature = "bench-anchors")]
                if engine == 2 {
                    return anchor(cstream.synchronize());
                }
                Ok(stream.synchronize()?)
            })
        })?;
        drop(kept);
        push_rows(
            rows,
            name,
            "GB/s",
            true,
            Triple { ours: gbps[0], raw: gbps[1], cudarc: gbps.get(2).copied() },
        );
    }
    Ok(())
}

/// The raw loop's device buffer and page-locked host buffer, freed on drop.
struct RawCopyMemory<'d> {
    d: &'d Driver,
    dev: CUdeviceptr,
    pinned: *mut c_void,
}

impl<'d> RawCopyMemory<'d> {
    fn new(d: &'d Driver) -> Result<Self> {
        let mut mem = RawCopyMemory { d, dev: 0, pinned: std::ptr::null_mut() };
        // SAFETY: valid out-pointers; both freed on drop.
        raw("cuMemAlloc_v2", unsafe { d.cuMemAlloc_v2(&mut mem.dev, COPY_BYTES) })?;
        // SAFETY: as above.
        raw("cuMemAllocHost_v2", unsafe { d.cuMemAllocHost_v2(&mut mem.pinned, COPY_BYTES) })?;
        Ok(mem)
    }
}

impl Drop for RawCopyMemory<'_> {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` (or still null / zero, which the driver ignores); the
        // synchronous copies using them have finished.
        unsafe {
            let _ = self.d.cuMemFreeHost(self.pinned);
            let _ = self.d.cuMemFree_v2(self.dev);
        }
    }
}
