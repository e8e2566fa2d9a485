"""The report's scheduler section: the plan's recorded choice beside the best variant
measured at each shape, from a recorded run (no GPU), with hand-computed verdicts."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from rowfuse.bench import report

DATA = Path(__file__).parent / "data" / "bench_run.json"


def _docs_with_plan(schedule: str):
    docs = report.load([str(DATA)])
    docs = copy.deepcopy(docs)
    for doc in docs:
        for run in doc["runs"]:
            run["plan"] = {"schedule": schedule, "reason": "test", "tile_rows": 16}
    return docs


def _rows(lines):
    return [ln for ln in lines if ln.startswith("| ") and "shape" not in ln]


def test_verdicts_match_the_spans():
    docs = _docs_with_plan("persistent-smem")
    rows = _rows(report.render_scheduler(docs))
    assert rows
    spans = {}
    for doc in docs:
        for run in doc["runs"]:
            tag = report.shape_tag(run["shape"])
            for v in run["variants"]:
                if v["name"] != "empty" and "error" not in v and v["graph"].get("span_us"):
                    spans.setdefault(tag, {})[v["name"]] = v["graph"]["span_us"]["median"]
    for ln in rows:
        tag = ln.split("|")[1].strip()
        best = min(spans[tag], key=spans[tag].get)
        mine = spans[tag].get("persistent-smem")
        if mine is None:
            assert "not measured" in ln
        elif mine <= spans[tag][best]:
            assert ln.rstrip().endswith("| best |"), ln
        else:
            assert f"loses to {best} by {mine / spans[tag][best]:.2f}x" in ln, ln


def test_unmeasured_choice_is_not_a_win():
    rows = _rows(report.render_scheduler(_docs_with_plan("no-such-schedule")))
    assert rows and all("not measured" in ln for ln in rows)


def test_without_plan_says_so():
    docs = report.load([str(DATA)])
    assert not any("plan" in r for d in docs for r in d["runs"]), json.dumps(docs)[:200]
    assert "not evaluated" in "\n".join(report.render_scheduler(docs))
