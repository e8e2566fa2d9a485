"""`rowfuse eval` end to end on the worked example (examples/eval/example.py, small and
short here), checked independently: the report follows the schema, and every overall and
per-slice figure is recomputed here with numpy and exact integer arithmetic (accuracy,
Wilson bounds, flips, McNemar p via math.comb, Holm, deviations) from the table and the
per-row outputs the command writes. The outputs themselves are checked against PyTorch
(fp64) and against `rowfuse run` (mixed precision) on a whole and on a padded chunk. A
second table adds rows on the model's decision boundary, where fp16 must flip predictions,
so that the significance machinery is exercised; a third run reads the same table from .npz.
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from cli_util import ROOT, env, export, rowfuse
from rowfuse.eval import plot as eval_plot

Z = 1.959963984540054
ROWS, EPOCHS, FEATURES = 1200, 6, [f"f{i}" for i in range(12)]


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    d = tmp_path_factory.mktemp("eval_example")
    cmd = [sys.executable, str(ROOT / "examples" / "eval" / "example.py"), "--out", str(d)]
    cmd += ["--rows", str(ROWS), "--epochs", str(EPOCHS), "--no-plot"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env(), cwd=str(ROOT))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "overall: accuracy" in p.stdout
    return d


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return {k: [r[k] for r in rows] for k in rows[0]}


def load_report(out):
    with open(out / "eval.json") as f:
        doc = eval_plot.validate(json.load(f))
    return doc, np.load(out / "outputs_reference.npy"), np.load(out / "outputs_compiled.npy")


# ---- the statistics, written out independently of the C code ----


def wilson(k, n):
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (2 * n * p + Z * Z) / (2 * (n + Z * Z))
    half = Z * math.sqrt(Z * Z + 4 * n * p * (1 - p)) / (2 * (n + Z * Z))
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar(b, c):
    n, k = b + c, min(b, c)
    if n == 0:
        return 1.0
    return float(min(Fraction(2 * sum(math.comb(n, i) for i in range(k + 1)), 2**n), 1))


def holm(ps):
    order = sorted(range(len(ps)), key=lambda i: (ps[i], i))
    adj, running = [0.0] * len(ps), 0.0
    for j, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - j) * ps[i]))
        adj[i] = running
    return adj


def expected_groups(table, slices, cross):
    """[(name, mask)] in report order."""
    n = len(table[next(iter(table))])
    groups = [("overall", np.ones(n, bool))]
    levels = {}
    for col in slices:
        vals = np.array(table[col])
        uniq = sorted(set(vals))
        try:
            uniq = sorted(uniq, key=float)
        except ValueError:
            pass
        levels[col] = uniq
        groups += [(f"{col}={v}", vals == v) for v in uniq]
    if cross and len(slices) >= 2:
        combos = {}
        for r in range(n):
            key = tuple(levels[c].index(table[c][r]) for c in slices)
            combos.setdefault(key, np.zeros(n, bool))[r] = True
        for key in sorted(combos):
            name = " & ".join(f"{c}={levels[c][i]}" for c, i in zip(slices, key, strict=True))
            groups.append((name, combos[key]))
    return groups


def close(got, want, rel=1e-12, abs_=1e-15):
    return got is not None and abs(got - want) <= max(abs_, rel * abs(want))


def check_classify(doc, ya, yb, labels, groups):
    pa, pb = ya.argmax(1), yb.argmax(1)
    ca, cb = pa == labels, pb == labels
    dev = np.abs(ya - yb)
    got = [doc["overall"], *doc["slices"]]
    assert [g["name"] for g in got] == [name for name, _ in groups]
    min_count, alpha = doc["method"]["min_count"], doc["method"]["alpha"]
    want_p = []
    for g, (name, m) in zip(got, groups, strict=True):
        n = int(m.sum())
        assert g["count"] == n, name
        for side, c in (("reference", ca), ("compiled", cb)):
            k = int(c[m].sum())
            lo, hi = wilson(k, n)
            s = g[side]
            assert s["correct"] == k and close(s["accuracy"], k / n), (name, side)
            assert close(s["low"], lo) and close(s["high"], hi), (name, side, s, lo, hi)
        flips = int((pa != pb)[m].sum())
        lo, hi = wilson(flips, n)
        assert g["flips"] == flips and close(g["flip_rate"], flips / n), name
        assert close(g["flip_low"], lo) and close(g["flip_high"], hi), name
        b, c = int((ca & ~cb)[m].sum()), int((~ca & cb)[m].sum())
        assert (g["reference_only"], g["compiled_only"]) == (b, c), name
        p = mcnemar(b, c)
        assert close(g["p_value"], p, rel=1e-9, abs_=1e-300), (name, g["p_value"], p)
        assert close(g["max_abs_dev"], float(dev[m].max()))
        assert close(g["mean_abs_dev"], float(dev[m].mean()), rel=1e-9)
        assert g["too_small"] == (n < min_count), name
        want_p.append(p)
    judged = [i for i in range(1, len(got)) if not got[i]["too_small"]]
    assert doc["method"]["judged"] == len(judged)
    for i, adj in zip(judged, holm([want_p[i] for i in judged]), strict=True):
        assert close(got[i]["p_holm"], adj, rel=1e-9, abs_=1e-300), got[i]["name"]
        assert got[i]["significant"] == (adj < alpha), got[i]["name"]
    for g in got[1:]:
        if g["too_small"]:
            assert g["p_holm"] is None and not g["significant"]
    o = got[0]
    assert o["significant"] == (not o["too_small"] and want_p[0] < alpha)


# ---- the example ----


def test_example_report(example):
    doc, ya, yb = load_report(example / "report")
    t = read_csv(example / "eval.csv")
    labels = np.array(t["label"], dtype=np.int64)
    assert doc["rows"] == ROWS and doc["task"] == "classify" and doc["classes"] == 3
    assert doc["compiled"]["name"] == "cpu-mixed" and doc["cross"] is True
    assert ya.shape == yb.shape == (ROWS, 3)
    assert all(n["runs_on"] == "cpu" for n in doc["placement"]["nodes"])
    check_classify(doc, ya, yb, labels, expected_groups(t, ["site", "device"], cross=True))
    md = (example / "report" / "eval.md").read_text()
    assert "| overall | 1200 |" in md and "site=c & device=phone" in md


def test_example_outputs(example, tmp_path):
    _, ya, yb = load_report(example / "report")
    torch64 = np.load(example / "torch_fp64.npy")
    assert np.abs(ya - torch64).max() <= 1e-9 * max(1.0, np.abs(torch64).max())
    assert 0 < np.abs(ya - yb).max() < 0.1  # mixed precision differs, a little
    t = read_csv(example / "eval.csv")
    x = np.array([[float(v) for v in t[f]] for f in FEATURES]).T
    # The first chunk, and the last (1200 = 18 * 64 + 48: padded with 16 zero rows).
    for start, n in ((0, 64), (1152, 48)):
        chunk = np.zeros((64, 12))
        chunk[:n] = x[start : start + n]
        np.save(tmp_path / "x.npy", chunk)
        rowfuse("run", example / "model.onnx", "--input", tmp_path / "x.npy", "--output",
                tmp_path / "y.npy", "--cpu", "--precision", "mixed", check=0)  # fmt: skip
        y = np.load(tmp_path / "y.npy")
        assert np.array_equal(y[:n].astype(np.float64), yb[start : start + n])


# ---- rows on the decision boundary: fp16 must flip some, and the test must notice ----


def forward(w, x):
    h = np.maximum(x @ w["block_fc1_weight"].T + w["block_fc1_bias"], 0)
    y = np.maximum(h @ w["block_fc2_weight"].T + w["block_fc2_bias"] + x, 0)
    return y @ w["head_weight"].T + w["head_bias"]


def boundary_rows(w, x, count, rng):
    """Points just on the side of x0 of the boundary between x0 and x1's classes."""
    pred = forward(w, x).argmax(1)
    out = []
    while len(out) < count:
        i, j = rng.integers(0, len(x), 2)
        if pred[i] == pred[j]:
            continue
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if forward(w, x[i] + mid * (x[j] - x[i])[None])[0].argmax() == pred[i]:
                lo = mid
            else:
                hi = mid
        p = x[i] + (lo - 1e-6) * (x[j] - x[i])  # margin ~1e-6: fp64 sure, fp16 not
        out.append((p, int(pred[i])))
    return out


