// prism-targets: sm_90a
// Wide-row layer norm / RMS norm with the parameters shared by a thread-block cluster (issue 33, item 1).
//
// Why: from 32768 columns on, the row kernels of cuda/norms.cu give each row a whole SM (one block of 1024
// threads, the row in registers + dynamic shared memory), and every row re-reads all of gamma (and beta)
// from L2: f32 layer norm moves 8 bytes of parameters from L2 per element against 8 bytes of DRAM traffic,
// and the L2 is what limits it (0.64-0.80x a copy with parameters, 0.84-0.94x without).
//
// Two variants of the sharing: the slice ring (mc_norm, below; a ring per block, measured slower than the row
// kernel: notes/wide-rows/README.md) and the warp ring (mcw_norm, further down: a ring per warp, each warp
// coupled only to the same warp of the other blocks). What follows up to the harness describes the first.
//
// Design: a cluster of C blocks (C = 2 or 4, one block per SM), each normalising its own whole row exactly
// like the row kernel (same register / shared-memory split, same statistics), fetches the parameters of
// each store round (the chunk the block's threads consume in one pass over the row: blockDim x N columns
// of each parameter) ONCE per cluster, by bulk-copy multicast into a ring of `stages` shared-memory stages
// present in every block of the cluster. That divides the parameters' L2 traffic by C.
//
// Protocol (per stage s of the ring, per slice r of a round; slice r = the columns consumed by warps
// [r * W / C, (r + 1) * W / C) of every block, W = warps per block):
//   - block r of the cluster issues slice r of every round (one thread: lane 0 of the slice's first warp),
//     multicast to all C blocks, so no block issues more than its share;
//   - full[s][r] (each block, count 1, expect_tx): armed by the same lane 0 in each block, for round k + S
//     right after it has seen round k complete; the copies' complete_tx finish it;
//   - empty[s] (in block r, count W): one arrival per warp of slice r in every block (remote, mapa +
//     mbarrier.arrive.release.cluster) once the warp has read the stage; block r waits on it before it
//     overwrites slice r of stage s in all blocks with round k + S.
//   Slices make the C pipelines independent: a warp waits only for the block that feeds it, and an issuer
//   only for the warps that read what it will overwrite.
// The first S rounds are issued before the row is even loaded, so the statistics hide their latency.
//
// Rows % C: the grid is padded to whole clusters; a block without a row (blockIdx.x >= rows) loads, computes
// and stores nothing but runs the protocol (it issues its slices and arrives for its warps), so its peers
// neither wait forever nor lose a slice.
//
// Requirements (the launcher's job to check; the row kernel serves everything else): gamma (and beta for
// layer norm) non-null and 16-byte aligned, x / y 16-byte aligned, cols % N == 0 (N = 4 f32, 8 bf16), the
// row fits VecRow (registers + dynamic shared memory) beside at least one stage, blockDim.x a multiple of
// 32 * C, a cluster launch of C x 1 x 1, and sm_90a (the multicast form of cp.async.bulk).
//
// Harness: times the row kernels of cuda/norms.cu (as the launcher sizes them, with and without parameters),
// the slice ring at C = 2 and 4 and the warp ring at C = 1 (no cluster), 2 and 4 against a device-to-device
// copy of the same bytes (CUDA events, median of 20 after 5 warm-ups), then checks every one of them against
// an f64 CPU reference on fresh random inputs with poisoned (NaN) outputs, including rows % C != 0, a partial
// last round and fewer rounds than stages. Exits 1 on a failed check.
// Usage: multicast [--stages S] [--device D] [--no-diag] [--no-check] [--var slice|warp|both]
//   (S caps the ring depth, default 4; --var limits timing and checks to one ring; see multicast.sh)
#include "common.cuh"
#undef PRISM_KERNEL
#define PRISM_KERNEL static __global__
#include "norms.cu"
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include "../median_ms.cuh"

namespace mc {
using namespace prism;

constexpr int kMaxStages = 4;
constexpr int kMaxCluster = 4;

// ---------------------------------------------------------------- Hopper primitives (PTX)
__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ uint32_t cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// All threads of all blocks of the cluster; release / acquire orders the mbarrier inits (and, at the end,
// every DSMEM access) against the peers.
__device__ __forceinline__ void cluster_sync() {
    // Not .aligned: at the end, a warp's lane 0 may have left the loop after its lanes (it issues).
    asm volatile("barrier.cluster.arrive.release;\n"
                 "barrier.cluster.wait.acquire;" ::: "memory");
}
__device__ __forceinline__ void mbar_init(uint32_t bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// Makes the inits visible to the peers' remote arrivals and to the async proxy (the multicast copies).
__device__ __forceinline__ void fence_mbar_init() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// Arrives once and adds `bytes` to the transactions the current phase waits for.
__device__ __forceinline__ void mbar_arm(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool mbar_try(uint32_t bar, uint32_t parity) {
    uint32_t done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
    return done;
}
// For a barrier other blocks arrive on (the empty barriers). CS: acquire at cluster scope (compiles to a
// CCTL.IVALL, an L1 invalidation, on success); otherwise the default (acquire.cta), as CUTLASS's
// multicast pipelines wait on their empty barriers.
template <bool CS>
__device__ __forceinline__ bool mbar_try_cluster(uint32_t bar, uint32_t parity) {
    if constexpr (!CS) return mbar_try(bar, parity);
    uint32_t done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
    return done;
}
// A protocol bug shows as a launch error (an illegal instruction after about 2^34 cycles, several seconds)
// rather than a hang. (A printf here costs the kernels' registers spills.)
__device__ __forceinline__ void mbar_stuck() { __trap(); }
// Waits for the phase of parity `parity` of a barrier in this block that bulk copies complete.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    if (mbar_try(bar, parity)) return;
    const long long t0 = clock64();
    while (!mbar_try(bar, parity))
        if (clock64() - t0 > (1ll << 34)) mbar_stuck();
}
// As mbar_wait, for a barrier that other blocks arrive on: the acquire pairs with their arrivals' release,
// so their reads of the stage happen before the copy that overwrites it.
template <bool CS>
__device__ __forceinline__ void mbar_wait_cluster(uint32_t bar, uint32_t parity) {
    if (mbar_try_cluster<CS>(bar, parity)) return;
    const long long t0 = clock64();
    while (!mbar_try_cluster<CS>(bar, parity))
        if (clock64() - t0 > (1ll << 34)) mbar_stuck();
}
// Arrives on the barrier at the same shared-memory offset in block `rank` of the cluster.
// CS: release at cluster scope, which compiles to MEMBAR.ALL.CTA + MEMBAR.ALL.GPU before the arrival: the
// arriving thread first waits for all its earlier global stores (the previous rounds' output) to complete.
// Otherwise the default (release.cta): no fence, as CUTLASS's multicast pipelines release their stages
// (what must precede the arrival is this warp's reads of its own block's stage, done by then).
template <bool CS>
__device__ __forceinline__ void mbar_arrive_remote(uint32_t bar, uint32_t rank) {
    if constexpr (CS)
        asm volatile("{\n\t.reg .b32 ra;\n\t"
                     "mapa.shared::cluster.u32 ra, %0, %1;\n\t"
                     "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\n\t}" ::"r"(bar),
                     "r"(rank)
                     : "memory");
    else
        asm volatile("{\n\t.reg .b32 ra;\n\t"
                     "mapa.shared::cluster.u32 ra, %0, %1;\n\t"
                     "mbarrier.arrive.shared::cluster.b64 _, [ra];\n\t}" ::"r"(bar),
                     "r"(rank)
                     : "memory");
}
// Copies `bytes` (a multiple of 16) from global memory to the same shared-memory offset `dst` in every
// block of `mask`, each copy completing its bytes on the barrier at offset `bar` of its own block.
__device__ __forceinline__ void bulk_multicast(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar,
                                               uint16_t mask) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1], %2, [%3], %4;" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar), "h"(mask)
                 : "memory");
}

