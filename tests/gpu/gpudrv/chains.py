"""chains: the suite of block kinds (rowfuse.blocks) against their peers, at 1, 7, 64, 1,000
and 16,384 rows, the FFNs also at 4 and 16, the tiny MLP also at 2^20 against the roofline
of the measured ceilings (rowfuse.bench.chains.cells).

Here: each kind exported once (`python -m rowfuse.export rowfuse.blocks:KIND`), compiled at
every row count (`rowfuse compile KIND.onnx --rows R`: the plan's tile and schedule depend
on the rows) and again with `--schedule conventional` (KIND-R-conv, the suite's
rowfuse-conv: one kernel per linear) and `--schedule conventional-wgmma` (KIND-R-wgmma,
rowfuse-conv-wgmma: the linears as Hopper GEMMs), and each package's weight map
(rowfuse.bench.chains.prepare_weights: which module parameter every slice of weights.bin
holds, checked by rebuilding the file byte for byte), so no weights.bin is carried.

There, in order: every weights.bin written from the modules, once; `rowfuse check` of
every package at its rows from CHAINS_CHECK_MIN_ROWS up to CHAINS_CHECK_MAX_ROWS
(default 1 to 1,000: the fp64 reference runs on the CPU) and of the planted faults
(FAULT_PACKAGES: each conventional schedule with its scratch stores planted away, the
streaming kernel's checking build with each of its reduction faults and its TMA ring's
fault; each check must fail, and the same checking build of the correct kernel,
STREAM_CHECK_BUILDS, must pass; the other ring's packages, OTHER_RING, checked like the rest), then
compute-sanitizer's memcheck and racecheck on the streaming kernel and five conventional
packages (CHAINS_SAN); the weight-streaming packages through `rowfuse bench --c` with
warm and cold L2 (stream.json); then `python -m rowfuse.bench.chains`, in one process,
under CHAINS_TIMEOUT seconds (default 540; it starts no new cell in its last 90 s and keeps
what it finished).

Environment: CHAINS_KINDS and CHAINS_ROWS narrow the set (comma-separated; here, what is
prepared; there, which of the prepared cells the suite times), or CHAINS_CELLS=KIND:ROWS,...
names the suite's cells exactly (there); CHAINS_COMPILES
(default 2) is torch.compile's fresh compiles per shape, the fastest kept; CHAINS_CHECK=0
skips the checks and the sanitizer, CHAINS_STREAM=0 the streaming figures
(CHAINS_STREAM_PACKAGES=NAME,... times only those), CHAINS_SUITE=0 the Python suite (so
that each can run in a command of its own where commands are time-limited).
"""

from __future__ import annotations

import os

from rowfuse.bench import summarize

from . import common as c


def _kinds():
    from rowfuse.bench import chains

    return os.environ.get("CHAINS_KINDS", ",".join(chains.CHAIN_KINDS)).split(",")


def _rows():
    from rowfuse.bench import chains

    return [
        int(r) for r in os.environ.get("CHAINS_ROWS", ",".join(map(str, chains.ROWS))).split(",")
    ]


