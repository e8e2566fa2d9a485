"""The GPU driver's verdicts (rowfuse.bench.summarize) on planted breakages: a fault package
that does not load, a check that passes, a missing document, an exit status that
disagrees with the rows, a missing row, an ERROR row, a capture fault not refused, and
sanitizer logs without a summary, with errors, cut by a timeout, or missing a planted
race. Each must come out FAILED or not caught, never caught or clean."""

from __future__ import annotations

import json

import pytest
from rowfuse.bench import summarize as sm

SHAPE = (777, 24, 200)


def _row(variant="persistent-smem", shape=SHAPE, passed=True, error=""):
    r, c, h = shape
    return {
        "variant": variant,
        "rows": r,
        "channels": c,
        "hidden": h,
        "passed": passed,
        "error": error,
        "nonfinite": 0 if passed else 12,
        "out_of_tolerance": 0 if passed else 40,
        "steps": 0.4 if passed else 9.0,
        "max_allow_ratio": 0.3 if passed else 7.0,
        "replays_identical": True,
    }


def _doc(*rows):
    return {"job": "rowfuse check", "results": list(rows)}


def test_fault_caught_only_on_a_fail_row_at_the_planted_shape():
    doc = _doc(_row(passed=False), _row("cublaslt"))
    row, why = sm.find_row(doc, 1, False, "persistent-smem", SHAPE)
    assert why is None and sm.judge_fault(row, why)["status"] == "caught"
    # the same FAIL at another shape does not speak for the planted one
    other = _doc(_row(passed=False, shape=(100, 24, 200)))
    row, why = sm.find_row(other, 1, False, "persistent-smem", SHAPE)
    assert row is None and sm.judge_fault(row, why)["status"] == "FAILED"


def test_planted_breakage_fault_package_does_not_load():
    doc = _doc(
        {
            "variant": "load",
            "rows": 0,
            "channels": 0,
            "hidden": 0,
            "passed": False,
            "error": "IO_ERROR: cannot open librowfuse_pkg.so",
        }
    )
    row, why = sm.find_row(doc, 1, False, "persistent-smem", SHAPE)
    v = sm.judge_fault(row, why)
    assert v["status"] == "FAILED" and "did not load" in v["detail"]
    assert sm.doc_failure(doc, 1, False).startswith("package did not load")


def test_planted_breakage_check_passes():
    doc = _doc(_row(), _row("cublaslt"))
    row, why = sm.find_row(doc, 0, False, "persistent-smem", SHAPE)
    v = sm.judge_fault(row, why)
    assert v["status"] == "not caught" and v["status"] in sm.FAILING
    # a pass is acceptable only where the kernel's geometry shows the fault is inert
    v = sm.judge_fault(row, why, inert="inert: no padded column")
    assert v["status"] == "inert" and v["status"] not in sm.FAILING


def test_no_pad_inert_only_without_padded_columns():
    def plan(c, h, pc, ph):
        k = {"channels": c, "hidden": h, "padded_channels": pc, "padded_hidden": ph}
        return {"kernels": [k], "schedules": {"persistent-smem": {"kernels": [0]}}}

    assert sm.inert_reason(plan(64, 128, 64, 128), "persistent-smem", "no-pad")
    assert not sm.inert_reason(plan(24, 200, 32, 208), "persistent-smem", "no-pad")
    assert not sm.inert_reason(plan(64, 128, 64, 128), "persistent-smem", "no-barrier")
    assert not sm.inert_reason(plan(64, 128, 64, 128), "conventional", "no-pad")


@pytest.mark.parametrize(
    "doc,rc,timed_out,why",
    [
        (None, 2, False, "no JSON"),
        (_doc(_row(passed=False)), 0, False, "disagrees"),  # exit 0 with a failing row
        (_doc(_row()), 1, False, "disagrees"),  # exit 1 with every row passing
        (_doc(_row(passed=False)), 139, False, "disagrees"),  # a crash after the JSON
        (_doc(_row(passed=False)), 1, True, "timed out"),
        (_doc(), 1, False, "no result rows"),
    ],
)
def test_runs_that_cannot_speak_for_their_rows(doc, rc, timed_out, why):
    row, got = sm.find_row(doc, rc, timed_out, "persistent-smem", SHAPE)
    assert row is None and why in got
    assert sm.judge_fault(row, got)["status"] == "FAILED"
    assert sm.judge_control(row, got)["status"] == "FAILED"


def test_error_rows_are_errors_not_catches():
    doc = _doc(_row(passed=False, error="CUDA_ERROR: unspecified launch failure"))
    row, why = sm.find_row(doc, 1, False, "persistent-smem", SHAPE)
    assert sm.judge_fault(row, why)["status"] == "error"
    assert "error" in sm.FAILING
    # a variant that failed before any shape: its row has 0 rows and is that variant's row
    early = _doc(_row(passed=False, shape=(0, 24, 200), error="NOT_FOUND: no such schedule"))
    row, why = sm.find_row(early, 1, False, "persistent-smem", SHAPE)
    assert why is None and sm.judge_fault(row, why)["status"] == "error"


