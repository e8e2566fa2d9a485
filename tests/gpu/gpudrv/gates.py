"""gates: every planted fault at shapes from each regime, and every compute-sanitizer tool
on every schedule.

Here: the fault list from the compiler (`rowfuse compile --plant-fault list`; where it
has no list, the names its error message gives; GATES_FAULTS=a,b overrides), the shapes
of rowfuse.bench.shapes.gates_shapes (GATES_PER_CLASS seeded shapes per class, default 1,
plus two fixed ones: 8 shapes, partial tiles in rows, channels and hidden), and at each
shape a correct package, its checking build (`--check-delay`: producers spin before each
async copy) and one package per fault (`rowfuse compile --mlp SHAPE --plant-fault F`, a
race fault in the checking build, so a skipped wait reads poison; a fault the compiler
calls unsupported there is recorded as not applicable; a capture fault, which sits in
the launcher whatever the shape, only at the first tiny and the first blocked shape).
The sanitizer's packages: 49x48x96 (a partial row tile), 64x64x128 (whole tiles),
100x40x72 (partial tiles everywhere), and the persistent-wgmma block pairs and blocked
ring walking several tiles.

There, on a pool as wide as the machine's cores (sanitizer runs first, the longest):
  - each tool (memcheck, racecheck, synccheck, initcheck) on each schedule of each
    sanitizer package, one process each, bounded by SAN_TIMEOUT seconds (a timeout is a
    failure); racecheck on the no-barrier fault must report the race;
  - `rowfuse check` of the correct package at each shape: every variant must pass;
  - per fault package and shape: each variant the fault touches in its own process (the
    verdict of rowfuse.bench.summarize.judge_fault), the variants it does not touch
    together (they must pass: the controls); a capture fault (the kernel sent to another
    stream) must be refused by `rowfuse check` and by `rowfuse bench --c` with a message
    naming the kernel nodes, which is recorded.
Writes gates.json (fault x schedule x shape class, the sanitizer table, every message).
GATES_SAN=0 leaves the sanitizer out (a short budget re-running the faults only, beside an
earlier full run's sanitizer table; the default runs it).
"""

from __future__ import annotations

import os
import re

from rowfuse.bench import shapes as gshapes
from rowfuse.bench import summarize

from . import check as checksub
from . import common as c

SEED = int(os.environ.get("GATES_SEED", "2026"))
PER_CLASS = int(os.environ.get("GATES_PER_CLASS", "1"))
CHECK_SEED = 20261204
SAN_TIMEOUT = int(os.environ.get("SAN_TIMEOUT", "360"))
SANITIZE = os.environ.get("GATES_SAN", "1") != "0"
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
SAN_SHAPES = [(49, 48, 96), (64, 64, 128), (100, 40, 72)]
# persistent-wgmma's block pairs and blocked ring, at row counts that walk several tiles
SAN_WGMMA = {"pair-walk": 1000, "blocked-walk": 1000}
CAPTURE_CLASSES = ("tiny", "blocked")
KNOWN_FAULTS = ("no-barrier", "no-pad")  # the compiler's names before it could list them
RACE_FAULT = ("no-barrier", (100, 40, 72), "persistent-smem")  # racecheck must see it
RACE_ROWS = int(os.environ.get("GATES_RACE_ROWS", "256"))
# A race fault's package is a checking build (`rowfuse compile --check-delay CYCLES`): the
# producers spin this long (about 10 us, ten times a copy's latency) before each async
# copy, so a read that skips its wait reads the check's NaN poison. Beside each correct
# package, the same build with the delays only: it must pass (the delays alone break
# nothing).
CHECK_DELAY = int(os.environ.get("GATES_CHECK_DELAY", "20000"))


def fault_kind(name: str) -> str:
    """capture: the kernel launched outside the capturing stream (the graph misses it);
    result: a kernel that computes something wrong."""
    return summarize.CAPTURE if "stream" in name else summarize.RESULT


def applies(fault: str, shape, shapes) -> bool:
    """Where a fault is planted: a kernel fault at every shape; a capture fault, which sits
    in the launcher of every kernel whatever the shape, at the first shape of the classes of
    CAPTURE_CLASSES (the mma.sync kernels, the block pairs and the blocked ring)."""
    if fault_kind(fault) != summarize.CAPTURE:
        return True
    firsts = {}
    for s in shapes:
        firsts.setdefault(s[3], s)
    return shape[3] in CAPTURE_CLASSES and firsts[shape[3]] == shape


