#!/usr/bin/env bash
# Prepares, on a machine WITHOUT a GPU, the scheduler's out-of-sample regret run
# (tests/gpu/regret.sh, item 8 of issue 9): the rowfuse CLI and its libraries, and one
# package per seeded random shape (tests/gpu/shapes.py --regret), each from
# `rowfuse compile --mlp RxCxH`. Output (git-ignored), carried as ONE path, build-gpu/regret:
#   build-gpu/regret/bin/rowfuse
#   build-gpu/regret/lib/        librowfuse_runtime.so, librowfuse.so, cjson, protobuf-c, ...
#   build-gpu/regret/pkgs/RxCxH/ plan.json + librowfuse_pkg.so (no weights.bin: `rowfuse
#                                bench --c` draws its own inputs and weights from its seed)
#   build-gpu/regret/shapes.tsv  rows, channels, hidden, regime, the scheduler's choice
#                                (`rowfuse schedule`), the package built (auto, the
#                                schedule it was built with when auto's choice cannot be
#                                built, or none) and why
# A shape whose auto compile fails because its chosen schedule cannot run there is rebuilt
# with the first buildable schedule so the other variants are still measured; the choice
# stays the scheduler's. A shape where no rowfuse kernel fits gets no package (recorded).
# Any other compile failure fails the script.
# Environment: JOBS (parallel compiles, default 2), SEED (shape draw, default 2027),
# N_SHAPES (default 26: 24 within the kernels' range and 2 wide ones), ALIGN (default 1;
# 8 draws C and H as multiples of 8, where the Hopper kernel competes), ONLY (a regime of
# tests/gpu/shapes.py: every shape from it).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build-gpu
R=$B/regret
JOBS=${JOBS:-2}
SEED=${SEED:-2027}
N_SHAPES=${N_SHAPES:-26}
W=$B/regret-work # compile folders, logs (not carried)
mkdir -p "$R/bin" "$R/lib" "$R/pkgs" "$W"
T0=$SECONDS

echo "== build (cmake, $B/cmake)"
cmake -S . -B "$B/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    >"$W/cmake.log" 2>&1 || { cat "$W/cmake.log"; exit 1; }
cmake --build "$B/cmake" -j "$JOBS" --target rowfuse rowfuse_runtime_shared rowfuse_shared \
    >"$W/build.log" 2>&1 || { tail -30 "$W/build.log"; exit 1; }
cp "$B/cmake/rowfuse" "$R/bin/"
cp -L "$B/cmake/librowfuse.so" "$B/cmake/src/runtime/librowfuse_runtime.so" "$R/lib/"
for lib in $(ldd "$R/bin/rowfuse" "$R/lib/librowfuse.so" | awk '/=> \// {print $3}' |
    grep -E 'cjson|protobuf-c|libzip|libbz2|libgomp' | sort -u); do
    cp -L "$lib" "$R/lib/"
done

echo "== shapes ($N_SHAPES, seed $SEED)"
python3 tests/gpu/shapes.py --seed "$SEED" --regret "$N_SHAPES" --align "${ALIGN:-1}" \
    ${ONLY:+--only "$ONLY"} >"$R/draw.txt"
awk '{f = 4 * $1 * $2 * $3 / 1e9; t += f} END {printf "  %d shapes, %.1f GFLOP of CPU reference in all\n", NR, t}' "$R/draw.txt"

STAMP=$(cat kernels/*.py src/compile/*.c src/compile/*.h src/plan/*.c src/pkg/*.c \
    include/rowfuse/plan.h include/rowfuse/kernel_abi.h include/rowfuse/compile.h | sha1sum |
    cut -c1-12)
echo "== packages (rowfuse compile --mlp, $JOBS at a time, sources $STAMP)"
# Writes $W/NAME.row: rows c h regime choice built note (tab-separated); returns
# non-zero only for a compile failure that is not "unsupported".
build_one() {
    local rows=$1 c=$2 h=$3 regime=$4 r=$5 w=$6 stamp=$7
    local name="${rows}x${c}x${h}" pkg="$r/pkgs/${rows}x${c}x${h}" log="$w/${rows}x${c}x${h}.log"
    local choice built="" note="" t0=$SECONDS
    choice=$("$r/bin/rowfuse" schedule --rows "$rows" --channels "$c" --hidden "$h" | cut -f1)
    if [ -f "$pkg/plan.json" ] && [ "$(cat "$pkg/stamp" 2>/dev/null)" = "$stamp" ]; then
        built=$(cat "$pkg/built")
        note="up to date"
    else
        rm -rf "$pkg" "$w/$name"
        : >"$log"
        for sched in auto persistent-gmem conventional persistent-smem; do
            if "$r/bin/rowfuse" compile --mlp "$name" --schedule "$sched" -o "$w/$name" \
                >>"$log" 2>&1; then
                built=$sched
                break
            fi
            if ! tail -1 "$log" | grep -q "unsupported"; then
                echo "  $name: COMPILE FAILED (not an unsupported shape; see $log)"
                tail -3 "$log" | sed 's/^/    /'
                return 1
            fi
            [ "$sched" = auto ] && note=$(tail -1 "$log" | sed 's/.*unsupported: //' | cut -c1-160)
        done
        if [ -n "$built" ]; then
            mkdir -p "$pkg"
            cp "$w/$name/plan.json" "$w/$name/librowfuse_pkg.so" "$pkg/"
            echo "$stamp" >"$pkg/stamp"
            echo "$built" >"$pkg/built"
        else
            built=none
        fi
        rm -rf "$w/$name"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rows" "$c" "$h" "$regime" "$choice" "$built" \
        "${note:-ok}" >"$w/$name.row"
    echo "  $name ($regime): choice $choice, package $built ($((SECONDS - t0)) s)${note:+: $note}"
}
export -f build_one
awk -v r="$R" -v w="$W" -v s="$STAMP" '{print $1, $2, $3, $4, r, w, s}' "$R/draw.txt" |
    xargs -P "$JOBS" -L 1 bash -c 'build_one "$@"' _

# the manifest, in the draw's order
: >"$R/shapes.tsv"
while read -r rows c h _; do
    cat "$W/${rows}x${c}x${h}.row" >>"$R/shapes.tsv"
done <"$R/draw.txt"
# packages of shapes no longer drawn are stale
for d in "$R"/pkgs/*/; do
    n=$(basename "$d")
    grep -q "^${n//x/	}	" "$R/shapes.tsv" || rm -rf "$d"
done

echo "== summary after $((SECONDS - T0)) s"
awk -F'\t' '{n++; b[$6 == "none" ? "none" : ($6 == "auto" ? "auto" : "other")]++}
    END {printf "  %d shapes: %d built as chosen, %d rebuilt with another schedule, %d without package\n",
         n, b["auto"], b["other"], b["none"]}' "$R/shapes.tsv"
du -sh "$R" | sed 's/^/  carried size (build-gpu\/regret): /'
SIZE_KB=$(du -sk "$R" | cut -f1)
if [ "$SIZE_KB" -gt 40960 ]; then
    echo "  TOO LARGE: $SIZE_KB KiB over the 40 MiB budget"
    exit 1
fi