@pytest.fixture(scope="module")
def boundary(example, tmp_path_factory):
    d = tmp_path_factory.mktemp("eval_boundary")
    t = read_csv(example / "eval.csv")
    w = dict(np.load(example / "weights.npz"))
    x = np.array([[float(v) for v in t[f]] for f in FEATURES]).T
    rng = np.random.default_rng(5)
    rows = [[t["site"][r], "normal", *t_row, t["label"][r]]
            for r, t_row in enumerate(zip(*(t[f] for f in FEATURES), strict=True))]  # fmt: skip
    for p, label in boundary_rows(w, x, 160, rng):
        rows.append([["a", "b", "c"][int(rng.integers(0, 3))], "boundary",
                     *(repr(float(v)) for v in p), str(label)])  # fmt: skip
    with open(d / "probe.csv", "w", newline="") as f:
        csv.writer(f).writerows([["site", "probe", *FEATURES, "label"], *rows])
    plot = ["--no-plot"]
    try:
        import matplotlib  # noqa: F401

        plot = []
    except ImportError:
        pass
    args = ["eval", "--model", example / "model.onnx", "--data", d / "probe.csv"]
    args += ["--features", ",".join(FEATURES), "--label", "label", "--slice", "probe"]
    rowfuse(*args, "--slice", "site", "--cross", "--min-count", "50", *plot, "-o", d / "out",
            check=0)  # fmt: skip
    return d, plot