def fault_list() -> tuple[list[str], str]:
    """The planted faults the compiler offers, and where the list came from."""
    if os.environ.get("GATES_FAULTS"):
        return [f for f in os.environ["GATES_FAULTS"].split(",") if f], "GATES_FAULTS"
    rc, out, _, _ = c.sh(
        [c.BIN / "rowfuse", "compile", "--plant-fault", "list"], env=c.compile_env()
    )
    names = []
    if rc == 0:
        for line in out.splitlines():
            m = re.match(r"\s*([a-z][a-z0-9]*(?:-[a-z0-9]+)+|[a-z][a-z0-9]+)\b", line)
            if m and not line.rstrip().endswith(":"):
                names.append(m.group(1))
        if names:
            return list(dict.fromkeys(names)), "rowfuse compile --plant-fault list"
    probe = c.WORK / "fault-probe"
    rc, out, _, _ = c.sh(
        [c.BIN / "rowfuse", "compile", "--mlp", "16x16x16", "--plant-fault", "list", "-o", probe],
        env=c.compile_env(),
    )
    m = re.search(r"--plant-fault must be (?:one of )?(.+?),? not 'list'", out)
    if m:
        names = [
            n for n in re.split(r",\s*|\s+or\s+|\|", m.group(1)) if re.fullmatch(r"[a-z0-9-]+", n)
        ]
        if names:
            return names, "the compiler's message for an unknown fault"
    return list(KNOWN_FAULTS), "the names known when this driver was written"


def prepare(jobs: int, stamp: str) -> dict:
    faults, source = fault_list()
    shapes = gshapes.gates_shapes(SEED, PER_CLASS)
    c.say(
        f"== gates: faults {', '.join(faults)} (from {source}); {len(shapes)} shapes (seed {SEED})"
    )
    for s in shapes:
        c.say(f"  {s[3]:<8} {summarize.shape_name(s[:3])}")
    specs = []
    for s in shapes:
        n = summarize.shape_name(s[:3])
        specs.append((n, ["--mlp", n], False))  # the correct package: the check's name
        delay = ["--check-delay", str(CHECK_DELAY)]
        specs.append((f"delay-{n}", ["--mlp", n, *delay], False))
        specs += [
            (
                f"{f}-{n}",
                ["--mlp", n, "--plant-fault", f, *(delay if f in summarize.RACE_FAULTS else [])],
                False,
            )
            for f in faults
            if applies(f, s, shapes)
        ]
    specs += [
        (summarize.shape_name(s), ["--mlp", summarize.shape_name(s)], False) for s in SAN_SHAPES
    ]
    specs += [
        (n, ["--mlp", s, *o], False) for n, s, o, _ in checksub.WGMMA_VARIANTS if n in SAN_WGMMA
    ]
    recs = c.compile_many(specs, jobs, stamp)
    bad = [r for r in recs.values() if r["status"] == "FAILED"]
    if bad:
        raise c.Failed(
            f"gates: {len(bad)} package(s) failed to compile: {bad[0]['name']}: {bad[0]['detail']}"
        )
    correct = {summarize.shape_name(s[:3]) for s in shapes}
    correct |= {f"delay-{n}" for n in correct}
    unsupported = [
        r for r in recs.values() if r["status"] == "unsupported" and r["name"] in correct
    ]
    if unsupported:
        raise c.Failed(
            f"gates: no correct package at {unsupported[0]['name']}: {unsupported[0]['detail']}"
        )
    return {
        "seed": SEED,
        "per_class": PER_CLASS,
        "faults": [{"name": f, "kind": fault_kind(f)} for f in faults],
        "check_delay": CHECK_DELAY,
        "fault_source": source,
        "shapes": [{"shape": list(s[:3]), "class": s[3]} for s in shapes],
        "packages": recs,
    }


def _plan(name):
    return c.read_json(c.PKGS / name / "plan.json")


def _kernel_schedules(plan) -> list[str]:
    return [
        n
        for n, s in (plan or {}).get("schedules", {}).items()
        if s.get("available") and n != "cublaslt"
    ]


