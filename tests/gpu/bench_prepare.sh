#!/usr/bin/env bash
# Prepares, on a machine WITHOUT a GPU, what tests/gpu/bench.sh needs on the GPU machine:
# the rowfuse CLI (with `bench --c`), librowfuse_runtime.so for the Python binding, the
# shared libraries the GPU image lacks, and one kernel package per development shape of
# BENCHMARKING.md (kernels/build.py, sm_90a). Output (git-ignored) in build-bench-gpu/:
#   bin/rowfuse  lib/{librowfuse_runtime.so, libcjson, libprotobuf-c}  pkgs/c<C>_h<H>/
# A package that fails to build is reported and left out; bench.sh then records those
# variants as not measured, with the reason. Environment: PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build-bench-gpu
PYTHON=${PYTHON:-python3}
SHAPES="49x48x96 64x64x128 1000x96x200 4096x128x512 131072x32x64 8192x512x2048"
mkdir -p "$B/bin" "$B/lib" "$B/pkgs" "$B/work"

echo "== build (cmake, $B/cmake)"
cmake -S . -B "$B/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    >"$B/cmake.log" 2>&1 || { cat "$B/cmake.log"; exit 1; }
cmake --build "$B/cmake" -j2 --target rowfuse rowfuse_runtime_shared >"$B/build.log" 2>&1 ||
    { tail -30 "$B/build.log"; exit 1; }
cp "$B/cmake/rowfuse" "$B/bin/"
cp -L "$B/cmake/src/runtime/librowfuse_runtime.so" "$B/lib/"
for lib in $(ldd "$B/bin/rowfuse" "$B/lib/librowfuse_runtime.so" | awk '/=> \// {print $3}' |
    grep -E 'cjson|protobuf-c' | sort -u); do
    cp -L "$lib" "$B/lib/"
done

echo "== kernel packages (sm_90a)"
for s in $SHAPES; do
    IFS=x read -r rows c h <<<"$s"
    name="c${c}_h${h}" work="$B/work/c${c}_h${h}" pkg="$B/pkgs/c${c}_h${h}"
    if [ -f "$pkg/librowfuse_pkg.so" ] && [ "$pkg/librowfuse_pkg.so" -nt kernels/rowfuse_kernels.py ] &&
        [ "$pkg/librowfuse_pkg.so" -nt kernels/build.py ]; then
        echo "  $name: up to date"
        continue
    fi
    rm -rf "$work" "$pkg"
    t0=$SECONDS
    if ! "$PYTHON" kernels/build.py --channels "$c" --hidden "$h" --rows "$rows" --tile-rows auto \
        --arch sm_90a --out "$work" --quiet >"$B/work/$name.log" 2>&1; then
        echo "  $name: BUILD FAILED (see $B/work/$name.log)"
        tail -3 "$B/work/$name.log" | sed 's/^/    /'
        continue
    fi
    mkdir -p "$pkg"
    cp "$work/librowfuse_pkg.so" "$work/kernels.json" "$pkg/"
    "$PYTHON" tests/gpu/write_plan.py "$pkg" "$rows"
    echo "  $name: built in $((SECONDS - t0)) s"
done
du -shc "$B/bin" "$B/lib" "$B/pkgs" | tail -1
