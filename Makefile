# rowfuse: the two entry points are `make demo` and `make test` (see README.md).
# Everything else here is a step of those two.
PYTHON ?= python3
BUILD ?= build
JOBS ?= 2
FUZZ_SECONDS ?= 120
CMAKE_FLAGS ?= -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRF_WERROR=ON
export PYTHONPATH := $(CURDIR)/python$(if $(PYTHONPATH),:$(PYTHONPATH))
export RF_BIN := $(CURDIR)/$(BUILD)/rowfuse

C_FILES = $(shell git ls-files '*.c' '*.h' 'mlir/*.cpp' 2>/dev/null)
PY_DIRS = python tests kernels examples mlir/test

MLIR_BUILD ?= build-mlir
LIT ?= $(firstword $(wildcard /usr/lib/llvm-22/bin/lit) lit)

.PHONY: setup build demo test unit pytest lint asan fuzz mlir clean

setup:
	bash scripts/setup.sh

build:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

demo: setup build
	bash scripts/demo.sh

unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

pytest: build
	$(PYTHON) -m pytest -q tests/python

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
	RF_MLIR_BIN_DIR=$(CURDIR)/$(MLIR_BUILD)/bin OUT=$(MLIR_BUILD)/flow bash tests/mlir/flow.sh

test: setup lint unit pytest asan fuzz mlir
	@echo "make test: all suites passed"

clean:
	rm -rf $(BUILD) build-asan build-fuzz $(MLIR_BUILD) demo-out
