"""profile: Nsight Compute on one launch of each schedule's kernel at the shapes where a
target was missed (notes/kernels.md), through `rowfuse check` (one replay: one launch per
kernel, named kernel_cutlass_...), clocks left alone. Per profile: speed of light, memory
throughput, occupancy, warp stalls, the scheduler's issue rate. Writes ncu-SHAPE-SCHEDULE.txt
and the digest profile.md. Environment: PROFILE_SHAPES, PROFILE_SCHEDULES (default
persistent-wgmma,persistent-smem; empty: no residual-MLP profile), NCU_CACHE (ncu's
--cache-control: all flushes the caches before the profiled launch, none keeps what the
replays before it left) and NCU_SKIP (launches before the profiled one, default 0).

Chain packages: PROFILE_PACKAGES names packages the chains or decode subcommand prepared
(default CHAIN_PACKAGES: the weight-streaming kernel at 1 and 16 rows, the whole-chain and
the conventional schedule at 16,384 rows, the tiny MLP at 16,384), each profiled at its
own rows over every kernel of one checked replay (the conventional schedule launches
several); their weights.bin are written from the modules first (that subcommand's map).
PROFILE_PACKAGES= (empty) profiles none; a named package that was not prepared is a FAILED
step.
"""

from __future__ import annotations

import os
import re

from . import common as c

SHAPES = "4096x128x512,131072x32x64,8192x512x2048"
CHAIN_PACKAGES = (
    "llama_ffn-1,llama_ffn-16,xl_gelu_ffn-4,gpt2_ffn-16384,gpt2_ffn-16384-conv,"
    "gpt2_ffn-16384-wgmma,tcnn_mlp-16384"
)
SECTIONS = (
    "SpeedOfLight",
    "MemoryWorkloadAnalysis",
    "Occupancy",
    "WarpStateStats",
    "SchedulerStats",
    "LaunchStats",
)
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


def ncu_cmd(ncu: str, r: c.Run, pkg, rows: str, cache: str, skip: str, count: int, extra):
    """Nsight Compute over `rowfuse check PKG --shapes ROWS`: `count` kernel launches after
    `skip` (the check's replays before them), clocks left alone."""
    cmd = [ncu, "--clock-control", "none", "--cache-control", cache]
    cmd += ["--kernel-name", "regex:kernel_cutlass", "--launch-skip", skip]
    cmd += ["--launch-count", str(count)]
    for sec in SECTIONS:
        cmd += ["--section", sec]
    return cmd + [r.rowfuse(), "check", pkg, "--shapes", rows, *extra]


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

    def one(log: str, title: str, cmd) -> None:
        ok, rc, text = r.cmd("profile", f"ncu {title}", cmd, log, 180)
        digest.append(
            f"### {title} (ncu exit {rc}, cache control {cache}, launches skipped {skip})"
        )
        digest.extend([ln for ln in text.splitlines() if DIGEST.search(ln)][:80])
        digest.append("")

    scheds = os.environ.get("PROFILE_SCHEDULES", "persistent-wgmma,persistent-smem").split(",")
    for s in m["shapes"]:
        rows = s.split("x")[0]
        for sched in [x for x in scheds if x]:
            extra = ["--variants", sched, "--replays", skip]
            cmd = ncu_cmd(ncu, r, c.PKGS / s, rows, cache, skip, 1, extra)
            one(f"ncu-{s}-{sched}.txt", f"{s} {sched}", cmd)
    for name, rows in chain_packages(r):
        plan = c.read_json(c.PKGS / name / "plan.json") or {}
        nk = len(plan.get("kernels") or []) or 1
        cmd = ncu_cmd(ncu, r, c.PKGS / name, rows, cache, skip, nk, ["--replays", skip])
        one(f"ncu-{name}.txt", f"{name} ({nk} kernels)", cmd)
    (d / "profile.md").write_text("\n".join(digest))
    r.primary.append(d / "profile.md")


def chain_packages(r: c.Run) -> list[tuple[str, str]]:
    """(package, rows) of PROFILE_PACKAGES, each with its subcommand's weights written; a
    name no manifest holds is a FAILED step and left out."""
    from . import chains

    names = [n for n in os.environ.get("PROFILE_PACKAGES", CHAIN_PACKAGES).split(",") if n]
    out, written = [], set()
    for name in names:
        sub = next(
            (x for x in ("chains", "decode") if name in _prepared(r, x)),
            None,
        )
        if sub is None:
            r.step("profile", f"ncu {name}", False, 0, "not prepared by chains or decode")
            continue
        if sub not in written:
            if not chains.write_weights(r, "profile", c.PKGS / f"{sub}-weights.json"):
                return out
            written.add(sub)
        out.append((name, name.split("-")[1]))
    return out


def _prepared(r: c.Run, sub: str) -> set:
    """Names of the packages `sub` prepared (empty when it was not)."""
    m = c.read_json(c.CARRY / f"{sub}.json") or {}
    if sub == "decode":  # auto and every sibling schedule that compiled
        return set(m.get("compile_seconds") or {}) - set(m.get("refused") or {})
    return set(m.get("packages") or {})
