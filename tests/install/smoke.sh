#!/usr/bin/env bash
# rowfuse installed as a user installs it, used from outside the source tree:
#   1. `pip install .` into a fresh virtual environment. It is made with
#      --system-site-packages and installs with --no-build-isolation, so the heavy
#      dependencies `make setup` installed (torch, CuTe DSL, scikit-build-core) are reused,
#      not downloaded again; rowfuse itself is built from this checkout.
#   2. From an empty folder elsewhere, with no PYTHONPATH, RF_BIN or ROWFUSE_LIB:
#      `rowfuse --version`, `import rowfuse` (the package and the library it loads come from
#      the venv), then the example: export, verify, compile to a package (the CuTe DSL
#      kernels are built ahead of time, no GPU needed), run on the CPU in fp64 and in mixed
#      precision; Y is compared with PyTorch's fp64 forward of the same module.
#   3. `cmake --install C_BUILD --prefix P`, then examples/c built out of tree against P with
#      find_package(rowfuse) and with pkg-config. Without a GPU it only has to compile and
#      link; it is run with no arguments (its usage, exit 2) and, where a GPU is present, on
#      the package of step 2.
# Usage: tests/install/smoke.sh [C_BUILD]   (C_BUILD: a configured CMake build of this
# checkout, default build). Work happens in a new temporary folder, removed at the end.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
C_BUILD=$(cd "${1:-$REPO/build}" && pwd)
PY=${RF_PYTHON:-python3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
unset PYTHONPATH RF_BIN ROWFUSE_LIB ROWFUSE_RUNTIME_LIB RF_PYTHON RF_MLIR_BIN_DIR

echo "== 1. pip install . into a fresh virtual environment"
"$PY" -m venv --system-site-packages "$WORK/venv"
CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-2} "$WORK/venv/bin/python3" -m pip install -q \
  --no-build-isolation "$REPO"
export PATH="$WORK/venv/bin:$PATH"
[ "$(command -v rowfuse)" = "$WORK/venv/bin/rowfuse" ] || {
  echo "smoke: rowfuse on PATH is $(command -v rowfuse), not the venv's" >&2
  exit 1
}

echo "== 2. used from $WORK/user (outside the tree)"
mkdir "$WORK/user"
cp "$REPO/examples/residual_mlp.py" "$WORK/user/"
cd "$WORK/user"
rowfuse --version
SMOKE_VENV="$WORK/venv" python3 - <<'PY'
import os
import rowfuse
from rowfuse.capi import clib, names
here = os.path.dirname(rowfuse.__file__)
assert here.startswith(os.environ["SMOKE_VENV"]), f"rowfuse imported from {here}"
lib = clib.library_path()
assert lib.startswith(here), f"librowfuse.so from {lib}"
print(f"import rowfuse: {here}; library {os.path.basename(lib)}; schedules {names.SCHEDULES}")
PY
python3 -m rowfuse.export residual_mlp:make --rows 49 -o model.onnx
rowfuse verify model.onnx
rowfuse compile model.onnx --rows 49 -o pkg
for f in plan.json librowfuse_pkg.so kernels.json weights.bin; do
  [ -s "pkg/$f" ] || { echo "smoke: the package lacks $f" >&2; exit 1; }
done
python3 -c 'import numpy as np; np.save("x.npy", np.random.default_rng(7).standard_normal((49, 48)).astype(np.float32)); print("input: standard normal, seed 7")'
rowfuse run model.onnx --input x.npy --output y64.npy --precision fp64
rowfuse run model.onnx --input x.npy --output y16.npy --precision mixed
python3 - <<'PY'
import numpy as np
import torch
import residual_mlp

x = torch.from_numpy(np.load("x.npy")).double()
with torch.no_grad():
    ref = residual_mlp.make().double()(x).numpy()
y64, y16 = np.load("y64.npy"), np.load("y16.npy")
assert y64.shape == ref.shape == y16.shape, (y64.shape, y16.shape, ref.shape)
rel64 = np.linalg.norm(y64 - ref) / np.linalg.norm(ref)
rel16 = np.linalg.norm(y16 - ref) / np.linalg.norm(ref)
print(f"rowfuse run vs PyTorch fp64: fp64 rel-L2 {rel64:.2e}, mixed rel-L2 {rel16:.2e}")
assert rel64 < 1e-12, f"fp64 interpreter disagrees with PyTorch fp64: {rel64:.2e}"
assert 0 < rel16 < 1e-2, f"mixed precision off: {rel16:.2e}"
PY

echo "== 3. cmake --install $C_BUILD, examples/c built against it"
cmake --install "$C_BUILD" --prefix "$WORK/prefix" >/dev/null
for f in include/rowfuse/runtime.h lib/librowfuse.so lib/cmake/rowfuse/rowfuseConfig.cmake \
  lib/pkgconfig/rowfuse.pc bin/rowfuse; do
  [ -e "$WORK/prefix/$f" ] || { echo "smoke: cmake --install wrote no $f" >&2; exit 1; }
done
if [ ! -e "$WORK/prefix/lib/librowfuse_runtime.so" ]; then
  echo "== no CUDA in $C_BUILD: no runtime to build the C example against (skipped)"
  exit 0
fi
cmake -S "$REPO/examples/c" -B "$WORK/example" -DCMAKE_PREFIX_PATH="$WORK/prefix" >/dev/null
cmake --build "$WORK/example" >/dev/null
PKG_CONFIG_PATH="$WORK/prefix/lib/pkgconfig" cc -std=c11 -Wall -Wextra -Werror \
  "$REPO/examples/c/run_package.c" -o "$WORK/example/run_package_pc" \
  $(PKG_CONFIG_PATH="$WORK/prefix/lib/pkgconfig" pkg-config --cflags --libs rowfuse-runtime)
for exe in run_package run_package_pc; do
  rc=0
  "$WORK/example/$exe" >/dev/null 2>&1 || rc=$?
  [ "$rc" = 2 ] || { echo "smoke: $exe with no arguments exited $rc, not 2 (usage)" >&2; exit 1; }
done
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  "$WORK/example/run_package" "$WORK/user/pkg"
else
  echo "== no GPU: the C example compiled and linked (find_package and pkg-config); not run"
fi
echo "install smoke: ok"
