"""The report with the Python host's new measurements, without a GPU: a run whose spans come
from the timed observations (CUPTI on, a control round without it) and that holds an XLA
variant (no CUDA events on its stream, its span attributed in time order), built from a
recorded run (tests/python/data/bench_run.json, an older run with separate-replay spans)
by adding summaries computed here from seeded random observations. The older run must
still render as it did."""

import copy
import json
import os
import random

import pytest
from rowfuse.bench import harness as bench
from rowfuse.bench import report

DATA = os.path.join(os.path.dirname(__file__), "data", "bench_run.json")
SEED = 4242


@pytest.fixture
def old():
    with open(DATA) as f:
        return json.load(f)


def _summary(rng, center):
    return bench.summarize([rng.lognormvariate(0, 0.05) * center for _ in range(1000)])


def _new_run(old):
    """The fixture as the new harness writes it: method from the timed observations and
    an XLA variant."""
    print(f"seed {SEED}")
    rng = random.Random(SEED)
    doc = copy.deepcopy(old)
    m = doc["method"]
    m.pop("span_replays")
    m.update(
        span_source="timed-observations",
        cupti_during_timing=True,
        span_attribution="correlation",
        foreign_attribution="order",
        control_observations=200,
    )
    for run in doc["runs"]:
        for v in run["variants"]:
            if "error" in v:
                continue
            g = v["graph"]
            g["event_us_no_cupti"] = _summary(rng, g["event_us"]["median"] * 0.9)
            g["host_us_no_cupti"] = _summary(rng, g["host_us"]["median"] * 0.9)
        xla_span = _summary(rng, 3.25)
        run["variants"].append(
            {
                "name": "xla",
                "label": "XLA (jax.jit)",
                "kernels": 3,
                "check": {"passed": True, "rel_l2": 2.5e-4, "note": "output compared as returned"},
                "graph": {
                    "event_us": None,
                    "host_us": _summary(rng, 40.0),
                    "span_us": xla_span,
                    "b2b_us": None,
                    "span_source": "timed-observations",
                    "span_attribution": "order",
                    "event_us_no_cupti": None,
                    "host_us_no_cupti": _summary(rng, 36.0),
                },
                "eager": {"event_us": None, "host_us": _summary(rng, 41.0)},
                "tuning": {"jax": "0.11.0", "xla_flags": "(none)", "compile_s": 0.7, "kernels": 3},
            }
        )
    return doc


def test_new_run_validates_and_renders_xla(old):
    doc = report.validate(_new_run(old), "new")
    md = report.render_markdown([doc])
    run = doc["runs"][0]
    xla = run["variants"][-1]
    span = xla["graph"]["span_us"]
    # its row: span with p10/p90, no event interval or back-to-back, host completion
    row = next(line for line in md.splitlines() if line.startswith("| XLA (jax.jit) |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "3"
    assert cells[2] == f"{span['median']:.2f} us [{span['p10']:.2f}, {span['p90']:.2f}]"
    assert cells[3] == "-" and cells[5] == "-"
    assert cells[4].startswith(f"{xla['graph']['host_us']['median']:.2f} us")
    # the caption says how the spans were taken, and what differs for XLA
    assert "GPU span over the 1000 timed graph observations (CUPTI on while timing" in md
    assert "control round of 200 without CUPTI" in md
    assert "JAX launches on its own stream" in md and "order attribution, 3 kernel(s)" in md
    # the span summary has an xla column, last
    head = next(line for line in md.splitlines() if line.startswith("| host | shape | empty"))
    assert head.rstrip(" |").endswith("xla")
    # CUPTI's effect: host only for XLA
    eff = next(line for line in md.splitlines() if "| xla |" in line and "x) |" in line)
    assert "| - |" in eff
    assert "XLA (jax.jit): jax 0.11.0" in md
    # persistent-smem's comparison names xla among the peers when both ran
    assert report.ORDER[-1] == "xla"


def test_old_run_still_renders_as_before(old):
    md = report.render_markdown([report.validate(old, "old")])
    assert "GPU span over 20 separate replays (CUPTI off while timing)" in md
    assert "JAX launches" not in md and "| xla" not in md


def test_xla_failed_row_is_listed_not_dropped(old):
    doc = copy.deepcopy(old)
    msg = "jax not installed or not importable (ModuleNotFoundError: No module named 'jax')"
    doc["runs"][0]["variants"].append(
        {"name": "xla", "label": "XLA (jax.jit)", "note": msg, "error": msg}
    )
    md = report.render_markdown([report.validate(doc, "failed")])
    assert "| XLA (jax.jit) | - | - |" in md
    assert f"- XLA (jax.jit): {msg}" in md


def test_a_broken_xla_summary_is_named(old):
    doc = _new_run(old)
    doc["runs"][0]["variants"][-1]["graph"]["span_us"]["p10"] = 1e9
    with pytest.raises(report.ReportError, match=r"variants\[\d+\]\.graph\.span_us"):
        report.validate(doc, "bad")
