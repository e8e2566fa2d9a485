"""The suite benchmark's CPU half (rowfuse.bench.chains): a package's weights.bin rebuilt
from the module through its weight map, byte for byte, and refused when a slice is no
parameter of the module; the ratios and the table from a closed-form cell. The timing
half runs on the GPU (tests/gpu/gpu run chains). Needs the rowfuse binary (RF_BIN),
torch + onnx and the CuTe DSL (the generator)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")

from cli_util import rowfuse  # noqa: E402
from rowfuse import blocks  # noqa: E402
from rowfuse.bench import chains  # noqa: E402
from rowfuse.export import export  # noqa: E402


@pytest.fixture(scope="module", params=["gpt2_ffn", "llama_ffn", "vit_ffn_ls"])
def package(request, tmp_path_factory):
    """A small chain package: pre-LN GELU FFN (LayerNorm gain and shift, biases), SwiGLU
    with RMSNorm (a gated stage, no biases) or a ViT MLP with LayerScale (gamma folded into
    the second linear's W and b)."""
    pytest.importorskip("cutlass")
    kind = request.param
    tmp = tmp_path_factory.mktemp(kind)
    module, ex = blocks.make(kind, small=True)
    model = export(module, ex, ex.shape[0], str(tmp / f"{kind}.onnx"))
    p = rowfuse("compile", model, "-o", tmp / "pkg")
    assert p.returncode == 0, p.stdout + p.stderr
    return kind, tmp / "pkg"


def test_weights_rebuilt_from_the_module(package, tmp_path):
    kind, pkg = package
    got = chains.prepare_weights(kind, str(pkg), small=True)
    params = {e["param"] for e in got["map"]} | {e["scale"] for e in got["map"] if e["scale"]}
    module, _ = blocks.make(kind, small=True)
    # every parameter of the block is in the map (weights, biases, norm gains and shifts,
    # a folded LayerScale)
    assert params == {n for n, _ in module.named_parameters()}, params
    # the map rebuilds the file for another module's values: the runtime's check passes
    copy = tmp_path / "pkg"
    shutil.copytree(pkg, copy)
    plan = json.loads((copy / "plan.json").read_text())
    (copy / "weights.bin").unlink()
    chains.write_weights(module, str(copy), got["map"], plan["chain"], got["size"])
    assert (copy / "weights.bin").read_bytes() == (pkg / "weights.bin").read_bytes()


def test_a_slice_that_is_no_parameter_is_refused(package, tmp_path):
    kind, pkg = package
    copy = tmp_path / "pkg"
    shutil.copytree(pkg, copy)
    plan = json.loads((copy / "plan.json").read_text())
    ch = plan["chain"]
    raw = np.fromfile(copy / "weights.bin", dtype=np.uint8)
    wh = raw[ch["wh_offset"] : ch["wh_offset"] + 2 * ch["wh_elems"]].view(np.float16)
    first = next(s for s in ch["stages"] if s["op"] in ("linear", "gated"))
    off = first["w"] if first["op"] == "linear" else first["wg"]
    wh[off + 3] = np.float16(wh[off + 3] + np.float16(0.5))  # one weight changed
    raw.tofile(copy / "weights.bin")
    with pytest.raises(ValueError, match="is no parameter"):
        chains.prepare_weights(kind, str(copy), small=True)


def test_summary_and_table_of_a_cell():
    cell = {
        "kind": "gpt2_ffn",
        "rows": 7,
        "variants": [
            {"name": "empty", "span_median_us": 1.0},
            {"name": "rowfuse", "span_median_us": 6.0},
            {"name": "rowfuse-conv", "span_median_us": 9.0},
            {"name": "torch-eager", "span_median_us": 20.0},
            {"name": "torch-compile", "span_median_us": 12.0},
        ],
    }
    s = chains.summarize_cell(cell)
    assert s == {
        "fastest": "rowfuse",
        "best_peer": "rowfuse-conv",
        "ratio_to_best_peer": 6.0 / 9.0,
        "ratio_to_compile": 0.5,
        "regret_rowfuse": 1.0,
        "regret_all": 1.0,
    }
    cell["summary"] = s
    failed = dict(cell, rows=64, variants=[{"name": "rowfuse", "error": "x"}], summary={})
    t = chains.table({"cells": [cell, failed]}).splitlines()
    assert t[2] == "| gpt2_ffn | 7 | 1.00 | 6.00 | 9.00 | - | 20.00 | 12.00 | 0.67 | rowfuse |"
    assert t[3] == "| gpt2_ffn | 64 | - | FAILED | - | - | - | - | - | - |"
    assert chains.failures({"cells": [failed]}) == ["gpt2_ffn x 64 rowfuse: x"]
    # a cell timed with a cold L2 too: both rows, the weights' rate from rowfuse's spans
    cold = dict(cell, weight_bytes=4_000_000)
    for v, c in zip(cold["variants"], (2.0, 10.0, 8.0, 30.0, 16.0), strict=True):
        v["span_cold_median_us"] = c
    s = chains.summarize_cell(cold)
    assert s["fastest_cold"] == "rowfuse-conv" and s["best_peer_cold"] == "rowfuse-conv"
    assert s["ratio_to_best_peer_cold"] == 10.0 / 8.0 and s["ratio_to_compile_cold"] == 10 / 16
    assert s["weights_gbs"] == pytest.approx(4e6 / 6e3) and s["weights_gbs_cold"] == 400.0
    assert s["regret_rowfuse_cold"] == s["regret_all_cold"] == 10.0 / 8.0
    cold["summary"] = s
    t = chains.table({"cells": [cold]}).splitlines()
    assert t[2] == "| gpt2_ffn | 7 | 1.00 | 6.00 | 9.00 | - | 20.00 | 12.00 | 0.67 | rowfuse |"
    assert t[3] == (
        "| gpt2_ffn | 7 (cold L2) | 2.00 | 10.00 | 8.00 | - | 30.00 | 16.00 | 1.25 | rowfuse-conv |"
    )
    cold["variants"][4]["span_cold_median_us"] = 5.0  # torch.compile the fastest cold
    s2 = chains.summarize_cell(cold)
    assert s2["regret_rowfuse_cold"] == 1.25 and s2["regret_all_cold"] == 2.0


def test_a_sibling_is_left_out_only_where_it_is_the_plans_own_schedule():
    # the streaming kernel with the cp.async ring keeps its TMA sibling beside it, and the
    # reverse; the schedule names are those of SIBLINGS
    cp = {"schedule": "chain_stream", "kernels": [{"name": "stream_0", "weight_copy": "cp_async"}]}
    tma = {"schedule": "chain_stream", "kernels": [{"name": "stream_0", "weight_copy": "tma"}]}
    mma = {"schedule": "chain", "kernels": [{"name": "chain_0"}]}
    names = {s for _, _, s in chains.SIBLINGS}
    assert chains.own_schedule(cp) == "chain_stream" and chains.own_schedule(cp) in names
    assert chains.own_schedule(tma) == "chain_stream_tma" and chains.own_schedule(tma) in names
    assert chains.own_schedule(mma) == "chain"
    wide = {"schedule": "chain_stream", "kernels": [{"name": "stream_0", "x_stream": True}]}
    assert chains.own_schedule(wide) == "chain_stream_wide" and chains.own_schedule(wide) in names
    for wt in (16, 32):
        k = {"name": "chain_0", "warp_rows": 1, "warp_tile_rows": wt}
        warp = {"schedule": "chain", "kernels": [k]}
        assert chains.own_schedule(warp) == "chain_warp" and "chain_warp" in names


@pytest.mark.parametrize("package", ["vit_ffn_ls"], indirect=True)
def test_the_package_check_knows_a_folded_layerscale(package):
    """rowfuse.torch's check that a package holds the module's weights accepts W * gamma
    where the compiler folded gamma, and refuses the same module with another gamma."""
    import torch
    from rowfuse import torch as rt

    kind, pkg = package
    ch = json.loads((pkg / "plan.json").read_text())["chain"]
    module, _ = blocks.make(kind, small=True)
    rt._check_chain_weights(module, str(pkg), ch)
    with torch.no_grad():
        module.gamma.mul_(1.5)
    with pytest.raises(ValueError, match="compiled from other weights"):
        rt._check_chain_weights(module, str(pkg), ch)


def test_the_fastest_of_the_compiles_is_kept():
    vs = [
        {"name": "rowfuse", "span_median_us": 5.0},
        {"name": "torch-compile", "span_median_us": 12.0, "compile_s": 30.0},
        {"name": "torch-compile#2", "span_median_us": 10.0, "compile_s": 31.0},
    ]
    out = chains.keep_best_compile(vs)
    assert [v["name"] for v in out] == ["rowfuse", "torch-compile"]
    assert out[1]["span_median_us"] == 10.0 and out[1]["compile_s"] == 31.0
    assert [c["span_median_us"] for c in out[1]["compiles"]] == [12.0, 10.0]
    # a failed compile is never kept over one that ran, and is still recorded
    vs[2] = {"name": "torch-compile#2", "span_median_us": None, "error": "compile failed"}
    out = chains.keep_best_compile(vs)
    assert out[1]["span_median_us"] == 12.0 and "error" not in out[1]
    assert out[1]["compiles"][1]["error"] == "compile failed"
    # one compile: unchanged
    assert chains.keep_best_compile(vs[:2]) == vs[:2]


def test_cells_and_specs():
    assert chains.parse_cells("gpt2_ffn:7,llama_ffn@c320h1024:3") == [
        ("gpt2_ffn", 7),
        ("llama_ffn@c320h1024", 3),
    ]
    for bad in ("gpt2_ffn", "gpt2_ffn:0", ":5", "gpt2_ffn:x"):
        with pytest.raises(ValueError, match="KIND:ROWS"):
            chains.parse_cells(bad)
    spec = blocks.spec_name("llama_ffn", c=320, h=1024)
    name = chains.package_name(spec, 3)
    assert chains.kind_of(name + "-stream") == spec == "llama_ffn@c320h1024"
    module, x = blocks.make_spec(spec)
    assert module.gate.in_features == 320 and module.gate.out_features == 1024
    for bad in ("llama_ffn@q3", "llama_ffn@c0", "llama_ffn@c32x", "nope@c3"):
        with pytest.raises(ValueError):
            blocks.parse_spec(bad)


def test_the_throughput_cell_and_its_roofline():
    """The tiny MLP is also a cell at 2^20 rows; its work is counted from the plan (a
    closed form: 32 -> 64 -> 64 -> 64 -> 16 without biases, and a gated stage counted
    twice), the roofline is the larger of the two ceilings' times, and the summary and the
    table judge rowfuse's span against it."""
    assert ("tcnn_mlp", 1 << 20) in chains.cells(["tcnn_mlp"], [7])
    assert all(r != 1 << 20 for _, r in chains.cells(["gpt2_ffn"], [7]))
    lin = lambda k, n: {"op": "linear", "k": k, "n": n}  # noqa: E731
    chain = {
        "in_width": 32,
        "out_width": 16,
        "wh_elems": 32 * 64 + 2 * 64 * 64 + 64 * 16,
        "wf_elems": 0,
        "stages": [lin(32, 64), {"op": "act"}, lin(64, 64), lin(64, 64), lin(64, 16)],
    }
    rows = 1 << 20
    w = chains.chain_work(chain, rows)
    assert w["flops"] == 2 * rows * (32 * 64 + 64 * 64 * 2 + 64 * 16)
    assert w["weight_bytes"] == 2 * 11264 and w["io_bytes"] == rows * (2 * 32 + 4 * 16)
    assert w["bytes"] == w["io_bytes"] + w["weight_bytes"]
    gated = dict(chain, stages=[{"op": "gated", "k": 32, "n": 64}])
    assert chains.chain_work(gated, 1)["flops"] == 2 * 2 * 32 * 64
    ceil = {"copy_gbs": 4000.0, "gemm_tflops": 600.0}
    r = chains.roofline(w, ceil)
    assert r["flop_us"] == pytest.approx(w["flops"] / 600e12 * 1e6)
    assert r["memory_us"] == pytest.approx(w["bytes"] / 4000e9 * 1e6)
    assert r["roofline_us"] == max(r["flop_us"], r["memory_us"])
    assert r["limit"] == ("tensor" if r["flop_us"] > r["memory_us"] else "memory")
    assert chains.roofline(w, dict(ceil, copy_gbs=1.0))["limit"] == "memory"
    cell = {
        "kind": "tcnn_mlp",
        "rows": rows,
        "roofline": r,
        "variants": [
            {"name": "rowfuse", "span_median_us": r["roofline_us"] * 2},
            {"name": "torch-compile", "span_median_us": r["roofline_us"] * 8},
        ],
    }
    cell["summary"] = s = chains.summarize_cell(cell)
    assert s["of_roofline"] == 0.5 and s["roofline_limit"] == r["limit"]
    assert s["ratio_to_compile"] == 0.25
    t = chains.table({"cells": [cell], "ceilings": ceil}).splitlines()
    assert "copy 4000 GB/s, GEMM 600 TFLOP/s" in t[-5]
    assert t[-1].startswith(f"| tcnn_mlp | {rows} | ") and t[-1].endswith(" | 50% | 0.25 |")
    # a cell without a roofline has no such keys, and the table no second part
    plain = dict(cell, roofline=None)
    assert "of_roofline" not in chains.summarize_cell(plain)
