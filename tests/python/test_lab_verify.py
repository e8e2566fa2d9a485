"""The row contract on the lab's models (rowfuse.lab.models), exported through
rowfuse.export and checked by `rowfuse verify`:

- attention (with and without the causal mask) is rejected as a row violation at the
  node that moves the sequence axis off axis 0: the transpose of K feeding the score
  matmul (Q K^T), whose rows then mix through the softmax;
- the unrolled GRU is accepted: batch rows are independent (every Gemm contracts over
  features), the time steps are sliced along axis 1 and chained step after step;
- the CNN is rejected for its op set (Conv is not a rowfuse op), not for mixing rows: its
  images are independent, which PyTorch confirms.

Every verdict is checked against PyTorch (fp64): whether output row i changes when every
other input row is replaced by fresh data.
"""

from __future__ import annotations

import json
import os
import random
import re

import pytest
import torch
from cli_util import rowfuse
from rowfuse.lab import models

import onnx

# fixed seeds, a new one per call (printed: pytest shows it with a failure); RF_TEST_SEED
# starts the sequence elsewhere
_SEEDS = random.Random(int(os.environ.get("RF_TEST_SEED", "2212")))


def _seed() -> int:
    seed = _SEEDS.randrange(2**31)
    print(f"seed {seed}")
    return seed


def _rows_independent(name: str, trials: int = 3) -> bool:
    """PyTorch fp64: does output row i depend only on input row i (dim 0)?"""
    module = models.build(name).double()
    gen = torch.Generator().manual_seed(_seed())
    x = models.make_input(name, _seed(), torch.float64)
    with torch.no_grad():
        y = module(x)
        for _ in range(trials):
            i = int(torch.randint(0, x.shape[0], (1,), generator=gen))
            x2 = torch.randn(x.shape, generator=gen, dtype=torch.float64)
            x2[i] = x[i]
            if not torch.allclose(module(x2)[i], y[i], rtol=1e-12, atol=1e-12):
                return False
    return True


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from rowfuse.export import export

    d = tmp_path_factory.mktemp("lab_verify")
    cache = {}

    def get(name):
        if name not in cache:
            x = models.make_input(name, 1)
            cache[name] = export(models.build(name), x, x.shape[0], str(d / f"{name}.onnx"))
        return cache[name]

    return get


def _one_line(p) -> str:
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    return lines[0]


@pytest.mark.parametrize("name", ["attention", "attention_causal"])
def test_attention_is_rejected_at_the_score_matmul(name, exported):
    assert not _rows_independent(name), "attention should mix sequence rows"
    path = exported(name)
    p = rowfuse("verify", path, check=1)
    msg = _one_line(p)
    assert "row violation" in msg, msg
    shapes = r"perm \[1, 0\], \[64, 64\] -> \[64, 64\]"
    m = re.search(r"node (\d+) '([^']+)' \((Transpose) " + shapes + r"\)", msg)
    assert m, msg
    assert "row axis" in msg and "transposes must keep the row axis at 0" in msg, msg
    assert "accepted" not in p.stdout

    # The named node is K^T of the score matmul, and the scores reach the softmax.
    graph = onnx.load(path).graph
    node = graph.node[int(m.group(1))]
    assert node.name == m.group(2) and node.op_type == "Transpose"
    consumers = {i: n for n in graph.node for i in n.input}
    score = consumers[node.output[0]]
    assert score.op_type == "MatMul", score
    seen, frontier = set(), [score.output[0]]
    while frontier:
        v = frontier.pop()
        for n in graph.node:
            if v in n.input and n.name not in seen:
                seen.add(n.name)
                frontier.extend(n.output)
    assert any(n.op_type == "Softmax" for n in graph.node if n.name in seen)


def test_gru_is_accepted_batch_rows_independent_steps_sequential(exported, tmp_path):
    assert _rows_independent("gru")
    # PyTorch: step t's state ignores later inputs and depends on every earlier one.
    module = models.build("gru").double()
    x = models.make_input("gru", _seed(), torch.float64)
    with torch.no_grad():
        y = module(x)
        later = x.clone()
        later[:, 2:] = torch.randn_like(later[:, 2:])
        earlier = x.clone()
        earlier[:, 0] = torch.randn_like(earlier[:, 0])
        torch.testing.assert_close(module(later)[:, :2], y[:, :2], rtol=0, atol=0)
        assert (module(earlier)[:, -1] - y[:, -1]).abs().max() > 1e-6

    contract_path = tmp_path / "gru.json"
    p = rowfuse("verify", exported("gru"), "--contract", contract_path, check=0)
    assert "accepted" in p.stdout and "row dim: dim 0 of 'x', 64 rows" in p.stdout, p.stdout
    c = json.loads(contract_path.read_text())
    assert c["row_dim"] == {"input": "x", "axis": 0, "extent": models.GRU_BATCH}
    shape = [models.GRU_BATCH, models.GRU_STEPS, models.GRU_HIDDEN]
    assert [o["shape"] for o in c["outputs"]] == [shape]
    assert all(o["state"] == "row_owned" for o in c["outputs"])
    reasons = {v["name"]: v["reason"] for v in c["values"]}
    producer = {out: op for op in c["ops"] for out in op["outputs"]}

    gathers = [op for op in c["ops"] if op["op"] == "Gather"]
    assert len(gathers) == models.GRU_STEPS
    for g in gathers:
        assert "along axis 1 (features)" in reasons[g["outputs"][0]], reasons[g["outputs"][0]]
    gemms = [op for op in c["ops"] if op["op"] == "Gemm"]
    for g in gemms:
        assert "contracts over features" in reasons[g["outputs"][0]], reasons[g["outputs"][0]]
    # Hidden-state matmuls: three per step after the first, each reading the state the
    # previous step computed (an elementwise op), in order.
    hidden = [g for g in gemms if g["inputs"][1] in ("hr.weight", "hz.weight", "hn.weight")]
    assert len(hidden) == 3 * (models.GRU_STEPS - 1)
    states = []
    for g in hidden:
        src = producer[g["inputs"][0]]
        assert src["op"] in ("Mul", "Add") and src["index"] < g["index"], (g, src)
        if g["inputs"][1] == "hr.weight":
            states.append(src["index"])
    assert states == sorted(states) and len(set(states)) == models.GRU_STEPS - 1


def test_cnn_is_rejected_for_its_op_set_not_its_rows(exported):
    assert _rows_independent("cnn"), "the CNN's images are independent"
    p = rowfuse("verify", exported("cnn"), check=1)
    msg = _one_line(p)
    assert "unsupported" in msg and "row violation" not in msg, msg
    assert re.search(r"node 0 '[^']+' \(Conv\): op 'Conv' is not supported", msg), msg
    assert "rowfuse supports MatMul, Gemm" in msg, msg
