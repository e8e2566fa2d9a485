"""The warp-rows layout of the whole chain's kernel (chain_plan.h "warp rows", chain_mma.py),
without a GPU: `--warp-rows on` gives a resident chain of linears with activations (the
tiny-cuda-nn-style MLP, the MLP head) one warp per 16- or 32-row tile with the hidden values
in registers: X alone has a slot (two tiles per warp), one block barrier in the PTX (after the
weights' load), one mma.sync per live 16 x 8 x 16 block, the hidden values converted to fp16
in registers, nothing in local memory; auto takes it where every SM gets a warp tile; a chain
it does not apply to keeps its plan and says why; the generator refuses a warp-rows spec that
breaks its rules. Needs the rowfuse binary, torch + onnx and the CuTe DSL."""

from __future__ import annotations

import copy
import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")

from cli_util import generator_refuses, rowfuse  # noqa: E402
from rowfuse import blocks  # noqa: E402
from rowfuse.export import export  # noqa: E402


def _compile(kind, tmp, rows, *extra):
    module, ex = blocks.make(kind, rows=rows)
    model = tmp / f"{kind}.onnx"
    if not model.exists():
        export(module, ex, rows, str(model))
    out = tmp / f"{kind}-{rows}{'-warp' if extra else ''}"
    p = rowfuse("compile", model, "--rows", rows, "-o", out, *extra)
    assert p.returncode == 0, p.stdout + p.stderr
    return out, p.stdout


def _mmas(k):
    """mma.sync m16n8k16 of one warp tile: every k block of every 8 live columns (the
    columns past a hidden value's width are never used, so their MMAs are dead code; Y's
    are stored where they are inside its padded width)."""
    return sum(
        (s["k_pad"] // 16) * (-(-s["n"] // 8) if i + 1 < len(k["stages"]) else s["n_pad"] // 8)
        for i, s in enumerate(k["stages"])
    )


@pytest.mark.parametrize("kind,rows", [("tcnn_mlp", 1 << 20), ("mlp_head", 7)])
def test_warp_rows_layout_and_ptx(tmp_path, kind, rows):
    pytest.importorskip("cutlass")
    pkg, out = _compile(kind, tmp_path, rows, "--warp-rows", "on")
    (k,) = json.loads((pkg / "plan.json").read_text())["kernels"]
    facts = json.loads((pkg / "kernels.json").read_text())["kernels"][0]
    assert k["warp_rows"] == 1 and k["x_buffers"] == 2 and "warp rows" in out
    # 32-row warp tiles where every width is at most 64 (tiny MLP), else 16 (the head's 96)
    wt = 32 if kind == "tcnn_mlp" else 16
    assert k["warp_tile_rows"] == wt and k["warps"] == 4 and k["tile_rows"] == 4 * wt
    assert k["weight_buffers"] == 0
    x, *rest = k["values"]
    assert x["smem_offset"] == 0 and all(v["smem_offset"] == -1 for v in rest)
    assert k["weight_smem_offset"] >= 2 * 4 * wt * x["row_stride"] * 2
    # one block barrier (the weights' load), none per tile or stage
    assert facts["ptx_bar_sync"] == 1, facts
    assert facts.get("sass_local", 0) == 0
    ptx = next((pkg / "kernels").glob("*.ptx")).read_text()
    mt = wt // 16  # MMA row tiles a warp
    assert ptx.count("mma.sync") == mt * _mmas(k), ptx.count("mma.sync")
    # each hidden value rounded to fp16 in registers, two columns at a time
    hidden = sum(-(-s["n"] // 8) * 4 // 2 for s in k["stages"][:-1])
    assert ptx.count("cvt.rn.f16x2.f32") == mt * hidden
    # B fragments read once per warp tile, whatever its MMA row tiles: x4 ldmatrix of 16
    # columns by 16 k, plus the first linear's A
    b = sum((s["n_pad"] // 16) * (s["k_pad"] // 16) for s in k["stages"])
    assert ptx.count("ldmatrix") == b + mt * k["stages"][0]["k_pad"] // 16
    assert "bar.warp.sync" in ptx


def test_auto_and_chains_it_does_not_apply_to(tmp_path):
    """auto takes the layout where every SM gets a warp tile (rows >= warp_tile_rows x
    SMs), with the very spec --warp-rows on writes; below that, and for a chain it does not
    apply to, the plan stays and says why."""
    pytest.importorskip("cutlass")
    pkg, out = _compile("tcnn_mlp", tmp_path, 16384)
    on, _ = _compile("tcnn_mlp", tmp_path, 16384, "--warp-rows", "on")
    (k,) = json.loads((pkg / "plan.json").read_text())["kernels"]
    assert k["warp_rows"] == 1 and "warp rows" in out
    assert (pkg / "kernel_spec.json").read_bytes() == (on / "kernel_spec.json").read_bytes()
    pkg, out = _compile("tcnn_mlp", tmp_path, 1000)
    (k,) = json.loads((pkg / "plan.json").read_text())["kernels"]
    assert "warp_rows" not in k and "fewer 32-row warp tiles than SMs" in out, out
    pkg, out = _compile("res_mlp_gelu", tmp_path, 1000, "--schedule", "chain", "--warp-rows", "on")
    (k,) = json.loads((pkg / "plan.json").read_text())["kernels"]
    assert "warp_rows" not in k and "not in warp rows: its weights are not resident" in out, out


def test_the_generator_refuses_broken_warp_rows_specs(tmp_path):
    pytest.importorskip("cutlass")
    pkg, _ = _compile("mlp_head", tmp_path, 64, "--warp-rows", "on")
    spec = json.loads((pkg / "kernel_spec.json").read_text())
    k = spec["kernels"][0]
    one = copy.deepcopy(k)
    one["x_buffers"] = 1
    generator_refuses(tmp_path, dict(spec, kernels=[one]), "x_buffers 2")
    ring = copy.deepcopy(k)
    ring["weight_buffers"] = 2
    generator_refuses(tmp_path, dict(spec, kernels=[ring]), "with resident weights")
    res = copy.deepcopy(k)  # a residual of the first hidden value, which has no slot
    res["stages"][1]["epilogue"].append({"op": "add", "src": 1})
    generator_refuses(tmp_path, dict(spec, kernels=[res]), "warp_rows takes linears")
    tile = copy.deepcopy(k)
    tile["tile_rows"] = 128  # 16-row warp tiles: 4 warps make 64
    generator_refuses(tmp_path, dict(spec, kernels=[tile]), "warp_tile_rows x warps")
    wide = copy.deepcopy(k)  # the head is 128 wide (padded): too wide for 32-row tiles
    wide["warp_tile_rows"] = 32
    wide["tile_rows"] = 128
    generator_refuses(tmp_path, dict(spec, kernels=[wide]), "a width above 64")
    slot = copy.deepcopy(k)
    slot["values"][1]["smem_offset"] = 0
    generator_refuses(tmp_path, dict(spec, kernels=[slot]), "in registers")
