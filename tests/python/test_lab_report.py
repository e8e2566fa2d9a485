"""The lab report (rowfuse.lab.report) and the GPU harness's kernel grouping
(rowfuse.lab.gpu.split_calls) on synthetic runs: no GPU needed."""

from __future__ import annotations

import json

import pytest
from rowfuse.bench import harness as bench
from rowfuse.lab import gpu, report


def _stats(median):
    return {"count": 3, "median": median, "p10": median * 0.9, "p90": median * 1.2}


def _run(mode, variants):
    return {
        "schema": "rowfuse-lab-run/1",
        "env": {"date": "d", "gpu": "H", "capability": "sm_90", "iree_mode": mode, "git": "abc"},
        "models": {
            "cnn": {
                "seed": 7,
                "input_shape": [8, 3, 32, 32],
                "torch_ops": 8,
                "cuda_target": "sm_89",
                "dispatch_summary": {
                    "cuda": {
                        "dispatches": 2,
                        "launches": 2,
                        "executables": [
                            {"name": "d0_conv", "ops": ["fill", "generic[reduction]{addf,mulf}"]},
                            {"name": "d1_matmul", "ops": ["fill", "matmul"]},
                        ],
                    }
                },
                "variants": variants,
            }
        },
    }


def _variant(label, median, ok=True):
    check = {"rel_l2_vs_torch_fp64": 1e-7 if ok else 1e-2, "ok": ok}
    return {"label": label, "check": check, "host_us": _stats(median), "kernels": 2}


def test_summary_is_the_benchmarks_one():
    """The lab summarizes with rowfuse's one statistics module (no second quantile)."""
    values = [5.0, 1.0, 3.0, 2.0, 4.0]
    ours, theirs = gpu.summarize(values), bench.summarize(values)
    assert ours == theirs and ours["median"] == 3.0
    with pytest.raises(ValueError):
        gpu.summarize([1.0, float("nan")])


def test_split_calls_groups_kernels_by_idle_gaps():
    calls = [(0.0, 5.0, "a"), (6.0, 9.0, "b"), (3000.0, 3004.0, "a"), (3005.0, 3010.0, "b")]
    groups = gpu.split_calls(calls, 2)
    assert [len(g) for g in groups] == [2, 2]
    assert gpu.split_calls(calls, 3) is None
    assert gpu.split_calls([], 1) is None


def test_report_merges_runs_and_writes_every_file(tmp_path):
    streams = _run(
        "streams",
        {
            "iree-streams": _variant("IREE CUDA (streams)", 40.0),
            "torch-eager": _variant("PyTorch eager", 90.0, ok=False),
        },
    )
    graphs = _run("graphs", {"iree-graphs": _variant("IREE CUDA (graphs)", 30.0)})
    graphs["models"]["gru"] = {"error": "build/lab-gpu/gru not found"}
    paths = []
    for i, r in enumerate((streams, graphs)):
        paths.append(tmp_path / f"r{i}.json")
        paths[-1].write_text(json.dumps(r))
    assert report.main([str(p) for p in paths] + ["-o", str(tmp_path / "rep")]) == 0
    merged = json.loads((tmp_path / "rep" / "report.json").read_text())
    order = ["iree-streams", "iree-graphs", "torch-eager"]
    assert list(merged["models"]["cnn"]["variants"]) == order
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "8 torch ops -> 2 IREE dispatches" in md
    assert "`d0_conv`: fill + generic[reduction]{addf,mulf}" in md
    assert "MISMATCH" in md and "not run: build/lab-gpu/gru not found" in md
    assert (tmp_path / "rep" / "report.png").stat().st_size > 1000
    rows = report.rows(merged)
    assert ["cnn", "IREE CUDA (graphs)", "2", "1.0e-07 ok", "-", "30.00", "-"] in rows
