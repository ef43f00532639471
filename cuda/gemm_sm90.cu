// prism-targets: sm_90a
// Hopper GEMM: TMA (cp.async.bulk.tensor, 128B swizzle) -> mbarrier ring -> wgmma, warp-specialised
// (1 producer warpgroup + 2 consumer warpgroups, setmaxnreg), persistent over output tiles.
//
// C[m x n] (row-major, ldc) = alpha * op(A) * op(B) + beta * C, f32 accumulation, or the fused epilogue of
// gemm_common.cuh (bias, ReLU, GELU) when one is passed.
// A and B are read through CUtensorMaps encoded on the host (see notes/gemm.md for the exact encoding);
// out-of-range rows/columns/k are zero-filled by TMA, so any m, n, k >= 1 works. Batch = gridDim.z.
// beta == 0 never reads C.
#include "gemm_common.cuh"
#include <cuda.h>
#include <stdint.h>
#include "gemm_wgmma.cuh"

namespace {

constexpr int SM90_BM = 128;       // two consumer warpgroups x 64 rows
constexpr int SM90_GROUP_M = 16;   // tile raster: groups of 16 M-tiles walk along N

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    } while (!done);
}
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap *map, int c0, int c1, int c2,
                                            uint32_t bar) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, "
        "%4}], [%5];" ::"r"(dst),
        "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
        : "memory");
}
// Tile `tile` of the persistent walk: groups of SM90_GROUP_M row tiles walk along the columns together.
__device__ __forceinline__ void tile_coords(int tile, int tiles_m, int tiles_n, int &tm, int &tn) {
    const int per_group = SM90_GROUP_M * tiles_n;
    const int first_m = tile / per_group * SM90_GROUP_M;
    const int gsz = min(tiles_m - first_m, SM90_GROUP_M);
    tm = first_m + (tile % per_group) % gsz;
    tn = (tile % per_group) / gsz;
}
// wgmma shared-memory descriptor, 128-byte swizzle.
__device__ __forceinline__ uint64_t sdesc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
template <int R>
__device__ __forceinline__ void reg_fence(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int R>
__device__ __forceinline__ void reg_fence(uint32_t (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

// Element kinds: 0 = bf16, 1 = f16, 2 = tf32 (f32 storage).
template <int KIND, int BN, int TA, int TB>
__device__ __forceinline__ void wgmma_step(float (&d)[BN / 2], uint64_t da, uint64_t db, int scale_d) {
    // wgmma's transpose immediates mean "MN-major": A stored k x m (TA = 1) is MN-major; B stored k x n
    // (TB = 0, the plain row-major case) is MN-major, B stored n x k (TB = 1) is K-major.
    constexpr int IA = TA, IB = 1 - TB;
    static_assert(BN == 64 || BN == 128 || BN == 256 || (BN == 192 && KIND != 2), "no wgmma wrapper for this width");
    if constexpr (KIND == 0) {
        if constexpr (BN == 256) wgmma_bf16_n256<IA, IB>(d, da, db, scale_d);
        else if constexpr (BN == 192) wgmma_bf16_n192<IA, IB>(d, da, db, scale_d);
        else if constexpr (BN == 128) wgmma_bf16_n128<IA, IB>(d, da, db, scale_d);
        else wgmma_bf16_n64<IA, IB>(d, da, db, scale_d);
    } else if constexpr (KIND == 1) {
        if constexpr (BN == 256) wgmma_f16_n256<IA, IB>(d, da, db, scale_d);
        else if constexpr (BN == 192) wgmma_f16_n192<IA, IB>(d, da, db, scale_d);
        else if constexpr (BN == 128) wgmma_f16_n128<IA, IB>(d, da, db, scale_d);
        else wgmma_f16_n64<IA, IB>(d, da, db, scale_d);
    } else {
        if constexpr (BN == 256) wgmma_tf32_n256(d, da, db, scale_d);
        else if constexpr (BN == 128) wgmma_tf32_n128(d, da, db, scale_d);
        else wgmma_tf32_n64(d, da, db, scale_d);
    }
}

// TF32, A from registers (this thread's four fragment values at `a`), B from shared memory.
template <int BN>
__device__ __forceinline__ void wgmma_tf32_rs_step(float (&d)[BN / 2], const uint32_t *a, uint64_t db, int scale_d) {
    if constexpr (BN == 256) wgmma_tf32_rs_n256(d, a[0], a[1], a[2], a[3], db, scale_d);
    else if constexpr (BN == 128) wgmma_tf32_rs_n128(d, a[0], a[1], a[2], a[3], db, scale_d);
    else wgmma_tf32_rs_n64(d, a[0], a[1], a[2], a[3], db, scale_d);
}

template <typename T> struct Pair;
template <> struct Pair<float> { using type = float2; };
template <> struct Pair<__nv_bfloat16> { using type = __nv_bfloat162; };
template <> struct Pair<__half> { using type = __half2; };

template <typename TO>
__device__ __forceinline__ void store_pair(TO *c, int ldc, int row, int col, int m, int n, float v0, float v1,
                                           float alpha, float beta, bool pair_ok) {
    if (row >= m) return;
    TO *p = c + (long long)row * ldc + col;
    if (pair_ok && col + 1 < n) {
        using P = typename Pair<TO>::type;
        float r0 = alpha * v0, r1 = alpha * v1;
        if (beta != 0.f) {
            P old = *reinterpret_cast<const P *>(p);
            r0 += beta * to_f32<TO>(old.x);
            r1 += beta * to_f32<TO>(old.y);
        }
        P o;
        o.x = from_f32<TO>(r0);
        o.y = from_f32<TO>(r1);
        *reinterpret_cast<P *>(p) = o;
    } else {
        if (col < n) {
            float r = alpha * v0;
            if (beta != 0.f) r += beta * to_f32<TO>(p[0]);
            p[0] = from_f32<TO>(r);
        }
        if (col + 1 < n) {
            float r = alpha * v1;
            if (beta != 0.f) r += beta * to_f32<TO>(p[1]);
            p[1] = from_f32<TO>(r);
        }
    }
}

// Four consecutive f32 outputs C[row][col .. col+3] = alpha * v + beta * C: one 16-byte access when the whole
// quad is in range and aligned.
__device__ __forceinline__ void store_quad(float *c, int ldc, int row, int col, int m, int n, float (&v)[4],
                                           float alpha, float beta, bool vec_ok) {
    if (row >= m) return;
    float *p = c + (long long)row * ldc + col;
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] *= alpha;
    if (vec_ok && col + 3 < n) {
        if (beta != 0.f) {
            const float4 o = *reinterpret_cast<const float4 *>(p);
            v[0] = fmaf(beta, o.x, v[0]);
            v[1] = fmaf(beta, o.y, v[1]);
            v[2] = fmaf(beta, o.z, v[2]);
            v[3] = fmaf(beta, o.w, v[3]);
        }
        *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            if (col + e < n) p[e] = beta != 0.f ? fmaf(beta, p[e], v[e]) : v[e];
        }
    }
}
// A consumer's 64 x BN accumulators (accumulator 4j + 2h + e: row row0 + 8h, column col0 + 8j + 2t + e) stored to
// f32 C as scale * acc + beta * C. One exchange with lane t^1 per pair of blocks gives every lane 4 consecutive
// columns (even t: block j, columns 2t..2t+3; odd t: block j+1, columns 2(t-1)..), so a warp's store covers 8 rows
// x 64 contiguous bytes.
template <int BN>
__device__ __forceinline__ void store_tile_f32(float *c, int ldc, int row0, int col0, int m, int n,
                                               const float (&d)[BN / 2], float scale, float beta, int t, bool vec_ok) {
    const bool odd = t & 1;
#pragma unroll
    for (int jp = 0; jp < BN / 16; ++jp) {
        const int j = 2 * jp;
        const int col = col0 + 8 * j + (odd ? 8 + 2 * (t - 1) : 2 * t);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const float a0 = d[4 * j + 2 * h], a1 = d[4 * j + 2 * h + 1];          // block j
            const float b0 = d[4 * j + 4 + 2 * h], b1 = d[4 * j + 4 + 2 * h + 1];  // block j+1
            const float s0 = __shfl_xor_sync(0xffffffffu, odd ? a0 : b0, 1);
            const float s1 = __shfl_xor_sync(0xffffffffu, odd ? a1 : b1, 1);
            float v[4];
            if (!odd) { v[0] = a0; v[1] = a1; v[2] = s0; v[3] = s1; }
            else { v[0] = s0; v[1] = s1; v[2] = b0; v[3] = b1; }
            store_quad(c, ldc, row0 + 8 * h, col, m, n, v, scale, beta, vec_ok);
        }
    }
}

