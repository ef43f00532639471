// The wk (k-contiguous weights) sweep of bench.cu.
#include "bench.cu"
#define WK_S(S) CFG(true, S, 2, 2, 4, 2), CFG(true, S, 2, 4, 2, 2), CFG(true, S, 2, 4, 2, 4), CFG(true, S, 1, 2, 4, 2), CFG(true, S, 1, 1, 8, 2)
std::vector<Config> configs() { return {WK_S(8), WK_S(16)}; }
