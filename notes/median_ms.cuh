// The timing the notes' CUDA experiments share: the median of 20 runs of `f` after 5 warm-ups,
// in milliseconds by CUDA events on the default stream.
#pragma once
#include <algorithm>
#include <vector>

template <class F> float median_ms(F f) {
    cudaEvent_t a, b;
    cudaEventCreate(&a), cudaEventCreate(&b);
    for (int i = 0; i < 5; ++i) f();
    std::vector<float> t;
    for (int i = 0; i < 20; ++i) {
        cudaEventRecord(a);
        f();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}
