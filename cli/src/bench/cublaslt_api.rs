//! The cudarc `cublaslt` API as callers use it (a dense layer: `y = act(x·Wᵀ + bias)` through
//! `Matmul::matmul` with a bias and an activation), run on our kernels (`prism_gpu::cublaslt`) and
//! on the real cuBLASLt (`cudarc::cublaslt`, feature `bench-anchors`) in one process, plus our own
//! unfused sequence (the GEMM, then [`GpuOps::bias_act`](prism_gpu::runtime::GpuOps::bias_act)) as a second
//! anchor. Both engines run the *same caller code* (`caller!`). Results are compared with
//! cuBLASLt's before a figure is kept; times are medians of CUDA-event samples after warm-up.

use super::compare::{agree, Element};
use super::{teraflops, Row, Settings};
use prism_gpu::rng::SplitMix64;
use prism_gpu::{Error, Result};

/// The element type of a timed call (f32 runs TF32 products, as cudarc asks cuBLASLt for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// f32 data, TF32 products.
    Tf32,
    /// bf16 in and out, f32 accumulation.
    Bf16,
    /// f16 in and out, f32 accumulation.
    F16,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Tf32 => "tf32",
            Kind::Bf16 => "bf16",
            Kind::F16 => "f16",
        }
    }

    /// Relative Frobenius distance allowed between the two engines' outputs.
    fn tolerance(self) -> f64 {
        match self {
            Kind::Tf32 => 4e-3,
            Kind::Bf16 | Kind::F16 => 2e-2,
        }
    }
}

/// One timed call: row-major `y[m x n] = gelu(x[m x k] · op(W) + bias[n])`, W stored `n x k` and
/// used transposed (`weight_t`, a layer's weight) or stored `k x n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    /// Element type.
    pub kind: Kind,
    /// Rows of x and y (tokens).
    pub m: usize,
    /// Columns of y (output features).
    pub n: usize,
    /// The inner dimension.
    pub k: usize,
    /// W stored `n x k`.
    pub weight_t: bool,
}

impl Case {
    fn flops(&self) -> f64 {
        2.0 * (self.m * self.n * self.k) as f64
    }

    fn name(&self) -> String {
        let layout = if self.weight_t { " x·Wᵀ" } else { "" };
        format!("cublaslt {} {}x{}x{}{layout} bias+GELU", self.kind.label(), self.m, self.n, self.k)
    }
}

/// The shapes (4096³ and a BERT-base MLP projection over 8192 tokens) for each type.
pub fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for kind in [Kind::Bf16, Kind::F16, Kind::Tf32] {
        cases.push(Case { kind, m: 4096, n: 4096, k: 4096, weight_t: false });
        cases.push(Case { kind, m: 8192, n: 3072, k: 768, weight_t: true });
    }
    cases
}

/// Runs every case through both engines and our unfused sequence on device 0.
pub fn run(settings: Settings, cases: &[Case]) -> Result<Vec<Row>> {
    let side_err =
        |e: String| Error::Shape { op: "cublaslt bench", expected: "a working engine".into(), got: e };
    let ours = prism::Side::new().map_err(side_err)?;
    let real = real::Side::new();
    let mut rng = SplitMix64::from_time();
    let mut rows = Vec::new();
    for case in cases {
        let x = rng.vec(case.m * case.k, -1.0, 1.0);
        let w = rng.vec(case.k * case.n, -1.0, 1.0);
        let bias = rng.vec(case.n, -1.0, 1.0);
        let inner = ((5e9 / case.flops()) as usize).clamp(1, 100);
        let (fused_ms, ours_y) = ours.time(case, [&x, &w, &bias], settings, inner).map_err(side_err)?;
        let [plain_ms, unfused_ms] =
            ours.time_unfused(case, [&x, &w, &bias], settings, inner).map_err(side_err)?;
        let theirs =
            real.as_ref().map_err(Clone::clone).and_then(|r| r.time(case, [&x, &w, &bias], settings, inner));
        let tflops = |ms: f64| teraflops(case.flops() * inner as f64, ms);
        let anchor_value = match theirs {
            Ok((theirs_ms, theirs_y)) => {
                agree("cublaslt bench", &case.name(), "cuBLASLt", case.kind.tolerance(), &ours_y, &theirs_y)?;
                Some(tflops(theirs_ms))
            }
            Err(e) => {
                eprintln!("cublaslt bench: cuBLASLt {}: {e}", case.name());
                None
            }
        };
        let row = |anchor: &str, anchor_value| Row {
            group: "cublaslt".into(),
            name: case.name(),
            series: None,
            ours: tflops(fused_ms),
            anchor: anchor.into(),
            anchor_value,
            unit: "TFLOP/s".into(),
            higher_is_better: true,
            kernel: None,
        };
        rows.push(row("cuBLASLt", anchor_value));
        rows.push(row("ours unfused (GEMM, then bias_act)", Some(tflops(unfused_ms))));
        rows.push(row("ours GEMM alone (no bias, no GELU)", Some(tflops(plain_ms))));
    }
    Ok(rows)
}

