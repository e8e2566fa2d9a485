#!/usr/bin/env bash
# The main job on the built-in example: export the residual MLP, verify it and print its
# row contract, run the CPU reference on random input, compile the GPU package, and on a
# machine with a GPU check it there (without one, show the compiled artifacts).
# Uses an installed rowfuse: `rowfuse` and a python3 that imports rowfuse, from PATH
# (`make demo` puts its virtual environment first), or $RF_BIN for the CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWFUSE=${RF_BIN:-rowfuse}
OUT=${DEMO_OUT:-demo-out}
ROWS=${DEMO_ROWS:-49}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

echo "== export: examples/residual_mlp.py (48 channels, 96 hidden), $ROWS rows"
(cd examples && python3 -m rowfuse.export residual_mlp:make --rows "$ROWS" -o "$OUT/model.onnx")

echo "== verify"
"$ROWFUSE" verify "$OUT/model.onnx" --contract "$OUT/contract.json"

echo "== CPU reference on random input (fp64 and mixed precision)"
python3 - "$OUT" "$ROWS" <<'PY'
import sys
import numpy as np
out, rows = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng()
np.save(f"{out}/x.npy", rng.standard_normal((rows, 48)).astype(np.float32))
PY
"$ROWFUSE" run "$OUT/model.onnx" --input "$OUT/x.npy" --output "$OUT/y64.npy" --cpu --precision fp64
"$ROWFUSE" run "$OUT/model.onnx" --input "$OUT/x.npy" --output "$OUT/y16.npy" --cpu --precision mixed
python3 - "$OUT" <<'PY'
import sys
import numpy as np
out = sys.argv[1]
y64, y16 = np.load(f"{out}/y64.npy"), np.load(f"{out}/y16.npy")
rel = np.linalg.norm(y16 - y64) / np.linalg.norm(y64)
print(f"y: {y64.shape}, fp64 norm {np.linalg.norm(y64):.4f}; mixed vs fp64 rel-L2 {rel:.2e}")
PY

echo "== compile (sm_90a, ahead of time)"
if "$ROWFUSE" compile "$OUT/model.onnx" --rows "$ROWS" --schedule persistent-smem -o "$OUT/pkg"; then
  "$ROWFUSE" inspect "$OUT/pkg"
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    echo "== GPU check"
    "$ROWFUSE" check "$OUT/pkg"
  else
    echo "== no GPU on this machine: skipping the GPU check; the package above is what a GPU machine runs"
  fi
else
  echo "== compile failed (see above)"
  exit 1
fi
