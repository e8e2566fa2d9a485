"""check: the correctness run. Here: one package per check shape (3 fixed + N seeded
random, rowfuse.bench.shapes), the benchmark's 8192x512x2048 package, the example model's
package, and persistent-wgmma packages whose block pairs and blocked ring walk several
tiles. There:
  1. the runtime's unit test, hiding the GPU from itself, then with --gpu;
  2. `rowfuse check` on every package, one process each (a trapped kernel poisons only its
     own process), at its rows plus the extra row counts of its (C, H): every schedule the
     package holds and cuBLASLt, 1,000 more replays that must reproduce Y bit for bit;
  3. the drop-in torch module (tests/gpu/torch_block.py) on the example's package.
"""

from __future__ import annotations

import os

from rowfuse.bench import shapes as gshapes
from rowfuse.bench import summarize

from . import common as c

SEED = int(os.environ.get("SEED", "2026"))
N_RANDOM = int(os.environ.get("N_RANDOM", "20"))
CHECK_SEED = 20261202
BENCH_SHAPE = (8192, 512, 2048)
# Row counts checked on every package of that (C, H), beyond its own rows: 1 and 4096 rows
# of the reference shape; blocks that walk several tiles (more tiles than one wave), so the
# Hopper kernel's X ring and chunk ring wrap across tiles: resident weights (64x128),
# streamed weights (256x208, a seed-2026 shape) and the channels over two warpgroups.
EXTRA_ROWS = [(1, 48, 96), (4096, 48, 96), (130000, 64, 128), (50000, 256, 208), (9000, 512, 2048)]
# persistent-wgmma packages built with options: name, shape, options, rows to check.
# pair-walk: 2 block pairs over 16 tiles (resident weights, the X ring wraps); pair-stream:
# 3 pairs over 32 tiles with streamed chunks; 4096x128x512 without pairs; blocked-walk: the
# blocked weight ring (C = 264 padded to 320, H = 1000 in chunks of 128, the last one
# partial), 8 blocks over 47 tiles.
WGMMA_VARIANTS = [
    ("pair-walk", "1000x96x200", ["--hidden-split", "on", "--max-grid", "4"], "1000,999"),
    ("pair-stream", "2000x256x1024", ["--hidden-split", "on", "--max-grid", "6"], "2000,1999"),
    ("4096x128x512-nopair", "4096x128x512", ["--hidden-split", "off"], "4096,4001"),
    (
        "blocked-walk",
        "3000x264x1000",
        ["--schedule", "persistent-wgmma", "--max-grid", "8"],
        "3000,2999,130",
    ),
]


def name_of(shape) -> str:
    return summarize.shape_name(shape)


def prepare(jobs: int, stamp: str) -> dict:
    shapes = [tuple(s) for s in gshapes.shapes(SEED, N_RANDOM)] + [BENCH_SHAPE]
    c.say(f"== check: {len(shapes)} shapes (seed {SEED}, {N_RANDOM} random)")
    # no weights.bin: the check draws its inputs and weights from its seed
    specs = [(name_of(s), ["--mlp", name_of(s)], False) for s in shapes]
    specs += [(n, ["--mlp", s, *opts], False) for n, s, opts, _ in WGMMA_VARIANTS]
    recs = c.compile_many(specs, jobs, stamp)
    recs["example"] = example_package(stamp)
    failed = [r for r in recs.values() if r["status"] != "ok"]
    if failed:
        raise c.Failed(
            f"check: {len(failed)} package(s) not built: {failed[0]['name']}: {failed[0]['detail']}"
        )
    return {
        "seed": SEED,
        "shapes": [list(s) for s in shapes],
        "extra_rows": [list(s) for s in EXTRA_ROWS],
        "wgmma_variants": {n: rows for n, _, _, rows in WGMMA_VARIANTS},
        "packages": recs,
    }


def example_package(stamp: str) -> dict:
    """The example model (examples/residual_mlp.py, 49 rows) exported to ONNX and compiled:
    what tests/gpu/torch_block.py loads."""
    onnx = c.WORK / "example.onnx"
    env = c.compile_env()
    env["PYTHONPATH"] = os.pathsep.join([str(c.ROOT / "examples"), env["PYTHONPATH"]])
    rc, out, _, _ = c.sh(
        ["python3", "-m", "rowfuse.export", "residual_mlp:make", "--rows", "49", "-o", onnx],
        env=env,
    )
    if rc != 0:
        raise c.Failed(f"export of the example failed: {out[-800:]}")
    import hashlib

    key = stamp + hashlib.sha1(onnx.read_bytes()).hexdigest()[:8]
    return c.compile_many([("example", [str(onnx)])], 1, key)["example"]


def run(r: c.Run) -> None:
    m = r.manifest("check")
    if m is None:
        return
    d = r.work / "check"
    d.mkdir(parents=True, exist_ok=True)
    # the runtime's unit test finds its fake kernel library beside itself
    unit = c.BIN / "test_runtime_nogpu"
    r.cmd("check", "unit test (GPU hidden)", [unit], "unit.log", 120, cwd=c.BIN)
    r.cmd("check", "unit test --gpu", [unit, "--gpu"], "unit-gpu.log", 300, cwd=c.BIN)
    jobs = []
    for name in m["packages"]:
        if name == "example":
            continue
        pkg = c.PKGS / name
        if name in m["wgmma_variants"]:
            rows = m["wgmma_variants"][name]
        else:
            rr, cc, hh = (int(v) for v in name.split("x"))
            rows = ",".join(
                [str(rr)] + [str(e[0]) for e in m["extra_rows"] if (e[1], e[2]) == (cc, hh)]
            )
        jobs.append((name, pkg, rows))
    workers = 4
    env = dict(r.env, OMP_NUM_THREADS=str(max(1, r.cores // workers)))

    def one(job):
        name, pkg, rows = job
        js = d / f"{name}.json"
        if not (pkg / "plan.json").is_file():
            return name, None, 0, False, 0.0, f"missing package build-gpu/pkgs/{name}"
        cmd = [
            r.rowfuse(),
            "check",
            pkg,
            "--shapes",
            rows,
            "--seed",
            str(CHECK_SEED),
            "--replays",
            "1000",
            "--json",
            js,
        ]
        rc, _, secs, to = c.sh(cmd, log=d / f"{name}.log", timeout=300, env=env)
        return name, c.read_json(js), rc, to, secs, ""

    rows_all, device = [], {}
    for name, doc, rc, to, secs, missing in c.pool_map(one, jobs, workers):
        if missing:
            r.step("check", f"check {name}", False, 0, missing)
            continue
        why = summarize.doc_failure(doc, rc, to)
        if doc:
            rows_all += doc.get("results", [])
            device = doc.get("device", device)
        bad = [x for x in (doc or {}).get("results", []) if not x.get("passed")]
        detail = why or (
            f"{len(bad)} of {len(doc['results'])} rows failed: "
            + ", ".join(f"{x['variant']} {x['rows']}" for x in bad[:4])
            if bad
            else f"{len(doc['results'])} rows passed"
        )
        r.step("check", f"check {name}", not why and not bad, secs, detail)
    # the drop-in torch module on the example's package
    r.cmd(
        "check",
        "torch module (example)",
        ["python3", "tests/gpu/torch_block.py", c.PKGS / "example"],
        "torch_block.log",
        300,
    )
    per_variant = summarize.check_summary(rows_all)
    doc = {"device": device, "per_variant": per_variant, "rows": rows_all}
    c.write_json(d / "check.json", doc)
    r.primary.append(d / "check.json")
    r.subs["check"] = {"per_variant": per_variant, "device": device}
