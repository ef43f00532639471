// prism-targets: sm_90
// gemm_f64.cu's DMMA kernels built for sm_90 alone, as gemm_f64_sm90_dmma{,64,32,32x32}_{nn,nt,tn,tt} (the same
// arguments, tiles and launch). The launcher takes these on devices of compute capability 9.0 and newer, whose
// mma.m16n8k16 and m16n8k4 (.f64) gemm_f64.cu's PTX (compute_80's, eight m8n8k4 per k16 step) does not use:
// where the driver compiles that PTX (a build without nvcc, which embeds ptx/; a GPU newer than the fatbin's
// SASS), an H100 ran the DGEMM at about half the speed of this family.
#include "gemm_f64_dmma.cuh"

DMMA_LAYOUTS(gemm_f64_sm90_dmma, Dm128, 2)
DMMA_LAYOUTS(gemm_f64_sm90_dmma64, Dm64, 2)
DMMA_LAYOUTS(gemm_f64_sm90_dmma32, Dm32, 3)
DMMA_LAYOUTS(gemm_f64_sm90_dmma32x32, Dm32x32, 4)
