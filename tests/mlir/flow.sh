#!/usr/bin/env bash
# The example model through the MLIR flow and IREE, on a machine without a GPU (`make mlir`
# runs it after the lit tests):
#   1. export examples/residual_mlp.py at 49 rows to ONNX;
#   2. `rowfuse iree` for the CPU (llvm-cpu) in the stock, conventional and persistent-smem
#      schedules (IREE generates the kernels: one dispatch per kernel of the schedule), each
#      module checked against the CPU reference (python -m rowfuse.iree.block check: the
#      one comparison of rowfuse/mlp.h, the derived per-element bound, and the interpreter
#      on the ONNX model itself);
#   3. `rowfuse iree --device cuda` with the package's kernels as custom dispatches
#      (persistent-smem, conventional) and stock: compiled, not run; the adapted PTX
#      assembled by ptxas for sm_90a when ptxas is found; launches counted in IREE's hal phase;
#   4. the bigger model (python -m rowfuse.iree.model: the lab's attention, then a token
#      residual MLP rowfuse schedules, linked into one IREE module): for llvm-cpu in
#      persistent-smem (the block one dispatch) and stock (IREE's own lowering, two), each
#      run through the IREE runtime against PyTorch fp64; b2 zeroed in the rowfuse function
#      (a planted fault) must fail that check; for cuda the package's fused_smem kernel as
#      the block's one dispatch (compiled, not run). Each build checks the splice itself.
# Output in $OUT (default build-mlir/flow); every folder keeps contract.mlir,
# scheduled.mlir, iree_input.mlir and module.vmfb. Environment: RF_BIN (rowfuse, default
# build/rowfuse), RF_MLIR_BIN_DIR (rowfuse-opt's folder), RF_PYTHON.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD/examples${PYTHONPATH:+:$PYTHONPATH}"
ROWFUSE=${RF_BIN:-build/rowfuse}
PY=${RF_PYTHON:-python3}
OUT=${OUT:-build-mlir/flow}
IREE=${RF_IREE_COMPILE:-iree-compile}
rm -rf "$OUT" && mkdir -p "$OUT"

echo "== rowfuse compile keeps the block's MLIR; the schedule pass must name the plan's kernels"
for opts in "" "--tile-rows 32" "--schedule conventional"; do
    # shellcheck disable=SC2086
    "$ROWFUSE" compile --mlp 300x48x96 $opts -o "$OUT/pkg" >"$OUT/pkg.log"
    grep -E '^  (schedule|MLIR)' "$OUT/pkg.log"
    grep -q 'schedule pass agrees with the plan' "$OUT/pkg.log" &&
        grep -q 'rowfuse.linear' "$OUT/pkg/contract.mlir" &&
        grep -q 'rowfuse.kernel' "$OUT/pkg/scheduled.mlir" ||
        { echo "FAILED: rowfuse compile $opts: no contract.mlir and scheduled.mlir"; exit 1; }
done
echo "== rowfuse compile --target iree (llvm-cpu): an IREE module instead of a package"
"$ROWFUSE" compile --mlp 49x48x96 --target iree --device llvm-cpu --schedule conventional \
    -o "$OUT/compile-iree" | tail -1
[ -s "$OUT/compile-iree/module.vmfb" ] || { echo "FAILED: no module.vmfb"; exit 1; }

echo "== export the example (examples/residual_mlp.py, 49 rows)"
"$PY" -m rowfuse.export residual_mlp:make --rows 49 -o "$OUT/model.onnx" >/dev/null

# One `rowfuse iree` build into DIR: its exit status decides (the log is kept in DIR.log and
# printed on failure), the module must exist, and the lines matching PATTERN are shown.
iree_build() { # DIR PATTERN rowfuse-iree-arguments...
    local dir=$1 pattern=$2
    shift 2
    if ! "$ROWFUSE" iree "$@" -o "$dir" >"$dir.log" 2>&1; then
        echo "FAILED: rowfuse iree $* -o $dir:" >&2
        cat "$dir.log" >&2
        exit 1
    fi
    [ -s "$dir/module.vmfb" ] || { echo "FAILED: $dir: no module.vmfb" >&2; exit 1; }
    sed -n -E "/$pattern/p" "$dir.log"
}

