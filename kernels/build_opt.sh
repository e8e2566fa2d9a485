#!/bin/sh
# Builds the persistent-smem candidates of the 2026-12-02 narrow-shape work (notes/kernels.md,
# "131072x32x64: grid, stores, barriers") into kernels/build/opt/ and a slim copy
# (library + kernels.json) under kernels/build/opt/slim/ to carry to the GPU machine.
# Names: base = the run-3 defaults (--grid smem --y-vec2 off); reg = --grid regs; bal = --grid
# balanced; yv2 = --y-vec2; ring = --ring; mb6 = --min-blocks 6; san_* = sanitizer
# packages with --max-grid 3 (every block walks many tiles at small row counts).
#   sh kernels/build_opt.sh
set -eu
cd "$(dirname "$0")/.."
O=kernels/build/opt
mkdir -p "$O"
b() {
  name=$1; shift
  if [ -f "$O/$name/librowfuse_pkg.so" ]; then return 0; fi
  python3 kernels/build.py --schedules persistent-smem --arch sm_90a --out "$O/$name" \
    --compress --quiet "$@" > "$O/$name.log" 2>&1 && echo "built $name" || echo "FAILED $name"
}
N32="--channels 32 --hidden 64 --rows 131072"
b c32_base $N32 --grid smem --y-vec2 off &
b c32_reg $N32 --grid regs --y-vec2 off &
wait
b c32_bal $N32 --grid balanced --y-vec2 off &
b c32_yv2 $N32 --grid smem --y-vec2 &
wait
b c32_bal_yv2 $N32 --grid balanced --y-vec2 &
b c32_bal_yv2_ring $N32 --grid balanced --y-vec2 --ring &
wait
b c32_bal_yv2_mb6 $N32 --grid balanced --y-vec2 --min-blocks 6 &
b c32_t32_bal_yv2 --channels 32 --hidden 64 --rows 131072 --tile-rows 32 --x-prefetch \
  --split-w2 --grid balanced --y-vec2 &
wait
b c128_base --channels 128 --hidden 512 --rows 4096 --grid smem --y-vec2 off &
b c128_yv2 --channels 128 --hidden 512 --rows 4096 --y-vec2 &
wait
b c48_base --channels 48 --hidden 96 --rows 49 --grid smem --y-vec2 off &
b c48_yv2 --channels 48 --hidden 96 --rows 49 --y-vec2 &
wait
b san_c32_ring $N32 --grid balanced --y-vec2 --ring --max-grid 3 &
b san_c32_mb6 $N32 --grid balanced --y-vec2 --min-blocks 6 --max-grid 3 &
wait
rm -rf "$O/slim"
for p in "$O"/*/; do
  n=$(basename "$p")
  [ "$n" = slim ] && continue
  mkdir -p "$O/slim/$n"
  cp "$p/librowfuse_pkg.so" "$p/kernels.json" "$O/slim/$n/"
done
du -sh "$O/slim"
