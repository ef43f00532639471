#!/usr/bin/env bash
# On the GPU machine, from the repository root: builds and runs the f64 decode experiment (notes/dgemm/decode.cu).
set -euo pipefail
d=$(mktemp -d)
nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v notes/dgemm/decode.cu -o "$d/decode" -lcublas 2>&1 | grep -E "registers|spill" | head -40
"$d/decode" "${1:-1234}"