// 16-bit C. Lane t of a quad holds columns 8b + 2t, +1 of each 8-wide block b; each such pair, rounded once to
// C's type, is one 32-bit word. w[b] of lane t is item (t, b) of the quad; after this transpose (two exchanges
// with lane t^2 for the items whose block differs from t in bit 1, then two with t^1 for bit 0) w[e] is item
// (e, t): lane t holds all 8 columns of block t.
__device__ __forceinline__ void quad_transpose(uint32_t (&w)[4], int t) {
    const bool hi = t & 2, lo = t & 1;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const uint32_t got = __shfl_xor_sync(0xffffffffu, hi ? w[r] : w[2 + r], 2);
        if (hi) w[r] = got; else w[2 + r] = got;
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const uint32_t got = __shfl_xor_sync(0xffffffffu, lo ? w[2 * r] : w[2 * r + 1], 1);
        if (lo) w[2 * r] = got; else w[2 * r + 1] = got;
    }
}
// Two values rounded to C's 16-bit type, the first in the low half.
template <typename TO> __device__ __forceinline__ uint32_t pack_pair(float lo, float hi) {
    typename Pair<TO>::type p;
    if constexpr (std::is_same<TO, __half>::value) p = __floats2half2_rn(lo, hi);
    else p = __floats2bfloat162_rn(lo, hi);
    uint32_t w;
    memcpy(&w, &p, sizeof w);
    return w;
}
// C[row][col .. col+7] (16-bit) from the four words w: one 16-byte or two 8-byte stores as `align` (the largest
// power of two, at most 16, dividing C's address and row pitch in bytes) allows when all 8 columns are in range,
// else one element at a time (as the 4-column layout did below 8 bytes; a 4-byte path made the PTX 80% larger).
template <typename TO>
__device__ __forceinline__ void store_octet(TO *c, int ldc, int row, int col, int m, int n, const uint32_t (&w)[4],
                                            int align) {
    if (row >= m) return;
    TO *p = c + (long long)row * ldc + col;
    if (col + 7 < n && align >= 8) {
        if (align == 16) {
            *reinterpret_cast<uint4 *>(p) = make_uint4(w[0], w[1], w[2], w[3]);
        } else {
            reinterpret_cast<uint2 *>(p)[0] = make_uint2(w[0], w[1]);
            reinterpret_cast<uint2 *>(p)[1] = make_uint2(w[2], w[3]);
        }
    } else {
#pragma unroll
        for (int e = 0; e < 8; ++e)
            if (col + e < n) reinterpret_cast<uint16_t *>(p)[e] = (uint16_t)(w[e / 2] >> (16 * (e % 2)));
    }
}
// C[row][col + 8b .. col + 8b + 1] (16-bit) from w[b], b = 0..3, where the accumulators hold them: one 4-byte store
// per pair when `align` allows, else one element at a time.
template <typename TO>
__device__ __forceinline__ void store_pairs(TO *c, int ldc, int row, int col, int m, int n, const uint32_t (&w)[4],
                                           int align) {
    if (row >= m) return;
    TO *p = c + (long long)row * ldc + col;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
        if (col + 8 * b + 1 < n && align >= 4) {
            reinterpret_cast<uint32_t *>(p + 8 * b)[0] = w[b];
        } else {
            if (col + 8 * b < n) reinterpret_cast<uint16_t *>(p + 8 * b)[0] = (uint16_t)w[b];
            if (col + 8 * b + 1 < n) reinterpret_cast<uint16_t *>(p + 8 * b)[1] = (uint16_t)(w[b] >> 16);
        }
    }
}
// A consumer's 64 x BN accumulators stored to 16-bit C as scale * acc + beta * C, rounded once (accumulator
// 4j + 2h + e: row row0 + 8h, column col0 + 8j + 2t + e). Each lane packs its pairs, the quad transposes them
// and each lane stores 8 consecutive columns, so a warp's store covers 8 rows x 64 contiguous bytes: half the
// stores of store_quad's 4-column layout, which held the 16-bit products whose time is their stores (k <= 256)
// near 0.66-0.73x cuBLAS. beta != 0 reads C's pairs before packing.
template <typename TO, int BN>
__device__ __forceinline__ void store_tile_16bit(TO *c, int ldc, int row0, int col0, int m, int n,
                                                 const float (&d)[BN / 2], float scale, float beta, int t, int align) {
    // The pairs of row half h in blocks 4q .. 4q + 3, rounded once to C's type (beta read first).
    auto pack = [&](int q, int h, uint32_t (&w)[4]) {
        const int row = row0 + 8 * h;
#pragma unroll
        for (int b = 0; b < 4; ++b) {
            const int j = 4 * q + b;
            float r0 = scale * d[4 * j + 2 * h], r1 = scale * d[4 * j + 2 * h + 1];
            const int col = col0 + 8 * j + 2 * t;
            if (beta != 0.f && row < m) {
                const TO *p = c + (long long)row * ldc + col;
                if (col < n) r0 = fmaf(beta, to_f32<TO>(p[0]), r0);
                if (col + 1 < n) r1 = fmaf(beta, to_f32<TO>(p[1]), r1);
            }
            w[b] = pack_pair<TO>(r0, r1);
        }
    };
    // One branch per tile (variant B's branch per row half and 32 columns cost the aligned products 18%).
    if (align >= 8) {
#pragma unroll
        for (int q = 0; q < BN / 32; ++q)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                uint32_t w[4];
                pack(q, h, w);
                quad_transpose(w, t);
                store_octet<TO>(c, ldc, row0 + 8 * h, col0 + 8 * (4 * q + t), m, n, w, align);
            }
    } else {
#pragma unroll
        for (int q = 0; q < BN / 32; ++q)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                uint32_t w[4];
                pack(q, h, w);
                store_pairs<TO>(c, ldc, row0 + 8 * h, col0 + 32 * q + 2 * t, m, n, w, align);
            }
    }
}

