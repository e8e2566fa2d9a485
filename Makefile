# rowfuse: the two entry points are `make demo` and `make test` (see README.md).
# Everything else here is a step of those two.
PYTHON ?= python3
BUILD ?= build
JOBS ?= 2
FUZZ_SECONDS ?= 120
CMAKE_FLAGS ?= -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRF_WERROR=ON
# The tests and the demo use rowfuse installed, as a user gets it: `pip install .` into a
# virtual environment inside the build folder. It sees the system's packages (torch, CuTe
# DSL, IREE from `make setup`) instead of downloading them again, and keeps its CMake build
# in $(BUILD)/wheel, so a rebuild is incremental. The plain CMake build in $(BUILD) serves
# the C unit tests, `cmake --install` and rowfuse-opt. No PYTHONPATH: Python imports the
# installed package, and the installed rowfuse runs its Python modules with this venv's
# interpreter (its own bin/python3).
VENV ?= $(BUILD)/venv
VENV_BIN = $(CURDIR)/$(VENV)/bin
export RF_BIN := $(VENV_BIN)/rowfuse
export RF_BUILD_DIR := $(CURDIR)/$(BUILD)

C_FILES = $(shell git ls-files '*.c' '*.h' 'mlir/*.cpp' 2>/dev/null)
PY_DIRS = python tests examples mlir/test

MLIR_BUILD ?= build-mlir
LIT ?= $(firstword $(wildcard /usr/lib/llvm-22/bin/lit) lit)

.PHONY: setup build install demo test unit pytest install-smoke lint asan fuzz mlir clean

setup:
	bash scripts/setup.sh

build:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	$(MAKE) --no-print-directory install

# rowfuse into $(VENV): the library, the CLI and the Python package (pyproject.toml)
install:
	test -x $(VENV_BIN)/python3 || $(PYTHON) -m venv --system-site-packages $(VENV)
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(VENV_BIN)/python3 -m pip install -q \
	  --no-build-isolation --no-deps -C build-dir=$(BUILD)/wheel \
	  -C cmake.define.RF_WERROR=ON .

demo: setup build
	PATH=$(VENV_BIN):$$PATH bash scripts/demo.sh

unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

pytest: build
	$(VENV_BIN)/python3 -m pytest -q tests/python

# pip install . into a fresh venv, used from outside the tree; the C example built against
# `cmake --install $(BUILD)` (tests/install/smoke.sh)
install-smoke: build
	bash tests/install/smoke.sh $(BUILD)

lint:
	clang-format --dry-run --Werror $(C_FILES)
	$(PYTHON) -m ruff check $(PY_DIRS)
	$(PYTHON) -m ruff format --check $(PY_DIRS)

asan:
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DRF_WERROR=ON \
	  -DRF_SANITIZE=ON -DRF_WITH_CUDA=OFF >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS)

fuzz:
	cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_BUILD_TYPE=Debug -DRF_FUZZ=ON >/dev/null
	cmake --build build-fuzz -j $(JOBS) --target fuzz_onnx
	bash tests/fuzz/run.sh build-fuzz/fuzz_onnx $(FUZZ_SECONDS)

# mlir/: rowfuse-opt against MLIR 22 (its own build folder, linking the C core), its lit
# tests, then the example through `rowfuse iree` and IREE (tests/mlir/flow.sh).
mlir: build
	cmake -S . -B $(MLIR_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DRF_WERROR=ON \
	  -DRF_WITH_CUDA=OFF -DRF_WITH_MLIR=ON >/dev/null
	cmake --build $(MLIR_BUILD) -j $(JOBS) --target rowfuse-opt
	$(LIT) -sv $(MLIR_BUILD)/mlir/test
	RF_MLIR_BIN_DIR=$(CURDIR)/$(MLIR_BUILD)/bin RF_PYTHON=$(VENV_BIN)/python3 \
	  OUT=$(MLIR_BUILD)/flow bash tests/mlir/flow.sh

test: setup lint unit pytest install-smoke asan fuzz mlir
	@echo "make test: all suites passed"

clean:
	rm -rf $(BUILD) build-asan build-fuzz $(MLIR_BUILD) demo-out
