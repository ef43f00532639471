#!/usr/bin/env bash
# On the GPU machine, from the repository root: main.cu against cuda/ and against each directory given (copies
# of kit.cuh, common.cuh, norms.cu and softmax.cu); PRISM_NVCC_FLAGS adds flags (e.g. -DPRISM_PARAMS_AHEAD=4).
set -euo pipefail
d=$(mktemp -d)
for dir in cuda "$@"; do
  nvcc -O3 -std=c++17 -arch=sm_90 ${PRISM_NVCC_FLAGS:-} -I"$dir" -Icuda notes/wide-rows/main.cu -o "$d/wide-rows"
  echo "== $dir ${PRISM_NVCC_FLAGS:-}"; "$d/wide-rows"
done
