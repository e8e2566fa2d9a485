#!/bin/sh
# One GPU call for the candidates of kernels/build_opt.sh (carry kernels/build/opt/slim):
# correctness (rows 1, 17, 1000 and the timed shapes) and timing of every package, memcheck
# and racecheck of the changed code paths, then a second timing pass in reverse order.
# Logs and JSON under $OUT.
set -u
OUT=${OUT:-/tmp/rf_opt_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
S=kernels/build/opt/slim
SHAPES=131072x32x64,4096x128x512,49x48x96
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
PK=$(ls -d $S/c*)
timeout 90 python3 kernels/gpu_check.py $PK --rows 1,17,1000 --time --all-tiles \
  --time-rows 0 --time-shapes $SHAPES --json "$OUT/check1.json" > "$OUT/check1.log" 2>&1
echo "check1 rc=$?"; grep -E "^\| |FAIL|cases" "$OUT/check1.log"
SAN="$S/san_c32_ring $S/san_c32_mb6 $S/c128_yv2 $S/c48_yv2"
timeout 50 compute-sanitizer --tool memcheck --error-exitcode 3 python3 kernels/gpu_check.py \
  $SAN --rows 17,1000 > "$OUT/memcheck.log" 2>&1
echo "memcheck rc=$?"; tail -3 "$OUT/memcheck.log"
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 3 python3 kernels/gpu_check.py \
  $SAN --rows 17,1000 > "$OUT/racecheck.log" 2>&1
echo "racecheck rc=$?"; tail -3 "$OUT/racecheck.log"
PR=$(ls -d $S/c* | sort -r)
timeout 35 python3 kernels/gpu_check.py $PR --rows 1 --time --all-tiles --quick \
  --time-rows 0 --time-shapes $SHAPES --json "$OUT/check2.json" > "$OUT/check2.log" 2>&1
echo "check2 rc=$?"; grep -E "^\| .*persistent-smem \| [0-9]" "$OUT/check2.log"
