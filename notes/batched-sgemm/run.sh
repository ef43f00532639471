#!/usr/bin/env bash
# Builds and runs the batched-SGEMM experiment on the GPU machine: bash notes/batched-sgemm/run.sh [seed]
set -euo pipefail
cd "$(dirname "$0")"
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/batched-sgemm bench.cu -lcublas
/tmp/batched-sgemm ${1:-1234}
