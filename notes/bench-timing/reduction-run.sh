set -u
R=$OUT/r; mkdir -p $R
bash .device/unpack > $R/unpack.log 2>&1
mkdir -p .device-base/bin && tar -xJf .device-base/bin.tar.xz -C .device-base/bin
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt
( time timeout 110 env -u OUT PRISM_JOBS=8 PRISM_LOGS=$R/plain PRISM_ONLY="gemm_gpu cublas_gpu cublaslt_gpu cublas_vs_cublas_gpu matmul_bias_act proptest_gpu autotune_gpu runtime_gpu nn_gpu" bash .device/run-tests ) > $R/plain.log 2>&1
S=16x3072x768,64x768x768,32x768x768,64x4096x4096,64x4096x12288,128x128x16384,512x1024x4096,64x64x131072,41x185x2913,256x256x65536,32x4096x4096,512x512x2048
for i in 1 2; do
  timeout 40 .device-base/bin/bin-prism-gpu bench --groups gemm --gemm $S --out $R/four$i > $R/four$i.log 2>&1
  timeout 40 .device/bin/bin-prism-gpu bench --groups gemm --gemm $S --out $R/one$i > $R/one$i.log 2>&1
done
( time timeout 230 .device/bin/bin-prism-gpu bench --sweep --out $R/sweep ) > $R/sweep.log 2>&1
tar -C $OUT -czf $OUT/r.tgz r
grep -E "passed|FAIL|failed|panicked" $R/plain.log | tail -2; tail -n 7 $R/sweep.log