def prepare(jobs: int, stamp: str) -> dict:
    from rowfuse.bench import chains

    kinds, rows = _kinds(), _rows()
    c.say(f"== chains: {len(kinds)} kinds x {len(rows)} row counts")
    onnx_dir = c.WORK / "chains"
    onnx_dir.mkdir(parents=True, exist_ok=True)
    specs = []
    for k in kinds:
        model = onnx_dir / f"{k}.onnx"
        rc, out, _, _ = c.sh(
            ["python3", "-m", "rowfuse.export", f"rowfuse.blocks:{k}", "--rows", "64", "-o", model],
            env=c.compile_env(),
        )
        if rc != 0:
            raise c.Failed(f"chains: export of {k} failed: {out.strip()[-300:]}")
        specs += [
            (chains.package_name(k, r), [model, "--rows", str(r)], False)
            for _, r in chains.cells([k], rows)
        ]
        # the planted faults of the conventional schedules and of the streaming kernel's
        # reduction: each check must fail
        if k == "gpt2_ffn":
            for name, (r, sched, fault) in FAULT_PACKAGES.items():
                args = [model, "--rows", str(r), "--schedule", sched, "--plant-fault", fault]
                if sched == "chain-stream":  # its checking build (chain_stream.py)
                    args += ["--check-delay", str(STREAM_CHECK_DELAY)] + _ring(name)
                specs.append((name, args, False))
            for name, r in STREAM_CHECK_BUILDS.items():  # controls: each check must pass
                args = [model, "--rows", str(r), "--schedule", "chain-stream"] + _ring(name)
                specs.append((name, args + ["--check-delay", str(STREAM_CHECK_DELAY)], False))
        # the streaming kernel's forms for wide blocks (--stream-wide on), checked and timed
        for name, (kind, r) in WIDE_PACKAGES.items():
            if kind == k:
                specs.append((name, [model, "--rows", str(r), "--stream-wide", "on"], False))
        # the whole chain's kernel in the warp-rows layout (--warp-rows on), checked and timed
        for name, (kind, r) in WARP_PACKAGES.items():
            if kind == k:
                args = [model, "--rows", str(r), "--warp-rows", "on"]
                if name.endswith("-warp16"):  # 16-row warp tiles where the plan takes 32
                    args += ["--tile-rows", "16"]
                specs.append((name, args, False))
        # timeline builds of the streaming kernel (rowfuse.bench.timeline reads them)
        for name, (kind, r) in TIMELINE_PACKAGES.items():
            if kind == k:
                args = [model, "--rows", str(r), "--timeline"]
                if name.endswith("-xfirst"):
                    args += XFIRST_ARGS
                specs.append((name, args, False))
        # the TMA ring with the producer waiting for X (--stream-x-first on), checked and
        # timed (stream.json) beside auto's
        for name, (kind, r) in XFIRST_PACKAGES.items():
            if kind == k:
                specs.append((name, [model, "--rows", str(r), *XFIRST_ARGS], False))
        # the streaming kernel with the other weight ring than the plan's at its rows
        rows_other, sfx, ring = OTHER_RING.get(k, ((), "", ""))
        for r in rows_other:
            args = [model, "--rows", str(r), "--schedule", "chain-stream", "--stream-tma", ring]
            specs.append((chains.package_name(k, r) + sfx, args, False))
        # the conventional schedules of the same block (the suite's rowfuse-conv and
        # rowfuse-conv-wgmma)
        for sfx, sched in (("-conv", "conventional"), ("-wgmma", "conventional-wgmma")):
            specs += [
                (
                    chains.package_name(k, r) + sfx,
                    [model, "--rows", str(r), "--schedule", sched],
                    False,
                )
                for _, r in chains.cells([k], rows)
            ]
    recs = c.compile_many(specs, jobs, stamp)
    # a conventional package that does not fit (a kernel's row tile beyond shared memory) is
    # left out of the suite with its reason; any other failure stops the prepare
    skipped = {
        n: r["detail"]
        for n, r in recs.items()
        if n.endswith(("-conv", "-wgmma")) and r["status"] == "unsupported"
    }
    recs = {n: r for n, r in recs.items() if n not in skipped}
    bad = [r for r in recs.values() if r["status"] != "ok"]
    if bad:
        raise c.Failed(f"chains: {bad[0]['name']} did not compile: {bad[0]['detail']}")
    wmaps = {}
    for name, rec in recs.items():
        wmaps[name] = chains.prepare_weights(chains.kind_of(name), str(c.CACHE / rec["cache"]))
    c.write_json(c.PKGS / "chains-weights.json", wmaps)
    secs = {n: r["seconds"] for n, r in recs.items()}
    return {
        "kinds": kinds,
        "rows": rows,
        "packages": recs,
        "compile_seconds": secs,
        "not_compiled": skipped,
    }


