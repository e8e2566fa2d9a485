#!/usr/bin/env bash
# Prepares, on a machine WITHOUT a GPU, what tests/gpu/mlir.sh needs on the GPU machine
# (PyTorch and the driver, no IREE compiler, no CuTe DSL, no package index): the residual
# MLP block (rowfuse's own generator, --mlp 49x48x96 --seed 1) through `rowfuse iree
# --device cuda` in each schedule, and the package whose kernels the custom dispatches run.
#   build/mlir-gpu/VARIANT/   module.vmfb + contract.mlir (the weights compiled in), for
#       persistent-smem, persistent-gmem, conventional   the package's kernels as IREE
#                                                        custom dispatches (1, 1, 2)
#       conventional-codegen                             the same two kernels, IREE's code
#       stock                                            IREE forms and generates it all
#   build/mlir-gpu/model/VARIANT/   the bigger model (python -m rowfuse.iree.model: the lab's
#       attention, then a token residual MLP 64x64x128 that rowfuse schedules, one IREE
#       module): module.vmfb, weights.npz, splice.json, for persistent-smem and
#       conventional (the package's kernels as the block's custom dispatches) and stock
#   build/mlir-gpu/package/   plan.json, weights.bin, librowfuse_pkg.so (the same package)
#   build/mlir-gpu/lib/       librowfuse.so, librowfuse_runtime.so and what they need that
#                             the GPU image lacks (cJSON, protobuf-c)
#   .whl/                     the iree-base-runtime wheel for the GPU machine's Python 3.12
# Carry build/mlir-gpu and .whl (sizes printed last; under 30 MiB together).
# Every folder under build/mlir-work/ keeps the whole flow (contract, scheduled and IREE
# input MLIR, adapted PTX, package). Environment: PYTHON (default python3), JOBS.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
JOBS=${JOBS:-2}
SHAPE=49x48x96
WORK=build/mlir-work
CARRY=build/mlir-gpu
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"

echo "== build: rowfuse + runtime (build/), rowfuse-opt (build-mlir/)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$JOBS" --target rowfuse rowfuse_shared rowfuse_runtime_shared >/dev/null
cmake -S . -B build-mlir -G Ninja -DCMAKE_BUILD_TYPE=Release -DRF_WITH_CUDA=OFF \
    -DRF_WITH_MLIR=ON >/dev/null
cmake --build build-mlir -j "$JOBS" --target rowfuse-opt >/dev/null
export RF_MLIR_BIN_DIR="$PWD/build-mlir/bin"

echo "== rowfuse iree --mlp $SHAPE --seed 1 --device cuda"
rm -rf "$WORK" "$CARRY" && mkdir -p "$WORK" "$CARRY/lib"
one() { # variant, schedule, kernels
    build/rowfuse iree --mlp "$SHAPE" --seed 1 --device cuda --schedule "$2" --kernels "$3" \
        -o "$WORK/$1" | grep -E '^(@main|  kernel|iree )' || true
    mkdir -p "$CARRY/$1"
    cp "$WORK/$1/module.vmfb" "$WORK/$1/contract.mlir" "$CARRY/$1/"
}
one persistent-smem persistent-smem extern
one persistent-gmem persistent-gmem extern
one conventional conventional extern
one conventional-codegen conventional codegen
one stock stock codegen
echo "== the bigger model (python -m rowfuse.iree.model build --device cuda)"
model() { # variant, schedule
    "$PYTHON" -m rowfuse.iree.model build -o "$WORK/model-$1" --device cuda --schedule "$2" |
        tail -n 1
    mkdir -p "$CARRY/model/$1"
    cp "$WORK/model-$1"/{module.vmfb,weights.npz,splice.json} "$CARRY/model/$1/"
}
model persistent-smem persistent-smem
model conventional conventional
model stock stock
mkdir -p "$CARRY/package"
cp "$WORK"/persistent-smem/package/{plan.json,weights.bin,librowfuse_pkg.so} "$CARRY/package/"

cp -L build/librowfuse.so build/src/runtime/librowfuse_runtime.so "$CARRY/lib/"
for lib in $(ldd build/librowfuse.so build/src/runtime/librowfuse_runtime.so |
    awk '/=> \// {print $3}' | grep -E 'cjson|protobuf-c|libgomp' | sort -u); do
    cp -L "$lib" "$CARRY/lib/"
done
rev=$(git rev-parse HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || rev="$rev-dirty"
echo "$rev" >"$CARRY/REVISION"

RUNTIME_VERSION=$("$PYTHON" -c 'from importlib.metadata import version; print(version("iree-base-runtime"))')
if ! ls .whl/iree_base_runtime-"$RUNTIME_VERSION"-cp312-*.whl >/dev/null 2>&1; then
    echo "== iree-base-runtime $RUNTIME_VERSION wheel for Python 3.12 (.whl)"
    mkdir -p .whl
    rm -f .whl/iree_base_runtime-*.whl
    "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
        "iree-base-runtime==$RUNTIME_VERSION"
fi

echo "== to carry"
du -sh "$CARRY" .whl
total=$(du -sck "$CARRY" .whl | tail -n 1 | cut -f1)
if [ "$total" -gt $((30 * 1024)) ]; then
    echo "mlir_prepare: $CARRY + .whl are ${total} KiB, over the 30 MiB budget" >&2
    exit 1
fi
echo "mlir_prepare: ok (${total} KiB to carry: $CARRY .whl); there: bash tests/gpu/mlir.sh"