// As bulk_multicast, into this block only (C = 1 of the per-warp ring: no cluster).
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}
// Orders this thread's (and, after a __syncwarp, its warp's) generic-proxy accesses of shared memory before
// its later async-proxy ones (a bulk copy overwriting a stage the warp has just read).
__device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// N consecutive floats of a parameter for chunk t of a round, from a stage (16-byte reads). For N = 8 the
// two halves are read in an order that alternates every 4 lanes: in the order 0, 1 the 8 lanes of a
// 16-byte phase would hit each bank pair twice (32-byte stride); alternating makes them distinct.
template <int N>
__device__ __forceinline__ void stage_param(const float *sp, int t, float *out) {
    const float4 *p = reinterpret_cast<const float4 *>(sp) + (N / 4) * t;
    if constexpr (N == 4) {
        const float4 a = p[0];
        out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
    } else {
        static_assert(N == 8, "f32 or bf16 rows");
        const int h = (t >> 2) & 1;
        const float4 a = p[h], b = p[h ^ 1];
        const float4 lo = h ? b : a, hi = h ? a : b;
        out[0] = lo.x, out[1] = lo.y, out[2] = lo.z, out[3] = lo.w;
        out[4] = hi.x, out[5] = hi.y, out[6] = hi.z, out[7] = hi.w;
    }
}

// ---------------------------------------------------------------- the parameter ring
// One block's view of the ring: stage s holds, for round k with k % S == s, P parameters of bs * N floats
// each (parameter p of chunk t at p * bs * N + t * N), written by the C slices' multicasts.
template <int N, int P, int C, bool CS>
struct ParamRing {
    const float *param[P];       // global gamma (, beta)
    float *stage;                // stage 0 in dynamic shared memory
    uint64_t (*full)[kMaxCluster];  // full[s][r]
    uint64_t *empty;             // empty[s]
    int stages, rounds, nchunks, bs;
    bool dry;                    // diagnostic: the protocol with 16 bytes per slice moved (stale stages)
    int slice;                   // the slice this thread's warp reads (= the rank that issues it)
    uint32_t rank;
    bool lead;                   // lane 0 of its slice's first warp: arms full[.][slice]; issues if rank == slice
    int s = 0;                   // stage of the current round
    uint32_t phase = 0;          // parity of the current round's use of stage s

    __device__ __forceinline__ int stage_floats() const { return P * bs * N; }
    // Chunks of slice r in round k (the last round may be partial, some of its slices empty).
    __device__ __forceinline__ int slice_chunks(int k, int r) const {
        const int q = bs / C, v = nchunks - k * bs - r * q;
        return dry || v < 0 ? 0 : (v > q ? q : v);
    }
    // Never 0: a phase armed with 0 bytes would complete at once, before slower warps of this block have
    // seen the previous phase of the same barrier, and they would then wait a phase too far (a deadlock).
    // An empty slice (the tail of a partial round, or dry) carries 16 bytes nobody reads, so its phase too
    // completes only after the issuer's copy, i.e. after every warp of the slice has released the stage.
    __device__ __forceinline__ uint32_t slice_bytes(int k, int r) const {
        const int ch = slice_chunks(k, r);
        return ch ? (uint32_t)(P * ch * N * 4) : 16u;
    }
    // Block `rank`'s slice of round k into stage st of every block of the cluster.
    __device__ __forceinline__ void issue(int k, int st) const {
        const int q = bs / C, ch = slice_chunks(k, (int)rank);
        const uint32_t bar = smem_u32(&full[st][rank]);
        if (ch == 0) {  // the 16 bytes slice_bytes promises, into this slice's (unread) first chunk
            bulk_multicast(smem_u32(stage + (size_t)st * stage_floats() + rank * q * N), param[0], 16u, bar,
                           (uint16_t)((1u << C) - 1));
            return;
        }
#pragma unroll
        for (int p = 0; p < P; ++p) {
            const float *src = param[p] + ((size_t)k * bs + (size_t)rank * q) * N;
            const uint32_t dst = smem_u32(stage + (size_t)st * stage_floats() + p * bs * N + rank * q * N);
            bulk_multicast(dst, src, (uint32_t)(ch * N * 4), bar, (uint16_t)((1u << C) - 1));
        }
    }
    // Thread 0, before the cluster barrier: barriers initialised, the first rounds' full barriers armed.
    __device__ __forceinline__ void init(int warps) {
        for (int st = 0; st < stages; ++st) {
            for (int r = 0; r < C; ++r) mbar_init(smem_u32(&full[st][r]), 1);
            mbar_init(smem_u32(&empty[st]), (unsigned)warps);
        }
        for (int st = 0; st < stages && st < rounds; ++st)
            for (int r = 0; r < C; ++r) mbar_arm(smem_u32(&full[st][r]), slice_bytes(st, r));
        fence_mbar_init();
    }
    // After the cluster barrier: the first rounds, before anything waits for them.
    __device__ __forceinline__ void prologue() const {
        if (lead && slice == (int)rank)
            for (int st = 0; st < stages && st < rounds; ++st) issue(st, st);
    }
    // Waits for round k's stage and returns it (parameter p of chunk t at p * bs * N + t * N). Every thread
    // of the block calls wait / read_done / release for every round, in order, row or not.
    __device__ __forceinline__ const float *wait(int k) {
        const uint32_t fb = smem_u32(&full[s][slice]);
        mbar_wait(fb, phase);
        // Round k is complete here, so this arrival belongs to round k + S's phase; it precedes this warp's
        // release of round k, hence the issuer's copy of round k + S.
        if (lead && k + stages < rounds) mbar_arm(fb, slice_bytes(k + stages, slice));
        return stage + (size_t)s * stage_floats();
    }
    // This warp has read the stage (its stores may still be pending: they read registers only).
    __device__ __forceinline__ void read_done(int k) const {
        __syncwarp();  // every lane's reads of the stage are done before lane 0 releases it
        // The last S rounds are never refilled: no arrival, so no block is signalled after its issuer is done.
        if ((threadIdx.x & 31) == 0 && k + stages < rounds) mbar_arrive_remote<CS>(smem_u32(&empty[s]), (uint32_t)slice);
    }
    // After this round's stores: the issuer refills the stage with round k + S once every warp of its
    // slice in every block has released round k; then on to the next stage.
    __device__ __forceinline__ void release(int k) {
        if (lead && slice == (int)rank && k + stages < rounds) {
            mbar_wait_cluster<CS>(smem_u32(&empty[s]), phase);
            issue(k + stages, s);
        }
        if (++s == stages) s = 0, phase ^= 1u;
    }
};

// ---------------------------------------------------------------- the kernel
template <typename T, bool LN> struct Rc;  // row floats per thread in registers: those of norms.cu
template <> struct Rc<float, true> { static constexpr int v = 28 / 4; };
template <> struct Rc<float, false> { static constexpr int v = 32 / 4; };
template <bool LN> struct Rc<__nv_bfloat16, LN> { static constexpr int v = 32 / 8; };

