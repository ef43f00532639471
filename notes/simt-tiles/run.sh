#!/usr/bin/env bash
# On the GPU machine, from the repository root: builds main.cu (the SIMT tile shapes against cuBLAS) and runs it.
set -euo pipefail
d=$(mktemp -d)
nvcc -O3 -std=c++17 -arch=sm_90 -Icuda notes/simt-tiles/main.cu -lcublas -o "$d/simt-tiles"
"$d/simt-tiles"
