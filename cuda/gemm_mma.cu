// Tensor-core GEMM for sm_80 .. sm_90 through mma.sync (ldmatrix / cp.async, 4-stage pipeline):
// BF16 and FP16 (m16n8k16) and TF32 (m16n8k8), f32 accumulation.
//
// C[m x n] (row-major, ldc) = alpha * op(A) * op(B) + beta * C; op(X) = X or X^T by the transA/transB flags
// (A: m x k row-major, or k x m when transA; B: k x n row-major, or n x k when transB). Any m, n, k >= 1.
// 16-byte cp.async loads when every base pointer, leading dimension and batch stride allows it; otherwise a
// slower element-wise load path (decided inside the kernel). Batch = gridDim.z. beta == 0 never reads C.
//
// Launch: grid (ceil(n/128), ceil(m/128), batch), block 256, dynamic shared memory GEMM_MMA_SMEM = 81920
// bytes (needs cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, 81920)).
#include "gemm_common.cuh"
#include <stdint.h>
#include <type_traits>

namespace {

constexpr int MM_BM = 128, MM_BN = 128, MM_THREADS = 256, MM_STAGES = 4;
constexpr int MM_SMEM = 81920;
constexpr int MM_PADM = 8;  // pad (elements) of rows that run along M or N

// KIND: 0 bf16, 1 f16, 2 tf32 (f32 storage).
template <int KIND> struct MmTraits {
    using T = typename std::conditional<KIND == 0, __nv_bfloat16, __half>::type;
    static constexpr int ES = 2, BK = 32, PADK = 8, V = 8;
};
template <> struct MmTraits<2> {
    using T = float;
    static constexpr int ES = 4, BK = 16, PADK = 4, V = 4;
};

// Copy a ROWS x COLS tile (COLS contiguous in global memory) into shared memory with row stride SST
// (elements). Rows >= row_lim and columns >= col_lim are zero-filled.
template <typename T, int ROWS, int COLS, int SST, int V, bool AL>
__device__ __forceinline__ void load_tile(T *s, const T *g, long long ld, int row0, int col0, int row_lim,
                                          int col_lim) {
    constexpr int CPR = COLS / V;  // 16-byte chunks per row
    constexpr int CHUNKS = ROWS * CPR;
    static_assert(CHUNKS % MM_THREADS == 0, "tile / thread mismatch");
#pragma unroll
    for (int i = 0; i < CHUNKS / MM_THREADS; ++i) {
        const int ch = threadIdx.x + i * MM_THREADS;
        const int r = ch / CPR, cc = (ch % CPR) * V;
        const int gr = row0 + r, gc = col0 + cc;
        T *dst = s + r * SST + cc;
        if (AL) {
            int bytes = 0;
            const T *src = g;
            if (gr < row_lim && gc < col_lim) {
                bytes = min(V, col_lim - gc) * (int)sizeof(T);
                src = g + (long long)gr * ld + gc;
            }
            cp_async16(s_u32(dst), src, bytes);
        } else {
            T v[V];
#pragma unroll
            for (int e = 0; e < V; ++e)
                v[e] = (gr < row_lim && gc + e < col_lim) ? g[(long long)gr * ld + gc + e] : from_f32<T>(0.f);
#pragma unroll
            for (int e = 0; e < V; ++e) dst[e] = v[e];
        }
    }
}

__device__ __forceinline__ void ldsm_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, uint32_t a) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(a));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, uint32_t a) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(a));
}
__device__ __forceinline__ void mma1688_tf32(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t to_tf32(float f) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
    return r;
}