def run(r: c.Run) -> None:
    m = r.manifest("gates")
    if m is None:
        return
    d = r.work / "gates"
    d.mkdir(parents=True, exist_ok=True)
    san_bin = c.find_tool("compute-sanitizer")
    jobs = []  # dicts: kind, name, cmd, log, json, timeout, + what to judge
    step_fail = []  # (step, detail) found while planning: missing inputs

    # 1. the sanitizer: every tool on every schedule of every sanitizer package
    san_pkgs = [(summarize.shape_name(s), s[0]) for s in SAN_SHAPES]
    san_pkgs += [(n, rows) for n, rows in SAN_WGMMA.items()]
    if not SANITIZE:
        c.say("== gates: GATES_SAN=0, no sanitizer runs")
        san_pkgs = []
    for pkg, rows in san_pkgs:
        plan = _plan(pkg)
        if plan is None:
            step_fail.append(("sanitizer inputs", f"missing package build-gpu/pkgs/{pkg}"))
            continue
        shape = f"{rows}x{plan['channels']}x{plan['hidden']}"
        scheds = _kernel_schedules(plan)
        if pkg in SAN_WGMMA:
            scheds = [s for s in scheds if s == "persistent-wgmma"]
        for sched in scheds:
            for tool in TOOLS:
                jobs.append(_san_job(r, d, san_bin, tool, pkg, rows, sched, shape, False))
    fault_names = [f["name"] for f in m["faults"]]
    if RACE_FAULT[0] in fault_names and san_pkgs:
        f, s, sched = RACE_FAULT
        pkg = f"{f}-{summarize.shape_name(s)}"
        if _plan(pkg) is None:
            step_fail.append(("sanitizer inputs", f"missing package build-gpu/pkgs/{pkg}"))
        else:
            jobs.append(
                _san_job(
                    r, d, san_bin, "racecheck", pkg, s[0], sched, summarize.shape_name(s), True
                )
            )
    jobs.sort(key=lambda j: (j["tool"] != "racecheck", j["tool"] != "initcheck"))

    # 2. correct packages at every shape, 3. fault packages
    bench_done, untouched = set(), {}
    for sh in m["shapes"]:
        shape, cls = tuple(sh["shape"]), sh["class"]
        name = summarize.shape_name(shape)
        if _plan(name) is None:
            step_fail.append(("correct packages", f"missing package build-gpu/pkgs/{name}"))
            continue
        jobs.append(_check_job(r, d, name, shape, None, {"role": "correct", "class": cls}))
        if _plan(f"delay-{name}") is None:
            step_fail.append(("correct packages", f"missing package build-gpu/pkgs/delay-{name}"))
        else:
            jobs.append(
                _check_job(r, d, f"delay-{name}", shape, None, {"role": "correct", "class": cls})
            )
        for f in m["faults"]:
            pkg = f"{f['name']}-{name}"
            rec = m["packages"].get(pkg)
            if rec is None or rec.get("status") == "unsupported":
                continue  # not planted at this shape, or not applicable (in the manifest)
            plan = _plan(pkg)
            if plan is None:
                step_fail.append(("fault packages", f"missing package build-gpu/pkgs/{pkg}"))
                continue
            hit = summarize.affected_schedules(plan, f["kind"])
            if not hit:
                untouched[pkg] = "no kernel of the package carries the fault"
            rest = [s for s in _kernel_schedules(plan) if s not in hit] + ["cublaslt"]
            base = {"fault": f["name"], "fkind": f["kind"], "class": cls}
            for sched in hit:
                jobs.append(
                    _check_job(r, d, pkg, shape, sched, dict(base, role="fault", schedule=sched))
                )
                if f["name"] in summarize.RACE_FAULTS:
                    # the same kernel under racecheck, on at most RACE_ROWS rows (the race is
                    # in every row tile; racecheck's cost grows with the rows)
                    rows = min(shape[0], RACE_ROWS)
                    job = _san_job(r, d, san_bin, "racecheck", pkg, rows, sched, name, True)
                    log = d / f"race-{pkg}-{rows}-{sched}.log"
                    jobs.append(dict(job, kind="race", fault=f["name"], log=log))
                if f["kind"] == summarize.CAPTURE and (f["name"], sched) not in bench_done:
                    bench_done.add((f["name"], sched))
                    jobs.append(_bench_job(r, d, pkg, shape, sched, dict(base, schedule=sched)))
            jobs.append(
                _check_job(
                    r,
                    d,
                    pkg,
                    shape,
                    ",".join(rest),
                    dict(base, role="control", schedule=",".join(rest)),
                )
            )

    workers = min(16, r.cores)
    c.say(
        f"  gates: {len(jobs)} processes on {workers} workers (sanitizer timeout {SAN_TIMEOUT} s)"
    )
    results = c.pool_map(lambda j: _execute(j), jobs, workers)
    _judge(r, m, results, step_fail, untouched, d)


