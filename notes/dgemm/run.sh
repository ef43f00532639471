#!/usr/bin/env bash
# Builds and runs the DGEMM experiment on the GPU machine: bash notes/dgemm/run.sh [seed] [header dirs...]
# (bench.cu: the product's tiles and candidates against cuBLAS, same run; exits non-zero if any answer differs
# from cuBLAS's.) With no header dirs: every configuration, twice. Each header dir holds another copy of
# gemm_f64_dmma.cuh, built into its own binary that times the product's tiles only, alternated twice with
# cuda/'s (an A/B of the header).
set -euo pipefail
cd "$(dirname "$0")"
seed=${1:-1234}; shift || true
build() {  # build NAME INCLUDE_DIR
  nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -I "$2" -I ../../cuda -o /tmp/dgemm-$1 bench.cu -lcublas 2> /tmp/dgemm-$1.ptxas
  grep -E "spill" /tmp/dgemm-$1.ptxas | grep -v "0 bytes spill" | sed "s/^/$1: /" || true
}
build cuda ../../cuda &
i=0; for d in "$@"; do build v$i "$d" & i=$((i+1)); done
wait
status=0
if [ $# -eq 0 ]; then
  for round in 1 2; do /tmp/dgemm-cuda $seed || status=1; done
  exit $status
fi
for round in 1 2; do
  i=0; for d in "$@"; do echo "== $d"; /tmp/dgemm-v$i $seed product || status=1; i=$((i+1)); done
  echo "== cuda"; /tmp/dgemm-cuda $seed product || status=1
done
exit $status
