"""The conventional schedule with Hopper GEMMs (`rowfuse compile --schedule
conventional-wgmma`), without a GPU: every norm in a kernel of its own, every matmul a
chain_wgmma kernel (TMA ring, wgmma, the fused epilogue) where TMA can read its operands,
the planner's tiles and ring as the generator counts them, the generator's PTX (wgmma and
TMA, no mma.sync, no local memory), the generator's refusal of an inconsistent entry, and the
numpy model of plan.json (test_chain_conv.Model: each kernel's inputs from X or the scratch
at the recorded columns and dtypes, fp32 stages, stores at each value's dtype) within the
chain reference's per-element bound. What the model cannot see is the kernel's own
indexing: that is for `rowfuse check` on the GPU (tests/gpu/gpu run chains)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")

from cli_util import env, rowfuse  # noqa: E402
from rowfuse import blocks  # noqa: E402
from rowfuse.export import export  # noqa: E402
from test_chain_conv import Model, _worst  # noqa: E402
from test_chain_suite import reference  # noqa: E402

# kind -> each kernel's mode, in launch order (small widths, 300 rows)
KERNELS = {
    "gpt2_ffn": ["chain_mma", "chain_wgmma", "chain_wgmma"],
    "llama_ffn": ["chain_mma", "chain_wgmma", "chain_wgmma"],
    "bert_ffn": ["chain_wgmma", "chain_wgmma", "chain_mma"],
    "tcnn_mlp": ["chain_wgmma"] * 4,
    # the head's 10 classes are no multiple of 8 (TMA's 16-byte rows): it stays chain_mma
    "classifier": ["chain_mma", "chain_wgmma", "chain_mma"],
}
ROWS = 300


def _compile(kind, tmp, rows, *extra):
    module, ex = blocks.make(kind, small=True, rows=rows)
    model = export(module, ex, rows, str(tmp / f"{kind}.onnx"))
    out = tmp / "pkg"
    args = ["compile", model, "--rows", rows, "--schedule", "conventional-wgmma", "-o", out]
    p = rowfuse(*args, *extra)
    assert p.returncode == 0, p.stdout + p.stderr
    return model, out, p.stdout


def _smem(tm, tn, kb, stages, mats):
    """The layout's bytes by the rule both sides state (chain_conv.h, chain_wgmma.py)."""

    def add(off, n, a):
        return (off + a - 1) // a * a + n

    off = add(add(0, 16 * stages, 8), 2 * tm * kb * stages, 1024)
    for _ in range(mats):
        off = add(off, 2 * kb * tn * stages, 1024)
    return off + 1024


