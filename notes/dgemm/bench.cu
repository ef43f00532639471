// Experiment (issue 32, DGEMM): the product's DMMA tiles (cuda/gemm_f64_dmma.cuh) and variants of its DmTile
// (other mma shapes, deeper rings of k tiles, 2-warp 32-row tiles, cuBLAS's small tiles: 32 x 32 and 32 x 64 of
// four warps, notes/dgemm-small/), against cuBLAS DGEMM on the same operands (harness.cuh), on the sweep's small
// and odd f64 shapes (where a block's k loop runs alone on its multiprocessor) and large ones. Built and run by
// run.sh. "p128", "p64", "p32" and "p32x32" are the product's tiles as built; `bench SEED product` times only
// those (run.sh's A/B of the header). Logs before cfa1960 had "p64" on m16n8k16 (m16n8k4 since 985a8ed) and no
// 32-row product tiles; notes/dgemm-small/tiles-h200.log was made by the small tiles' own copy of this harness
// (`git show cfa1960:notes/dgemm-small/tiles.cu`).
#include "gemm_f64_dmma.cuh"
#include "harness.cuh"
#include <cstring>

DMMA_LAYOUTS(p128, Dm128, 2)
DMMA_LAYOUTS(p64, Dm64, 2)
DMMA_LAYOUTS(p32, Dm32, 3)
DMMA_LAYOUTS(p32x32, Dm32x32, 4)
using Dm128k8 = DmTile<128, 64, 2, 2, 3, 8>;
using Dm64k16 = DmTile<64, 64, 2, 2, 3, 16>;
using Dm64s4 = DmTile<64, 64, 2, 2, 4, 4>;
using Dm32w2 = DmTile<32, 64, 1, 2, 4>;
using Dm32s6 = DmTile<32, 32, 2, 2, 6>;
using Dm32s6k4 = DmTile<32, 32, 2, 2, 6, 4>;
using Dm32x64k16 = DmTile<32, 64, 2, 2, 4, 16>;
DMMA_LAYOUTS(x128k8, Dm128k8, 2)
DMMA_LAYOUTS(x64k16, Dm64k16, 2)
DMMA_LAYOUTS(x64s4, Dm64s4, 2)
DMMA_LAYOUTS(x32w2, Dm32w2, 3)
DMMA_LAYOUTS(x32s6, Dm32s6, 4)
DMMA_LAYOUTS(x32s6k4, Dm32s6k4, 4)
DMMA_LAYOUTS(x32x64k16, Dm32x64k16, 3)

int main(int argc, char **argv) {
    constexpr unsigned ALL = 1u << NN | 1u << TN | 1u << NT, N_ = 1u << NN;
    const Shape shapes[] = {
        {183, 103, 647, N_, false},     {179, 595, 869, N_, false},   {41, 185, 2913, N_, false},
        {121, 1885, 505, N_, false},    {2375, 47, 421, N_, false},   {2927, 51, 1083, N_, false},
        {64, 768, 768, N_, false},      {32, 3072, 768, N_, false},   {16, 3072, 768, N_, false},
        {512, 768, 768, N_, false},     {512, 1024, 1024, N_, false}, {600, 600, 600, N_, false},
        {700, 700, 700, N_, false},     {1000, 1000, 1000, N_, false}, {1001, 1003, 1005, N_, false},
        {161, 1817, 159, N_, false},    {403, 437, 65, N_, false},    {533, 1091, 1883, N_, false},
        {209, 1113, 2443, N_, false},   {512, 3072, 768, N_, false},  {64, 12288, 4096, N_, false},
        {128, 128, 16384, N_, false},   {1536, 1536, 1536, N_, false}, {4096, 4096, 128, N_, false},
        {8192, 8192, 64, N_, false},    {8192, 8192, 256, N_, false}, {2881, 1717, 51, N_, false},
        {2048, 2048, 2048, N_, false},  {4096, 4096, 4096, ALL, false}, {8192, 8192, 8192, N_, false},
        {4096, 768, 3072, N_, false},   {512, 16384, 4096, N_, false}, {1001, 999, 997, ALL, true},
        {333, 777, 129, ALL, false},    {129, 65, 33, N_, false},     {200, 100, 20, ALL, true},
        {1, 1, 1, N_, false},
    };
    const Config configs[] = {
        CONFIG("p128", p128, Dm128),         CONFIG("p64", p64, Dm64),
        CONFIG("p32", p32, Dm32),            CONFIG("p32x32", p32x32, Dm32x32),
        CONFIG("128k8", x128k8, Dm128k8),    CONFIG("64k16", x64k16, Dm64k16),
        CONFIG("64s4", x64s4, Dm64s4),       CONFIG("32w2", x32w2, Dm32w2),
        CONFIG("32x32s6", x32s6, Dm32s6),    CONFIG("32x32s6k4", x32s6k4, Dm32s6k4),
        CONFIG("32x64k16", x32x64k16, Dm32x64k16),
    };
    const bool product_only = argc > 2 && !strcmp(argv[2], "product");
    const int n_configs = product_only ? 4 : sizeof configs / sizeof configs[0];
    const unsigned seed = argc > 1 ? atoi(argv[1]) : 1234;
    return run_harness(seed, configs, n_configs, shapes, sizeof shapes / sizeof shapes[0]) != 0;
}
