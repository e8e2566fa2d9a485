#!/usr/bin/env bash
# Prepares, on a machine WITHOUT a GPU, everything tests/gpu/all.sh needs on the GPU
# machine (which has no CuTe DSL): the rowfuse CLI, the runtime test, the libraries the
# Python bench loads, and every package the checks and benchmarks use, each made by
# `rowfuse compile --mlp RxCxH` (the one path to a package). Output (git-ignored) in
# build-gpu/, a few tens of MiB, carried as one path:
#   build-gpu/bin/     rowfuse, test_runtime_nogpu, librf_test_fake_pkg.so
#   build-gpu/lib/     librowfuse.so, librowfuse_runtime.so, libcjson, libprotobuf-c
#   build-gpu/pkgs/    RxCxH/{plan.json, weights.bin, librowfuse_pkg.so} (slim copies)
#   build-gpu/shapes.txt        the check's shapes: 3 fixed + N_RANDOM seeded random ones
#   build-gpu/bench_shapes.txt  the development shapes of BENCHMARKING.md
# Environment: JOBS (parallel compiles, default 2), SEED (shape draw, default 2026),
# N_RANDOM (default 20). A package is rebuilt when the planner or generator sources change.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build-gpu
JOBS=${JOBS:-2}
SEED=${SEED:-2026}
N_RANDOM=${N_RANDOM:-20}
mkdir -p "$B/bin" "$B/lib" "$B/pkgs" "$B/work"

echo "== build (cmake, $B/cmake)"
cmake -S . -B "$B/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    >"$B/cmake.log" 2>&1 || { cat "$B/cmake.log"; exit 1; }
cmake --build "$B/cmake" -j "$JOBS" --target rowfuse test_runtime_nogpu rf_test_fake_pkg \
    rowfuse_runtime_shared rowfuse_shared >"$B/build.log" 2>&1 || { tail -30 "$B/build.log"; exit 1; }
cp "$B/cmake/rowfuse" "$B/cmake/test_runtime_nogpu" "$B/cmake/librf_test_fake_pkg.so" "$B/bin/"
cp -L "$B/cmake/librowfuse.so" "$B/cmake/src/runtime/librowfuse_runtime.so" "$B/lib/"
for lib in $(ldd "$B/bin/rowfuse" "$B/lib/librowfuse.so" | awk '/=> \// {print $3}' |
    grep -E 'cjson|protobuf-c|libzip|libbz2|libgomp' | sort -u); do
    cp -L "$lib" "$B/lib/"
done

echo "== shapes ($N_RANDOM random, seed $SEED, plus fixed ones)"
python3 tests/gpu/shapes.py --seed "$SEED" --random "$N_RANDOM" >"$B/shapes.txt"
echo "49 48 96
64 64 128
1000 96 200
4096 128 512
131072 32 64
8192 512 2048" >"$B/bench_shapes.txt"
tr '\n' ';' <"$B/shapes.txt"
echo

