#!/usr/bin/env bash
# Prepares, on a machine WITHOUT a GPU, everything tests/gpu/run.sh needs on the GPU
# machine (which has no CuTe DSL): builds the runtime and the check program, compiles one
# kernel package per tested (channels, hidden) with kernels/build.py (sm_90a), and copies
# the few shared libraries the GPU machine lacks. Output (git-ignored) in build-gpu/:
#   build-gpu/bin/     rowfuse-check (+ rowfuse when the whole CLI builds), unit tests
#   build-gpu/lib/     libcjson, libprotobuf-c (not on the GPU image)
#   build-gpu/pkgs/    c<C>_h<H>/{plan.json, kernels.json, librowfuse_pkg.so}
#   build-gpu/shapes.txt  "rows channels hidden" per line: the check's shapes
# Then, from the repository root, one GPU run runs tests/gpu/run.sh, carrying
# build-gpu/bin build-gpu/lib build-gpu/pkgs build-gpu/shapes.txt (a few tens of MiB).
# Environment: JOBS (parallel kernel builds, default 2), SEED (shape draw, default 2026),
# N_RANDOM (random shapes, default 20), PYTHON (default python3), KERNELS_REV (the commit
# whose kernels/ is built, default HEAD, so every package comes from one consistent
# version even while kernels/ is being edited; "worktree" builds the working tree's).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build-gpu
JOBS=${JOBS:-2}
SEED=${SEED:-2026}
N_RANDOM=${N_RANDOM:-20}
PYTHON=${PYTHON:-python3}
KERNELS_REV=${KERNELS_REV:-HEAD}
mkdir -p "$B/bin" "$B/lib" "$B/pkgs" "$B/work"

echo "== build (cmake, $B/cmake)"
cmake -S . -B "$B/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    >"$B/cmake.log" 2>&1 || { cat "$B/cmake.log"; exit 1; }
cmake --build "$B/cmake" -j2 --target rowfuse_check_tool test_runtime_nogpu \
    rowfuse_runtime_shared rf_test_fake_pkg
cp "$B/cmake/rowfuse-check" "$B/cmake/test_runtime_nogpu" "$B/cmake/librf_test_fake_pkg.so" \
    "$B/bin/"
if cmake --build "$B/cmake" -j2 --target rowfuse >"$B/cli-build.log" 2>&1; then
    cp "$B/cmake/rowfuse" "$B/bin/"
else
    echo "note: the full rowfuse CLI did not build (see $B/cli-build.log); run.sh uses rowfuse-check"
    rm -f "$B/bin/rowfuse"
fi
for lib in $(ldd "$B"/bin/rowfuse* | awk '/=> \// {print $3}' | grep -E 'cjson|protobuf-c' | sort -u); do
    cp -L "$lib" "$B/lib/"
done

echo "== shapes ($N_RANDOM random, seed $SEED, plus fixed ones)"
"$PYTHON" - "$SEED" "$N_RANDOM" >"$B/shapes.txt" <<'PY'
import random
import sys

seed, n = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
# Fixed: the reference shape (49 rows: a partial row tile), a shape of whole tiles, and a
# partial tile in every dimension; these three are also the compute-sanitizer shapes.
shapes = [(49, 48, 96), (64, 64, 128), (100, 40, 72)]
seen = {(c, h) for _, c, h in shapes}
while len(shapes) < 3 + n:
    rows = rng.choice([1, 2, 3, 7, 15, 17, 33]) if rng.random() < 0.25 else rng.randint(1, 5000)
    if rng.random() < 0.6:  # non-multiples of 16 in at least one of C, H
        c, h = rng.randint(8, 256), rng.randint(8, 256)
    else:
        c, h = 16 * rng.randint(1, 16), 16 * rng.randint(1, 16)
    if (c, h) in seen:
        continue
    seen.add((c, h))
    shapes.append((rows, c, h))
for s in shapes:
    print(*s)
PY
cat "$B/shapes.txt" | tr '\n' ';'
echo

if [ "$KERNELS_REV" = worktree ]; then
    KSRC=.
    KTAG="worktree-$(date +%s)"
else
    # The last commit that changed the kernels: packages stay valid across other commits.
    KTAG=$(git log -1 --format=%h "$KERNELS_REV" -- kernels include/rowfuse/kernel_abi.h)
    KSRC="$B/kernels-src/$KTAG"
    if [ ! -f "$KSRC/kernels/build.py" ]; then
        mkdir -p "$KSRC"
        git archive "$KERNELS_REV" kernels include | tar -x -C "$KSRC"
    fi
fi
echo "== kernel packages ($KSRC/kernels/build.py at $KTAG, sm_90a, $JOBS at a time)"
build_one() {
    local rows=$1 c=$2 h=$3 b=$4 py=$5 ksrc=$6 ktag=$7
    local name="c${c}_h${h}" work="$b/work/c${c}_h${h}" pkg="$b/pkgs/c${c}_h${h}"
    if [ -f "$pkg/plan.json" ] && [ "$(cat "$pkg/kernels.rev" 2>/dev/null)" = "$ktag" ]; then
        echo "  $name: up to date ($ktag)"
        return 0
    fi
    rm -rf "$work" "$pkg"
    local t0=$SECONDS
    if ! "$py" "$ksrc/kernels/build.py" --channels "$c" --hidden "$h" --rows "$rows" --tile-rows auto \
        --arch sm_90a --out "$work" --quiet >"$b/work/$name.log" 2>&1; then
        echo "  $name: BUILD FAILED (see $b/work/$name.log)"
        tail -3 "$b/work/$name.log" | sed 's/^/    /'
        return 0
    fi
    mkdir -p "$pkg"
    cp "$work/librowfuse_pkg.so" "$work/kernels.json" "$pkg/"
    echo "$ktag" >"$pkg/kernels.rev"
    "$py" tests/gpu/write_plan.py "$pkg" "$rows"
    echo "  $name: built in $((SECONDS - t0)) s ($ktag)"
}
export -f build_one
awk -v b="$B" -v py="$PYTHON" -v k="$KSRC" -v t="$KTAG" '{print $1, $2, $3, b, py, k, t}' \
    "$B/shapes.txt" |
    xargs -P "$JOBS" -L 1 bash -c 'build_one "$@"' _

echo "== carried size"
du -shc "$B/bin" "$B/lib" "$B/pkgs" "$B/shapes.txt" | tail -1
ls "$B/pkgs" | wc -l | sed 's/^/packages: /'
