#!/usr/bin/env bash
# The benchmark of BENCHMARKING.md on the GPU machine, all development shapes in one call
# (run from the repository root after tests/gpu/prepare.sh made build-gpu/ on the build
# machine; carry build-gpu):
#   1. C host: `rowfuse bench PKG --c` per shape (floor, conventional, persistent-smem,
#      persistent-gmem, cuBLASLt), merged into c.json; a failed step fails the run,
#   2. Python host: `python -m rowfuse.bench` over every shape (its own floor, PyTorch
#      eager, torch.compile, Triton fused) into python.json, written after each shape,
#   3. `python -m rowfuse.bench.report` over both: report.md, report.json, report.png/.svg.
# Everything lands in $OUT (default out/bench), at most 7 files. ROWFUSE_GIT_REV names
# the revision (the GPU machine's copy has no git history). SHAPES overrides the list.
# PY_TIMEOUT (seconds, default 480) bounds step 2; python.json is rewritten after every
# shape, so a run cut short keeps the shapes it finished and the report still runs.
# BENCH_PYTHON=0 skips step 2 (the C host's variants alone), BENCH_C=0 step 1.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=build-gpu
OUT=${OUT:-out/bench}
SHAPES=${SHAPES:-49x48x96,64x64x128,1000x96x200,4096x128x512,131072x32x64,8192x512x2048}
REV=${ROWFUSE_GIT_REV:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
mkdir -p "$OUT"
LOG="$OUT/bench.log"
T0=$SECONDS
exec > >(tee -a "$LOG") 2>&1

LD="$PWD/$B/lib:/usr/local/cuda/lib64"
PIPLIB=$(python3 -c 'import nvidia, os; print(":".join(os.path.join(p, d) for p in nvidia.__path__ for d in ("cu13/lib", "cublas/lib", "cuda_cupti/lib") if os.path.isdir(os.path.join(p, d))))' 2>/dev/null || true)
[ -n "$PIPLIB" ] && LD="$LD:$PIPLIB"
export LD_LIBRARY_PATH="$LD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CUPTI=$(find /usr/local/cuda/ /usr/local/cuda/extras/CUPTI/ ${PIPLIB//:/ } -maxdepth 3 -name 'libcupti.so*' 2>/dev/null | head -1)
export ROWFUSE_CUPTI_LIB="$CUPTI"
export ROWFUSE_RUNTIME_LIB="$PWD/$B/lib/librowfuse_runtime.so" ROWFUSE_LIB="$PWD/$B/lib/librowfuse.so"
export ROWFUSE_GIT_REV="$REV" PYTHONPATH=python PYTHONUNBUFFERED=1
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 | head -1); rev $REV; cupti ${CUPTI:-none}"

echo "== 1. C host (rowfuse bench --c)"
TMP=$(mktemp -d)
C_FILES=()
C_RC=0
for s in ${SHAPES//,/ }; do
    [ "${BENCH_C:-1}" = 0 ] && break
    pkg="$B/pkgs/$s"
    if [ ! -f "$pkg/plan.json" ]; then
        echo "  $s: FAILED: no package (its compile failed in prepare.sh)"
        C_RC=1
        continue
    fi
    IFS=x read -r rows c h <<<"$s"
    "$B/bin/rowfuse" bench "$pkg" --c --rows "$rows" --git-rev "$REV" -o "$TMP/c_$s.json"
    rc=$?
    [ -s "$TMP/c_$s.json" ] && C_FILES+=("$TMP/c_$s.json") # failed rows are reported too
    if [ "$rc" != 0 ]; then
        echo "  $s: FAILED: rowfuse bench --c exit $rc"
        C_RC=1
    fi
done
if [ ${#C_FILES[@]} -gt 0 ]; then
    python3 - "$OUT/c.json" "${C_FILES[@]}" <<'PY'
import json, sys
docs = [json.load(open(p)) for p in sys.argv[2:]]
merged = docs[0]
merged["runs"] = [r for d in docs for r in d["runs"]]
merged["seeds"] = [d["seed"] for d in docs]
json.dump(merged, open(sys.argv[1], "w"), indent=1)
PY
fi
echo "  C host done after $((SECONDS - T0)) s (exit $C_RC)"

echo "== 2. Python host (python -m rowfuse.bench)"
if [ "${BENCH_PYTHON:-1}" = 0 ]; then
    echo "  skipped (BENCH_PYTHON=0): the C host's variants only"
    PY_RC=0
else
timeout -s INT "${PY_TIMEOUT:-480}" python3 -m rowfuse.bench --shapes "$SHAPES" \
    -o "$OUT/python.json" >"$TMP/python.md" 2>"$TMP/python.err"
PY_RC=$?
grep -v -E "^(E[0-9]{4}|  triton_mm|  mm |AUTOTUNE|strides:|dtypes:|SingleProcess|Autotune|\{\"num_choices)" "$TMP/python.err" | cut -c1-220
echo "  python exit $PY_RC after $((SECONDS - T0)) s"
fi

echo "== 3. report"
RUNS=()
[ -f "$OUT/c.json" ] && RUNS+=("$OUT/c.json")
[ -f "$OUT/python.json" ] && RUNS+=("$OUT/python.json")
if [ ${#RUNS[@]} -gt 0 ]; then
    python3 -m rowfuse.bench.report "${RUNS[@]}" -o "$OUT" && tail -n 12 "$OUT/report.md"
fi
echo "== done in $((SECONDS - T0)) s (C host exit $C_RC, Python host exit $PY_RC)"
[ "$PY_RC" -eq 0 ] && [ "$C_RC" -eq 0 ]