// Launch: grid = ceil(rows / C) * C blocks in clusters of C x 1 x 1, block a multiple of 32 * C (1024 for
// these widths), dynamic shared memory = the row's chunks (16 * block * max(0, ceil(cols / N / block) - RC))
// followed by `stages` stages of P * block * N * 4 bytes. gamma / beta as the requirements above.
// CS: the empty barriers' arrivals / waits at cluster scope (release / acquire.cluster: the form measured
// first); otherwise the default scope (CTA), as CUTLASS does. See mbar_arrive_remote.
template <typename T, bool LN, int C, bool CS>
__global__ void __launch_bounds__(1024, 1)
    mc_norm(const T *__restrict__ x, const float *__restrict__ gamma, const float *__restrict__ beta,
            T *__restrict__ y, float *mean_out, float *rstd_out, int rows, int cols, float eps, int stages,
            bool dry) {
    constexpr int N = Pack<T>::N, P = LN ? 2 : 1, RC = Rc<T, LN>::v;
    __shared__ __align__(8) uint64_t full[kMaxStages][kMaxCluster];
    __shared__ __align__(8) uint64_t empty[kMaxStages];
    const int t = threadIdx.x, bs = blockDim.x, warp = t >> 5, warps = bs >> 5, wps = warps / C;
    const int nchunks = cols / N, rounds = (nchunks + bs - 1) / bs;
    const int ks = rounds > RC ? rounds - RC : 0;  // row chunks per thread in shared memory
    const int row = blockIdx.x;
    const bool has_row = row < rows;

    ParamRing<N, P, C, CS> ring;
    ring.param[0] = gamma;
    if constexpr (P == 2) ring.param[1] = beta;
    ring.stage = reinterpret_cast<float *>(prism_row_smem + (size_t)ks * bs);
    ring.full = full;
    ring.empty = empty;
    ring.stages = stages;
    ring.rounds = rounds;
    ring.nchunks = nchunks;
    ring.bs = bs;
    ring.dry = dry;
    ring.slice = warp / wps;
    ring.rank = cluster_rank();
    ring.lead = (warp % wps == 0) && (t & 31) == 0;

    if (t == 0) ring.init(warps);
    cluster_sync();  // every block's barriers exist before any copy or remote arrival reaches them
    ring.prologue();

    const T *xr = x + (size_t)row * cols;
    T *yr = y + (size_t)row * cols;
    VecRow<T, RC> c;
    float mean = 0.0f, rstd = 0.0f;
    if (has_row) {  // block-uniform: the statistics' barriers see every thread or none
        c.load(xr, cols, prism_row_smem, ks);
        const float inv_n = 1.0f / (float)cols;
        if constexpr (LN) {
            Sum1 s1;
            c.each(s1);
            mean = block_allreduce(s1.acc, SumOp{}) * inv_n;
            SumSqDev d;
            d.mean = mean;
            c.each(d);
            rstd = rsqrtf(block_allreduce(d.acc, SumOp{}) * inv_n + eps);
        } else {
            SumSq s2;
            c.each(s2);
            rstd = rsqrtf(block_allreduce(s2.acc, SumOp{}) * inv_n + eps);
        }
        if (t == 0) {
            if (LN && mean_out) mean_out[row] = mean;
            if (rstd_out) rstd_out[row] = rstd;
        }
    }

    // Same arithmetic as LayerNormOp / RmsNormOp::Out::apply, the parameters read from the ring's stage sp
    // one parameter at a time (bf16 layer norm has no registers to spare for both at once).
    auto apply = [&](float *v, const float *sp) {
        float g[N];
        stage_param<N>(sp, t, g);
#pragma unroll
        for (int j = 0; j < N; ++j) v[j] = LN ? (v[j] - mean) * rstd * g[j] : v[j] * rstd * g[j];
        if constexpr (LN) {
            stage_param<N>(sp + bs * N, t, g);
#pragma unroll
            for (int j = 0; j < N; ++j) v[j] += g[j];
        }
    };
    uint4 *yv = reinterpret_cast<uint4 *>(yr);
    // Register rounds (compile-time indices keep c.r in registers), then shared-memory rounds.
#pragma unroll
    for (int k = 0; k < RC; ++k) {
        if (k < rounds) {
            const int ch = t + k * bs;
            const bool want = has_row && ch < nchunks;
            const float *sp = ring.wait(k);
            if (want) apply(c.r + k * N, sp);
            ring.read_done(k);
            if (want) yv[ch] = Pack<T>::pack(c.r + k * N);
            ring.release(k);
        }
    }
    for (int k = RC; k < rounds; ++k) {
        const int ch = t + k * bs;
        const bool want = has_row && ch < nchunks;
        float v[N];
        if (want) Pack<T>::unpack(c.sm[(k - RC) * bs + t], v);
        const float *sp = ring.wait(k);
        if (want) apply(v, sp);
        ring.read_done(k);
        if (want) yv[ch] = Pack<T>::pack(v);
        ring.release(k);
    }
    // No block leaves while a peer may still be written by its multicasts or arrive on its barriers.
    cluster_sync();
}

// ======================================================================== variant 2: one ring per warp
// The slice ring above couples every warp of a slice, cluster-wide, to its slowest warp (a stage is refilled
// once all W warps of the slice in all C blocks have released it, by one thread per block): its protocol
// alone, moving 16 bytes per slice, ran at 0.56-0.61x a copy where the row kernel runs at 0.67x (layer norm
// f32 1024 x 65536, H200). Here the coupling is per warp.
//
// Warp w's slice of store round k is its lanes' chunks k * bs + 32 w + lane (32 chunks, P x 32 x N floats
// of parameters). Warp w of every block of the cluster reads the same slice, so the C warps w form a group
// with a ring of its own: `stages` (S) stages of that slice in each block's shared memory (warp w's region,
// at the same offset everywhere), and per stage a `full` mbarrier in each block and an `empty` mbarrier in
// the issuing block. Nothing else couples two warps inside the store loop (no __syncthreads, no block-wide
// or cluster-wide wait).
//   - Issuer: lane 0 of warp w in the block of rank w % C (issuing is spread over the blocks; each issues
//     W / C slices of every round), multicast to all C blocks (C = 1: a plain bulk copy, no cluster).
//   - Rounds: warp w has R_w = ceil((nchunks - 32 w) / bs) rounds with at least one valid chunk; rounds past
//     R_w (empty slices of a partial last round) are skipped by every member of the group alike, so no
//     phase is ever armed with 0 bytes (a 0-byte phase completes at once: the slice ring's deadlock).
//   - full[w][s] (every block, count 1): lane 0 arms it for round k (arrive.expect_tx, the slice's bytes)
//     just before the warp waits for round k; the multicast's complete_tx may come before or after the arm
//     (the tx-count may go negative within a phase; the pending arrival keeps the phase open).
//   - empty[w][s] (in the issuer's block, count C): after reading round k, each member's lane 0 arrives on
//     it remotely (release.cluster) if round k + S exists; the issuer waits on it (acquire.cluster) before
//     it overwrites stage s with round k + S in all blocks.
//   - When the issuer refills: whenever it can, without blocking, right after its own release of a round
//     (try_wait on the oldest pending release); it blocks only when it needs round k itself and has not
//     issued it yet. So the issuer runs up to S rounds ahead of its slowest member, and a member waits only
//     for its issuer's copy of the round it needs. C = 1: the warp refills stage s with round k + S as soon
//     as it has read round k (no empty barrier).
//   - The first min(S, R_w) rounds are issued before the row is loaded: in flight during the load and the
//     statistics.
// Rows % C: the grid is padded to whole clusters; a block without a row runs the protocol (its warps wait
// for, release, and where they are the issuer, issue their slices) and loads / stores nothing. A cluster
// barrier at the start (barrier inits) and at the end (no block exits while its multicasts may still be in
// flight to a peer) are the only waits beyond a warp's group. A spin past ~2^34 cycles traps.
template <int N, int P, int C, bool CS>
struct WarpRing {
    static constexpr int kSlice = P * 32 * N;  // floats of one stage of one warp
    const float *param[P];
    float *base;          // this warp's stage 0 (stage s at base + s * kSlice; parameter p at + p * 32 N)
    uint32_t full, empty;  // shared addresses of this warp's full[0] / empty[0] (stage s at + 8 s)
    int stages, rounds;    // rounds: this warp's, those with at least one valid chunk
    int c0, nchunks, bs;   // c0: chunk of lane 0 in round 0 (32 w)
    uint32_t home;         // rank of the block that issues this warp's slices
    bool issuer, lane0, dry;
    int s = 0;             // stage of the current round
    uint32_t ph = 0;       // parity of the current round's phase of full[s] (and of empty[s])
    int next = 0, ns = 0;  // issuer: the next round to issue and its stage,
    uint32_t nph = 0;      // and the parity of the release (round next - S) it waits for

