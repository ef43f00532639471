//! Operations on device buffers: allocate the output, check shapes, launch the built-in kernel.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use half::{bf16, f16};

use crate::driver::{CudaContext, CudaSlice, CudaStream, DeviceRepr, DriverError};
use crate::error::{Error, Result};
use crate::kernels::neuromorphic::{self, DeviceCsr, DeviceReservoir};
use crate::kernels::norms::{self as launch, Channels, NormElement, Running};
use crate::kernels::workspace::Workspace;
use crate::kernels::Kernels;
use crate::ops::activations::{Activation, Backward};
use crate::ops::convert;
use crate::ops::elementwise::{Axpy, Binary, Fill, Scale};
use crate::ops::gemv::Gemv;
use crate::ops::gemv::Product;
use crate::ops::neuromorphic::{Csr, LeakyIntegration, MatvecInput, Patterns, SpikeEncode};
use crate::ops::norms::Nchw;
use crate::ops::norms::{self, Norm};
use crate::ops::random::{Gaussian, Philox, Uniform};
use crate::ops::reductions::{self, Argmax, Reduce, RowArgmax};
use crate::ops::softmax::{self, Softmax};
use crate::ops::transpose::Transpose;
use crate::ops::{Gpu, Map, Update};
use crate::sys::driver::CUresult;

/// The device-buffer side of [`ProductionGpuRuntime`](super::ProductionGpuRuntime): every
/// operation takes `CudaSlice`s and returns a new `CudaSlice` (or works in place) on its stream.
pub struct GpuOps {
    stream: Arc<CudaStream>,
    kernels: Kernels,
    workspace: Workspace,
    /// The first sticky fault seen on this context (a `CUresult` code; 0: none).
    fault: AtomicU32,
}

/// Errors after which the driver fails every call in the context (a kernel fault).
fn is_sticky(code: CUresult) -> bool {
    use CUresult as R;
    matches!(
        code,
        R::CUDA_ERROR_ILLEGAL_ADDRESS
            | R::CUDA_ERROR_LAUNCH_FAILED
            | R::CUDA_ERROR_LAUNCH_TIMEOUT
            | R::CUDA_ERROR_ASSERT
            | R::CUDA_ERROR_HARDWARE_STACK_ERROR
            | R::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | R::CUDA_ERROR_MISALIGNED_ADDRESS
            | R::CUDA_ERROR_INVALID_ADDRESS_SPACE
            | R::CUDA_ERROR_INVALID_PC
    )
}

impl GpuOps {
    /// Operations on `ctx`'s default stream.
    pub fn new(ctx: Arc<CudaContext>) -> Result<Self> {
        Self::with_stream(ctx.default_stream())
    }

    /// Operations on `stream` (a stream of their own can be captured into a CUDA graph; the
    /// default stream cannot).
    pub fn with_stream(stream: Arc<CudaStream>) -> Result<Self> {
        let kernels = Kernels::new(stream.context().clone())?;
        Ok(Self { stream, kernels, workspace: Workspace::default(), fault: AtomicU32::new(0) })
    }

    /// The stream every operation is ordered on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The built-in kernels of this context.
    pub fn kernels(&self) -> &Kernels {
        &self.kernels
    }

    /// The scratch that this runtime's GEMMs and batch norms reuse (kept between calls).
    pub(crate) fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// Runs a host-slice operation's GPU part; its downloads synchronise the stream.
    pub(crate) fn host<T>(&self, f: impl FnOnce(&Self) -> Result<T>) -> Result<T> {
        self.healthy()?;
        self.kernels.context().bind_to_thread().map_err(|e| self.account(e.into()))?;
        f(self).map_err(|e| self.account(e))
    }

    /// The first sticky fault seen on this context, if any.
    pub fn fault(&self) -> Option<CUresult> {
        CUresult::from_raw(self.fault.load(Ordering::Acquire)).filter(|&c| c != CUresult::CUDA_SUCCESS)
    }