def run(r: c.Run) -> None:
    m = r.manifest("chains")
    if m is None:
        return
    d = r.work / "chains"
    d.mkdir(parents=True, exist_ok=True)
    ok = write_weights(r, "chains", c.PKGS / "chains-weights.json")
    if ok and os.environ.get("CHAINS_CHECK", "1") != "0":
        _checks(r, d, m)
        if os.environ.get("CHAINS_CHECK_MIN_ROWS", "1") == "1":  # (not the 16,384-row call)
            _sanitize(r, d, m)
    if ok and os.environ.get("CHAINS_STREAM", "1") != "0":
        _stream_figures(r, d, m)
    if ok and os.environ.get("CHAINS_TIMELINE", "1") != "0":
        _timelines(r, d, m)
    if os.environ.get("CHAINS_SUITE", "1") == "0":
        return
    # CHAINS_KINDS / CHAINS_ROWS there narrow what was prepared (a call of its own each)
    kinds = [k for k in _kinds() if k in m["kinds"]] if "CHAINS_KINDS" in os.environ else m["kinds"]
    rows = [n for n in _rows() if n in m["rows"]] if "CHAINS_ROWS" in os.environ else m["rows"]
    if not kinds or not rows:
        r.step(
            "chains",
            "suite selection",
            False,
            0,
            "CHAINS_KINDS / CHAINS_ROWS name nothing prepared",
        )
        return
    select = ["--kinds", ",".join(kinds), "--rows", ",".join(map(str, rows))]
    if os.environ.get("CHAINS_CELLS"):  # exactly these KIND:ROWS cells (each prepared)
        from rowfuse.bench import chains as bench_chains

        cells = bench_chains.parse_cells(os.environ["CHAINS_CELLS"])
        missing = [
            f"{k}:{n}" for k, n in cells if bench_chains.package_name(k, n) not in m["packages"]
        ]
        if missing:
            r.step("chains", "suite selection", False, 0, f"not prepared: {', '.join(missing)}")
            return
        select = ["--cells", os.environ["CHAINS_CELLS"]]
    js, text = bench(
        r,
        "chains",
        "suite against PyTorch and torch.compile",
        select,
        int(os.environ.get("CHAINS_TIMEOUT", "540")),
        os.environ.get("CHAINS_COMPILES", "2"),
        d / "chains.json",
    )
    if js.is_file():
        r.subs["chains"] = {"table": table_lines(text)}


def write_weights(r: c.Run, sub: str, wmap) -> bool:
    """Every weights.bin of the map written from the modules (one step of `sub`)."""
    cmd = ["python3", "-m", "rowfuse.bench.chains", "--packages", c.PKGS]
    ok, _, _ = r.cmd(
        sub,
        "weights.bin from the modules",
        cmd + ["--weights-map", wmap, "--weights-only"],
        "weights.log",
        600,
    )
    return ok


def bench(r: c.Run, sub: str, step: str, select: list, limit: int, compiles: str, js):
    """`python -m rowfuse.bench.chains` over the cells `select` names (--kinds/--rows or
    --cells), interrupted after `limit` seconds and starting no cell in the last 90, into
    js (added to the run's results when written). Returns (js, the command's output)."""
    cmd = ["timeout", "-s", "INT", str(limit), "python3", "-m", "rowfuse.bench.chains"]
    cmd += ["--packages", c.PKGS, *select, "--deadline-s", str(max(0, limit - 90))]
    cmd += ["--compiles", compiles, "-o", js]
    _, _, text = r.cmd(sub, step, cmd, f"{sub}.log", limit + 60)
    if js.is_file():
        r.primary.append(js)
    return js, text


def table_lines(text: str) -> str:
    """The markdown table rows of a bench.chains output."""
    return "\n".join(ln for ln in text.splitlines() if ln.startswith("|"))


