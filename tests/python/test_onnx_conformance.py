"""The ONNX backend node tests of every op rowfuse claims, through the importer and the
fp64 CPU reference (tests/python/onnx_conformance.py): no test may crash, and every test
docs/onnx-conformance.json lists as passing must still pass."""

from __future__ import annotations

import json
import subprocess

import numpy as np
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
    crashes = [
        f"{r.name}: {r.status}: {r.detail} / folded: {r.folded}" for r in results if r.crashed()
    ]
    baseline = json.loads(oc.JSON_PATH.read_text())
    assert sum(t["status"] == "pass" for t in baseline["tests"].values()) > 0
    regs = oc.regressions(results, baseline)
    assert not crashes and not regs, (
        "crashed:\n"
        + "\n".join(crashes)
        + "\nregressions against docs/onnx-conformance.json:\n"
        + "\n".join(regs)
    )
    passed = sum(r.status == "pass" for r in results)
    print(f"{len(results)} of {total} node tests run: {passed} pass")


@pytest.mark.parametrize(
    "dtype, lowest",
    [(np.bool_, 0.0), (np.int32, -(2.0**31)), (np.int64, -(2.0**63)), (np.float32, -np.inf)],
)
def test_reduce_max_empty_set_is_the_lowest_value(tmp_path, dtype, lowest):
    """ReduceMax over an empty feature axis gives minus infinity where the type has it,
    else the type's lowest value (ONNX's rule; false for bool); over a non-empty axis of
    random integers that include the lowest value, numpy's max."""
    from onnx import helper, numpy_helper

    seed = 23
    print("seed", seed)
    rng = np.random.default_rng(seed)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    for width in (0, 5):
        x = rng.integers(-9, 9, size=(3, width, 4)).astype(dtype)
        if width and dtype is not np.bool_:
            x[0, 2, 1] = np.iinfo(dtype).min if dtype is not np.float32 else -np.inf
        axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
        node = helper.make_node("ReduceMax", ["x", "axes"], ["y"], keepdims=1)
        graph = helper.make_graph(
            [node],
            "reduce_max",
            [helper.make_tensor_value_info("x", elem, [3, width, 4])],
            [helper.make_tensor_value_info("y", elem, [3, 1, 4])],
            [axes],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        path = tmp_path / f"m{width}.onnx"
        path.write_bytes(model.SerializeToString())
        np.save(tmp_path / "x.npy", x)
        p = subprocess.run(
            [oc.rowfuse_bin(), "run", str(path), "--input", str(tmp_path / "x.npy")]
            + ["--output", str(tmp_path / "y.npy")],
            capture_output=True,
            text=True,
        )
        assert p.returncode == 0, p.stderr
        y = np.load(tmp_path / "y.npy")
        want = x.max(axis=1, keepdims=True).astype(np.float64) if width else lowest
        np.testing.assert_array_equal(y, np.broadcast_to(want, (3, 1, 4)))
