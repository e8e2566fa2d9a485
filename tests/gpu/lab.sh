#!/usr/bin/env bash
# The lab's GPU half in one call on the GPU machine (from the repository root), after
# tests/gpu/lab_prepare.sh ran on the build machine. Carry: build/lab-gpu .whl
# The GPU machine has PyTorch but no IREE and no package index: the carried
# iree-base-runtime wheel (Python 3.12) is unpacked into build/lab-gpu/site. Then
#   1. python -m rowfuse.lab.gpu, IREE with stream command buffers + PyTorch eager and
#      torch.compile (each also from a CUDA graph): check against PyTorch fp64, then time;
#   2. the same for IREE with CUDA-graph command buffers (--cuda_use_streams=false), which
#      the runtime reads once per process;
#   3. python -m rowfuse.lab.report: $OUT/lab/report.{md,json,png}, the table printed last.
# Full logs and run JSON under $OUT/lab/. Exit status: 0 when every variant ran and matched.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
DEST=${OUT:-out}/lab
PY=${PYTHON:-python3}
SITE=build/lab-gpu/site
mkdir -p "$DEST"
export PYTHONUNBUFFERED=1
if [ -z "${ROWFUSE_GIT_REV:-}" ] && [ -f build/lab-gpu/REVISION ]; then
    ROWFUSE_GIT_REV=$(cat build/lab-gpu/REVISION)
    export ROWFUSE_GIT_REV
fi

whl=$(find .whl -maxdepth 1 -name 'iree_base_runtime-*cp312*.whl' 2>/dev/null | head -n 1)
if [ -z "$whl" ] || [ ! -d build/lab-gpu ]; then
    echo "lab.sh: carry build/lab-gpu and .whl (made by tests/gpu/lab_prepare.sh)" >&2
    exit 2
fi
rm -rf "$SITE" && mkdir -p "$SITE"
"$PY" -m zipfile -e "$whl" "$SITE" || exit 2
export PYTHONPATH="$PWD/python:$PWD/$SITE${PYTHONPATH:+:$PYTHONPATH}"
export ROWFUSE_LIB="$PWD/build/lab-gpu/lib/librowfuse.so"
export LD_LIBRARY_PATH="$PWD/build/lab-gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$PY" -c 'import iree.runtime as rt; print("iree runtime drivers:", rt.query_available_drivers())' ||
    exit 2
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true

echo "== IREE (streams) + PyTorch eager + torch.compile"
timeout 175 "$PY" -m rowfuse.lab.gpu --lab build/lab-gpu --iree-mode streams \
    -o "$DEST/run_streams.json" >"$DEST/run_streams.log" 2>&1
RC1=$?
grep '^\[lab' "$DEST/run_streams.log" | cut -c1-160
echo "== IREE (CUDA graphs)"
timeout 45 "$PY" -m rowfuse.lab.gpu --lab build/lab-gpu --iree-mode graphs --no-torch \
    -o "$DEST/run_graphs.json" >"$DEST/run_graphs.log" 2>&1
RC2=$?
grep '^\[lab' "$DEST/run_graphs.log" | cut -c1-160

runs=$(ls "$DEST"/run_streams.json "$DEST"/run_graphs.json 2>/dev/null)
if [ -z "$runs" ]; then
    echo "lab.sh: no run wrote its JSON; the logs' tails:" >&2
    tail -n 30 "$DEST"/run_*.log >&2
    exit 1
fi
echo "== report ($DEST/report.md)"
# shellcheck disable=SC2086
"$PY" -m rowfuse.lab.report $runs -o "$DEST"
RC3=$?
echo "== lab.sh: streams run exit $RC1, graphs run exit $RC2, report exit $RC3 (124 = timed out)"
[ "$RC1" = 0 ] && [ "$RC2" = 0 ] && [ "$RC3" = 0 ]