def _checks(r: c.Run, d, m) -> None:
    """`rowfuse check` of every package at its rows from CHAINS_CHECK_MIN_ROWS (default 1)
    up to CHAINS_CHECK_MAX_ROWS (default 1,000: the fp64 reference runs on the CPU; the
    16,384-row packages take a call of their own, both set to 16384), 3 bit-identical
    replays, one process each, several at once: the plan's choice and the conventional
    schedules alike (checks.json). The planted faults run with the lower range only."""
    lo = int(os.environ.get("CHAINS_CHECK_MIN_ROWS", "1"))
    limit = int(os.environ.get("CHAINS_CHECK_MAX_ROWS", "1000"))
    jobs = []
    for name in sorted(m["packages"]):
        n = int(name.split("-")[1])
        if not lo <= n <= limit or name in FAULT_PACKAGES:
            continue
        js = d / f"check_{name}.json"
        cmd = [r.rowfuse(), "check", c.PKGS / name, "--shapes", str(n), "--replays", "3"]
        jobs.append((name, n, cmd + ["--json", js], js))

    def one(job):
        name, n, cmd, js = job
        rc, _, secs, to = c.sh(cmd, log=d / f"check_{name}.log", timeout=600, env=r.env)
        return name, n, rc, secs, to, c.read_json(js) or {}

    for name, (n, _, _) in FAULT_PACKAGES.items():
        if name in m["packages"] and lo <= n <= limit:
            js = d / f"check_{name}.json"
            cmd = [r.rowfuse(), "check", c.PKGS / name, "--shapes", str(n), "--json", js]
            jobs.append((name, n, cmd, js))
    rows = []
    for name, n, rc, secs, to, doc in c.pool_map(one, jobs, 8):
        if name in FAULT_PACKAGES:
            caught, why = summarize.judge_chain_fault(rc, to, doc)
            r.step("chains", f"planted {name} caught", caught, secs, why)
        else:
            good, why = summarize.judge_chain_check(rc, to, doc)
            r.step("chains", f"check {name}", good, secs, why)
        rows.append({"package": name, "rows": n, "rc": rc, "result": doc})
    c.write_json(d / "checks.json", {"max_rows": limit, "checks": rows})
    r.primary.append(d / "checks.json")


# the GPT-2 FFN's conventional schedules with their scratch stores planted away
# (conv-no-store), and its streaming kernel with each planted reduction fault (in its
# checking build), name -> (rows, schedule, fault): `rowfuse check` must fail each. A name
# with "-tma" is the TMA ring's kernel (--stream-tma on): its own fault (the MMA warps not
# waiting for a stage's bytes) and a reduction fault, which the ring must not hide.
FAULT_PACKAGES = {
    "gpt2_ffn-7-conv-nostore": (7, "conventional", "conv-no-store"),
    "gpt2_ffn-64-wgmma-nostore": (64, "conventional-wgmma", "conv-no-store"),
    "gpt2_ffn-4-stream-early": (4, "chain-stream", "stream-early-reduce"),
    "gpt2_ffn-16-stream-early": (16, "chain-stream", "stream-early-reduce"),
    "gpt2_ffn-4-stream-noreset": (4, "chain-stream", "stream-no-reset"),
    "gpt2_ffn-64-stream-noreset": (64, "chain-stream", "stream-no-reset"),
    "gpt2_ffn-4-tma-nowait": (4, "chain-stream", "stream-ring-no-wait"),
    "gpt2_ffn-16-tma-nowait": (16, "chain-stream", "stream-ring-no-wait"),
    "gpt2_ffn-4-tma-early": (4, "chain-stream", "stream-early-reduce"),
}
# The streaming kernel with the other weight ring than auto's at the decode rows, so both
# rings are checked, sanitized (SANITIZE) and timed warm and cold (stream.json, and the
# suite's rowfuse-stream-tma / rowfuse-stream siblings): kind -> (rows, package suffix,
# --stream-tma). auto takes the TMA ring above 50 MB of weights, so the GPT-2 FFN's other
# ring is TMA (KIND-ROWS-tma) and the LLaMA and 268 MB FFNs' is cp.async (KIND-ROWS-stream).
OTHER_RING = {
    "gpt2_ffn": ((1, 4, 16, 64), "-tma", "on"),
    "llama_ffn": ((1, 4, 16), "-stream", "off"),
    "xl_gelu_ffn": ((1, 4, 16), "-stream", "off"),
}


def _ring(name: str) -> list:
    """The compile option of a fault or checking build's ring: TMA for a "-tma" name."""
    return ["--stream-tma", "on"] if "-tma" in name else []


