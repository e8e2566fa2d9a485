#!/usr/bin/env bash
# Prepares, on a machine WITHOUT a GPU, what tests/gpu/eval.sh needs on the GPU machine
# (which has no PyPI and no CuTe DSL) for `rowfuse eval --gpu` on the worked example:
#   PREP/example/  examples/eval/example.py's output: eval.csv, model.onnx (block + head),
#                  block.onnx (the block alone), torch_fp64.npy, and report/, the
#                  --cpu-mixed evaluation made here
#   PREP/pkg/      the block's GPU package: `rowfuse compile block.onnx` (sm_90a, CuTe DSL).
#                  The model with its head is not what `rowfuse compile` takes (rf_mlp_match
#                  matches a graph that is the block); eval finds the block inside the model
#                  and runs the package's kernels with the model's own weights.
#   PREP/lib/      shared libraries the rowfuse CLI links that the GPU image may lack
# Usage: bash tests/gpu/eval_prepare.sh [PREP]   (default build-eval-gpu; git-ignored)
# Needs build/rowfuse built here with the CUDA runtime (`make build` with the CUDA
# toolkit). Carry build/rowfuse and PREP to the GPU machine, then run tests/gpu/eval.sh PREP.
# Environment: RF_BIN (default build/rowfuse), PYTHON (default python3), EVAL_ROWS (3000).
set -euo pipefail
cd "$(dirname "$0")/../.."
PREP=${1:-build-eval-gpu}
ROWFUSE=${RF_BIN:-build/rowfuse}
PYTHON=${PYTHON:-python3}
ROWS=${EVAL_ROWS:-3000}
MODEL_ROWS=64 # examples/eval/example.py exports 64 rows per run
[ -x "$ROWFUSE" ] || { echo "no $ROWFUSE: run make build first" >&2; exit 2; }
mkdir -p "$PREP/lib"

echo "== example: synthetic table, training on the CPU, export, --cpu-mixed evaluation"
RF_BIN="$ROWFUSE" "$PYTHON" examples/eval/example.py --out "$PREP/example" --rows "$ROWS"

echo "== the block's GPU package ($MODEL_ROWS rows, schedule auto)"
rm -rf "$PREP/pkg"
"$ROWFUSE" compile "$PREP/example/block.onnx" --rows "$MODEL_ROWS" -o "$PREP/pkg"

echo "== shared libraries"
for lib in $(ldd "$ROWFUSE" | awk '/=> \// {print $3}' |
    grep -E 'libzip|libbz2|cjson|protobuf-c|libgomp' | sort -u); do
    cp -L "$lib" "$PREP/lib/"
done
ls "$PREP/lib"
du -shc "$ROWFUSE" "$PREP" | tail -1
echo "carry: $ROWFUSE $PREP; then on the GPU machine: bash tests/gpu/eval.sh $PREP"
