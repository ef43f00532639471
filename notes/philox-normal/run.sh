#!/usr/bin/env bash
# On the GPU machine, from the repository root: builds cuda/random.cu six ways (old: main's Box-Muller in
# $OLD, default notes/philox-normal/old; new: cuda/, the ziggurat's table in shared memory, missed draws
# queued per warp; ldg: -DPRISM_ZIGGURAT_LDG, the table through __ldg; z1024: the 1024-layer table of
# notes/philox-normal/z1024; inline: -DPRISM_ZIGGURAT_INLINE_SLOW, no queue; r64: -DPRISM_ZIGGURAT_MAXNREG=64),
# prints both normal kernels' SASS counts and the new one's histogram, and runs main.cu (NCU=1: also ncu on
# one launch of each variant).
# Compile only, without a GPU: COMPILE_ONLY=1 (curand.h must be on the include path, e.g. CPATH).
set -euo pipefail
d=$(mktemp -d)
here=notes/philox-normal
F="-O3 -std=c++17 --extended-lambda -arch=sm_90"
mkdir -p "$d/z1024"
cp cuda/random.cu cuda/common.cuh cuda/random_polynomials.inc "$d/z1024/"
cp $here/z1024/random_ziggurat.inc "$d/z1024/"
pids=()
nvcc $F -DVARIANT=old -I${OLD:-$here/old} -c $here/variant.cu -o "$d/old.o" & pids+=($!)
nvcc $F -DVARIANT=new -Icuda -c $here/variant.cu -o "$d/new.o" & pids+=($!)
nvcc $F -DVARIANT=ldg -DPRISM_ZIGGURAT_LDG -Icuda -c $here/variant.cu -o "$d/ldg.o" & pids+=($!)
nvcc $F -DVARIANT=z1024 -I"$d/z1024" -c $here/variant.cu -o "$d/z1024.o" & pids+=($!)
nvcc $F -DVARIANT=inline -DPRISM_ZIGGURAT_INLINE_SLOW -Icuda -c $here/variant.cu -o "$d/inline.o" & pids+=($!)
nvcc $F -DVARIANT=r64 -DPRISM_ZIGGURAT_MAXNREG=64 -Icuda -c $here/variant.cu -o "$d/r64.o" & pids+=($!)
nvcc $F -c $here/main.cu -o "$d/main.o" & pids+=($!)
for p in "${pids[@]}"; do wait "$p"; done
nvcc -cubin $F -Icuda cuda/random.cu -o "$d/new.cubin"
nvcc -cubin $F -I${OLD:-$here/old} ${OLD:-$here/old}/random.cu -o "$d/old.cubin"
for v in new old; do
  cuobjdump -sass "$d/$v.cubin" | awk '/Function : prism_random_normal_f32/{f=1;next} /Function : /{f=0} f' > "${OUT:-$d}/normal_f32_$v.sass"
  echo "$v: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' "${OUT:-$d}/normal_f32_$v.sass") SASS instructions in prism_random_normal_f32"
done
grep -oE "^\s+/\*[0-9a-f]{4}\*/\s+[@!P0-9 ]*[A-Z][A-Z0-9.]+" "${OUT:-$d}/normal_f32_new.sass" | awk '{print $NF}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -30
[ -n "${COMPILE_ONLY:-}" ] && { echo "objects in $d"; exit 0; }
nvcc -arch=sm_90 "$d/main.o" "$d/old.o" "$d/new.o" "$d/ldg.o" "$d/z1024.o" "$d/inline.o" "$d/r64.o" -lcurand -o "$d/bench"
"$d/bench"
if [ -n "${NCU:-}" ]; then
  ncu --kernel-name regex:normal_f32 --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats --section SchedulerStats --section SpeedOfLight --section MemoryWorkloadAnalysis "$d/bench" ncu > "${OUT:-$d}/ncu.txt" 2>&1 || true
fi