// The stage ring's barriers: `full` completes when a stage's TMA bytes land, `empty` when all 8 consumer
// warps are done with it.
template <int STAGES>
__device__ __forceinline__ void init_ring(uint64_t (&full)[STAGES], uint64_t (&empty)[STAGES]) {
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(s_u32(&full[s]), 1);
            mbar_init(s_u32(&empty[s]), 8);  // lane 0 of each of the 8 consumer warps
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
}

// The producer warpgroup: hands its registers to the consumers; thread 0 walks the consumers' tiles and, for
// each K block, waits for a free stage (STAGE_BYTES apart) and has `load(stage address, tile row, tile column,
// kb, full barrier)` issue that stage's TMA copies (`bytes` in all).
template <int STAGES, uint32_t STAGE_BYTES, class Load>
__device__ __forceinline__ void produce(const CUtensorMap *map0, const CUtensorMap *map1, int tiles_m, int tiles_n,
                                        int nk, uint32_t smem, uint64_t (&full)[STAGES], uint64_t (&empty)[STAGES],
                                        uint32_t bytes, Load load) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x != 0) return;
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)map0) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)map1) : "memory");
    int it = 0;
    for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
        int tm, tn;
        tile_coords(tile, tiles_m, tiles_n, tm, tn);
        for (int kb = 0; kb < nk; ++kb, ++it) {
            const int s = it % STAGES;
            mbar_wait(s_u32(&empty[s]), ((uint32_t)(it / STAGES) & 1u) ^ 1u);
            const uint32_t fb = s_u32(&full[s]);
            mbar_expect_tx(fb, bytes);
            load(smem + s * STAGE_BYTES, tm, tn, kb, fb);
        }
    }
}

