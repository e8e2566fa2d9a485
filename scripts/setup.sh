#!/usr/bin/env bash
# Installs everything rowfuse needs on a fresh Debian machine, idempotently: the C
# toolchain pieces from apt, the Python side from pip. Fast when all is present.
set -euo pipefail

APT_PACKAGES=(
  cmake ninja-build pkg-config clang libclang-rt-14-dev clang-format
  protobuf-c-compiler libprotobuf-c-dev libonnx-dev libcjson-dev libcsv-dev libzip-dev
  # mlir/ (rowfuse-opt): MLIR 22 and LLVM 22 (libMLIR.so, tablegen, lit, FileCheck, not)
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
)
PIP_PACKAGES=(
  "torch==2.15.0" "onnx==1.23.2" "onnxscript==0.7.2" "numpy>=2" "pytest>=8"
  "ruff==0.17.6" "matplotlib>=3.8" "nvidia-cutlass-dsl==4.8.1"
  "iree-base-compiler==3.13.0" "iree-base-runtime==3.13.0" "iree-turbine==3.9.0"
  # the build backend of `pip install .` (pyproject.toml), used without build isolation
  "scikit-build-core>=0.10"
)

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: apt-get install ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi

PY=${RF_PYTHON:-python3}
if ! "$PY" - "${PIP_PACKAGES[@]}" <<'PYEOF'
import sys
from importlib.metadata import version, PackageNotFoundError
import re
ok = True
for spec in sys.argv[1:]:
    name, op, want = re.match(r"([A-Za-z0-9_.-]+)(==|>=)?(.*)", spec).groups()
    try:
        have = version(name)
    except PackageNotFoundError:
        ok = False
        continue
    if op == "==" and have != want:
        ok = False
sys.exit(0 if ok else 1)
PYEOF
then
  echo "setup: pip install ${PIP_PACKAGES[*]}"
  "$PY" -m pip install -q "${PIP_PACKAGES[@]}"
fi
echo "setup: ok"
