#!/usr/bin/env bash
# Builds and runs tiles.cu on the GPU machine: bash notes/dgemm-small/run.sh [seed] [header dirs...]
# With no header dirs: the product's header (cuda/), every tile. Each extra dir holds another copy of
# gemm_f64_dmma.cuh, built and run with the product's tiles only (A/B of the header), alternated with cuda/'s.
set -euo pipefail
cd "$(dirname "$0")"
seed=${1:-1234}; shift || true
build() {  # build NAME INCLUDE_DIR
  nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -I "$2" -I ../../cuda -o /tmp/tiles-$1 tiles.cu -lcublas 2> /tmp/tiles-$1.ptxas
  grep -E "spill" /tmp/tiles-$1.ptxas | grep -v "0 bytes spill" | sed "s/^/$1: /" || true
}
build cuda ../../cuda &
i=0; for d in "$@"; do build v$i "$d" & i=$((i+1)); done
wait
status=0
/tmp/tiles-cuda $seed || status=1
for round in 1 2; do
  i=0; for d in "$@"; do echo "== $d"; /tmp/tiles-v$i $seed product || status=1; i=$((i+1)); done
  echo "== cuda"; /tmp/tiles-cuda $seed product || status=1
done
exit $status