# Sources whose change makes every package stale.
STAMP=$(cat kernels/*.py src/compile/*.c src/compile/*.h src/plan/*.c src/pkg/*.c \
    include/rowfuse/plan.h include/rowfuse/kernel_abi.h include/rowfuse/compile.h | sha1sum |
    cut -c1-12)
echo "== packages (rowfuse compile --mlp, $JOBS at a time, sources $STAMP)"
build_one() {
    local rows=$1 c=$2 h=$3 b=$4 stamp=$5
    local name="${rows}x${c}x${h}" work="$b/work/${rows}x${c}x${h}" pkg="$b/pkgs/${rows}x${c}x${h}"
    if [ -f "$pkg/plan.json" ] && [ "$(cat "$pkg/stamp" 2>/dev/null)" = "$stamp" ]; then
        echo "  $name: up to date"
        return 0
    fi
    rm -rf "$work" "$pkg"
    local t0=$SECONDS
    if ! "$b/bin/rowfuse" compile --mlp "$name" -o "$work" >"$b/work/$name.log" 2>&1; then
        echo "  $name: COMPILE FAILED (see $b/work/$name.log)"
        tail -3 "$b/work/$name.log" | sed 's/^/    /'
        return 0
    fi
    mkdir -p "$pkg"
    cp "$work/plan.json" "$work/weights.bin" "$work/librowfuse_pkg.so" "$pkg/"
    echo "$stamp" >"$pkg/stamp"
    echo "  $name: $(sed -n 2p "$b/work/$name.log" | cut -c1-60) ($((SECONDS - t0)) s)"
}
export -f build_one
sort -u "$B/shapes.txt" "$B/bench_shapes.txt" | awk -v b="$B" -v s="$STAMP" '{print $1, $2, $3, b, s}' |
    xargs -P "$JOBS" -L 1 bash -c 'build_one "$@"' _

echo "== the example model's package (rowfuse compile MODEL.onnx, for tests/gpu/torch_block.py)"
if [ ! -f "$B/pkgs/example/plan.json" ] || [ "$(cat "$B/pkgs/example/stamp" 2>/dev/null)" != "$STAMP" ]; then
    rm -rf "$B/work/example" "$B/pkgs/example"
    PYTHONPATH=python:examples python3 -m rowfuse.export residual_mlp:make --rows 49 \
        -o "$B/work/example.onnx" >"$B/work/example.log" 2>&1
    "$B/bin/rowfuse" compile "$B/work/example.onnx" -o "$B/work/example" >>"$B/work/example.log" 2>&1
    mkdir -p "$B/pkgs/example"
    cp "$B/work/example/plan.json" "$B/work/example/weights.bin" \
        "$B/work/example/librowfuse_pkg.so" "$B/pkgs/example/"
    echo "$STAMP" >"$B/pkgs/example/stamp"
fi
echo "  example: $(sed -n 2p "$B/work/example.log" 2>/dev/null | cut -c1-70)"

# A package made with extra compile options: name, RxCxH, options.
build_variant() {
    local name=$1 shape=$2
    shift 2
    local pkg="$B/pkgs/$name"
    if [ ! -f "$pkg/plan.json" ] || [ "$(cat "$pkg/stamp" 2>/dev/null)" != "$STAMP" ]; then
        rm -rf "$B/work/$name" "$pkg"
        "$B/bin/rowfuse" compile --mlp "$shape" "$@" -o "$B/work/$name" >"$B/work/$name.log" 2>&1 ||
            { cat "$B/work/$name.log"; exit 1; }
        mkdir -p "$pkg"
        cp "$B/work/$name/plan.json" "$B/work/$name/weights.bin" "$B/work/$name/librowfuse_pkg.so" "$pkg/"
        echo "$STAMP" >"$pkg/stamp"
    fi
    echo "  $name ($shape $*): ok"
}

echo "== planted GPU faults (tests of the gates): 100x40x72, partial tiles in every dimension"
for fault in no-barrier no-pad; do
    build_variant "fault-$fault" 100x40x72 --plant-fault "$fault"
done

echo "== persistent-wgmma variants: block pairs that walk several tiles, and one block per tile"
# 2 pairs over 16 tiles (resident weights, the X ring wraps); 3 pairs over 32 tiles with
# streamed chunks (the chunk ring wraps across tiles); the 4096x128x512 kernel without pairs;
# 131072x32x64 in 64-row tiles of one warpgroup, and on grids of 1 and 2 blocks per SM (8 and
# 4 tiles per block instead of 2): the bench's A/B of the tile and the grid
build_variant pair-walk 1000x96x200 --hidden-split on --max-grid 4
build_variant pair-stream 2000x256x1024 --hidden-split on --max-grid 6
build_variant 4096x128x512-nopair 4096x128x512 --hidden-split off
build_variant 131072x32x64-t64 131072x32x64 --schedule persistent-wgmma --tile-rows 64
build_variant 131072x32x64-g132 131072x32x64 --max-grid 132
build_variant 131072x32x64-g264 131072x32x64 --max-grid 264
# the blocked weight ring (C > 256: two warpgroups along the channels, streamed weights):
# C = 264 padded to 320, H = 1000 in chunks of 128 (the last one partial), 8 blocks walking
# 47 tiles (the ring and the X buffer wrap across tiles)
build_variant blocked-walk 3000x264x1000 --schedule persistent-wgmma --max-grid 8

echo "== carried size"
du -shc "$B/bin" "$B/lib" "$B/pkgs" | tail -1
ls "$B/pkgs" | wc -l | sed 's/^/packages: /'