def test_controls_must_pass():
    ok, _ = sm.find_row(_doc(_row("cublaslt")), 0, False, "cublaslt", SHAPE)
    assert sm.judge_control(ok, None)["status"] == "ok"
    bad, _ = sm.find_row(_doc(_row("cublaslt", passed=False)), 1, False, "cublaslt", SHAPE)
    assert sm.judge_control(bad, None)["status"] == "control FAILED"


def test_capture_faults_must_be_refused_naming_the_kernel_nodes():
    msg = (
        "FAILED_PRECONDITION: persistent-smem: the captured graph holds 0 kernel nodes, "
        "expected 1: a kernel was launched outside the capturing stream"
    )
    row, why = sm.find_row(_doc(_row(passed=False, error=msg)), 1, False, "persistent-smem", SHAPE)
    v = sm.judge_fault(row, why, sm.CAPTURE)
    assert v["status"] == "refused" and "0 kernel nodes" in v["detail"]
    row, why = sm.find_row(_doc(_row()), 0, False, "persistent-smem", SHAPE)
    assert sm.judge_fault(row, why, sm.CAPTURE)["status"] == "FAILED"
    row, why = sm.find_row(_doc(_row(passed=False)), 1, False, "persistent-smem", SHAPE)
    assert sm.judge_fault(row, why, sm.CAPTURE)["status"] == "fail, not refused"
    cuda = _doc(_row(passed=False, error="CUDA_ERROR: operation not permitted when capturing"))
    row, why = sm.find_row(cuda, 1, False, "persistent-smem", SHAPE)
    assert sm.judge_fault(row, why, sm.CAPTURE)["status"] == "refused by CUDA"
    other = _doc(_row(passed=False, error="OUT_OF_MEMORY: Y buffer"))
    row, why = sm.find_row(other, 1, False, "persistent-smem", SHAPE)
    assert sm.judge_fault(row, why, sm.CAPTURE)["status"] == "error"
    assert sm.judge_bench_refusal(1, "x\n[bench --c] " + msg + "\n", False)["status"] == "refused"
    assert sm.judge_bench_refusal(0, msg, False)["status"] == "FAILED"
    assert sm.judge_bench_refusal(1, "out of memory", False)["status"] == "FAILED"


def test_affected_schedules_from_the_plan():
    plan = {
        "kernels": [{"fault": "no_pad"}, {"fault": "no_pad"}, {"fault": ""}],
        "schedules": {
            "persistent-smem": {"available": True, "kernels": [0]},
            "conventional": {"available": True, "kernels": [1]},
            "persistent-wgmma": {"available": True, "kernels": [2]},
            "persistent-gmem": {"available": False, "kernels": []},
            "cublaslt": {"available": True, "kernels": []},
        },
    }
    assert sm.affected_schedules(plan) == ["persistent-smem", "conventional"]
    clean = dict(plan, kernels=[{"fault": ""}] * 3)
    assert sm.affected_schedules(clean) == []  # no kernel carries it here: not applicable
    assert sm.affected_schedules(plan, sm.CAPTURE) == [
        "persistent-smem",
        "conventional",
        "persistent-wgmma",
    ]


CLEAN = "========= ERROR SUMMARY: 0 errors\n"
RACE_CLEAN = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
RACE_HIT = "========= RACECHECK SUMMARY: 12 hazards displayed (12 errors, 0 warnings)\n"


def test_sanitizer_verdicts():
    assert sm.parse_sanitizer(CLEAN, 0, False)["status"] == "clean"
    assert sm.parse_sanitizer(RACE_CLEAN, 0, False)["status"] == "clean"
    assert (
        sm.parse_sanitizer("========= ERROR SUMMARY: 3 errors\n", 99, False)["status"] == "FAILED"
    )
    # planted: no summary line (the tool never ran the program), a timeout, clean but the
    # check inside failed
    v = sm.parse_sanitizer("compute-sanitizer: command not found\n", 127, False)
    assert v["status"] == "FAILED" and "no sanitizer summary" in v["detail"]
    assert sm.parse_sanitizer(RACE_CLEAN, -9, True, seconds=360)["status"] == "FAILED"
    assert sm.parse_sanitizer(CLEAN, 1, False)["status"] == "FAILED"
    # a planted race must be seen
    assert sm.parse_sanitizer(RACE_HIT, 99, False, expect_errors=True)["status"] == "caught"
    assert sm.parse_sanitizer(RACE_CLEAN, 0, False, expect_errors=True)["status"] == "FAILED"


