#!/usr/bin/env bash
# The scheduler's out-of-sample regret on the GPU machine (issue 9, item 8), run from the
# repository root after tests/gpu/regret_prepare.sh made build-gpu/regret on the build
# machine (carry that one path). For every shape of build-gpu/regret/shapes.tsv with a
# package, cheapest first: `rowfuse bench PKG --c` (the floor, every schedule the package
# holds, cuBLASLt), each variant checked, then 5 rounds x 40 interleaved observations per
# variant (200, not the full bench's 1,000: the whole run must fit in ~5 minutes) with the
# GPU span from CUPTI over those observations; then tests/gpu/regret_summary.py: per
# shape the scheduler's choice, the fastest variant and the regret, and the summary.
# Everything lands in $OUT (default out/regret): regret.md, regret.json, json/*.json,
# status.tsv, regret.log. Budget: no new shape is started after REGRET_DEADLINE seconds
# (default 300); shapes left are "not run" and fail the run. ROWFUSE_GIT_REV names the
# revision (the GPU machine's copy has no git history). Exit status: the summary's (0 only
# when every shape with a package was measured and no buildable variant failed).
set -euo pipefail
cd "$(dirname "$0")/../.."
R=build-gpu/regret
OUT=${OUT:-out/regret}
DEADLINE=${REGRET_DEADLINE:-300}
ROUNDS=${REGRET_ROUNDS:-5}
OBS=${REGRET_OBS:-40}
REV=${ROWFUSE_GIT_REV:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
mkdir -p "$OUT/json"
LOG="$OUT/regret.log"
T0=$SECONDS
exec > >(tee -a "$LOG") 2>&1

[ -f "$R/shapes.tsv" ] || { echo "no $R/shapes.tsv: run tests/gpu/regret_prepare.sh first"; exit 1; }
LD="$PWD/$R/lib:/usr/local/cuda/lib64"
PIPLIB=$(python3 -c 'import nvidia, os; print(":".join(os.path.join(p, d) for p in nvidia.__path__ for d in ("cu13/lib", "cublas/lib", "cuda_cupti/lib") if os.path.isdir(os.path.join(p, d))))' 2>/dev/null || true)
[ -n "$PIPLIB" ] && LD="$LD:$PIPLIB"
export LD_LIBRARY_PATH="$LD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CUPTI=$(find /usr/local/cuda/ /usr/local/cuda/extras/CUPTI/ ${PIPLIB//:/ } -maxdepth 3 -name 'libcupti.so*' 2>/dev/null | head -1 || true)
export ROWFUSE_CUPTI_LIB="$CUPTI" ROWFUSE_GIT_REV="$REV"
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 | head -1); rev $REV; cupti ${CUPTI:-none}"
if [ -z "$CUPTI" ]; then
    echo "FAILED: no libcupti found: the regret needs the GPU span"
    exit 1
fi

echo "== bench --c per shape ($ROUNDS rounds x $OBS observations, cheapest first, deadline ${DEADLINE} s)"
: >"$OUT/status.tsv"
awk -F'\t' '$6 != "none" {printf "%.0f\t%s\t%s\t%s\n", 4 * $1 * $2 * $3, $1, $2, $3}' "$R/shapes.tsv" |
    sort -n >"$OUT/order.tsv"
i=0
while IFS=$'\t' read -r _flops rows c h; do
    name="${rows}x${c}x${h}"
    i=$((i + 1))
    if [ $((SECONDS - T0)) -ge "$DEADLINE" ]; then
        echo "  $name: skipped (deadline)"
        printf '%s\tskipped\t0\n' "$name" >>"$OUT/status.tsv"
        continue
    fi
    t1=$SECONDS
    rc=0
    "$R/bin/rowfuse" bench "$R/pkgs/$name" --c --rows "$rows" --rounds "$ROUNDS" --obs "$OBS" \
        --control-obs 0 --seed "$((20270 + i))" --git-rev "$REV" -o "$OUT/json/$name.json" \
        >"$OUT/json/$name.log" 2>&1 || rc=$?
    # a non-zero exit is expected when the package lacks a schedule (recorded per variant
    # in the JSON); the summary tells those from real failures
    printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t1))" >>"$OUT/status.tsv"
    grep -E "span .* us, event|FAILED|not measured" "$OUT/json/$name.log" | grep -v "^\[bench --c\] empty" |
        sed 's/^\[bench --c\] /    /' | cut -c1-150 || true
    echo "  $name: exit $rc, $((SECONDS - t1)) s (total $((SECONDS - T0)) s)"
done <"$OUT/order.tsv"

echo "== summary after $((SECONDS - T0)) s"
rc=0
python3 tests/gpu/regret_summary.py "$R" "$OUT" || rc=$?
echo "== regret.sh done in $((SECONDS - T0)) s (summary exit $rc)"
exit "$rc"
