set -u
R=$OUT/r; mkdir -p $R
bash .device/unpack
mkdir -p .device-base/bin && tar -xJf .device-base/bin.tar.xz -C .device-base/bin
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv > $R/gpu.txt
S=1x4096x4096,16x4096x4096,32x4096x4096,64x4096x4096,64x4096x12288,16x3072x768,128x4096x4096,512x512x2048,2881x1717x51,121x1885x505,4096x4096x4096
for i in 1 2; do
  timeout 150 .device-base/bin/bin-prism-gpu bench --groups gemm --gemm $S --out $R/old$i > $R/old$i.log 2>&1
  timeout 150 .device/bin/bin-prism-gpu bench --groups gemm --gemm $S --out $R/new$i > $R/new$i.log 2>&1
done
M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__occupancy_limit_registers,launch__shared_mem_per_block_dynamic
for s in 64x4096x4096 2881x1717x51 121x1885x505; do
  timeout 90 ncu --clock-control none --kernel-id :::4 --metrics $M --csv .device-base/bin/bin-prism-gpu bench --groups gemm --gemm $s --out $R/ncu-$s > $R/ncu-$s.csv 2> $R/ncu-$s.err
done
tar -C $OUT -czf $OUT/r.tgz r
