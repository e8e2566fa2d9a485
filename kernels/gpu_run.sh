#!/bin/sh
# One GPU call for the kernel packages under kernels/build/ (carried there): correctness of
# every schedule on every package and timing (gpu_check.py), memcheck/racecheck on a few
# cases, optionally one ncu profile of persistent-smem at 49x48x96. Logs/JSON under $OUT.
#   RF_SAN_PKGS / RF_RACE_PKGS / RF_SAN_ROWS: sanitizer cases; RF_CHECK_ARGS: gpu_check
#   options (default --time); RF_NCU=1: ncu (clock control off) of the 49x48x96 kernel.
set -u
OUT=${OUT:-/tmp/rf_kernels_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for c in kernels/build/pkg_c48_h96_t16/kernels/*.cubin; do
  echo "sass $(basename "$c") HMMA=$(cuobjdump -sass "$c" 2>/dev/null | grep -c HMMA)"
done
SAN_ROWS=${RF_SAN_ROWS:-17,100}
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 python3 kernels/gpu_check.py \
  ${RF_SAN_PKGS:-kernels/build/pkg_c13_h40_t16 kernels/build/pkg_c256_h256_t16} \
  --rows "$SAN_ROWS" > "$OUT/memcheck.log" 2>&1
echo "memcheck rc=$?"; tail -2 "$OUT/memcheck.log"
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 3 python3 kernels/gpu_check.py \
  ${RF_RACE_PKGS:-kernels/build/pkg_c48_h96_t16 kernels/build/pkg_c256_h256_t16} \
  --rows "$SAN_ROWS" > "$OUT/racecheck.log" 2>&1
echo "racecheck rc=$?"; tail -2 "$OUT/racecheck.log"
if [ "${RF_NCU:-0}" = 1 ]; then
  timeout 90 ncu --clock-control none --kernel-name regex:MlpKernel --launch-count 1 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
    python3 kernels/gpu_check.py kernels/build/pkg_c48_h96_t16 --rows 49 > "$OUT/ncu.log" 2>&1
  echo "ncu rc=$?"
  grep -E "Duration|Elapsed Cycles|SM Frequency|Stall|Warp Cycles Per Issued|Theoretical Occ" \
    "$OUT/ncu.log" | head -20
fi
python3 kernels/gpu_check.py kernels/build/pkg_* ${RF_CHECK_ARGS:---time} \
  --json "$OUT/gpu_check.json" 2>&1 | tee "$OUT/gpu_check.log" | grep -v -E "^(ok|time) "