template <int BN> struct Sm90Cfg {
    static constexpr int A_BYTES = SM90_BM * 128;  // 128 rows (or 2 x 64-wide MN boxes) of 128-byte lines
    static constexpr int B_BYTES = BN * 128;
    static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
    // As many stages as fit in 192 KB: 4, 4 (160 KB), 6, 8 for BN = 256, 192, 128, 64.
    static constexpr int STAGES = 196608 / STAGE_BYTES;
};

// KIND: 0 bf16, 1 f16, 2 tf32.  TA/TB: 1 = operand stored transposed (A: k x m, B: n x k).
// SHORT: the `_short` entries, for at most 64 rows of C (below). Epi: Epilogue<TO> (the `_fused` entries) or
// NoEpilogue (the plain ones, which compile none of it).
template <int KIND, typename TO, int BN, int TA, int TB, bool SHORT, class Epi>
__device__ __forceinline__ void sm90_gemm(const CUtensorMap *tmA, const CUtensorMap *tmB, int m, int n, int k,
                                          float alpha, float beta, TO *C, int ldc, long long strideC,
                                          const Epi &epi) {
    using Cfg = Sm90Cfg<BN>;
    constexpr int STAGES = Cfg::STAGES;
    constexpr int ES = KIND == 2 ? 4 : 2;
    constexpr int BK = 128 / ES;               // one 128-byte swizzle line of K
    constexpr int KSTEP = KIND == 2 ? 8 : 16;  // K per wgmma
    constexpr int NSTEP = BK / KSTEP;          // = 4
    static_assert(KIND != 2 || (TA == 0 && TB == 1), "tf32 wgmma needs K-major A and B");

    extern __shared__ uint8_t sm90_smem_raw[];
    __shared__ __align__(8) uint64_t full_bar[STAGES];
    __shared__ __align__(8) uint64_t empty_bar[STAGES];
    const uint32_t smem = (s_u32(sm90_smem_raw) + 1023u) & ~1023u;

    constexpr int TILE_ROWS = SHORT ? 64 : SM90_BM;
    const int tiles_m = (m + TILE_ROWS - 1) / TILE_ROWS;
    const int tiles_n = (n + BN - 1) / BN;
    const int tiles = tiles_m * tiles_n;
    const int nk = (k + BK - 1) / BK;
    const int z = blockIdx.z;
    // SHORT (m <= 64, decode; or a product whose 64-row tiles all run at once): tiles of 64 rows, A's loaded only
    // as far as C has rows (K-major A: m rounded up to 8, at most 64, the height the host encodes in A's box;
    // MN-major A: one 64-row box), since a stage's bytes, zeros included, set its time on a short product; the
    // first consumer's other rows of A hold whatever an earlier stage left (their products land in rows past m,
    // never stored), and the second consumer multiplies nothing but passes every stage on. Separate entries:
    // with these as runtime branches of one kernel, the bf16 64- and 128-wide kernels lost 5-10% at m > 64 (H200).
    const int a_rows = !SHORT ? SM90_BM : TA == 0 ? min((m + 7) / 8 * 8, 64) : 64;

    init_ring(full_bar, empty_bar);

    const int wg = threadIdx.x / 128;
    if (wg == 0) {
        const uint32_t bytes = Cfg::B_BYTES + a_rows * 128;
        produce<STAGES, Cfg::STAGE_BYTES>(tmA, tmB, tiles_m, tiles_n, nk, smem, full_bar, empty_bar, bytes,
                                          [&](uint32_t sa, int tm, int tn, int kb, uint32_t fb) {
            const uint32_t sb = sa + Cfg::A_BYTES;
            if (TA == 0) {
                tma_load_3d(sa, tmA, kb * BK, tm * TILE_ROWS, z, fb);
            } else {
                for (int h = 0; h < a_rows / 64; ++h)
                    tma_load_3d(sa + h * 8192, tmA, tm * TILE_ROWS + h * 64, kb * BK, z, fb);
            }
            if (TB == 1) {
                tma_load_3d(sb, tmB, kb * BK, tn * BN, z, fb);
            } else {
#pragma unroll
                for (int h = 0; h < BN / 64; ++h) tma_load_3d(sb + h * 8192, tmB, tn * BN + h * 64, kb * BK, z, fb);
            }
        });
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int c = wg - 1;  // consumer index: rows c*64 .. c*64+63 of the tile
        const int lt = threadIdx.x % 128;
        const int warp = lt / 32, lane = lt % 32;
        if (SHORT && c == 1) {  // rows past m: pass every stage of every tile on
            for (int it = 0; it < (tiles - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x * nk; ++it) {
                mbar_wait(s_u32(&full_bar[it % STAGES]), (uint32_t)(it / STAGES) & 1u);
                if (lane == 0) mbar_arrive(s_u32(&empty_bar[it % STAGES]));
            }
            return;
        }
        TO *Cz = C + (long long)z * strideC;
        // f32 C: 16-byte rows; 16-bit C: the largest power of two (at most 16) dividing C's address and pitch in bytes.
        const bool vec_ok = rows_aligned<16>(Cz, ldc);
        const unsigned align_bits = (unsigned)(((unsigned long long)Cz | (unsigned long long)ldc * sizeof(TO)) & 15u) | 16u;
        const int align = (int)(align_bits & (0u - align_bits));
        int it = 0;
        float d[BN / 2];
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int tm, tn;
            tile_coords(tile, tiles_m, tiles_n, tm, tn);
            int prev_s = 0;
            for (int kb = 0; kb < nk; ++kb, ++it) {
                const int s = it % STAGES;
                const uint32_t ph = (uint32_t)(it / STAGES) & 1u;
                mbar_wait(s_u32(&full_bar[s]), ph);
                const uint32_t sa = smem + s * Cfg::STAGE_BYTES + c * 8192;
                const uint32_t sb = smem + s * Cfg::STAGE_BYTES + Cfg::A_BYTES;
                reg_fence(d);
                wg_fence();
#pragma unroll
                for (int kk = 0; kk < NSTEP; ++kk) {
                    // K-major: advance 32 bytes inside the 128-byte swizzled line.
                    // MN-major: advance KSTEP rows of 128 bytes (2 swizzle atoms).
                    const uint64_t da = TA == 0 ? sdesc(sa + kk * 32, 16, 1024) : sdesc(sa + kk * 2048, 8192, 1024);
                    const uint64_t db = TB == 1 ? sdesc(sb + kk * 32, 16, 1024) : sdesc(sb + kk * 2048, 8192, 1024);
                    wgmma_step<KIND, BN, TA, TB>(d, da, db, (kb > 0 || kk > 0) ? 1 : 0);
                }
                wg_commit();
                wg_wait<1>();
                reg_fence(d);
                if (kb > 0 && lane == 0) mbar_arrive(s_u32(&empty_bar[prev_s]));
                prev_s = s;
            }
            wg_wait<0>();
            reg_fence(d);
            if (lane == 0) mbar_arrive(s_u32(&empty_bar[prev_s]));

            // Epilogue straight from the accumulators (store_tile_16bit / store_tile_f32).
            const int row0 = tm * TILE_ROWS + c * 64 + warp * 16 + lane / 4;
            const int t = lane % 4;
            // Accumulator i: columns 8 (i / 4) + 2t + i % 2 of the tile.
            float scale = alpha;
            epi.template fuse<BN / 2, true>(scale, [&](int i) -> float & { return d[i]; },
                                      [&](int i) { return tn * BN + 8 * (i / 4) + 2 * t + i % 2; });
            if constexpr (sizeof(TO) == 2)
                store_tile_16bit<TO, BN>(Cz, ldc, row0, tn * BN, m, n, d, scale, beta, t, align);
            else
                store_tile_f32<BN>(Cz, ldc, row0, tn * BN, m, n, d, scale, beta, t, vec_ok);
        }
    }
}


