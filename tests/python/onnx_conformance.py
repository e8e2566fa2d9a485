"""ONNX backend node tests through rowfuse's importer and CPU reference.

The `onnx` package generates its backend node tests offline
(`onnx.backend.test.case.node.collect_testcases`): one tiny model per test, with inputs
and the expected outputs. This runner keeps the tests whose every node is an op rowfuse
claims (the list comes from C: `rowfuse verify --list-ops`), runs each through
`rowfuse run MODEL --precision fp64` (import, shape inference, verification, the fp64
reference) and compares with the expected outputs. Each test is one of

    pass      every output has the expected shape and is within tolerance
    mismatch  an output differs (the worst error is recorded)
    refused   rowfuse exited with a status and a message naming what it does not support
    crash     a signal, a timeout, or a failure with no message

Tolerance: the test's own rtol/atol as ONNX's backend runner uses them (rtol=1e-3,
atol=1e-7 unless the test sets others); |got - want| <= atol + rtol * |want|, NaN equal
to NaN. The expected outputs are mostly computed in float32 by ONNX's numpy reference, so
a tighter bound would measure numpy's float32 rounding rather than rowfuse. Integer and
bool outputs must match exactly.

    python tests/python/onnx_conformance.py            # run; exit 1 on a crash or regression
    python tests/python/onnx_conformance.py --write    # also rewrite the JSON and the table

A regression is a test the committed JSON (docs/onnx-conformance.json) lists as passing
that no longer passes. --write regenerates docs/onnx-conformance.json and
docs/onnx-conformance.md (the per-op pass table) from this run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
JSON_PATH = ROOT / "docs" / "onnx-conformance.json"
MD_PATH = ROOT / "docs" / "onnx-conformance.md"
TIMEOUT_S = 60
STATUSES = ("pass", "mismatch", "refused", "crash")


def rowfuse_bin() -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cli_util import RF_BIN

    return RF_BIN


def claimed_ops(rf_bin: str) -> set[str]:
    """The ONNX ops rowfuse claims, as the C side lists them."""
    p = subprocess.run([rf_bin, "verify", "--list-ops"], capture_output=True, text=True)
    if p.returncode != 0 or not p.stdout.strip():
        raise RuntimeError(f"`rowfuse verify --list-ops` failed: {p.stderr.strip()}")
    return set(p.stdout.split())


def _graph_ops(graph) -> list[tuple[str, str]]:
    ops = []
    for n in graph.node:
        ops.append((n.domain, n.op_type))
        for a in n.attribute:
            for g in [a.g] if a.HasField("g") else list(a.graphs):
                ops += _graph_ops(g)
    return ops


@dataclass
class Case:
    name: str
    ops: list[str]
    model: object
    inputs: list
    outputs: list
    rtol: float
    atol: float


@dataclass
class Result:
    name: str
    ops: list[str]
    status: str
    detail: str = ""
    folded: tuple[str, str] | None = None  # (status, detail) of the folded run, if any

    def crashed(self) -> bool:
        return self.status == "crash" or (self.folded is not None and self.folded[0] == "crash")

    def best(self) -> str:
        """'pass' as given, 'folded' when only the folded run passes, else the status."""
        if self.status == "pass":
            return "pass"
        return "folded" if self.folded and self.folded[0] == "pass" else self.status


def collect(claimed: set[str]) -> tuple[list[Case], int]:
    """The node tests whose every node (subgraphs included) is a claimed op of the default
    domain; returns them and the number of node tests looked at."""
    import warnings

    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's casts while onnx builds its expected data
        all_cases = node.collect_testcases(None)
    cases, total = [], 0
    for c in all_cases:
        if c.kind != "node":
            continue
        total += 1
        ops = _graph_ops(c.model.graph)
        if not ops or any(d not in ("", "ai.onnx") or t not in claimed for d, t in ops):
            continue
        ins, outs = c.data_sets[0]
        cases.append(Case(c.name, sorted({t for _, t in ops}), c.model, ins, outs, c.rtol, c.atol))
    return sorted(cases, key=lambda c: c.name), total


def _short(text: str, limit: int = 400) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    msg = lines[-1] if lines else ""
    return msg if len(msg) <= limit else msg[: limit - 3] + "..."


def compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str:
    """'' when got matches want, else what differs."""
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if want.size == 0:
        return ""
    if want.dtype.kind in "biu":
        bad = got.astype(np.float64) != want.astype(np.float64)
        if bad.any():
            i = np.unravel_index(np.argmax(bad), want.shape)
            at = [int(j) for j in i]
            return f"{int(bad.sum())} of {want.size} differ, e.g. at {at}: {got[i]} vs {want[i]}"
        return ""
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore"):
        return _compare_float(g, w, rtol, atol)


def _compare_float(g: np.ndarray, w: np.ndarray, rtol: float, atol: float) -> str:
    both_nan = np.isnan(g) & np.isnan(w)
    same_inf = np.isinf(w) & (g == w)
    err = np.where(both_nan | same_inf, 0.0, np.abs(g - w))
    err = np.where(np.isnan(err), np.inf, err)
    bad = err > atol + rtol * np.abs(np.where(np.isinf(w), 0.0, w))
    if not bad.any():
        return ""
    i = np.unravel_index(np.argmax(np.where(bad, err, -1.0)), w.shape)
    return (
        f"{int(bad.sum())} of {w.size} out of tolerance, worst |err| {err[i]:.3g} "
        f"at {[int(j) for j in i]}: {g[i]:.6g} vs {w[i]:.6g}"
    )


def as_array(x) -> np.ndarray | None:
    """A test's tensor as numpy (TensorProtos through onnx.numpy_helper); None for a
    sequence or an optional. Floats numpy lacks (bfloat16, the float8 and float4 kinds)
    become float32, which holds them exactly."""
    import onnx
    from onnx import numpy_helper

    if isinstance(x, onnx.TensorProto):
        x = numpy_helper.to_array(x)
    if not isinstance(x, np.ndarray):
        return None
    if x.dtype.kind == "V" and "float" in x.dtype.name:
        x = x.astype(np.float32)
    return x


def _run(rf_bin: str, case: Case, model_proto, inputs: list, d: Path) -> tuple[str, str]:
    """Runs one model through `rowfuse run` in d; returns (status, detail)."""
    import onnx

    d.mkdir()
    model = d / "model.onnx"
    onnx.save(model_proto, str(model))
    args = [rf_bin, "run", str(model), "--precision", "fp64"]
    for k, x in enumerate(inputs):
        x = as_array(x)
        if x is None:
            return "refused", f"runner: input {k} is not a tensor"
        if x.dtype.kind not in "biuf":
            return "refused", f"runner: input {k} is {x.dtype}"
        p = d / f"in{k}.npy"
        np.save(p, x)
        args += ["--input", str(p)]
    outs = [d / f"out{k}.npy" for k in range(len(case.outputs))]
    for p in outs:
        args += ["--output", str(p)]
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "crash", f"no answer within {TIMEOUT_S} s"
    if p.returncode < 0 or p.returncode >= 128:
        return "crash", f"exit status {p.returncode}: {_short(p.stderr)}"
    if p.returncode != 0:
        msg = _short(p.stderr.replace(str(d) + os.sep, "").replace("rowfuse run: ", ""))
        return ("refused", msg) if msg else ("crash", f"exit status {p.returncode}, no message")
    for k, (path, want) in enumerate(zip(outs, case.outputs, strict=True)):
        if not path.exists():
            return "crash", f"exit 0 but output {k} not written"
        want = as_array(want)
        if want is None or want.dtype.kind not in "biuf":
            return "refused", f"runner: output {k} is not numeric"
        diff = compare(np.load(path), want, case.rtol, case.atol)
        if diff:
            return "mismatch", f"output {k}: {diff}"
    return "pass", ""


def fold_inputs(case: Case):
    """The test's model with every graph input but the first made a constant initializer
    holding the test's data: the form rowfuse's models take (weights, axes and shapes are
    constants, only the rows are inputs). None when an input is not a tensor."""
    import onnx
    from onnx import numpy_helper

    m = onnx.ModelProto()
    m.CopyFrom(case.model)
    g = m.graph
    keep = list(g.input)[:1]
    for vi, x in zip(list(g.input)[1:], case.inputs[1:], strict=True):
        x = as_array(x)
        if x is None:
            return None
        g.initializer.append(numpy_helper.from_array(x, vi.name))
    del g.input[:]
    g.input.extend(keep)
    return m


def run_case(rf_bin: str, case: Case, tmp: Path) -> Result:
    """Runs the test as given; when rowfuse refuses it and it has more than one input, runs
    it again with the inputs after the first folded into constants (fold_inputs)."""
    status, detail = _run(rf_bin, case, case.model, case.inputs, tmp / case.name)
    r = Result(case.name, case.ops, status, detail)
    if status == "refused" and len(case.inputs) > 1:
        folded = fold_inputs(case)
        if folded is not None:
            fs, fd = _run(rf_bin, case, folded, case.inputs[:1], tmp / (case.name + ".folded"))
            r.folded = (fs, fd)
    return r


def run_all(rf_bin: str, cases: list[Case], jobs: int) -> list[Result]:
    with tempfile.TemporaryDirectory(prefix="rowfuse-onnx-node-") as tmp:
        with ThreadPoolExecutor(max_workers=jobs) as ex:
            return list(ex.map(lambda c: run_case(rf_bin, c, Path(tmp)), cases))


def to_json(results: list[Result], total: int) -> dict:
    import onnx

    return {
        "onnx": onnx.__version__,
        "node_tests": total,
        "claimed": len(results),
        "tolerance": "each test's rtol/atol (ONNX default rtol=1e-3, atol=1e-7); ints exact",
        "counts": dict(Counter(r.status for r in results)),
        "folded_counts": dict(Counter(r.folded[0] for r in results if r.folded)),
        "tests": {r.name: _test_json(r) for r in results},
    }


def _test_json(r: Result) -> dict:
    t = {"ops": r.ops, "status": r.status, "detail": r.detail}
    if r.folded:
        t["folded"], t["folded_detail"] = r.folded
    return t


def _reason(detail: str) -> str:
    """A refusal message with its model-specific parts (paths, names, numbers) folded."""
    s = re.sub(r"\S*model\.onnx:?\s*", "", detail)
    s = re.sub(r"\S*\.npy:?\s*", "", s)
    s = re.sub(r"'[^']*'", "'…'", s)
    s = re.sub(r"\[[^\]]*\]", "[…]", s)
    s = re.sub(r"\b\d+(\.\d+)?\b", "N", s)
    s = re.sub(r"node N \([^)]*\)", "node", s).strip()
    return s if len(s) <= 140 else s[:137] + "..."


def to_markdown(doc: dict) -> str:
    per_op = defaultdict(Counter)
    for t in doc["tests"].values():
        for op in t["ops"]:
            per_op[op][t["status"]] += 1
            if t.get("folded"):
                per_op[op]["folded " + t["folded"]] += 1
    c, f = Counter(doc["counts"]), Counter(doc["folded_counts"])
    lines = [
        "# ONNX backend node tests",
        "",
        "Generated by `python tests/python/onnx_conformance.py --write`, with "
        "`docs/onnx-conformance.json`; `tests/python/test_onnx_conformance.py` fails on a "
        "crash or when a test the JSON lists as passing (as given or folded) stops passing.",
        "",
        f"The `onnx` package ({doc['onnx']}) generates {doc['node_tests']} node tests; "
        f"{doc['claimed']} use only ops rowfuse claims (`rowfuse verify --list-ops`). Each "
        "runs through `rowfuse run --precision fp64` (import, shapes, verification, the CPU "
        "reference) and is compared with ONNX's expected outputs at the test's own "
        "tolerance (rtol 1e-3, atol 1e-7 unless the test sets others; integers exactly). "
        "The expected outputs are mostly float32 results of ONNX's numpy reference, so a "
        "tighter bound would measure their rounding rather than rowfuse.",
        "",
        "Most node tests pass weights, axes and shapes as graph inputs, which rowfuse "
        "refuses by design (only the rows are inputs; the rest must be constants, every "
        "input must have one row per row). A refused test with more than one input runs "
        "again *folded*: the inputs after the first become constant initializers holding the "
        "test's data, the form a rowfuse model takes.",
        "",
        f"**As given: {c['pass']} pass, {c['mismatch']} mismatch, {c['refused']} refused, "
        f"{c['crash']} crash. Folded ({sum(f.values())} of the refused): {f['pass']} pass, "
        f"{f['mismatch']} mismatch, {f['refused']} refused, {f['crash']} crash.** "
        "A test counts once under each op it uses.",
        "",
        "| op | tests | pass | mismatch | refused | crash | folded: pass | folded: mismatch |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for op in sorted(per_op):
        k = per_op[op]
        n = k["pass"] + k["mismatch"] + k["refused"] + k["crash"]
        lines.append(
            f"| {op} | {n} | {k['pass']} | {k['mismatch']} | {k['refused']} | {k['crash']} "
            f"| {k['folded pass']} | {k['folded mismatch']} |"
        )
    reasons = defaultdict(list)
    for name, t in sorted(doc["tests"].items()):
        status, detail = t["status"], t["detail"]
        if t.get("folded"):
            status, detail = "folded: " + t["folded"], t["folded_detail"]
        if status not in ("pass", "folded: pass"):
            reasons[(status, _reason(detail))].append(name)
    lines += [
        "",
        "## Known gaps",
        "",
        "Why the rest do not pass (the folded run's reason where there is one), grouped by "
        "the message with names and numbers folded. A row violation is rowfuse's design, "
        "not a bug: the test mixes rows (reduces, transposes, slices or concatenates over "
        "axis 0), which a row-owned graph may not. An element-type refusal is a type the "
        "importer or the .npy reader does not take; `runner:` marks data this runner "
        "cannot hand to `rowfuse run` (sub-byte integers, sequences).",
        "",
        "| status | tests | reason | e.g. |",
        "|---|---:|---|---|",
    ]
    for (status, why), names in sorted(reasons.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        why = why.replace("|", "\\|")
        lines.append(f"| {status} | {len(names)} | {why} | `{names[0]}` |")
    return "\n".join(lines) + "\n"


def regressions(results: list[Result], baseline: dict) -> list[str]:
    """Tests the baseline lists as passing (as given, or folded) that no longer do."""
    now = {r.name: r for r in results}
    out = []
    for name, t in sorted(baseline.get("tests", {}).items()):
        was = "pass" if t["status"] == "pass" else "folded" if t.get("folded") == "pass" else ""
        if not was:
            continue
        r = now.get(name)
        if r is None:
            out.append(f"{name}: listed as passing, no longer run")
        elif was == "pass" and r.status != "pass":
            out.append(f"{name}: listed as passing, now {r.status}: {r.detail}")
        elif r.best() not in ("pass", "folded"):
            why = f"{r.folded[0]}: {r.folded[1]}" if r.folded else f"{r.status}: {r.detail}"
            out.append(f"{name}: listed as passing folded, now {why}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="rewrite the JSON and the table")
    ap.add_argument("--json", type=Path, default=JSON_PATH)
    ap.add_argument("--md", type=Path, default=MD_PATH)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", default="", help="run only the tests whose name matches")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every test")
    a = ap.parse_args(argv)
    rf_bin = rowfuse_bin()
    cases, total = collect(claimed_ops(rf_bin))
    if a.only:
        cases = [c for c in cases if re.search(a.only, c.name)]
    results = run_all(rf_bin, cases, a.jobs)
    for r in results:
        if a.verbose or r.crashed():
            print(f"{r.status:8} {r.name}: {r.detail}")
            if r.folded:
                print(f"  folded: {r.folded[0]}: {r.folded[1]}")
    counts = Counter(r.status for r in results)
    print(
        f"{len(results)} of {total} node tests use only claimed ops: "
        + ", ".join(f"{counts[s]} {s}" for s in STATUSES)
    )
    baseline = json.loads(a.json.read_text()) if a.json.exists() else {}
    regs = [] if a.only else regressions(results, baseline)
    for line in regs:
        print("regression:", line)
    if a.write:
        doc = to_json(results, total)
        a.json.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        a.md.write_text(to_markdown(doc))
        print(f"wrote {a.json} and {a.md}")
    return 1 if any(r.crashed() for r in results) or regs else 0


if __name__ == "__main__":
    sys.exit(main())
