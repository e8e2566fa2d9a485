"""`rowfuse compile` of a chain model (not the residual MLP): the planner's kernel_spec.json,
weights.bin and plan.json, the chain_mma kernel the generator builds from them (tensor-core
mma.sync in its PTX, no spills), and a chain too wide for shared memory refused naming its
stage. Needs the rowfuse binary (RF_BIN), torch + onnx and the CuTe DSL (the generator)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")

from cli_util import rowfuse  # noqa: E402
from rowfuse import blocks  # noqa: E402
from rowfuse.export import export  # noqa: E402


@pytest.mark.parametrize("kind", ["llama_ffn", "bert_ffn"])
def test_compile_chain_package(kind, tmp_path):
    pytest.importorskip("cutlass")
    module, ex = blocks.make(kind, small=True)
    model = export(module, ex, ex.shape[0], str(tmp_path / f"{kind}.onnx"))
    out = tmp_path / "pkg"
    # the whole-chain kernel (at these rows the automatic choice for the SwiGLU FFN is the
    # weight-streaming kernel: test_chain_stream.py)
    p = rowfuse("compile", model, "--schedule", "chain", "-o", out)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "chain_mma" in p.stdout
    spec = json.loads((out / "kernel_spec.json").read_text())
    plan = json.loads((out / "plan.json").read_text())
    facts = json.loads((out / "kernels.json").read_text())
    (k,) = spec["kernels"]
    assert k["mode"] == "chain_mma" and plan["block"] == "chain"
    ch = plan["chain"]
    assert ch["in_width"] == ex.shape[1] and ch["out_width"] == ex.shape[1]
    assert [s["op"] for s in ch["stages"]] == [s["op"] for s in k["stages"]]
    # weights.bin holds wh (fp16) then wf (fp32) at the recorded, 16-byte aligned offsets
    size = (out / "weights.bin").stat().st_size
    assert ch["wh_offset"] % 16 == 0 and ch["wf_offset"] % 16 == 0
    assert size >= ch["wf_offset"] + 4 * ch["wf_elems"] >= ch["wh_offset"] + 2 * ch["wh_elems"]
    # the first linear's W in wh is the model's first weight in fp16
    raw = np.fromfile(out / "weights.bin", dtype=np.uint8)
    wh = raw[ch["wh_offset"] : ch["wh_offset"] + 2 * ch["wh_elems"]].view(np.float16)
    first = next(s for s in ch["stages"] if s["op"] in ("linear", "gated"))
    off = first["w"] if first["op"] == "linear" else first["wg"]
    w = wh[off : off + first["k"] * first["n"]].reshape(first["k"], first["n"])
    lin = module.gate if kind == "llama_ffn" else module.fc1
    np.testing.assert_array_equal(w, lin.weight.detach().numpy().T.astype(np.float16))
    (kf,) = facts["kernels"]
    assert kf["name"] == k["name"] and kf["ptx_mma"] > 0 and kf.get("sass_local", 0) == 0
    assert plan["kernels"][0]["blocks_per_sm"] >= 1


def test_compile_refuses_a_chain_too_wide(tmp_path):
    module, ex = blocks.make("llama_ffn", small=False, rows=4)
    model = export(module, ex, ex.shape[0], str(tmp_path / "llama.onnx"))
    # (--schedule chain: at 4 rows the automatic choice is the weight-streaming schedule)
    p = rowfuse("compile", model, "-o", tmp_path / "pkg", "--schedule", "chain")
    assert p.returncode != 0
    msg = p.stderr
    assert "stage 1 (gated 2048 -> 5632)" in msg and "shared memory" in msg, msg


def test_compile_refuses_a_model_that_is_no_chain(tmp_path):
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(32, 32)

        def forward(self, x):
            return torch.cumsum(self.a(x), -1)

    model = export(M(), torch.randn(8, 32), 8, str(tmp_path / "cumsum.onnx"))
    p = rowfuse("compile", model, "-o", tmp_path / "pkg")
    assert p.returncode == 1, p.stderr
    assert "CumSum over features is row-owned but rowfuse has no kernel for it" in p.stderr


def test_compile_a_chain_that_ends_in_softmax(tmp_path):
    """Softmax over features is a norm kind (src/chain/chain.h): the package's last stage,
    its PTX with the row's max and sum through warp shuffles and an IEEE division."""
    pytest.importorskip("cutlass")
    module, ex = blocks.make("classifier_probs", small=True)
    model = export(module, ex, ex.shape[0], str(tmp_path / "probs.onnx"))
    p = rowfuse("compile", model, "-o", tmp_path / "pkg")
    assert p.returncode == 0, p.stdout + p.stderr
    plan = json.loads((tmp_path / "pkg" / "plan.json").read_text())
    last = plan["chain"]["stages"][-1]
    assert last["op"] == "norm" and last["kind"] == "softmax"
    assert "eps" not in last and "gamma" not in last and "beta" not in last
    (k,) = plan["kernels"]
    ptx = (tmp_path / "pkg" / "kernels" / f"{k['name']}.ptx").read_text()
    assert "shfl.sync.bfly" in ptx and "max.f32" in ptx and "div.rn.f32" in ptx


