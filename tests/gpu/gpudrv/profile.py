"""profile: Nsight Compute on one launch of each schedule's kernel at the shapes where a
target was missed (notes/kernels.md), through `rowfuse check` (one replay: one launch per
kernel, named kernel_cutlass_...), clocks left alone. Per profile: speed of light, memory
throughput, occupancy, warp stalls, the scheduler's issue rate. Writes ncu-SHAPE-SCHEDULE.txt
and the digest profile.md. Environment: PROFILE_SHAPES, PROFILE_SCHEDULES (default
persistent-wgmma,persistent-smem), NCU_CACHE (ncu's --cache-control: all flushes the caches
before the profiled launch, none keeps what the replays before it left) and NCU_SKIP
(launches before the profiled one, default 0).
"""

from __future__ import annotations

import os
import re

from . import common as c

SHAPES = "4096x128x512,131072x32x64,8192x512x2048"
DIGEST = re.compile(
    r"^  [a-z_0-9]+.*\(|Duration|Memory Throughput|DRAM Throughput|L2 Cache Throughput|"
    r"Compute \(SM\) Throughput|Achieved Occupancy|Registers Per Thread|Grid Size|Block Size|"
    r"Stall|Issue Slots Busy|No Eligible|One or More Eligible|Warp Cycles Per Issued|"
    r"Theoretical Occupancy|Dynamic Shared|==ERR==|==WARNING=="
)


def prepare(jobs: int, stamp: str) -> dict:
    shapes = os.environ.get("PROFILE_SHAPES", SHAPES).split(",")
    c.say(f"== profile: {len(shapes)} shapes")
    recs = c.compile_many([(s, ["--mlp", s], False) for s in shapes], jobs, stamp)
    bad = [x for x in recs.values() if x["status"] != "ok"]
    if bad:
        raise c.Failed(f"profile: no package for {bad[0]['name']}: {bad[0]['detail']}")
    return {"shapes": shapes, "packages": recs}


def run(r: c.Run) -> None:
    m = r.manifest("profile")
    if m is None:
        return
    ncu = c.find_tool("ncu")
    if not ncu:
        r.step("profile", "ncu", False, 0, "no ncu on this machine")
        return
    d = r.work / "profile"
    d.mkdir(parents=True, exist_ok=True)
    cache, skip = os.environ.get("NCU_CACHE", "all"), os.environ.get("NCU_SKIP", "0")
    digest = []
    for s in m["shapes"]:
        rows = s.split("x")[0]
        for sched in os.environ.get("PROFILE_SCHEDULES", "persistent-wgmma,persistent-smem").split(
            ","
        ):
            log = f"ncu-{s}-{sched}.txt"
            cmd = [
                ncu,
                "--clock-control",
                "none",
                "--cache-control",
                cache,
                "--kernel-name",
                "regex:kernel_cutlass",
                "--launch-skip",
                skip,
                "--launch-count",
                "1",
                "--section",
                "SpeedOfLight",
                "--section",
                "MemoryWorkloadAnalysis",
                "--section",
                "Occupancy",
                "--section",
                "WarpStateStats",
                "--section",
                "SchedulerStats",
                "--section",
                "LaunchStats",
                r.rowfuse(),
                "check",
                c.PKGS / s,
                "--shapes",
                rows,
                "--variants",
                sched,
                "--replays",
                skip,
            ]
            ok, rc, text = r.cmd("profile", f"ncu {s} {sched}", cmd, log, 120)
            digest.append(
                f"### {s} {sched} (ncu exit {rc}, cache control {cache}, launches skipped {skip})"
            )
            digest += [ln for ln in text.splitlines() if DIGEST.search(ln)][:40]
            digest.append("")
    (d / "profile.md").write_text("\n".join(digest))
    r.primary.append(d / "profile.md")
