#!/usr/bin/env bash
# On the GPU machine, from the repository root: builds and runs fill.cu (exits non-zero if a variant's values
# differ from the product's fill) and prints the SASS histogram of the product's uniform kernel.
set -euo pipefail
d=$(mktemp -d)
nvcc -O3 -std=c++17 --extended-lambda -arch=sm_90 -o "$d/fill" notes/philox-uniform/fill.cu
cuobjdump -sass -fun prism_random_uniform_f32 "$d/fill" | grep -oE "^\s+/\*[0-9a-f]{4}\*/\s+[@!P0-9 ]*[A-Z][A-Z0-9.]+" | awk '{print $NF}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -20
"$d/fill"