template <int KIND, typename TO, bool TA, bool TB, bool AL>
__device__ __forceinline__ void mma_gemm(int m, int n, int k, float alpha,
                                         const typename MmTraits<KIND>::T *__restrict__ A, int lda,
                                         const typename MmTraits<KIND>::T *__restrict__ B, int ldb, float beta,
                                         TO *__restrict__ C, int ldc) {
    using Tr = MmTraits<KIND>;
    using T = typename Tr::T;
    constexpr int BK = Tr::BK, V = Tr::V;
    // Shared tiles: A is [BM][BK+PADK] (k contiguous) or [BK][BM+PADM] (m contiguous); B likewise.
    constexpr int SA = TA ? (MM_BM + MM_PADM) : (BK + Tr::PADK);
    constexpr int SB = TB ? (BK + Tr::PADK) : (MM_BN + MM_PADM);
    constexpr int A_ELEMS = TA ? BK * SA : MM_BM * SA;
    constexpr int B_ELEMS = TB ? MM_BN * SB : BK * SB;
    constexpr int STAGE = A_ELEMS + B_ELEMS;
    static_assert(MM_STAGES * STAGE * (int)sizeof(T) <= MM_SMEM, "smem");

    extern __shared__ __align__(16) uint8_t mm_smem_raw[];
    T *sm = reinterpret_cast<T *>(mm_smem_raw);

    const int m0 = blockIdx.y * MM_BM, n0 = blockIdx.x * MM_BN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / 4, wn = warp % 4;  // warp tile 64 x 32
    const int nk = (k + BK - 1) / BK;

    auto load_stage = [&](int slot, int kb) {
        T *sa = sm + slot * STAGE;
        T *sb = sa + A_ELEMS;
        const int k0 = kb * BK;
        if (TA) load_tile<T, BK, MM_BM, SA, V, AL>(sa, A, lda, k0, m0, k, m);
        else load_tile<T, MM_BM, BK, SA, V, AL>(sa, A, lda, m0, k0, m, k);
        if (TB) load_tile<T, MM_BN, BK, SB, V, AL>(sb, B, ldb, n0, k0, n, k);
        else load_tile<T, BK, MM_BN, SB, V, AL>(sb, B, ldb, k0, n0, k, n);
    };

    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

#pragma unroll
    for (int s = 0; s < MM_STAGES - 1; ++s) {
        if (s < nk) load_stage(s, s);
        cp_commit();
    }

    const int g = lane / 4, t = lane % 4;
    const int q = lane / 8, r8 = lane % 8;

    for (int kb = 0; kb < nk; ++kb) {
        cp_wait<MM_STAGES - 2>();
        __syncthreads();
        {
            const int nkb = kb + MM_STAGES - 1;
            if (nkb < nk) load_stage(nkb % MM_STAGES, nkb);
            cp_commit();
        }
        const T *sa = sm + (kb % MM_STAGES) * STAGE;
        const T *sb = sa + A_ELEMS;
        if constexpr (KIND != 2) {
#pragma unroll
            for (int kk = 0; kk < BK; kk += 16) {
                uint32_t af[4][4], bf[4][2];
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int mb = wm * 64 + i * 16;
                    if (!TA) {
                        const T *p = sa + (mb + (q & 1) * 8 + r8) * SA + kk + (q >> 1) * 8;
                        ldsm_x4(af[i][0], af[i][1], af[i][2], af[i][3], s_u32(p));
                    } else {
                        const T *p = sa + (kk + (q >> 1) * 8 + r8) * SA + mb + (q & 1) * 8;
                        ldsm_x4_t(af[i][0], af[i][1], af[i][2], af[i][3], s_u32(p));
                    }
                }
#pragma unroll
                for (int jj = 0; jj < 2; ++jj) {
                    const int nb = wn * 32 + jj * 16;
                    if (TB) {
                        const T *p = sb + (nb + (q >> 1) * 8 + r8) * SB + kk + (q & 1) * 8;
                        ldsm_x4(bf[2 * jj][0], bf[2 * jj][1], bf[2 * jj + 1][0], bf[2 * jj + 1][1], s_u32(p));
                    } else {
                        const T *p = sb + (kk + (q & 1) * 8 + r8) * SB + nb + (q >> 1) * 8;
                        ldsm_x4_t(bf[2 * jj][0], bf[2 * jj][1], bf[2 * jj + 1][0], bf[2 * jj + 1][1], s_u32(p));
                    }
                }
#pragma unroll
                for (int i = 0; i < 4; ++i)
#pragma unroll
                    for (int j = 0; j < 4; ++j) mma16816<KIND>(acc[i][j], af[i], bf[j][0], bf[j][1]);
            }
        } else {
#pragma unroll
            for (int kk = 0; kk < BK; kk += 8) {
                uint32_t af[4][4], bf[4][2];
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int mr = wm * 64 + i * 16 + g;
                    if (!TA) {
                        af[i][0] = to_tf32(sa[mr * SA + kk + t]);
                        af[i][1] = to_tf32(sa[(mr + 8) * SA + kk + t]);
                        af[i][2] = to_tf32(sa[mr * SA + kk + t + 4]);
                        af[i][3] = to_tf32(sa[(mr + 8) * SA + kk + t + 4]);
                    } else {
                        af[i][0] = to_tf32(sa[(kk + t) * SA + mr]);
                        af[i][1] = to_tf32(sa[(kk + t) * SA + mr + 8]);
                        af[i][2] = to_tf32(sa[(kk + t + 4) * SA + mr]);
                        af[i][3] = to_tf32(sa[(kk + t + 4) * SA + mr + 8]);
                    }
                }
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const int nc = wn * 32 + j * 8 + g;
                    if (TB) {
                        bf[j][0] = to_tf32(sb[nc * SB + kk + t]);
                        bf[j][1] = to_tf32(sb[nc * SB + kk + t + 4]);
                    } else {
                        bf[j][0] = to_tf32(sb[(kk + t) * SB + nc]);
                        bf[j][1] = to_tf32(sb[(kk + t + 4) * SB + nc]);
                    }
                }
#pragma unroll
                for (int i = 0; i < 4; ++i)
#pragma unroll
                    for (int j = 0; j < 4; ++j) mma1688_tf32(acc[i][j], af[i], bf[j][0], bf[j][1]);
            }
        }
    }
    cp_wait<0>();

    // Epilogue. acc[i][j][2h + e]: column j * 8 + 2t + e of the warp's 32.
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = m0 + wm * 64 + i * 16 + g + h * 8;
            if (row >= m) continue;
            TO *crow = C + (long long)row * ldc;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int col = n0 + wn * 32 + j * 8 + 2 * t;
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    if (col + e < n) {
                        float v = alpha * acc[i][j][2 * h + e];
                        if (beta != 0.f) v += beta * to_f32<TO>(crow[col + e]);
                        crow[col + e] = from_f32<TO>(v);
                    }
                }
            }
        }
    }
}