// TF32 with one MN-major operand R (stored k x P, P contiguous). wgmma reads TF32 from shared memory
// K-major only, so R is wgmma's register-sourced first operand instead: TMA lands it as stored (four
// 32 x 32 boxes per stage, 128-byte swizzle) and each consumer thread loads its fragments with 8-byte
// shared loads. The other operand D (K-major, BQ rows) is wgmma's second operand, from shared memory.
// The accumulators hold the P x Q product; R_IS_B: R = B and D = A (P = n, Q = m), so C gets their
// transpose; else R = A and D = B (P = m, Q = n).
//
// Fragment rows are assigned so the loads are conflict-free and pair up: warp W of the 8 consumer warps
// owns half of box W/2 (its 16-byte chunks {0,1,4,5} or {2,3,6,7} of each 128-byte line), and lane
// (g, t) holds rows g and g + 8 of the warp's 16 as two adjacent elements p, p + 1 of one chunk. For a
// fixed k line the swizzle (chunk ^ k % 8) then spreads the 4 values of t over all 8 chunks, two lanes
// per bank.
template <int BQ, bool R_IS_B, class Epi>
__device__ __forceinline__ void sm90_tf32_rs(const CUtensorMap *tmA, const CUtensorMap *tmB, int m, int n, int k,
                                             float alpha, float beta, float *C, int ldc, long long strideC,
                                             const Epi &epi) {
    using Cfg = Sm90Cfg<BQ>;  // the A_BYTES region holds R's four boxes, the B_BYTES region D's BQ rows
    constexpr int STAGES = Cfg::STAGES;
    constexpr int BK = 32, BP = SM90_BM, BOX = 32 * 128;
    static_assert(Cfg::A_BYTES == 4 * BOX, "R's stage is four 32 x 32 boxes");
    const CUtensorMap *tmR = R_IS_B ? tmB : tmA;
    const CUtensorMap *tmD = R_IS_B ? tmA : tmB;
    const int P = R_IS_B ? n : m, Q = R_IS_B ? m : n;

    extern __shared__ uint8_t sm90_smem_raw[];
    __shared__ __align__(8) uint64_t full_bar[STAGES];
    __shared__ __align__(8) uint64_t empty_bar[STAGES];
    const uint32_t smem = (s_u32(sm90_smem_raw) + 1023u) & ~1023u;

    const int tiles_p = (P + BP - 1) / BP;
    const int tiles_q = (Q + BQ - 1) / BQ;
    const int tiles = tiles_p * tiles_q;
    const int nk = (k + BK - 1) / BK;
    const int z = blockIdx.z;
    init_ring(full_bar, empty_bar);

    const int wg = threadIdx.x / 128;
    if (wg == 0) {
        produce<STAGES, Cfg::STAGE_BYTES>(tmR, tmD, tiles_p, tiles_q, nk, smem, full_bar, empty_bar, Cfg::STAGE_BYTES,
                                          [&](uint32_t sr, int tp, int tq, int kb, uint32_t fb) {
#pragma unroll
            for (int h = 0; h < 4; ++h) tma_load_3d(sr + h * BOX, tmR, tp * BP + h * 32, kb * BK, z, fb);
            tma_load_3d(sr + Cfg::A_BYTES, tmD, kb * BK, tq * BQ, z, fb);
        });
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int lt = threadIdx.x % 128;
        const int warp = (wg - 1) * 4 + lt / 32, lane = lt % 32;
        const int g = lane / 4, t = lane % 4;
        const int box = warp / 2;
        const int chunk = 2 * (warp % 2) + (g % 4) / 2 + 4 * (g / 4);
        const int word = 2 * (g % 2);
        const int p_in_tile = box * 32 + 4 * chunk + word;  // this thread's fragment rows: p, p + 1
        // Lines t and t + 4 of each 8-line K step (a0/a1 at k = t, a2/a3 at k = t + 4).
        const uint32_t lo = box * BOX + t * 128 + ((chunk ^ t) << 4) + word * 4;
        const uint32_t hi = box * BOX + (t + 4) * 128 + ((chunk ^ (t + 4)) << 4) + word * 4;
        float *Cz = C + (long long)z * strideC;
        const bool pair_ok = ((ldc & 1) == 0) && ((((unsigned long long)Cz) & 7) == 0);
        float d[BQ / 2];
        uint32_t fa[16], fb[16];  // fragments of two K blocks: one in wgmma's hands while the next loads
        int it = 0, prev_s = 0;

        auto load = [&](uint32_t (&f)[16], int s) {
            mbar_wait(s_u32(&full_bar[s]), (uint32_t)(it / STAGES) & 1u);
            const uint32_t sr = smem + s * Cfg::STAGE_BYTES;
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];"
                             : "=r"(f[4 * kk]), "=r"(f[4 * kk + 1]) : "r"(sr + lo + kk * 1024) : "memory");
                asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];"
                             : "=r"(f[4 * kk + 2]), "=r"(f[4 * kk + 3]) : "r"(sr + hi + kk * 1024) : "memory");
            }
        };
        // Multiplies K block kb (fragments `cur`, stage it % STAGES); once the previous block's wgmmas
        // retire, frees its stage and loads block kb + 1 into `next`, which they were reading.
        auto step = [&](uint32_t (&cur)[16], uint32_t (&next)[16], int kb) {
            const int s = it % STAGES;
            const uint32_t sd = smem + s * Cfg::STAGE_BYTES + Cfg::A_BYTES;
            reg_fence(d);
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < 4; ++kk)
                wgmma_tf32_rs_step<BQ>(d, &cur[4 * kk], sdesc(sd + kk * 32, 16, 1024), (kb > 0 || kk > 0) ? 1 : 0);
            wg_commit();
            wg_wait<1>();
            reg_fence(d);
            reg_fence(next);  // keeps the retired group's fragments alive up to here
            if (kb > 0 && lane == 0) mbar_arrive(s_u32(&empty_bar[prev_s]));
            prev_s = s;
            ++it;
            if (kb + 1 < nk) load(next, it % STAGES);
        };

        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int tp, tq;
            tile_coords(tile, tiles_p, tiles_q, tp, tq);
            load(fa, it % STAGES);
            for (int kb = 0; kb < nk; kb += 2) {
                step(fa, fb, kb);
                if (kb + 1 < nk) step(fb, fa, kb + 1);
            }
            wg_wait<0>();
            reg_fence(d);
            reg_fence(fa);
            reg_fence(fb);
            if (lane == 0) mbar_arrive(s_u32(&empty_bar[prev_s]));

            // Accumulator j of lane (g, t): rows p, p + 1 (d[4j..4j+1] and d[4j+2..4j+3]) by columns q, q + 1.
            const int p = tp * BP + p_in_tile;
            // Accumulator 4j + r: rows p + r / 2, columns q + r % 2 of the P x Q product (q = 8j + 2t in the tile).
            float scale = alpha;
            epi.template fuse<BQ / 2, true>(scale, [&](int i) -> float & { return d[i]; }, [&](int i) {
                return R_IS_B ? p + (i % 4) / 2 : tq * BQ + 8 * (i / 4) + 2 * t + i % 2;
            });
