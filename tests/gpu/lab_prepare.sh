#!/usr/bin/env bash
# Prepares, on a machine WITHOUT a GPU, what tests/gpu/lab.sh needs on the GPU machine
# (which has PyTorch but no IREE and no package index):
#   build/lab/MODEL/       every model's full lab folder (`python -m rowfuse.lab`: FX, torch
#                          and linalg MLIR, every IREE phase, LLVM IR, PTX, both .vmfb, and
#                          the llvm-cpu module checked against PyTorch here)
#   build/lab-gpu/MODEL/   what travels: the CUDA module.vmfb, weights.npz, index.json
#   .whl/                  the iree-base-runtime wheel for the GPU machine's Python 3.12
# Carry build/lab-gpu and .whl (the sizes are printed last; together well under 40 MiB).
# Environment: PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
MODELS="cnn attention attention_causal gru"
RUNTIME_VERSION=$("$PYTHON" -c 'from importlib.metadata import version; print(version("iree-base-runtime"))')

for m in $MODELS; do
    echo "== lab $m"
    "$PYTHON" -m rowfuse.lab "$m" -o "build/lab/$m" | tail -n 3
done

echo "== carry folder build/lab-gpu"
rm -rf build/lab-gpu
"$PYTHON" -m rowfuse.lab.carry --lab build/lab --target cuda -o build/lab-gpu
# The GPU machine gets the work tree without git: record the revision for the report.
rev=$(git rev-parse HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || rev="$rev-dirty"
echo "$rev" >build/lab-gpu/REVISION
# rowfuse's statistics (librowfuse.so) and the libraries it needs that the GPU image lacks
mkdir -p build/lab-gpu/lib
[ -f build/librowfuse.so ] || { echo "lab_prepare: no build/librowfuse.so: make build first" >&2; exit 1; }
cp -L build/librowfuse.so build/lab-gpu/lib/
for lib in $(ldd build/librowfuse.so | awk '/=> \// {print $3}' | grep -E 'cjson|protobuf-c|libgomp' | sort -u); do
    cp -L "$lib" build/lab-gpu/lib/
done

echo "== iree-base-runtime $RUNTIME_VERSION wheel for Python 3.12 (.whl)"
mkdir -p .whl
rm -f .whl/iree_base_runtime-*.whl
"$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
    "iree-base-runtime==$RUNTIME_VERSION"

echo "== to carry"
du -sh build/lab-gpu .whl
total=$(du -sck build/lab-gpu .whl | tail -n 1 | cut -f1)
if [ "$total" -gt $((40 * 1024)) ]; then
    echo "lab_prepare: build/lab-gpu + .whl are ${total} KiB, over the 40 MiB budget" >&2
    exit 1
fi
echo "lab_prepare: ok (${total} KiB to carry: build/lab-gpu .whl)"
