"""Writes small valid ONNX models as a seed corpus for tests/fuzz/fuzz_onnx.c.

Usage: python tests/fuzz/make_seeds.py OUT_DIR  (tests/fuzz/corpus holds its output, which
tests/fuzz/run.sh seeds the fuzzer with)
Builds models with onnx.helper (typed and raw initializers, Constant nodes, a model-local
function, attributes of every kind) and, if torch is importable, a tiny exported MLP.
"""

import sys
from pathlib import Path

import numpy as np

import onnx
from onnx import TensorProto, helper, numpy_helper


def mlp_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "W1")
    b1 = helper.make_tensor("b1", TensorProto.FLOAT, [16], rng.standard_normal(16).tolist())
    w2 = numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "W2")
    axes = helper.make_node("Constant", [], ["axes"], value_ints=[1])
    nodes = [
        axes,
        helper.make_node("Gemm", ["X", "W1", "b1"], ["h0"], name="fc1", alpha=1.0, transB=0),
        helper.make_node("Relu", ["h0"], ["h"]),
        helper.make_node("MatMul", ["h", "W2"], ["c"]),
        helper.make_node("ReduceMean", ["c", "axes"], ["m"], keepdims=1),
        helper.make_node("Add", ["c", "m"], ["Y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4, 8])],
        initializer=[w1, b1, w2],
        value_info=[helper.make_tensor_value_info("h", TensorProto.FLOAT, [4, 16])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def function_model() -> onnx.ModelProto:
    body = [
        helper.make_node("Constant", [], ["two"], value_float=2.0),
        helper.make_node("Mul", ["x", "two"], ["t"]),
        helper.make_node("LeakyRelu", ["t"], ["y"], alpha=0.1),
    ]
    fn = helper.make_function(
        "pkg.seed", "Twice", ["x"], ["y"], body, [helper.make_opsetid("", 20)]
    )
    nodes = [
        helper.make_node("Twice", ["X"], ["A"], domain="pkg.seed"),
        helper.make_node("Twice", ["A"], ["Y"], domain="pkg.seed"),
        helper.make_node(
            "Custom",
            ["Y"],
            ["Z", ""],
            s="str",
            ints=[1, 2],
            floats=[0.5],
            t=helper.make_tensor("tt", TensorProto.INT64, [2], [3, 4]),
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "fn",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT16, [2, 3])],
        [helper.make_tensor_value_info("Z", TensorProto.FLOAT16, [2, 3])],
    )
    return helper.make_model(
        graph,
        functions=[fn],
        opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("pkg.seed", 1)],
    )


def torch_model(path: Path) -> bool:
    try:
        import torch
    except ImportError:
        return False
    torch.manual_seed(0)
    m = torch.nn.Sequential(
        torch.nn.LayerNorm(8), torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8)
    ).eval()
    torch.onnx.export(m, (torch.randn(4, 8),), str(path), dynamo=True, external_data=False)
    return True


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    onnx.save(mlp_model(), out / "mlp.onnx")
    onnx.save(function_model(), out / "function.onnx")
    torch_model(out / "torch_mlp.onnx")


if __name__ == "__main__":
    main()
