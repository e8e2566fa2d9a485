"""bench: the benchmark of docs/benchmarking.md at every development shape. Here: one
package per shape (no weights.bin: `rowfuse bench --c` draws its inputs and weights from
its seed). There:
  1. the C host, `rowfuse bench PKG --c` per shape (floor, every schedule the package
     holds, cuBLASLt), merged into c.json; a failed shape fails the step;
  2. the Python host, `python -m rowfuse.bench` over every shape (its floor, PyTorch eager,
     torch.compile, Triton fused) into python.json, rewritten after each shape, so a run cut
     short by PY_TIMEOUT (seconds, default 480) keeps the shapes it finished;
  3. `python -m rowfuse.bench.report` over both: report.md, report.json, report.png;
  4. the residual MLP as a chain (`rowfuse compile --mlp S --schedule chain`, the same
     seeded weights, its chain_mma kernel) through `rowfuse bench --c` per shape, beside the
     fastest of the MLP's own schedules from step 1: chain.json (BENCH_CHAIN=0 skips it).
BENCH_SHAPES overrides the shapes; BENCH_PYTHON=0 skips step 2, BENCH_C=0 step 1.
"""

from __future__ import annotations

import os

from rowfuse.bench import report

from . import common as c

SHAPES = "49x48x96,64x64x128,1000x96x200,4096x128x512,131072x32x64,8192x512x2048"


def prepare(jobs: int, stamp: str) -> dict:
    shapes = os.environ.get("BENCH_SHAPES", SHAPES).split(",")
    c.say(f"== bench: {len(shapes)} shapes")
    specs = [(s, ["--mlp", s], False) for s in shapes]
    if os.environ.get("BENCH_CHAIN", "1") != "0":  # a chain package reads its weights.bin
        specs += [(f"chain-{s}", ["--mlp", s, "--schedule", "chain"], True) for s in shapes]
    recs = c.compile_many(specs, jobs, stamp)
    bad = [r for r in recs.values() if r["status"] != "ok"]
    if bad:
        raise c.Failed(f"bench: no package for {bad[0]['name']}: {bad[0]['detail']}")
    return {"shapes": shapes, "packages": recs}


def run(r: c.Run) -> None:
    m = r.manifest("bench")
    if m is None:
        return
    d = r.work / "bench"
    d.mkdir(parents=True, exist_ok=True)
    rev = r.env["ROWFUSE_GIT_REV"]
    c_files = []
    if os.environ.get("BENCH_C", "1") != "0":
        for s in m["shapes"]:
            rows = s.split("x")[0]
            js = d / f"c_{s}.json"
            r.cmd(
                "bench",
                f"C host {s}",
                [
                    r.rowfuse(),
                    "bench",
                    c.PKGS / s,
                    "--c",
                    "--rows",
                    rows,
                    "--git-rev",
                    rev,
                    "-o",
                    js,
                ],
                f"c_{s}.log",
                300,
            )
            if js.is_file() and js.stat().st_size:  # failed rows are reported too
                c_files.append(js)
        if c_files:
            docs = [c.read_json(p) for p in c_files]
            merged = dict(
                docs[0],
                runs=[x for doc in docs for x in doc["runs"]],
                seeds=[doc.get("seed") for doc in docs],
            )
            c.write_json(d / "c.json", merged)
    if os.environ.get("BENCH_PYTHON", "1") != "0":
        limit = int(os.environ.get("PY_TIMEOUT", "480"))
        # SIGINT first: the harness writes what it finished before it exits
        r.cmd(
            "bench",
            "Python host",
            [
                "timeout",
                "-s",
                "INT",
                str(limit),
                "python3",
                "-m",
                "rowfuse.bench",
                "--shapes",
                ",".join(m["shapes"]),
                "-o",
                d / "python.json",
            ],
            "python.log",
            limit + 60,
        )
    if any(n.startswith("chain-") for n in m["packages"]):
        _chain_beside(r, d, m["shapes"])
    runs = [p for p in (d / "c.json", d / "python.json") if p.is_file()]
    if not runs:
        r.step("bench", "report", False, 0, "neither host wrote its JSON")
        return
    ok, _, _ = r.cmd(
        "bench",
        "report",
        ["python3", "-m", "rowfuse.bench.report", *runs, "-o", d / "report"],
        "report.log",
        120,
    )
    if ok:
        r.primary += [d / "report" / "report.json", d / "report" / "report.md"]
        md = c.read_text(d / "report" / "report.md").strip().splitlines()
        r.subs["bench"] = {"table": "\n".join(md[-14:])}


def _chain_beside(r, d, shapes) -> None:
    """Step 4: each shape's chain package timed by the C host, beside the fastest of the
    MLP's own schedules in c.json (cuBLASLt aside; GPU span medians)."""
    mlp = {}
    for run in (c.read_json(d / "c.json") or {}).get("runs", []):
        sh = run.get("shape", {})
        key = f"{sh.get('rows')}x{sh.get('channels')}x{sh.get('hidden')}"
        own = [v for v in run.get("variants", []) if v.get("name") not in ("empty", "cublaslt")]
        spans = {v["name"]: report.span_median(v) for v in own}
        spans = {k: x for k, x in spans.items() if x}
        if spans:
            best = min(spans, key=spans.get)
            mlp[key] = (best, spans[best])
    rows = []
    for s in shapes:
        js = d / f"chain_{s}.json"
        r.cmd(
            "bench",
            f"chain {s}",
            [
                r.rowfuse(),
                "bench",
                c.PKGS / f"chain-{s}",
                "--c",
                "--rows",
                s.split("x")[0],
                "-o",
                js,
            ],
            f"chain_{s}.log",
            300,
        )
        doc = c.read_json(js) or {}
        vs = [v for run in doc.get("runs", []) for v in run.get("variants", [])]
        chain = next(
            (
                report.span_median(v)
                for v in vs
                if v.get("name") != "empty" and report.span_median(v)
            ),
            None,
        )
        best, span = mlp.get(s, (None, None))
        rows.append(
            {
                "shape": s,
                "chain_us": chain,
                "mlp_best": best,
                "mlp_us": span,
                "ratio": chain / span if chain and span else None,
            }
        )
    c.write_json(d / "chain.json", {"rows": rows})
    r.primary.append(d / "chain.json")
