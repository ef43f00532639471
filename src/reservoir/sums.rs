//! The readout's sums over a sequence, in blocks: over the features `z = [1; u; x]`, the Gram
//! matrix `Σ z zᵀ` and the cross products `Σ z yᵀ` split into the input blocks (`[1; u]`, summed on
//! the host, they are tiny) and the state blocks (summed by f64 GEMMs on the states of each chunk,
//! on the device or the CPU). Several reservoirs driven by the same inputs share the input blocks.

use std::sync::Arc;

use super::Readout;
use crate::driver::{CudaSlice, CudaStream};
use crate::error::Result;
use crate::kernels::convert;
use crate::kernels::gemm::{Gemm, GemmF64};
use crate::runtime::GpuOps;

/// The blocks of the sums of `b` reservoirs of `n` units, `h = 1 + d` input features and `o`
/// outputs: `uu` `[h, h]`, `uy` `[h, o]`, `ux` `[h, b * n]`, `xx` `[b, n, n]`, `xy` `[b * n, o]`.
#[derive(Debug, Clone)]
pub struct Sums {
    h: usize,
    n: usize,
    o: usize,
    b: usize,
    uu: Vec<f64>,
    uy: Vec<f64>,
    /// `Σ [1; u] xᵀ` of every member.
    pub ux: Vec<f64>,
    /// `Σ x xᵀ` of every member.
    pub xx: Vec<f64>,
    /// `Σ x yᵀ` of every member.
    pub xy: Vec<f64>,
}

impl Sums {
    /// Zero sums (`b * n * n` checked by the caller).
    pub fn new(d: usize, n: usize, o: usize, b: usize) -> Self {
        let h = 1 + d;
        Self {
            h,
            n,
            o,
            b,
            uu: vec![0.0; h * h],
            uy: vec![0.0; h * o],
            ux: vec![0.0; h * b * n],
            xx: vec![0.0; b * n * n],
            xy: vec![0.0; b * n * o],
        }
    }

    /// The GEMMs that add a chunk of `k` steps to the state blocks, for states stored `[k, b * n]`
    /// (f64), inputs `[k, h]` and targets `[k, o]`: `xx += Sᵀ S` (batched over the members),
    /// `ux += Hᵀ S`, `xy += Sᵀ Y`.
    pub fn gemms(&self, k: usize) -> [GemmF64; 3] {
        let (h, n, o, b) = (self.h, self.n, self.o, self.b);
        let xx =
            Gemm::new(n, n, k).transposed(true, false).leading_dims(b * n, b * n, n).batched(b, n, n, n * n);
        let ux = Gemm::new(h, b * n, k).transposed(true, false);
        let xy = Gemm::new(b * n, o, k).transposed(true, false);
        [xx, ux, xy].map(|g| g.with_f64_scales(1.0, 1.0))
    }

    /// The chunk of `rows` steps from step `first` past the first `warmup` steps: `None` when it
    /// is all warmup, else its length `k`, its inputs `[1; u]` (`[k, h]`) and targets (`[k, o]`)
    /// in f64, whose input blocks are added here.
    pub fn heads(
        &mut self,
        inputs: &[f32],
        targets: &[f32],
        first: usize,
        rows: usize,
        warmup: usize,
    ) -> Option<(usize, Vec<f64>, Vec<f64>)> {
        let (h, o) = (self.h, self.o);
        let d = h - 1;
        let skip = warmup.saturating_sub(first).min(rows);
        let (k, from, to) = (rows - skip, first + skip, first + rows);
        if k == 0 {
            return None;
        }
        let mut heads = Vec::with_capacity(k * h);
        for u in inputs[from * d..to * d].chunks_exact(d) {
            heads.push(1.0);
            heads.extend(u.iter().map(|&v| f64::from(v)));
        }
        let y: Vec<f64> = targets[from * o..to * o].iter().map(|&v| f64::from(v)).collect();
        for (z, t) in heads.chunks_exact(h).zip(y.chunks_exact(o)) {
            for (i, &zi) in z.iter().enumerate() {
                for (acc, &zj) in self.uu[i * h..(i + 1) * h].iter_mut().zip(z) {
                    *acc += zi * zj;
                }
                for (acc, &tp) in self.uy[i * o..(i + 1) * o].iter_mut().zip(t) {
                    *acc += zi * tp;
                }
            }
        }
        Some((k, heads, y))
    }