template <int KIND, typename TO>
__device__ __forceinline__ void mma_entry(int m, int n, int k, float alpha, const typename MmTraits<KIND>::T *A,
                                          int lda, long long strideA, int transA,
                                          const typename MmTraits<KIND>::T *B, int ldb, long long strideB,
                                          int transB, float beta, TO *C, int ldc, long long strideC) {
    using T = typename MmTraits<KIND>::T;
    const long long z = blockIdx.z;
    A += z * strideA;
    B += z * strideB;
    C += z * strideC;
    // 16-byte path only when every row start of every batch entry is 16-byte aligned.
    const bool al = rows_aligned<16>(A, lda) && rows_aligned<16>(B, ldb);
    if (al) {
        if (transA) {
            if (transB) mma_gemm<KIND, TO, true, true, true>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
            else mma_gemm<KIND, TO, true, false, true>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        } else {
            if (transB) mma_gemm<KIND, TO, false, true, true>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
            else mma_gemm<KIND, TO, false, false, true>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        }
    } else {
        if (transA) {
            if (transB) mma_gemm<KIND, TO, true, true, false>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
            else mma_gemm<KIND, TO, true, false, false>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        } else {
            if (transB) mma_gemm<KIND, TO, false, true, false>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
            else mma_gemm<KIND, TO, false, false, false>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        }
    }
}

}  // namespace

#define MMA_ENTRY(NAME, KIND, TIN, TO)                                                                           \
    PRISM_KERNEL void __launch_bounds__(256)                                                                    \
        NAME(int m, int n, int k, float alpha, const TIN *A, int lda, long long strideA, int transA,            \
             const TIN *B, int ldb, long long strideB, int transB, float beta, TO *C, int ldc, long long strideC) { \
        mma_entry<KIND, TO>(m, n, k, alpha, A, lda, strideA, transA, B, ldb, strideB, transB, beta, C, ldc,     \
                            strideC);                                                                           \
    }

MMA_ENTRY(gemm_mma_bf16_bf16, 0, __nv_bfloat16, __nv_bfloat16)
MMA_ENTRY(gemm_mma_bf16_f32, 0, __nv_bfloat16, float)
MMA_ENTRY(gemm_mma_f16_f16, 1, __half, __half)
MMA_ENTRY(gemm_mma_f16_f32, 1, __half, float)
MMA_ENTRY(gemm_mma_tf32_f32, 2, float, float)
