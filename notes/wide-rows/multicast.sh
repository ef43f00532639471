#!/usr/bin/env bash
# On the GPU machine, from the repository root: builds notes/wide-rows/multicast.cu (sm_90a: the multicast
# form of cp.async.bulk) and runs it on every GPU nvidia-smi lists, one after the other. Arguments go to
# the program (--stages S caps the ring depth; --var slice|warp times and checks one of the two rings;
# --no-diag, --no-check). Exits nonzero when a check fails on any GPU.
# PRISM_NVCC_FLAGS adds flags.
set -euo pipefail
d=$(mktemp -d)
# -gencode rather than -arch=sm_90a: nvcc 13.0 also compiles a plain compute_90 PTX for -arch=sm_90a,
# where the multicast is only advisory-supported.
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a ${PRISM_NVCC_FLAGS:-} -Icuda \
  notes/wide-rows/multicast.cu -o "$d/multicast"
rc=0
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then n=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | wc -l)
else n=$(nvidia-smi -L | wc -l); fi
for i in $(seq 0 $((n - 1))); do
  echo "== GPU $i"
  "$d/multicast" --device "$i" "$@" || rc=1
done
exit $rc
