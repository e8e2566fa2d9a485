"""The scheduler-regret summary (rowfuse.bench.regret_summary) on synthetic runs: regret
arithmetic, ties, a choice the package cannot build, a variant the package cannot build
(not a candidate), a failed variant and a shape not run (both fail the run)."""

from __future__ import annotations

import json
import math

import pytest
from rowfuse.bench import regret_summary as rs


def _s(median, half=0.01):
    return {"count": 200, "median": median, "p10": median, "p90": median,
            "median_ci_lo": median - half, "median_ci_hi": median + half}  # fmt: skip


def _doc(spans, errors=()):
    variants = [{"name": "empty", "graph": {"span_us": _s(0.6)}}]
    for name, med in spans.items():
        variants.append(
            {"name": name, "graph": {"span_us": med if isinstance(med, dict) else _s(med)}}
        )
    for name in errors:
        variants.append({"name": name, "error": "MISMATCH: check failed"})
    return {"method": {"rounds": 5, "observations": 40, "span_source": "timed-observations"},
            "runs": [{"variants": variants}]}  # fmt: skip


def _plan(unavailable=()):
    return {"schedules": {n: {"available": n not in unavailable} for n in rs.VARIANTS}}


def _shape(name, choice, built="auto", regime="tiny"):
    r, c, h = (int(x) for x in name.split("x"))
    return {"name": name, "rows": r, "channels": c, "hidden": h, "regime": regime,
            "choice": choice, "built": built, "note": "ok"}  # fmt: skip


def test_regret_best_and_tie():
    spans = {"persistent-smem": 2.0, "persistent-gmem": 2.5, "conventional": 3.0, "cublaslt": 8.0}
    best = rs.judge(_shape("10x8x8", "persistent-smem"), _doc(spans), _plan(), "0")
    assert best["best"] == "persistent-smem" and best["regret"] == 0.0
    worse = rs.judge(_shape("10x8x8", "cublaslt"), _doc(spans), _plan(), "0")
    assert worse["regret"] == pytest.approx(8.0 / 2.0 - 1.0) and not worse["tie"]
    close = dict(spans, **{"persistent-gmem": _s(2.015)})
    tie = rs.judge(_shape("10x8x8", "persistent-gmem"), _doc(close), _plan(), "0")
    assert tie["regret"] == pytest.approx(0.0075) and tie["tie"]
    s = rs.summarize([best, worse, tie])
    assert s["judged"] == 3 and s["picked_best"] == 1 and s["picked_best_or_tie"] == 2
    assert s["median_regret"] == pytest.approx(0.0075) and s["max_regret"] == pytest.approx(3.0)
    assert s["failed"] == 0


def test_unbuildable_variants_and_choices():
    spans = {"persistent-gmem": 4.0, "cublaslt": 3.0}
    plan = _plan(unavailable=("persistent-smem", "conventional"))
    doc = _doc(spans, errors=("persistent-smem", "conventional"))  # the bench errs on them
    r = rs.judge(_shape("10x8x8", "persistent-smem", built="persistent-gmem"), doc, plan, "1")
    assert r["verdict"] == "measured" and r["best"] == "cublaslt"
    assert math.isinf(r["regret"]) and sorted(r["unbuildable"]) == [
        "conventional",
        "persistent-smem",
    ]
    ok = rs.judge(_shape("10x8x8", "cublaslt", built="auto"), doc, plan, "1")
    assert ok["regret"] == 0.0 and ok["verdict"] == "measured"
    none = rs.judge(_shape("10x2000x8", "persistent-smem", built="none"), None, None, None)
    s = rs.summarize([r, ok, none])
    assert s["no_package"] == 1 and s["judged"] == 2 and math.isinf(s["max_regret"])
    md = rs.render([r, ok, none], s, "method")
    assert "inf (choice cannot be built)" in md and "no package" in md


def test_failures_fail(tmp_path):
    spans = {"persistent-smem": 2.0, "cublaslt": 8.0}
    failed = rs.judge(_shape("10x8x8", "persistent-smem"), _doc(spans, errors=("conventional",)),
                      _plan(), "1")  # fmt: skip
    assert failed["verdict"] == "FAILED" and "conventional" in failed["failed"]
    skipped = rs.judge(_shape("20x8x8", "persistent-smem"), None, _plan(), "skipped")
    assert skipped["verdict"] == "not run"
    # the command line: one shape measured, one not run -> exit 1, files written
    reg, out = tmp_path / "regret", tmp_path / "out"
    (reg / "pkgs" / "10x8x8").mkdir(parents=True)
    (reg / "pkgs" / "20x8x8").mkdir(parents=True)
    (out / "json").mkdir(parents=True)
    (reg / "shapes.tsv").write_text(
        "10\t8\t8\ttiny\tpersistent-smem\tauto\tok\n20\t8\t8\ttiny\tpersistent-smem\tauto\tok\n"
    )
    for n in ("10x8x8", "20x8x8"):
        (reg / "pkgs" / n / "plan.json").write_text(json.dumps(_plan()))
    (out / "json" / "10x8x8.json").write_text(
        json.dumps(
            _doc(
                {
                    "persistent-smem": 2.0,
                    "persistent-gmem": 2.4,
                    "conventional": 3.0,
                    "cublaslt": 8.0,
                }
            )
        )  # fmt: skip
    )
    (out / "status.tsv").write_text("10x8x8\t0\t3\n20x8x8\tskipped\t0\n")
    assert rs.main([str(reg), str(out)]) == 1
    doc = json.loads((out / "regret.json").read_text())
    assert doc["summary"]["judged"] == 1 and doc["summary"]["not_run"] == 1
    assert "| 10x8x8 | tiny |" in (out / "regret.md").read_text()
    (out / "status.tsv").write_text("10x8x8\t0\t3\n")
    (reg / "shapes.tsv").write_text("10\t8\t8\ttiny\tpersistent-smem\tauto\tok\n")
    assert rs.main([str(reg), str(out)]) == 0
