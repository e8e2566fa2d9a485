#!/usr/bin/env bash
# Nsight Compute profile of rowfuse kernels on the GPU machine (after tests/gpu/prepare.sh;
# carry build-gpu/{bin,lib,pkgs}): one launch of each schedule's kernel at the shapes
# where a target was missed (notes/kernels.md), through `rowfuse check` (one replay, so
# one launch per kernel: the DSL names them kernel_cutlass_...), with the clocks left alone. Per profile: speed of light (SM and
# memory throughput, DRAM and L2 bytes), occupancy, warp stall reasons, the scheduler's
# issue rate. Output: $OUT/ncu-SHAPE-SCHEDULE.txt and a digest $OUT/profile.md.
# Environment: SHAPES (default the three large development shapes), SCHEDULES
# (default persistent-wgmma,persistent-smem), NCU_CACHE (ncu's --cache-control: all, the
# default, flushes the caches before the profiled launch; none keeps them as the replays
# before it left them, as under the bench's graph replay) and NCU_SKIP (launches of the
# kernel before the profiled one, default 0: with NCU_CACHE=none, 3 warms the L2 with the
# block's own operands). Exit status: non-zero when ncu failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build-gpu}
OUT=${OUT:-out/profile}
SHAPES=${SHAPES:-4096x128x512,131072x32x64,8192x512x2048}
SCHEDULES=${SCHEDULES:-persistent-wgmma,persistent-smem}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/$B/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "FAILED: no ncu"; exit 1; }
RC=0
: >"$OUT/profile.md"
for s in ${SHAPES//,/ }; do
    IFS=x read -r rows c h <<<"$s"
    for sched in ${SCHEDULES//,/ }; do
        f="$OUT/ncu-$s-$sched.txt"
        timeout 120 "$NCU" --clock-control none --cache-control "${NCU_CACHE:-all}" \
            --kernel-name regex:kernel_cutlass --launch-skip "${NCU_SKIP:-0}" --launch-count 1 \
            --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
            --section WarpStateStats --section SchedulerStats --section LaunchStats \
            "$B/bin/rowfuse" check "$B/pkgs/$s" --shapes "$rows" --variants "$sched" \
            --replays "${NCU_SKIP:-0}" >"$f" 2>&1
        rc=$?
        [ "$rc" = 0 ] || RC=1
        {
            echo "### $s $sched (ncu exit $rc, cache control ${NCU_CACHE:-all}, launches skipped ${NCU_SKIP:-0})"
            grep -E "^  [a-z_0-9]+.*\(|Duration|Memory Throughput|DRAM Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per Thread|Grid Size|Block Size|Stall|Issue Slots Busy|No Eligible|One or More Eligible|Warp Cycles Per Issued|Theoretical Occupancy|Dynamic Shared" "$f" |
                head -40
            grep -E "==ERR==|==WARNING==|FAIL|ERROR" "$f" | head -5
            echo
        } >>"$OUT/profile.md"
        echo "  $s $sched: ncu exit $rc"
    done
done
exit $RC