def test_print_summary_fails_on_any_failed_step(tmp_path, capsys):
    steps = [{"sub": "gates", "step": "a", "status": "ok", "seconds": 1.0, "detail": ""}]
    assert sm.print_summary({"steps": steps, "ran": ["gates"], "subs": {}}) == 0
    bad = steps + [{"sub": "gates", "step": "b", "status": "FAILED", "seconds": 0, "detail": "x"}]
    assert sm.print_summary({"steps": bad, "ran": ["gates"], "subs": {}}) == 1
    assert sm.print_summary({"steps": [], "ran": [], "subs": {}}) == 1  # nothing ran
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].startswith("RESULT: FAIL")
    # the command line reprints a run's summary.json
    p = tmp_path / "summary.json"
    gates = {
        "faults": [{"name": "no-pad", "kind": "result"}],
        "shapes": [{"shape": "777x24x200", "class": "partial"}],
        "cells": [
            {
                "fault": "no-pad",
                "schedule": "persistent-smem",
                "shape": "777x24x200",
                "class": "partial",
                "status": "caught",
                "detail": "",
            }
        ],
        "sanitizer": [
            {
                "tool": "racecheck",
                "schedule": "persistent-smem",
                "shape": "49x48x96",
                "status": "clean",
                "errors": 0,
                "seconds": 80.0,
            }
        ],
    }
    p.write_text(json.dumps({"steps": steps, "ran": ["gates"], "subs": {"gates": gates}}))
    assert sm.main([str(p)]) == 0
    out = capsys.readouterr().out
    assert "no-pad" in out and "0e/80.0s" in out


def test_a_kernel_that_fails_on_the_device_is_caught_a_load_failure_is_not():
    trap = (
        "cuda error: cudaEventSynchronize(stop): cudaErrorLaunchFailure: unspecified launch failure"
    )
    row, why = sm.find_row(_doc(_row(passed=False, error=trap)), 1, False, "persistent-smem", SHAPE)
    v = sm.judge_fault(row, why)
    assert v["status"] == "caught" and "failed on the device" in v["detail"]
    for err in (
        "cannot load pk/librowfuse_pkg.so: cannot open shared object file",
        "cuda error: cuModuleLoadData: cudaErrorInvalidKernelImage: device kernel image is invalid",
    ):
        row, why = sm.find_row(
            _doc(_row(passed=False, error=err)), 1, False, "persistent-smem", SHAPE
        )
        assert sm.judge_fault(row, why)["status"] == "error", err


def test_a_race_fault_is_caught_by_racecheck_only_when_it_reports_the_race():
    hole = sm.judge_fault(_row(), None)
    assert hole["status"] == "not caught"
    seen = sm.parse_sanitizer(
        "========= RACECHECK SUMMARY: 12 hazards displayed (12 errors, 0 warnings)",
        sm.SANITIZER_ERROR_EXIT,
        False,
        True,
        9.0,
    )
    assert sm.judge_race(hole, seen)["status"] == "caught"
    blind = sm.parse_sanitizer(
        "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)",
        0,
        False,
        True,
        9.0,
    )
    assert sm.judge_race(hole, blind)["status"] == "not caught"
    assert sm.judge_race(hole, None)["status"] == "not caught"
    timed_out = sm.parse_sanitizer("", 124, True, True, 360.0)
    assert sm.judge_race(hole, timed_out)["status"] == "not caught"
    # a cell the check already caught stays caught whatever racecheck says
    caught = sm.judge_fault(_row(passed=False), None)
    assert sm.judge_race(caught, blind)["status"] == "caught"


def _chain_doc(*passed, error=""):
    return {
        "results": [
            {"package": "p", "rows": 7, "passed": ok, "error": error if i == 0 else ""}
            for i, ok in enumerate(passed)
        ]
    }


def test_chain_check_and_fault_verdicts():
    """A chain check is ok only with rows that all ran and passed and exit 0; a planted
    fault is caught only by a row that ran and FAILED with exit 1. A check that refused to
    run (exit 1, no JSON: how `--json` on chain packages once failed every check and
    counted the planted fault as caught), an error row, a timeout or an exit status that
    disagrees with the rows is neither."""
    assert sm.judge_chain_check(0, False, _chain_doc(True, True)) == (True, "")
    assert sm.judge_chain_fault(1, False, _chain_doc(True, False)) == (True, "")
    for rc, to, doc in [
        (1, False, {}),  # refused before any row: "unsupported", exit 1
        (2, False, {}),
        (1, False, _chain_doc(False, error="cannot load kernel")),
        (1, True, _chain_doc(False)),
    ]:
        assert not sm.judge_chain_check(rc, to, doc)[0]
        assert not sm.judge_chain_fault(rc, to, doc)[0]
    assert not sm.judge_chain_check(1, False, _chain_doc(True, False))[0]
    assert not sm.judge_chain_check(1, False, _chain_doc(True))[0]  # exit disagrees
    assert not sm.judge_chain_check(0, False, _chain_doc(True, False))[0]
    assert not sm.judge_chain_fault(1, False, _chain_doc(True, True))[0]  # fault went through
    assert not sm.judge_chain_fault(0, False, _chain_doc(True, False))[0]
    assert "no check rows" in sm.judge_chain_fault(1, False, {})[1]