#pragma unroll
            for (int j = 0; j < BQ / 8; ++j) {
                const int q = tq * BQ + 8 * j + 2 * t;
                if constexpr (R_IS_B) {  // C[q][p..p+1] and C[q+1][p..p+1]
                    store_pair<float>(Cz, ldc, q, p, m, n, d[4 * j], d[4 * j + 2], scale, beta, pair_ok);
                    store_pair<float>(Cz, ldc, q + 1, p, m, n, d[4 * j + 1], d[4 * j + 3], scale, beta, pair_ok);
                } else {  // C[p][q..q+1] and C[p+1][q..q+1]
                    store_pair<float>(Cz, ldc, p, q, m, n, d[4 * j], d[4 * j + 1], scale, beta, pair_ok);
                    store_pair<float>(Cz, ldc, p + 1, q, m, n, d[4 * j + 2], d[4 * j + 3], scale, beta, pair_ok);
                }
            }
        }
    }
}
}  // namespace

// Each kernel twice: NAME, the plain GEMM, and NAME_fused, which also takes `bias, biasStride, act` and applies
// the epilogue in its store.
#define SM90_ARGS(TO)                                                                                          \
    const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, int m, int n, int k,      \
        float alpha, float beta, TO *C, int ldc, long long strideC
#define SM90_EPI_ARGS(TO) const TO *bias, long long biasStride, int act
#define SM90_PASS &tmA, &tmB, m, n, k, alpha, beta, C, ldc, strideC
// Launched as dependents (the operand copies' or the previous slice's launch may still run: common.cuh), and
// letting the launch after them (the last slice of a split-K) start early.
#define SM90_PLAIN_AND_FUSED(NAME, TO, BODY)                                                                   \
    PRISM_KERNEL void __launch_bounds__(384, 1) NAME(SM90_ARGS(TO)) {                                          \
        prism_await_previous_grid();                                                                           \
        prism_allow_dependent_grid();                                                                          \
        BODY(SM90_PASS, NoEpilogue{});                                                                         \
    }                                                                                                          \
    PRISM_KERNEL void __launch_bounds__(384, 1) NAME##_fused(SM90_ARGS(TO), SM90_EPI_ARGS(TO)) {              \
        prism_await_previous_grid();                                                                           \
        prism_allow_dependent_grid();                                                                          \
        BODY(SM90_PASS, (Epilogue<TO>{bias, biasStride, act, n}));                                             \
    }