echo "== IREE CPU modules (llvm-cpu), checked against the reference"
CPU_DIRS=()
for s in stock conventional persistent-smem; do
    iree_build "$OUT/cpu-$s" '^(@main|  why|  launches|iree )' "$OUT/model.onnx" --schedule "$s" \
        --device llvm-cpu
    CPU_DIRS+=("$OUT/cpu-$s")
done
# the folders by name, not by a glob: a schedule whose folder was never made fails here
"$PY" -m rowfuse.iree.block check "${CPU_DIRS[@]}" --model "$OUT/model.onnx" --trials 3 \
    -o "$OUT/check.json"

# launches of one call: hal.command_buffer.dispatch ops in IREE's hal phase
launches() {
    "$IREE" "$1/iree_input.mlir" --iree-hal-target-device=cuda --iree-cuda-target=sm_89 \
        --compile-to=hal | grep -c 'hal.command_buffer.dispatch<'
}

echo "== IREE CUDA modules (compiled here, run on the GPU machine: tests/gpu/mlir.sh)"
for s in persistent-smem conventional stock; do
    iree_build "$OUT/cuda-$s" '^iree ' "$OUT/model.onnx" --schedule "$s" --device cuda
done
expect() { # folder, launches
    local n
    n=$(launches "$1")
    if [ "$n" != "$2" ]; then
        echo "flow.sh: $1: $n launches per call, expected $2" >&2
        exit 1
    fi
    echo "  $1: $n launch(es) per call"
}
expect "$OUT/cuda-persistent-smem" 1
expect "$OUT/cuda-conventional" 2
expect "$OUT/cuda-stock" 2
PTXAS=$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null || true)
if [ -n "$PTXAS" ]; then
    # the schedules with the package's kernels, by name: each must have its adapted PTX
    for s in persistent-smem conventional; do
        ptx=()
        for f in "$OUT/cuda-$s"/*.iree.ptx; do
            [ -e "$f" ] && ptx+=("$f")
        done
        [ "${#ptx[@]}" -ge 1 ] || { echo "FAILED: $OUT/cuda-$s: no adapted PTX" >&2; exit 1; }
        for f in "${ptx[@]}"; do
            "$PTXAS" -arch=sm_90a "$f" -o "${f%.ptx}.cubin"
            echo "  ptxas sm_90a: $s/$(basename "$f") ok"
        done
    done
else
    echo "  (no ptxas here: the adapted PTX was not assembled)"
fi

echo "== a model bigger than the block (python -m rowfuse.iree.model)"
"$PY" -m rowfuse.iree.model build -o "$OUT/model-cpu-persistent-smem" | tail -n 1
"$PY" -m rowfuse.iree.model build -o "$OUT/model-cpu-stock" --schedule stock | tail -n 1
"$PY" -m rowfuse.iree.model check "$OUT/model-cpu-persistent-smem" "$OUT/model-cpu-stock" \
    --trials 3 -o "$OUT/model-check.json"
"$PY" -m rowfuse.iree.model build -o "$OUT/model-cpu-fault" --plant-fault zero-b2 | tail -n 1
if "$PY" -m rowfuse.iree.model check "$OUT/model-cpu-fault" --trials 1 >"$OUT/model-fault.log"; then
    echo "flow.sh: the model with b2 zeroed in the rowfuse function passed the check" >&2
    exit 1
fi
echo "  planted fault (b2 zeroed in the rowfuse function) fails the check, as it must:"
head -n 1 "$OUT/model-fault.log" | sed 's/^/    /' | cut -c1-200
"$PY" -m rowfuse.iree.model build -o "$OUT/model-cuda-persistent-smem" --device cuda | tail -n 1
echo "flow.sh: ok ($OUT)"
