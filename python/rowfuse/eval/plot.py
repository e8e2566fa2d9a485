"""Per-slice plot and schema check for `rowfuse eval` reports (schema rowfuse-eval/1).

    python -m rowfuse.eval.plot out/eval.json -o out/

Validates the report (validate() raises EvalReportError naming the first field that breaks
the schema of src/eval/README.md) and writes eval.png and eval.svg: per group (overall, each
slice, each crossing), the accuracy of (a) the fp64 reference and (b) the compiled numerics
with their Wilson 95% intervals, and the prediction flip rate with its interval; for
regression, MAE of (a) and (b) and the mean output deviation. Significant slices are
starred, slices too small to judge are greyed. `rowfuse eval` runs this as a tool unless
given --no-plot. Needs no GPU and no torch; matplotlib only for the plot.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

SCHEMA = "rowfuse-eval/1"


class EvalReportError(ValueError):
    """A report that does not follow the schema; the message says where."""


def _need(obj, key, where, types=None, nullable=False):
    if not isinstance(obj, dict) or key not in obj:
        raise EvalReportError(f"{where}: missing '{key}'")
    v = obj[key]
    if v is None and nullable:
        return v
    if types is not None:
        if isinstance(v, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
            raise EvalReportError(f"{where}.{key}: expected {types}, got a bool")
        if not isinstance(v, types):
            raise EvalReportError(f"{where}.{key}: expected {types}, got {v!r}")
    return v


def _num(obj, key, where, nullable=True, lo=None, hi=None):
    v = _need(obj, key, where, (int, float), nullable)
    if v is None:
        return None
    if not math.isfinite(v) or (lo is not None and v < lo) or (hi is not None and v > hi):
        raise EvalReportError(f"{where}.{key}: {v!r} is out of range [{lo}, {hi}]")
    return v


def _strings(obj, key, where):
    v = _need(obj, key, where, list)
    if not all(isinstance(s, str) for s in v):
        raise EvalReportError(f"{where}.{key}: expected a list of strings")
    return v


def _side(g, key, where, classify):
    s = _need(g, key, where, dict)
    w = f"{where}.{key}"
    _need(s, "nonfinite", w, int)
    if classify:
        correct = _need(s, "correct", w, int)
        if not 0 <= correct <= g["count"]:
            raise EvalReportError(f"{w}.correct: {correct} is not within [0, count]")
        acc, low, high = (_num(s, k, w, lo=0.0, hi=1.0) for k in ("accuracy", "low", "high"))
        if g["count"] and not low <= acc <= high:
            raise EvalReportError(f"{w}: interval [{low}, {high}] does not hold {acc}")
    else:
        _num(s, "mae", w, lo=0.0)
        _num(s, "rmse", w, lo=0.0)


def _group(g, where, classify, min_count):
    _need(g, "name", where, str)
    kind = _need(g, "kind", where, str)
    if kind not in ("overall", "slice", "cross"):
        raise EvalReportError(f"{where}.kind: {kind!r}")
    if len(_strings(g, "columns", where)) != len(_strings(g, "values", where)):
        raise EvalReportError(f"{where}: columns and values differ in length")
    count = _need(g, "count", where, int)
    _side(g, "reference", where, classify)
    _side(g, "compiled", where, classify)
    _num(g, "delta", where)
    for k in ("flips", "reference_only", "compiled_only"):
        v = _need(g, k, where, int, nullable=not classify)
        if classify and not 0 <= v <= count:
            raise EvalReportError(f"{where}.{k}: {v} is not within [0, count]")
    for k in ("flip_rate", "flip_low", "flip_high", "p_value", "p_holm"):
        _num(g, k, where, lo=0.0, hi=1.0)
    _num(g, "max_abs_dev", where, lo=0.0)
    _num(g, "mean_abs_dev", where, lo=0.0)
    small = _need(g, "too_small", where, bool)
    sig = _need(g, "significant", where, bool)
    if small != (count < min_count):
        raise EvalReportError(f"{where}.too_small: {small} with count {count}, min {min_count}")
    if sig and (small or not classify):
        raise EvalReportError(f"{where}.significant: set on a group that is not judged")


def validate(doc: dict, where: str = "eval") -> dict:
    """Raises EvalReportError naming the first field that breaks the schema; returns doc."""
    if _need(doc, "schema", where) != SCHEMA:
        raise EvalReportError(f"{where}: schema is {doc['schema']!r}, expected {SCHEMA!r}")
    for k in ("model", "data", "input", "output", "label", "task_rule"):
        _need(doc, k, where, str)
    if _need(doc, "rows", where, int) < 1 or _need(doc, "outputs", where, int) < 1:
        raise EvalReportError(f"{where}: rows and outputs must be >= 1")
    _strings(doc, "features", where)
    slices = _strings(doc, "slice_columns", where)
    _need(doc, "cross", where, bool)
    task = _need(doc, "task", where, str)
    if task not in ("classify", "regress"):
        raise EvalReportError(f"{where}.task: {task!r}")
    classify = task == "classify"
    classes = _need(doc, "classes", where, int, nullable=not classify)
    if classify and classes != doc["outputs"]:
        raise EvalReportError(f"{where}.classes: {classes} != outputs {doc['outputs']}")
    ref, comp = _need(doc, "reference", where, dict), _need(doc, "compiled", where, dict)
    _need(ref, "name", f"{where}.reference", str)
    if _need(comp, "name", f"{where}.compiled", str) not in ("cpu-mixed", "gpu"):
        raise EvalReportError(f"{where}.compiled.name: {comp['name']!r}")
    for k in ("device", "package", "schedule"):
        _need(comp, k, f"{where}.compiled", str, nullable=comp["name"] != "gpu")
    place = _need(doc, "placement", where, dict)
    _need(place, "summary", f"{where}.placement", str)
    for i, n in enumerate(_need(place, "nodes", f"{where}.placement", list)):
        runs_on = _need(n, "runs_on", f"{where}.placement.nodes[{i}]", str)
        if runs_on not in ("cpu", "gpu", "skipped"):
            raise EvalReportError(f"{where}.placement.nodes[{i}].runs_on: {n['runs_on']!r}")
    m = _need(doc, "method", where, dict)
    min_count = _need(m, "min_count", f"{where}.method", int)
    _num(m, "alpha", f"{where}.method", nullable=False, lo=0.0, hi=1.0)
    for k in ("interval", "test", "correction"):
        _need(m, k, f"{where}.method", str)
    _strings(doc, "warnings", where)
    _group(_need(doc, "overall", where, dict), f"{where}.overall", classify, min_count)
    groups = _need(doc, "slices", where, list)
    for i, g in enumerate(groups):
        _group(g, f"{where}.slices[{i}]", classify, min_count)
        if g["kind"] == "overall" or any(c not in slices for c in g["columns"]):
            raise EvalReportError(f"{where}.slices[{i}]: not a slice of {slices}")
    judged = sum(1 for g in groups if not g["too_small"]) if classify else 0
    if _need(m, "judged", f"{where}.method", int) != judged:
        raise EvalReportError(f"{where}.method.judged: {m['judged']}, expected {judged}")
    return doc


def load(path: str) -> dict:
    with open(path) as f:
        try:
            doc = json.load(f)
        except json.JSONDecodeError as e:
            raise EvalReportError(f"{path}: not JSON: {e}") from e
    return validate(doc, path)


def _label(g) -> str:
    return ("* " if g["significant"] else "") + g["name"] + (" (small)" if g["too_small"] else "")


def plot(doc: dict, out_dir: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = [doc["overall"], *doc["slices"]]
    ys = list(range(len(groups)))[::-1]
    classify = doc["task"] == "classify"
    fig, axes = plt.subplots(1, 2, figsize=(12, 1.2 + 0.38 * len(groups)), sharey=True)
    if classify:
        panels = [("reference", -0.12, "(a) fp64 reference"), ("compiled", 0.12, "(b) compiled")]
        for side, dy, label in panels:
            acc = [100 * g[side]["accuracy"] for g in groups]
            lo = [100 * (g[side]["accuracy"] - g[side]["low"]) for g in groups]
            hi = [100 * (g[side]["high"] - g[side]["accuracy"]) for g in groups]
            axes[0].errorbar(
                acc, [y + dy for y in ys], xerr=[lo, hi], fmt="o", capsize=3, label=label
            )
        axes[0].set_xlabel("accuracy, % (Wilson 95% interval)")
        rate = [100 * g["flip_rate"] for g in groups]
        lo = [100 * (g["flip_rate"] - g["flip_low"]) for g in groups]
        hi = [100 * (g["flip_high"] - g["flip_rate"]) for g in groups]
        axes[1].errorbar(rate, ys, xerr=[lo, hi], fmt="s", capsize=3, color="C3")
        axes[1].set_xlabel("prediction flips (a) vs (b), % of rows (Wilson 95% interval)")
    else:
        for side, dy, label in (("reference", -0.12, "(a) fp64"), ("compiled", 0.12, "(b)")):
            axes[0].plot([g[side]["mae"] for g in groups], [y + dy for y in ys], "o", label=label)
        axes[0].set_xlabel("MAE against the label")
        axes[1].plot([g["mean_abs_dev"] or 0.0 for g in groups], ys, "s", color="C3")
        axes[1].set_xlabel("mean |y_a - y_b| over output elements")
    axes[0].set_yticks(ys)
    axes[0].set_yticklabels([_label(g) for g in groups], fontsize=8)
    for y, g in zip(ys, groups, strict=True):
        if g["too_small"]:
            for ax in axes:
                ax.axhspan(y - 0.4, y + 0.4, color="0.9", zorder=0)
    axes[0].legend(fontsize=8, loc="best")
    for ax in axes:
        ax.grid(True, axis="x", alpha=0.3)
    fig.suptitle(
        f"rowfuse eval: (b) = {doc['compiled']['name']}, {doc['rows']} rows "
        f"(* significant after Holm; grey: fewer than {doc['method']['min_count']} rows)",
        fontsize=10,
    )
    fig.tight_layout()
    paths = [os.path.join(out_dir, "eval.png"), os.path.join(out_dir, "eval.svg")]
    for p in paths:
        fig.savefig(p, dpi=110)
    plt.close(fig)
    return paths


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m rowfuse.eval.plot", description=__doc__.split("\n")[0]
    )
    p.add_argument("report", help="eval.json written by rowfuse eval")
    p.add_argument("-o", "--output", required=True, help="output folder")
    args = p.parse_args(argv)
    try:
        doc = load(args.report)
    except (OSError, EvalReportError) as e:
        print(f"rowfuse.eval.plot: {e}", file=sys.stderr)
        return 2
    os.makedirs(args.output, exist_ok=True)
    for path in plot(doc, args.output):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
