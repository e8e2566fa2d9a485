#!/bin/sh
# Builds the tile-rows / X-prefetch matrix of the large benchmark shapes into kernels/build/
# (pkg_c<C>_h<H>_t<T>[_xpf]) and a slim copy (librowfuse_pkg.so + kernels.json only) under
# kernels/build/slim/ to carry to the GPU machine. X prefetch (_xpf) and X prefetch with W2
# in its own cp.async group (_xpfs) only change kernels whose weights are staged once (one
# hidden chunk), so they are built only for those shapes.
#   sh kernels/build_matrix.sh [JOBS]
set -eu
cd "$(dirname "$0")/.."
JOBS=${1:-2}
list=""
for ch in 32x64 96x200 128x512 512x2048; do
  for t in 16 32 64; do
    list="$list $ch:$t:"
    case $ch in 32x64 | 96x200) list="$list $ch:$t:xpf $ch:$t:xpfs" ;; esac
  done
done
build_one() {
  ch=${1%%:*}; rest=${1#*:}; t=${rest%%:*}; x=${rest#*:}
  c=${ch%x*}; h=${ch#*x}
  out=kernels/build/pkg_c${c}_h${h}_t${t}${x:+_$x}
  if [ -f "$out/librowfuse_pkg.so" ]; then return 0; fi
  case $x in xpf) flags=--x-prefetch ;; xpfs) flags="--x-prefetch --split-w2" ;; *) flags= ;; esac
  python3 kernels/build.py --channels "$c" --hidden "$h" --rows 1 --tile-rows "$t" \
    --arch sm_90a --out "$out" --compress --quiet $flags > "$out.log" 2>&1 \
    && echo "built $out" || echo "FAILED $out (see $out.log)"
}
mkdir -p kernels/build
n=0
for item in $list; do
  build_one "$item" &
  n=$((n + 1))
  if [ $((n % JOBS)) -eq 0 ]; then wait; fi
done
wait
rm -rf kernels/build/slim
for p in kernels/build/pkg_*/; do
  d=kernels/build/slim/$(basename "$p")
  mkdir -p "$d"
  cp "$p/librowfuse_pkg.so" "$p/kernels.json" "$d/" 2>/dev/null || true
done
du -sh kernels/build/slim
