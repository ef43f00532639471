//! Operands copied into the workspace at another pitch before a GEMM's kernels read them: the
//! sm_90a kernels' copies at a 128-byte pitch (`sm90::repitch_operands`), and the CUDA-core
//! kernels' copies of f32 operands that they could otherwise only read 4 bytes at a time
//! ([`PaddedF32`]). Both run `gemm_copy_rows`.

use std::mem::size_of;
use std::sync::Arc;

use super::plan::Family;
use super::spec::Gemm;
use super::BLOCK;
use crate::driver::{CudaStream, DeviceRepr, LaunchConfig};
use crate::error::Result;
use crate::kernels::{launch, Kernels};

/// One block of rows for `gemm_copy_rows` (`RowCopy` in cuda/gemm_simt.cu, the same layout):
/// `rows` rows of `width` bytes from device address `src` (rows `src_pitch` bytes apart) to `dst`
/// (rows `dst_pitch` bytes apart).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RowCopy {
    rows: i64,
    width: i64,
    src: u64,
    src_pitch: i64,
    dst: u64,
    dst_pitch: i64,
}

// SAFETY: six 8-byte numbers, as the CUDA struct (no padding on either side); every bit pattern is
// a valid value.
unsafe impl DeviceRepr for RowCopy {}

impl RowCopy {
    /// `rows` rows of `width` bytes from `(src, src_pitch)` to `(dst, dst_pitch)`.
    pub(super) fn new(
        (dst, dst_pitch): (u64, usize),
        (src, src_pitch): (u64, usize),
        width: usize,
        rows: usize,
    ) -> Self {
        let as_i64 = |v: usize| v as i64;
        RowCopy {
            rows: as_i64(rows),
            width: as_i64(width),
            src,
            src_pitch: as_i64(src_pitch),
            dst,
            dst_pitch: as_i64(dst_pitch),
        }
    }
}