def test_the_residual_mlp_compiles_as_a_chain(tmp_path):
    """`--schedule chain` makes the residual MLP one chain among others: from --mlp, its
    seeded weights (the generator of rowfuse/mlp.h, as every C caller draws them) land in
    the chain's stages; from a model, the same two-stage chain (its kernel chain_mma)."""
    pytest.importorskip("cutlass")
    from rowfuse import torch as rt
    from rowfuse.capi import clib

    out = tmp_path / "mlp"
    p = rowfuse("compile", "--mlp", "40x32x48", "--seed", "7", "--schedule", "chain", "-o", out)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "chain_mma" in p.stdout
    ch = json.loads((out / "plan.json").read_text())["chain"]
    s0, s1 = ch["stages"]
    assert [e["op"] for e in s1["epilogue"]] == ["add", "act"] and s1["epilogue"][0]["src"] == 0
    wh, wf = rt.chain_weights(str(out), ch)
    case = clib.mlp_case(40, 32, 48, 7)
    np.testing.assert_array_equal(wh[s0["w"] : s0["w"] + 32 * 48].reshape(32, 48), case.w1)
    np.testing.assert_array_equal(wh[s1["w"] : s1["w"] + 48 * 32].reshape(48, 32), case.w2)
    np.testing.assert_array_equal(wf[s0["b"] : s0["b"] + 48], case.b1)
    np.testing.assert_array_equal(wf[s1["b"] : s1["b"] + 32], case.b2)
    module, ex = blocks.make("residual_mlp", small=True)
    model = export(module, ex, ex.shape[0], str(tmp_path / "rm.onnx"))
    p = rowfuse("compile", model, "--schedule", "chain", "-o", tmp_path / "pkg")
    assert p.returncode == 0, p.stdout + p.stderr
    plan = json.loads((tmp_path / "pkg" / "plan.json").read_text())
    assert plan["block"] == "chain" and len(plan["chain"]["stages"]) == 2


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--plant-fault", "no-barrier"], "planted in the residual MLP's kernels"),
        (["--check-delay", "100"], "compile it with --schedule chain-stream"),
        (["--plant-fault", "bogus"], "no such fault"),
    ],
)
def test_a_chain_refuses_the_mlp_kernels_test_options(args, needle, tmp_path):
    """The checks' test options a chain package has no kernel for are refused, not
    ignored (a package built without the fault would pass its gate as a catch missed)."""
    p = rowfuse("compile", "--mlp", "40x32x48", "--schedule", "chain", *args, "-o", tmp_path / "p")
    assert p.returncode != 0 and needle in p.stderr, p.stdout + p.stderr
