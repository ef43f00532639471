#!/usr/bin/env bash
# Builds and runs the tensor-core skinny sweep on the GPU machine: bash notes/skinny-tc/run.sh [seed]
# Each layout runs twice: four copies of the weights rotating (not in L2) and one copy (in L2 after
# the first call, as the prism bench's GEMM rows are).
set -euo pipefail
cd "$(dirname "$0")"
out=${OUT:-/tmp}
for t in wk wl; do
  nvcc -O3 -std=c++17 -arch=sm_90a -Xptxas -v -o /tmp/skinny_$t $t.cu -lcublas > /tmp/ptxas_$t.txt 2>&1 &
done
wait
for t in wk wl; do
  for copies in 1 4; do
    /tmp/skinny_$t ${1:-1234} $copies > $out/sweep_${t}_$copies.txt 2>&1 || { echo "$t failed"; tail $out/sweep_${t}_$copies.txt; }
  done
done
grep BEST $out/sweep_*.txt