    // Chunks of this warp's slice in round k < rounds: 1..32.
    __device__ __forceinline__ int chunks(int k) const {
        const int v = nchunks - (k * bs + c0);
        return v < 32 ? v : 32;
    }
    // Never 0 (see above). Dry (diagnostic): 16 bytes per round, the stage left stale.
    __device__ __forceinline__ uint32_t bytes(int k) const { return dry ? 16u : (uint32_t)(P * chunks(k) * N * 4); }
    // Lane 0 of the issuer: round k into stage st of every block of the cluster.
    __device__ __forceinline__ void issue(int k, int st) const {
        const uint32_t bar = full + 8u * st, dst = smem_u32(base + st * kSlice);
        const uint16_t mask = (uint16_t)((1u << C) - 1);
        if (dry) {
            if constexpr (C == 1) bulk_copy(dst, param[0], 16u, bar);
            else bulk_multicast(dst, param[0], 16u, bar, mask);
            return;
        }
        const uint32_t b = (uint32_t)(chunks(k) * N * 4);
        const size_t off = ((size_t)k * bs + c0) * N;
#pragma unroll
        for (int p = 0; p < P; ++p) {
            if constexpr (C == 1) bulk_copy(dst + p * 32 * N * 4, param[p] + off, b, bar);
            else bulk_multicast(dst + p * 32 * N * 4, param[p] + off, b, bar, mask);
        }
    }
    // Lane 0, before the block / cluster barrier.
    __device__ __forceinline__ void init() const {
        if (!lane0) return;
        for (int st = 0; st < stages; ++st) {
            mbar_init(full + 8u * st, 1);
            if constexpr (C > 1) mbar_init(empty + 8u * st, C);
        }
        fence_mbar_init();
    }
    // After that barrier: the first rounds, before anything waits for them.
    __device__ __forceinline__ void prologue() {
        next = stages < rounds ? stages : rounds;  // then ns = 0, nph = 0: the release of round 0
        if (issuer && lane0)
            for (int k = 0; k < next; ++k) issue(k, k);
    }
    // Issuer (whole warp, warp-uniform): round `next` into its stage once every member has released round
    // next - S; `block` waits for that, otherwise it only tests. Returns whether it issued.
    __device__ __forceinline__ bool refill(bool block) {
        const uint32_t eb = empty + 8u * ns;
        if (block) mbar_wait_cluster<CS>(eb, nph);
        else if (!mbar_try_cluster<CS>(eb, nph)) return false;
        if (lane0) issue(next, ns);
        ++next;
        if (++ns == stages) ns = 0, nph ^= 1u;
        return true;
    }
    // Round k < rounds (whole warp, rounds in order): waits for its stage and returns it.
    __device__ __forceinline__ const float *wait(int k) {
        if constexpr (C > 1)
            if (issuer && next <= k) refill(true);  // next >= k here: at most one round is missing
        const uint32_t fb = full + 8u * s;
        // Every lane has seen the previous phase of this barrier (the __syncwarp in read_done of round
        // k - S), and round k's bytes come only after this warp released round k - S: arm and copy both
        // belong to round k's phase.
        if (lane0) mbar_arm(fb, bytes(k));
        mbar_wait(fb, ph);
        return base + s * kSlice;
    }
    // The warp has read round k's stage (its stores may be pending: they read registers only).
    __device__ __forceinline__ void read_done(int k) {
        __syncwarp();  // every lane's reads of the stage are done before lane 0 releases it
        if (k + stages < rounds && lane0) {  // the last S rounds are never refilled: no release
            if constexpr (C == 1) {
                fence_proxy_async();
                issue(k + stages, s);
            } else {
                mbar_arrive_remote<CS>(empty + 8u * s, home);
            }
        }
        // Whatever its members have released by now (its own release may have been the last).
        if constexpr (C > 1)
            if (issuer)
                while (next < rounds && refill(false)) {
                }
        if (++s == stages) s = 0, ph ^= 1u;
    }
};

// Launch: as mc_norm, but C = 1 is launched without a cluster, blockDim.x only a multiple of 32 (and at
// least 32 C), and the ring takes `stages` x P x blockDim.x x N x 4 bytes after the row's chunks (warp w's
// stages at w x stages x P x 32 x N floats). CS as for mc_norm (here false unless diagnosing; C = 1 has no
// empty barriers).
template <typename T, bool LN, int C, bool CS>
__global__ void __launch_bounds__(1024, 1)
    mcw_norm(const T *__restrict__ x, const float *__restrict__ gamma, const float *__restrict__ beta,
             T *__restrict__ y, float *mean_out, float *rstd_out, int rows, int cols, float eps, int stages,
             bool dry) {
    constexpr int N = Pack<T>::N, P = LN ? 2 : 1, RC = Rc<T, LN>::v;
    // full[w][s] at bars[w * kMaxStages + s], empty[w][s] at bars[(32 + w) * kMaxStages + s].
    __shared__ __align__(8) uint64_t bars[2 * 32 * kMaxStages];
    const int t = threadIdx.x, bs = blockDim.x, warp = t >> 5, lane = t & 31;
    const int nchunks = cols / N, rounds = (nchunks + bs - 1) / bs;
    const int ks = rounds > RC ? rounds - RC : 0;  // row chunks per thread in shared memory
    const int row = blockIdx.x;
    const bool has_row = row < rows;

    WarpRing<N, P, C, CS> ring;
    ring.param[0] = gamma;
    if constexpr (P == 2) ring.param[1] = beta;
    ring.base = reinterpret_cast<float *>(prism_row_smem + (size_t)ks * bs) + (size_t)warp * stages * ring.kSlice;
    ring.full = smem_u32(&bars[warp * kMaxStages]);
    ring.empty = smem_u32(&bars[(32 + warp) * kMaxStages]);
    ring.stages = stages;
    ring.c0 = warp * 32;
    ring.rounds = nchunks > ring.c0 ? (nchunks - ring.c0 + bs - 1) / bs : 0;
    ring.nchunks = nchunks;
    ring.bs = bs;
    ring.home = (uint32_t)(warp % C);
    ring.issuer = C == 1 || cluster_rank() == ring.home;
    ring.lane0 = lane == 0;
    ring.dry = dry;

    ring.init();
    if constexpr (C > 1) cluster_sync();  // every block's barriers exist before any copy or arrival
    else __syncthreads();
    ring.prologue();

    const T *xr = x + (size_t)row * cols;
    T *yr = y + (size_t)row * cols;
    VecRow<T, RC> c;
    float mean = 0.0f, rstd = 0.0f;
    if (has_row) {  // block-uniform: the statistics' barriers see every thread or none
        c.load(xr, cols, prism_row_smem, ks);
        const float inv_n = 1.0f / (float)cols;
        if constexpr (LN) {
            Sum1 s1;
            c.each(s1);
            mean = block_allreduce(s1.acc, SumOp{}) * inv_n;
            SumSqDev d;
            d.mean = mean;
            c.each(d);
            rstd = rsqrtf(block_allreduce(d.acc, SumOp{}) * inv_n + eps);
        } else {
            SumSq s2;
            c.each(s2);
            rstd = rsqrtf(block_allreduce(s2.acc, SumOp{}) * inv_n + eps);
        }
        if (t == 0) {
            if (LN && mean_out) mean_out[row] = mean;
            if (rstd_out) rstd_out[row] = rstd;
        }
    }

    // As mc_norm's apply, the parameters at the lane's place in the warp's stage.
    auto apply = [&](float *v, const float *sp) {
        float g[N];
        stage_param<N>(sp, lane, g);
#pragma unroll
        for (int j = 0; j < N; ++j) v[j] = LN ? (v[j] - mean) * rstd * g[j] : v[j] * rstd * g[j];
        if constexpr (LN) {
            stage_param<N>(sp + 32 * N, lane, g);
#pragma unroll
            for (int j = 0; j < N; ++j) v[j] += g[j];
        }
    };
    uint4 *yv = reinterpret_cast<uint4 *>(yr);
    // Rounds past ring.rounds hold no valid chunk of this warp: skipped (warp-uniform).
#pragma unroll
    for (int k = 0; k < RC; ++k) {
        if (k < ring.rounds) {
            const int ch = t + k * bs;
            const bool want = has_row && ch < nchunks;
            const float *sp = ring.wait(k);
            if (want) apply(c.r + k * N, sp);
            ring.read_done(k);
            if (want) yv[ch] = Pack<T>::pack(c.r + k * N);
        }
    }
    for (int k = RC; k < ring.rounds; ++k) {
        const int ch = t + k * bs;
        const bool want = has_row && ch < nchunks;
        float v[N];
        if (want) Pack<T>::unpack(c.sm[(k - RC) * bs + t], v);
        const float *sp = ring.wait(k);
        if (want) apply(v, sp);
        ring.read_done(k);
        if (want) yv[ch] = Pack<T>::pack(v);
    }
    // No block leaves while its multicasts may still be on their way to a peer. (C = 1: every copy this
    // block issued has been waited for.)
    if constexpr (C > 1) cluster_sync();
}
}  // namespace mc

