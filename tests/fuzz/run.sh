#!/usr/bin/env bash
# Runs the ONNX importer fuzzer for a bounded time: run.sh FUZZER SECONDS.
# Seeds come from tests/fuzz/corpus (if present) plus a freshly exported example model;
# new inputs go to a scratch corpus so the repository is not modified.
set -euo pipefail
fuzzer=$1
seconds=${2:-120}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
if [ -d tests/fuzz/corpus ]; then cp tests/fuzz/corpus/* "$work/corpus/" 2>/dev/null || true; fi
if python3 -c "import torch" 2>/dev/null; then
  (cd examples && python3 -m rowfuse.export residual_mlp:make --rows 7 -o "$work/corpus/mlp.onnx" >/dev/null 2>&1) || true
  rm -f "$work/corpus/"*.fx.txt
fi
echo "fuzz: $fuzzer for ${seconds}s, $(ls "$work/corpus" | wc -l) seeds"
ASAN_OPTIONS=detect_leaks=1 "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 \
  -timeout=10 -print_final_stats=1 "$work/corpus" 2>&1 | tail -n 15