/// The caller's code, written once against `$lt` (a crate's `cublaslt`) and `$drv` (its `driver`).
macro_rules! caller {
    ($lt:path, $drv:path) => {
        use std::sync::Arc;

        use half::{bf16, f16};

        use super::{Case, Element, Kind, Settings};
        use driver_api::sys::CUevent_flags;
        use driver_api::{CudaContext, CudaSlice, CudaStream, DeviceRepr};
        use lt_api::{Activation, CudaBlasLT, Matmul, MatmulConfig};
        use $drv as driver_api;
        use $lt as lt_api;

        pub type Res<T> = std::result::Result<T, String>;
        pub fn err(e: impl std::fmt::Debug) -> String {
            format!("{e:?}")
        }

        /// One engine on device 0.
        pub struct Side {
            pub stream: Arc<CudaStream>,
            lt: CudaBlasLT,
        }

        /// Column-major `yᵀ[n x m] = op(W)ᵀ · xᵀ`: W is cuBLASLt's A, x its B, the bias one
        /// value per row of yᵀ.
        pub fn config(case: &Case) -> MatmulConfig {
            let (m, n, k) = (case.m as u64, case.n as u64, case.k as u64);
            MatmulConfig {
                transa: case.weight_t,
                transb: false,
                transc: false,
                m: n,
                n: m,
                k,
                alpha: 1.0,
                lda: if case.weight_t { k } else { n } as i64,
                ldb: k as i64,
                beta: 0.0,
                ldc: n as i64,
                stride_a: None,
                stride_b: None,
                stride_c: None,
                stride_bias: None,
                batch_size: None,
            }
        }

        impl Side {
            pub fn new() -> Res<Self> {
                let stream = CudaContext::new(0).map_err(err)?.default_stream();
                let lt = CudaBlasLT::new(stream.clone()).map_err(err)?;
                Ok(Side { stream, lt })
            }

            /// x, W and the bias rounded to `T` on the device, and y uninitialised (beta is 0).
            pub fn operands<T: Element + DeviceRepr>(
                &self,
                case: &Case,
                [x, w, bias]: [&[f32]; 3],
            ) -> Res<[CudaSlice<T>; 4]> {
                let upload = |v: &[f32]| {
                    let v: Vec<T> = v.iter().map(|&e| T::from_f32(e)).collect();
                    self.stream.clone_htod(&v).map_err(err)
                };
                // SAFETY: with beta == 0 every call writes all of y before anything reads it.
                let y = unsafe { self.stream.alloc(case.m * case.n) }.map_err(err)?;
                Ok([upload(x)?, upload(w)?, upload(bias)?, y])
            }

            /// Median milliseconds of `inner` fused calls of `case`, and y.
            pub fn time(
                &self,
                case: &Case,
                inputs: [&[f32]; 3],
                settings: Settings,
                inner: usize,
            ) -> Res<(f64, Vec<f64>)> {
                match case.kind {
                    Kind::Tf32 => self.time_typed::<f32>(case, inputs, settings, inner),
                    Kind::Bf16 => self.time_typed::<bf16>(case, inputs, settings, inner),
                    Kind::F16 => self.time_typed::<f16>(case, inputs, settings, inner),
                }
            }

            fn time_typed<T: Element + DeviceRepr>(
                &self,
                case: &Case,
                inputs: [&[f32]; 3],
                settings: Settings,
                inner: usize,
            ) -> Res<(f64, Vec<f64>)>
            where
                CudaBlasLT: Matmul<T>,
            {
                let [x, w, bias, mut y] = self.operands::<T>(case, inputs)?;
                let cfg = config(case);
                let ms = median_ms(&self.stream, settings, inner, || {
                    // SAFETY: W, x and y hold the n x k (or k x n), m x k and m x n elements `config`
                    // describes, the bias n.
                    unsafe { self.lt.matmul(cfg, &w, &x, &mut y, Some(&bias), Some(&Activation::Gelu)) }
                        .map_err(err)
                })?;
                let y = self.stream.clone_dtoh(&y).map_err(err)?;
                Ok((ms, y.into_iter().map(Element::to_f64).collect()))
            }
        }

        super::super::compare::event_median_ms!();
    };
}