def test_boundary_rows_flip_and_are_significant(boundary):
    d, plot = boundary
    doc, ya, yb = load_report(d / "out")
    t = read_csv(d / "probe.csv")
    labels = np.array(t["label"], dtype=np.int64)
    check_classify(doc, ya, yb, labels, expected_groups(t, ["probe", "site"], cross=True))
    by = {g["name"]: g for g in doc["slices"]}
    b = by["probe=boundary"]
    assert b["reference"]["correct"] == 160  # (a) is right on every boundary row by design
    assert b["flips"] >= 20 and b["compiled_only"] == 0
    assert b["significant"] and b["p_holm"] < 1e-4
    assert not by["probe=normal"]["significant"]
    assert any(g["too_small"] for g in doc["slices"])  # crossings of 160 rows in 3 sites
    if not plot:
        assert (d / "out" / "eval.png").stat().st_size > 1000


def test_npz_gives_the_same_report(example, tmp_path):
    t = read_csv(example / "eval.csv")
    x = np.array([[float(v) for v in t[f]] for f in FEATURES]).T
    site = np.array(["abc".index(s) for s in t["site"]])
    device = np.array([["laptop", "phone"].index(s) for s in t["device"]], dtype=np.int32)
    labels = np.array(t["label"], dtype=np.int64)
    x = np.ascontiguousarray(x)  # .npy members must be in C order
    np.savez_compressed(tmp_path / "eval.npz", X=x, label=labels, site=site, device=device)
    args = ["eval", "--model", example / "model.onnx", "--data", tmp_path / "eval.npz"]
    rowfuse(*args, "--features", "X", "--label", "label", "--slice", "site", "--slice", "device",
            "--cross", "--no-plot", "-o", tmp_path / "out", check=0)  # fmt: skip
    doc, ya, yb = load_report(tmp_path / "out")
    ref, ra, rb = load_report(example / "report")
    assert np.array_equal(ya, ra) and np.array_equal(yb, rb)
    assert doc["features"] == [f"X[{i}]" for i in range(12)]
    strip = ("name", "columns", "values")
    for g, h in zip(
        [doc["overall"], *doc["slices"]], [ref["overall"], *ref["slices"]], strict=True
    ):
        assert {k: v for k, v in g.items() if k not in strip} == {
            k: v for k, v in h.items() if k not in strip
        }


def test_regression(tmp_path):
    model = export("eval_models:regressor", 8, tmp_path / "r.onnx")
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((50, 4)), rng.standard_normal(50)
    np.savez(tmp_path / "r.npz", X=x, y=y, g=np.arange(50) % 2)
    rowfuse("eval", "--model", model, "--data", tmp_path / "r.npz", "--features", "X", "--label",
            "y", "--slice", "g", "--no-plot", "-o", tmp_path / "out", check=0)  # fmt: skip
    doc, ya, yb = load_report(tmp_path / "out")
    assert doc["task"] == "regress" and doc["classes"] is None
    parity = np.arange(50) % 2
    masks = [np.ones(50, bool), parity == 0, parity == 1]
    for g, m in zip([doc["overall"], *doc["slices"]], masks, strict=True):
        for side, out in (("reference", ya), ("compiled", yb)):
            e = out[m, 0] - y[m]
            assert close(g[side]["mae"], float(np.abs(e).mean()), rel=1e-12)
            assert close(g[side]["rmse"], float(np.sqrt((e * e).mean())), rel=1e-12)
        assert g["p_value"] is None and g["flips"] is None and not g["significant"]


def test_validate_rejects_broken_reports(example):
    doc, _, _ = load_report(example / "report")
    for mutate, needle in (
        (lambda d: d.update(schema="x/1"), "expected 'rowfuse-eval/1'"),
        (lambda d: d["overall"].pop("count"), "missing 'count'"),
        (lambda d: d["overall"]["reference"].update(low=1.5), "out of range"),
        (lambda d: d["slices"][0].update(too_small=True), "too_small"),
        (lambda d: d["method"].update(judged=99), "judged"),
    ):
        bad = json.loads(json.dumps(doc))
        mutate(bad)
        with pytest.raises(eval_plot.EvalReportError, match=needle):
            eval_plot.validate(bad)
