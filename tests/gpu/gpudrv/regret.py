"""regret: the scheduler's out-of-sample regret. Here: REGRET_SHAPES seeded shapes
(rowfuse.bench.shapes --regret; default 32: 30 within the kernels' range and 2 wide ones;
REGRET_SEED, default 2051, a set drawn after the cost lines of 2026-12-04 were fixed, where
2027, 2029 and 2031 judged earlier lines; REGRET_ALIGN=8 draws C and H as multiples of 8,
where the Hopper kernel competes; REGRET_ONLY=REGIME takes every shape from one regime), the
scheduler's choice for each (`rowfuse schedule`), and a package per shape (no weights.bin),
built with auto, or with the first schedule that builds when auto's choice cannot run there
(the choice stays the scheduler's), or none when no rowfuse kernel fits (recorded). Carried
in build-gpu/regret: shapes.tsv (rows, channels, hidden, regime, choice, package built,
note) and pkgs/NAME. There: cheapest first, `rowfuse bench PKG --c` with 5 rounds x 40
observations per variant and the GPU span from CUPTI, no shape started after
REGRET_DEADLINE seconds (default 420: the shapes left are "not run" and fail the run); then
`python -m rowfuse.bench.regret_summary`: per shape the choice, the fastest and the regret.
"""

from __future__ import annotations

import os
import shutil
import time

from rowfuse.bench import shapes as gshapes

from . import common as c

R = c.CARRY / "regret"


def prepare(jobs: int, stamp: str) -> dict:
    seed = int(os.environ.get("REGRET_SEED", "2051"))
    n = int(os.environ.get("REGRET_SHAPES", "32"))
    draw = gshapes.regret_shapes(
        seed, n, int(os.environ.get("REGRET_ALIGN", "1")), os.environ.get("REGRET_ONLY") or None
    )
    c.say(
        f"== regret: {len(draw)} shapes (seed {seed}), "
        f"{sum(4 * a * b * h for a, b, h, _ in draw) / 1e9:.1f} GFLOP of reference in all"
    )

    def one(s):
        rows, ch, h, regime = s
        name = f"{rows}x{ch}x{h}"
        rc, out, _, _ = c.sh(
            [c.BIN / "rowfuse", "schedule", "--rows", rows, "--channels", ch, "--hidden", h]
        )
        if rc != 0:
            return {
                "name": name,
                "status": "FAILED",
                "detail": f"rowfuse schedule: {out.strip()[-200:]}",
            }
        choice = out.split("\t")[0].strip()
        note, built = "", "none"
        for sched in ("auto", "persistent-gmem", "conventional", "persistent-smem"):
            rec = c.compile_one(
                f"regret-{name}-{sched}", ["--mlp", name, "--schedule", sched], stamp
            )
            if rec["status"] == "ok":
                built = sched
                dest = R / "pkgs" / name
                dest.mkdir(parents=True, exist_ok=True)
                for f in ("plan.json", "librowfuse_pkg.so"):
                    shutil.copy2(c.CACHE / rec["cache"] / f, dest / f)
                break
            if rec["status"] != "unsupported":
                return {"name": name, "status": "FAILED", "detail": rec["detail"]}
            if sched == "auto":
                note = rec["detail"].split("unsupported: ")[-1][:160]
        c.say(f"  {name} ({regime}): choice {choice}, package {built}{': ' + note if note else ''}")
        return {
            "name": name,
            "status": "ok",
            "row": [rows, ch, h, regime, choice, built, note or "ok"],
        }

    R.mkdir(parents=True, exist_ok=True)
    recs = c.pool_map(one, draw, jobs)
    bad = [x for x in recs if x["status"] != "ok"]
    if bad:
        raise c.Failed(f"regret: {bad[0]['name']}: {bad[0]['detail']}")
    with open(R / "shapes.tsv", "w") as f:
        for x in recs:
            f.write("\t".join(str(v) for v in x["row"]) + "\n")
    return {"seed": seed, "shapes": [x["row"] for x in recs]}


def run(r: c.Run) -> None:
    m = r.manifest("regret")
    if m is None:
        return
    d = r.work / "regret"
    (d / "json").mkdir(parents=True, exist_ok=True)
    if not r.env.get("ROWFUSE_CUPTI_LIB"):
        r.step("regret", "CUPTI", False, 0, "no libcupti found: the regret needs the GPU span")
        return
    deadline = int(os.environ.get("REGRET_DEADLINE", "420"))
    rounds, obs = os.environ.get("REGRET_ROUNDS", "5"), os.environ.get("REGRET_OBS", "40")
    todo = sorted(
        (4 * a * b * h, a, b, h) for a, b, h, _, _, built, _ in m["shapes"] if built != "none"
    )
    t0 = time.monotonic()
    status = []
    for i, (_, rows, ch, h) in enumerate(todo, 1):
        name = f"{rows}x{ch}x{h}"
        if time.monotonic() - t0 >= deadline:
            status.append(f"{name}\tskipped\t0")
            c.say(f"  [regret] {name}: skipped (deadline)")
            continue
        # a non-zero exit is expected when the package lacks a schedule (recorded per variant
        # in the JSON); the summary tells those from real failures
        rc, _, secs, to = c.sh(
            [
                r.rowfuse(),
                "bench",
                c.CARRY / "regret" / "pkgs" / name,
                "--c",
                "--rows",
                rows,
                "--rounds",
                rounds,
                "--obs",
                obs,
                "--control-obs",
                "0",
                "--seed",
                m["seed"] * 10 + i,
                "--git-rev",
                r.env["ROWFUSE_GIT_REV"],
                "-o",
                d / "json" / f"{name}.json",
            ],
            log=d / "json" / f"{name}.log",
            timeout=240,
            env=r.env,
        )
        status.append(f"{name}\t{'timeout' if to else rc}\t{secs:.0f}")
        c.say(f"  [regret] {name}: exit {rc}, {secs:.0f} s")
    (d / "status.tsv").write_text("\n".join(status) + "\n")
    ok, _, text = r.cmd(
        "regret",
        "summary (rowfuse.bench.regret_summary)",
        ["python3", "-m", "rowfuse.bench.regret_summary", c.CARRY / "regret", d],
        "summary.log",
        120,
    )
    r.primary += [d / "regret.json", d / "regret.md"]
    lines = text.strip().splitlines()
    r.subs["regret"] = {"table": "\n".join(lines[-3:])}