    /// [`Error::ContextFaulted`] once a kernel has faulted on this context.
    fn healthy(&self) -> Result<()> {
        match self.fault() {
            None => Ok(()),
            Some(first) => Err(Error::ContextFaulted { ordinal: self.kernels.context().ordinal(), first }),
        }
    }

    /// Gives a driver error its account: running out of memory names the request and the
    /// device's free and total memory; a sticky fault is remembered (the first one) and named
    /// by every later call.
    fn account(&self, err: Error) -> Error {
        let Error::Driver(DriverError(driver_code)) = err else { return err };
        // The code in our bindings' terms (the same values under either engine).
        let Some(code) = CUresult::from_raw(driver_code as u32) else { return err };
        let ctx = self.kernels.context();
        if code == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            #[cfg(not(feature = "legacy-gpu"))]
            let requested = ctx.memory_stats().map_or(0, |s| s.last_failed_request);
            #[cfg(feature = "legacy-gpu")] // cudarc keeps no account of failed requests
            let requested = 0;
            let (free, total) = ctx.mem_get_info().unwrap_or((0, 0));
            return Error::OutOfMemory { requested, free, total };
        }
        if is_sticky(code) {
            let _ = self.fault.compare_exchange(0, code as u32, Ordering::AcqRel, Ordering::Acquire);
            return self.healthy().err().unwrap_or(err);
        }
        err
    }

    /// A device copy of `data`.
    pub fn upload<T: DeviceRepr>(&self, data: &[T]) -> Result<CudaSlice<T>> {
        self.healthy()?;
        self.stream.clone_htod(data).map_err(|e| self.account(e.into()))
    }

    /// A host copy of `data` (waits for the work that writes it).
    pub fn download<T: DeviceRepr>(&self, data: &CudaSlice<T>) -> Result<Vec<T>> {
        self.healthy()?;
        crate::kernels::args::same_context(data.stream(), &self.stream)?;
        self.stream.clone_dtoh(data).map_err(|e| self.account(e.into()))
    }

    /// An uninitialised buffer that the caller's launch overwrites entirely.
    fn output<T: DeviceRepr>(&self, len: usize) -> Result<CudaSlice<T>> {
        self.healthy()?;
        if len == 0 {
            return Ok(self.stream.null()?);
        }
        // SAFETY: every caller launches a kernel that writes all `len` elements before the
        // buffer is read.
        unsafe { self.stream.alloc(len) }.map_err(|e| self.account(e.into()))
    }

    /// The device-buffer path of every [`Map`] operation: checks, allocates the output, launches.
    pub(crate) fn map<const N: usize, M: Map<N>>(
        &self,
        op: M,
        inputs: [&CudaSlice<M::In>; N],
    ) -> Result<CudaSlice<M::Out>> {
        let mut out = self.output(op.check(inputs.map(|x| x.len()))?)?;
        let views = inputs.map(CudaSlice::as_view);
        op.launch(self.launch_at(), views.each_ref(), &mut out.as_view_mut())?;
        Ok(out)
    }

    /// The device-buffer path of every [`Update`] operation: checks, launches on `x` in place.
    pub(crate) fn update<const N: usize, U: Update<N>>(
        &self,
        op: U,
        x: &mut CudaSlice<U::Elem>,
        inputs: [&CudaSlice<U::In>; N],
    ) -> Result<()> {
        op.check(x.len(), inputs.map(|x| x.len()))?;
        let views = inputs.map(CudaSlice::as_view);
        op.launch(self.launch_at(), &mut x.as_view_mut(), views.each_ref())
    }

    /// Where this runtime's launches go.
    fn launch_at(&self) -> Gpu<'_> {
        Gpu { kernels: &self.kernels, stream: &self.stream }
    }

    /// Device copies of `inputs`, stopping at the first failure.
    pub(crate) fn upload_all<T: DeviceRepr, const N: usize>(
        &self,
        inputs: [&[T]; N],
    ) -> Result<[CudaSlice<T>; N]> {
        let mut copies = [const { None }; N];
        for (copy, input) in copies.iter_mut().zip(inputs) {
            *copy = Some(self.upload(input)?);
        }
        Ok(copies.map(|c| c.expect("every input was uploaded above")))
    }

    /// `a ∘ b` elementwise into a new buffer.
    pub fn binary(&self, op: Binary, a: &CudaSlice<f32>, b: &CudaSlice<f32>) -> Result<CudaSlice<f32>> {
        self.map(op, [a, b])
    }

    /// `alpha * x + y` into a new buffer.
    pub fn axpy(&self, alpha: f32, x: &CudaSlice<f32>, y: &CudaSlice<f32>) -> Result<CudaSlice<f32>> {
        self.map(Axpy(alpha), [x, y])
    }

    /// `alpha * x` into a new buffer.
    pub fn scale(&self, alpha: f32, x: &CudaSlice<f32>) -> Result<CudaSlice<f32>> {
        self.map(Scale(alpha), [x])
    }

    /// `x *= alpha` in place.
    pub fn scale_inplace(&self, alpha: f32, x: &mut CudaSlice<f32>) -> Result<()> {
        self.update(Scale(alpha), x, [])
    }

    /// A new buffer of `len` copies of `value`.
    pub fn fill(&self, len: usize, value: f32) -> Result<CudaSlice<f32>> {
        self.map(Fill { len, value }, [])
    }

    /// A new buffer of `len` uniform f32 in (0, 1] from the Philox stream at `at`.
    pub fn rand_uniform(&self, len: usize, at: Philox) -> Result<CudaSlice<f32>> {
        self.map(Uniform { len, at }, [])
    }

    /// A new buffer of `len` f32 from `N(mean, std^2)` on the Philox stream at `at`.
    pub fn rand_normal(&self, len: usize, mean: f32, std: f32, at: Philox) -> Result<CudaSlice<f32>> {
        self.map(Gaussian { len, mean, std, at }, [])
    }

    // -----------------------------------------------------------------------------------------
    // conversions

    /// `x` as f16 (round to nearest even) in a new buffer.
    pub fn f32_to_f16(&self, x: &CudaSlice<f32>) -> Result<CudaSlice<f16>> {
        self.map(convert::F32_TO_F16, [x])
    }

    /// `x` as f32 (exact) in a new buffer.
    pub fn f16_to_f32(&self, x: &CudaSlice<f16>) -> Result<CudaSlice<f32>> {
        self.map(convert::F16_TO_F32, [x])
    }

    /// `x` as bf16 (round to nearest even) in a new buffer.
    pub fn f32_to_bf16(&self, x: &CudaSlice<f32>) -> Result<CudaSlice<bf16>> {
        self.map(convert::F32_TO_BF16, [x])
    }

    /// `x` as f32 (exact) in a new buffer.
    pub fn bf16_to_f32(&self, x: &CudaSlice<bf16>) -> Result<CudaSlice<f32>> {
        self.map(convert::BF16_TO_F32, [x])
    }

    /// `x` as f64 (exact) in a new buffer.
    pub fn f32_to_f64(&self, x: &CudaSlice<f32>) -> Result<CudaSlice<f64>> {
        self.map(convert::F32_TO_F64, [x])
    }

    // -----------------------------------------------------------------------------------------
    // activations

    /// `f(x)` in a new buffer.
    pub fn activation(&self, act: Activation, x: &CudaSlice<f32>) -> Result<CudaSlice<f32>> {
        self.map(act, [x])
    }

    /// `x = f(x)` in place.
    pub fn activation_inplace(&self, act: Activation, x: &mut CudaSlice<f32>) -> Result<()> {
        self.update(act, x, [])
    }

    /// `dy * f'(x)` (`x` the forward input) in a new buffer.
    pub fn activation_backward(
        &self,
        act: Activation,
        dy: &CudaSlice<f32>,
        x: &CudaSlice<f32>,
    ) -> Result<CudaSlice<f32>> {
        self.map(Backward(act), [dy, x])
    }

    /// `dy = dy * f'(x)` in place.
    pub fn activation_backward_inplace(
        &self,
        act: Activation,
        dy: &mut CudaSlice<f32>,
        x: &CudaSlice<f32>,
    ) -> Result<()> {
        self.update(Backward(act), dy, [x])
    }

    // -----------------------------------------------------------------------------------------
    // softmax

    /// Softmax or log-softmax of each row of `x` (`[rows, cols]`) in a new buffer.
    pub fn softmax(
        &self,
        kind: Softmax,
        x: &CudaSlice<f32>,
        rows: usize,
        cols: usize,
    ) -> Result<CudaSlice<f32>> {
        self.map(softmax::Rows { kind, rows, cols }, [x])
    }

    /// Softmax or log-softmax of each row of `x` (`[rows, cols]`) in place.
    pub fn softmax_inplace(
        &self,
        kind: Softmax,
        x: &mut CudaSlice<f32>,
        rows: usize,
        cols: usize,
    ) -> Result<()> {
        self.update(softmax::Rows { kind, rows, cols }, x, [])
    }

    // -----------------------------------------------------------------------------------------
    // norms

    /// The device-buffer path of the row norms: checks, allocates the output (and the statistics
    /// when `stats` and there are values: each row's rstd, and its mean for layer norm), launches.
    pub(crate) fn row_norm<T: NormElement>(
        &self,
        op: norms::Rows,
        x: &CudaSlice<T>,
        gamma: Option<&CudaSlice<f32>>,
        beta: Option<&CudaSlice<f32>>,
        stats: bool,
    ) -> Result<(CudaSlice<T>, CudaSlice<f32>, CudaSlice<f32>)> {
        op.check(x.len(), gamma.map(CudaSlice::len), beta.map(CudaSlice::len))?;
        let rstd_len = if stats && !x.is_empty() { op.rows } else { 0 };
        let mean_len = if op.norm == Norm::Layer { rstd_len } else { 0 };
        let (mut out, mut mean, mut rstd) =
            (self.output(x.len())?, self.output(mean_len)?, self.output(rstd_len)?);
        let (gamma, beta) = (gamma.map(CudaSlice::as_view), beta.map(CudaSlice::as_view));
        let (mut mean_view, mut rstd_view) = (mean.as_view_mut(), rstd.as_view_mut());
        let stats = [(mean_len > 0).then_some(&mut mean_view), (rstd_len > 0).then_some(&mut rstd_view)];
        op.launch(
            self.launch_at(),
            &x.as_view(),
            [gamma.as_ref(), beta.as_ref()],
            &mut out.as_view_mut(),
            stats,
        )?;
        Ok((out, mean, rstd))
    }

    /// Layer norm of each row of `x` (`[rows, cols]`, f32 or bf16) with optional gamma/beta (`cols`
    /// each), and each row's mean and rstd: `(out, mean, rstd)`.
    pub fn layer_norm_with_stats<T: NormElement>(
        &self,
        x: &CudaSlice<T>,
        gamma: Option<&CudaSlice<f32>>,
        beta: Option<&CudaSlice<f32>>,
        rows: usize,
        cols: usize,
        eps: f32,
    ) -> Result<(CudaSlice<T>, CudaSlice<f32>, CudaSlice<f32>)> {
        self.row_norm(norms::Rows::new(Norm::Layer, T::LAYER_NORM, rows, cols, eps), x, gamma, beta, true)
    }

    /// Layer norm of each row of `x` (`[rows, cols]`, f32 or bf16) in a new buffer.
    pub fn layer_norm<T: NormElement>(
        &self,
        x: &CudaSlice<T>,
        gamma: Option<&CudaSlice<f32>>,
        beta: Option<&CudaSlice<f32>>,
        rows: usize,
        cols: usize,
        eps: f32,
    ) -> Result<CudaSlice<T>> {
        let op = norms::Rows::new(Norm::Layer, T::LAYER_NORM, rows, cols, eps);
        Ok(self.row_norm(op, x, gamma, beta, false)?.0)
    }

    /// RMS norm of each row of `x` (`[rows, cols]`, f32 or bf16) with optional gamma, and each
    /// row's rstd: `(out, rstd)`.
    pub fn rms_norm_with_stats<T: NormElement>(
        &self,
        x: &CudaSlice<T>,
        gamma: Option<&CudaSlice<f32>>,
        rows: usize,
        cols: usize,
        eps: f32,
    ) -> Result<(CudaSlice<T>, CudaSlice<f32>)> {
        let op = norms::Rows::new(Norm::Rms, T::RMS_NORM, rows, cols, eps);
        let (out, _, rstd) = self.row_norm(op, x, gamma, None, true)?;
        Ok((out, rstd))
    }

    /// RMS norm of each row of `x` (`[rows, cols]`, f32 or bf16) in a new buffer.
    pub fn rms_norm<T: NormElement>(
        &self,
        x: &CudaSlice<T>,
        gamma: Option<&CudaSlice<f32>>,
        rows: usize,
        cols: usize,
        eps: f32,
    ) -> Result<CudaSlice<T>> {
        let op = norms::Rows::new(Norm::Rms, T::RMS_NORM, rows, cols, eps);
        Ok(self.row_norm(op, x, gamma, None, false)?.0)
    }

    /// Batch norm of NCHW `x` with given per-channel statistics (inference) in a new buffer.
    pub fn batch_norm(
        &self,
        x: &CudaSlice<f32>,
        nchw: Nchw,
        stats: ChannelStats<'_>,
        eps: f32,
    ) -> Result<CudaSlice<f32>> {
        let views = stats.views();
        norms::check_batch("batch_norm", x.len(), nchw, &views.channels().lens())?;
        let mut out = self.output(x.len())?;
        launch::batch_norm(
            &self.kernels,
            &self.stream,
            &x.as_view(),
            &mut out.as_view_mut(),
            views.channels(),
            nchw,
            eps,
        )?;
        Ok(out)
    }

    /// Batch norm of NCHW `x` with given per-channel statistics (inference), in place.
    pub fn batch_norm_inplace(
        &self,
        x: &mut CudaSlice<f32>,
        nchw: Nchw,
        stats: ChannelStats<'_>,
        eps: f32,
    ) -> Result<()> {
        let views = stats.views();
        launch::batch_norm_inplace(
            &self.kernels,
            &self.stream,
            &mut x.as_view_mut(),
            views.channels(),
            nchw,
            eps,
        )
    }

    /// Training forward of batch norm over NCHW `x`: normalises with the batch statistics and
    /// returns `(out, mean, var)` (biased variance); `running` (mean, var, momentum) is updated
    /// with the unbiased variance when given.
    pub fn batch_norm_train(
        &self,
        x: &CudaSlice<f32>,
        nchw: Nchw,
        gamma: Option<&CudaSlice<f32>>,
        beta: Option<&CudaSlice<f32>>,
        eps: f32,
        running: Option<(&mut CudaSlice<f32>, &mut CudaSlice<f32>, f32)>,
    ) -> Result<(CudaSlice<f32>, CudaSlice<f32>, CudaSlice<f32>)> {
        let running_lens = running.as_ref().map(|(mean, var, _)| [mean.len(), var.len()]);
        let channels = norms::train_lens(gamma.map(CudaSlice::len), beta.map(CudaSlice::len), running_lens);
        norms::check_batch_train("batch_norm_train", x.len(), nchw, &channels)?;
        let (mut mean, mut var) = (self.output(nchw.1)?, self.output(nchw.1)?);
        {
            let mut running = running.map(|(m, v, momentum)| (m.as_view_mut(), v.as_view_mut(), momentum));
            let running =
                running.as_mut().map(|(mean, var, momentum)| Running { mean, var, momentum: *momentum });
            launch::batch_norm_stats(
                &self.kernels,
                &self.stream,
                &self.workspace,
                &x.as_view(),
                &mut mean.as_view_mut(),
                &mut var.as_view_mut(),
                running,
                nchw,
            )?;
        }
        let stats = ChannelStats { mean: &mean, var: &var, gamma, beta };
        let out = self.batch_norm(x, nchw, stats, eps)?;
        Ok((out, mean, var))
    }

    // -----------------------------------------------------------------------------------------
    // reductions

    /// Sum, mean or maximum of `x` in a one-element buffer (empty `x`: 0, NaN, `-inf`).
    pub fn reduce(&self, op: Reduce, x: &CudaSlice<f32>) -> Result<CudaSlice<f32>> {
        self.map(op, [x])
    }

    /// The first index of the maximum of `x` (NaN skipped) in a one-element buffer; `x` not empty.
    pub fn argmax(&self, x: &CudaSlice<f32>) -> Result<CudaSlice<u64>> {
        self.map(Argmax, [x])
    }

    /// Sum, mean or maximum of each row of `x` (`[rows, cols]`, `cols >= 1`) in a new buffer.
    pub fn reduce_rows(
        &self,
        op: Reduce,
        x: &CudaSlice<f32>,
        rows: usize,
        cols: usize,
    ) -> Result<CudaSlice<f32>> {
        self.map(reductions::Rows { op, rows, cols }, [x])
    }

    /// The first column index of the maximum of each row of `x` in a new buffer.
    pub fn argmax_rows(&self, x: &CudaSlice<f32>, rows: usize, cols: usize) -> Result<CudaSlice<i32>> {
        self.map(RowArgmax { rows, cols }, [x])
    }

    // -----------------------------------------------------------------------------------------
    // GEMV and transpose

    /// `y = alpha * A x + beta * y` in place (`y` of `m`, not read when `beta == 0`).
    pub fn gemv(
        &self,
        dims: Gemv,
        a: &CudaSlice<f32>,
        x: &CudaSlice<f32>,
        y: &mut CudaSlice<f32>,
    ) -> Result<()> {
        self.update(Product { dims, transposed: false }, y, [a, x])
    }

    /// `y = alpha * Aᵀ x + beta * y` in place (`x` of `m`, `y` of `n`, not read when `beta == 0`).
    pub fn gemv_t(
        &self,
        dims: Gemv,
        a: &CudaSlice<f32>,
        x: &CudaSlice<f32>,
        y: &mut CudaSlice<f32>,
    ) -> Result<()> {
        self.update(Product { dims, transposed: true }, y, [a, x])
    }

    /// The transpose (`[cols, rows]`) of `x` (`[rows, cols]`) in a new buffer.
    pub fn transpose(&self, x: &CudaSlice<f32>, rows: usize, cols: usize) -> Result<CudaSlice<f32>> {
        self.map(Transpose { rows, cols }, [x])
    }

    // -----------------------------------------------------------------------------------------
    // neuromorphic

    /// Checks a CSR matrix (`[rows, cols]`) on the host and copies it to the device.
    pub fn upload_csr(&self, csr: Csr<'_>, rows: usize, cols: usize) -> Result<DeviceCsr> {
        DeviceCsr::upload(&self.stream, csr, rows, cols)
    }

    /// `W_in u` (`w_in` `[n_reservoir, n_inputs]`) in a new buffer.
    pub fn matvec_input(
        &self,
        w_in: &CudaSlice<f32>,
        u: &CudaSlice<f32>,
        n_reservoir: usize,
        n_inputs: usize,
    ) -> Result<CudaSlice<f32>> {
        self.map(MatvecInput { n_reservoir, n_inputs }, [w_in, u])
    }

    /// `W x` for an `[n, n]` reservoir (`n = x.len()`, dense or CSR) in a new buffer.
    pub fn matvec_reservoir(&self, w: &DeviceReservoir<'_>, x: &CudaSlice<f32>) -> Result<CudaSlice<f32>> {
        w.check("matvec_reservoir", x.len())?;
        let mut out = self.output(x.len())?;
        neuromorphic::matvec_reservoir(&self.kernels, &self.stream, w, &x.as_view(), &mut out.as_view_mut())?;
        Ok(out)
    }

    /// `x = (1 - leak) * x + leak * tanh(drive)` in place.
    pub fn leaky_integration(&self, x: &mut CudaSlice<f32>, drive: &CudaSlice<f32>, leak: f32) -> Result<()> {
        self.update(LeakyIntegration(leak), x, [drive])
    }

    /// Rate-based spikes `[steps, rates.len()]` (time-major) in a new buffer; the same seed gives
    /// the same spikes as the CPU fallback.
    pub fn spike_encode(&self, rates: &CudaSlice<f32>, steps: usize, seed: u64) -> Result<CudaSlice<f32>> {
        self.map(SpikeEncode { steps, seed }, [rates])
    }

    /// Sliding-window correlation of spike trains `[t, n]` against `p` templates `[w, n]`:
    /// `[p, t - w + 1]` in a new buffer.
    pub fn pattern_correlation(
        &self,
        spikes: &CudaSlice<f32>,
        templates: &CudaSlice<f32>,
        dims: Patterns,
    ) -> Result<CudaSlice<f32>> {
        self.map(dims, [spikes, templates])
    }

    /// Spectral-radius estimate of an `[n, n]` reservoir by `iters` steps of power iteration
    /// (waits for the result).
    pub fn spectral_radius(&self, w: &DeviceReservoir<'_>, n: usize, iters: usize, seed: u64) -> Result<f32> {
        neuromorphic::spectral_radius(&self.kernels, &self.stream, w, n, iters, seed)
    }

    /// One echo-state step out of place in one launch: `out = (1 - leak) * x + leak * tanh(W_in u + W x)`.
    pub fn reservoir_update(
        &self,
        w_in: &CudaSlice<f32>,
        w: &DeviceReservoir<'_>,
        u: &CudaSlice<f32>,
        x: &CudaSlice<f32>,
        leak: f32,
    ) -> Result<CudaSlice<f32>> {
        w.check("reservoir_update", x.len())?;
        let mut out = self.output(x.len())?;
        neuromorphic::reservoir_update(
            &self.kernels,
            &self.stream,
            &w_in.as_view(),
            w,
            &u.as_view(),
            &x.as_view(),
            &mut out.as_view_mut(),
            leak,
        )?;
        Ok(out)
    }

    /// One echo-state step in place: `x = (1 - leak) * x + leak * tanh(W_in u + W x)`.
    pub fn reservoir_step(
        &self,
        w_in: &CudaSlice<f32>,
        w: &DeviceReservoir<'_>,
        u: &CudaSlice<f32>,
        x: &mut CudaSlice<f32>,
        leak: f32,
    ) -> Result<()> {
        let mut drive = self.output(x.len())?;
        neuromorphic::reservoir_step(
            &self.kernels,
            &self.stream,
            &w_in.as_view(),
            w,
            &u.as_view(),
            &mut x.as_view_mut(),
            &mut drive.as_view_mut(),
            leak,
        )
    }
}

