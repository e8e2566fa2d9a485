"""Resident weights in the whole chain's kernel (chain_plan.h "resident"), without a GPU: a
chain whose padded weight tiles take at most RF_CHAIN_RESIDENT_MAX bytes keeps them all in
shared memory for the launch (weight_buffers 0, each matmul's tiles at its w_smem), so the
kernel has one block barrier after staging X and one per stage, none per k chunk; a chain
with more weights keeps the ring; the generator refuses resident regions that overlap, run
past shared memory, or a resident conventional-schedule kernel. Needs the rowfuse binary,
torch + onnx and the CuTe DSL."""

from __future__ import annotations

import copy
import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")

from cli_util import generator_refuses, rowfuse  # noqa: E402
from rowfuse import blocks  # noqa: E402
from rowfuse.export import export  # noqa: E402

PAD = 8
RESIDENT_MAX = 64 * 1024


def _compile(kind, tmp, rows, *extra):
    module, ex = blocks.make(kind, rows=rows)
    model = export(module, ex, rows, str(tmp / f"{kind}.onnx"))
    out = tmp / f"{kind}-{rows}"
    p = rowfuse("compile", model, "--rows", rows, "-o", out, *extra)
    assert p.returncode == 0, p.stdout + p.stderr
    return out, p.stdout


def _tile_bytes(s):
    return (2 if s["op"] == "gated" else 1) * s["k_pad"] * (s["n_pad"] + PAD) * 2


@pytest.mark.parametrize("rows", [7, 16384])
def test_small_weights_stay_resident(tmp_path, rows):
    pytest.importorskip("cutlass")
    pkg, out = _compile("tcnn_mlp", tmp_path, rows, "--warp-rows", "off")
    (k,) = json.loads((pkg / "plan.json").read_text())["kernels"]
    facts = json.loads((pkg / "kernels.json").read_text())["kernels"][0]
    assert k["mode"] == "chain_mma" and k["weight_buffers"] == 0
    assert "weights resident" in out
    mms = [s for s in k["stages"] if s["op"] in ("linear", "gated")]
    end = 0
    for s in mms:  # in stage order, 128-byte aligned, none overlapping
        assert s["w_smem"] >= end and s["w_smem"] % 128 == 0
        end = s["w_smem"] + _tile_bytes(s)
    assert end <= RESIDENT_MAX
    assert k["smem_bytes"] == k["weight_smem_offset"] + -(-end // 128) * 128
    # one barrier after X is staged, one after each stage; none per k chunk
    assert facts["ptx_bar_sync"] == 1 + len(k["stages"]), facts
    assert facts["ptx_mma"] > 0 and facts.get("sass_local", 0) == 0


def test_larger_weights_keep_the_ring(tmp_path):
    """The stacked blocks hold 256 KB of weights: the whole chain's kernel streams them
    through the weight ring, none resident (--schedule chain: auto weighs it against the
    GEMMs, test_chain_conv.py); at 1,000 rows every row tile has a block of its own, so
    the ring is 8 deep, running ahead across the stages."""
    pytest.importorskip("cutlass")
    pkg, out = _compile("stacked", tmp_path, 1000, "--schedule", "chain")
    (k,) = json.loads((pkg / "plan.json").read_text())["kernels"]
    assert k["weight_buffers"] == 8 and "8 weight buffers" in out, out
    assert all("w_smem" not in s for s in k["stages"])


def test_the_generator_refuses_inconsistent_resident_weights(tmp_path):
    pytest.importorskip("cutlass")
    pkg, _ = _compile("tcnn_mlp", tmp_path, 64)
    spec = json.loads((pkg / "kernel_spec.json").read_text())
    k = spec["kernels"][0]
    overlap = copy.deepcopy(k)
    overlap["stages"][1]["w_smem"] = overlap["stages"][0]["w_smem"]
    generator_refuses(tmp_path, dict(spec, kernels=[overlap]), "w_smem")
    past = copy.deepcopy(k)
    past["smem_bytes"] = past["weight_smem_offset"] + 128
    generator_refuses(tmp_path, dict(spec, kernels=[past]), "resident weights")
    seg = copy.deepcopy(k)
    seg["segment"] = {
        "index": 0,
        "count": 1,
        "first_stage": 0,
        "inputs": [0],
        "direct": [],
        "streamed": [],
        "aux_row": 0,
        "split_stage": -1,
        "slices": 1,
        "slice_chunks": 0,
    }
    for v in seg["values"]:
        v["global"] = (
            "x" if v["id"] == 0 else ("y" if v["id"] == len(seg["values"]) - 1 else "none")
        )
    generator_refuses(tmp_path, dict(spec, kernels=[seg]), "whole chain's kernel")
