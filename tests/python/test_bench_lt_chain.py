"""The suite bench's cuBLASLt peer (rowfuse.bench.lt_chain) without a GPU: the chain of a
compiled package (its plan.json and weights.bin) run stage by stage on the CPU through the
same PyTorch calls (addmm and _addmm_activation, the cuBLASLt bias / bias + activation
epilogues on the GPU) agrees with the chain's fp64 reference within four fp16 unit
roundoffs (relative L2, the bench's floor); the wrong epilogue activation or a dropped bias
does not. Needs the rowfuse binary (RF_BIN), librowfuse (ROWFUSE_LIB), torch + onnx and the
CuTe DSL (the compile runs the generator)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

from cli_util import rowfuse  # noqa: E402
from rowfuse import blocks  # noqa: E402
from rowfuse.bench import lt_chain  # noqa: E402
from rowfuse.export import export  # noqa: E402
from test_chain_suite import reference  # noqa: E402

TOL = 2.0**-9
# kind -> GEMMs with a fused cuBLASLt bias + activation epilogue
FUSED = {"gpt2_ffn": 1, "bert_ffn": 0, "llama_ffn": 0, "stacked": 2, "classifier_probs": 1}


def _rel_l2(y, ref) -> float:
    return float(np.linalg.norm(y - ref) / np.linalg.norm(ref))


@pytest.mark.parametrize("kind", sorted(FUSED))
def test_lt_chain_agrees_with_the_reference(kind, tmp_path):
    pytest.importorskip("cutlass")
    rows = 32
    module, ex = blocks.make(kind, small=True, rows=rows)
    model = export(module, ex, rows, str(tmp_path / f"{kind}.onnx"))
    pkg = tmp_path / "pkg"
    p = rowfuse("compile", model, "--rows", rows, "-o", pkg)
    assert p.returncode == 0, p.stdout + p.stderr
    lt = lt_chain.LtChain(str(pkg), device="cpu")
    assert lt.fused == FUSED[kind]
    x16 = np.random.default_rng(5).standard_normal((rows, ex.shape[1])).astype(np.float16)
    ref, _ = reference(model, x16, mixed=False)
    with torch.no_grad():
        y = lt(torch.from_numpy(x16)).double().numpy()
    assert _rel_l2(y, ref) <= TOL, _rel_l2(y, ref)
    # planted: GELU for ReLU in the fused epilogue (and the reverse), or no bias anywhere
    if lt.fused:
        flip = {False: True, True: False}
        orig = lt._lt_act
        lt._lt_act = lambda s: None if orig(s) is None else flip[orig(s)]
        with torch.no_grad():
            bad = lt(torch.from_numpy(x16)).double().numpy()
        assert _rel_l2(bad, ref) > TOL
        lt._lt_act = orig
    for i, w in list(lt.w.items()):
        if lt.stages[i]["op"] == "linear" and w[1] is not None:
            lt.w[i] = (w[0], torch.zeros_like(w[1]))
    if any(s["op"] == "linear" and s["b"] >= 0 for s in lt.stages):
        with torch.no_grad():
            bad = lt(torch.from_numpy(x16)).double().numpy()
        assert _rel_l2(bad, ref) > TOL
