#!/usr/bin/env bash
# Builds and runs the DGEMM ring-depth experiment on the GPU machine: bash notes/dgemm/stages.sh [seed]
# (stages.cu: ratios to cuBLAS, same run, twice; exits non-zero if any answer differs from cuBLAS's.)
set -euo pipefail
cd "$(dirname "$0")"
nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o /tmp/dgemm-stages stages.cu -lcublas 2> /tmp/dgemm-stages-ptxas.log
grep -E "Compiling entry|spill|Used [0-9]+ registers" /tmp/dgemm-stages-ptxas.log | grep -v "0 bytes spill" | sed 's/^ptxas info *: //' || true
status=0
for i in 1 2; do /tmp/dgemm-stages ${1:-1234} || status=1; done
exit $status
