"""eval: `rowfuse eval --gpu` on the worked example. Here: examples/eval/example.py (a
synthetic table, a model trained on the CPU and exported: model.onnx with its head,
block.onnx the block alone; EVAL_ROWS rows, default 3000) and the block's GPU package
(`rowfuse compile block.onnx --rows 64`); carried in build-gpu/eval. There: the model
evaluated with the block on the GPU (the head on the CPU interpreter), then with
--cpu-mixed on the same machine, and the two compiled runs compared (outputs, predictions,
per-slice accuracy and flips).
"""

from __future__ import annotations

import os
import shutil

from . import common as c

E = c.CARRY / "eval"
MODEL_ROWS = 64  # examples/eval/example.py exports 64 rows per run


def prepare(jobs: int, stamp: str) -> dict:
    ex = c.WORK / "eval" / "example"
    shutil.rmtree(c.WORK / "eval", ignore_errors=True)
    rows = os.environ.get("EVAL_ROWS", "3000")
    env = dict(c.compile_env(), RF_BIN=str(c.BIN / "rowfuse"))
    c.say("== eval: the worked example (train on the CPU, export, --cpu-mixed evaluation)")
    rc, out, secs, _ = c.sh(
        ["python3", "examples/eval/example.py", "--out", ex, "--rows", rows], env=env
    )
    if rc != 0:
        raise c.Failed(f"examples/eval/example.py: {out.strip()[-800:]}")
    pkg = c.WORK / "eval" / "pkg"
    rc, out, _, _ = c.sh(
        [c.BIN / "rowfuse", "compile", ex / "block.onnx", "--rows", MODEL_ROWS, "-o", pkg],
        env=c.compile_env(),
    )
    if rc != 0:
        raise c.Failed(f"rowfuse compile block.onnx: {out.strip()[-800:]}")
    shutil.rmtree(E, ignore_errors=True)
    (E / "pkg").mkdir(parents=True)
    for f in ("model.onnx", "eval.csv"):
        shutil.copy2(ex / f, E / f)
    for f in c.PKG_FILES:
        shutil.copy2(pkg / f, E / "pkg" / f)
    return {"rows": int(rows), "features": 12}


def run(r: c.Run) -> None:
    m = r.manifest("eval")
    if m is None:
        return
    d = r.work / "eval"
    d.mkdir(parents=True, exist_ok=True)
    feats = ",".join(f"f{i}" for i in range(m["features"]))
    args = [
        r.rowfuse(),
        "eval",
        "--model",
        E / "model.onnx",
        "--data",
        E / "eval.csv",
        "--label",
        "label",
        "--slice",
        "site",
        "--slice",
        "device",
        "--cross",
        "--no-plot",
        "--features",
        feats,
    ]
    r.cmd(
        "eval",
        "rowfuse eval --gpu",
        [*args, "--gpu", "--package", E / "pkg", "-o", d / "gpu"],
        "gpu.log",
        300,
    )
    r.cmd(
        "eval",
        "rowfuse eval --cpu-mixed",
        [*args, "--cpu-mixed", "-o", d / "cpu-mixed"],
        "cpu-mixed.log",
        300,
    )
    try:
        text = compare(d)
    except (OSError, ValueError, KeyError) as e:
        r.step("eval", "comparison", False, 0, f"{type(e).__name__}: {e}")
        return
    (d / "compare.txt").write_text(text + "\n")
    r.primary += [d / "gpu" / "eval.json", d / "compare.txt"]
    r.subs["eval"] = {"table": text}


def compare(d) -> str:
    """The GPU run against --cpu-mixed: outputs, predictions, per-group accuracy."""
    import json

    import numpy as np

    g = json.loads((d / "gpu" / "eval.json").read_text())
    cm = json.loads((d / "cpu-mixed" / "eval.json").read_text())
    yg = np.load(d / "gpu" / "outputs_compiled.npy")
    yc = np.load(d / "cpu-mixed" / "outputs_compiled.npy")
    out = [
        f"device: {g['compiled']['device']}; schedule {g['compiled']['schedule']}",
        f"placement: {g['placement']['summary']}",
        f"gpu vs cpu-mixed outputs: max |d| {np.abs(yg - yc).max():.3g}, mean |d| "
        f"{np.abs(yg - yc).mean():.3g}; predictions differ on "
        f"{int((yg.argmax(1) != yc.argmax(1)).sum())} of {len(yg)} rows",
        f"{'group':32} {'rows':>5} {'acc fp64':>9} {'acc gpu':>9} {'acc mixed':>9} "
        f"{'flips gpu':>9} {'flips mixed':>11} {'p gpu':>8}",
    ]
    for a, b in zip([g["overall"], *g["slices"]], [cm["overall"], *cm["slices"]], strict=True):
        out.append(
            f"{a['name'][:32]:32} {a['count']:5d} {100 * a['reference']['accuracy']:8.2f}% "
            f"{100 * a['compiled']['accuracy']:8.2f}% {100 * b['compiled']['accuracy']:8.2f}% "
            f"{a['flips']:9d} {b['flips']:11d} {a['p_value']:8.3g}"
        )
    return "\n".join(out)
