#!/usr/bin/env bash
# The GPU check, run on the GPU machine in one call from the repository root, after
# tests/gpu/prepare.sh made build-gpu/ on the build machine (carry build-gpu):
#   1. the runtime's unit test twice: hiding the GPU from itself (NO_DEVICE paths), and
#      with --gpu (empty-graph capture error, buffers, cuBLASLt capture and timing),
#   2. `rowfuse check` on every package at its shapes (build-gpu/shapes.txt) plus 1 and
#      4096 rows of the 49x48x96 package and multi-tile row counts of three more: every
#      schedule and cuBLASLt, graph replay into a NaN-poisoned Y, compared with the CPU
#      reference (mixed precision),
#   3. compute-sanitizer memcheck, racecheck, synccheck and initcheck on the rowfuse kernels
#      (all four schedules) at the first four shapes (49x48x96 has a partial row tile,
#      100x40x72 partial tiles in every dimension), requiring zero errors,
#   4. the drop-in torch module (tests/gpu/torch_block.py) on the example's package,
#   5. a table (last), and JSON + logs under $OUT (default out/gpu).
# Exit status 0 only when everything passed.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=build-gpu
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
T0=$SECONDS

CUDA_LIB=/usr/local/cuda/lib64
LD="$PWD/$B/lib:$CUDA_LIB"
if [ ! -e "$CUDA_LIB/libcublasLt.so.13" ]; then
    PIPLIB=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null || true)
    [ -n "$PIPLIB" ] && LD="$LD:$PIPLIB"
fi
export LD_LIBRARY_PATH="$LD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

CHK="$B/bin/rowfuse check"
# 0 when the package at $1 holds the Hopper schedule (C and H multiples of 8)
has_wgmma() {
    python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))["schedules"]["persistent-wgmma"]["available"] else 1)' \
        "$1/plan.json" 2>/dev/null
}
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1); check program: $CHK"

echo "== 1. unit test: no GPU visible to it, then --gpu"
(cd "$B/bin" && ./test_runtime_nogpu && ./test_runtime_nogpu --gpu) >"$OUT/unit.log" 2>&1
UNIT_RC=$?
grep -E "passed|failed|cublaslt" "$OUT/unit.log" | tail -4

echo "== 2. check"
SHAPES=""
PKGS=()
MISSING=0
while read -r rows c h; do
    SHAPES="$SHAPES${SHAPES:+,}${rows}x${c}x${h}"
    if [ -f "$B/pkgs/${rows}x${c}x${h}/plan.json" ]; then
        PKGS+=("$B/pkgs/${rows}x${c}x${h}")
    else
        echo "  no package for ${rows}x${c}x${h} (its compile failed): cuBLASLt only"
        MISSING=$((MISSING + 1))
    fi
done <"$B/shapes.txt"
SHAPES="$SHAPES,1x48x96,4096x48x96"
# Blocks that walk several tiles (more tiles than one wave of blocks), so the Hopper
# kernel's X ring and chunk ring wrap across tiles: resident weights (64x128), streamed
# weights (256x208, a seed-2026 shape) and the channels split over two warpgroups
# (512x2048, the benchmark's package).
SHAPES="$SHAPES,130000x64x128,50000x256x208,9000x512x2048"
[ -f "$B/pkgs/8192x512x2048/plan.json" ] && PKGS+=("$B/pkgs/8192x512x2048")
# persistent-wgmma first, one process per package: a trapped kernel (the mbarrier
# watchdog, a TMA fault) poisons its process's CUDA context, so it must not take the other
# schedules' results with it. When any of these fails, the main check leaves it out.
WGMMA_RC=0
# check_wgmma PKG SHAPES: persistent-wgmma alone on one package, in its own process
check_wgmma() {
    local name
    name=$(basename "$1")
    timeout 90 $CHK "$1" --shapes "$2" --seed "${SEED:-20261202}" --replays 100 \
        --variants persistent-wgmma >"$OUT/wgmma-$name.log" 2>&1
    local rc=$?
    echo "  persistent-wgmma $name: exit $rc, $(grep -cw pass "$OUT/wgmma-$name.log") pass, $(grep -cE 'FAIL|ERROR' "$OUT/wgmma-$name.log") FAIL/ERROR"
    grep -E "FAIL|ERROR" "$OUT/wgmma-$name.log" | head -3 | cut -c1-240 | sed 's/^/    /'
    [ "$rc" = 0 ] || WGMMA_RC=1
}
for pkg in "${PKGS[@]}"; do
    has_wgmma "$pkg" && check_wgmma "$pkg" "$SHAPES"
done
# block pairs walking several tiles (tests/gpu/prepare.sh, persistent-wgmma variants), at
# their planned rows and a partial tile; the pairs also run under the sanitizers below
for v in pair-walk:1000x96x200,999x96x200 pair-stream:2000x256x1024,1999x256x1024 \
    4096x128x512-nopair:4096x128x512,4001x128x512 \
    blocked-walk:3000x264x1000,2999x264x1000,130x264x1000; do
    check_wgmma "$B/pkgs/${v%%:*}" "${v#*:}"