// ======================================================================== harness
namespace {

__global__ void fill(float *p, size_t n, unsigned seed, float lo, float hi) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ (unsigned)(i >> 32) * 40503u ^ seed * 0x9E3779B9u;
        h ^= h >> 15, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
        p[i] = lo + (hi - lo) * (h & 0xffffff) * (1.0f / 16777216.0f);
    }
}
__global__ void to_bf16(const float *a, __nv_bfloat16 *b, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        b[i] = __float2bfloat16_rn(a[i]);
}

#define CK(call)                                                                                       \
    do {                                                                                               \
        cudaError_t e_ = (call);                                                                       \
        if (e_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));      \
            exit(2);                                                                                   \
        }                                                                                              \
    } while (0)

const float kEps = 1e-5f;
int g_smem_optin = 0;  // dynamic + static shared memory a block may have

// The row kernels' sizing (as the Rust launcher and notes/wide-rows/main.cu do it).
int row_block(int cols) { return std::min(1024, std::max(32, ((cols + 31) / 32 + 31) / 32 * 32)); }
size_t row_smem(int cols, int lanes, int rc, int block) {
    const int per = (cols / lanes + block - 1) / block;
    return 16ull * block * std::max(0, per - rc);
}

enum Op { LN_F32, RMS_F32, LN_BF16, RMS_BF16 };
const char *op_name(int op) {
    static const char *n[4] = {"layer_norm f32 ", "rms_norm f32   ", "layer_norm bf16", "rms_norm bf16  "};
    return n[op];
}
bool is_bf(int op) { return op == LN_BF16 || op == RMS_BF16; }
bool is_ln(int op) { return op == LN_F32 || op == LN_BF16; }

// The two rings: SLICE (mc_norm: a ring per block, a round cut into C slices of W / C warps each) and WARP
// (mcw_norm: a ring per warp, each warp coupled only to warp w of the other blocks).
// Each with its own scope for the empty barriers' release / acquire (CS): the slice ring as measured first
// (cluster scope), the warp ring with the default (CTA) scope; the two swapped ones are diagnostics (how much
// of a difference is the scope's: the cluster-scope release waits for the arriving lane's earlier stores).
enum Var { SLICE, WARP, SLICE_CTA, WARP_CLUSTER };
bool is_warp(int v) { return v == WARP || v == WARP_CLUSTER; }
bool var_cs(int v) { return v == SLICE || v == WARP_CLUSTER; }
const char *var_name(int v) {
    static const char *n[4] = {"slice ring", "warp ring ", "slice ring (CTA-scope release)",
                               "warp ring (cluster-scope release)"};
    return n[v];
}
template <int C, bool CS> const void *mc_kernel_cs(int op, bool warp) {
    using bf = __nv_bfloat16;
    if (warp) {
        if (op == LN_F32) return (const void *)mc::mcw_norm<float, true, C, CS>;
        if (op == RMS_F32) return (const void *)mc::mcw_norm<float, false, C, CS>;
        if (op == LN_BF16) return (const void *)mc::mcw_norm<bf, true, C, CS>;
        return (const void *)mc::mcw_norm<bf, false, C, CS>;
    }
    if (op == LN_F32) return (const void *)mc::mc_norm<float, true, C, CS>;
    if (op == RMS_F32) return (const void *)mc::mc_norm<float, false, C, CS>;
    if (op == LN_BF16) return (const void *)mc::mc_norm<bf, true, C, CS>;
    return (const void *)mc::mc_norm<bf, false, C, CS>;
}
template <int C> const void *mc_kernel_c(int op, int var) {
    return var_cs(var) ? mc_kernel_cs<C, true>(op, is_warp(var)) : mc_kernel_cs<C, false>(op, is_warp(var));
}
// C = 1: the slice ring in clusters of 1 (a diagnostic: its protocol with nothing shared); the warp ring
// without a cluster (its own cost against the row kernel).
const void *mc_kernel(int op, int C, int var) {
    return C == 1 ? mc_kernel_c<1>(op, var) : C == 2 ? mc_kernel_c<2>(op, var) : mc_kernel_c<4>(op, var);
}
int mc_rc(int op) {
    return op == LN_F32 ? mc::Rc<float, true>::v : op == RMS_F32 ? mc::Rc<float, false>::v : mc::Rc<__nv_bfloat16, true>::v;
}

