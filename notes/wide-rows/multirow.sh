#!/usr/bin/env bash
# On the GPU machine, from the repository root: builds notes/wide-rows/multirow.cu against cuda/ and runs it.
set -euo pipefail
d=$(mktemp -d)
nvcc -O3 -std=c++17 -arch=sm_90 -Icuda notes/wide-rows/multirow.cu -o "$d/multirow"
"$d/multirow"
