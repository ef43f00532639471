#!/usr/bin/env bash
# On the GPU machine, from the repository root: sweep.cu against cuda/norms.cu and against each directory
# given (a copy of norms.cu with kit.cuh and common.cuh beside it, e.g. another BN_VALUES).
set -euo pipefail
d=$(mktemp -d)
for dir in cuda "$@"; do
  nvcc -O3 -std=c++17 --extended-lambda -arch=sm_90 -I"$dir" -Icuda notes/batch-norm-stats/sweep.cu -o "$d/sweep" 
  echo "== $dir"; "$d/sweep"
done