# (stream-no-fence is not among them: its unfenced partial stores reach the L2 long before
# any other block reads them, so no output shows the missing fences; on an H100 it passed
# the checking build too. test_chain_stream.py checks its PTX instead. stream-no-reset is
# caught from the second replay: the arrival counter left set lets every reducer through.)
# The streaming kernel's checking build: its last block spins this many SM clocks (about
# 100 us) before its first partial store of a row tile, far longer than another block's
# whole row tile at these widths, so a reducer that does not wait for every block reads the
# poison. The
# same build of the correct kernel (name -> rows) must pass: the delays break nothing.
STREAM_CHECK_DELAY = 200_000
STREAM_CHECK_BUILDS = {
    "gpt2_ffn-4-stream-delay": 4,
    "gpt2_ffn-64-stream-delay": 64,
    "gpt2_ffn-4-tma-delay": 4,
}

# packages compute-sanitizer runs on (memcheck and racecheck, at the package's rows): the
# streaming kernel with either ring (its cross-block wait and reduction; the TMA ring's
# mbarriers), the conventional schedules' kernels of three kinds, from 7 to 1,000 rows, and
# the Hopper GEMMs
SANITIZE = (
    "gpt2_ffn-4",
    "gpt2_ffn-4-tma",
    "gpt2_ffn-7-conv",
    "bert_ffn-64-conv",
    "stacked-1000-conv",
    "gpt2_ffn-64-wgmma",
    "llama_ffn-1000-wgmma",
)


def _sanitize(r: c.Run, d, m) -> None:
    """memcheck and racecheck over `rowfuse check` of the SANITIZE packages (CHAINS_SAN
    overrides, comma-separated), in parallel, into sanitizer.json; clean means a summary
    with zero errors and exit status 0 (rowfuse.bench.summarize.parse_sanitizer)."""
    from rowfuse.bench import summarize

    names = [n for n in os.environ.get("CHAINS_SAN", ",".join(SANITIZE)).split(",") if n]
    san = c.find_tool("compute-sanitizer")
    if not san:
        r.step("chains", "compute-sanitizer", False, 0, "not found on this machine")
        return
    jobs = []
    for name in names:
        if name not in m["packages"]:
            r.step("chains", f"sanitize {name}", False, 0, "not prepared")
            continue
        n = name.split("-")[1]
        for tool in ("memcheck", "racecheck"):
            cmd = [san, "--tool", tool, "--error-exitcode", str(summarize.SANITIZER_ERROR_EXIT)]
            cmd += [r.rowfuse(), "check", c.PKGS / name, "--shapes", n]
            jobs.append((name, tool, cmd))

    def one(job):
        name, tool, cmd = job
        log = d / f"san_{tool}_{name}.log"
        rc, _, secs, to = c.sh(cmd, log=log, timeout=480, env=r.env)
        return name, tool, summarize.parse_sanitizer(c.read_text(log), rc, to, seconds=secs)

    rows = []
    for name, tool, v in c.pool_map(one, jobs, 6):
        r.step("chains", f"{tool} {name}", v["status"] == "clean", v["seconds"] or 0, v["detail"])
        rows.append(dict(v, package=name, tool=tool))
    c.write_json(d / "sanitizer.json", {"runs": rows})
    r.primary.append(d / "sanitizer.json")


# the streaming kernel with its forms for wide blocks (--stream-wide on: X streamed beside
# W1, slices of 96), not auto's until they pass here: name -> (kind, rows)
WIDE_PACKAGES = {
    "llama_ffn-64-wide": ("llama_ffn", 64),
    "xl_gelu_ffn-64-wide": ("xl_gelu_ffn", 64),
}

# the whole chain's kernel in the warp-rows layout (--warp-rows on: each warp its own tiles,
# the hidden values in registers), not auto's until it passes here: name -> (kind, rows);
# the suite times each beside the plan's choice (the rowfuse-warp sibling). The tiny MLP's
# plan takes 32-row warp tiles; -warp16 is the same with 16 (the rowfuse-warp16 sibling).
WARP_PACKAGES = {
    f"{kind}-{rows}{sfx}": (kind, rows)
    for kind, rs, sfxs in (
        ("tcnn_mlp", (7, 64, 1000, 16384, 1 << 20), ("-warp", "-warp16")),
        ("mlp_head", (7, 64, 1000, 16384), ("-warp",)),
    )
    for rows in rs
    for sfx in sfxs
}