// How the variant runs a shape, or why it does not.
struct Plan {
    bool ok = false;
    char why[160] = "";
    int block = 0, stages = 0, clusters = 0;
    size_t row_bytes = 0, stage_bytes = 0, smem = 0;
};
Plan plan_mc(int op, int C, int rows, int cols, int max_stages, int var = SLICE) {
    Plan p;
    const int N = is_bf(op) ? 8 : 4, P = is_ln(op) ? 2 : 1;
    p.block = row_block(cols);
    // The slice ring cuts a round into C slices of whole warps; the warp ring needs a warp per block rank.
    if (cols % N || p.block % (is_warp(var) ? 32 : 32 * C) || p.block < 32 * C) {
        snprintf(p.why, sizeof p.why, "cols %% %d or block %d %% (32 x %d) not 0", N, p.block, is_warp(var) ? 1 : C);
        return p;
    }
    const void *kern = mc_kernel(op, C, var);
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, kern));
    const size_t avail = (size_t)g_smem_optin - fa.sharedSizeBytes;
    const int rounds = (cols / N + p.block - 1) / p.block;
    p.row_bytes = row_smem(cols, N, mc_rc(op), p.block);
    p.stage_bytes = (size_t)P * p.block * N * 4;
    if (p.row_bytes > avail) {
        snprintf(p.why, sizeof p.why, "row needs %zu KiB of shared memory beside its registers, %zu KiB available",
                 p.row_bytes >> 10, avail >> 10);
        return p;
    }
    p.stages = (int)std::min<size_t>({(size_t)max_stages, (size_t)mc::kMaxStages, (size_t)rounds,
                                      (avail - p.row_bytes) / p.stage_bytes});
    if (p.stages < 1) {
        snprintf(p.why, sizeof p.why, "row %zu KiB + one %zu KiB parameter stage > %zu KiB of shared memory",
                 p.row_bytes >> 10, p.stage_bytes >> 10, avail >> 10);
        return p;
    }
    p.smem = p.row_bytes + p.stages * p.stage_bytes;
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)avail));
    if (is_warp(var) && C == 1) {  // no cluster: blocks per SM x SMs
        int per_sm = 0, dev = 0, sms = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, p.block, p.smem));
        CK(cudaGetDevice(&dev));
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        p.clusters = per_sm * sms;
    } else {
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeClusterDimension;
        at[0].val.clusterDim.x = C, at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
        cfg.gridDim = dim3((rows + C - 1) / C * C), cfg.blockDim = dim3(p.block), cfg.dynamicSmemBytes = p.smem;
        cfg.attrs = at, cfg.numAttrs = 1;
        CK(cudaOccupancyMaxActiveClusters(&p.clusters, kern, &cfg));
    }
    if (p.clusters < 1) {
        snprintf(p.why, sizeof p.why, "no cluster of %d fits", C);
        return p;
    }
    p.ok = true;
    return p;
}

cudaLaunchConfig_t cluster_config(int C, int grid, int block, size_t smem, cudaLaunchAttribute *at) {
    cudaLaunchConfig_t cfg = {};
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = C, at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(grid), cfg.blockDim = dim3(block), cfg.dynamicSmemBytes = smem;
    cfg.attrs = at, cfg.numAttrs = 1;
    return cfg;
}
template <typename T, bool LN, int C, bool CS>
cudaError_t launch_mc_cs(const Plan &p, const void *x, const float *g, const float *b, void *y, float *mean,
                         float *rstd, int rows, int cols, bool dry, bool warp) {
    cudaLaunchAttribute at[1];
    cudaLaunchConfig_t cfg = cluster_config(C, (rows + C - 1) / C * C, p.block, p.smem, at);
    if (warp) {
        if (C == 1) cfg.numAttrs = 0;  // no cluster
        return cudaLaunchKernelEx(&cfg, mc::mcw_norm<T, LN, C, CS>, (const T *)x, g, b, (T *)y, mean, rstd, rows,
                                  cols, kEps, p.stages, dry);
    }
    return cudaLaunchKernelEx(&cfg, mc::mc_norm<T, LN, C, CS>, (const T *)x, g, b, (T *)y, mean, rstd, rows, cols,
                              kEps, p.stages, dry);
}
template <typename T, bool LN, int C>
cudaError_t launch_mc_t(const Plan &p, const void *x, const float *g, const float *b, void *y, float *mean,
                        float *rstd, int rows, int cols, bool dry, int var) {
    if (var_cs(var))
        return launch_mc_cs<T, LN, C, true>(p, x, g, b, y, mean, rstd, rows, cols, dry, is_warp(var));
    return launch_mc_cs<T, LN, C, false>(p, x, g, b, y, mean, rstd, rows, cols, dry, is_warp(var));
}
template <int C>
cudaError_t launch_mc_c(int op, const Plan &p, const void *x, const float *g, const float *b, void *y,
                        float *mean, float *rstd, int rows, int cols, bool dry, int var) {
    using bf = __nv_bfloat16;
    if (op == LN_F32) return launch_mc_t<float, true, C>(p, x, g, b, y, mean, rstd, rows, cols, dry, var);
    if (op == RMS_F32) return launch_mc_t<float, false, C>(p, x, g, b, y, mean, rstd, rows, cols, dry, var);
    if (op == LN_BF16) return launch_mc_t<bf, true, C>(p, x, g, b, y, mean, rstd, rows, cols, dry, var);
    return launch_mc_t<bf, false, C>(p, x, g, b, y, mean, rstd, rows, cols, dry, var);
}
// `p` must come from plan_mc with the same op, C and var.
cudaError_t launch_mc(int op, int C, const Plan &p, const void *x, const float *g, const float *b, void *y,
                      float *mean, float *rstd, int rows, int cols, bool dry = false, int var = SLICE) {
    if (C == 1) return launch_mc_c<1>(op, p, x, g, b, y, mean, rstd, rows, cols, dry, var);
    if (C == 2) return launch_mc_c<2>(op, p, x, g, b, y, mean, rstd, rows, cols, dry, var);
    return launch_mc_c<4>(op, p, x, g, b, y, mean, rstd, rows, cols, dry, var);
}

// The row kernel of cuda/norms.cu as the launcher sizes it; g / b null = without parameters.
// C > 1 (diagnostic): the same kernel launched in clusters of C (grid padded; the extra blocks return), what
// cluster scheduling alone costs these one-block-per-SM rows.
void launch_row(int op, const void *x, const float *g, const float *b, void *y, float *mean, float *rstd,
                int rows, int cols, int C = 1) {
    const int rb = row_block(cols);
    const int lanes = is_bf(op) ? 8 : 4, rc = is_bf(op) ? 4 : (op == LN_F32 ? 7 : 8);
    const size_t so = row_smem(cols, lanes, rc, rb);
    using bf = __nv_bfloat16;
    cudaLaunchAttribute at[1];
    const cudaLaunchConfig_t cfg = cluster_config(C, (rows + C - 1) / C * C, rb, so, at);
    const float *xf = (const float *)x;
    const bf *xb = (const bf *)x;
    if (op == LN_F32) cudaLaunchKernelEx(&cfg, prism_layer_norm_f32, xf, g, b, (float *)y, mean, rstd, rows, cols, kEps);
    if (op == RMS_F32) cudaLaunchKernelEx(&cfg, prism_rms_norm_f32, xf, g, (float *)y, rstd, rows, cols, kEps);
    if (op == LN_BF16) cudaLaunchKernelEx(&cfg, prism_layer_norm_bf16, xb, g, b, (bf *)y, mean, rstd, rows, cols, kEps);
    if (op == RMS_BF16) cudaLaunchKernelEx(&cfg, prism_rms_norm_bf16, xb, g, (bf *)y, rstd, rows, cols, kEps);
}
bool row_fits(int op, int cols) {  // VecRow within the 225 KiB the harness grants the row kernels
    const int lanes = is_bf(op) ? 8 : 4, rc = is_bf(op) ? 4 : (op == LN_F32 ? 7 : 8);
    return row_smem(cols, lanes, rc, row_block(cols)) <= 225 * 1024;
}

// Device buffers shared by every case (sized for 2^26 elements).
struct Bufs {
    size_t n;
    float *x, *y, *gamma, *beta, *mean, *rstd;
    __nv_bfloat16 *xb, *yb;
};

float bf2f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

