"""decode: the decode regime's out-of-sample set, few rows and large weights. Here:
DECODE_SHAPES (default 12) shapes drawn from DECODE_SEED (default 2041) by
rowfuse.bench.shapes.decode_shapes (a SwiGLU FFN with RMSNorm and a pre-LN GELU FFN in
turn, fp16 weights log-uniform in 1-400 MB, rows log-uniform in 1-64), each a spec of a
rowfuse.blocks kind at those widths (KIND@cNhM), exported once and compiled at its rows by
auto (SPEC-ROWS) and, beside it, in every other schedule that fits: -conv (one kernel per
linear), -wgmma (the same as Hopper GEMMs), -mma (the whole chain in one row-tile kernel),
-stream (the split-reduction kernel, cp.async ring), -tma (the same with its TMA ring),
-wide (the same with its forms for wide blocks, --stream-wide on: not auto's until checked); a
schedule the compiler refuses for the shape is recorded, not an error, but auto must compile.
Each package's weight map (no weights.bin is carried).

There: every weights.bin written from the modules, then `python -m rowfuse.bench.chains
--cells SPEC:ROWS,...` (every cell timed warm and with a cold L2; peers cuBLASLt, PyTorch
eager and torch.compile max-autotune, DECODE_COMPILES fresh compiles, default 1) under
DECODE_TIMEOUT seconds (default 540; no cell started in the last 90): decode.json, with
each cell's regret (the plan's span over rowfuse's fastest schedule and over the fastest
variant, warm and cold). DECODE_CELLS=I,J,... runs only those shapes (0-based), so the set
can be split over several time-limited commands. A cell not run fails the step.
"""

from __future__ import annotations

import os

from . import chains
from . import common as c

SIBLINGS = (
    ("-conv", ["--schedule", "conventional"]),
    ("-wgmma", ["--schedule", "conventional-wgmma"]),
    ("-mma", ["--schedule", "chain"]),
    ("-stream", ["--schedule", "chain-stream", "--stream-tma", "off"]),
    ("-tma", ["--schedule", "chain-stream", "--stream-tma", "on"]),
    ("-wide", ["--schedule", "chain-stream", "--stream-wide", "on"]),
)


def _shapes():
    from rowfuse.bench import shapes

    seed = int(os.environ.get("DECODE_SEED", "2041"))
    return seed, shapes.decode_shapes(seed, int(os.environ.get("DECODE_SHAPES", "12")))


def prepare(jobs: int, stamp: str) -> dict:
    from rowfuse import blocks
    from rowfuse.bench import chains as bench_chains

    seed, draw = _shapes()
    c.say(
        f"== decode: {len(draw)} shapes (seed {seed}), "
        f"{sum(s[4] for s in draw) / 1e6:.0f} MB of weights in all"
    )
    onnx_dir = c.WORK / "decode"
    onnx_dir.mkdir(parents=True, exist_ok=True)
    specs, cells = [], []
    for kind, ch, h, rows, nbytes in draw:
        spec = blocks.spec_name(kind, c=ch, h=h)
        model = onnx_dir / f"{spec}.onnx"
        if not model.is_file():
            code = (
                "import sys; from rowfuse import blocks, export; "
                "m, x = blocks.make_spec(sys.argv[1]); export.export(m, x, 64, sys.argv[2])"
            )
            rc, out, _, _ = c.sh(["python3", "-c", code, spec, model], env=c.compile_env())
            if rc != 0:
                raise c.Failed(f"decode: export of {spec} failed: {out.strip()[-300:]}")
        name = bench_chains.package_name(spec, rows)
        base = [model, "--rows", str(rows)]
        specs.append((name, base, False))
        specs += [(name + sfx, base + opts, False) for sfx, opts in SIBLINGS]
        cells.append({"spec": spec, "rows": rows, "weight_bytes": nbytes, "package": name})
    recs = c.compile_many(specs, jobs, stamp)
    refused = {n: r["detail"] for n, r in recs.items() if r["status"] == "unsupported"}
    for cell in cells:
        auto = recs[cell["package"]]
        if auto["status"] != "ok":
            raise c.Failed(f"decode: {cell['package']} (auto) did not compile: {auto['detail']}")
    bad = [r for r in recs.values() if r["status"] == "FAILED"]
    if bad:
        raise c.Failed(f"decode: {bad[0]['name']} did not compile: {bad[0]['detail']}")
    wmaps = {}
    for name, rec in recs.items():
        if rec["status"] == "ok":
            kind = bench_chains.kind_of(name)
            wmaps[name] = bench_chains.prepare_weights(kind, str(c.CACHE / rec["cache"]))
    c.write_json(c.PKGS / "decode-weights.json", wmaps)
    return {
        "seed": seed,
        "cells": cells,
        "refused": refused,
        "compile_seconds": {n: r["seconds"] for n, r in recs.items()},
    }


def run(r: c.Run) -> None:
    m = r.manifest("decode")
    if m is None:
        return
    d = r.work / "decode"
    d.mkdir(parents=True, exist_ok=True)
    cells = m["cells"]
    pick = os.environ.get("DECODE_CELLS", "")
    if pick:
        cells = [cells[int(i)] for i in pick.split(",")]
    if not chains.write_weights(r, "decode", c.PKGS / "decode-weights.json"):
        return
    js, text = chains.bench(
        r,
        "decode",
        f"{len(cells)} decode shapes against their peers, warm and cold L2",
        ["--cells", ",".join(f"{x['spec']}:{x['rows']}" for x in cells)],
        int(os.environ.get("DECODE_TIMEOUT", "540")),
        os.environ.get("DECODE_COMPILES", "1"),
        d / "decode.json",
    )
    doc = c.read_json(js)
    if doc is None:
        return
    regrets = [
        {
            "cell": f"{x['kind']}:{x['rows']}",
            **{k: v for k, v in (x.get("summary") or {}).items() if k.startswith("regret")},
        }
        for x in doc.get("cells", [])
    ]
    r.subs["decode"] = {"table": chains.table_lines(text), "regret": regrets}
    missing = len(doc.get("not_run", []))
    why = f"{missing} cells not run (time budget)" if missing else ""
    r.step("decode", "every cell run", missing == 0, 0, why)
