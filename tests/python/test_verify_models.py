"""The verifier on real PyTorch modules (tests/python/models.py) exported through
`python -m rowfuse.export`: each row-mixing module is rejected with a node-level message
naming its op and the rows it mixes, each row-owned module is accepted with a contract that
lists its weights and outputs.

The verdicts are checked independently in PyTorch (fp64): for a row-owned module, output
row i does not change when every other input row is replaced by fresh random data; for a
rejected module it does. So a test cannot pass with a mislabelled module.
"""

from __future__ import annotations

import json

import models
import pytest
import torch
from cli_util import ROOT, export, rowfuse

# The op each rejected module's first violating node has, as the exporter writes it.
REJECTED_OP = {
    "row_mean": "ReduceMean",
    "row_sum": "ReduceSum",
    "row_max": "ReduceMax",
    "row_softmax": "Softmax",
    "self_attention": "Transpose",  # x.t() moves the row axis before X @ X^T
    "gram_rows": "Gemm",  # linear(x, x): Gemm with a row-owned B and transB
    "row_cumsum": "CumSum",
    "fold_rows": "Reshape",
    "transpose_rows": "Transpose",
    "roll_rows": "Slice",  # roll = two row slices + Concat along rows
    "flip_rows": "Slice",  # flip = Slice with step -1 along rows
    "broadcast_row0": "Gather",  # x[0] = Gather(x, 0) along rows
}


def _rows_stay_owned(factory: str, trials: int = 3) -> bool:
    """PyTorch fp64: does output row i depend only on input row i?"""
    module, x = getattr(models, factory)()
    module = module.double().eval()
    gen = torch.Generator().manual_seed(torch.seed() % (2**31))
    x = torch.randn(x.shape, generator=gen, dtype=torch.float64)
    with torch.no_grad():
        y = module(x)
        for _ in range(trials):
            i = int(torch.randint(1, x.shape[0], (1,), generator=gen))
            x2 = torch.randn(x.shape, generator=gen, dtype=torch.float64)
            x2[i] = x[i]
            y2 = module(x2)
            if not torch.allclose(y2[i], y[i], rtol=1e-12, atol=1e-12):
                return False
    return True


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Exports in this process through rowfuse.export.export, the function behind
    `python -m rowfuse.export` (a process per model would re-import torch every time);
    test_example_residual_mlp_contract goes through the command line itself."""
    from rowfuse.export import export as export_module

    d = tmp_path_factory.mktemp("verify_models")
    cache = {}

    def get(factory: str):
        if factory not in cache:
            module, x = getattr(models, factory)()
            cache[factory] = export_module(module, x, models.ROWS, str(d / f"{factory}.onnx"))
        return cache[factory]

    return get


@pytest.mark.parametrize("factory", models.REJECTED)
def test_row_mixing_module_is_rejected(factory, exported):
    assert not _rows_stay_owned(factory), f"{factory} does not actually mix rows"
    p = rowfuse("verify", exported(factory))
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    msg = lines[0]
    assert "row violation" in msg, msg
    assert "node " in msg and f"({REJECTED_OP[factory]}" in msg, msg
    assert "row" in msg.split(f"({REJECTED_OP[factory]}", 1)[1], msg
    assert "accepted" not in p.stdout


@pytest.mark.parametrize("factory", models.ACCEPTED)
def test_row_owned_module_is_accepted(factory, exported, tmp_path):
    assert _rows_stay_owned(factory), f"{factory} is not actually row-owned"
    contract_path = tmp_path / "contract.json"
    p = rowfuse("verify", exported(factory), "--contract", contract_path)
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    assert "row dim: dim 0 of 'x', 64 rows" in p.stdout, p.stdout
    contract = json.loads(contract_path.read_text())
    assert contract["row_dim"] == {"input": "x", "axis": 0, "extent": models.ROWS}

    module, x = getattr(models, factory)()
    with torch.no_grad():
        y = module(x)
    assert [i["shape"] for i in contract["inputs"]] == [list(x.shape)]
    assert [o["shape"] for o in contract["outputs"]] == [list(y.shape)]
    assert all(o["state"] == "row_owned" and o["dtype"] == "f32" for o in contract["outputs"])
    weights = {w["name"]: w["shape"] for w in contract["weights"]}
    for name, param in module.state_dict().items():
        assert weights.get(name) == list(param.shape), (name, weights)
    values = {v["name"]: v for v in contract["values"]}
    for op in contract["ops"]:
        for out in op["outputs"]:
            assert values[out]["state"] == "row_owned", values[out]
            assert values[out]["reason"], values[out]


def test_example_residual_mlp_contract(tmp_path):
    """The example model (examples/residual_mlp.py) at an odd row count."""
    model = export("residual_mlp:make", 49, tmp_path / "m.onnx")
    p = rowfuse("verify", model, "--contract", tmp_path / "c.json", check=0)
    assert "accepted" in p.stdout
    c = json.loads((tmp_path / "c.json").read_text())
    assert c["row_dim"]["extent"] == 49
    assert {w["name"]: w["shape"] for w in c["weights"]} == {
        "fc1.weight": [96, 48],
        "fc1.bias": [96],
        "fc2.weight": [48, 96],
        "fc2.bias": [48],
    }
    assert [op["op"] for op in c["ops"]] == ["Gemm", "Relu", "Gemm", "Add", "Relu"]
    reasons = {v["name"]: v["reason"] for v in c["values"]}
    first = c["ops"][0]["outputs"][0]
    assert "contracts over features" in reasons[first], reasons
    assert (ROOT / "examples" / "residual_mlp.py").exists()
