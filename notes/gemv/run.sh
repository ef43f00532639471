#!/usr/bin/env bash
# Builds and runs the GEMV experiment on the GPU machine: bash notes/gemv/run.sh [seed]
set -euo pipefail
cd "$(dirname "$0")"
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/gemv bench.cu ../../cuda/gemm_simt.cu -lcublas
/tmp/gemv ${1:-1234}
