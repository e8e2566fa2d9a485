#!/usr/bin/env bash
# On the GPU machine, from the repository root, after tests/gpu/eval_prepare.sh made PREP
# on the build machine: `rowfuse eval --gpu` on the worked example (the residual-MLP block
# on the GPU from PREP/pkg, the head on the CPU interpreter), and `--cpu-mixed` on the same
# machine beside it, then a comparison of the two compiled runs (per-row outputs and
# predictions) and a short table last. Writes under $OUT (default out/eval-gpu):
#   gpu/, cpu-mixed/   eval.json, eval.md, outputs_*.npy (+ eval.png when matplotlib is there)
#   compare.txt        the comparison
# Usage: bash tests/gpu/eval.sh [PREP]   (default build-eval-gpu). Environment: RF_BIN
# (default build/rowfuse). Exit status: that of the --gpu evaluation, else of the others.
set -uo pipefail
cd "$(dirname "$0")/../.."
PREP=${1:-build-eval-gpu}
OUT=${OUT:-out/eval-gpu}
ROWFUSE=${RF_BIN:-build/rowfuse}
mkdir -p "$OUT"
T0=$SECONDS

CUDA_LIB=/usr/local/cuda/lib64
LD="$PWD/$PREP/lib:$CUDA_LIB"
if [ ! -e "$CUDA_LIB/libcublasLt.so.13" ]; then
    PIPLIB=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null || true)
    [ -n "$PIPLIB" ] && LD="$LD:$PIPLIB"
fi
export LD_LIBRARY_PATH="$LD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"

EX="$PREP/example"
ARGS=(--model "$EX/model.onnx" --data "$EX/eval.csv" --label label --slice site --slice device
    --cross --no-plot --features "$(printf 'f%d,' $(seq 0 11) | sed 's/,$//')")
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"

echo "== rowfuse eval --gpu --package $PREP/pkg"
"$ROWFUSE" eval "${ARGS[@]}" --gpu --package "$PREP/pkg" -o "$OUT/gpu" 2>&1 | tee "$OUT/gpu.log"
GPU_RC=${PIPESTATUS[0]}

echo "== rowfuse eval --cpu-mixed (same machine, for comparison)"
"$ROWFUSE" eval "${ARGS[@]}" --cpu-mixed -o "$OUT/cpu-mixed" >"$OUT/cpu-mixed.log" 2>&1
CPU_RC=$?
tail -4 "$OUT/cpu-mixed.log"

for d in gpu cpu-mixed; do
    [ -f "$OUT/$d/eval.json" ] && python3 -m rowfuse.eval.plot "$OUT/$d/eval.json" -o "$OUT/$d" \
        >/dev/null 2>&1 || true
done

echo "== comparison"
python3 - "$OUT" "$EX" <<'PY' | tee "$OUT/compare.txt"
import json
import sys

import numpy as np

out, ex = sys.argv[1], sys.argv[2]
try:
    g = json.load(open(f"{out}/gpu/eval.json"))
    c = json.load(open(f"{out}/cpu-mixed/eval.json"))
except OSError as e:
    print(f"no comparison: {e}")
    sys.exit(0)
ya = np.load(f"{out}/gpu/outputs_reference.npy")
yg = np.load(f"{out}/gpu/outputs_compiled.npy")
yc = np.load(f"{out}/cpu-mixed/outputs_compiled.npy")
print(f"device: {g['compiled']['device']}; schedule {g['compiled']['schedule']}")
print(f"placement: {g['placement']['summary']}")
print(f"gpu vs cpu-mixed outputs: max |d| {np.abs(yg - yc).max():.3g}, "
      f"mean |d| {np.abs(yg - yc).mean():.3g}; predictions differ on "
      f"{int((yg.argmax(1) != yc.argmax(1)).sum())} of {len(yg)} rows")
print(f"{'group':32} {'rows':>5} {'acc fp64':>9} {'acc gpu':>9} {'acc mixed':>9} "
      f"{'flips gpu':>9} {'flips mixed':>11} {'p gpu':>8}")
for a, b in zip([g["overall"], *g["slices"]], [c["overall"], *c["slices"]]):
    print(f"{a['name'][:32]:32} {a['count']:5d} {100 * a['reference']['accuracy']:8.2f}% "
          f"{100 * a['compiled']['accuracy']:8.2f}% {100 * b['compiled']['accuracy']:8.2f}% "
          f"{a['flips']:9d} {b['flips']:11d} {a['p_value']:8.3g}")
PY
echo "== eval.sh: gpu exit $GPU_RC, cpu-mixed exit $CPU_RC, $((SECONDS - T0)) s"
[ "$GPU_RC" -ne 0 ] && exit "$GPU_RC"
exit "$CPU_RC"