@pytest.mark.parametrize("kind", sorted(KERNELS))
def test_conventional_wgmma(kind, tmp_path):
    pytest.importorskip("cutlass")
    model, pkg, out = _compile(kind, tmp_path, ROWS)
    plan = json.loads((pkg / "plan.json").read_text())
    facts = {k["name"]: k for k in json.loads((pkg / "kernels.json").read_text())["kernels"]}
    ks = plan["kernels"]
    assert plan["schedule"] == "conventional-wgmma"
    assert [k["mode"] for k in ks] == KERNELS[kind]
    gemms = KERNELS[kind].count("chain_wgmma")
    assert f"{gemms} of them Hopper GEMMs" in out
    assert "one per segment: chain_wgmma for a Hopper GEMM" in out
    smem_max = json.loads((pkg / "kernel_spec.json").read_text())["target"]["smem_per_block"]
    for k in ks:
        f = facts[k["name"]]
        assert f.get("sass_local", 0) == 0 and k["local_ops"] == 0 and k["blocks_per_sm"] >= 1
        if k["mode"] == "chain_mma":  # the norms' kernels, and a matmul TMA cannot read
            ops = [s["op"] for s in k["stages"]]
            assert ops == ["norm"] or (ops == ["linear"] and k["stages"][0]["n"] % 8), ops
            continue
        (s,) = k["stages"]  # a GEMM runs its matmul and its fused epilogue alone
        g = k["wgmma"]
        assert s["op"] in ("linear", "gated") and s["k"] % 8 == 0 and s["n"] % 8 == 0
        assert f["ptx_wgmma"] > 0 and f["ptx_tma"] > 0 and f["ptx_mma"] == 0, f
        assert g["tile_m"] in (64, 128) and k["tile_rows"] == g["tile_m"]
        assert g["tile_n"] % 16 == 0 and 16 <= g["tile_n"] <= 128 and g["k_block"] == 64
        assert k["segment"]["slices"] == -(-s["n"] // g["tile_n"])
        assert k["threads"] == 128 * (g["tile_m"] // 64 + 1)
        mats = 2 if s["op"] == "gated" else 1
        assert k["smem_bytes"] == _smem(g["tile_m"], g["tile_n"], 64, g["stages"], mats)
        assert k["smem_bytes"] <= smem_max and 2 <= g["stages"] <= 8
        # the deepest ring that fits
        if g["stages"] < 8:
            assert _smem(g["tile_m"], g["tile_n"], 64, g["stages"] + 1, mats) > smem_max
    table = (pkg / "rf_pkg_table.h").read_text()
    assert "RF_PKG_SEG_KERNELS(X) " + " ".join(f"X({k['name']})" for k in ks) in table
    rng = np.random.default_rng(12)
    x16 = rng.standard_normal((ROWS, plan["chain"]["in_width"])).astype(np.float16)
    ref, bound = reference(model, x16, mixed=True)
    y = Model(pkg).run(x16)
    assert np.isfinite(y).all() and _worst(y, ref, bound) <= 1.0, _worst(y, ref, bound)


def _tiles(rows, n, sms=132):
    """The planner's rule (chain_conv.h): the first of 128x128, 128x64, 64x128, 64x64 that
    gives every SM a tile, else 64x64; N below 64 rounded up to 16."""
    tm, tn = 64, 64
    for a, b in ((128, 128), (128, 64), (64, 128), (64, 64)):
        if -(-rows // a) * -(-n // b) >= sms:
            tm, tn = a, b
            break
    return tm, (tn if n >= 64 else -(-n // 16) * 16)


def test_tiles_follow_the_rows(tmp_path):
    """At few rows the tiles shrink so that every SM has one (64 x 64 at 7 rows), at many
    they grow (128 x 128 for the wide first GEMM at 16,384 rows)."""
    pytest.importorskip("cutlass")
    geo = {}
    for rows in (7, 16384):
        d = tmp_path / str(rows)
        d.mkdir()
        _, pkg, _ = _compile("gpt2_ffn", d, rows)
        ks = json.loads((pkg / "plan.json").read_text())["kernels"]
        geo[rows] = [
            ((k["wgmma"]["tile_m"], k["wgmma"]["tile_n"]), _tiles(rows, k["stages"][0]["n"]))
            for k in ks
            if "wgmma" in k
        ]
    assert all(got == want for got, want in geo[7] + geo[16384]), geo
    assert [g for g, _ in geo[7]] == [(64, 64), (64, 64)]
    assert geo[16384][0][0] == (128, 128)


def test_conv_no_store_drops_the_gemms_scratch_stores(tmp_path):
    """The planted conv_no_store reaches the GEMMs: the first one (into the scratch) loses
    its global stores; the last one (into Y) keeps them."""
    pytest.importorskip("cutlass")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, good, _ = _compile("tcnn_mlp", tmp_path / "a", 64)
    _, bad, _ = _compile("tcnn_mlp", tmp_path / "b", 64, "--plant-fault", "conv-no-store")

    def stores(pkg, i):
        ks = json.loads((pkg / "plan.json").read_text())["kernels"]
        return (pkg / "kernels" / f"{ks[i]['name']}.ptx").read_text().count("st.global")

    assert stores(good, 0) > 0 and stores(bad, 0) == 0
    assert stores(bad, 3) == stores(good, 3) > 0


def test_the_generator_refuses_an_inconsistent_gemm(tmp_path):
    """A chain_wgmma entry the generator cannot build as written is refused naming what is
    wrong, never repaired: a shared-memory count that is not the layout's, a column tile
    that is not a multiple of 16, a second stage, an fp32 input."""
    pytest.importorskip("cutlass")
    _, pkg, _ = _compile("tcnn_mlp", tmp_path, 64)
    spec = json.loads((pkg / "kernel_spec.json").read_text())
    k = spec["kernels"][1]
    breaks = {
        "smem_bytes": lambda e: e.update(smem_bytes=e["smem_bytes"] + 1024),
        "tile_n": lambda e: e["wgmma"].update(tile_n=24),
        "one matmul stage": lambda e: e["stages"].append(copy.deepcopy(e["stages"][0])),
        "fp16 in X or the scratch": lambda e: e["values"][e["stages"][0]["src"]].update(
            dtype="f32"
        ),
    }
    for what, brk in breaks.items():
        e = copy.deepcopy(k)
        brk(e)
        d = tmp_path / what.replace(" ", "_")
        d.mkdir()
        (d / "kernel_spec.json").write_text(json.dumps(dict(spec, kernels=[e])))
        cmd = [sys.executable, "-m", "rowfuse.kernels.build", "--spec", str(d / "kernel_spec.json")]
        p = subprocess.run(
            cmd + ["--out", str(d), "--quiet"], capture_output=True, text=True, env=env()
        )
        assert p.returncode != 0 and what in p.stderr, (what, p.stderr[-500:])
