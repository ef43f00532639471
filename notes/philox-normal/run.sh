#!/usr/bin/env bash
# On the GPU machine, from the repository root: builds cuda/random.cu of three directories (old: $OLD, new:
# cuda/, alt: $ALT, default cuda/; stage an old one with
#   mkdir -p notes/philox-normal/old && git show REV:cuda/random.cu > notes/philox-normal/old/random.cu
# and copy cuda/common.cuh beside it), prints the new normal kernel's SASS histogram and runs main.cu
# (NCU=1: also ncu on one launch of new and alt).
set -euo pipefail
d=$(mktemp -d)
here=notes/philox-normal
F="-O3 -std=c++17 --extended-lambda -arch=sm_90"
nvcc $F -DVARIANT=old -I${OLD:-$here/old} -c $here/variant.cu -o "$d/old.o" &
nvcc $F -DVARIANT=new -Icuda -c $here/variant.cu -o "$d/new.o" &
nvcc $F -DVARIANT=alt -I${ALT:-cuda} -c $here/variant.cu -o "$d/alt.o" &
nvcc $F -c $here/main.cu -o "$d/main.o" &
wait
nvcc -arch=sm_90 -cubin $F -Icuda cuda/random.cu -o "$d/new.cubin"
cuobjdump -sass "$d/new.cubin" | awk '/Function : prism_random_normal_f32/{f=1;next} /Function : /{f=0} f' > "${OUT:-$d}/normal_f32.sass"
grep -oE "^\s+/\*[0-9a-f]{4}\*/\s+[@!P0-9 ]*[A-Z][A-Z0-9.]+" "${OUT:-$d}/normal_f32.sass" | awk '{print $NF}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -30
nvcc -arch=sm_90 "$d/main.o" "$d/old.o" "$d/new.o" "$d/alt.o" -lcurand -o "$d/bench"
"$d/bench"
if [ -n "${NCU:-}" ]; then
  ncu --kernel-name regex:normal_f32 --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats --section SchedulerStats --section SpeedOfLight "$d/bench" ncu > "${OUT:-$d}/ncu.txt" 2>&1 || true
fi