mod prism {
    //! The caller's code on our engine, and our unfused sequence.
    caller!(prism_gpu::cublaslt, prism_gpu::driver);

    use prism_gpu::raw::kernels::gemm::{self, FusedActivation, Gemm, Precision};
    use prism_gpu::raw::kernels::Kernels;

    impl Side {
        /// Median milliseconds of `inner` of our GEMMs alone into y (row-major, through the
        /// kernels' own API), and of `inner` unfused layers: that GEMM, then the bias and GELU as
        /// a separate pass.
        pub fn time_unfused(
            &self,
            case: &Case,
            inputs: [&[f32]; 3],
            settings: Settings,
            inner: usize,
        ) -> Res<[f64; 2]> {
            match case.kind {
                Kind::Tf32 => self.unfused::<f32>(case, inputs, settings, inner, Precision::Tf32),
                Kind::Bf16 => self.unfused::<bf16>(case, inputs, settings, inner, Precision::Bf16),
                Kind::F16 => self.unfused::<f16>(case, inputs, settings, inner, Precision::F16),
            }
        }

        fn unfused<T: Element + DeviceRepr + gemm::Element>(
            &self,
            case: &Case,
            inputs: [&[f32]; 3],
            settings: Settings,
            inner: usize,
            precision: Precision,
        ) -> Res<[f64; 2]> {
            let [x, w, bias, mut y] = self.operands::<T>(case, inputs)?;
            let kernels = Kernels::new(self.stream.context().clone()).map_err(err)?;
            let workspace = gemm::Workspace::default();
            let g =
                Gemm::new(case.m, case.n, case.k).transposed(false, case.weight_t).with_precision(precision);
            let mut layer = |with_pass: bool| {
                let mut out = y.as_view_mut();
                gemm::gemm(&kernels, &self.stream, &workspace, &g, &x.as_view(), &w.as_view(), &mut out)
                    .map_err(err)?;
                if with_pass {
                    let bias = bias.as_view();
                    let dims = (case.m, case.n);
                    gemm::bias_act(
                        &kernels,
                        &self.stream,
                        &mut out,
                        dims,
                        Some(&bias),
                        FusedActivation::Gelu,
                    )
                    .map_err(err)?;
                }
                Ok(())
            };
            let plain = median_ms(&self.stream, settings, inner, || layer(false))?;
            Ok([plain, median_ms(&self.stream, settings, inner, || layer(true))?])
        }
    }
}

#[cfg(feature = "bench-anchors")]
mod real {
    //! The caller's code on the real cuBLASLt (cudarc 0.19, libcublasLt loaded at run time).
    caller!(cudarc::cublaslt, cudarc::driver);
}

#[cfg(not(feature = "bench-anchors"))]
mod real {
    //! Without `bench-anchors` there is no real cuBLASLt: `Side::new` fails and rows carry no
    //! anchor.
    use super::{Case, Settings};

    /// No value exists: the method below can never be called.
    pub enum Side {}
    impl Side {
        pub fn new() -> std::result::Result<Self, String> {
            Err("built without the bench-anchors feature".into())
        }
        pub fn time(
            &self,
            _: &Case,
            _: [&[f32]; 3],
            _: Settings,
            _: usize,
        ) -> std::result::Result<(f64, Vec<f64>), String> {
            match *self {}
        }
    }
}