// One correctness case: fresh inputs (seed), NaN-poisoned outputs and statistics, one run of the variant,
// f64 reference on the CPU. Rows in [rows, grid rows) that fit the buffer must stay poisoned (blocks
// without a row store nothing).
bool check(const Bufs &B, int op, int C, int rows, int cols, unsigned seed, int max_stages, int var) {
    const bool bf = is_bf(op), ln = is_ln(op);
    const size_t es = bf ? 2 : 4, n = (size_t)rows * cols;
    const int grid_rows = (rows + C - 1) / C * C;
    const size_t guard = std::min((size_t)grid_rows * cols, B.n) - n;  // elements past the rows, checked
    const Plan p = plan_mc(op, C, rows, cols, max_stages, var);
    printf("check %s %s C=%d %5d x %6d seed %u: ", var_name(var), op_name(op), C, rows, cols, seed);
    if (!p.ok) {
        printf("SKIP (%s)\n", p.why);
        return true;
    }
    fill<<<1024, 256>>>(B.x, n, seed, -3.0f, 5.0f);
    fill<<<64, 256>>>(B.gamma, cols, seed + 1, 0.5f, 1.5f);
    fill<<<64, 256>>>(B.beta, cols, seed + 2, -1.0f, 1.0f);
    if (bf) to_bf16<<<1024, 256>>>(B.x, B.xb, n);
    void *yv = bf ? (void *)B.yb : (void *)B.y;
    const void *xv = bf ? (const void *)B.xb : (const void *)B.x;
    CK(cudaMemset(yv, 0xff, (n + guard) * es));  // NaN in f32 and bf16
    CK(cudaMemset(B.mean, 0xff, rows * 4));
    CK(cudaMemset(B.rstd, 0xff, rows * 4));
    CK(launch_mc(op, C, p, xv, B.gamma, ln ? B.beta : nullptr, yv, B.mean, B.rstd, rows, cols, false, var));
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    // Host copies kept from case to case: the GPU machines' RAM grows on first touch, slowly.
    static std::vector<float> g, b, mean, rstd, xf, yf;
    static std::vector<uint16_t> xh, yh;
    g.resize(cols), b.resize(cols), mean.resize(rows), rstd.resize(rows);
    CK(cudaMemcpy(g.data(), B.gamma, cols * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b.data(), B.beta, cols * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(mean.data(), B.mean, rows * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(rstd.data(), B.rstd, rows * 4, cudaMemcpyDeviceToHost));
    if (bf) {
        xh.resize(n), yh.resize(n + guard);
        CK(cudaMemcpy(xh.data(), B.xb, n * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(yh.data(), B.yb, (n + guard) * 2, cudaMemcpyDeviceToHost));
    } else {
        xf.resize(n), yf.resize(n + guard);
        CK(cudaMemcpy(xf.data(), B.x, n * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(yf.data(), B.y, (n + guard) * 4, cudaMemcpyDeviceToHost));
    }
    // f32 outputs: f32 statistics over up to 2^17 values, rsqrtf; bf16: the output's rounding (2^-9).
    const double tol = bf ? 1e-2 : 1e-4, stat_tol = 1e-4;
    const int nt = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    std::vector<double> worst(nt, 0.0), worst_stat(nt, 0.0);
    std::vector<std::thread> th;
    for (int w = 0; w < nt; ++w)
        th.emplace_back([&, w] {
            for (int r = w; r < rows; r += nt) {
                const size_t o = (size_t)r * cols;
                auto xin = [&](int j) { return bf ? (double)bf2f(xh[o + j]) : (double)xf[o + j]; };
                double s = 0.0, ss = 0.0;
                for (int j = 0; j < cols; ++j) s += xin(j);
                const double mu = s / cols;
                for (int j = 0; j < cols; ++j) {
                    const double d = ln ? xin(j) - mu : xin(j);
                    ss += d * d;
                }
                const double rs = 1.0 / std::sqrt(ss / cols + (double)kEps);
                double e = 0.0;
                for (int j = 0; j < cols; ++j) {
                    const double ref = ln ? (xin(j) - mu) * rs * g[j] + b[j] : xin(j) * rs * g[j];
                    const double got = bf ? (double)bf2f(yh[o + j]) : (double)yf[o + j];
                    const double err = std::fabs(got - ref) / (1.0 + std::fabs(ref));
                    if (!(err <= e)) e = std::isnan(err) ? INFINITY : err;
                }
                double es_ = std::fabs(rstd[r] - rs) / rs;
                if (ln) es_ = std::max(es_, std::fabs(mean[r] - mu) / (1.0 + std::fabs(mu)));
                if (std::isnan(es_)) es_ = INFINITY;
                worst[w] = std::max(worst[w], e);
                worst_stat[w] = std::max(worst_stat[w], es_);
            }
        });
    for (auto &t : th) t.join();
    const double e = *std::max_element(worst.begin(), worst.end());
    const double es_ = *std::max_element(worst_stat.begin(), worst_stat.end());
    size_t touched = 0;  // guard elements no longer NaN-poisoned
    for (size_t i = n; i < n + guard; ++i)
        touched += bf ? yh[i] != 0xffffu : [&] { uint32_t u; memcpy(&u, &yf[i], 4); return u != 0xffffffffu; }();
    const bool ok = e <= tol && es_ <= stat_tol && touched == 0;
    printf("%s (stages %d, max err %.2e / tol %.0e, stats %.2e, %zu of %zu guard elements written)\n",
           ok ? "PASS" : "FAIL", p.stages, e, tol, es_, touched, guard);
    return ok;
}

}  // namespace

int main(int argc, char **argv) {
    int max_stages = mc::kMaxStages, dev = 0;
    bool diag = true, checks = true;
    int vars = 3;  // bit 0: the slice ring, bit 1: the warp ring
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--stages") && i + 1 < argc) max_stages = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) dev = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-diag")) diag = false;
        else if (!strcmp(argv[i], "--no-check")) checks = false;
        else if (!strcmp(argv[i], "--var") && i + 1 < argc) {
            ++i;
            vars = !strcmp(argv[i], "slice") ? 1 : !strcmp(argv[i], "warp") ? 2 : 3;
        } else {
            fprintf(stderr, "usage: %s [--stages S] [--device D] [--no-diag] [--no-check] [--var slice|warp|both]\n",
                    argv[0]);
            return 2;
        }
    }
    setvbuf(stdout, nullptr, _IOLBF, 0);  // lines survive a kill (a timeout around the whole run)
    CK(cudaSetDevice(dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    g_smem_optin = (int)prop.sharedMemPerBlockOptin;
    printf("%s, %d SMs, L2 %d MiB, %zu KiB shared memory per block; ring of at most %d stages\n", prop.name,
           prop.multiProcessorCount, prop.l2CacheSize >> 20, prop.sharedMemPerBlockOptin >> 10, max_stages);
    if (prop.major != 9) {
        printf("needs an sm_90 device\n");
        return 2;
    }

    Bufs B;
    B.n = 1ull << 26;
    CK(cudaMalloc(&B.x, B.n * 4));
    CK(cudaMalloc(&B.y, B.n * 4));
    CK(cudaMalloc(&B.gamma, 131072 * 4));
    CK(cudaMalloc(&B.beta, 131072 * 4));
    CK(cudaMalloc(&B.mean, 65536 * 4));
    CK(cudaMalloc(&B.rstd, 65536 * 4));
    CK(cudaMalloc(&B.xb, B.n * 2));
    B.yb = (__nv_bfloat16 *)B.y;
    for (auto f : {(const void *)prism_layer_norm_f32, (const void *)prism_layer_norm_bf16,
                   (const void *)prism_rms_norm_f32, (const void *)prism_rms_norm_bf16})
        CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 225 * 1024));

    // The variants timed and checked: the slice ring at C = 2, 4; the warp ring at C = 1 (its own cost), 2, 4;
    // with --var, one ring. Diagnostics (timed with the diagnostics, checked always): each ring with the
    // other's scope for its empty barriers.
    std::vector<std::array<int, 2>> configs, diag_configs, checked;
    const auto ring_on = [&](int var) { return (vars & (is_warp(var) ? 2 : 1)) != 0; };
    for (auto vc : {std::array<int, 2>{SLICE, 2}, {SLICE, 4}, {WARP, 1}, {WARP, 2}, {WARP, 4}})
        if (ring_on(vc[0])) configs.push_back(vc), checked.push_back(vc);
    for (auto vc : {std::array<int, 2>{SLICE_CTA, 2}, {SLICE_CTA, 4}, {WARP_CLUSTER, 2}})
        if (ring_on(vc[0])) diag_configs.push_back(vc), checked.push_back(vc);
    bool all_ok = true;
    unsigned seed = 1000;
    const int shapes[3][2] = {{1024, 65536}, {2048, 32768}, {512, 131072}};
    printf("\n== timing (median of 20 after 5 warm-ups; ratio to a D2D copy of the same bytes, read + written)"
           " and checks on the timed shapes\n");
    for (auto &sh : shapes) {
        const int rows = sh[0], cols = sh[1];
        const size_t n = (size_t)rows * cols;
        fill<<<1024, 256>>>(B.x, n, 1, -3.0f, 5.0f);
        fill<<<64, 256>>>(B.gamma, cols, 2, 0.5f, 1.5f);
        fill<<<64, 256>>>(B.beta, cols, 3, -1.0f, 1.0f);
        to_bf16<<<1024, 256>>>(B.x, B.xb, n);
        CK(cudaDeviceSynchronize());
        const float copy32 = median_ms([&] { cudaMemcpyAsync(B.y, B.x, n * 4, cudaMemcpyDeviceToDevice); });
        const float copy16 = median_ms([&] { cudaMemcpyAsync(B.y, B.x, n * 2, cudaMemcpyDeviceToDevice); });
        for (int op = 0; op < 4; ++op) {
            const bool bf = is_bf(op), ln = is_ln(op);
            const double bytes = 2.0 * n * (bf ? 2 : 4);
            const float tc = bf ? copy16 : copy32;
            const void *xv = bf ? (const void *)B.xb : (const void *)B.x;
            void *yv = bf ? (void *)B.yb : (void *)B.y;
            printf("%s %5d x %6d  copy %5.0f GB/s\n", op_name(op), rows, cols, bytes / (tc * 1e6));
            if (row_fits(op, cols)) {
                for (int params = 1; params >= 0; --params) {
                    const float *g = params ? B.gamma : nullptr, *b = params && ln ? B.beta : nullptr;
                    const float t = median_ms([&] { launch_row(op, xv, g, b, yv, B.mean, B.rstd, rows, cols); });
                    CK(cudaGetLastError());
                    printf("    row kernel %-18s %5.0f GB/s  %.2fx copy\n", params ? "with parameters" : "without",
                           bytes / (t * 1e6), tc / t);
                }
            } else {
                printf("    row kernel: streams the row (not on chip); not timed here\n");
            }
            for (auto &vc : configs) {
                const int var = vc[0], C = vc[1];
                const bool own = is_warp(var) && C == 1;
                const Plan p = plan_mc(op, C, rows, cols, max_stages, var);
                if (!p.ok) {
                    printf("    %s C=%d: skipped: %s\n", var_name(var), C, p.why);
                    continue;
                }
                const float t = median_ms([&] {
                    launch_mc(op, C, p, xv, B.gamma, ln ? B.beta : nullptr, yv, B.mean, B.rstd, rows, cols, false,
                              var);
                });
                CK(cudaGetLastError());
                printf("    %s C=%d %-9s %5.0f GB/s  %.2fx copy   (stages %d x %zu KiB + row %zu KiB,"
                       " %d %s = %d SMs at once)\n",
                       var_name(var), C, own ? "(own)" : "", bytes / (t * 1e6), tc / t, p.stages,
                       p.stage_bytes >> 10, p.row_bytes >> 10, p.clusters, own ? "blocks" : "clusters",
                       own ? p.clusters : p.clusters * C);
            }
            if (!diag) continue;
            for (auto &vc : diag_configs) {
                const int var = vc[0], C = vc[1];
                const Plan p = plan_mc(op, C, rows, cols, max_stages, var);
                if (!p.ok) continue;
                const float t = median_ms([&] {
                    launch_mc(op, C, p, xv, B.gamma, ln ? B.beta : nullptr, yv, B.mean, B.rstd, rows, cols, false,
                              var);
                });
                CK(cudaGetLastError());
                printf("    diag: %s C=%d %5.0f GB/s  %.2fx copy\n", var_name(var), C, bytes / (t * 1e6), tc / t);
            }
            // Where the time goes: the slice ring with nothing shared (C = 1), each ring's protocol with 16
            // bytes per slice moved (dry), and the row kernel itself launched in clusters.
            for (int var : {SLICE, WARP}) {
                if (!ring_on(var)) continue;
                for (int C : {1, 2, 4}) {
                    const Plan p = plan_mc(op, C, rows, cols, max_stages, var);
                    if (!p.ok) continue;
                    for (int dry = C == 1 && var == SLICE ? 0 : 1; dry <= 1; ++dry) {
                        const float t = median_ms([&] {
                            launch_mc(op, C, p, xv, B.gamma, ln ? B.beta : nullptr, yv, B.mean, B.rstd, rows, cols,
                                      dry, var);
                        });
                        CK(cudaGetLastError());
                        printf("    diag: %s C=%d%s %5.0f GB/s  %.2fx copy\n", var_name(var), C,
                               dry ? " dry (16 B per slice)" : " (no sharing)        ", bytes / (t * 1e6), tc / t);
                    }
                }
            }
            if (row_fits(op, cols))
                for (int C : {2, 4}) {
                    const float t = median_ms([&] {
                        launch_row(op, xv, B.gamma, ln ? B.beta : nullptr, yv, B.mean, B.rstd, rows, cols, C);
                    });
                    CK(cudaGetLastError());
                    printf("    diag: row kernel in clusters of %d  %5.0f GB/s  %.2fx copy\n", C, bytes / (t * 1e6),
                           tc / t);
                }
        }
        CK(cudaDeviceSynchronize());
        if (checks)
            for (int op = 0; op < 4; ++op)
                for (auto &vc : checked) all_ok &= check(B, op, vc[1], rows, cols, seed++, max_stages, vc[0]);
    }
    if (!checks) {
        printf("\nchecks skipped (--no-check)\n");
        return 0;
    }

    // 1023 x 50000: a partial last round (f32: 212 of 1024 chunks, warp 6 partial, warps 7-31 one round
    // short; bf16: 106, warp 3 partial); 7 x 3200: blocks of 128 (4 warps), as many stages as rounds, so
    // warps with one round fewer have fewer rounds than stages (bf16: 4 rounds, warps 1-3 have 3).
    printf("\n== checks: rows %% C != 0, a partial last round (some slices empty), fewer rows than a cluster,"
           " fewer rounds than stages\n");
    const int extra[5][2] = {{1023, 65536}, {1023, 50000}, {5, 65536}, {3, 131072}, {7, 3200}};
    for (auto &e : extra)
        for (int op = 0; op < 4; ++op)
            for (auto &vc : checked) all_ok &= check(B, op, vc[1], e[0], e[1], seed++, max_stages, vc[0]);
    // A ring shallower than the rows' rounds at every depth the harness allows (refills on every stage).
    printf("\n== checks: ring depths 1 and 2 (1023 x 65536, 1023 x 50000)\n");
    for (int s : {1, 2})
        for (int c : {65536, 50000})
            for (int op = 0; op < 4; ++op)
                for (auto &vc : checked) all_ok &= check(B, op, vc[1], 1023, c, seed++, s, vc[0]);

    const cudaError_t err = cudaDeviceSynchronize();
    printf("\n%s (cuda: %s)\n", all_ok && err == cudaSuccess ? "ALL PASS" : "SOME CHECKS FAILED", cudaGetErrorString(err));
    return all_ok && err == cudaSuccess ? 0 : 1;
}
