"""Report rendering (rowfuse.bench.report) from a recorded benchmark run, and the JSON schema.

The fixture tests/python/data/bench_run.json was written by `python -m rowfuse.bench`
on the GPU machine; rendering, validation and merging need no GPU.
"""

import copy
import json
import os

import pytest
from rowfuse.bench import harness as bench
from rowfuse.bench import report

DATA = os.path.join(os.path.dirname(__file__), "data", "bench_run.json")


@pytest.fixture
def doc():
    with open(DATA) as f:
        return json.load(f)


def test_fixture_follows_schema(doc):
    assert report.validate(doc, "fixture") is doc
    assert doc["schema"] == bench.SCHEMA
    for run in doc["runs"]:
        names = [v["name"] for v in run["variants"]]
        assert names and set(names) <= set(report.ORDER)  # every name one the report knows


def test_fixture_summaries_are_consistent(doc):
    for run in doc["runs"]:
        for v in run["variants"]:
            if "error" in v:
                continue
            for s in (v["graph"]["event_us"], v["graph"]["host_us"], v["eager"]["event_us"]):
                assert s["min"] <= s["p10"] <= s["median"] <= s["p90"] <= s["max"]
                assert s["count"] == doc["method"]["rounds"] * doc["method"]["observations"]
            # The host clock brackets the events, so host completion >= event interval.
            assert v["graph"]["host_us"]["median"] >= v["graph"]["event_us"]["median"]


@pytest.mark.parametrize(
    "path,mutate,needle",
    [
        ("schema", lambda d: d.update(schema="other/9"), "expected 'rowfuse-bench/1'"),
        ("seed", lambda d: d.pop("seed"), "missing 'seed'"),
        ("shape", lambda d: d["runs"][0]["shape"].update(rows=0), "shape.rows"),
        (
            "median",
            lambda d: _first_measured(d)["graph"]["event_us"].update(median=float("nan")),
            "event_us.median",
        ),
        (
            "order",
            lambda d: _first_measured(d)["graph"]["host_us"].update(p10=1e9),
            "quantiles out of order",
        ),
    ],
)
def test_validate_names_the_broken_field(doc, path, mutate, needle):
    bad = copy.deepcopy(doc)
    mutate(bad)
    with pytest.raises(report.ReportError, match=needle.replace(".", r"\.")):
        report.validate(bad, "run")


def _first_measured(d):
    return next(v for v in d["runs"][0]["variants"] if "error" not in v)


def test_markdown_has_every_shape_and_variant(doc):
    md = report.render_markdown([doc])
    for run in doc["runs"]:
        assert f"## {report.shape_tag(run['shape'])}" in md
        for v in run["variants"]:
            assert v["label"] in md
            if "error" in v:
                assert v["error"] in md  # a skipped variant says why
    v = _first_measured(doc)
    s = v["graph"]["event_us"]
    assert f"{s['median']:.2f} us [{s['p10']:.2f}, {s['p90']:.2f}]" in md
    assert "GPU span summary" in md


def test_merge_two_runs_and_write(doc, tmp_path):
    other = copy.deepcopy(doc)
    other["tool"] = "c"
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(doc))
    b.write_text(json.dumps(other))
    out = tmp_path / "rep"
    assert report.main([str(a), str(b), "-o", str(out), "--no-plot"]) == 0
    merged = json.loads((out / "report.json").read_text())
    assert merged["schema"] == report.REPORT_SCHEMA and len(merged["runs"]) == 2
    md = (out / "report.md").read_text()
    assert "| python |" in md and "| c |" in md


def test_plot_writes_png_and_svg(doc, tmp_path):
    pytest.importorskip("matplotlib")
    paths = report.plot([doc], str(tmp_path))
    for p in paths:
        assert os.path.getsize(p) > 1000


def test_bad_file_is_a_clear_error(tmp_path, capsys):
    p = tmp_path / "x.json"
    p.write_text("{not json")
    assert report.main([str(p), "-o", str(tmp_path / "o")]) == 2
    assert "cannot read JSON" in capsys.readouterr().err


def test_comparison_ratios_and_targets(doc):
    # Make persistent-smem a copy of Triton fused with half its span: ratio 0.50x, and
    # the 49x48x96 targets follow from the numbers (2.53/2 = 1.26 us <= 2.0: met).
    d = copy.deepcopy(doc)
    run = d["runs"][0]
    by = {v["name"]: v for v in run["variants"]}
    tri = by["triton-fused"]
    smem = copy.deepcopy(tri)
    smem.update(name="persistent-smem", label="persistent-smem + graph")
    span = smem["graph"]["span_us"]
    for k in ("median", "p10", "p90", "min", "max", "mean"):
        span[k] = span[k] / 2
    run["variants"] = [smem if v["name"] == "persistent-smem" else v for v in run["variants"]]
    md = "\n".join(report.render_comparison([d]))
    assert "triton-fused 0.50x" in md
    tc = by["torch-compile"]["graph"]["span_us"]["median"]
    ratio = span["median"] / tc
    assert f"torch-compile {ratio:.2f}x" in md
    assert f"span <= 2.0 us: {span['median']:.3g} (met)" in md
    verdict = "met" if ratio <= 0.35 else "MISSED"
    assert f"span <= 0.35x torch.compile: {ratio:.3g} ({verdict}" in md
