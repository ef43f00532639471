#!/usr/bin/env bash
# Builds and runs the DGEMM experiment on the GPU machine: bash notes/dgemm/run.sh [seed]
# (bench.cu: the product's tiles and candidates against cuBLAS, same run, twice; exits non-zero if any answer differs from cuBLAS's.)
set -euo pipefail
cd "$(dirname "$0")"
nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o /tmp/dgemm bench.cu -lcublas 2> /tmp/dgemm-ptxas.log
grep -E "Compiling entry|spill|Used [0-9]+ registers" /tmp/dgemm-ptxas.log | grep -v "0 bytes spill" | sed 's/^ptxas info *: //' || true
status=0
for i in 1 2; do /tmp/dgemm ${1:-1234} || status=1; done
exit $status