    /// Member `m`'s Gram matrix `[F, F]` and cross products `[F, o]` over `[1; u; x]`.
    pub fn assemble(&self, m: usize) -> (Vec<f64>, Vec<f64>) {
        let (h, n, o, bn) = (self.h, self.n, self.o, self.b * self.n);
        let f = h + n;
        let mut gram = vec![0.0; f * f];
        let mut cross = vec![0.0; f * o];
        for i in 0..f {
            for j in 0..f {
                gram[i * f + j] = match (i < h, j < h) {
                    (true, true) => self.uu[i * h + j],
                    (true, false) => self.ux[i * bn + m * n + j - h],
                    (false, true) => self.ux[j * bn + m * n + i - h],
                    (false, false) => self.xx[m * n * n + (i - h) * n + j - h],
                };
            }
            for p in 0..o {
                cross[i * o + p] = if i < h { self.uy[i * o + p] } else { self.xy[(m * n + i - h) * o + p] };
            }
        }
        (gram, cross)
    }
}

/// The state blocks of [`Sums`] on the device, accumulated in f64 chunk by chunk (so memory does not
/// grow with the sequence), and the chunk's states widened to f64 for the products.
pub struct DeviceSums {
    xx: CudaSlice<f64>,
    ux: CudaSlice<f64>,
    xy: CudaSlice<f64>,
    states: CudaSlice<f64>,
    /// State columns a step: every member's `n`.
    width: usize,
}

impl DeviceSums {
    /// Zero sums shaped as `sums`, for chunks of at most `chunk_rows` steps.
    pub fn new(stream: &Arc<CudaStream>, sums: &Sums, chunk_rows: usize) -> Result<Self> {
        let width = sums.b * sums.n;
        Ok(Self {
            xx: stream.alloc_zeros(sums.xx.len())?,
            ux: stream.alloc_zeros(sums.ux.len())?,
            xy: stream.alloc_zeros(sums.xy.len())?,
            states: stream.alloc_zeros(chunk_rows * width)?,
            width,
        })
    }

    /// Adds the chunk of `rows` states (`[rows, width]`, f32) that starts at step `first`, less
    /// the warmup; the input blocks go to `sums` on the host.
    #[allow(clippy::too_many_arguments)] // a chunk, its sequence and where it stands in it
    pub fn add(
        &mut self,
        g: &GpuOps,
        sums: &mut Sums,
        states: &CudaSlice<f32>,
        inputs: &[f32],
        targets: &[f32],
        first: usize,
        rows: usize,
        warmup: usize,
    ) -> Result<()> {
        let Some((k, heads, y)) = sums.heads(inputs, targets, first, rows, warmup) else {
            return Ok(());
        };
        let (w, skip) = (self.width, rows - k);
        convert::f32_to_f64(
            g.kernels(),
            g.stream(),
            &states.slice(skip * w..rows * w),
            &mut self.states.slice_mut(..k * w),
        )?;
        let (sv, hd, yd) = (self.states.slice(..k * w), g.upload(&heads)?, g.upload(&y)?);
        let [xx, ux, xy] = sums.gemms(k);
        g.gemm_f64(&xx, &sv, &sv, &mut self.xx.as_view_mut())?;
        g.gemm_f64(&ux, &hd.as_view(), &sv, &mut self.ux.as_view_mut())?;
        g.gemm_f64(&xy, &sv, &yd.as_view(), &mut self.xy.as_view_mut())
    }

    /// Copies the state blocks into `sums`.
    pub fn download(&self, stream: &Arc<CudaStream>, sums: &mut Sums) -> Result<()> {
        (sums.xx, sums.ux, sums.xy) =
            (stream.clone_dtoh(&self.xx)?, stream.clone_dtoh(&self.ux)?, stream.clone_dtoh(&self.xy)?);
        Ok(())
    }
}

/// The state part of `b` members' predictions for a chunk of `rows` steps, batched:
/// `Y_m = S_m W_x,mᵀ` with the states `[rows, b * n]`, the readouts `[b, o, 1 + d + n]` read from
/// their column `1 + d` on, and `Y` `[b, rows, o]`.
pub fn state_part_gemm(rows: usize, o: usize, n: usize, d: usize, b: usize) -> Gemm {
    let f = 1 + d + n;
    Gemm::new(rows, o, n).transposed(false, true).leading_dims(b * n, f, o).batched(b, n, o * f, rows * o)
}

/// Adds the input part `W_u [1; u]` of `readout` to the predictions `y` (`[rows, o]`) of the steps
/// `inputs` (`[rows, d]`).
pub fn add_input_part(readout: &Readout, d: usize, inputs: &[f32], y: &mut [f32]) {
    let o = readout.outputs;
    let f = readout.w_out.len() / o;
    for (u, yt) in inputs.chunks_exact(d).zip(y.chunks_exact_mut(o)) {
        for (p, v) in yt.iter_mut().enumerate() {
            let w = &readout.w_out[p * f..p * f + 1 + d];
            *v += w[0] + w[1..].iter().zip(u).map(|(a, b)| a * b).sum::<f32>();
        }
    }
}