# timeline builds of the streaming kernel (--timeline: each block stamps the global timer at
# the phases of a row tile), name -> (kind, rows): the tail after the stream at 1 row, with
# the TMA ring (LLaMA-style and GPT-style widths) and at 16 rows, and X streamed beside W1
# at 64 rows
TIMELINE_PACKAGES = {
    "llama_ffn-1-timeline": ("llama_ffn", 1),
    "xl_gelu_ffn-1-timeline": ("xl_gelu_ffn", 1),
    "xl_gelu_ffn-16-timeline": ("xl_gelu_ffn", 16),
    "llama_ffn-64-timeline": ("llama_ffn", 64),
    "llama_ffn-1-timeline-xfirst": ("llama_ffn", 1),
    "xl_gelu_ffn-1-timeline-xfirst": ("xl_gelu_ffn", 1),
}

# the TMA ring whose producer waits for X after its first tiles (--stream-x-first on), not
# auto's until it passes here: name -> (kind, rows); the H100 timeline of 2026-12-07 had X
# ready only 9.6-17.6 us into the launch without it
XFIRST_ARGS = ["--schedule", "chain-stream", "--stream-tma", "on", "--stream-x-first", "on"]
XFIRST_PACKAGES = {
    f"{kind}-{rows}-xfirst": (kind, rows)
    for kind in ("llama_ffn", "xl_gelu_ffn")
    for rows in (1, 4, 16)
}


def _timelines(r: c.Run, d, m) -> None:
    """The TIMELINE_PACKAGES prepared, warm and cold L2 (python -m rowfuse.bench.timeline),
    into timeline.json: per row tile the phases over the blocks and the spans."""
    out = []
    for name in sorted(n for n in TIMELINE_PACKAGES if n in m["packages"]):
        n = name.split("-")[1]
        for mode in ("warm", "cold"):
            js = d / f"timeline_{name}_{mode}.json"
            cmd = ["python3", "-m", "rowfuse.bench.timeline", c.PKGS / name, "--rows", n]
            cmd += ["-o", js] + (["--cold"] if mode == "cold" else [])
            r.cmd("chains", f"timeline {name} {mode} L2", cmd, f"timeline_{name}_{mode}.log", 180)
            res = c.read_json(js)
            if res:
                out.append(res)
    if out:
        c.write_json(d / "timeline.json", {"runs": out})
        r.primary.append(d / "timeline.json")


def _stream_figures(r: c.Run, d, m) -> None:
    """The weight-streaming packages (kernel stream_*) planned for at most 64 rows (the
    decode regime) through the C host at those rows, warm and cold L2 (`--cold-l2`: the L2
    evicted before every observation): weight bytes over the GPU span against the measured
    copy rate, into stream.json."""
    rows = []
    only = [n for n in os.environ.get("CHAINS_STREAM_PACKAGES", "").split(",") if n]
    for name in sorted(m["packages"]):
        if name in FAULT_PACKAGES or name in STREAM_CHECK_BUILDS or name in TIMELINE_PACKAGES:
            continue  # checked, never timed
        if only and name not in only:
            continue  # CHAINS_STREAM_PACKAGES names the ones to time
            continue
        plan = c.read_json(c.PKGS / name / "plan.json") or {}
        kernel = (plan.get("kernels") or [{}])[0].get("name", "")
        if not kernel.startswith("stream_"):
            continue
        n = name.split("-")[1]
        if int(n) > 64:
            continue
        for mode in ("warm", "cold"):
            js = d / f"stream_{name}_{mode}.json"
            cmd = [r.rowfuse(), "bench", c.PKGS / name, "--c", "--rows", n, "-o", js]
            r.cmd(
                "chains",
                f"stream {name} {mode} L2",
                cmd + (["--cold-l2"] if mode == "cold" else []),
                f"stream_{name}_{mode}.log",
                300,
            )
            run = ((c.read_json(js) or {}).get("runs") or [{}])[0]
            rows.append(
                {
                    "package": name,
                    "rows": int(n),
                    "l2": mode,
                    "weight_bytes": run.get("weight_bytes"),
                    "weights_gbs": run.get("weights_gbs"),
                    "of_copy_rate": run.get("of_copy_rate"),
                }
            )
    c.write_json(d / "stream.json", {"rows": rows})
    r.primary.append(d / "stream.json")
