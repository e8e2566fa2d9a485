"""`rowfuse run` takes the integer and bool inputs a model declares (exactly their dtype),
refuses float data for them and integer data for a float input, and a Cast to fp16 rounds
in fp64 mode (nearest even), as the model computes. Models built with onnx.helper."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from cli_util import rowfuse  # noqa: E402

from onnx import TensorProto, helper  # noqa: E402


def _model(path, in_type, nodes, out_name="y"):
    x = helper.make_tensor_value_info("x", in_type, [4, 3])
    y = helper.make_tensor_value_info(out_name, TensorProto.FLOAT, [4, 3])
    g = helper.make_graph(nodes, "g", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    onnx.save(m, str(path))
    return path


@pytest.mark.parametrize(
    "onnx_type,np_type", [(TensorProto.INT64, np.int64), (TensorProto.BOOL, np.bool_)]
)
def test_integer_and_bool_inputs(onnx_type, np_type, tmp_path):
    nodes = [
        helper.make_node("Cast", ["x"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Neg", ["f"], ["y"]),
    ]
    model = _model(tmp_path / "m.onnx", onnx_type, nodes)
    rng = np.random.default_rng(5)
    x = rng.integers(-9, 10, size=(4, 3)) if np_type is np.int64 else rng.random((4, 3)) > 0.5
    x = x.astype(np_type)
    np.save(tmp_path / "x.npy", x)
    p = rowfuse("run", model, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy")
    assert p.returncode == 0, p.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), -x.astype(np.float64))
    np.save(tmp_path / "xf.npy", x.astype(np.float32))
    p = rowfuse("run", model, "--input", tmp_path / "xf.npy", "--output", tmp_path / "y.npy")
    assert p.returncode == 2 and "is declared" in p.stderr, p.stderr


def test_float_input_refuses_integer_data(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    model = _model(tmp_path / "m.onnx", TensorProto.FLOAT, nodes)
    np.save(tmp_path / "x.npy", np.ones((4, 3), np.int64))
    p = rowfuse("run", model, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy")
    assert p.returncode == 2 and "float data" in p.stderr, p.stderr


def test_cast_to_fp16_rounds_in_fp64(tmp_path):
    nodes = [
        helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
        helper.make_node("Cast", ["h"], ["y"], to=TensorProto.FLOAT),
    ]
    model = _model(tmp_path / "m.onnx", TensorProto.FLOAT, nodes)
    x = np.random.default_rng(7).standard_normal((4, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    p = rowfuse("run", model, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy")
    assert p.returncode == 0, p.stderr
    y = np.load(tmp_path / "y.npy")
    np.testing.assert_array_equal(y, x.astype(np.float16).astype(np.float64))
    assert (y != x).any()