done
# the pair's exchange (2 pairs, 8 tiles each) and the blocked ring (8 blocks, 2 tiles each)
for v in pair-walk:1000x96x200 blocked-walk:1000x264x1000; do
    for tool in memcheck racecheck synccheck; do
        log="$OUT/san-${v%%:*}-$tool.log"
        timeout 90 compute-sanitizer --tool "$tool" --error-exitcode 99 $CHK "$B/pkgs/${v%%:*}" \
            --shapes "${v#*:}" --variants persistent-wgmma >"$log" 2>&1
        rc=$?
        echo "  $tool $v: exit $rc, $(grep -Eo 'ERROR SUMMARY: [0-9]+|RACECHECK SUMMARY: [0-9]+ hazard' "$log" | tail -1)"
        [ "$rc" = 0 ] || WGMMA_RC=1
    done
done
VARIANTS_ARG=()
[ "$WGMMA_RC" = 0 ] || VARIANTS_ARG=(--variants persistent-smem,persistent-gmem,conventional,cublaslt)
$CHK "${PKGS[@]}" --shapes "$SHAPES" --seed "${SEED:-20261202}" --replays 1000 "${VARIANTS_ARG[@]}" \
    --json "$OUT/check.json" >"$OUT/check.log" 2>&1
CHECK_RC=$?
[ "$WGMMA_RC" = 0 ] || CHECK_RC=1
grep -E "FAIL|ERROR" "$OUT/check.log" | head -20
tail -1 "$OUT/check.log"
echo "  check exit $CHECK_RC after $((SECONDS - T0)) s"

echo "== 3. compute-sanitizer"
: >"$OUT/sanitizer.log"
: >"$OUT/sanitizer.tsv"
head -4 "$B/shapes.txt" | while read -r rows c h; do
    pkg="$B/pkgs/${rows}x${c}x${h}"
    # the Hopper schedule where the package has it (C and H multiples of 8)
    VARIANTS=persistent-smem,persistent-gmem,conventional
    has_wgmma "$pkg" && VARIANTS="$VARIANTS,persistent-wgmma"
    for tool in memcheck racecheck synccheck initcheck; do
        t1=$SECONDS
        {
            echo "### $tool ${rows}x${c}x${h}"
            timeout 60 compute-sanitizer --tool "$tool" --error-exitcode 99 $CHK "$pkg" \
                --shapes "$rows" --variants "$VARIANTS"
            echo "### exit $?"
        } >"$OUT/san.tmp" 2>&1
        cat "$OUT/san.tmp" >>"$OUT/sanitizer.log"
        rc=$(sed -n 's/^### exit \([0-9]*\)$/\1/p' "$OUT/san.tmp")
        errs=$(grep -Eo 'ERROR SUMMARY: [0-9]+' "$OUT/san.tmp" | grep -Eo '[0-9]+$' | tail -1)
        [ -z "$errs" ] && errs=$(grep -Eo 'RACECHECK SUMMARY: [0-9]+ hazards? displayed \([0-9]+ errors?' "$OUT/san.tmp" | grep -Eo '\([0-9]+' | tr -d '(' | tail -1)
        printf '%s\t%s\t%s\t%s\t%s\n' "${rows}x${c}x${h}" "$tool" "${errs:-?}" "$rc" "$((SECONDS - t1))" >>"$OUT/sanitizer.tsv"
        echo "  $tool ${rows}x${c}x${h}: errors=${errs:-?} exit=$rc ($((SECONDS - t1)) s)"
    done
done
rm -f "$OUT/san.tmp"

echo "== 3b. planted GPU faults: rowfuse check must fail them, racecheck must see the race"
FAULT_RC=0
for fault in no-pad no-barrier; do
    $CHK "$B/pkgs/fault-$fault" --shapes 100,4096 --variants persistent-smem,persistent-gmem,conventional \
        --replays 100 >"$OUT/fault-$fault.log" 2>&1
    rc=$?
    fails=$(grep -c "FAIL" "$OUT/fault-$fault.log")
    echo "  $fault: rowfuse check exit $rc, $fails FAIL rows"
    grep "FAIL" "$OUT/fault-$fault.log" | head -3 | cut -c1-200 | sed 's/^/    /'
    [ "$rc" != 0 ] || FAULT_RC=1
done
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 99 $CHK "$B/pkgs/fault-no-barrier" \
    --shapes 100 --variants persistent-smem >"$OUT/fault-racecheck.log" 2>&1
rc=$?
hazards=$(grep -Eo 'RACECHECK SUMMARY: [0-9]+ hazard' "$OUT/fault-racecheck.log" | grep -Eo '[0-9]+' | head -1)
echo "  no-barrier under racecheck: exit $rc, ${hazards:-0} hazards"
[ "$rc" = 99 ] || FAULT_RC=1
echo "  planted faults: $([ $FAULT_RC = 0 ] && echo 'all caught' || echo 'NOT all caught')"
[ "$FAULT_RC" = 0 ] || UNIT_RC=1

echo "== 4. the drop-in torch module (compile_block on the example's package)"
ROWFUSE_RUNTIME_LIB="$PWD/$B/lib/librowfuse_runtime.so" ROWFUSE_LIB="$PWD/$B/lib/librowfuse.so" \
    python3 tests/gpu/torch_block.py "$B/pkgs/example" >"$OUT/torch_block.log" 2>&1
TORCH_RC=$?
cat "$OUT/torch_block.log" | tail -8
[ "$TORCH_RC" = 0 ] || UNIT_RC=1

echo "== 5. summary after $((SECONDS - T0)) s"
python3 tests/gpu/summarize.py "$OUT" "$UNIT_RC" "$CHECK_RC" "$MISSING"
