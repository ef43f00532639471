//! Conversions between f32, f16, bf16 and f64 on host slices: round to nearest even, GPU and
//! CPU bit-identical.

use half::{bf16, f16};

use super::ProductionGpuRuntime;
use crate::error::Result;
use crate::ops::convert;

impl ProductionGpuRuntime {
    /// `x` as f16 (round to nearest even; beyond ±65504 infinity). Bit-identical on GPU and CPU.
    pub fn f32_to_f16(&self, x: &[f32]) -> Result<Vec<f16>> {
        self.map(convert::F32_TO_F16, [x])
    }

    /// `x` as f32 (exact).
    pub fn f16_to_f32(&self, x: &[f16]) -> Result<Vec<f32>> {
        self.map(convert::F16_TO_F32, [x])
    }

    /// `x` as bf16 (round to nearest even). Bit-identical on GPU and CPU.
    pub fn f32_to_bf16(&self, x: &[f32]) -> Result<Vec<bf16>> {
        self.map(convert::F32_TO_BF16, [x])
    }

    /// `x` as f32 (exact).
    pub fn bf16_to_f32(&self, x: &[bf16]) -> Result<Vec<f32>> {
        self.map(convert::BF16_TO_F32, [x])
    }

    /// `x` as f64 (exact).
    pub fn f32_to_f64(&self, x: &[f32]) -> Result<Vec<f64>> {
        self.map(convert::F32_TO_F64, [x])
    }
}
