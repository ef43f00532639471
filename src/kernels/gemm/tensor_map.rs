//! TMA tensor maps for the sm_90a kernels: one operand (a batch of row-major matrices) described
//! to `cuTensorMapEncodeTiled` and passed to the kernel by value.

use crate::driver::sys::{
    self, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave, CUtensorMapL2promotion,
    CUtensorMapSwizzle,
};
use crate::driver::{DeviceRepr, DriverError};
use crate::error::Result;

/// An encoded `CUtensorMap`: 128 opaque bytes, passed to a kernel by value with `.arg(&map)`.
#[derive(Clone, Copy)]
#[repr(C, align(128))]
pub struct TensorMap(sys::CUtensorMap);

// SAFETY: a plain 128-byte `#[repr(C)]` value with the alignment the kernels' `CUtensorMap`
// parameter has (`__grid_constant__`, 64 bytes at least); the driver copies it into the parameter
// space as bytes.
unsafe impl DeviceRepr for TensorMap {}

impl std::fmt::Debug for TensorMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TensorMap(..)")
    }
}

/// The element type of a tensor map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// bf16 elements.
    Bf16,
    /// f16 elements.
    F16,
    /// f32 elements (read as TF32 by the kernels).
    F32,
}

impl Dtype {
    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            Dtype::Bf16 | Dtype::F16 => 2,
            Dtype::F32 => 4,
        }
    }

    fn raw(self) -> CUtensorMapDataType {
        match self {
            Dtype::Bf16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            Dtype::F16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            Dtype::F32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        }
    }
}

/// A batch of `batch` row-major matrices of `rows` x `cols` elements at device address `base`,
/// rows `ld` elements apart, matrices `stride` elements apart, read in boxes of
/// `box_cols` x `box_rows` elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operand {
    /// Device address of the first element.
    pub base: u64,
    /// Element type.
    pub dtype: Dtype,
    /// Rows per matrix.
    pub rows: u64,
    /// Columns per matrix (the contiguous dimension).
    pub cols: u64,
    /// Elements between rows.
    pub ld: u64,
    /// Number of matrices.
    pub batch: u64,
    /// Elements between matrices (ignored for one matrix).
    pub stride: u64,
    /// Box width in elements (contiguous dimension).
    pub box_cols: u32,
    /// Box height in rows.
    pub box_rows: u32,
}

impl Operand {
    /// Whether TMA can read this operand: 16-byte aligned base, row pitch and (batched) matrix
    /// pitch multiples of 16 bytes, and batched matrices that do not overlap or are one matrix
    /// for every entry (stride 0, which the map encodes as it is: the driver accepts a zero
    /// stride, and every batch coordinate then reads the same matrix).
    pub fn tma_ready(base: u64, es: u64, rows: u64, ld: u64, batch: u64, stride: u64) -> bool {
        let pitch_ok = |elements: u64| (elements * es) % 16 == 0;
        base % 16 == 0
            && pitch_ok(ld)
            && (batch <= 1 || stride == 0 || (stride >= rows * ld && pitch_ok(stride)))
    }

    /// Encodes the map: rank 3 (columns, rows, batch), 128-byte swizzle, 256-byte L2 promotion,
    /// out-of-bounds elements read as zero (which is what lets any m, n, k work).
    #[doc(alias = "cuTensorMapEncodeTiled")]
    pub fn encode(&self) -> Result<TensorMap> {
        let es = self.dtype.size();
        let matrix_pitch = if self.batch > 1 { self.stride } else { self.ld * self.rows };
        let dims: [u64; 3] = [self.cols, self.rows, self.batch];
        let strides: [u64; 2] = [self.ld * es, matrix_pitch * es];
        let boxes: [u32; 3] = [self.box_cols, self.box_rows, 1];
        let element_strides: [u32; 3] = [1, 1, 1];
        let mut map = TensorMap(sys::CUtensorMap { opaque: [0; 16] });
        // SAFETY: `map` is a writable, 128-byte-aligned CUtensorMap; the dimension, stride, box and
        // element-stride arrays hold rank (3) and rank - 1 (2) entries as the function reads; the
        // address is only recorded in the map, not dereferenced.
        let result = unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map.0,
                self.dtype.raw(),
                3,
                self.base as *mut std::ffi::c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                element_strides.as_ptr(),
                CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
                CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        if result == sys::CUresult::CUDA_SUCCESS {
            Ok(map)
        } else {
            Err(DriverError(result).into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tma_needs_16_byte_pitches_and_whole_matrix_strides() {
        assert!(Operand::tma_ready(256, 2, 100, 64, 1, 0));
        assert!(!Operand::tma_ready(258, 2, 100, 64, 1, 0)); // base
        assert!(!Operand::tma_ready(256, 2, 100, 63, 1, 0)); // row pitch 126 bytes
        assert!(Operand::tma_ready(256, 4, 100, 4, 1, 0));
        assert!(!Operand::tma_ready(256, 4, 100, 6, 1, 0));
        assert!(Operand::tma_ready(256, 2, 100, 64, 3, 6400));
        assert!(Operand::tma_ready(256, 2, 100, 64, 3, 0)); // broadcast
        assert!(!Operand::tma_ready(256, 2, 100, 64, 3, 6300)); // overlapping
        assert!(!Operand::tma_ready(256, 2, 100, 64, 3, 6404)); // pitch 12808 bytes
    }

    #[test]
    fn the_map_is_128_bytes_and_aligned() {
        assert_eq!(std::mem::size_of::<TensorMap>(), 128);
        assert!(std::mem::align_of::<TensorMap>() >= 64);
    }
}