/// Per-channel operands of batch norm on the device: statistics and optional gamma/beta.
#[derive(Debug, Clone, Copy)]
pub struct ChannelStats<'a> {
    /// Mean of each channel.
    pub mean: &'a CudaSlice<f32>,
    /// Variance of each channel.
    pub var: &'a CudaSlice<f32>,
    /// Scale of each channel; absent means ones.
    pub gamma: Option<&'a CudaSlice<f32>>,
    /// Shift of each channel; absent means zeros.
    pub beta: Option<&'a CudaSlice<f32>>,
}

/// [`ChannelStats`] as views, which the launcher borrows.
struct ChannelViews<'a> {
    mean: crate::driver::CudaView<'a, f32>,
    var: crate::driver::CudaView<'a, f32>,
    gamma: Option<crate::driver::CudaView<'a, f32>>,
    beta: Option<crate::driver::CudaView<'a, f32>>,
}

impl<'a> ChannelStats<'a> {
    fn views(&self) -> ChannelViews<'a> {
        ChannelViews {
            mean: self.mean.as_view(),
            var: self.var.as_view(),
            gamma: self.gamma.map(CudaSlice::as_view),
            beta: self.beta.map(CudaSlice::as_view),
        }
    }
}

impl ChannelViews<'_> {
    fn channels(&self) -> Channels<'_, '_> {
        Channels { mean: &self.mean, var: &self.var, gamma: self.gamma.as_ref(), beta: self.beta.as_ref() }
    }
}