#define SM90_ENTRY(NAME, KIND, TIN, TO, BN, TA, TB)                                                            \
    SM90_PLAIN_AND_FUSED(NAME, TO, (sm90_gemm<KIND, TO, BN, TA, TB, false>))                                    \
    SM90_PLAIN_AND_FUSED(NAME##_short, TO, (sm90_gemm<KIND, TO, BN, TA, TB, true>))

// TF32 with one MN-major operand: nn (B through registers), tt (A through registers).
#define SM90_TF32_RS(BQ)                                                                                       \
    SM90_PLAIN_AND_FUSED(gemm_sm90_tf32_f32_nn_n##BQ, float, (sm90_tf32_rs<BQ, true>))                         \
    SM90_PLAIN_AND_FUSED(gemm_sm90_tf32_f32_tt_n##BQ, float, (sm90_tf32_rs<BQ, false>))

#define SM90_TRANS(PFX, KIND, TIN, TO, BN)                      \
    SM90_ENTRY(PFX##_nn_n##BN, KIND, TIN, TO, BN, 0, 0)        \
    SM90_ENTRY(PFX##_nt_n##BN, KIND, TIN, TO, BN, 0, 1)        \
    SM90_ENTRY(PFX##_tn_n##BN, KIND, TIN, TO, BN, 1, 0)        \
    SM90_ENTRY(PFX##_tt_n##BN, KIND, TIN, TO, BN, 1, 1)

#ifndef PRISM_GEMM_SM90_ONLY_BF16
SM90_TRANS(gemm_sm90_bf16_bf16, 0, __nv_bfloat16, __nv_bfloat16, 256)
SM90_TRANS(gemm_sm90_bf16_bf16, 0, __nv_bfloat16, __nv_bfloat16, 128)
SM90_TRANS(gemm_sm90_bf16_f32, 0, __nv_bfloat16, float, 256)
SM90_TRANS(gemm_sm90_bf16_f32, 0, __nv_bfloat16, float, 128)
SM90_TRANS(gemm_sm90_f16_f16, 1, __half, __half, 256)
SM90_TRANS(gemm_sm90_f16_f16, 1, __half, __half, 128)
SM90_TRANS(gemm_sm90_f16_f32, 1, __half, float, 256)
SM90_TRANS(gemm_sm90_f16_f32, 1, __half, float, 128)
SM90_TRANS(gemm_sm90_bf16_bf16, 0, __nv_bfloat16, __nv_bfloat16, 64)
SM90_TRANS(gemm_sm90_bf16_f32, 0, __nv_bfloat16, float, 64)
SM90_TRANS(gemm_sm90_f16_f16, 1, __half, __half, 64)
SM90_TRANS(gemm_sm90_f16_f32, 1, __half, float, 64)
SM90_TRANS(gemm_sm90_bf16_bf16, 0, __nv_bfloat16, __nv_bfloat16, 192)
SM90_TRANS(gemm_sm90_bf16_f32, 0, __nv_bfloat16, float, 192)
SM90_TRANS(gemm_sm90_f16_f16, 1, __half, __half, 192)
SM90_TRANS(gemm_sm90_f16_f32, 1, __half, float, 192)
SM90_ENTRY(gemm_sm90_tf32_f32_nt_n256, 2, float, float, 256, 0, 1)
SM90_ENTRY(gemm_sm90_tf32_f32_nt_n128, 2, float, float, 128, 0, 1)
SM90_ENTRY(gemm_sm90_tf32_f32_nt_n64, 2, float, float, 64, 0, 1)
SM90_TF32_RS(256)
SM90_TF32_RS(128)
SM90_TF32_RS(64)
#else
SM90_TRANS(gemm_sm90_bf16_bf16, 0, __nv_bfloat16, __nv_bfloat16, 256)
#endif
