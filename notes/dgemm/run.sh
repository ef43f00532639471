#!/usr/bin/env bash
# Builds and runs the DGEMM experiment on the GPU machine: bash notes/dgemm/run.sh [seed]
set -euo pipefail
cd "$(dirname "$0")"
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/dgemm bench.cu -lcublas
for i in 1 2; do /tmp/dgemm ${1:-1234}; done
