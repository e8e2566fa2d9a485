"""The L2-aware roofline (rowfuse.bench.roofline) on closed-form cases, and the report reading a C
run whose GPU span comes from the timed observations with a control round without CUPTI
(method.span_source, graph.event_us_no_cupti / host_us_no_cupti)."""

from __future__ import annotations

import math

import pytest
from rowfuse.bench import report, roofline


def test_resident_shape_bytes_and_bounds():
    # 1000x100x200, persistent-smem: X 200,000 B + W 80,000 + biases 1,200 + Y 400,000
    b = roofline.bound(1000, 100, 200, "persistent-smem")
    assert b["working_set"] == 681_200 and b["bytes"] == 681_200
    assert b["flops"] == 80e6
    assert b["flop_us"] == pytest.approx(80e6 / 790e12 * 1e6)  # 0.1013 us
    assert b["hbm_us"] == pytest.approx(681_200 / 4.3e12 * 1e6)  # 0.1584 us
    assert b["l2_us"] == pytest.approx(681_200 / 10e12 * 1e6)  # 0.0681 us
    assert b["where"] == "L2-resident"
    # resident: the memory bound is L2's, under the FLOP bound here
    assert b["roofline_us"] == pytest.approx(b["flop_us"]) and b["limit"] == "FLOPs"
    # the all-HBM assumption would have claimed a 1.56x higher (beatable) bound
    assert b["hbm_us"] / b["roofline_us"] == pytest.approx(0.1584 / 0.1013, rel=1e-3)


def test_h_through_global_memory():
    # persistent-gmem adds H fp16: 400,000 B of footprint, written and read: 800,000 moved
    g = roofline.traffic(1000, 100, 200, "persistent-gmem")
    assert g["h"] == 400_000
    assert g["working_set"] == 1_081_200 and g["bytes"] == 1_481_200
    assert roofline.traffic(1000, 100, 200, "cublaslt")["h"] == 400_000
    assert roofline.traffic(1000, 100, 200, "persistent-smem")["h"] == 0


def test_streaming_and_uncertain_shapes():
    # 1,000,000x32x64: X 64 MB + Y 128 MB: streams from HBM, memory-bound
    b = roofline.bound(1_000_000, 32, 64, "persistent-smem")
    ws = 2 * 32e6 + 4 * 32e6 + 4 * 32 * 64 + 4 * 96
    assert b["working_set"] == ws and b["where"] == "HBM"
    assert b["roofline_us"] == pytest.approx(ws / 4.3e12 * 1e6) and b["limit"] == "HBM"
    # 131072x32x64: 25.2 MB, over half the L2: uncertain, the (lower) L2 bound is used
    u = roofline.bound(131072, 32, 64, "persistent-smem")
    assert 25e6 < u["working_set"] <= 50e6 and u["where"] == "L2 (uncertain)"
    assert u["roofline_us"] == pytest.approx(u["l2_us"]) and u["limit"] == "L2"
    assert u["hbm_us"] == pytest.approx(u["working_set"] / 4.3e12 * 1e6)


def _summary(median):
    return {
        "count": 1000,
        "median": median,
        "p10": 0.9 * median,
        "p90": 1.1 * median,
        "median_ci_lo": 0.99 * median,
        "median_ci_hi": 1.01 * median,
    }


def _c_run():
    def variant(name, span, ev, ev0):
        return {
            "name": name,
            "label": name,
            "kernels": 1,
            "check": {"passed": True},
            "graph": {
                "event_us": _summary(ev),
                "host_us": _summary(ev + 6),
                "b2b_us": _summary(span + 1),
                "span_us": _summary(span),
                "cupti": True,
                "event_us_no_cupti": _summary(ev0),
                "host_us_no_cupti": _summary(ev0 + 6),
            },
            "eager": {"event_us": _summary(ev + 1), "host_us": _summary(ev + 7)},
        }

    return {
        "schema": report.SCHEMA,
        "tool": "c",
        "date": "2026-12-03T00:00:00+00:00",
        "git_revision": "abc",
        "seed": 1,
        "gpu": {"name": "NVIDIA H200"},
        "method": {
            "rounds": 5,
            "observations": 200,
            "span_source": "timed-observations",
            "cupti_during_timing": True,
            "span_attribution": "correlation",
            "control_observations": 200,
        },
        "runs": [
            {
                "shape": {"rows": 1000, "channels": 100, "hidden": 200},
                "plan": {"schedule": "persistent-smem", "reason": "t", "tile_rows": 16},
                "variants": [
                    variant("empty", 0.6, 4.0, 4.0),
                    variant("persistent-smem", 3.0, 6.3, 6.0),
                    variant("persistent-gmem", 3.5, 6.8, 6.6),
                ],
            }
        ],
    }


def test_report_reads_the_timed_span_and_control_round():
    doc = report.validate(_c_run())
    md = report.render_markdown([doc])
    assert "GPU span over the 1000 timed graph observations" in md
    assert "control round of 200 without CUPTI" in md
    assert "| c | 1000x100x200 | persistent-smem | 6.30 / 6.00 us (1.050x)" in md
    # roofline of the choice: 0.1013 us (FLOPs) against 3.0 us measured: 3%
    assert "| 1000x100x200 | 0.68 MB, L2-resident |" in md
    assert "persistent-smem: 0.10 (FLOPs), 3.00 measured, 3%" in md


def test_report_rejects_a_broken_control_summary():
    doc = _c_run()
    doc["runs"][0]["variants"][1]["graph"]["event_us_no_cupti"]["median"] = math.inf
    with pytest.raises(report.ReportError, match="event_us_no_cupti"):
        report.validate(doc)


def test_old_runs_say_separate_replays():
    doc = _c_run()
    doc["method"] = {"rounds": 5, "observations": 200, "span_replays": 20}
    assert report.span_method(doc) == ("GPU span over 20 separate replays (CUPTI off while timing)")
