"""The ONNX backend node tests of every op rowfuse claims, through the importer and the
fp64 CPU reference (tests/python/onnx_conformance.py): no test may crash, and every test
docs/onnx-conformance.json lists as passing must still pass."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("onnx")

import onnx_conformance as oc  # noqa: E402


def test_onnx_node_tests_no_crash_no_regression():
    rf_bin = oc.rowfuse_bin()
    claimed = oc.claimed_ops(rf_bin)
    assert {"MatMul", "Add", "Relu", "LayerNormalization"} <= claimed, sorted(claimed)
    cases, total = oc.collect(claimed)
    assert total > 0 and cases, "onnx generated no node tests for the claimed ops"
    results = oc.run_all(rf_bin, cases, jobs=2)
    crashes = [f"{r.name}: {r.detail}" for r in results if r.status == "crash"]
    assert not crashes, "crashed:\n" + "\n".join(crashes)
    baseline = json.loads(oc.JSON_PATH.read_text())
    assert sum(t["status"] == "pass" for t in baseline["tests"].values()) > 0
    regs = oc.regressions(results, baseline)
    assert not regs, "regressions against docs/onnx-conformance.json:\n" + "\n".join(regs)
    passed = sum(r.status == "pass" for r in results)
    print(f"{len(results)} of {total} node tests run: {passed} pass")
