#!/bin/sh
# One GPU call for the kernel packages under kernels/build/ (carried there): correctness of
# every schedule on every package, timing at 49 rows, memcheck/racecheck on a few cases,
# and the tensor-core instructions in the SASS. Writes logs and JSON under $OUT.
set -u
OUT=${OUT:-/tmp/rf_kernels_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for p in kernels/build/pkg_*; do
  n=$(cuobjdump -sass "$p/librowfuse_pkg.so" 2>/dev/null | grep -c HMMA)
  echo "sass $p HMMA=$n"
done
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 python3 kernels/gpu_check.py \
  ${RF_SAN_PKGS:-kernels/build/pkg_c13_h40_t16 kernels/build/pkg_c256_h256_t16} --rows 17,100 \
  > "$OUT/memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -3 "$OUT/memcheck.log"
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 3 python3 kernels/gpu_check.py \
  ${RF_RACE_PKGS:-kernels/build/pkg_c48_h96_t16 kernels/build/pkg_c256_h256_t16} --rows 49 \
  > "$OUT/racecheck.log" 2>&1; echo "racecheck rc=$?"; tail -3 "$OUT/racecheck.log"
python3 kernels/gpu_check.py kernels/build/pkg_* ${RF_CHECK_ARGS:---time} --json "$OUT/gpu_check.json" 2>&1 \
  | tee "$OUT/gpu_check.log" | grep -v "^ok "