def _san_job(r, d, san_bin, tool, pkg, rows, sched, shape, expect):
    log = d / f"san-{tool}-{pkg}-{rows}-{sched}.log"
    cmd = [
        san_bin or "compute-sanitizer",
        "--tool",
        tool,
        "--error-exitcode",
        str(summarize.SANITIZER_ERROR_EXIT),
        r.rowfuse(),
        "check",
        c.PKGS / pkg,
        "--shapes",
        str(rows),
        "--variants",
        sched,
        "--seed",
        str(CHECK_SEED),
    ]
    env = dict(r.env, OMP_NUM_THREADS="1")
    return {
        "kind": "san",
        "tool": tool,
        "pkg": pkg,
        "schedule": sched,
        "shape": shape,
        "expect": expect,
        "cmd": cmd,
        "log": log,
        "timeout": SAN_TIMEOUT,
        "env": env,
    }


def _check_job(r, d, pkg, shape, variants, info):
    tag = (variants or "all").replace(",", "+")
    js = d / f"check-{pkg}-{tag}.json"
    cmd = [
        r.rowfuse(),
        "check",
        c.PKGS / pkg,
        "--shapes",
        str(shape[0]),
        "--seed",
        str(CHECK_SEED),
        "--replays",
        "10",
        "--json",
        js,
    ]
    if variants:
        cmd += ["--variants", variants]
    env = dict(r.env, OMP_NUM_THREADS="2")
    return dict(
        info,
        kind="check",
        pkg=pkg,
        shape=shape,
        cmd=cmd,
        log=js.with_suffix(".log"),
        json=js,
        timeout=180,
        env=env,
    )


def _bench_job(r, d, pkg, shape, sched, info):
    js = d / f"bench-{pkg}-{sched}.json"
    cmd = [
        r.rowfuse(),
        "bench",
        c.PKGS / pkg,
        "--c",
        "--rows",
        str(shape[0]),
        "--variants",
        sched,
        "--rounds",
        "1",
        "--obs",
        "5",
        "--control-obs",
        "0",
        "-o",
        js,
    ]
    return dict(
        info,
        kind="bench",
        pkg=pkg,
        shape=shape,
        cmd=cmd,
        log=js.with_suffix(".log"),
        timeout=180,
        env=r.env,
    )


def _execute(j):
    rc, _, secs, to = c.sh(j["cmd"], log=j["log"], timeout=j["timeout"], env=j["env"])
    out = dict(j, rc=rc, seconds=round(secs, 1), timed_out=to, text=c.read_text(j["log"]))
    if j["kind"] == "check":
        out["doc"] = c.read_json(j["json"])
    if j["kind"] == "san":
        c.say(f"  {j['tool']:<9} {j['pkg']:<22} {j['schedule']:<17} exit {rc} ({secs:.0f} s)")
    return out


