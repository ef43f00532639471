// The wl (long-side-contiguous weights) sweep of bench.cu.
#include "bench.cu"
#define WL_S(S) CFG(false, S, 4, 2, 4, 2), CFG(false, S, 4, 1, 8, 2), CFG(false, S, 4, 4, 2, 2), CFG(false, S, 4, 2, 4, 4)
std::vector<Config> configs() { return {WL_S(8), WL_S(16)}; }