/// Runs `first` and `second` (if any) in one launch of `gemm_copy_rows` (grid.y: the copy),
/// ordered on `stream`: one thread per 16-byte chunk of every row (cuMemcpy2DAsync moved these
/// pitches at 1.5 TB/s on an H100), as many blocks per copy as the longer copy needs.
///
/// # Safety
/// For each copy: both blocks lie in live device allocations, width and pitches are even, and
/// nothing else uses the destination until the copy is done; no copy's destination overlaps
/// another copy's source or destination.
pub(super) unsafe fn copy_rows(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    first: RowCopy,
    second: Option<RowCopy>,
) -> Result<()> {
    let chunks = |c: &RowCopy| c.rows.saturating_mul((c.width + 15) / 16);
    let most = second.as_ref().map_or(0, chunks).max(chunks(&first));
    let blocks = (most as usize).div_ceil(BLOCK as usize).clamp(1, kernels.multiprocessors() as usize * 16);
    let cfg = LaunchConfig {
        grid_dim: (blocks as u32, 1 + second.is_some() as u32, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let second = second.unwrap_or_default();
    // SAFETY: `(first, second)` as the kernel takes them, grid.y covering exactly the copies given
    // (an unused `second` is never read); the caller vouches for their blocks.
    unsafe { launch!(kernels, stream, "gemm_copy_rows", cfg, [&first, &second]) }
}

/// Copying pays when the product does at least this many multiply-adds per copied element, plus
/// [`PADDED_MIN_VOLUME`], over at least [`PADDED_MIN_DEPTH`] of k: the 64 x 128 and 64 x 64 kernels
/// ran 1.22-1.37x faster on 4-aligned twins of the sweep's odd shapes than on the odd ones (H100,
/// notes/simt-padded/); at about 40 TFLOP/s a quarter of the product's time saved must cover the
/// copy's 8 bytes per element at about 2.5 TB/s.
const PADDED_MADDS_PER_ELEMENT: u128 = 256;
/// ... and the copy's launch and ramp, about 2 us of a 40 TFLOP/s product's gain.
const PADDED_MIN_VOLUME: u128 = 160_000_000;
/// ... and only over this much depth: with few k steps the kernels are bound by C's stores, and the
/// copies cost 2881 x 1717 x 51 23% (H100); 793 x 2175 x 291 still gained 3%, 1107 x 1967 x 371 7%.
const PADDED_MIN_DEPTH: usize = 256;

/// f32 operands of a batch-1 product on the 64 x 128 or 64 x 64 CUDA-core kernels that those would
/// copy into shared memory 4 bytes at a time (a base address, leading dimension or row length that
/// is not a multiple of 16 bytes: `tiled_entry` in cuda/gemm_simt.cu), copied first into the
/// workspace at a pitch of a multiple of 4 elements, for the kernels' `_padded` entries; where the
/// product is large enough against the copied elements to pay for it. (The 128 x 256 kernel, whose
/// deeper k steps copy a quarter as much per multiply-add, gained nothing from the copies.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PaddedF32 {
    /// Each operand's copy pitch (elements), or `None` where it is read in place.
    pitch: [Option<usize>; 2],
}

/// What the kernels read once [`PaddedF32::copy`] has run: the GEMM with the copies' leading
/// dimensions, A's and B's addresses, and which of them are copies. Every operand then takes the
/// 16-byte copies: aligned, a pitch of a multiple of 4 elements, and rows of whole groups (an
/// operand read in place) or padded to them inside the workspace (a copy).
pub(super) struct Padded {
    /// The GEMM as the kernels read it.
    pub g: Gemm,
    /// Device addresses of A and B (or their copies).
    pub operands: [u64; 2],
    /// Which operands are copies whose rows are padded to whole 16-byte groups.
    pub padded: [bool; 2],
}

impl PaddedF32 {
    /// The copies worth making for `family` running the batch-1 f32 `g` on operands at device
    /// addresses `[A, B]`, or `None` (nothing to copy, or not worth it).
    pub(super) fn of(family: Family, g: &Gemm, [pa, pb]: [u64; 2]) -> Option<PaddedF32> {
        if !matches!(family, Family::Simt64 | Family::Simt64x64) || g.batch != 1 {
            return None;
        }
        let whole_groups = |addr: u64, ld: usize, cols: usize| addr % 16 == 0 && ld % 4 == 0 && cols % 4 == 0;
        let (a_cols, b_cols) = (g.a_dims().1, g.b_dims().1);
        let copy = [!whole_groups(pa, g.lda, a_cols), !whole_groups(pb, g.ldb, b_cols)];
        let pitch =
            [copy[0].then(|| a_cols.next_multiple_of(4)), copy[1].then(|| b_cols.next_multiple_of(4))];
        let copied =
            |dims: (usize, usize), pitch: Option<usize>| pitch.map_or(0, |p| dims.0 as u128 * p as u128);
        let elements = copied(g.a_dims(), pitch[0]) + copied(g.b_dims(), pitch[1]);
        let volume = g.m as u128 * g.n as u128 * g.k as u128;
        let worth = elements > 0
            && g.k >= PADDED_MIN_DEPTH
            && volume >= PADDED_MADDS_PER_ELEMENT * elements + PADDED_MIN_VOLUME;
        worth.then_some(PaddedF32 { pitch })
    }

    /// Which operands are copied (A, B).
    pub(super) fn copied(&self) -> [bool; 2] {
        self.pitch.map(|p| p.is_some())
    }

    /// Workspace bytes of the copies (A's region, then B's).
    pub(super) fn bytes(&self, g: &Gemm) -> usize {
        self.regions(g).iter().sum()
    }

    /// Bytes of each operand's region: its rows at the copy's pitch (0 when read in place).
    fn regions(&self, g: &Gemm) -> [usize; 2] {
        let region = |rows: usize, pitch: Option<usize>| pitch.map_or(0, |p| rows * p * size_of::<f32>());
        [region(g.a_dims().0, self.pitch[0]), region(g.b_dims().0, self.pitch[1])]
    }

    /// Copies the operands into the workspace at `base` (at least [`PaddedF32::bytes`] long) in
    /// one launch, ordered on `stream`, and returns what the kernels then read.
    ///
    /// # Safety
    /// `g` has passed `validate` for the operands at `[A, B]` (f32 elements), and the workspace at
    /// `base` is held by the caller until the kernels that read the copies are enqueued.
    pub(super) unsafe fn copy(
        &self,
        kernels: &Kernels,
        stream: &Arc<CudaStream>,
        g: &Gemm,
        [pa, pb]: [u64; 2],
        base: u64,
    ) -> Result<Padded> {
        let es = size_of::<f32>();
        let regions = self.regions(g);
        let mut read = Padded { g: *g, operands: [pa, pb], padded: [false; 2] };
        let mut copies = Vec::with_capacity(2);
        let dsts = [base, base + regions[0] as u64];
        for (i, ((rows, cols), src, ld)) in
            [(g.a_dims(), pa, g.lda), (g.b_dims(), pb, g.ldb)].into_iter().enumerate()
        {
            if let Some(pitch) = self.pitch[i] {
                copies.push(RowCopy::new((dsts[i], pitch * es), (src, ld * es), cols * es, rows));
                read.operands[i] = dsts[i];
                read.padded[i] = true;
                if i == 0 {
                    (read.g.lda, read.g.stride_a) = (pitch, rows * pitch);
                } else {
                    (read.g.ldb, read.g.stride_b) = (pitch, rows * pitch);
                }
            }
        }
        if let Some((&first, second)) = copies.split_first() {
            // SAFETY: each copy moves a validated stored f32 matrix (batch 1) into its own region of
            // the caller's workspace, sized for its rows at the copy's pitch; the regions overlap
            // neither each other nor the caller's buffers; widths and pitches are multiples of 4.
            unsafe { copy_rows(kernels, stream, first, second.first().copied()) }?;
        }
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::PaddedF32;
    use crate::kernels::gemm::plan::Family;
    use crate::kernels::gemm::spec::Gemm;

    #[test]
    fn only_operands_the_kernels_read_4_bytes_at_a_time_are_copied_and_only_when_it_pays() {
        let aligned = [0x1000, 0x2000];
        // 4-aligned everywhere: nothing to copy.
        assert_eq!(PaddedF32::of(Family::Simt64, &Gemm::new(2760, 2224, 2040), aligned), None);
        // Odd k: A's rows (k long) and B's (n long, whole groups) -> A alone.
        let odd_k = Gemm::new(2760, 2224, 2037);
        let plan = PaddedF32::of(Family::Simt64, &odd_k, aligned).expect("worth it");
        assert_eq!(plan.pitch, [Some(2040), None]);
        assert_eq!(plan.bytes(&odd_k), 2760 * 2040 * 4);
        // A misaligned base alone is enough to copy that operand.
        let plan = PaddedF32::of(Family::Simt64x64, &Gemm::new(2048, 2048, 2048), [0x1004, 0x2000])
            .expect("worth it");
        assert_eq!(plan.pitch, [Some(2048), None]);
        // The sweep's 2759 x 2223 x 2037: both.
        let odd = Gemm::new(2759, 2223, 2037);
        let plan = PaddedF32::of(Family::Simt64, &odd, aligned).expect("worth it");
        assert_eq!(plan.pitch, [Some(2040), Some(2224)]);
        assert_eq!(plan.bytes(&odd), (2759 * 2040 + 2037 * 2224) * 4);
        // Too little work per copied element: a vocabulary projection, a small product.
        assert_eq!(PaddedF32::of(Family::Simt64, &Gemm::new(128, 50257, 768), aligned), None);
        assert_eq!(PaddedF32::of(Family::Simt64, &Gemm::new(183, 103, 647), aligned), None);
        // Too shallow: C's stores bound the kernel (the sweep's 2881 x 1717 x 51).
        assert_eq!(PaddedF32::of(Family::Simt64, &Gemm::new(2881, 1717, 51), aligned), None);
        // Not the 64-row CUDA-core f32 kernels, or a batch: never.
        assert_eq!(PaddedF32::of(Family::Simt, &odd, aligned), None);
        assert_eq!(PaddedF32::of(Family::Small, &odd, aligned), None);
        assert_eq!(PaddedF32::of(Family::Mma, &odd, aligned), None);
        let batched = Gemm { batch: 2, stride_a: 2759 * 2037, stride_b: 0, stride_c: 2759 * 2223, ..odd };
        assert_eq!(PaddedF32::of(Family::Simt64, &batched, aligned), None);
    }
}
