#!/usr/bin/env bash
# Every GPU check and benchmark in one call on the GPU machine (from the repository root),
# after tests/gpu/prepare.sh ran on the build machine. Carry build-gpu/bin, build-gpu/lib,
# build-gpu/pkgs, build-gpu/shapes.txt and build-gpu/bench_shapes.txt (not the build tree).
#   1. tests/gpu/run.sh: runtime unit test, check of every variant at 25 shapes,
#      compute-sanitizer (memcheck, racecheck, synccheck, initcheck);
#   2. tests/gpu/bench.sh: the benchmark of BENCHMARKING.md at every development shape.
# Results: $OUT/gpu-results.tgz (all logs and JSON), $OUT/report.{md,png,json}, and the
# check table and report table printed last. Exit status: run.sh's, then bench.sh's.
set -uo pipefail
cd "$(dirname "$0")/../.."
DEST=${OUT:-out}
WORK=$(mktemp -d)
mkdir -p "$DEST"
export PYTHONUNBUFFERED=1

OUT="$WORK/gpu" bash tests/gpu/run.sh >"$WORK/run.txt" 2>&1
RUN_RC=$?
OUT="$WORK/bench" bash tests/gpu/bench.sh >"$WORK/bench.txt" 2>&1
BENCH_RC=$?

tar czf "$DEST/gpu-results.tgz" -C "$WORK" .
for f in report.md report.png report.json; do
    [ -f "$WORK/bench/$f" ] && cp "$WORK/bench/$f" "$DEST/"
done
echo "== bench (tail)"
tail -n 40 "$WORK/bench.txt"
echo "== check (tail)"
tail -n 60 "$WORK/run.txt"
echo "== all.sh: run.sh exit $RUN_RC, bench.sh exit $BENCH_RC"
[ "$RUN_RC" = 0 ] && [ "$BENCH_RC" = 0 ]