def _judge(r, m, results, step_fail, untouched, d):
    g = {
        "seed": m["seed"],
        "faults": m["faults"],
        "fault_source": m["fault_source"],
        "shapes": [
            {"shape": summarize.shape_name(s["shape"]), "class": s["class"]} for s in m["shapes"]
        ],
        "not_applicable": dict(
            {n: p["detail"] for n, p in m["packages"].items() if p.get("status") == "unsupported"},
            **untouched,
        ),
        "cells": [],
        "controls": [],
        "bench_refusals": [],
        "sanitizer": [],
    }
    races = {}  # (fault, schedule, shape) -> racecheck's verdict on the fault package
    for x in results:
        shape = x["shape"] if isinstance(x["shape"], str) else summarize.shape_name(x["shape"])
        if x["kind"] == "race":
            races[(x["fault"], x["schedule"], shape)] = summarize.parse_sanitizer(
                x["text"], x["rc"], x["timed_out"], True, x["seconds"]
            )
        elif x["kind"] == "san":
            v = summarize.parse_sanitizer(
                x["text"], x["rc"], x["timed_out"], x["expect"], x["seconds"]
            )
            g["sanitizer"].append(
                dict(
                    v,
                    tool=x["tool"],
                    package=x["pkg"],
                    schedule=x["schedule"],
                    shape=shape + (" (fault)" if x["expect"] else ""),
                )
            )
        elif x["kind"] == "bench":
            v = summarize.judge_bench_refusal(x["rc"], x["text"], x["timed_out"])
            g["bench_refusals"].append(
                dict(v, fault=x["fault"], schedule=x["schedule"], shape=shape)
            )
        elif x["role"] == "fault":
            row, why = summarize.find_row(
                x["doc"], x["rc"], x["timed_out"], x["schedule"], x["shape"]
            )
            inert = summarize.inert_reason(_plan(x["pkg"]) or {}, x["schedule"], x["fault"])
            v = summarize.judge_fault(row, why, x["fkind"], inert)
            g["cells"].append(
                dict(
                    v,
                    fault=x["fault"],
                    schedule=x["schedule"],
                    shape=shape,
                    **{"class": x["class"]},
                )
            )
        else:  # correct packages and a fault package's untouched variants: all must pass
            why = summarize.doc_failure(x["doc"], x["rc"], x["timed_out"])
            rows = (x["doc"] or {}).get("results", [])
            if why:
                g["controls"].append(
                    {
                        "package": x["pkg"],
                        "role": x["role"],
                        "shape": shape,
                        "status": "FAILED",
                        "detail": why,
                    }
                )
            for row in [] if why else rows:
                v = summarize.judge_control(row, None)
                g["controls"].append(
                    dict(v, package=x["pkg"], role=x["role"], schedule=row["variant"], shape=shape)
                )
    g["cells"] = [
        summarize.judge_race(cell, races.get((cell["fault"], cell["schedule"], cell["shape"])))
        for cell in g["cells"]
    ]
    g["race_checks"] = [
        dict(v, fault=k[0], schedule=k[1], shape=k[2]) for k, v in sorted(races.items())
    ]
    # a fault "caught" where the correct kernel fails too (or its run failed) is no catch
    bad_correct = {
        (ct.get("schedule", "*"), ct["shape"])
        for ct in g["controls"]
        if ct["status"] != "ok" and ct["role"] == "correct"
    }
    for cell in g["cells"]:
        hit = {(cell["schedule"], cell["shape"]), ("*", cell["shape"])} & bad_correct
        if hit and cell["status"] == "caught":
            cell["status"], cell["detail"] = "FAILED", "the correct package fails here too"
    g["not_caught"] = [
        f"{x['fault']}/{x['schedule']}/{x['shape']}"
        for x in g["cells"]
        if x["status"] == "not caught"
    ]
    c.write_json(d / "gates.json", g)
    r.primary.append(d / "gates.json")
    r.subs["gates"] = g

    for step, detail in step_fail:
        r.step("gates", step, False, 0, detail)

    def verdict(name, items, good, label):
        bad = [x for x in items if x["status"] not in good]
        secs = sum(x.get("seconds") or 0 for x in items)
        detail = (
            f"{len(bad)} of {len(items)} FAILED: "
            + "; ".join(label(x) + ": " + str(x["detail"])[:80] for x in bad[:3])
            if bad
            else f"{len(items)} ok"
        )
        r.step("gates", name, bool(items) and not bad, secs, detail)

    caught_ok = {"caught", "inert", "refused", "refused by CUDA"}
    verdict(
        "planted faults (check)",
        g["cells"],
        caught_ok,
        lambda x: f"{x['fault']} {x['schedule']} {x['shape']}",
    )
    verdict(
        "correct and untouched variants",
        g["controls"],
        {"ok"},
        lambda x: f"{x['package']} {x.get('schedule', '')}",
    )
    if any(f["kind"] == summarize.CAPTURE for f in m["faults"]):
        verdict(
            "capture faults (bench --c)",
            g["bench_refusals"],
            {"refused"},
            lambda x: f"{x['fault']} {x['schedule']}",
        )
    if not c.find_tool("compute-sanitizer"):
        r.step("gates", "compute-sanitizer", False, 0, "not found on this machine")
    if not SANITIZE:  # a FAILED step: nothing was sanitized
        r.step("gates", "compute-sanitizer", False, 0, "not run (GATES_SAN=0)")
    else:
        verdict(
            "compute-sanitizer",
            g["sanitizer"],
            {"clean", "caught"},
            lambda x: f"{x['tool']} {x['schedule']} {x['shape']}",
        )
    n_caught = sum(1 for x in g["cells"] if x["status"] in ("caught", "refused", "refused by CUDA"))
    n_inert = sum(1 for x in g["cells"] if x["status"] == "inert")
    r.step(
        "gates",
        "fault cells caught",
        True,
        0,
        f"{n_caught} of {len(g['cells'])} caught, {n_inert} inert, {len(g['not_caught'])} NOT",
    )
